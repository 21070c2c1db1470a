"""The overview, the trace list, the questions to label, the login form and error pages."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.webview.charts import line_chart, share_chart
from ragtrace_consumers.webview.html import CELL_TITLES, cell_badge, esc, href, score, when
from ragtrace_consumers.webview.queries import CELLS, Overview, TraceFilter, TracePage

__all__ = [
    "render_error",
    "render_list",
    "render_login",
    "render_overview",
    "render_questions",
]


def _label(start: float, size: float) -> str:
    fmt = "%m-%d %H:%M" if size < 86400 else "%Y-%m-%d"
    return time.strftime(fmt, time.gmtime(start))


def render_overview(o: Overview, judge: str, calibration: str | None) -> str:
    total = sum(o.counts.values())
    cards = "".join(
        f'<a class="card cell-{esc(c)}" href="{href("/ui/traces", {"cell": c})}">'
        f"<span class=count>{o.counts.get(c, 0)}</span>"
        f"<span>{esc(CELL_TITLES[c])}</span>"
        f"<span class=muted>{(o.counts.get(c, 0) / total if total else 0):.0%}</span></a>"
        for c in CELLS
    )
    labels = [_label(b.start, o.bucket_s) for b in o.buckets]
    if o.buckets:
        charts = (
            "<div class=cols><section><h2>Share of each cell over time</h2>"
            + share_chart([b.cells for b in o.buckets], CELLS, "share of each cell", labels)
            + "<p class=legend>"
            + "".join(cell_badge(c) for c in CELLS)
            + f"</p><p class=muted>{esc(labels[0])} to {esc(labels[-1])}, "
            f"{o.bucket_s / 60:g}-minute buckets (UTC)</p></section>"
            "<section><h2>Groundedness over time</h2>"
            + line_chart([b.groundedness for b in o.buckets], "mean groundedness", labels)
            + "<h2>Recall over time</h2>"
            + line_chart([b.recall for b in o.buckets], "mean recall", labels)
            + "</section></div>"
        )
    else:
        charts = "<p class=muted>No trace has been scored yet.</p>"
    reasons = (
        "<table><thead><tr><th>why</th><th>reason</th><th>traces</th></tr></thead><tbody>"
        + "".join(
            f"<tr><td>{esc(kind)}</td><td>{esc(reason)}</td><td class=num>{n}</td></tr>"
            for kind, reason, n in o.reasons
        )
        + "</tbody></table>"
        if o.reasons
        else "<p class=muted>No skipped or unjudged traces.</p>"
    )
    skipped = (
        "<table><thead><tr><th>trace</th><th>service</th><th>reason</th><th>why</th>"
        "<th>when</th></tr></thead><tbody>"
        + "".join(
            f"<tr><td><code>{esc(e.trace_id)}</code></td><td>{esc(e.service)}</td>"
            f"<td>{esc(e.reason)}</td><td>{esc(e.detail)}</td><td>{esc(when(e.at))}</td></tr>"
            for e in o.skipped
        )
        + "</tbody></table>"
        if o.skipped
        else "<p class=muted>Every trace seen was scored.</p>"
    )
    judges = "".join(
        f"<li><code>{esc(name)}</code>{' · ' + esc(model) if model else ''} — {n} of the "
        "last 1000 judged traces</li>"
        for name, model, n in o.judges
    )
    return (
        f"<p class=muted>{total} scored traces</p><div class=cards>{cards}</div>{charts}"
        "<div class=cols><section><h2>Judge</h2>"
        f"<p>In use: <strong>{esc(judge)}</strong></p>"
        f"<p>Last calibration: {esc(calibration or 'none recorded')}</p>"
        f"<ul>{judges}</ul></section>"
        f"<section><h2>Not scored, unjudged and unlabelled, by reason</h2>{reasons}</section></div>"
        f"<section><h2>Latest traces seen and not scored</h2>{skipped}</section>"
    )


def _select(name: str, current: str | None, options: Sequence[str], labels: dict[str, str]) -> str:
    opts = "<option value=''>any</option>" + "".join(
        f'<option value="{esc(o)}"{" selected" if o == current else ""}>'
        f"{esc(labels.get(o, o))}</option>"
        for o in options
    )
    return f"<label>{esc(name)} <select name={name}>{opts}</select></label>"


def _row(r: ScoredResult) -> str:
    recall = f"{score(r.recall)}@{r.k}" if r.k else "n/a"
    return (
        f"<tr><td>{cell_badge(r.cell)}</td>"
        f'<td><a href="/ui/traces/{esc(r.trace_id)}"><code>{esc(r.trace_id[:12])}</code></a></td>'
        f"<td class=q>{esc((r.query or '')[:140])}</td><td>{esc(r.service)}</td>"
        f"<td class=num>{esc(recall)}</td><td class=num>{esc(score(r.groundedness))}</td>"
        f"<td>{esc(r.judge_name or '')}</td><td>{esc(when(r.scored_at))}</td></tr>"
    )


def render_list(
    page: TracePage, f: TraceFilter, services: Sequence[str], judges: Sequence[str]
) -> str:
    since = "" if f.since is None else time.strftime("%Y-%m-%dT%H:%M", time.gmtime(f.since))
    until = "" if f.until is None else time.strftime("%Y-%m-%dT%H:%M", time.gmtime(f.until))
    form = (
        "<form method=get action=/ui/traces class=filters>"
        + _select("cell", f.cell, CELLS, CELL_TITLES)
        + _select("service", f.service, services, {})
        + _select("judge", f.judge, judges, {})
        + f'<label>since (UTC) <input name=since value="{esc(since)}" '
        'placeholder="2026-12-01T10:00"></label>'
        f'<label>until <input name=until value="{esc(until)}"></label>'
        "<button type=submit>Filter</button> <a href=/ui/traces>clear</a></form>"
    )
    rows = "".join(_row(r) for r in page.rows)
    table = (
        "<table class=traces><thead><tr><th>cell</th><th>trace</th><th>question</th>"
        "<th>service</th><th>recall</th><th>groundedness</th><th>judge</th><th>scored</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else "<p class=muted>No scored trace matches these filters.</p>"
    )
    nav = []
    if page.page > 1:
        nav.append(
            f'<a rel=prev href="{href("/ui/traces", f.query(page=page.page - 1))}">← newer '
            "worse</a>"
        )
    nav.append(f"<span>page {page.page}</span>")
    if page.more:
        nav.append(
            f'<a rel=next href="{href("/ui/traces", f.query(page=page.page + 1))}">next →</a>'
        )
    return (
        form + "<p class=muted>Worst first: both failed, generation failed, retrieval failed, "
        "unjudged, unlabelled, fine; then the lowest score.</p>"
        + table
        + f"<nav class=pages>{' '.join(nav)}</nav>"
    )


def render_questions(rows: Sequence[tuple[str, int, str]], labelled: int, version: str) -> str:
    items = "".join(
        f'<tr><td class=num>{n}</td><td class=q>{esc(q)}</td><td><a href="/ui/traces/'
        f'{esc(t)}#label">label from the latest trace</a></td></tr>'
        for q, n, t in rows
    )
    table = (
        "<table><thead><tr><th>seen</th><th>question</th><th></th></tr></thead>"
        f"<tbody>{items}</tbody></table>"
        if items
        else "<p class=muted>Every question seen so far has a label.</p>"
    )
    return (
        f"<p>{labelled} labelled questions in use (version <code>{esc(version or 'none')}"
        "</code>). Questions seen most often without a label:</p>" + table
    )


def render_login(message: str | None, csrf_free: bool = True) -> str:
    note = f"<p class=bad role=alert>{esc(message)}</p>" if message else ""
    return (
        f"{note}<form method=post action=/ui/login class=login>"
        "<label>Access token <input type=password name=token autocomplete=current-password "
        "required autofocus></label><button type=submit>Sign in</button></form>"
        "<p class=muted>The token the evaluator was started with (serve.token, RAGTRACE_SERVE_TOKEN).</p>"
    )


def render_error(message: str) -> str:
    return (
        f'<p class=bad role=alert>{esc(message)}</p><p><a href="/ui/">Back to the overview</a></p>'
    )
