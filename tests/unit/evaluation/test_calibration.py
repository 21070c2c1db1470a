from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragtrace.evaluation.calibration import (
    CalibrationItem,
    CalibrationReport,
    Confusion,
    HumanLabel,
    calibrate,
    calibration_report,
    calibration_warning,
    cohen_kappa,
    default_stamp_path,
    load_human_labels,
    load_stamp,
    save_stamp,
)
from ragtrace.evaluation.judges import (
    AnthropicJudge,
    ClaimVerdict,
    JudgeInfo,
    LexicalJudge,
    PriceTable,
)
from ragtrace.evaluation.labels import InputFileError
from tests.fakes.anthropic_server import FakeAnthropic, Reply, claims_reply

INFO = JudgeInfo("anthropic", "claude-haiku-4-5-20251001", "a" * 64)


def test_kappa_hand_computed() -> None:
    # po = 35/50 = 0.7; judge yes 25/50, human yes 30/50; pe = .5*.6 + .5*.4 = .5
    assert cohen_kappa(Confusion(20, 5, 10, 15)) == pytest.approx(0.4)
    assert cohen_kappa(Confusion(10, 0, 0, 10)) == 1.0
    assert cohen_kappa(Confusion(0, 5, 5, 0)) == pytest.approx(-1.0)
    assert math.isnan(cohen_kappa(Confusion(7, 0, 0, 0)))  # both constant: undefined
    assert math.isnan(cohen_kappa(Confusion(0, 0, 0, 0)))


def test_report_from_verdicts() -> None:
    labels = [
        HumanLabel(f"c{i}", f"claim {i}", ("ctx",), h)
        for i, h in enumerate([True, True, False, False])
    ]
    verdicts = [
        ClaimVerdict("claim 0", True, "ctx", True),
        ClaimVerdict("claim 1", False, None, False),
        ClaimVerdict("claim 2", True, "made up", False),
        ClaimVerdict("claim 3", True, "ctx", True),
    ]
    strict = calibration_report(labels, verdicts, INFO)
    assert strict.confusion == Confusion(1, 1, 1, 1)
    assert strict.agreement == 0.5 and strict.kappa == 0.0
    assert [d.id for d in strict.disagreements] == ["c1", "c3"]
    loose = calibration_report(labels, verdicts, INFO, require_verified_evidence=False)
    assert loose.confusion == Confusion(1, 2, 1, 0) and loose.agreement == 0.25
    d = strict.to_dict()
    assert d["judge"] == INFO.to_dict() and d["claims"] == 4
    assert d["confusion"] == {"both_entailed": 1, "judge_only": 1, "human_only": 1, "neither": 1}
    assert d["disagreements"][0] == {  # type: ignore[index]
        "id": "c1",
        "claim": "claim 1",
        "human_entailed": True,
        "judge_entailed": False,
        "evidence": None,
        "evidence_verified": False,
    }
    with pytest.raises(ValueError, match="4 labels but 3 judge verdicts"):
        calibration_report(labels, verdicts[:3], INFO)


def _seed_scenario() -> tuple[list[HumanLabel], list[Reply]]:
    """50 claims in 10 contexts of 5. Humans: claims 0-29 entailed, 30-49 not. The judge
    (verdicts as given): entails 0-28 quoting the context, rejects 29, entails 30-34 loosely
    (30-32 with a quote that is not in the context, 33-34 quoting real but insufficient text)
    and rejects 35-49."""
    labels: list[HumanLabel] = []
    replies: list[Reply] = []
    for g in range(10):
        doc = " ".join(f"Fact {g}-{i} is stated here." for i in range(5))
        verdicts: list[tuple[str, bool, str | None]] = []
        for i in range(5):
            n = g * 5 + i
            # each claim names its fact, so a quote of that fact shares the claim's key terms
            claim = f"Fact {g}-{i} is stated."
            labels.append(HumanLabel(f"claim-{n:02d}", claim, (doc,), n < 30))
            real = f"Fact {g}-{i} is stated here"
            if n <= 28:
                verdicts.append((claim, True, real))
            elif n in (30, 31, 32):
                verdicts.append((claim, True, f"Fact {g}-{i} is implied loosely"))
            elif n in (33, 34):
                verdicts.append((claim, True, real))
            else:
                verdicts.append((claim, False, None))
        replies.append(claims_reply(verdicts))
    return labels, replies


