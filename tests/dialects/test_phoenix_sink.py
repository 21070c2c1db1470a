"""Scores in Phoenix's own evaluation columns: a real ``phoenix serve`` (arize-phoenix in its
own cached virtualenv, scripts/phoenix_venv.sh) receives the app's spans, and the evaluator's
Phoenix sink posts each metric as a span annotation on the span it evaluates."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dialects.apps import corpus
from tests.dialects.genai_app_env import LATEST_SPAN_CONTENT
from tests.dialects.kit import ROOT, make_evaluator, run_app, scored


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    venv = subprocess.run(
        [str(ROOT / "scripts" / "phoenix_venv.sh")],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    ).stdout.strip()
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


def test_scores_appear_as_phoenix_span_annotations(tmp_path: Path, phoenix: str) -> None:
    with make_evaluator(tmp_path, phoenix_endpoint=phoenix) as ev:
        asked = run_app("genai_app", ev.endpoint, phoenix, env=LATEST_SPAN_CONTENT)
        results = scored(ev, asked)
    audit = next(a["trace_id"] for a in asked if a["question"] == corpus.AUDIT)
    assert results[corpus.AUDIT].cell == "fine"
    spans = _get(f"{phoenix}/v1/projects/default/spans?limit=1000")["data"]  # type: ignore[index]
    in_trace = [s for s in spans if s["context"]["trace_id"] == audit]
    chat = next(s for s in in_trace if s["attributes"].get("gen_ai.operation.name") == "chat")
    retrieval = next(s for s in in_trace if s["name"] == "retrieval corpus")
    ids = f"span_ids={chat['context']['span_id']}&span_ids={retrieval['context']['span_id']}"
    found = _get(f"{phoenix}/v1/projects/default/span_annotations?{ids}&limit=100")
    by_name = {(a["span_id"], a["name"]): a for a in found["data"]}  # type: ignore[index]
    ground = by_name[(chat["context"]["span_id"], "groundedness")]
    assert ground["result"]["score"] == 1.0 and ground["result"]["label"] == "pass"
    assert ground["annotator_kind"] == "CODE"  # the offline lexical judge has no model
    recall = by_name[(retrieval["context"]["span_id"], "recall")]
    assert recall["result"]["score"] == 1.0 and recall["result"]["label"] == "pass"
    assert {n for (_, n) in by_name} == {
        "recall",
        "hit_rate",
        "precision",
        "reciprocal_rank",
        "ndcg",
        "context_relevancy",
        "groundedness",
    }
