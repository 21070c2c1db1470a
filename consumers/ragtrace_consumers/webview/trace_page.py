"""The trace page: why one answer landed in its cell.

Top to bottom: the question and its scores; the retrieved chunks in rank order with the gold
ones marked and the recall cut-off drawn after rank k (gold never retrieved listed below; with
several retrieval steps, each step's query and ranked IDs, its top k being what recall counts); the
answer, each unit coloured by its verdict with its claims, their evidence quotes and the check
that downgraded a claim the judge had accepted; the context passages with every quote
highlighted where it occurs; the judge's provenance; the IDs to find the trace in another
backend; and the form that labels the question from this trace
(:mod:`~ragtrace_consumers.webview.label_form`), with the question's label state in the header.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace_consumers.stores.audit_labels import AuditLabel
from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.webview.audit_form import audit_buttons, audit_state
from ragtrace_consumers.webview.highlight import find_quote, marked
from ragtrace_consumers.webview.html import cell_badge, esc, score, when
from ragtrace_consumers.webview.label_form import CurrentLabel, label_form, label_state
from ragtrace_consumers.webview.verdicts import verdict_note

__all__ = ["BACKEND_LINK_HINT", "TraceView", "closest_passage", "render_trace"]

BACKEND_LINK_HINT = (
    "Start serve with --trace-url TEMPLATE (the web.trace_url_template setting, "
    "$RAGTRACE_WEB_TRACE_URL_TEMPLATE) to link to your trace backend."
)
"""What a trace page says when it has no backend link: the flag first, for the CLI user."""


@dataclass(frozen=True)
class TraceView:
    """What the page is drawn from: the row, its detail (None: scored before details were
    kept), the gold IDs labelled now, the backend link, the form's CSRF token, the message of a
    save, and the question's label as the label store holds it now (None: not known)."""

    result: ScoredResult
    detail: Mapping[str, Any] | None
    gold_now: frozenset[str] | None
    backend_url: str | None
    csrf: str
    saved: str | None = None
    label: CurrentLabel | None = None
    audits: Mapping[str, AuditLabel] | None = None
    """The web auditor's answers by unit ID (None: the page offers no audit)."""
    to_audit: bool = False
    """Whether the trace is in the share marked to audit."""


def _dicts(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _chunks(detail: Mapping[str, Any] | None, key: str) -> list[Mapping[str, Any]]:
    return _dicts(detail.get(key)) if detail is not None else []


def _mapping(detail: Mapping[str, Any] | None, key: str) -> Mapping[str, Any] | None:
    value = detail.get(key) if detail is not None else None
    return value if isinstance(value, Mapping) else None


def _step_cutoffs(r: ScoredResult, steps: Sequence[Mapping[str, Any]]) -> list[int | None]:
    """Each step's recall cut-off: the stored ``step_k`` (one per step with documents, in
    order), else the result's k for every step (results stored before cut-offs were per step)."""
    stored = r.extra.get("step_k")
    ks = iter(stored if isinstance(stored, list) else ())
    return [next(ks, r.k) if step.get("ids") else r.k for step in steps]


def _steps(detail: Mapping[str, Any] | None, r: ScoredResult, gold: set[str]) -> str:
    """Several retrieval steps: each one's query and ranked IDs (its top k counted by recall)."""
    steps = _dicts(detail.get("steps") if detail is not None else None)
    if len(steps) < 2:
        return ""
    cutoffs = _step_cutoffs(r, steps)
    rows = []
    for i, (step, k) in enumerate(zip(steps, cutoffs, strict=True), 1):
        ids = [str(x) for x in step.get("ids") or ()]
        shown = ", ".join(
            f"<code{' class=gold' if x in gold else ''}>{esc(x)}</code>"
            + ("" if k is None or rank <= k else "<span class=muted>↓</span>")
            for rank, x in enumerate(ids, 1)
        )
        what = f"tool {step['tool']}" if step.get("tool") else "retriever"
        query = step.get("query")
        top = f" top {k}" if k is not None and len(set(cutoffs)) > 1 else ""
        rows.append(
            f"<li>step {i} <span class=muted>({esc(what)}{top})</span> "
            f"{esc(repr(query)) if query else '<em>no query</em>'}: {shown or '<em>none</em>'}</li>"
        )
    counts = (
        f"recall@{r.k} counts each step's top {r.k}"
        if len(set(cutoffs)) == 1
        else "recall counts each step's own top k (the k its span declares)"
    )
    return (
        f"<p class=muted>{len(steps)} retrieval steps: {counts} "
        f"(↓ marks a rank below it); the list above is their union in first-appearance "
        f"order.</p><ol class=steps>{''.join(rows)}</ol>"
    )


def _retrieval(r: ScoredResult, detail: Mapping[str, Any] | None, gold: set[str]) -> str:
    chunks = _chunks(detail, "retrieved") or [{"id": c} for c in r.retrieved]
    if not chunks:
        return "<p class=muted>No retrieved chunks were recorded for this trace.</p>"
    pooled = len(_dicts(detail.get("steps") if detail is not None else None)) > 1
    k = None if pooled else r.k
    items: list[str] = []
    for rank, chunk in enumerate(chunks, 1):
        cid = str(chunk.get("id", ""))
        is_gold = cid in gold
        css = "chunk gold" if is_gold else "chunk"
        if k is not None and rank > k:
            css += " below-cut"
        tag = "<span class=tag-gold>gold</span>" if is_gold else ""
        s = chunk.get("score")
        extra = f" <span class=muted>score {float(s):.3f}</span>" if isinstance(s, float) else ""
        text = chunk.get("text")
        body = f"<div class=chunk-text>{esc(text)}</div>" if text else ""
        items.append(
            f'<li class="{css}" data-chunk="{esc(cid)}"><span class=rank>#{rank}</span> '
            f"<code>{esc(cid)}</code> {tag}{extra}{body}</li>"
        )
        if k is not None and rank == k:
            items.append(
                f'<li class=cutoff aria-label="rank cut-off">cut-off: recall@{k} counts '
                f"ranks 1–{k} only</li>"
            )
    missing = sorted(gold - {str(c.get("id")) for c in chunks})
    note = ""
    if missing:
        note = (
            "<p class=missing>Gold never retrieved: "
            + ", ".join(f"<code>{esc(g)}</code>" for g in missing)
            + "</p>"
        )
    found_below = [
        rank
        for rank, c in enumerate(chunks, 1)
        if str(c.get("id")) in gold and k is not None and rank > k
    ]
    if found_below:
        note += (
            f"<p class=missing>Gold retrieved below the cut-off (k={k}) at rank "
            + ", ".join(str(x) for x in found_below)
            + ": not counted by recall.</p>"
        )
    return (
        f"<ol class=chunks>{''.join(items)}</ol>{note}{_steps(detail, r, gold) if pooled else ''}"
    )


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9/.-]+", text.lower()) if len(w) > 2}


