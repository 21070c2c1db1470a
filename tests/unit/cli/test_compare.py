"""``ragtrace compare`` through ``ragtrace.cli.main``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import ragtrace.cli
from ragtrace.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture(autouse=True)
def _reports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Only the commands under test: the others have their own tests.
    monkeypatch.setattr(
        ragtrace.cli, "_COMMAND_MODULES", ("ragtrace.cli.eval", "ragtrace.cli.compare")
    )
    monkeypatch.delenv("RAGTRACE_RECALL_DEFINITION", raising=False)
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for name in ("vector", "hybrid"):
        argv = ["eval", "--labels", "examples/labels.jsonl", "--run", f"examples/run_{name}.jsonl"]
        assert main([*argv, "--k", "3", "--json-file", f"{name}.json"]) == 0
        assert (
            main(
                [
                    *argv,
                    "--k",
                    "3",
                    "--json-file",
                    f"{name}_hit.json",
                    "--recall-definition",
                    "hit_rate",
                ]
            )
            == 0
        )


def test_compare_prints_deltas_intervals_and_movers(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert (
        main(["compare", "vector.json", "hybrid.json", "--movers", "1", "--resamples", "500"]) == 0
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[:2] == [
        "A: vector.json    B: hybrid.json",
        "5 questions answerable in both, recall definition: mean_recall",
    ]
    assert lines[3].split() == ["metric", "A", "B", "delta", "95%", "CI", "better", "worse"]
    rows = {line.split()[0]: line.split() for line in lines[5:10]}
    assert rows["recall@3"][:4] == ["recall@3", "0.700", "1.000", "+0.300"]
    assert rows["mrr"][:4] == ["mrr", "0.667", "0.900", "+0.233"]
    assert rows["mrr"][-2:] == ["2", "1"]
    assert lines[10] == "(paired bootstrap over questions, 500 resamples, seed 0)"
    assert "mrr:\n  better: q4 (0.000 -> 1.000), ... 1 more\n  worse:  q5 (1.000 -> 0.500)\n" in out
    assert out.endswith("better on some metric: q2, q3, q4\nworse on some metric:  q5\n")


def test_compare_json_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "vector.json", "hybrid.json", "--resamples", "300", "--seed", "4"]
    assert main([*argv, "--confidence", "0.9", "--json-file", "cmp.json"]) == 0
    assert "90% CI" in capsys.readouterr().out
    doc = json.loads(Path("cmp.json").read_text())
    assert (doc["confidence"], doc["resamples"], doc["seed"], doc["paired"]) == (0.9, 300, 4, 5)
    mrr = doc["metrics"]["mrr"]
    assert mrr["n"] == 5
    assert mrr["worse"] == [{"qid": "q5", "a": 1.0, "b": 0.5, "delta": -0.5}]
    assert [m["qid"] for m in mrr["better"]] == ["q4", "q3"]
    low, high = mrr["ci"]
    assert low <= mrr["delta"] <= high
    # Same seed, same interval.
    assert main([*argv, "--confidence", "0.9", "--json-file", "again.json"]) == 0
    assert json.loads(Path("again.json").read_text()) == doc


def test_different_recall_definitions_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["compare", "vector.json", "hybrid_hit.json", "--json-file", "cmp.json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "ragtrace compare: error: recall definitions differ: A uses mean_recall, B uses "
        "hit_rate; re-run one with --recall-definition\n"
    )
    assert not Path("cmp.json").exists()
    assert main(["compare", "vector_hit.json", "hybrid_hit.json", "--resamples", "10"]) == 0


def test_bad_report_files_exit_2_naming_file_line_and_field(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("broken.json").write_text('{\n  "metrics": {},\n  nope\n}\n')
    assert main(["compare", "vector.json", "broken.json"]) == 2
    assert capsys.readouterr().err.startswith(
        "ragtrace compare: error: broken.json, line 3: not valid JSON"
    )
    doc = json.loads(Path("hybrid.json").read_text())
    doc["per_question"]["q3"]["rr"] = "high"
    Path("edited.json").write_text(json.dumps(doc))
    assert main(["compare", "vector.json", "edited.json"]) == 2
    assert capsys.readouterr().err == (
        "ragtrace compare: error: edited.json, field 'per_question.q3.rr': "
        "must be a number or null, got 'high'\n"
    )
    assert main(["compare", "vector.json", "absent.json"]) == 2
    assert capsys.readouterr().err == "ragtrace compare: error: absent.json: no such file\n"


@pytest.mark.parametrize(
    "extra", [["--resamples", "0"], ["--confidence", "1.5"], ["--movers", "-1"], []]
)
def test_usage_errors_exit_2(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "vector.json", *([] if not extra else ["hybrid.json"]), *extra]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage: ragtrace compare" in capsys.readouterr().err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for text in ("A.json", "B.json", "--resamples", "--confidence", "--seed", "--json-file PATH"):
        assert text in out


@pytest.mark.parametrize(
    ("gates", "code", "failed"),
    [
        # hybrid vs vector: recall@3 +0.300, mrr +0.233 (see the table test above).
        (["recall@3<-0.02"], 0, []),
        (["recall@3>0.29"], 1, ["recall@3>0.29 (delta +0.3000)"]),
        (["recall@3<0.31,mrr<0.2"], 1, ["recall@3<0.31 (delta +0.3000)"]),
        (["mrr>=0.2", "recall@3<=-1"], 1, ["mrr>=0.2 (delta +0.2333)"]),
    ],
)
def test_fail_if_gates_exit_1(
    capsys: pytest.CaptureFixture[str], gates: list[str], code: int, failed: list[str]
) -> None:
    capsys.readouterr()
    argv = ["compare", "vector.json", "hybrid.json", "--resamples", "200"]
    for g in gates:
        argv += ["--fail-if", g]
    assert main([*argv, "--json-file", "cmp.json"]) == code
    err = capsys.readouterr().err
    assert err.splitlines() == [f"ragtrace compare: error: gate failed: {f}" for f in failed]
    doc = json.loads(Path("cmp.json").read_text())
    assert [g["failed"] for g in doc["gates"]] == [
        any(f.startswith(g["condition"] + " ") for f in failed) for g in doc["gates"]
    ]


def test_fail_if_on_the_interval_needs_a_significant_change(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``:ci<`` tests the interval's upper bound: the gate fails only when the whole interval
    lies below the value."""
    argv = ["compare", "hybrid.json", "vector.json", "--resamples", "500"]
    assert main([*argv, "--json"]) == 0
    recall = json.loads(capsys.readouterr().out)["metrics"]["recall@3"]
    high = recall["ci"][1]
    assert recall["delta"] < high <= 0.0  # vector is worse than hybrid on recall@3
    assert main([*argv, "--fail-if", f"recall@3:ci<{high + 0.001}"]) == 1
    assert main([*argv, "--fail-if", f"recall@3:ci<{high}"]) == 0
    # The delta alone is past the same value: without :ci the gate fails.
    assert main([*argv, "--fail-if", f"recall@3<{high}"]) == 1


@pytest.mark.parametrize(
    ("cond", "message"),
    [
        ("recall@3<<0", "not a condition: 'recall@3<<0'"),
        ("recall@3", "not a condition: 'recall@3'"),
        ("nope@3<0", "no metric 'nope@3' in both reports"),
    ],
)
def test_bad_gates_exit_2(capsys: pytest.CaptureFixture[str], cond: str, message: str) -> None:
    with pytest.raises(SystemExit) as info:
        code = main(["compare", "vector.json", "hybrid.json", "--fail-if", cond])
        raise SystemExit(code)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
