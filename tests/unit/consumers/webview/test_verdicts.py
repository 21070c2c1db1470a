"""Every answer's verdict in the web view: the overview's headline counts every answer not
grounded, labelled or not; the list filters on it; the trace page says what the answer did."""

from __future__ import annotations

from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview.pages import render_list, render_overview
from ragtrace_consumers.webview.queries import OverviewFilter, TraceFilter, list_traces, overview
from ragtrace_consumers.webview.trace_page import TraceView, render_trace
from ragtrace_consumers.webview.verdicts import overview_verdicts, verdict_note
from tests.unit.consumers.webview.rows import HOSTILE, result

_NO_LABEL = {"recall": None, "k": None}


def _state() -> SqliteState:
    state = SqliteState(":memory:")
    state.results.put(result(1, "fine", grounded=True))
    state.results.put(result(2, "generation_failed", groundedness=0.5, grounded=False))
    state.results.put(
        result(3, "unlabelled_not_grounded", groundedness=0.5, grounded=False, **_NO_LABEL)
    )
    state.results.put(result(4, "unlabelled", grounded=True, **_NO_LABEL))
    state.results.put(result(5, "unanswerable_answered", recall=None, grounded=True))
    return state


def test_the_overview_headline_counts_every_answer_not_grounded() -> None:
    o = overview(_state())
    headline = overview_verdicts(o)
    assert '<a class=bad href="/ui/traces?grounded=no">2 answers not grounded</a>' in headline
    assert "(1 labelled, 1 unlabelled)" in headline
    assert (
        '<a href="/ui/traces?cell=unanswerable_answered">1 unanswerable question answered</a>'
        in headline
    )
    page = render_overview(o, "lexical", None)
    assert headline in page
    # Under the overview's filters, and linked to the list under the same ones.
    one_service = overview_verdicts(overview(_state(), OverviewFilter(service="svc-b")))
    assert (
        '<a class=bad href="/ui/traces?service=svc-b&amp;grounded=no">1 answer not grounded</a>'
        " (1 labelled)"
    ) in one_service
    for cell, title in (
        ("unlabelled_not_grounded", "unlabelled · not grounded"),
        ("unanswerable_answered", "unanswerable · answered"),
        ("unanswerable_declined", "unanswerable · declined"),
    ):
        assert f'class="card cell-{cell}" href="/ui/traces?cell={cell}"' in page
        assert f"<span>{title}</span>" in page


def test_the_list_offers_the_grounded_filter_and_states_the_order() -> None:
    state = _state()
    f = TraceFilter(grounded="no")
    page = render_list(list_traces(state, f), f, ["svc-a"], ["lexical"])
    assert "<select name=grounded><option value=''>any</option><option value=\"yes\">yes" in page
    assert '<option value="no" selected>no</option>' in page
    assert page.count("<tr><td><span class=") == 2
    assert (
        "Worst first: both failed, generation failed, unlabelled · not grounded, unanswerable · "
        "answered, retrieval failed, unjudged, unlabelled, unanswerable · declined, fine;"
    ) in page


def test_the_trace_page_says_what_the_answer_did() -> None:
    answered = result(
        1,
        "unanswerable_answered",
        recall=None,
        answer="Dark mode is under Profile.",
        extra={"decline_reason": f'the answer makes a claim: "{HOSTILE}"'},
    )
    note = verdict_note(answered)
    assert note.startswith("<p class=bad role=status>Unanswerable question")
    _, body = render_trace(TraceView(answered, None, None, None, "csrf"))
    assert note in body and body.index("</blockquote>") < body.index(note)
    assert "it should have declined" in note and "<script>" not in note
    # A row migrated from before the verdict was kept: the rule runs on the recorded answer.
    declined = result(2, "unanswerable_declined", recall=None, answer="I don't know.")
    assert "the bot declined, as it should — the answer declines: &quot;I don&#x27;t know." in (
        verdict_note(declined)
    )
    ungrounded = result(3, "unlabelled_not_grounded", grounded=False, **_NO_LABEL)
    assert "no labelled question matched" in verdict_note(ungrounded)
    labelled = result(4, "generation_failed", grounded=False)
    assert verdict_note(labelled) == (
        "<p class=bad role=status>Not grounded: the judge scored the answer below the "
        "groundedness threshold.</p>"
    )
    assert verdict_note(result(5, "fine", grounded=True)) == ""
