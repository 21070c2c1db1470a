"""Small SVG charts drawn on the server (no JavaScript, no network): stacked shares and lines.

Each function returns an ``<svg>`` element sized by its ``viewBox`` (it scales with the page),
with a ``<title>`` per point so hovering still tells the value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragtrace_consumers.webview.html import esc

__all__ = ["line_chart", "share_chart"]

_W, _H, _PAD = 600.0, 140.0, 24.0


def _x(i: int, n: int) -> float:
    return _PAD + (_W - 2 * _PAD) * (i / max(1, n - 1) if n > 1 else 0.5)


def _y(v: float) -> float:
    return _H - _PAD - (_H - 2 * _PAD) * max(0.0, min(1.0, v))


def _frame(label: str, inner: str) -> str:
    axis = (
        f'<line x1="{_PAD}" y1="{_y(0)}" x2="{_W - _PAD}" y2="{_y(0)}" class=axis />'
        f'<line x1="{_PAD}" y1="{_y(1)}" x2="{_W - _PAD}" y2="{_y(1)}" class=grid />'
        f'<text x="2" y="{_y(1) + 4}" class=tick>1</text><text x="2" y="{_y(0) + 4}" '
        f"class=tick>0</text>"
    )
    return (
        f'<svg class=chart viewBox="0 0 {_W:g} {_H:g}" role=img aria-label="{esc(label)}">'
        f"<title>{esc(label)}</title>{axis}{inner}</svg>"
    )


def share_chart(
    buckets: Sequence[Mapping[str, int]], order: Sequence[str], label: str, labels: Sequence[str]
) -> str:
    """Each bucket's share of every cell in ``order``, stacked (an empty bucket draws nothing)."""
    n = len(buckets)
    width = (_W - 2 * _PAD) / max(1, n)
    bars: list[str] = []
    for i, cells in enumerate(buckets):
        total = sum(cells.values())
        if not total:
            continue
        top = 0.0
        x = _PAD + i * width
        for cell in order:
            count = cells.get(cell, 0)
            if not count:
                continue
            share = count / total
            y = _y(top + share)
            h = _y(top) - y
            bars.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(1.0, width - 1):.1f}" '
                f'height="{h:.1f}" class="fill-{esc(cell)}"><title>{esc(labels[i])} '
                f"{esc(cell)}: {count} of {total} ({share:.0%})</title></rect>"
            )
            top += share
    return _frame(label, "".join(bars))


def line_chart(values: Sequence[float | None], label: str, labels: Sequence[str]) -> str:
    """One line over the buckets; a bucket without a value breaks it."""
    n = len(values)
    parts: list[str] = []
    run: list[str] = []
    for i, v in enumerate(values):
        if v is None:
            if len(run) > 1:
                parts.append(f'<polyline points="{" ".join(run)}" class=line />')
            run = []
            continue
        run.append(f"{_x(i, n):.1f},{_y(v):.1f}")
        parts.append(
            f'<circle cx="{_x(i, n):.1f}" cy="{_y(v):.1f}" r="2.5" class=dot>'
            f"<title>{esc(labels[i])}: {v:.2f}</title></circle>"
        )
    if len(run) > 1:
        parts.append(f'<polyline points="{" ".join(run)}" class=line />')
    return _frame(label, "".join(parts))
