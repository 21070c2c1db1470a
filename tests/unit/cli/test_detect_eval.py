"""``ragtrace detect-eval`` through the real CLI: the offline judge end to end, resuming (also
after ``kill -9``), and the consent a paid judge needs — the Anthropic judge's real client
against the wire-level fake API."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragtrace.cli import main
from ragtrace.cli._cost_gate import CostCap, consent_problem, estimate_cost
from ragtrace.cli._detect_results import ResultsFileError, read_results
from ragtrace.evaluation.judges import (
    GroundednessResult,
    JudgeInfo,
    JudgeUnavailable,
    LexicalJudge,
    Usage,
)
from tests.fakes.anthropic_server import FakeAnthropic, Reply, entail_all

ROOT = Path(__file__).resolve().parents[3]


def _set(path: Path, n: int) -> Path:
    rows = []
    for i in range(n):
        context = f"Fact {i} holds. The depot {i} opened in 1990."
        if i % 2:
            answer, spans = f"Fact {i} holds.", []
        else:
            answer = f"Fact {i} holds. The mayor closed it in 2004 after protests."
            spans = [[answer.index("The mayor"), len(answer)]]
        rows.append(
            {
                "id": f"a{i}",
                "context": [context],
                "answer": answer,
                "spans": spans,
                "task_type": "qa" if i % 3 else "summary",
                "split": "tune" if i % 4 == 0 else "test",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("RAGTRACE_JUDGE_MODEL", raising=False)
    monkeypatch.delenv("RAGTRACE_JUDGE_PRICES", raising=False)
    return tmp_path


def test_offline_judge_end_to_end_then_resume_judges_nothing_twice(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _set(workdir / "set.jsonl", 24)
    argv = ["detect-eval", "--input", str(data), "--judge", "lexical", "--results", "r.jsonl"]
    assert main([*argv, "--json-file", "report.json"]) == 0
    out = capsys.readouterr()
    assert "overall" in out.out and "AUROC" in out.out
    assert len(_lines(workdir / "r.jsonl")) == 24
    report = json.loads((workdir / "report.json").read_text())
    overall = report["groups"][-1]
    assert [g["task_type"] for g in report["groups"]] == ["qa", "summary", "overall"]
    assert overall["tune_answers"] == 6 and overall["test_answers"] == 18
    assert overall["test_hallucinated"] == 6  # even i are hallucinated; i % 4 == 0 tune
    # the invented second sentence is unsupported: every hallucinated answer is flagged
    assert overall["at_threshold"]["recall"] == 1.0
    assert overall["auroc"] == 1.0
    assert overall["span_overlap"]["answers"] == 18
    assert overall["span_overlap"]["recall"] == 1.0
    assert report["judge"]["name"] == "lexical"

    assert main([*argv, "--json-file", "again.json"]) == 0
    assert "24 already judged" in capsys.readouterr().err
    assert len(_lines(workdir / "r.jsonl")) == 24  # nothing judged again
    assert json.loads((workdir / "again.json").read_text())["groups"] == report["groups"]


def test_default_results_file_is_per_input_and_judge(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _set(workdir / "mine.jsonl", 4)
    assert main(["detect-eval", "--input", str(data), "--judge", "lexical", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    path = Path(doc["results_file"])
    assert path.name.startswith("mine.lexical-") and path.name.endswith(".results.jsonl")
    assert len(_lines(path)) == 4


def test_a_results_file_of_another_judge_is_refused(workdir: Path) -> None:
    lexical = LexicalJudge()
    other = JudgeInfo("lexical", None, "0" * 64)
    path = workdir / "r.jsonl"
    path.write_text(json.dumps({"id": "a0", "score": 1.0, "judge": other.to_dict()}) + "\n")
    with pytest.raises(ResultsFileError, match="line 1: written by judge"):
        read_results(path, lexical.info)
    data = _set(workdir / "set.jsonl", 2)
    argv = ["detect-eval", "--input", str(data), "--judge", "lexical", "--results", str(path)]
    assert main(argv) == 2


def test_a_torn_last_line_and_an_error_line_are_judged_again(workdir: Path) -> None:
    data = _set(workdir / "set.jsonl", 3)
    info = LexicalJudge().info.to_dict()
    path = workdir / "r.jsonl"
    path.write_text(
        json.dumps({"id": "a0", "score": 1.0, "error": None, "judge": info})
        + "\n"
        + json.dumps({"id": "a1", "score": None, "error": "boom", "judge": info})
        + '\n{"id": "a2", "sco'
    )
    argv = ["detect-eval", "--input", str(data), "--judge", "lexical", "--results", str(path)]
    assert main(argv) == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[2] == '{"id": "a2", "sco'  # the torn line was ended, not run into
    assert sorted(json.loads(x)["id"] for x in lines[3:]) == ["a1", "a2"]


# --- a paid judge ------------------------------------------------------------------------------
@pytest.fixture
def api(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake


def test_a_paid_run_needs_consent_and_prints_the_expected_cost(
    api: FakeAnthropic, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _set(workdir / "set.jsonl", 6)
    argv = ["detect-eval", "--input", str(data), "--judge", "anthropic", "--results", "r.jsonl"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "6 answer(s) to judge with claude-haiku-4-5: expected about" in err
    assert "pass --yes, or --max-cost" in err
    assert main([*argv, "--max-cost", "0.000001"]) == 2
    assert "is above --max-cost" in capsys.readouterr().err
    assert api.requests == []  # nothing was sent, nothing paid
    assert main([*argv, "--max-cost", "5"]) == 0
    assert len(api.requests) == 6
    assert main([*argv, "--max-cost", "5"]) == 0  # resumed: all done, no estimate, no call
    assert len(api.requests) == 6
    assert "6 already judged" in capsys.readouterr().err


def test_the_estimate_covers_what_the_fake_api_bills(api: FakeAnthropic, workdir: Path) -> None:
    from ragtrace.evaluation.judges import make_judge

    judge = make_judge("anthropic")
    pairs = [(f"Fact {i} holds. It rains.", [f"Fact {i} holds. " * 20]) for i in range(5)]
    estimate = estimate_cost(judge, pairs)
    billed = [judge.groundedness(a, c) for a, c in pairs]
    assert estimate.usd is not None
    assert estimate.input_tokens >= sum(r.usage.input_tokens for r in billed)
    assert estimate.usd >= sum(r.cost_usd for r in billed) > 0
    assert consent_problem(estimate, yes=False, max_cost=estimate.usd) is None
    assert consent_problem(estimate, yes=True, max_cost=None) is None


class _Priced:
    """A judge whose every answer costs $0.40."""

    def __init__(self) -> None:
        self.calls = 0
        self.info = JudgeInfo("priced", "m", "1" * 64)

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        self.calls += 1
        return GroundednessResult(1.0, (), self.info, Usage(10, 1), 0.40, True)


def test_cost_cap_stops_starting_judgements_once_the_limit_is_spent() -> None:
    inner = _Priced()
    capped = CostCap(inner, 1.0)
    for _ in range(3):  # 0.0, 0.4, 0.8 spent before each: all below $1
        capped.groundedness("a", ["c"])
    with pytest.raises(JudgeUnavailable, match=r"--max-cost \$1.00 reached"):
        capped.groundedness("a", ["c"])
    assert inner.calls == 3 and capped.spent_usd == pytest.approx(1.2)


# --- kill -9 mid-run, then resume -------------------------------------------------------------
class _Slow:
    """entail_all, 0.25 s per request, recording which answer each request judged."""

    def __init__(self) -> None:
        self.judged: list[str] = []

    def __call__(self, request: Mapping[str, Any]) -> Reply:
        time.sleep(0.25)
        text = request["messages"][0]["content"]
        text = text if isinstance(text, str) else "".join(p.get("text", "") for p in text)
        answer = text.split("<answer>", 1)[1]
        self.judged.append(answer.split("Fact ", 1)[1].split(" holds", 1)[0])
        return entail_all(request)


def test_resume_after_kill_9_never_rejudges_a_finished_answer(
    api: FakeAnthropic, workdir: Path
) -> None:
    slow = _Slow()
    api.responder = slow
    n = 16
    data = _set(workdir / "set.jsonl", n)
    results = workdir / "r.jsonl"
    cmd = [
        sys.executable,
        "-c",
        "import sys; from ragtrace.cli import main; sys.exit(main())",
        "detect-eval",
        "--input",
        str(data),
        "--judge",
        "anthropic",
        "--yes",
        "--results",
        str(results),
        "--concurrency",
        "2",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240  # the child imports the anthropic client first
    while time.monotonic() < deadline:
        if results.exists() and len(results.read_text().splitlines()) >= 4:
            break
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    finished = set()
    for line in results.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):  # torn by the kill: judged again
            finished.add(json.loads(line)["id"])
    assert 4 <= len(finished) < n  # the run was stopped part-way
    before = len(slow.judged)

    assert main(cmd[3:]) == 0
    rejudged = {f"a{i}" for i in slow.judged[before:]}
    assert not rejudged & finished, f"finished answers judged again: {rejudged & finished}"
    assert rejudged == {f"a{i}" for i in range(n)} - finished
    assert {d["id"] for d in _lines(results)} == {f"a{i}" for i in range(n)}


def test_tune_sample_judges_only_part_of_the_tune_split(workdir: Path) -> None:
    data = _set(workdir / "set.jsonl", 24)  # 6 tune answers
    argv = ["detect-eval", "--input", str(data), "--judge", "lexical", "--results", "r.jsonl"]
    assert main([*argv, "--tune-sample", "2", "--json-file", "report.json"]) == 0
    overall = json.loads((workdir / "report.json").read_text())["groups"][-1]
    assert (overall["tune_answers"], overall["test_answers"]) == (2, 18)
    assert len(_lines(workdir / "r.jsonl")) == 20


def test_a_ragtruth_directory_through_the_cli(workdir: Path) -> None:
    from tests.unit.evaluation.test_hallucination_sets import _ragtruth

    root = _ragtruth(workdir / "ragtruth")
    argv = ["detect-eval", "--input", str(root), "--judge", "lexical"]
    assert main([*argv, "--results", "a.jsonl", "--json-file", "a.json"]) == 0
    report = json.loads((workdir / "a.json").read_text())
    assert [g["task_type"] for g in report["groups"]] == ["Data2txt", "QA", "Summary", "overall"]
    qa = report["groups"][1]
    assert (qa["tune_answers"], qa["test_answers"], qa["test_hallucinated"]) == (0, 1, 1)
    # "bake them for 60 minutes" contradicts the passage: the unit is flagged, the span found
    assert qa["span_overlap"]["tp_chars"] > 0
    assert report["groups"][-1]["tune_answers"] == 2
    assert main([*argv, "--all-quality", "--results", "b.jsonl", "--json-file", "b.json"]) == 0
    overall = json.loads((workdir / "b.json").read_text())["groups"][-1]
    assert overall["test_answers"] == 2  # the refusal is kept
    assert main([*argv[:2], str(root / "response.jsonl"), *argv[3:], "--results", "a.jsonl"]) == 0


def test_input_from_stdin_needs_a_results_file(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    data = _set(workdir / "mine.jsonl", 4)
    assert main(["detect-eval", "--input", "-", "--judge", "lexical"]) == 2
    assert "--input - needs --results" in capsys.readouterr().err

    class Stdin:
        buffer = io.BytesIO(data.read_bytes())

    monkeypatch.setattr(sys, "stdin", Stdin())
    argv = ["detect-eval", "--input", "-", "--results", "r.jsonl", "--judge", "lexical", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert Path(doc["results_file"]).name == "r.jsonl"
    assert len(_lines(workdir / "r.jsonl")) == 4
