"""``ragtrace demo`` end to end, as the README runs it: a child process, no services, exit 0,
and the seed chapter's two escalations in their cells."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, lexical_responder
from tests.unit.consumers.demo_client import CLI, QUESTIONS, clean_env

EXPORTS_CLAIM = (
    "The /v1/exports endpoint returns an XML spreadsheet, zipped per quarter and "
    "mailed to the account owner overnight."
)

# (question, qid, retrieved, recall, groundedness, unsupported claims, cell), in asking order.
EXPECTED = [
    (
        QUESTIONS[0],
        "q-audit-team",
        ["c-9930", "c-9931", "c-1001"],
        0.0,
        1.0,
        [],
        "retrieval_failed",
    ),
    (
        QUESTIONS[1],
        "q-exports-format",
        ["c-2210", "c-2211", "c-9931"],
        1.0,
        0.5,
        [EXPORTS_CLAIM],
        "generation_failed",
    ),
    (QUESTIONS[2], "q-rotate-key", ["c-3120", "c-9931", "c-3300"], 1.0, 1.0, [], "fine"),
    (QUESTIONS[3], "q-rate-limit", ["c-3300", "c-3120", "c-9931"], 1.0, 1.0, [], "fine"),
    (QUESTIONS[4], "q-regions", ["c-5100", "c-9931", "c-2211"], 1.0, 1.0, [], "fine"),
    (QUESTIONS[5], None, ["c-7700"], None, 1.0, [], "unlabelled"),
]


def _demo(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=clean_env(env),
    )


def _check_questions(doc: Mapping[str, object]) -> None:
    questions = doc["questions"]
    assert isinstance(questions, list)
    got = [
        (
            q["question"],
            q["qid"],
            q["retrieved"],
            q["recall"],
            q["groundedness"],
            q["unsupported_claims"],
            q["cell"],
        )
        for q in questions
    ]
    assert got == EXPECTED
    assert [q["number"] for q in questions] == [1, 2, 3, 4, 5, 6]
    assert len({q["trace_id"] for q in questions}) == 6
    assert doc["cells"] == {
        "fine": 3,
        "retrieval_failed": 1,
        "generation_failed": 1,
        "both_failed": 0,
        "unlabelled": 1,
        "unlabelled_not_grounded": 0,
        "unanswerable_declined": 0,
        "unanswerable_answered": 0,
        "unjudged": 0,
    }
    assert doc["totals"] == {
        "questions": 6,
        "labelled": 5,
        "scored_for_recall": 5,
        "judged": 6,
        "mean_recall": 0.8,
        "mean_hit_rate": 0.8,
        "mean_groundedness": 5.5 / 6,
        "avg_gold_size": 1.0,
        "unsupported_claims": 1,
        "not_grounded": 1,
        "escalations": 2,
    }
    assert (doc["k"], doc["recall_definition"], doc["thresholds"]) == (
        3,
        "mean_recall",
        {"recall": 0.5, "groundedness": 0.8},
    )


def test_demo_json_with_the_offline_lexical_judge() -> None:
    done = _demo("--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    _check_questions(doc)
    assert doc["judge"]["name"] == "lexical"
    assert doc["judge"]["model"] is None
    # Progress went to stderr while it ran, one line per question asked and scored.
    for n, question in enumerate(QUESTIONS, start=1):
        assert f"[{n}/6] {question}  ->  retrieved" in done.stderr
    assert "scored 6/6:" in done.stderr
    assert "Judge: lexical (offline" in done.stderr


def test_demo_text_report(tmp_path: Path) -> None:
    done = _demo(env={"RAGTRACE_CALIBRATION_FILE": str(tmp_path / "never-calibrated.json")})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Judge: lexical (offline" in out
    assert "  scored 6/6: " in out
    assert "      gold c-4410 not in the top 3: retrieved c-9930, c-9931, c-1001" in out
    assert f'      not supported by the context: "{EXPORTS_CLAIM}"' in out
    table = [
        "                    |  grounded                |  not grounded",
        "  retrieval ok      |  fine 3  #3 #4 #5        |  generation failed 1  #2",
        "  retrieval failed  |  retrieval failed 1  #1  |  both failed 0",
        "  outside the table (no label, unanswerable, or no judgement): 1 unlabelled #6",
    ]
    assert "\n".join(table) in out
    assert (
        "  recall@3 (mean recall, average gold-set size 1.00): 0.80 over 5 labelled "
        "questions" in out
    )
    assert "  groundedness: 0.92 over 6 answers, 1 unsupported claim(s)" in out
    assert "  answers not grounded, labelled or not: 1  #2" in out
    assert (
        "  judge: lexical (offline: a sentence is supported when its support reaches 83% (90% "
        "the weighted share of its words one retrieved sentence holds, 10% the share of its "
        "words found in the context), the context holds all its figures and names, and no "
        "negation or hedge is dropped; set ANTHROPIC_API_KEY to judge with Claude)" in out
    )
    # Every rate with its n and 95 % interval; the not-grounded share uncorrected, with how
    # to correct it.
    rates = [
        "  cell fine                       50.0 % [18.8, 81.2] n=6",
        "  cell both failed                0.0 % [0.0, 39.0] n=6",
        "  hit rate@3                      80.0 % [37.6, 96.4] n=5",
        "  not grounded (raw, judge's verdicts): 16.7 % [3.0, 56.4] n=6 — uncorrected",
    ]
    assert all(line in out.splitlines() for line in rates), out
    assert out.rstrip().endswith(
        "no calibration: run `ragtrace calibrate --labels HUMAN.jsonl` with the judge in use "
        "to correct it for the judge's measured error"
    )

    # The README's excerpt is real output: every line of it appears in this run's output.
    readme = (Path(__file__).parents[4] / "README.md").read_text("utf-8")
    section = readme.split("## Try it in one command", 1)[1]
    excerpt = section.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    assert excerpt[0] == "$ ragtrace demo"
    shown = [line for line in excerpt[1:] if line.strip() not in ("", "...")]
    assert len(shown) > 20
    missing = [line for line in shown if line not in out.splitlines()]
    assert missing == []


def test_demo_corrects_the_not_grounded_share_with_the_judge_s_calibration(
    tmp_path: Path,
) -> None:
    from ragtrace.evaluation.judges import make_judge

    stamp = tmp_path / "calibration.json"
    info = make_judge("lexical").info
    stamp.write_text(
        json.dumps(
            {
                "judge": info.to_dict(),
                "agreement": 0.9,
                "kappa": 0.78,
                "claims": 300,
                "calibrated_at": "2026-12-01T10:00:00+00:00",
                "confusion": {
                    "both_entailed": 190,
                    "judge_only": 20,
                    "human_only": 10,
                    "neither": 80,
                },
            }
        )
    )
    done = _demo("--json", env={"RAGTRACE_CALIBRATION_FILE": str(stamp)})
    assert done.returncode == 0, done.stderr
    rate = json.loads(done.stdout)["not_grounded"]
    assert rate["raw"]["k"] == 1 and rate["raw"]["n"] == 6
    corrected = rate["corrected"]
    # (1/6 + 0.95 - 1) / (0.8 + 0.95 - 1) = 0.1556
    assert corrected["value"] == pytest.approx((1 / 6 - 0.05) / 0.75, abs=1e-6)
    assert corrected["low"] < corrected["value"] < corrected["high"]
    assert corrected["sensitivity"]["k"] == 80 and corrected["specificity"]["n"] == 200
    assert rate["calibrated_at"] == "2026-12-01T10:00:00+00:00" and rate["note"] is None


def test_demo_uses_the_anthropic_judge_when_a_key_is_set() -> None:
    with FakeAnthropic(lexical_responder) as fake:
        done = _demo(
            "--json", env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
        )
        calls = len(fake.requests)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["judge"]["name"] == "anthropic"
    assert doc["judge"]["model"]
    assert doc["judge"]["summary"] == f"anthropic (model {doc['judge']['model']})"
    assert calls == 6
    _check_questions(doc)
