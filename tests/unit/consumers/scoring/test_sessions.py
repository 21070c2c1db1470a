"""Sessions: a follow-up turn judged against its own context and its session's earlier turns'
evidence (scoring/sessions.py), through the whole Pipeline over in-memory stores with the real
lexical judge's verdicts; and the rules themselves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from ragtrace import semconv
from ragtrace.evaluation.judges import GroundednessResult, LexicalJudge
from ragtrace_consumers.model import Chunk, RagTrace, SessionTurn, SpanRecord
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.pipeline import PipelineSettings
from ragtrace_consumers.scoring.sessions import (
    earlier_turn_units,
    own_turn,
    with_earlier_turns,
)
from ragtrace_consumers.stores.memory import MemorySessionEvidence
from tests.unit.consumers.scoring_helpers import T0, Rig, ScriptedJudge, rag_spans, rig, tid

TEAM = ("c-team", "The Team plan keeps activity history for 30 days.")
ENTERPRISE = ("c-ent", "Audit log retention on the Enterprise plan is 90 days, exportable as CSV.")
SSO = ("c-sso", "Enterprise plans include single sign-on.")
FOLLOW_UP = "Audit log retention on the Enterprise plan is 90 days."


def _lexical(answer: str, context: Sequence[str]) -> GroundednessResult:
    return LexicalJudge().groundedness(answer, list(context))


def _turn(
    n: int,
    session: str | None,
    query: str,
    retrieved: Sequence[tuple[str, str]],
    answer: str,
    end_s: float,
    key: str = semconv.SESSION_ID,
) -> list[SpanRecord]:
    spans = rag_spans(n, query=query, retrieved=retrieved, answer=answer, end_s=end_s)
    if session is None:
        return spans
    return [
        replace(s, attributes={**s.attributes, key: session}) if s.parent_span_id is None else s
        for s in spans
    ]


def _rig(settings: PipelineSettings | None = None) -> Rig:
    settings = settings or PipelineSettings(quiet_s=5.0, lease_s=60.0)
    return rig(
        judge=ScriptedJudge(default=_lexical),
        settings=settings,
        sessions=MemorySessionEvidence(max_turns=max(1, settings.session_turns)),
    )


def _score(r: Rig, spans: list[SpanRecord], at: float) -> dict[str, Any]:
    r.clock.now = at
    r.pipeline.ingest(spans, at)
    assert r.pipeline.process_due(at) == 1
    span = next(s for s in r.spans() if s.context.trace_id == int(spans[0].trace_id, 16))
    return dict(span.attributes or {})


def _two_turns(r: Rig, session: str | None, key: str = semconv.SESSION_ID) -> dict[str, Any]:
    first = _turn(
        1,
        session,
        "How long is audit history kept on the Team plan?",
        [TEAM, ENTERPRISE],
        TEAM[1],
        T0,
        key,
    )
    assert _score(r, first, T0)[semconv.EVAL_GROUNDEDNESS] == 1.0
    follow = _turn(2, session, "And on Enterprise?", [SSO], FOLLOW_UP, T0 + 20, key)
    return _score(r, follow, T0 + 20)


@pytest.mark.parametrize("key", [semconv.SESSION_ID, semconv.GEN_AI_CONVERSATION_ID])
def test_a_follow_up_answered_from_an_earlier_turn_is_grounded_and_says_so(key: str) -> None:
    r = _rig()
    a = _two_turns(r, "s-1", key)
    assert a[semconv.EVAL_GROUNDEDNESS] == 1.0
    assert a[semconv.EVAL_SESSION_ID] == "s-1"
    assert a[semconv.EVAL_EARLIER_TURNS] == (tid(1),)
    assert a[semconv.EVAL_EARLIER_TURN_UNITS] == (1,)
    # One judge call per turn: the follow-up's context is its own chunk, then turn 1's.
    assert [c for _, c in r.judge.calls] == [
        (TEAM[1], ENTERPRISE[1]),
        (SSO[1], TEAM[1], ENTERPRISE[1]),
    ]


def test_without_a_session_the_same_follow_up_is_not_grounded() -> None:
    r = _rig()
    a = _two_turns(r, None)
    assert a[semconv.EVAL_GROUNDEDNESS] == 0.0
    assert semconv.EVAL_EARLIER_TURNS not in a and semconv.EVAL_SESSION_ID not in a


def test_another_session_lends_no_evidence() -> None:
    r = _rig()
    first = _turn(1, "s-1", "Team plan history?", [TEAM, ENTERPRISE], TEAM[1], T0)
    _score(r, first, T0)
    a = _score(r, _turn(2, "s-2", "And Enterprise?", [SSO], FOLLOW_UP, T0 + 20), T0 + 20)
    assert a[semconv.EVAL_GROUNDEDNESS] == 0.0


def test_session_turns_zero_judges_each_turn_on_its_own() -> None:
    r = _rig(PipelineSettings(quiet_s=5.0, lease_s=60.0, session_turns=0))
    assert _two_turns(r, "s-1")[semconv.EVAL_GROUNDEDNESS] == 0.0


def test_an_earlier_turn_older_than_the_age_bound_is_not_evidence() -> None:
    r = _rig(PipelineSettings(quiet_s=5.0, lease_s=60.0, session_max_age_s=10.0))
    assert _two_turns(r, "s-1")[semconv.EVAL_GROUNDEDNESS] == 0.0  # 20 s apart


def test_only_the_newest_max_turns_earlier_turns_are_evidence() -> None:
    r = _rig(PipelineSettings(quiet_s=5.0, lease_s=60.0, session_turns=1))
    _score(r, _turn(1, "s-1", "Enterprise retention?", [ENTERPRISE], ENTERPRISE[1], T0), T0)
    _score(r, _turn(3, "s-1", "Team history?", [TEAM], TEAM[1], T0 + 10), T0 + 10)
    a = _score(r, _turn(4, "s-1", "And Enterprise again?", [SSO], FOLLOW_UP, T0 + 20), T0 + 20)
    assert a[semconv.EVAL_EARLIER_TURNS] == (tid(3),)
    assert a[semconv.EVAL_GROUNDEDNESS] == 0.0  # turn 1's passage is beyond the bound


def _trace(context: Sequence[Chunk], session: str | None = "s-1") -> RagTrace:
    return RagTrace(
        trace_id=tid(9),
        service="svc",
        target_span_id="a" * 16,
        context=tuple(context),
        session_id=session,
        ended_ns=5,
    )


def test_own_turn_keeps_only_own_chunks_with_text() -> None:
    trace = _trace([Chunk("c-1", "one"), Chunk("c-2"), Chunk("c-3", "three", turn=tid(1))])
    assert own_turn(trace) == ("s-1", SessionTurn(tid(9), 5, (Chunk("c-1", "one"),)))
    assert own_turn(_trace([Chunk("c-1", "one")], session=None)) is None
    assert own_turn(_trace([Chunk("c-2")])) is None


def test_earlier_chunks_are_appended_once_and_marked_with_their_turn() -> None:
    trace = _trace([Chunk("c-1", "one")])
    turns = [
        SessionTurn(tid(2), 4, (Chunk("c-1", "one"), Chunk("c-2", "two"))),
        SessionTurn(tid(1), 3, (Chunk("c-2", "two"), Chunk("c-3", "three"))),
        SessionTurn(tid(9), 5, (Chunk("c-4", "self"),)),
    ]
    assert with_earlier_turns(trace, turns).context == (
        Chunk("c-1", "one"),
        Chunk("c-2", "two", turn=tid(2)),
        Chunk("c-3", "three", turn=tid(1)),
    )
    assert with_earlier_turns(trace, []) is trace


def test_a_unit_quoting_its_own_turn_is_not_marked_earlier() -> None:
    context = [Chunk("c-1", FOLLOW_UP), Chunk("c-2", ENTERPRISE[1], turn=tid(1))]
    result = _lexical(FOLLOW_UP, [c.text or "" for c in context])
    assert result.score == 1.0
    assert earlier_turn_units(result, context) == {}
    earlier = [Chunk("c-1", SSO[1]), Chunk("c-2", ENTERPRISE[1], turn=tid(1))]
    result = _lexical(FOLLOW_UP, [c.text or "" for c in earlier])
    assert earlier_turn_units(result, earlier) == {1: tid(1)}


def test_the_session_id_is_read_from_any_span() -> None:
    spans = _turn(1, "s-7", "q", [TEAM], TEAM[1], T0)
    trace = to_rag_trace(spans)
    assert trace is not None and trace.session_id == "s-7"
    assert (t := to_rag_trace(rag_spans(1))) is not None and t.session_id is None


def test_turns_scored_in_one_batch_see_each_other() -> None:
    r = _rig()
    first = _turn(1, "s-1", "Team plan history?", [TEAM, ENTERPRISE], TEAM[1], T0)
    follow = _turn(2, "s-1", "And on Enterprise?", [SSO], FOLLOW_UP, T0 + 1)
    r.clock.now = T0 + 1
    r.pipeline.ingest([*first, *follow], T0 + 1)
    assert r.pipeline.process_due(T0 + 1) == 2
    by_trace = {s.context.trace_id: dict(s.attributes or {}) for s in r.spans()}
    assert by_trace[2][semconv.EVAL_GROUNDEDNESS] == 1.0
    assert by_trace[2][semconv.EVAL_EARLIER_TURNS] == (tid(1),)
    assert semconv.EVAL_EARLIER_TURNS not in by_trace[1]  # never a later turn's evidence
