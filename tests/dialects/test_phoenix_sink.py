"""Scores in Phoenix's own views: a real ``phoenix serve`` (arize-phoenix in its own cached
virtualenv, scripts/phoenix_venv.sh) receives the app's spans, and the evaluator's Phoenix sink
posts each metric as a span annotation on the span it evaluates, the cell on the root span and
as a trace annotation, and a ``gold`` annotation per retrieved document — within 5 s of
scoring, with nothing logged on the way (Phoenix stores spans asynchronously: the first posts
of a trace meet 404s, retried quietly). A browser (headless Chromium, as in the web view's test)
then finds the same in Phoenix's own UI; screenshots land in test-artifacts/phoenix/."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtrace import semconv
from tests.browser import headless_chromium, screenshot
from tests.dialects.apps import corpus
from tests.dialects.genai_app_env import LATEST_SPAN_CONTENT
from tests.dialects.kit import ROOT, make_evaluator, run_app, scored, venv_python
from tests.evaluation_names import RETRIEVAL_RESULTS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    venv = str(Path(venv_python("phoenix_venv.sh")).parent.parent)
    port = _free_port()
    work = tmp_path_factory.mktemp("phoenix")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env.update(
        {
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(_free_port()),
            "PHOENIX_WORKING_DIR": str(work),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
    )
    log = (work / "phoenix.log").open("wb")
    proc = subprocess.Popen(
        [f"{venv}/bin/phoenix", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, (work / "phoenix.log").read_text()[-3000:]
            try:
                _get(url + "/v1/projects")
                break
            except OSError:
                assert time.monotonic() < deadline, "phoenix serve did not start"
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _annotations(phoenix: str, kind: str, ids: str) -> list[Any]:
    got = _get(f"{phoenix}/v1/projects/default/{kind}_annotations?{ids}&limit=1000")
    return list(got["data"])


def _documents(phoenix: str, span_id: str) -> list[Any]:
    """A span's document annotations (Phoenix's REST API has no GET for them: GraphQL)."""
    query = (
        "query($id: String!) { getSpanByOtelId(spanId: $id) { documentEvaluations {"
        " name label score documentPosition } } }"
    )
    request = urllib.request.Request(
        f"{phoenix}/graphql",
        data=json.dumps({"query": query, "variables": {"id": span_id}}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        got = json.loads(response.read())
    span = got["data"]["getSpanByOtelId"]
    assert span is not None, got
    return [
        {
            "document_position": d["documentPosition"],
            "result": {"label": d["label"], "score": d["score"]},
        }
        for d in span["documentEvaluations"]
        if d["name"] == "gold"
    ]


def _within(seconds: float, check: object) -> float:
    """Poll ``check()`` (an assertion) until it passes; the time it took."""
    start = time.monotonic()
    while True:
        try:
            check()  # type: ignore[operator]
            return time.monotonic() - start
        except (AssertionError, KeyError, StopIteration):
            if time.monotonic() - start > seconds:
                raise
            time.sleep(0.1)


def _quiet(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Warnings and errors on the write-back path (sinks, retries)."""
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.WARNING
        and r.name.startswith(("ragtrace_consumers.writeback", "ragtrace_consumers.runtime"))
    ]