def closest_passage(text: str, passages: Sequence[Mapping[str, Any]]) -> str | None:
    """The ID of the passage sharing the most words with ``text`` (None: none shares any): what
    an unsupported unit without a quote is most likely to be about, or to contradict."""
    mine = _words(text)
    best, best_n = None, 0
    for p in passages:
        n = len(mine & _words(str(p.get("text") or "")))
        if n > best_n:
            best, best_n = str(p.get("id")), n
    return best


def _verdict_class(unit: Mapping[str, Any]) -> str:
    if unit.get("claimless"):
        return "unit claimless"
    return "unit supported" if unit.get("supported") else "unit unsupported"


def _claim(claim: Mapping[str, Any], passages: Sequence[Mapping[str, Any]]) -> str:
    entailed = bool(claim.get("entailed"))
    verdict = "entailed" if entailed else "not supported"
    css = "claim ok" if entailed else "claim bad"
    out = f'<li class="{css}"><span class=verdict>{verdict}</span> {esc(claim.get("claim"))}'
    evidence = claim.get("evidence")
    if isinstance(evidence, str) and evidence.strip():
        where = next(
            (
                str(p.get("id"))
                for p in passages
                if isinstance(p.get("text"), str) and find_quote(str(p["text"]), evidence)
            ),
            None,
        )
        located = (
            f' — in <a href="#passage-{esc(where)}"><code>{esc(where)}</code></a>'
            if where
            else " — <em>not found in any passage</em>"
        )
        out += f"<blockquote class=quote>“{esc(evidence)}”{located}</blockquote>"
    if claim.get("downgraded"):
        out += (
            f"<div class=check>judge said entailed; downgraded by check "
            f"<code>{esc(claim.get('check') or 'evidence')}</code>: "
            f"{esc(claim.get('downgrade_reason'))}</div>"
        )
    elif claim.get("check"):
        out += f"<div class=check>check <code>{esc(claim.get('check'))}</code> failed</div>"
    return out + "</li>"


