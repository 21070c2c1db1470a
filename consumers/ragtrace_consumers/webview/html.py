"""HTML building blocks of the web view: escaping, the page frame, links and tables.

Pages are built from escaped text only: every value from a trace goes through :func:`esc`
(``html.escape`` with quotes), so an answer or chunk text can never become markup. No
JavaScript is needed to read any page; the one stylesheet is shipped in the package.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from urllib.parse import urlencode

__all__ = ["CELL_TITLES", "cell_badge", "esc", "href", "page", "score", "when"]

CELL_TITLES = {
    "both_failed": "both failed",
    "generation_failed": "generation failed",
    "retrieval_failed": "retrieval failed",
    "unjudged": "unjudged",
    "unlabelled": "unlabelled",
    "unlabelled_not_grounded": "unlabelled · not grounded",
    "unanswerable_answered": "unanswerable · answered",
    "unanswerable_declined": "unanswerable · declined",
    "fine": "fine",
}


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def href(path: str, params: Mapping[str, str] | None = None) -> str:
    """An escaped URL for an attribute."""
    return esc(path + ("?" + urlencode(dict(params)) if params else ""))


def score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def when(epoch: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + " UTC"


def cell_badge(cell: str) -> str:
    return f'<span class="cell cell-{esc(cell)}">{esc(CELL_TITLES.get(cell, cell))}</span>'


_NAV = (
    ("/ui/", "Overview"),
    ("/ui/traces", "Traces"),
    ("/ui/questions", "Label questions"),
    ("/ui/audit", "Audit"),
)


def page(title: str, body: str, *, active: str = "", status_line: Iterable[str] = ()) -> bytes:
    """A whole HTML document around ``body`` (already escaped markup)."""
    nav = "".join(
        f'<a href="{p}"{" class=active" if p == active else ""}>{esc(t)}</a>' for p, t in _NAV
    )
    extra = "".join(f"<span>{esc(s)}</span>" for s in status_line)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · ragtrace</title>"
        '<link rel=stylesheet href="/ui/static/ragtrace.css"></head><body>'
        f'<header><a class=brand href="/ui/">ragtrace</a><nav>{nav}</nav>'
        f"<div class=status>{extra}</div></header><main><h1>{esc(title)}</h1>{body}</main>"
        "</body></html>"
    ).encode()
