"""The person audit of the judge in the web view: agree / disagree on each unit verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrace.evaluation.agreement import agreement
from ragtrace.evaluation.calibration import CalibrationStamp, Confusion
from ragtrace.evaluation.judges import JudgeInfo
from ragtrace_consumers.intake.web_seam import WebResponse
from ragtrace_consumers.stores.audit_labels import AuditLabel, marked_for_audit
from ragtrace_consumers.stores.sqlite_labels import SqliteLabelStore
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview import WebView, WebViewOptions
from tests.unit.consumers.webview.rows import detail, result
from tests.unit.consumers.webview.test_app import HOST, csrf_of, get, post, text

SAME_ORIGIN = {"origin": f"http://{HOST}"}


@pytest.fixture
def state() -> SqliteState:
    s = SqliteState(":memory:")
    for n in range(1, 41):
        s.results.put(result(n, "generation_failed", groundedness=0.5), detail())
    s.results.put(result(99, "unlabelled", groundedness=None, judge_name=None))
    return s


def _view(state: SqliteState, share: float = 0.25) -> WebView:
    return WebView(state, SqliteLabelStore(state), options=WebViewOptions(audit_share=share))


def _audit(view: WebView, trace: str, unit: str, answer: str, **change: object) -> WebResponse:
    form: dict[str, object] = {
        "csrf": csrf_of(get(view, f"/ui/traces/{trace}")),
        "trace_id": trace,
        "unit": unit,
        "answer": answer,
    }
    form.update(change)
    return post(view, "/ui/audit", form, SAME_ORIGIN)


def test_the_marked_share_is_a_pure_function_of_the_trace_id() -> None:
    ids = [f"{n:032x}" for n in range(20_000)]
    marked = [t for t in ids if marked_for_audit(t, 0.02)]
    assert 0.015 < len(marked) / len(ids) < 0.025
    assert marked == [t for t in ids if marked_for_audit(t.upper(), 0.02)]
    assert set(marked) <= {t for t in ids if marked_for_audit(t, 0.05)}
    assert not any(marked_for_audit(t, 0.0) for t in ids[:500])
    assert all(marked_for_audit(t, 1.0) for t in ids[:500])
    with pytest.raises(ValueError, match="within 0..1"):
        marked_for_audit(ids[0], 1.5)


def test_a_disagree_is_stored_with_the_judges_verdict_and_identity(state: SqliteState) -> None:
    view = _view(state)
    trace = f"{7:032x}"
    page = text(get(view, f"/ui/traces/{trace}"))
    assert page.count('action="/ui/audit"') == 2  # one form per scored unit
    r = _audit(view, trace, "2", "disagree")
    assert r.status == 303 and dict(r.headers)["Location"] == f"/ui/traces/{trace}#unit-2"
    [label] = state.audits.for_trace(trace)
    assert (label.unit, label.judge_supported, label.human_supported, label.agrees) == (
        "2",
        False,
        True,
        False,
    )
    assert label.unit_text.startswith("An invented")
    assert (label.judge_name, label.prompt_sha256, label.auditor) == ("lexical", "a" * 64, "web")
    assert label.sampled == marked_for_audit(trace, 0.25)
    # A second answer on the same unit replaces the first; the page shows it.
    _audit(view, trace, "2", "agree")
    [again] = state.audits.for_trace(trace)
    assert again.agrees and again.human_supported is False
    assert "audited: agree" in text(get(view, f"/ui/traces/{trace}"))


@pytest.mark.parametrize(
    ("change", "headers", "status", "message"),
    [
        ({"csrf": "forged"}, SAME_ORIGIN, 403, "stale form token"),
        ({}, {"origin": "https://evil.example"}, 403, "cross-site request refused"),
        ({"answer": "maybe"}, SAME_ORIGIN, 400, "agree or disagree"),
        ({"unit": "9"}, SAME_ORIGIN, 404, "no judged unit"),
        ({"trace_id": f"{99:032x}"}, SAME_ORIGIN, 404, "no judged unit"),
        ({"trace_id": "zz"}, SAME_ORIGIN, 400, "not a trace ID"),
    ],
)
def test_bad_or_cross_site_audit_posts_are_refused(
    state: SqliteState,
    change: dict[str, object],
    headers: dict[str, str],
    status: int,
    message: str,
) -> None:
    view = _view(state)
    trace = f"{7:032x}"
    form: dict[str, object] = {
        "csrf": csrf_of(get(view, f"/ui/traces/{trace}")),
        "trace_id": trace,
        "unit": "1",
        "answer": "agree",
    }
    form.update(change)
    r = post(view, "/ui/audit", form, headers)
    assert (r.status, message in text(r)) == (status, True), text(r)
    assert state.audits.all() == []


def test_the_overview_links_to_the_marked_traces_not_audited_yet(state: SqliteState) -> None:
    view = _view(state)
    judged = [f"{n:032x}" for n in range(1, 41)]
    marked = [t for t in judged if marked_for_audit(t, 0.25)]
    assert marked  # 40 traces at 25 %: some are marked
    assert f"{len(marked)} judged trace" in text(get(view, "/ui/"))
    page = text(get(view, "/ui/audit"))
    assert all(t in page for t in marked)
    assert not any(t in page for t in set(judged) - set(marked))
    assert f"{99:032x}" not in page  # not judged: nothing to audit
    _audit(view, marked[0], "1", "agree")
    assert marked[0] not in text(get(view, "/ui/audit"))
    assert "To audit" in text(get(view, f"/ui/traces/{marked[0]}"))
    assert "Nothing waits" in text(get(_view(state, 0.0), "/ui/audit"))


def _stamp(path: Path, judge: JudgeInfo, confusion: Confusion) -> None:
    stamp = CalibrationStamp(
        judge, 0.9, 0.7, confusion.total, "2026-12-01T00:00:00+00:00", confusion
    )
    path.write_text(json.dumps(stamp.to_dict()), encoding="utf-8")


def test_the_overview_shows_the_running_kappa_beside_the_calibrations(
    state: SqliteState, tmp_path: Path
) -> None:
    judge = JudgeInfo("lexical", None, "a" * 64)
    _stamp(tmp_path / "calibration.json", judge, Confusion(190, 20, 10, 80))
    options = WebViewOptions(judge=judge, calibration_path=tmp_path / "calibration.json")
    view = WebView(state, SqliteLabelStore(state), options=options)
    assert "n/a (n = 0)" in text(get(view, "/ui/"))
    # The textbook table (kappa 0.4 over 50 units), 49 units stored and the 50th clicked:
    # unit 2 of the fixture's answer is unsupported by the judge, the auditor says supported.
    cells = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 9 + [(False, False)] * 15
    for i, (judge_says, auditor_says) in enumerate(cells):
        state.audits.add(
            AuditLabel(
                f"{1000 + i:032x}", "1", "u", judge_says, auditor_says, "lexical", "", "a" * 64, 1.0
            )
        )
    # Another judge's or prompt's audit labels are not this judge's agreement.
    state.audits.add(AuditLabel(f"{1:032x}", "1", "u", True, False, "other", "", "a" * 64, 1.0))
    state.audits.add(AuditLabel(f"{2:032x}", "1", "u", True, False, "lexical", "", "b" * 64, 1.0))
    _audit(view, f"{7:032x}", "2", "disagree")
    page = text(get(view, "/ui/"))
    a = agreement(Confusion(20, 5, 10, 15))
    assert f"0.40 [{a.low:.2f}, {a.high:.2f}] (n = 50)" in page
    calibrated = agreement(Confusion(190, 20, 10, 80))
    assert f"{calibrated.kappa:.2f} [{calibrated.low:.2f}, {calibrated.high:.2f}] (n = 300)" in page