def _answer(
    r: ScoredResult,
    g: Mapping[str, Any] | None,
    passages: Sequence[Any],
    earlier: Mapping[str, Any] | None = None,
    audit: tuple[Mapping[str, AuditLabel], str] | None = None,
) -> str:
    if g is None:
        text = esc(r.answer) if r.answer else "<span class=muted>no answer recorded</span>"
        why = r.judge_error or r.extra.get("groundedness_na_reason") or "not judged"
        return f"<div class=answer>{text}</div><p class=muted>Unit verdicts: {esc(why)}</p>"
    units = _dicts(g.get("units"))
    claims = _dicts(g.get("claims"))
    if g.get("error"):
        return f"<div class=answer>{esc(r.answer)}</div><p class=bad>judge error: " + (
            f"{esc(g.get('error'))}</p>"
        )
    if not units:  # a result built from bare claims
        items = "".join(_claim(c, passages) for c in claims)
        return f"<div class=answer>{esc(r.answer)}</div><ul class=claims>{items}</ul>"
    out: list[str] = []
    for unit in units:
        uid = unit.get("id")
        mine = [c for c in claims if c.get("unit") == uid]
        label = (
            "claimless (not scored)"
            if unit.get("claimless")
            else "supported"
            if unit.get("supported")
            else "unsupported"
        )
        reason = f" — {esc(unit.get('reason'))}" if unit.get("reason") else ""
        turn = (earlier or {}).get(str(uid))
        if isinstance(turn, str) and unit.get("supported"):
            label = "supported by an earlier turn"
            reason += (
                f' — the evidence was retrieved by <a href="/ui/traces/{esc(turn)}">'
                f"<code>{esc(turn[:12])}</code></a>, an earlier turn of this session"
            )
        claims_html = (
            f"<ul class=claims>{''.join(_claim(c, passages) for c in mine)}</ul>" if mine else ""
        )
        quoted = any(isinstance(c.get("evidence"), str) and c["evidence"].strip() for c in mine)
        if not unit.get("supported") and not unit.get("claimless") and not quoted:
            near = closest_passage(str(unit.get("text") or ""), passages)
            if near is not None:
                claims_html += (
                    f'<div class=near>No passage supports it; the closest is <a href="#passage-'
                    f'{esc(near)}"><code>{esc(near)}</code></a> — compare them.</div>'
                )
        buttons = (
            audit_buttons(r.trace_id, str(uid), audit[1], audit[0].get(str(uid)))
            if audit is not None and not unit.get("claimless")
            else ""
        )
        out.append(
            f'<div class="{_verdict_class(unit)}" id="unit-{esc(uid)}"><div class=unit-head>'
            f"<span class=verdict>unit {esc(uid)}: {label}</span>{reason}{buttons}</div>"
            f"<div class=unit-text>{esc(unit.get('text'))}</div>{claims_html}</div>"
        )
    stray = [c for c in claims if c.get("unit") is None]
    if stray:
        out.append(f"<ul class=claims>{''.join(_claim(c, passages) for c in stray)}</ul>")
    return "".join(out)


def _passages(passages: Sequence[Mapping[str, Any]], g: Mapping[str, Any] | None) -> str:
    if not passages:
        return "<p class=muted>No context passages were recorded.</p>"
    quotes: list[tuple[str, str]] = []
    for c in _dicts(g.get("claims")) if g is not None else []:
        ev = c.get("evidence")
        if isinstance(ev, str) and ev.strip():
            quotes.append((ev, "ev-ok" if c.get("entailed") else "ev-bad"))
    flagged = set(g.get("injection_suspected") or []) if g is not None else set()
    items = []
    for i, p in enumerate(passages, 1):
        text = str(p.get("text") or "")
        warn = " <span class=bad>injection suspected</span>" if i in flagged else ""
        turn = p.get("turn")
        if isinstance(turn, str) and turn:
            warn += (
                f' <span class=tag-turn>from an earlier turn: <a href="/ui/traces/{esc(turn)}">'
                f"<code>{esc(turn[:12])}</code></a></span>"
            )
        items.append(
            f'<li id="passage-{esc(p.get("id"))}" class=passage><code>{esc(p.get("id"))}</code>'
            f"{warn}<div class=chunk-text>{marked(text, quotes)}</div></li>"
        )
    return f"<ol class=passages>{''.join(items)}</ol>"


def _provenance(r: ScoredResult, g: Mapping[str, Any] | None) -> str:
    judge = g.get("judge") if g is not None and isinstance(g.get("judge"), Mapping) else {}
    assert isinstance(judge, Mapping)
    rows = [
        ("judge", judge.get("name") or r.judge_name),
        ("model (configured)", judge.get("model") or r.judge_model),
        ("model (served)", g.get("served_model") if g else None),
        ("provider", judge.get("provider")),
        ("prompt sha256", judge.get("prompt_sha256")),
        ("cost", f"${float(r.extra.get('judge_cost_usd') or 0):.6f}"),  # type: ignore[arg-type]
        ("latency", f"{float(g.get('latency_s') or 0):.3f} s" if g else None),
        ("labels version", r.extra.get("labels_version")),
        ("recall definition", r.extra.get("recall_definition")),
        ("recall cut-off", _cutoff_origin(r)),
    ]
    usage = g.get("usage") if g is not None else None
    if isinstance(usage, Mapping) and any(usage.values()):
        rows.append(("tokens", ", ".join(f"{k} {v}" for k, v in usage.items() if v)))
    return _dl(rows)


