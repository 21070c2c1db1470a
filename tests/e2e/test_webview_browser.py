"""The web view in a real browser: Debian's headless Chromium driven through its chromedriver
(Selenium, given the driver's path, so Selenium Manager never downloads anything).

One embedded evaluator scores the demo app's six questions (the real SDK in a child process →
OTLP/HTTP → scoring → the SQLite state), then the browser reads the overview, filters the list,
opens the seed's two escalations — in opposite cells — and labels an unlabelled question from
its trace; the next trace asking it is scored with recall. Screenshots land in
test-artifacts/webview/ (git-ignored); the README shows a copy of
trace-generation-failed.png (docs/images/webview-trace.png).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from scripts.services.paths import REPO_ROOT
from tests.browser import click_and_load, demo_evaluator, headless_chromium, screenshot
from tests.unit.consumers.demo_client import QUESTIONS, run_app

pytestmark = pytest.mark.timeout(120)

ARTIFACTS = REPO_ROOT / "test-artifacts" / "webview"
DARK_MODE = QUESTIONS[5]


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEvaluator]:
    with demo_evaluator(tmp_path_factory.mktemp("webview")) as ev:
        yield ev


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium("1400,1800", page_load_timeout_s=20) as driver:
        yield driver


def _shot(driver: WebDriver, name: str) -> Path:
    return screenshot(driver, ARTIFACTS, name)


def _web(ev: EmbeddedEvaluator) -> str:
    url = ev.web_url
    assert url is not None, "the web view is not served"
    return url


def _trace_id(ev: EmbeddedEvaluator, question: str) -> str:
    return next(r.trace_id for _, r in ev.state.results.all() if r.query == question)


def test_overview_shows_the_cells_charts_and_reasons(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    d.get(_web(evaluator))
    counts = {
        str(card.get_attribute("class")).split("cell-")[1]: card.find_element(
            By.CLASS_NAME, "count"
        ).text
        for card in d.find_elements(By.CSS_SELECTOR, "a.card")
    }
    assert counts == {
        "both_failed": "0",
        "generation_failed": "1",
        "retrieval_failed": "1",
        "unjudged": "0",
        "unlabelled": "1",
        "unlabelled_not_grounded": "0",
        "unanswerable_answered": "0",
        "unanswerable_declined": "0",
        "fine": "3",
    }
    charts = d.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == 3
    assert charts[0].find_elements(By.CSS_SELECTOR, "rect.fill-fine")
    assert "lexical" in d.find_element(By.TAG_NAME, "main").text
    _shot(d, "overview")


def test_the_list_filters_by_cell_worst_first(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    d = browser
    d.get(_web(evaluator) + "traces")
    cells = [e.text for e in d.find_elements(By.CSS_SELECTOR, "table.traces td .cell")]
    assert cells[:2] == ["generation failed", "retrieval failed"]
    assert len(cells) == len(QUESTIONS)
    Select(d.find_element(By.NAME, "cell")).select_by_value("retrieval_failed")
    click_and_load(d, d.find_element(By.CSS_SELECTOR, "form.filters button"))
    assert "cell=retrieval_failed" in d.current_url
    rows = d.find_elements(By.CSS_SELECTOR, "table.traces tbody tr")
    assert [r.find_element(By.CLASS_NAME, "q").text for r in rows] == [QUESTIONS[0]]
    _shot(d, "list-filtered")
    d.get(_web(evaluator) + "traces?cell=nope")
    assert "cell must be one of" in d.find_element(By.CSS_SELECTOR, "[role=alert]").text


def test_the_two_escalations_show_why(evaluator: EmbeddedEvaluator, browser: WebDriver) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    # generation failed: the unsupported unit, and the passage it contradicts
    d.get(f"{_web(evaluator)}traces/{_trace_id(evaluator, QUESTIONS[1])}")
    assert d.find_element(By.CSS_SELECTOR, ".summary .cell").text == "generation failed"
    bad = d.find_element(By.CSS_SELECTOR, ".unit.unsupported")
    assert "XML spreadsheet" in bad.find_element(By.CLASS_NAME, "unit-text").text
    assert bad.find_element(By.CSS_SELECTOR, ".near code").text == "c-2210"
    good = d.find_element(By.CSS_SELECTOR, ".unit.supported")
    assert good.find_element(By.CSS_SELECTOR, ".quote a code").text == "c-2211"
    mark = d.find_element(By.CSS_SELECTOR, "#passage-c-2211 mark.ev-ok")
    assert mark.text.startswith("Exports are limited to one running job per workspace")
    gold = d.find_elements(By.CSS_SELECTOR, "ol.chunks li.gold")
    assert [g.get_attribute("data-chunk") for g in gold] == ["c-2210"]
    _shot(d, "trace-generation-failed")
    # retrieval failed: the gold passage never made the top k, and where the cut-off fell
    d.get(f"{_web(evaluator)}traces/{_trace_id(evaluator, QUESTIONS[0])}")
    assert d.find_element(By.CSS_SELECTOR, ".summary .cell").text == "retrieval failed"
    items = d.find_elements(By.CSS_SELECTOR, "ol.chunks > li")
    assert [i.get_attribute("class") for i in items] == ["chunk"] * 3 + ["cutoff"]
    assert "c-4410" in d.find_element(By.CSS_SELECTOR, "p.missing").text
    _shot(d, "trace-retrieval-failed")


def test_a_label_saved_from_a_trace_scores_the_next_one(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    d.get(_web(evaluator) + "questions")
    link = d.find_element(By.CSS_SELECTOR, "main table a")
    assert DARK_MODE in d.find_element(By.CSS_SELECTOR, "main table").text
    click_and_load(d, link)
    boxes = d.find_elements(By.CSS_SELECTOR, "form.label-form input[name=gold]")
    first = boxes[0].get_attribute("value")
    boxes[0].click()
    d.find_element(By.NAME, "extra_gold").send_keys("c-ui-1, c-ui-2")
    click_and_load(d, d.find_element(By.CSS_SELECTOR, "form.label-form button"))
    assert "Saved" in d.find_element(By.CSS_SELECTOR, ".saved").text
    _shot(d, "labelled")
    labelled = evaluator.labels.by_id(evaluator.labels.questions()[-1].qid)
    assert labelled is not None
    assert [q for q in evaluator.labels.questions() if q.question == DARK_MODE][0].gold == {
        first,
        "c-ui-1",
        "c-ui-2",
    }
    # The next trace asking it is matched and scored with recall, without a restart.
    before = len(evaluator.state.results)
    (asked,) = run_app(evaluator.endpoint, [DARK_MODE])
    deadline = time.monotonic() + 30
    while evaluator.state.results.get(str(asked["trace_id"])) is None:
        assert time.monotonic() < deadline, "the new trace was not scored"
        evaluator.wait_for_results(before + 1, 1.0)
    d.get(f"{_web(evaluator)}traces/{asked['trace_id']}")
    summary = d.find_element(By.CSS_SELECTOR, ".summary").text
    assert "recall@3 0.33" in summary, summary
    assert "unlabelled" not in summary
    _shot(d, "next-trace-scored")
