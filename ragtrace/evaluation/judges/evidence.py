"""Verify a judge's evidence quotes against the context it was given.

A quote is *found* when, after normalising both sides the same way, it is a substring of one
single context document (a quote stitched from two documents is not verbatim). Normalisation,
exactly:

1. HTML entities are unescaped (the prompt escapes ``<`` in the data, so a quote may carry
   ``&lt;``), then Unicode NFKC (full-width forms, ligatures, no-break spaces, ``…`` → ``...``);
2. typographic variants are mapped to ASCII: single quotes/primes ``‘ ’ ‚ ‛ ′ ` ´`` → ``'``,
   double quotes ``“ ” „ ‟ ″ « »`` → ``"``, dashes and minus ``‐ ‑ ‒ – — ― −`` → ``-``;
3. soft hyphens and zero-width characters (U+00AD, U+200B–U+200D, U+2060, U+FEFF) are removed;
4. case folding, and every run of whitespace becomes one space;
5. on the quote only: surrounding whitespace and one pair of wrapping quotation marks are
   stripped.

Nothing else is tolerated: no ellipsis elisions, no paraphrase. An empty quote is never found.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Sequence

__all__ = ["normalise_for_match", "quote_found"]

_TRANSLATE = str.maketrans(
    {
        **{c: "'" for c in "‘’‚‛′`´"},
        **{c: '"' for c in "“”„‟″«»"},
        **{c: "-" for c in "‐‑‒–—―−"},
        **{c: None for c in "\u00ad\u200b\u200c\u200d\u2060\ufeff"},
    }
)
_SPACE = re.compile(r"\s+")
_WRAPPERS = ('"', "'")


def normalise_for_match(text: str) -> str:
    """Steps 1–4 of the module docstring."""
    text = unicodedata.normalize("NFKC", html.unescape(text)).translate(_TRANSLATE)
    return _SPACE.sub(" ", text.casefold()).strip()


def _normalise_quote(quote: str) -> str:
    q = normalise_for_match(quote)
    if len(q) >= 2 and q[0] == q[-1] and q[0] in _WRAPPERS:
        q = q[1:-1].strip()
    return q


def quote_found(quote: str | None, context: Sequence[str]) -> bool:
    """True iff the normalised ``quote`` is non-empty and occurs in one normalised document."""
    if quote is None:
        return False
    q = _normalise_quote(quote)
    if not q:
        return False
    return any(q in normalise_for_match(doc) for doc in context)
