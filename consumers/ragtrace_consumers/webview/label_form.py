"""The trace page's label form and the label state in its header.

The form starts from the question's label as the label store holds it now: its gold chunks
ticked — those this trace retrieved in rank order, then those it did not retrieve, so that saving
never drops them unseen — its question text and qid, and whether it is unanswerable (an empty
gold set). It names the version it replaces (:func:`~ragtrace_consumers.model.question_version`,
``""`` for no label) in a hidden field: the save is refused when the label changed since the page
was drawn (:class:`~ragtrace_consumers.errors.LabelConflict`), never written over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.model import question_version
from ragtrace_consumers.webview.html import esc, when

__all__ = ["CurrentLabel", "label_form", "label_state"]


@dataclass(frozen=True)
class CurrentLabel:
    """The label a trace's question has now (``question`` None: none), when it was saved from a
    trace (``labelled_at`` None: it comes from the labels file) and the set's version."""

    question: LabelledQuestion | None
    labelled_at: float | None = None
    set_version: str = ""

    @property
    def version(self) -> str:
        return question_version(self.question)


def label_state(label: CurrentLabel) -> str:
    """The header's badge: labelled (how many gold chunks), unanswerable, or unlabelled."""
    q = label.question
    if q is None:
        return "<span class=label-state>unlabelled</span>"
    if not q.gold:
        return (
            f"<span class='label-state labelled unanswerable'>labelled unanswerable "
            f"<code>{esc(q.qid)}</code> (empty gold set: recall n/a)</span>"
        )
    n = len(q.gold)
    return (
        f"<span class='label-state labelled'>labelled <code>{esc(q.qid)}</code> "
        f"({n} gold chunk{'' if n == 1 else 's'})</span>"
    )


def _box(cid: str, checked: bool) -> str:
    return (
        f'<label class=pick><input type=checkbox name=gold value="{esc(cid)}"'
        f"{' checked' if checked else ''}> <code>{esc(cid)}</code></label>"
    )


def _replaces(label: CurrentLabel) -> str:
    q = label.question
    if q is None:
        return "<p class=replaces>This question has no label yet: saving creates one.</p>"
    origin = (
        f"saved from a trace {esc(when(label.labelled_at))}"
        if label.labelled_at is not None
        else "from the labels file"
    )
    gold = (
        "unanswerable"
        if not q.gold
        else ", ".join(f"<code>{esc(g)}</code>" for g in sorted(q.gold))
    )
    return (
        f"<p class=replaces>Saving replaces label version <code>{esc(label.version)}</code> of "
        f"<code>{esc(q.qid)}</code> ({origin}; gold: {gold}).</p>"
    )


def label_form(
    trace_id: str,
    query: str | None,
    question_id: str | None,
    retrieved: Sequence[Mapping[str, Any]],
    label: CurrentLabel,
    csrf: str,
) -> str:
    """The form posting to ``/ui/labels`` for the trace ``trace_id`` (module doc)."""
    q = label.question
    gold = set(q.gold) if q is not None else set()
    ids = [str(c.get("id")) for c in retrieved if c.get("id")]
    boxes = "".join(_box(cid, cid in gold) for cid in ids)
    missing = sorted(gold - set(ids))
    kept = "".join(_box(cid, True) for cid in missing)
    unanswerable = q is not None and not q.gold
    return (
        f'<form method=post action="/ui/labels" class=label-form>'
        f'<input type=hidden name=csrf value="{esc(csrf)}">'
        f'<input type=hidden name=trace_id value="{esc(trace_id)}">'
        f'<input type=hidden name=label_qid value="{esc(q.qid if q else "")}">'
        f'<input type=hidden name=replaces value="{esc(label.version)}">'
        + _replaces(label)
        + "<label>Question<textarea name=question rows=2 required>"
        f"{esc(q.question if q else query)}</textarea></label>"
        f'<label>Question ID <input name=qid value="{esc(q.qid if q else question_id or "")}" '
        'placeholder="derived from the question when empty" maxlength=200></label>'
        "<fieldset><legend>Chunks that answer it</legend>"
        f"{boxes or '<em>none retrieved</em>'}"
        + (f"<div class=gold-kept>Gold this trace did not retrieve: {kept}</div>" if kept else "")
        + "</fieldset>"
        "<label>Other chunk IDs (pasted; comma, space or newline separated)"
        "<textarea name=extra_gold rows=2></textarea></label>"
        "<label class=pick><input type=checkbox name=unanswerable value=1"
        f"{' checked' if unanswerable else ''}> Unanswerable: the corpus holds no answer (saves "
        "an empty gold set, whatever is ticked; recall n/a, left out of the means)</label>"
        "<label class=pick><input type=checkbox name=rescore_others value=1> Also re-score the "
        "other recent traces asking this question</label>"
        "<button type=submit>Save labelled question</button></form>"
    )