def test_seed_scenario_quotes_move_agreement_from_88_to_94_percent() -> None:
    labels, replies = _seed_scenario()
    with FakeAnthropic(responder=None) as api:
        judge = AnthropicJudge(api_key="k", base_url=api.base_url, prices=PriceTable())
        api.enqueue(*replies, *replies)
        loose = calibrate(labels, judge, require_verified_evidence=False)
        strict = calibrate(labels, judge)
        assert len(api.requests) == 20  # one call per context, twice
    assert len(loose.items) == len(strict.items) == 50
    assert loose.agreement == pytest.approx(0.88)
    assert strict.agreement == pytest.approx(0.94)
    assert loose.confusion == Confusion(29, 5, 1, 15)
    assert strict.confusion == Confusion(29, 2, 1, 18)
    assert loose.kappa == pytest.approx((0.88 - 0.536) / 0.464)
    assert strict.kappa == pytest.approx((0.94 - 0.524) / 0.476)
    # requiring a verified quote drops the mean score by 0.06: 34/50 -> 31/50
    assert loose.judge_entailed_rate - strict.judge_entailed_rate == pytest.approx(0.06)
    assert [d.id for d in strict.disagreements] == ["claim-29", "claim-33", "claim-34"]
    assert strict.judge.model == "claude-haiku-4-5"  # the configured model: the identity


def test_calibrate_counts_judge_errors_and_keeps_going() -> None:
    labels = [
        HumanLabel("a", "x is y.", ("x is y.",), True),
        HumanLabel("b", "z.", ("other",), False),
    ]
    with FakeAnthropic(responder=None) as api:
        judge = AnthropicJudge(api_key="k", base_url=api.base_url, prices=PriceTable())
        bad = claims_reply([])  # wrong count for a one-claim group: malformed
        api.enqueue(claims_reply([("x is y.", True, "x is y.")]), bad, bad)
        report = calibrate(labels, judge)
    assert report.errors == 1 and [i.id for i in report.items] == ["a"]


def test_lexical_judge_can_be_calibrated() -> None:
    labels = [
        HumanLabel("a", "alpha beta gamma", ("alpha beta gamma delta",), True),
        HumanLabel("b", "omega psi", ("alpha beta gamma delta",), False),
    ]
    report = calibrate(labels, LexicalJudge())
    assert report.agreement == 1.0 and report.judge.name == "lexical"


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "human.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_human_labels(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '{"id": "a", "claim": "c1", "context": ["d"], "human_entailed": true}',
        "",
        '{"id": "b", "claim": "c2", "context": ["d"], "human_entailed": false, '
        '"answer": "c1. c2."}',
    )
    labels = load_human_labels(path)
    assert labels == [
        HumanLabel("a", "c1", ("d",), True),
        HumanLabel("b", "c2", ("d",), False, "c1. c2."),
    ]


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        (
            '{"id": "b", "claim": "c", "context": ["d"], "human_entailed": "yes"}',
            "human_entailed",
            "must be true or false",
        ),
        (
            '{"id": "b", "claim": "", "context": ["d"], "human_entailed": true}',
            "claim",
            "must be a non-empty string",
        ),
        (
            '{"id": "b", "claim": "c", "context": "d", "human_entailed": true}',
            "context",
            "must be a list of strings",
        ),
        (
            '{"id": "a", "claim": "c", "context": ["d"], "human_entailed": true}',
            "id",
            "duplicate id 'a'",
        ),
        (
            '{"id": "b", "claim": "c", "context": ["d"], "human_entailed": true, "answer": 3}',
            "answer",
            "must be a string when given",
        ),
        ("not json", None, r"not valid JSON \(Expecting value\)"),
        ("[1]", None, "expected a JSON object, got list"),
    ],
)
def test_label_errors_name_file_line_and_field(
    tmp_path: Path, line: str, field: str | None, reason: str
) -> None:
    path = _write(
        tmp_path, '{"id": "a", "claim": "c", "context": ["d"], "human_entailed": true}', line
    )
    with pytest.raises(InputFileError, match=reason) as info:
        load_human_labels(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, field)
    assert f"{path}, line 2" in str(info.value)


