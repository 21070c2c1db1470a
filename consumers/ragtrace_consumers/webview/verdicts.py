"""Every answer's verdict, where the cell alone would hide it: the overview's headline (every
answer judged not grounded, labelled or not; every unanswerable question answered) and the
trace page's note on an answer that is not grounded or was given to an unanswerable question.
"""

from __future__ import annotations

from ragtrace.evaluation.declines import decline
from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.webview.html import esc, href
from ragtrace_consumers.webview.queries import Overview, TraceFilter

__all__ = ["overview_verdicts", "verdict_note"]

_NOT_GROUNDED_BY_KIND = (
    ("labelled", ("generation_failed", "both_failed")),
    ("unlabelled", ("unlabelled_not_grounded",)),
    ("unanswerable", ("unanswerable_answered", "unanswerable_declined")),
)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def overview_verdicts(o: Overview) -> str:
    """The overview's verdict line: answers not grounded (linked to the list filtered on them,
    under the overview's filters) and how many were labelled, unlabelled or unanswerable;
    unanswerable questions answered."""
    parts = [
        f"{n} {kind}"
        for kind, cells in _NOT_GROUNDED_BY_KIND
        if (n := sum(o.not_grounded.get(c, 0) for c in cells))
    ]
    answered = o.counts.get("unanswerable_answered", 0)
    window = {} if o.window is None else {"since": o.window[0], "until": o.window[1]}
    scope = TraceFilter(service=o.filter.service, model=o.filter.model)
    not_grounded = scope.query(grounded="no", **window)
    unanswerable = scope.query(cell="unanswerable_answered", **window)
    return (
        "<p class=verdicts>"
        f'<a class=bad href="{href("/ui/traces", not_grounded)}">'
        f"{_count(o.not_grounded_total, 'answer')} not grounded</a>"
        + (f" ({esc(', '.join(parts))})" if parts else "")
        + f' · <a href="{href("/ui/traces", unanswerable)}">'
        f"{_count(answered, 'unanswerable question')} answered</a> (the bot should have "
        "declined)</p>"
    )


def verdict_note(r: ScoredResult) -> str:
    """The trace page's line on what the answer did, or "" when the scores say it all."""
    if r.cell in ("unanswerable_answered", "unanswerable_declined"):
        why = str(r.extra.get("decline_reason") or decline(r.answer).reason)
        if r.cell == "unanswerable_answered":
            return (
                "<p class=bad role=status>Unanswerable question (labelled with an empty gold "
                f"set), and the bot answered — it should have declined: {esc(why)}.</p>"
            )
        return (
            "<p class=muted>Unanswerable question (labelled with an empty gold set): the bot "
            f"declined, as it should — {esc(why)}.</p>"
        )
    if r.grounded is False:
        unlabelled = r.cell == "unlabelled_not_grounded"
        return (
            "<p class=bad role=status>Not grounded: the judge scored the answer below the "
            "groundedness threshold"
            + ("; no labelled question matched, so retrieval was not checked" if unlabelled else "")
            + ".</p>"
        )
    return ""