def test_scores_appear_as_phoenix_annotations(
    tmp_path: Path, phoenix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # Phoenix is also the OTLP backend: the evaluation spans would go there, but not unasked.
    with make_evaluator(
        tmp_path, otlp_endpoint=phoenix, otlp_signals="traces", phoenix_endpoint=phoenix
    ) as ev:
        asked = run_app("genai_app", ev.endpoint, phoenix, env=LATEST_SPAN_CONTENT)
        results = scored(ev, asked)
        audit = next(a["trace_id"] for a in asked if a["question"] == corpus.AUDIT)
        assert results[corpus.AUDIT].cell == "fine"
        found: dict[tuple[str, str], Any] = {}
        ids: dict[str, str] = {}

        def shown() -> None:
            spans = _get(f"{phoenix}/v1/projects/default/spans?limit=1000")["data"]
            in_trace = [s for s in spans if s["context"]["trace_id"] == audit]
            ids["chat"] = next(
                s for s in in_trace if s["attributes"].get("gen_ai.operation.name") == "chat"
            )["context"]["span_id"]
            ids["retrieval"] = next(s for s in in_trace if s["name"] == "retrieval corpus")[
                "context"
            ]["span_id"]
            ids["root"] = next(s for s in in_trace if not s["parent_id"])["context"]["span_id"]
            query = "&".join(f"span_ids={v}" for v in ids.values())
            found.clear()
            found.update(
                {(a["span_id"], a["name"]): a for a in _annotations(phoenix, "span", query)}
            )
            assert (ids["root"], "cell") in found and (ids["chat"], "groundedness") in found

        took = _within(5.0, shown)
    assert took < 5.0
    ground = found[(ids["chat"], "groundedness")]
    assert ground["result"] == {
        "score": 1.0,
        "label": "pass",
        "explanation": "1 of 1 claims entailed by the context",
    }
    assert ground["annotator_kind"] == "CODE"  # the offline lexical judge has no model
    recall = found[(ids["retrieval"], "recall")]
    assert recall["result"]["score"] == 1.0 and recall["result"]["label"] == "pass"
    cell = found[(ids["root"], "cell")]
    assert cell["result"] == {
        "score": None,
        "label": "fine",
        "explanation": "mean_recall 1.00 >= 0.5; groundedness 1.00 >= 0.8",
    }
    assert {n for (_, n) in found} == {*RETRIEVAL_RESULTS, "groundedness", "cell"}
    traces = _annotations(phoenix, "trace", f"trace_ids={audit}")
    assert [(t["name"], t["result"]["label"]) for t in traces] == [("cell", "fine")]
    # No evaluation span reached Phoenix, and nothing was logged as a failure on the way.
    spans = _get(f"{phoenix}/v1/projects/default/spans?limit=1000")["data"]
    assert not [s for s in spans if s["name"].startswith(semconv.SPAN_EVALUATION)]
    assert _quiet(caplog) == []


def test_gold_documents_on_the_retriever_and_evaluation_spans_only_when_asked(
    tmp_path: Path, phoenix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    project = "default"  # no openinference.project.name on the resources
    with make_evaluator(
        tmp_path,
        otlp_endpoint=phoenix,
        phoenix_endpoint=phoenix,
        otlp_signals="traces",
        phoenix_evaluation_spans=True,
    ) as ev:
        asked = run_app("sdk_app", ev.endpoint, phoenix)
        results = scored(ev, asked)
        regions = next(a["trace_id"] for a in asked if a["question"] == corpus.REGIONS)
        audit = next(a["trace_id"] for a in asked if a["question"] == corpus.AUDIT)
        assert results[corpus.REGIONS].cell == "retrieval_failed"
        docs: dict[str, list[tuple[int, object, object]]] = {}

        def shown() -> None:
            spans = _get(f"{phoenix}/v1/projects/{project}/spans?limit=1000")["data"]
            for trace_id in (audit, regions):
                retriever = next(
                    s
                    for s in spans
                    if s["context"]["trace_id"] == trace_id and s["name"] == "retrieve"
                )["context"]["span_id"]
                docs[trace_id] = sorted(
                    (d["document_position"], d["result"]["label"], d["result"]["score"])
                    for d in _documents(phoenix, retriever)
                )
                assert len(docs[trace_id]) == 2

        took = _within(5.0, shown)
    assert took < 5.0
    assert docs[audit] == [(0, "gold", 1.0), (1, "not_gold", 0.0)]
    assert docs[regions] == [(0, "not_gold", 0.0), (1, "not_gold", 0.0)]
    spans = _get(f"{phoenix}/v1/projects/default/spans?limit=1000")["data"]
    assert [s for s in spans if s["name"] == f"{semconv.SPAN_EVALUATION}.recall"]  # asked for
    assert _quiet(caplog) == []


def test_with_every_signal_on_phoenix_gets_the_spans_and_one_line_per_refused_signal(
    tmp_path: Path, phoenix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``--otlp-signals all`` (the default) at a real Phoenix, which takes no /v1/logs and no
    /v1/metrics: every trace is scored and recorded, its evaluation spans and annotations reach
    Phoenix, and the log has one line per refused signal (naming --otlp-signals), no more."""
    caplog.set_level(logging.INFO)
    with make_evaluator(
        tmp_path,
        otlp_endpoint=phoenix,
        phoenix_endpoint=phoenix,
        otlp_signals="all",
        phoenix_evaluation_spans=True,
    ) as ev:
        asked = run_app("sdk_app", ev.endpoint, phoenix)
        results = scored(ev, asked)
        ids = {a["trace_id"] for a in asked}

        def delivered() -> None:
            spans = _get(f"{phoenix}/v1/projects/default/spans?limit=1000")["data"]
            evaluated = {
                s["context"]["trace_id"] for s in spans if s["name"] == semconv.SPAN_EVALUATION
            }
            assert ids <= evaluated
            query = "&".join(f"trace_ids={t}" for t in sorted(ids))
            cells = {a["trace_id"] for a in _annotations(phoenix, "trace", query)}
            assert ids <= cells

        _within(20.0, delivered)
        ev.meter_provider.force_flush(10_000)
        ev.meter_provider.force_flush(10_000)
    assert len(results) == len(asked)
    lines = _quiet(caplog)
    refused = [x for x in lines if "--otlp-signals" in x]
    assert len(refused) == len(lines), lines  # nothing else on the write-back path
    assert sorted("/v1/logs" in x for x in refused) == [False, True], lines
    assert any("/v1/metrics" in x for x in refused), lines


ARTIFACTS = ROOT / "test-artifacts" / "phoenix"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium("1600,1200", page_load_timeout_s=30) as driver:
        yield driver


def _shot(driver: Any, name: str) -> None:
    screenshot(driver, ARTIFACTS, name)


def test_phoenix_ui_shows_the_cell_and_the_gold_documents(
    tmp_path: Path, phoenix: str, browser: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """What a user sees in Phoenix's own UI: the project's default view (the Spans tab, root
    spans) shows the cell in the root span's annotations column; one click on the trace opens
    it with the cell in its header and on the root of the span tree; a click on the retriever
    shows each retrieved document with its ``gold`` document annotation."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    caplog.set_level(logging.INFO)
    project = next(
        p["id"] for p in _get(f"{phoenix}/v1/projects")["data"] if p["name"] == "default"
    )
    d = browser
    with make_evaluator(
        tmp_path, otlp_endpoint=phoenix, otlp_signals="traces", phoenix_endpoint=phoenix
    ) as ev:
        asked = run_app("sdk_app", ev.endpoint, phoenix)
        results = scored(ev, asked)
        start = time.monotonic()
        assert results[corpus.AUDIT].cell == "fine"
        assert results[corpus.ROTATE].cell == "generation_failed"
        trace = {a["question"]: a["trace_id"] for a in asked}

        def row(question: str) -> Any:
            return d.find_element(
                By.XPATH, f"//tr[.//a[contains(@href, '/spans/{trace[question]}')]]"
            )

        def cells_shown(_: Any) -> bool:
            try:
                shown = [row(q).text for q in (corpus.AUDIT, corpus.ROTATE)]
            except (NoSuchElementException, StaleElementReferenceException):  # not rendered yet
                return False
            return "cell\nfine" in shown[0] and "cell\ngeneration_failed" in shown[1]

        # The default view loads annotations once: a user reloads until they are there.
        opened = time.monotonic()
        d.get(f"{phoenix}/projects/{project}")
        loads = 1
        while not _until(d, 15, cells_shown):
            loads += 1
            assert time.monotonic() - start < 90, "the cells never showed in Phoenix's UI"
            d.refresh()
        took, loading = time.monotonic() - start, time.monotonic() - opened
    print(
        f"scored -> cell visible in Phoenix's UI: {took:.1f} s, of which the page's loading"
        f" {loading:.1f} s ({loads} load(s))"
    )
    assert d.current_url.split("?")[0].endswith(f"/projects/{project}/spans")
    label = row(corpus.AUDIT).find_element(By.XPATH, ".//*[text()='fine']")
    d.execute_script("arguments[0].scrollIntoView({block: 'nearest', inline: 'center'})", label)
    assert label.is_displayed()
    _shot(d, "default-view")
    link = row(corpus.AUDIT).find_element(
        By.XPATH, f".//a[contains(@href, '{trace[corpus.AUDIT]}')]"
    )
    d.execute_script("arguments[0].scrollIntoView({block: 'nearest', inline: 'center'})", link)
    link.click()
    WebDriverWait(d, 30).until(
        lambda d: (
            trace[corpus.AUDIT] in d.page_source
            and d.find_elements(By.XPATH, "//*[text()='retrieve']")
        )
    )
    header = d.find_element(
        By.XPATH,
        f"//*[contains(text(), '{trace[corpus.AUDIT]}')]/ancestor::*[.//*[text()='cell']][1]",
    )
    assert "cell\nfine" in header.text, header.text
    _shot(d, "trace")
    next(e for e in d.find_elements(By.XPATH, "//*[text()='retrieve']") if e.is_displayed()).click()
    WebDriverWait(d, 30).until(
        lambda d: d.find_elements(By.XPATH, "//*[text()='Document Annotations']")
    )
    _shot(d, "retriever")
    body = d.find_element(By.TAG_NAME, "body").text
    documents = body.split("document doc-")[1:]
    assert [doc.split("\n")[0] for doc in documents] == ["audit", "pricing"], body
    # Each document block: its text, then "Document Annotations" with the "gold" annotation.
    for doc, label in zip(documents, ("gold", "not_gold"), strict=True):
        annotations = doc.split("Document Annotations\n", 1)[1]
        assert "\ngold\n" in annotations and f"Label\n{label}\n" in annotations, doc
    assert "in the gold set of question q-audit" in documents[0]
    assert _quiet(caplog) == []


def _until(driver: Any, seconds: float, condition: Any) -> bool:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, seconds, poll_frequency=0.2).until(condition)
    except TimeoutException:
        return False
    return True
