"""The list's search, filters and exports, and the overview's filters, in a real browser
(Debian's headless Chromium through its chromedriver, as test_webview_browser.py).

One embedded evaluator scores the demo app's six questions (the real SDK in a child process →
OTLP/HTTP → scoring → the SQLite state: service ``lumen-support-bot``, model
``demo-template-generator`` read from the trace), plus one row of another service and model
recorded beside them; the browser searches by question text and by a trace-ID prefix, filters by
model and service, downloads the CSV and JSON exports of the filtered list and reads the overview
for one service over the last 24 hours.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.scored_results import ScoredResult
from scripts.services.paths import REPO_ROOT
from tests.browser import click_and_load, demo_evaluator, headless_chromium, screenshot
from tests.unit.consumers.demo_client import QUESTIONS

pytestmark = pytest.mark.timeout(120)

ARTIFACTS = REPO_ROOT / "test-artifacts" / "webview"
DEMO_MODEL = "demo-template-generator"
DEMO_SERVICE = "lumen-support-bot"
OTHER = ScoredResult(
    trace_id="0" * 31 + "1",
    scored_at=time.time() - 60,
    service="billing-bot",
    cell="fine",
    model="other-model",
    query='=HYPERLINK("http://evil.example") How long are invoices kept?',
    groundedness=1.0,
)


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEvaluator]:
    with demo_evaluator(tmp_path_factory.mktemp("webview-list")) as ev:
        ev.state.results.put(OTHER)
        yield ev


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: Path) -> Iterator[WebDriver]:
    with headless_chromium("1400,1800", page_load_timeout_s=20) as driver:
        driver.execute_cdp_cmd(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
        yield driver


def _web(ev: EmbeddedEvaluator) -> str:
    url = ev.web_url
    assert url is not None, "the web view is not served"
    return url


def _submit(d: WebDriver, form: str) -> None:
    from selenium.webdriver.common.by import By

    click_and_load(d, d.find_element(By.CSS_SELECTOR, f"{form} button"))


def _questions(d: WebDriver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in d.find_elements(By.CSS_SELECTOR, "table.traces td.q")]


def _download(d: WebDriver, folder: Path, link: Any, name: str) -> bytes:
    target = folder / name
    target.unlink(missing_ok=True)
    link.click()
    deadline = time.monotonic() + 20
    while not target.exists() or any(folder.glob("*.crdownload")):
        assert time.monotonic() < deadline, f"{name} was not downloaded: {list(folder.iterdir())}"
        time.sleep(0.1)
    return target.read_bytes()


def test_search_by_question_text_and_by_trace_id_prefix(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    d.get(_web(evaluator) + "traces")
    assert len(_questions(d)) == len(QUESTIONS) + 1
    box = d.find_element(By.NAME, "q")
    box.send_keys("AUDIT LOGS")
    _submit(d, "form.filters")
    assert "q=AUDIT+LOGS" in d.current_url
    assert _questions(d) == [QUESTIONS[0]]
    # The list shows 12 digits of each ID; any unique prefix of them opens the trace.
    d.get(_web(evaluator) + "traces")
    row = next(
        r
        for r in d.find_elements(By.CSS_SELECTOR, "table.traces tbody tr")
        if r.find_element(By.CLASS_NAME, "q").text == QUESTIONS[1]
    )
    short = row.find_element(By.TAG_NAME, "code").text
    assert len(short) == 12
    d.find_element(By.NAME, "q").send_keys(short[:8])
    _submit(d, "form.filters")
    full = next(r.trace_id for _, r in evaluator.state.results.all() if r.query == QUESTIONS[1])
    assert d.current_url.endswith(f"/ui/traces/{full}")
    assert d.find_element(By.CSS_SELECTOR, ".summary .cell").text == "generation failed"
    d.get(_web(evaluator) + "traces?q=" + "x" * 201)
    assert "q must be 1..200 characters" in d.find_element(By.CSS_SELECTOR, "[role=alert]").text


def test_filter_by_model_and_service_then_download_the_exports(
    evaluator: EmbeddedEvaluator, browser: WebDriver, downloads: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    d = browser
    d.get(_web(evaluator) + "traces")
    models = [e.text for e in d.find_elements(By.CSS_SELECTOR, "table.traces td.model")]
    assert sorted(set(models)) == [DEMO_MODEL, "other-model"]
    Select(d.find_element(By.NAME, "model")).select_by_value(DEMO_MODEL)
    Select(d.find_element(By.NAME, "service")).select_by_value(DEMO_SERVICE)
    Select(d.find_element(By.NAME, "cell")).select_by_value("fine")
    _submit(d, "form.filters")
    assert f"model={DEMO_MODEL}" in d.current_url and f"service={DEMO_SERVICE}" in d.current_url
    shown = _questions(d)
    assert len(shown) == 3 and OTHER.query not in shown
    screenshot(d, ARTIFACTS, "list-search-model-filter")
    raw = _download(
        d, downloads, d.find_element(By.LINK_TEXT, "CSV"), "ragtrace-traces.csv"
    ).decode()
    rows = list(csv.DictReader(io.StringIO(raw)))
    assert sorted(r["query"] for r in rows) == sorted(shown)
    assert {(r["model"], r["service"], r["cell"]) for r in rows} == {
        (DEMO_MODEL, DEMO_SERVICE, "fine")
    }
    body = json.loads(
        _download(d, downloads, d.find_element(By.LINK_TEXT, "JSON"), "ragtrace-traces.json")
    )
    assert body["filters"] == {"cell": "fine", "service": DEMO_SERVICE, "model": DEMO_MODEL}
    assert [r["trace_id"] for r in body["rows"]] == [r["trace_id"] for r in rows]
    # The other service's row, formula and all, is exported defused.
    d.get(_web(evaluator) + "traces?service=billing-bot")
    raw = _download(
        d, downloads, d.find_element(By.LINK_TEXT, "CSV"), "ragtrace-traces.csv"
    ).decode()
    (other,) = csv.DictReader(io.StringIO(raw))
    assert other["query"] == "'" + str(OTHER.query)


def test_the_overview_for_one_service_over_the_last_day(
    evaluator: EmbeddedEvaluator, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    d = browser
    d.get(_web(evaluator))
    Select(d.find_element(By.NAME, "service")).select_by_value(DEMO_SERVICE)
    Select(d.find_element(By.NAME, "range")).select_by_value("24h")
    _submit(d, "form.filters")
    assert "range=24h" in d.current_url and f"service={DEMO_SERVICE}" in d.current_url
    counts = {
        str(card.get_attribute("class")).split("cell-")[1]: card.find_element(
            By.CLASS_NAME, "count"
        ).text
        for card in d.find_elements(By.CSS_SELECTOR, "a.card")
    }
    assert sum(int(n) for n in counts.values()) == len(QUESTIONS)
    figures = {
        f.get_attribute("data-figure"): f.find_element(By.CLASS_NAME, "count").text
        for f in d.find_elements(By.CSS_SELECTOR, ".headline .figure")
    }
    assert set(figures) == {"mean groundedness", "mean recall", "share not grounded"}
    assert figures["share not grounded"].endswith("%")
    assert "against the previous 24 h" in d.find_element(By.CSS_SELECTOR, ".headline").text
    screenshot(d, ARTIFACTS, "overview-service-24h")
    d.get(_web(evaluator) + "?range=24h&from=2026-01-01")
    alert = d.find_element(By.CSS_SELECTOR, "[role=alert]").text
    assert "from/to are for range=custom" in alert
