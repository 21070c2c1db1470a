"""Debian's headless Chromium for the browser tests, driven through its own chromedriver (given
by path, so Selenium Manager never downloads anything), and their screenshots as artefacts."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from scripts.services import NotProvisioned
from scripts.services.paths import chromedriver, chromium
from tests.unit.consumers.demo_client import QUESTIONS, run_app

__all__ = ["DEMO_LABELS", "click_and_load", "demo_evaluator", "headless_chromium", "screenshot"]

DEMO_LABELS = str(resources.files("ragtrace_consumers.demo").joinpath("labels.jsonl"))


@contextmanager
def demo_evaluator(
    state_dir: Path, questions: Sequence[str] = QUESTIONS
) -> Iterator[EmbeddedEvaluator]:
    """The embedded evaluator the demo serves (the offline judge, the demo's labels, k 3), its
    state in ``state_dir``, once the demo app has asked ``questions`` and every answer is
    scored."""
    config = ConsumerConfig.defaults().replace(
        scoring={"k": 3},
        assembly={"quiet_s": 0.2},
        serve={
            "port": 0,
            "state": state_dir / "state.sqlite3",
            "labels": DEMO_LABELS,
            "metrics": False,
        },
    )
    with EmbeddedEvaluator(config, judge=LexicalJudge()) as ev:
        run_app(ev.endpoint, list(questions))
        assert len(ev.wait_for_results(len(questions), 60)) == len(questions)
        yield ev


@contextmanager
def headless_chromium(window: str, page_load_timeout_s: float) -> Iterator[WebDriver]:
    """A headless Chromium of ``window`` size ("W,H"); fails the test when it is not
    provisioned (``make provision`` installs it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    try:
        driver_path, browser_path = chromedriver(), chromium()
    except NotProvisioned as exc:
        pytest.fail(str(exc))
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager, were it consulted, stays offline
    options = webdriver.ChromeOptions()
    options.binary_location = str(browser_path)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={window}",
        "--disable-extensions",
        "--no-first-run",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=str(driver_path)), options=options)
    driver.set_page_load_timeout(page_load_timeout_s)
    try:
        yield driver
    finally:
        driver.quit()


def click_and_load(driver: WebDriver, element: Any, timeout_s: float = 20) -> None:
    """Click a link or submit button and return once the page it leads to has loaded.

    The old document is marked before the click and the wait is for a complete document without
    the mark: watching the old ``<html>`` go stale races the navigation, and Chromium's
    inspector may answer "node does not belong to the document" while the pages swap."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.__ragtraceOldPage = true;")
    element.click()

    def loaded(d: WebDriver) -> bool:
        return bool(
            d.execute_script(
                "return window.__ragtraceOldPage === undefined"
                " && document.readyState === 'complete';"
            )
        )

    WebDriverWait(driver, timeout_s, ignored_exceptions=(WebDriverException,)).until(loaded)


def screenshot(driver: WebDriver, directory: Path, name: str) -> Path:
    """Save the page as ``directory/name.png`` and check it is a real picture."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 10_000
    return path
