"""Finding a judge's evidence quote inside a passage, and marking it up.

A quote counts as found where its words occur in order with any whitespace between them and
any case (the judge's checks compare the same way after normalising), so a quote that wraps a
line in the passage is still highlighted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtrace_consumers.webview.html import esc

__all__ = ["find_quote", "marked"]

_MAX_QUOTE_WORDS = 200


def _pattern(quote: str) -> re.Pattern[str] | None:
    words = quote.split()[:_MAX_QUOTE_WORDS]
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """(start, end) of the first place ``quote`` occurs in ``text``, or None."""
    pattern = _pattern(quote)
    if pattern is None:
        return None
    found = pattern.search(text)
    return (found.start(), found.end()) if found else None


def marked(text: str, quotes: Sequence[tuple[str, str]]) -> str:
    """``text`` escaped, with every found quote wrapped in ``<mark class=CLASS>`` (``quotes``:
    (quote, CSS class) pairs; overlapping marks are merged, the first class kept)."""
    spans: list[tuple[int, int, str]] = []
    for quote, css in quotes:
        where = find_quote(text, quote)
        if where is not None:
            spans.append((where[0], where[1], css))
    spans.sort()
    merged: list[tuple[int, int, str]] = []
    for start, end, css in spans:
        if merged and start <= merged[-1][1]:
            s, e, c = merged[-1]
            merged[-1] = (s, max(e, end), c)
        else:
            merged.append((start, end, css))
    out, at = [], 0
    for start, end, css in merged:
        out.append(esc(text[at:start]))
        out.append(f'<mark class="{esc(css)}">{esc(text[start:end])}</mark>')
        at = end
    out.append(esc(text[at:]))
    return "".join(out)
