"""``ragtrace calibrate``: claim groups judged concurrently through the real Anthropic client
(wire-level fake API), and a judge outage mid-run keeps what was judged."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ragtrace.cli import main
from tests.fakes.anthropic_server import FakeAnthropic, Reply, entail_all, server_error
from tests.in_flight import InFlight

GROUPS = 6
CALIBRATE = ("calibrate", "--labels", "human.jsonl", "--judge", "anthropic")


def _labels() -> None:
    """Six contexts (one judge call each), two claims each; the humans say all are entailed."""
    lines = []
    for g in range(GROUPS):
        ctx = [f"Plan {g} keeps logs {g + 1} days. Plan {g} has SSO."]
        lines += [
            {
                "id": f"g{g}-a",
                "claim": f"Plan {g} keeps logs {g + 1} days.",
                "context": ctx,
                "human_entailed": True,
            },
            {
                "id": f"g{g}-b",
                "claim": f"Plan {g} has SSO.",
                "context": ctx,
                "human_entailed": True,
            },
        ]
    Path("human.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_groups_are_judged_concurrently(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    _labels()
    in_flight = InFlight()

    def slow(request: Mapping[str, Any]) -> Reply:
        with in_flight:
            time.sleep(0.05)
        return entail_all(request)

    api.responder = slow
    assert main([*CALIBRATE, "--concurrency", "3", "--json", "--no-save"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["claims"] == 2 * GROUPS and report["agreement"] == 1.0
    assert len(api.requests) == GROUPS and 1 < in_flight.peak <= 3
    assert "ragtrace calibrate: tokens " in err and "cost $" in err


def test_a_judge_outage_keeps_the_partial_result(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    _labels()
    calls = {"n": 0}

    def flaky(request: Mapping[str, Any]) -> Reply:
        calls["n"] += 1
        return entail_all(request) if calls["n"] <= 2 else server_error(503)

    api.responder = flaky
    code = main(
        [*CALIBRATE, "--concurrency", "1", "--budget", "0.2", "--json-file", "partial.json"]
    )
    out, err = capsys.readouterr()
    assert code == 3
    doc = json.loads(Path("partial.json").read_text())
    assert doc["claims"] == 4  # the two groups judged before the outage
    assert doc["partial"]["unjudged_claims"] == 2 * GROUPS - 4
    assert "claims: 4 compared" in out
    assert "partial result: 8 claim(s) not judged" in err
    assert "the calibration stamp was not saved" in err
    assert not Path("calibration.json").exists()
