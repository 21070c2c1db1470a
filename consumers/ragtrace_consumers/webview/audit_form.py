"""The trace page's audit of the judge: agree / disagree on each unit verdict.

Each scored unit (not a claimless one) gets a small form posting to ``/ui/audit`` with the
trace ID, the unit's ID and the answer; the server reads the unit's text and the judge's verdict
from the stored result, never from the form. The auditor's earlier answer on the unit is shown
beside the buttons and is replaced by a new one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace.evaluation.agreement import Agreement
from ragtrace_consumers.stores.audit_labels import AuditLabel
from ragtrace_consumers.webview.html import esc

__all__ = [
    "audit_buttons",
    "audit_state",
    "judged_unit",
    "render_agreement",
    "render_audit_link",
    "render_pending",
]


def judged_unit(
    detail: Mapping[str, Any] | None, uid: str
) -> tuple[Mapping[str, Any] | None, Mapping[str, Any]]:
    """(the unit ``uid`` of the stored judgement, None when it has none or it is claimless;
    the judgement's judge: name, model, prompt_sha256)."""
    g = detail.get("groundedness") if detail is not None else None
    if not isinstance(g, Mapping) or g.get("error"):
        return None, {}
    judge = g.get("judge")
    judge = judge if isinstance(judge, Mapping) else {}
    units = g.get("units")
    for unit in units if isinstance(units, list) else []:
        if isinstance(unit, Mapping) and str(unit.get("id")) == uid:
            return (None if unit.get("claimless") else unit), judge
    return None, judge


def audit_buttons(trace_id: str, unit: str, csrf: str, earlier: AuditLabel | None) -> str:
    """The agree / disagree form of one unit verdict (module doc)."""
    said = ""
    if earlier is not None:
        said = (
            f"<span class='audited {'agree' if earlier.agrees else 'disagree'}'>audited: "
            f"{'agree' if earlier.agrees else 'disagree'}</span> "
        )
    return (
        f'<form method=post action="/ui/audit" class=audit-form>{said}'
        f'<input type=hidden name=csrf value="{esc(csrf)}">'
        f'<input type=hidden name=trace_id value="{esc(trace_id)}">'
        f'<input type=hidden name=unit value="{esc(unit)}">'
        f"<button type=submit name=answer value=agree title=\"the judge's verdict on this unit "
        'is right">Agree</button>'
        f"<button type=submit name=answer value=disagree title=\"the judge's verdict on this "
        'unit is wrong">Disagree</button></form>'
    )


def audit_state(marked: bool, audited: int, units: int) -> str:
    """The trace page's line on its audit: marked to audit or not, and units audited so far."""
    if not units:
        return ""
    why = (
        "<strong>To audit</strong>: this trace is in the share of judged traces re-checked "
        "by a person. "
        if marked
        else ""
    )
    return (
        f"<p class=audit-state>{why}Agree or disagree with each unit verdict of the judge "
        f"({audited} of {units} unit{'' if units == 1 else 's'} audited); the answers are the "
        "audit's labels, counted in the judge's running agreement.</p>"
    )


def render_audit_link(pending: int) -> str:
    """The overview's line linking to the traces waiting for their audit."""
    return (
        f'<p class=audit-link><a href="/ui/audit">{pending} judged trace'
        f"{'' if pending == 1 else 's'} to audit</a> (the share re-checked by a person)</p>"
    )


def render_pending(trace_ids: Sequence[str], share: float) -> str:
    """The audit page: the judged traces marked to audit and not audited yet."""
    intro = (
        f"<p>{share:.1%} of judged traces (chosen from the trace ID, the same on every replica) "
        "are re-checked: open each and agree or disagree with every unit verdict.</p>"
    )
    if not trace_ids:
        return intro + "<p class=muted>Nothing waits for its audit.</p>"
    items = "".join(
        f'<li><a href="/ui/traces/{esc(t)}"><code>{esc(t)}</code></a></li>' for t in trace_ids
    )
    return intro + f"<ul class=pending-audit>{items}</ul>"


def _kappa(a: Agreement) -> str:
    if math.isnan(a.kappa):
        return f"n/a (n = {a.n})"
    return f"{a.kappa:.2f} [{a.low:.2f}, {a.high:.2f}] (n = {a.n})"


def render_agreement(audit: Agreement | None, calibration: Agreement | None) -> str:
    """The overview's panel: the running kappa between the judge in use and the audit labels,
    with its n and 95 % interval, beside the last calibration's (None: judge or stamp unknown)."""
    if audit is None:
        return ""
    c = audit.confusion
    rows = (
        f"<tr><td>audit (running)</td><td class='num audit-kappa'>{esc(_kappa(audit))}</td>"
        f"<td class=num>{c.both_entailed + c.neither} agree · {c.judge_only} judge supported, "
        f"auditor not · {c.human_only} auditor supported, judge not</td></tr>"
    )
    if calibration is not None:
        rows += (
            f"<tr><td>last calibration</td><td class=num>{esc(_kappa(calibration))}</td>"
            "<td class=muted>ragtrace calibrate's stamp of this judge and prompt</td></tr>"
        )
    else:
        rows += (
            "<tr><td>last calibration</td><td class=muted>none of this judge and prompt</td>"
            "<td></td></tr>"
        )
    return (
        "<section class=agreement><h2>Audit of the judge</h2>"
        "<p class=muted>Cohen's kappa between the judge's unit verdicts and the audit's, with a "
        "95 % interval (large-sample standard error; docs/statistics.md).</p>"
        "<table><thead><tr><th></th><th>kappa [95 % interval] (n units)</th><th>counts</th>"
        f"</tr></thead><tbody>{rows}</tbody></table></section>"
    )
