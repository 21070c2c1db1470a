"""The trace page of a session's follow-up turn: the unit supported only by an earlier turn's
evidence says so and links that turn; the passage carried over is tagged with its turn. A page
without a backend link names the flag that sets one."""

from __future__ import annotations

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.model import Chunk, RagTrace
from ragtrace_consumers.scoring.scores import combine
from ragtrace_consumers.webview.html import esc
from ragtrace_consumers.webview.trace_page import BACKEND_LINK_HINT, TraceView, render_trace
from ragtrace_consumers.writeback.recording_sink import to_scored_result, trace_detail

EARLIER = "a" * 32
ANSWER = "Audit log retention on the Enterprise plan is 90 days."
CONTEXT = (
    Chunk("c-sso", "Enterprise plans include single sign-on."),
    Chunk("c-ent", "Audit log retention on the Enterprise plan is 90 days, as CSV.", turn=EARLIER),
)


def _page(context: tuple[Chunk, ...], session: str | None) -> str:
    trace = RagTrace(
        trace_id="b" * 32,
        service="svc",
        target_span_id="c" * 16,
        query="And on Enterprise?",
        context=context,
        answer=ANSWER,
        session_id=session,
        has_generation=True,
    )
    result = LexicalJudge().groundedness(ANSWER, [c.text or "" for c in context])
    scores = combine(trace, None, result, Thresholds())
    assert scores is not None
    view = TraceView(
        to_scored_result(scores, 0.0, None), trace_detail(scores, None), None, None, "csrf"
    )
    return render_trace(view)[1]


def test_a_unit_supported_by_an_earlier_turn_says_which_turn() -> None:
    body = _page(CONTEXT, "s-1")
    assert "unit 1: supported by an earlier turn" in body
    assert f'retrieved by <a href="/ui/traces/{EARLIER}">' in body
    assert f'from an earlier turn: <a href="/ui/traces/{EARLIER}">' in body
    assert "turn of session <code>s-1</code>" in body


def test_a_unit_supported_by_its_own_turn_is_plainly_supported() -> None:
    own = (CONTEXT[0], Chunk("c-ent", CONTEXT[1].text))
    body = _page(own, None)
    assert "unit 1: supported</span>" in body
    assert "earlier turn" not in body and "turn of session" not in body


def test_a_page_without_a_backend_link_names_the_flag_that_sets_it() -> None:
    body = _page(CONTEXT, None)
    assert esc(BACKEND_LINK_HINT) in body
    assert "--trace-url TEMPLATE" in BACKEND_LINK_HINT