def test_empty_or_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no labelled claims"):
        load_human_labels(_write(tmp_path, ""))
    with pytest.raises(InputFileError, match="missing.jsonl: no such file$"):
        load_human_labels(tmp_path / "missing.jsonl")


def test_stamp_round_trip_and_judge_change_warning(tmp_path: Path) -> None:
    stamp_path = tmp_path / "state" / "calibration.json"
    assert load_stamp(stamp_path) is None
    assert calibration_warning(INFO, stamp_path) is None  # never calibrated: nothing to say
    report = CalibrationReport(
        INFO, (CalibrationItem("a", "c", True, True), CalibrationItem("b", "d", False, True))
    )
    stamp = save_stamp(report, stamp_path)
    assert load_stamp(stamp_path) == stamp
    assert json.loads(stamp_path.read_text())["agreement"] == 0.5
    assert calibration_warning(INFO, stamp_path) is None
    upgraded = JudgeInfo("anthropic", "claude-sonnet-4-6", "a" * 64)
    warning = calibration_warning(upgraded, stamp_path)
    assert warning is not None
    assert "model 'claude-haiku-4-5-20251001' -> 'claude-sonnet-4-6'" in warning
    assert "prompt_sha256" not in warning
    reprompted = JudgeInfo("anthropic", "claude-haiku-4-5-20251001", "b" * 64)
    assert "prompt_sha256" in (calibration_warning(reprompted, stamp_path) or "")
    stamp_path.write_text("{broken")
    assert load_stamp(stamp_path) is None


def test_default_stamp_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGTRACE_CALIBRATION_FILE", str(tmp_path / "x.json"))
    assert default_stamp_path() == tmp_path / "x.json"
    monkeypatch.delenv("RAGTRACE_CALIBRATION_FILE")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_stamp_path() == tmp_path / "ragtrace" / "calibration.json"


def test_stamp_keeps_the_confusion_matrix_and_matches_its_judge(tmp_path: Path) -> None:
    stamp_path = tmp_path / "calibration.json"
    report = CalibrationReport(
        INFO, (CalibrationItem("a", "c", True, True), CalibrationItem("b", "d", False, True))
    )
    stamp = save_stamp(report, stamp_path)
    assert json.loads(stamp_path.read_text())["confusion"] == {
        "both_entailed": 1,
        "judge_only": 1,
        "human_only": 0,
        "neither": 0,
    }
    assert load_stamp(stamp_path) == stamp and stamp.confusion == report.confusion
    assert stamp.matches(INFO)
    assert not stamp.matches(JudgeInfo("anthropic", "claude-haiku-4-5-20251001", "b" * 64))
    assert not stamp.matches(JudgeInfo("lexical", "claude-haiku-4-5-20251001", "a" * 64))


def test_a_stamp_written_before_the_confusion_matrix_loads_without_it(tmp_path: Path) -> None:
    stamp_path = tmp_path / "calibration.json"
    old = {
        "judge": INFO.to_dict(),
        "agreement": 0.9,
        "kappa": 0.7,
        "claims": 40,
        "calibrated_at": "2026-01-01T00:00:00+00:00",
    }
    stamp_path.write_text(json.dumps(old))
    stamp = load_stamp(stamp_path)
    assert stamp is not None and stamp.confusion is None and stamp.to_dict() == old
