"""The overview, the trace list, the questions to label, the login form and error pages."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

from ragtrace.evaluation.rates import Change, Rate, wilson
from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.webview.charts import line_chart, share_chart
from ragtrace_consumers.webview.html import CELL_TITLES, cell_badge, esc, href, score, when
from ragtrace_consumers.webview.queries import (
    CELLS,
    EXPORT_MAX,
    GROUNDED,
    RANGES,
    Overview,
    TraceFilter,
    TracePage,
)
from ragtrace_consumers.webview.verdicts import overview_verdicts
from ragtrace_consumers.webview.window_rates import WindowRates

__all__ = [
    "render_error",
    "render_list",
    "render_login",
    "render_overview",
    "render_questions",
]


_RANGE_TITLES = {"1h": "last 1 h", "24h": "last 24 h", "7d": "last 7 d", "custom": "custom from–to"}


def _label(start: float, size: float) -> str:
    fmt = "%m-%d %H:%M" if size < 86400 else "%Y-%m-%d"
    return time.strftime(fmt, time.gmtime(start))


def _span(seconds: float) -> str:
    """A period's length for people: whole days from 2 d, else hours from 1 h, else minutes."""
    if seconds >= 2 * 86400 and seconds % 86400 == 0:
        return f"{seconds / 86400:g} d"
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 60:.3g} min"


def _overview_filters(o: Overview, services: Sequence[str], models: Sequence[str]) -> str:
    f = o.filter
    shown = "custom" if f.since is not None else f.range
    since = "" if f.since is None else time.strftime("%Y-%m-%dT%H:%M", time.gmtime(f.since))
    until = "" if f.until is None else time.strftime("%Y-%m-%dT%H:%M", time.gmtime(f.until))
    return (
        "<form method=get action=/ui/ class=filters>"
        + _select("service", f.service, services, {})
        + _select("model", f.model, models, {})
        + _select("range", shown, (*RANGES, "custom"), _RANGE_TITLES, any_label="all time")
        + f'<label>from (UTC, custom) <input name=from value="{esc(since)}" '
        'placeholder="2026-12-01T10:00"></label>'
        f'<label>to <input name=to value="{esc(until)}" placeholder="now"></label>'
        "<button type=submit>Show</button> <a href=/ui/>clear</a></form>"
    )


def _change(now: float | None, before: float | None, points: bool) -> str:
    if now is None or before is None:
        return "<span class=muted>no previous value</span>"
    delta = (now - before) * (100 if points else 1)
    text = f"{delta:+.1f} pts (was {before:.0%})" if points else f"{delta:+.2f} (was {before:.2f})"
    return f"<span class=change>{esc(text.replace('-', '−'))}</span>"


def _headline_panel(o: Overview) -> str:
    h, p = o.headline, o.previous
    if h is None:
        return ""
    figures = (
        ("mean groundedness", h.groundedness, None if p is None else p.groundedness, False),
        ("mean recall", h.recall, None if p is None else p.recall, False),
        (
            "share not grounded",
            h.share_not_grounded,
            None if p is None else p.share_not_grounded,
            True,
        ),
    )
    if o.window is not None:
        start, end = o.window
        note = f"against the previous {_span(end - start)} (from {esc(when(2 * start - end))})"
    else:
        note = "over every trace; choose a time range to compare with the previous period"
    cells = "".join(
        f'<div class=figure data-figure="{esc(name)}"><span class=count>'
        + ("n/a" if value is None else f"{value:.0%}" if points else f"{value:.2f}")
        + f"</span><span>{esc(name)}</span>"
        + (_change(value, before, points) if p is not None else "")
        + "</div>"
        for name, value, before, points in figures
    )
    return (
        f"<section class=headline><div class=figures>{cells}</div>"
        f"<p class=muted>{h.judged} judged traces, {h.with_recall} with recall; not grounded: "
        f"groundedness below the threshold; change {note}.</p></section>"
    )


def _cells_panel(o: Overview) -> str:
    total = sum(o.counts.values())
    f = o.filter
    window = {} if o.window is None else {"since": o.window[0], "until": o.window[1]}
    target = TraceFilter(service=f.service, model=f.model)
    return (
        "<div class=cards>"
        + "".join(
            f'<a class="card cell-{esc(c)}" href="{href("/ui/traces", target.query(cell=c, **window))}">'
            f"<span class=count>{o.counts.get(c, 0)}</span>"
            f"<span>{esc(CELL_TITLES[c])}</span>"
            f"<span class=muted>{esc(_interval(wilson(o.counts.get(c, 0), total)))}</span></a>"
            for c in CELLS
        )
        + "</div>"
    )


