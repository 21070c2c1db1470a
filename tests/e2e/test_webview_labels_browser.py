"""The label form in a real browser (Debian's headless Chromium, as test_webview_browser): a
labelled question's trace shows its gold set ticked — the gold chunk this trace never retrieved
too —, one chunk removed and one added, saved, and the trace and the other trace asking it are
re-scored at once (the header, the summary and the list); a form left open while the label
changed is refused; a question marked unanswerable. Screenshots land in test-artifacts/webview/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.model import question_version
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from scripts.services.paths import REPO_ROOT
from tests.browser import click_and_load, demo_evaluator, headless_chromium, screenshot
from tests.unit.consumers.demo_client import QUESTIONS

pytestmark = pytest.mark.timeout(120)

ARTIFACTS = REPO_ROOT / "test-artifacts" / "webview"
AUDIT = QUESTIONS[0]  # labelled c-4410, never retrieved: retrieval failed
REGIONS = QUESTIONS[4]


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEvaluator]:
    with demo_evaluator(tmp_path_factory.mktemp("labels"), [*QUESTIONS, AUDIT]) as ev:
        yield ev


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium("1400,2200", page_load_timeout_s=20) as driver:
        yield driver


def _trace_page(ev: EmbeddedEvaluator, question: str, n: int = 0) -> str:
    ids = [r.trace_id for _, r in ev.state.results.all() if r.query == question]
    assert ev.web_url is not None
    return f"{ev.web_url}traces/{ids[n]}"


def _box(d: WebDriver, chunk: str) -> Any:
    from selenium.webdriver.common.by import By

    return d.find_element(By.CSS_SELECTOR, f"form.label-form input[name=gold][value='{chunk}']")


def _ticked(d: WebDriver) -> list[str]:
    from selenium.webdriver.common.by import By

    boxes = d.find_elements(By.CSS_SELECTOR, "form.label-form input[name=gold]")
    return [str(b.get_attribute("value")) for b in boxes if b.is_selected()]


def _text(d: WebDriver, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(d.find_element(By.CSS_SELECTOR, css).text)


def _shot(d: WebDriver, name: str) -> Path:
    return screenshot(d, ARTIFACTS, name)


def test_the_gold_set_is_shown_edited_and_both_traces_rescored(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    d.get(_trace_page(evaluator, AUDIT))
    assert _text(d, ".summary .cell") == "retrieval failed"
    assert "labelled q-audit-team (1 gold chunk)" in _text(d, ".summary .label-state")
    assert _ticked(d) == ["c-4410"]  # listed although this trace never retrieved it
    kept = " ".join(_text(d, "form.label-form .gold-kept").split())
    assert kept == "Gold this trace did not retrieve: c-4410"
    assert "Saving replaces label version" in _text(d, "form.label-form .replaces")
    assert "from the labels file" in _text(d, "form.label-form .replaces")
    _shot(d, "label-form-gold-set")
    _box(d, "c-4410").click()  # remove the gold chunk nobody retrieves
    _box(d, "c-9931").click()  # add the one retrieved at rank 2
    d.find_element(By.NAME, "rescore_others").click()
    click_and_load(d, d.find_element(By.CSS_SELECTOR, "form.label-form button"))
    saved = _text(d, ".saved")
    assert "this trace was re-scored with it (its judgement kept)" in saved, saved
    assert "and 1 other recent trace asking it" in saved
    assert "labelled q-audit-team (1 gold chunk)" in _text(d, ".summary .label-state")
    assert _text(d, ".summary .cell") == "fine"
    summary = _text(d, ".summary")
    assert "recall@3 1.00" in summary and "groundedness 1.00" in summary, summary
    assert _ticked(d) == ["c-9931"]
    assert "saved from a trace" in _text(d, "form.label-form .replaces")
    gold = d.find_elements(By.CSS_SELECTOR, "ol.chunks li.gold")
    assert [g.get_attribute("data-chunk") for g in gold] == ["c-9931"]
    _shot(d, "label-form-saved")
    q = evaluator.labels.by_id("q-audit-team")
    assert q is not None and q.gold == {"c-9931"}
    # The list: both traces asking it moved out of "retrieval failed", in their places.
    assert evaluator.web_url is not None
    d.get(evaluator.web_url + "traces?cell=retrieval_failed")
    assert AUDIT not in _text(d, "main")
    d.get(_trace_page(evaluator, AUDIT, 1))
    assert _text(d, ".summary .cell") == "fine"
    assert "recall@3 1.00" in _text(d, ".summary")


def test_a_form_left_open_while_the_label_changed_is_refused(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    d.get(_trace_page(evaluator, QUESTIONS[2]))
    assert _ticked(d) == ["c-3120"]
    old = evaluator.labels.by_id("q-rotate-key")
    assert old is not None
    elsewhere = LabelledQuestion(old.qid, old.question, frozenset({"c-3120", "c-3300"}))
    evaluator.labels.add(elsewhere, replaces=question_version(old))  # saved in another tab
    _box(d, "c-9931").click()
    click_and_load(d, d.find_element(By.CSS_SELECTOR, "form.label-form button"))
    alert = _text(d, "[role=alert]")
    assert "Not saved: the label of question q-rotate-key changed since it was read" in alert
    assert evaluator.labels.by_id("q-rotate-key") == elsewhere
    d.get(_trace_page(evaluator, QUESTIONS[2]))
    assert _ticked(d) == ["c-3120", "c-3300"]


def test_a_question_marked_unanswerable(evaluator: EmbeddedEvaluator, browser: WebDriver) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    d.get(_trace_page(evaluator, REGIONS))
    assert "recall@3 1.00" in _text(d, ".summary")
    d.find_element(By.NAME, "unanswerable").click()
    click_and_load(d, d.find_element(By.CSS_SELECTOR, "form.label-form button"))
    assert "re-scored" in _text(d, ".saved")
    state = _text(d, ".summary .label-state")
    assert "labelled unanswerable q-regions (empty gold set: recall n/a)" in state, state
    assert "recall@3 n/a" in _text(d, ".summary")
    assert d.find_element(By.NAME, "unanswerable").is_selected()
    assert _ticked(d) == []
    _shot(d, "label-form-unanswerable")
    q = evaluator.labels.by_id("q-regions")
    assert q is not None and q.gold == frozenset()
