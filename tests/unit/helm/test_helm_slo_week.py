"""The groundedness burn-rate alerts over a simulated week, evaluated by `promtool test rules`.

A seeded stream of judged answers (about two a minute on a daily wave, 0.8 to 3.2) with each
answer not grounded with probability ``p``, as the two counters the consumers export. Every rule
of the chart's defaults is evaluated each minute for seven days:

* **stationary**, ``p`` = 5 % (exactly the 95 % objective) for the whole week: no alert ever
  fires (Prometheus' own ``ALERTS`` series, queried over the week, is empty; it is not empty in
  the drop's run, so the check can fail);
* **a drop of 5 points** at day 3: ``p`` 5 % → 10 % (a burn of 2×): the 1d/2h rule (1.5×) fires
  within its one-day window, and nothing fires before the drop.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.helm.conftest import Rendered, run_promtool

pytestmark = pytest.mark.timeout(300)

ALERT = "RagtraceGroundednessBudgetBurn"
MINUTES = 7 * 24 * 60
DROP_AT = 3 * 24 * 60  # minutes
CHECK_EVERY = 10  # minutes between the alert checks
SEED = 31


def judged_stream(seed: int, p: Callable[[int], float]) -> tuple[list[int], list[int]]:
    """Cumulative (judged, not grounded) per minute, minute 0 to MINUTES inclusive."""
    rng = random.Random(seed)
    judged, failed = [0], [0]
    for minute in range(1, MINUTES + 1):
        rate = 2.0 * (1 + 0.6 * math.sin(2 * math.pi * minute / 1440))
        n = _poisson(rng, rate)
        k = sum(rng.random() < p(minute) for _ in range(n))
        judged.append(judged[-1] + n)
        failed.append(failed[-1] + k)
    return judged, failed


def _poisson(rng: random.Random, lam: float) -> int:
    """Knuth's method (fine for the small rates here)."""
    limit, k, prod = math.exp(-lam), 0, rng.random()
    while prod > limit:
        k += 1
        prod *= rng.random()
    return k


def _burn_rules(r: Rendered) -> dict[str, Any]:
    (rule,) = r.of_kind("PrometheusRule")
    rules = [x for g in rule["spec"]["groups"] for x in g["rules"] if x.get("alert") == ALERT]
    assert len(rules) == 3
    return {"groups": [{"name": "slo", "rules": rules}]}


def _test_file(judged: list[int], failed: list[int]) -> dict[str, Any]:
    labels = 'service="shop", pipeline="qa", judge_model="lexical"'
    checks = range(CHECK_EVERY, MINUTES + 1, CHECK_EVERY)
    return {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": f"ragtrace_groundedness_count{{{labels}}}",
                        "values": " ".join(map(str, judged)),
                    },
                    {
                        "series": f'ragtrace_groundedness_failed_total{{{labels}, model="g"}}',
                        "values": " ".join(map(str, failed)),
                    },
                ],
                # Every check expects no alert: the failures promtool lists are the firings.
                "alert_rule_test": [
                    {"eval_time": f"{m}m", "alertname": ALERT, "exp_alerts": []} for m in checks
                ],
                "promql_expr_test": [
                    {
                        "expr": f'count_over_time(ALERTS{{alertname="{ALERT}"}}[{MINUTES}m])',
                        "eval_time": f"{MINUTES}m",
                        "exp_samples": [],
                    }
                ],
            }
        ],
    }


def _fired_at(
    promtool: Path, rules: dict[str, Any], stream: tuple[list[int], list[int]], tmp: Path
) -> tuple[list[int], bool]:
    """(minutes of the checks at which the alert was firing, whether ALERTS held any sample)."""
    tests = _test_file(*stream)
    (tmp / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
    (tmp / "week.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=1 << 30))
    proc = run_promtool(promtool, "test", "rules", "week.yaml", cwd=tmp, timeout_s=280)
    out = proc.stdout + proc.stderr
    fired = sorted(
        _minutes(t) for t in re.findall(rf"alertname: {ALERT}, time: ([0-9wdhms]+)", out)
    )
    any_alerts = "expr: " in out and "count_over_time(ALERTS" in out
    assert (proc.returncode == 0) == (not fired and not any_alerts), out[-2000:]
    return fired, any_alerts


def _minutes(duration: str) -> int:
    """A promtool duration (``3d11h20m``, ``1w``) in whole minutes."""
    per = {"w": 7 * 1440, "d": 1440, "h": 60, "m": 1, "s": 0}
    return sum(int(n) * per[unit] for n, unit in re.findall(r"(\d+)([wdhms])", duration))


@pytest.fixture(scope="module")
def burn_rules(rendered: Callable[[str], Rendered]) -> dict[str, Any]:
    return _burn_rules(rendered("monitoring"))


def test_a_stationary_week_at_the_objective_fires_nothing(
    promtool_bin: Path, burn_rules: dict[str, Any], tmp_path: Path
) -> None:
    stream = judged_stream(SEED, lambda _m: 0.05)
    judged, failed = stream
    assert 0.045 < failed[-1] / judged[-1] < 0.055  # the stream is at the objective
    fired, any_alerts = _fired_at(promtool_bin, burn_rules, stream, tmp_path)
    assert fired == [] and not any_alerts


def test_a_drop_of_five_points_fires_within_the_one_day_window(
    promtool_bin: Path, burn_rules: dict[str, Any], tmp_path: Path
) -> None:
    stream = judged_stream(SEED, lambda m: 0.05 if m <= DROP_AT else 0.10)
    fired, any_alerts = _fired_at(promtool_bin, burn_rules, stream, tmp_path)
    assert any_alerts
    assert fired, "the drop never fired"
    assert fired[0] > DROP_AT, f"fired before the drop, at minute {fired[0]}"
    assert fired[0] - DROP_AT <= 24 * 60, f"fired {fired[0] - DROP_AT} minutes after the drop"