def _interval(r: Rate) -> str:
    """``12.5% [9.1%–16.9%] n=200``."""
    if not r.n:
        return "n/a (n=0)"
    return f"{r.value:.1%} [{r.low:.1%}–{r.high:.1%}] n={r.n}"


def _noise(c: Change) -> str:
    if math.isnan(c.p_value):  # an empty or constant period
        return "<td class=num>n/a</td><td>undecided</td>"
    verdict = "<strong>beyond noise</strong>" if c.beyond_noise else "within noise"
    return f"<td class=num>{c.difference:+.1%}</td><td>{verdict} (p = {c.p_value:.3f})</td>"


def _rates_panel(w: WindowRates | None) -> str:
    """Each rate with its n and 95 % interval, and against the previous period when a time
    range is chosen."""
    if w is None:
        return ""
    changes = dict(w.changes)
    head = "<th>rate</th><th>value [95 % interval] n</th>"
    if changes:
        head += "<th>previous period</th><th>change</th><th>beyond noise?</th>"
    rows = ""
    for name, rate in w.rates:
        row = (
            f"<td>{esc(CELL_TITLES.get(name, name))}</td><td class=num>{esc(_interval(rate))}</td>"
        )
        if name in changes:
            c = changes[name]
            row += f"<td class=num>{esc(_interval(c.previous))}</td>{_noise(c)}"
        rows += f"<tr>{row}</tr>"
    note = (
        "a change is beyond noise when the two-proportion z-test gives p &lt; 0.05"
        if changes
        else "choose a time range to test each against the previous period"
    )
    return (
        "<section><h2>Rates with their uncertainty</h2>"
        f"<p class=muted>Wilson intervals; {note} (docs/statistics.md).</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _corrected_panel(w: WindowRates | None) -> str:
    """The not-grounded share, raw and corrected for the judge's measured error."""
    if w is None:
        return ""
    rate = w.not_grounded
    raw = f"<p>Raw (the judge's verdicts): <strong>{esc(_interval(rate.raw))}</strong>"
    title = "<section><h2>Not grounded, corrected for the judge's error</h2>"
    if rate.corrected is None:
        return (
            f"{title}{raw} — <strong>uncorrected</strong></p>"
            f"<p class=muted>{esc(rate.note or '')}</p></section>"
        )
    c = rate.corrected
    if not rate.raw.n:
        corrected = "n/a (nothing judged)"
    elif math.isnan(c.value):
        corrected = "n/a (the judge is no better than chance on its calibration)"
    else:
        corrected = f"{c.value:.1%} [{c.low:.1%}–{c.high:.1%}]"
    return (
        f"{title}{raw}</p><p>Corrected: <strong>{esc(corrected)}</strong> "
        "(95 %, Rogan–Gladen with the calibration's own uncertainty)</p>"
        f"<p class=muted>Judge sensitivity {esc(_interval(c.sensitivity))}, specificity "
        f"{esc(_interval(c.specificity))}, calibrated {esc(rate.calibrated_at or '')}.</p>"
        "</section>"
    )


def _charts_panel(o: Overview) -> str:
    labels = [_label(b.start, o.bucket_s) for b in o.buckets]
    if not o.buckets:
        return "<p class=muted>No trace has been scored yet.</p>"
    return (
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


def _reasons_panel(o: Overview) -> str:
    return (
        "<table><thead><tr><th>why</th><th>reason</th><th>traces</th></tr></thead><tbody>"
        + "".join(
            f"<tr><td>{esc(kind)}</td><td>{esc(reason)}</td><td class=num>{n}</td></tr>"
            for kind, reason, n in o.reasons
        )
        + "</tbody></table>"
        if o.reasons
        else "<p class=muted>No skipped or unjudged traces.</p>"
    )


def _skipped_panel(o: Overview) -> str:
    return (
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


def _judge_panel(o: Overview, judge: str, calibration: str | None, measured: str | None) -> str:
    judges = "".join(
        f"<li><code>{esc(name)}</code>{' · ' + esc(model) if model else ''} — {n} of the "
        "last 1000 judged traces</li>"
        for name, model, n in o.judges
    )
    return (
        "<section><h2>Judge</h2>"
        f"<p>In use: <strong>{esc(judge)}</strong></p>"
        f"<p>Last calibration: {esc(calibration or 'none recorded')}</p>"
        + (f"<p class=held-out>Measured against people {esc(measured)}.</p>" if measured else "")
        + f"<ul>{judges}</ul></section>"
    )


def render_overview(
    o: Overview,
    judge: str,
    calibration: str | None,
    *,
    services: Sequence[str] = (),
    models: Sequence[str] = (),
    rates: WindowRates | None = None,
    measured: str | None = None,
) -> str:
    """The overview page's body; ``measured``: the judge's held-out figures, when known for
    this version of it (:mod:`ragtrace.evaluation.judges.lexical.measured`)."""
    total = sum(o.counts.values())
    scope = (
        "" if o.window is None else f" from {esc(when(o.window[0]))} to {esc(when(o.window[1]))}"
    )
    return (
        _overview_filters(o, services, models)
        + f"<p class=muted>{total} scored traces{scope}</p>"
        + overview_verdicts(o)
        + _headline_panel(o)
        + _cells_panel(o)
        + f"<div class=cols>{_rates_panel(rates)}{_corrected_panel(rates)}</div>"
        + _charts_panel(o)
        + "<div class=cols>"
        + _judge_panel(o, judge, calibration, measured)
        + f"<section><h2>Not scored, unjudged and unlabelled, by reason</h2>{_reasons_panel(o)}"
        "</section></div>"
        f"<section><h2>Latest traces seen and not scored</h2>{_skipped_panel(o)}</section>"
    )


def _select(
    name: str,
    current: str | None,
    options: Sequence[str],
    labels: Mapping[str, str],
    *,
    any_label: str = "any",
) -> str:
    opts = f"<option value=''>{esc(any_label)}</option>" + "".join(
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
        f"<td class=model>{esc(r.model or '')}</td>"
        f"<td class=num>{esc(recall)}</td><td class=num>{esc(score(r.groundedness))}</td>"
        f"<td>{esc(r.judge_name or '')}</td><td>{esc(when(r.scored_at))}</td></tr>"
    )


def render_list(
    page: TracePage,
    f: TraceFilter,
    services: Sequence[str],
    judges: Sequence[str],
    models: Sequence[str] = (),
) -> str:
    since = "" if f.since is None else time.strftime("%Y-%m-%dT%H:%M", time.gmtime(f.since))
    until = "" if f.until is None else time.strftime("%Y-%m-%dT%H:%M", time.gmtime(f.until))
    form = (
        "<form method=get action=/ui/traces class=filters>"
        f'<label>search <input type=search name=q value="{esc(f.q or "")}" '
        'placeholder="question text or trace ID"></label>'
        + _select("cell", f.cell, CELLS, CELL_TITLES)
        + _select("grounded", f.grounded, tuple(GROUNDED), {})
        + _select("service", f.service, services, {})
        + _select("model", f.model, models, {})
        + _select("judge", f.judge, judges, {})
        + f'<label>since (UTC) <input name=since value="{esc(since)}" '
        'placeholder="2026-12-01T10:00"></label>'
        f'<label>until <input name=until value="{esc(until)}"></label>'
        "<button type=submit>Filter</button> <a href=/ui/traces>clear</a></form>"
    )
    rows = "".join(_row(r) for r in page.rows)
    table = (
        "<table class=traces><thead><tr><th>cell</th><th>trace</th><th>question</th>"
        "<th>service</th><th>model</th><th>recall</th><th>groundedness</th><th>judge</th><th>scored</th>"
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
    exports = (
        "<p class=exports>Download these traces (every page, the first "
        f"{EXPORT_MAX:,}): "
        f'<a download href="{href("/ui/traces.csv", f.query(page=None))}">CSV</a> · '
        f'<a download href="{href("/ui/traces.json", f.query(page=None))}">JSON</a></p>'
    )
    return (
        form
        + exports
        + "<p class=muted>Worst first: "
        + esc(", ".join(CELL_TITLES[c] for c in CELLS))
        + "; then the lowest score.</p>"
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
