"""The lease is checked at start-up against the judge's time budget × the traces in flight."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.evaluation.judges import AnthropicJudge, make_judge
from ragtrace_consumers.config import ConfigError, ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.runtime.kafka_service import build_service
from ragtrace_consumers.scoring.workers import (
    DEFAULT_DEPTH,
    JUDGEMENT_MARGIN_S,
    check_lease,
    judgement_bound_s,
    lease_needed_s,
)

UNREACHABLE = "http://127.0.0.1:9"


def _judge(budget_s: float) -> AnthropicJudge:
    return AnthropicJudge(api_key="k", base_url=UNREACHABLE, budget_s=budget_s)


def test_the_defaults_fit_and_the_arithmetic_is_the_documented_one() -> None:
    cfg = ConsumerConfig.defaults()
    assert (DEFAULT_DEPTH, JUDGEMENT_MARGIN_S) == (4, 1.0)
    assert lease_needed_s(cfg.judge.budget_s) == 4 * (60.0 + 1.0) == 244.0
    check_lease(cfg.assembly.lease_s, cfg.judge.budget_s)  # 300 s > 244 s


def test_a_lease_that_can_expire_mid_judgement_is_refused_naming_keys_and_numbers() -> None:
    with pytest.raises(ConfigError) as err:
        check_lease(244.0, 60.0)
    assert str(err.value) == (
        "assembly.lease_s: 244 s can expire while a claimed trace waits for the judge: "
        "4 traces in flight per worker x (judge.budget_s 60 s + 1 s margin) = 244 s; "
        "raise assembly.lease_s above 244 or lower judge.budget_s"
    )
    check_lease(244.5, 60.0)
    check_lease(1.0, None)  # a judge without a budget (lexical) answers at once


def test_the_bound_is_the_judges_own_budget() -> None:
    assert judgement_bound_s(_judge(42.0)) == 42.0
    assert judgement_bound_s(make_judge("lexical")) is None


def test_consume_refuses_before_connecting_to_anything() -> None:
    cfg = ConsumerConfig.defaults().replace(assembly={"lease_s": 200.0})
    with pytest.raises(ConfigError, match=r"assembly.lease_s: 200 s .* = 244 s"):
        build_service(cfg, judge=_judge(60.0))


def test_serve_refuses_too(tmp_path: Path) -> None:
    cfg = ConsumerConfig.defaults().replace(
        assembly={"lease_s": 100.0},
        judge={"budget_s": 30.0},
        serve={"port": 0, "metrics": False, "state": tmp_path / "s.sqlite3"},
    )
    with pytest.raises(ConfigError, match=r"judge.budget_s 30 s \+ 1 s margin\) = 124 s"):
        EmbeddedEvaluator(cfg, judge=_judge(30.0))
    assert not (tmp_path / "s.sqlite3").exists()  # refused before any state was opened


@pytest.mark.parametrize("command", ["consume", "serve"])
def test_both_commands_exit_with_the_reason(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", UNREACHABLE)
    monkeypatch.setenv("RAGTRACE_JUDGE_NAME", "anthropic")
    monkeypatch.setenv("RAGTRACE_JUDGE_BUDGET_S", "80")
    monkeypatch.delenv("RAGTRACE_CONSUMER_CONFIG", raising=False)
    argv = [command]
    if command == "serve":
        argv += ["--state", str(tmp_path / "s.sqlite3"), "--no-metrics", "--port", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "assembly.lease_s: 300 s can expire" in err
    assert "(judge.budget_s 80 s + 1 s margin) = 324 s" in err