def _cutoff_origin(r: ScoredResult) -> str | None:
    """Where the trace's k came from: its retrieval span's declared top-k, or ``scoring.k``."""
    origin = r.extra.get("k_from")
    if r.k is None or origin is None:
        return None
    if origin == "trace":
        return f"k={r.k}, the top-k the retrieval span declares"
    return f"k={r.k}, the configured scoring.k (the trace declares none, or it is pinned)"


def _dl(rows: Sequence[tuple[str, object]]) -> str:
    return (
        "<dl class=facts>"
        + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows if v not in (None, ""))
        + "</dl>"
    )


def _audit_line(view: TraceView, g: Mapping[str, Any] | None) -> str:
    if view.audits is None or g is None or g.get("error"):
        return ""
    units = [u for u in _dicts(g.get("units")) if not u.get("claimless")]
    return audit_state(view.to_audit, len(view.audits), len(units))


def render_trace(view: TraceView) -> tuple[str, str]:
    """(title, body markup) of the trace page."""
    r, detail = view.result, view.detail
    stored_gold = detail.get("gold") if detail is not None else None
    gold = set(stored_gold) if isinstance(stored_gold, list) else set(view.gold_now or ())
    g_raw = detail.get("groundedness") if detail is not None else None
    g = g_raw if isinstance(g_raw, Mapping) else None
    passages = _chunks(detail, "context") or _chunks(detail, "retrieved")
    retrieved = _chunks(detail, "retrieved") or [{"id": c} for c in r.retrieved]
    recall = f"recall@{r.k} {score(r.recall)}" if r.k else "recall n/a"
    head = (
        f"<section class=summary>{cell_badge(r.cell)}"
        f"<span class=metric>{esc(recall)}</span>"
        f"<span class=metric>groundedness {esc(score(r.groundedness))}</span>"
        f"<span class=muted>service {esc(r.service)} · scored {esc(when(r.scored_at))}"
        f"{' · question ' + esc(r.question_id) if r.question_id else ''}</span>"
        f"{label_state(view.label) if view.label is not None else ''}</section>"
        f"<blockquote class=question>{esc(r.query) or '<em>no question recorded</em>'}"
        "</blockquote>"
    ) + verdict_note(r)
    if detail is None:
        head += (
            "<p class=muted>This trace was scored before the evaluator kept per-trace "
            "details: chunk texts, units and quotes are not available.</p>"
        )
    na = [
        f"{what}: {r.extra[key]}"
        for key, what in (
            ("recall_na_reason", "recall n/a"),
            ("groundedness_na_reason", "unjudged"),
        )
        if r.extra.get(key)
    ]
    if na:
        head += "".join(f"<p class=muted>{esc(x)}</p>" for x in na)
    session = detail.get("session_id") if detail is not None else None
    if isinstance(session, str) and session:
        head += (
            f"<p class=muted>turn of session <code>{esc(session)}</code>: judged against its own "
            "context and its session's earlier turns' evidence</p>"
        )
    spans = detail.get("span_ids") if detail is not None else None
    span_rows: list[tuple[str, object]] = [("trace ID", r.trace_id)]
    if isinstance(spans, Mapping):
        span_rows += [(f"{k} span ID", v) for k, v in spans.items() if v]
    link = (
        f'<p><a class=backend href="{esc(view.backend_url)}" rel="noopener noreferrer">'
        "Open this trace in your trace backend</a></p>"
        if view.backend_url
        else f"<p class=muted>{esc(BACKEND_LINK_HINT)}</p>"
    )
    body = (
        head
        + "<div class=cols><section><h2>Retrieved chunks</h2>"
        + _retrieval(r, detail, gold)
        + "</section><section><h2>Answer, unit by unit</h2>"
        + _audit_line(view, g)
        + _answer(
            r,
            g,
            passages,
            _mapping(detail, "earlier_turn_units"),
            (view.audits, view.csrf) if view.audits is not None else None,
        )
        + "</section></div>"
        + "<section><h2>Context passages (evidence highlighted)</h2>"
        + _passages(passages, g)
        + "</section><div class=cols><section><h2>Judge</h2>"
        + _provenance(r, g)
        + "</section><section><h2>Find it elsewhere</h2>"
        + _dl(span_rows)
        + link
        + "</section></div><section id=label><h2>Label this question</h2>"
        + (f"<p class=saved role=status>{esc(view.saved)}</p>" if view.saved else "")
        + label_form(
            r.trace_id,
            r.query,
            r.question_id,
            retrieved,
            view.label or CurrentLabel(None),
            view.csrf,
        )
        + "</section>"
    )
    return f"Trace {r.trace_id[:8]}…", body
