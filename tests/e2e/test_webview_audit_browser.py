"""The audit of the judge in a real browser (Debian's headless Chromium, as
test_webview_browser): the overview links to the traces marked to audit, a trace page's unit
verdicts are agreed and disagreed with by clicking, and the overview's kappa panel counts them.
Screenshots land in test-artifacts/webview/.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from scripts.services.paths import REPO_ROOT
from tests.browser import click_and_load, headless_chromium, screenshot
from tests.unit.consumers.demo_client import QUESTIONS, run_app

pytestmark = pytest.mark.timeout(120)

ARTIFACTS = REPO_ROOT / "test-artifacts" / "webview"
LABELS = str(resources.files("ragtrace_consumers.demo").joinpath("labels.jsonl"))


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEvaluator]:
    config = ConsumerConfig.defaults().replace(
        scoring={"k": 3},
        assembly={"quiet_s": 0.2},
        audit={"share": 1.0},  # every judged trace is marked: the list is never empty
        serve={
            "port": 0,
            "state": tmp_path_factory.mktemp("audit") / "state.sqlite3",
            "labels": LABELS,
            "metrics": False,
        },
    )
    with EmbeddedEvaluator(config, judge=LexicalJudge()) as ev:
        run_app(ev.endpoint, QUESTIONS)
        assert len(ev.wait_for_results(len(QUESTIONS), 60)) == len(QUESTIONS)
        yield ev


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium("1400,2200", page_load_timeout_s=20) as driver:
        yield driver


def _kappa(d: WebDriver, overview: str) -> str:
    from selenium.webdriver.common.by import By

    d.get(overview)
    return str(d.find_element(By.CSS_SELECTOR, ".agreement .audit-kappa").text)


def test_clicking_agree_and_disagree_moves_the_kappa_panel(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    assert evaluator.web_url is not None
    overview = evaluator.web_url
    assert _kappa(d, overview) == "n/a (n = 0)"
    link = d.find_element(By.CSS_SELECTOR, ".audit-link a")
    assert "judged trace" in link.text and "to audit" in link.text
    click_and_load(d, link)
    pending = d.find_elements(By.CSS_SELECTOR, "ul.pending-audit a")
    assert pending, d.page_source[:2000]
    click_and_load(d, pending[0])
    trace_page = d.current_url.split("#")[0]
    assert "To audit" in d.find_element(By.CSS_SELECTOR, ".audit-state").text
    forms = d.find_elements(By.CSS_SELECTOR, "form.audit-form")
    assert forms
    # Agree with every unit verdict of the judge on this trace.
    for i in range(len(forms)):
        form = d.find_elements(By.CSS_SELECTOR, "form.audit-form")[i]
        click_and_load(d, form.find_element(By.CSS_SELECTOR, "button[value=agree]"))
    d.get(trace_page)
    assert len(d.find_elements(By.CSS_SELECTOR, ".audited.agree")) == len(forms)
    screenshot(d, ARTIFACTS, "audit-trace-page")
    agreed = _kappa(d, overview)
    assert agreed.endswith(f"(n = {len(forms)})"), agreed
    # Disagree with the first unit: the same unit's answer is replaced, n stays, kappa moves.
    d.get(trace_page)
    first = d.find_elements(By.CSS_SELECTOR, "form.audit-form")[0]
    click_and_load(d, first.find_element(By.CSS_SELECTOR, "button[value=disagree]"))
    assert d.find_elements(By.CSS_SELECTOR, ".audited.disagree")
    disagreed = _kappa(d, overview)
    assert disagreed.endswith(f"(n = {len(forms)})") and disagreed != agreed, (agreed, disagreed)
    screenshot(d, ARTIFACTS, "audit-kappa-panel")
    [label] = [a for a in evaluator.state.audits.all() if not a.agrees]
    assert label.human_supported is not label.judge_supported
