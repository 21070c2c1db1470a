"""Unicode-aware sentence splitting and word sets, shared by the lexical judge and the tests' fake
judge server.

Sentences end at ``. ! ? …`` (Latin), ``؟ ۔`` (Arabic, Urdu), ``।`` (Devanagari) and ``。！？``
(CJK), and at line breaks. A Latin/Arabic/Devanagari terminator only ends a sentence when
whitespace or the end of the text follows (optionally after closing quotes or brackets), so
``3.5`` and ``v1.2`` stay whole; a few common abbreviations (``e.g.``, ``i.e.``, ``etc.``, ``Dr.`` …) never end one. CJK terminators end a
sentence wherever they appear.

A word is a maximal run of letters, digits and combining marks after NFKC normalisation and
case folding; combining marks (Arabic harakat, Hebrew points) and the Arabic tatweel are then
dropped, so vocalised and unvocalised spellings match.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["split_sentences", "strip_citations", "word_list", "words"]

_ABBREVIATIONS = frozenset(
    {
        "e.g.",
        "i.e.",
        "etc.",
        "vs.",
        "cf.",
        "mr.",
        "mrs.",
        "ms.",
        "dr.",
        "prof.",
        "no.",
        "fig.",
        "approx.",
        "inc.",
        "ltd.",
        "st.",
    }
)
# A terminator run, then optional closers, then whitespace or end of text.
_END = re.compile(r"[.!?…؟۔।]+[\"'”’»)\]]*(?=\s|$)|[。！？]+[\"'”’»)\]」』]*")
_CITATION = re.compile(r"\[\s*[\w.:#/-]+(?:\s*[,;]\s*[\w.:#/-]+)*\s*\]")
_TATWEEL = "\u0640"


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into trimmed, non-empty sentences, keeping their terminators."""
    sentences: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in _END.finditer(line):
            candidate = line[start : match.end()]
            last_word = candidate.split()[-1].lower() if candidate.split() else ""
            if last_word in _ABBREVIATIONS and match.end() < len(line.rstrip()):
                continue
            if candidate.strip():
                sentences.append(candidate.strip())
            start = match.end()
        if line[start:].strip():
            sentences.append(line[start:].strip())
    return sentences


def strip_citations(text: str) -> str:
    """Remove bracketed citation markers such as ``[c-9930]`` or ``[1, 2]`` (they are not claims)."""
    return _CITATION.sub(" ", text)


_ASCII_WORD = re.compile(r"[a-z0-9]+")


def _is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNM"


def word_list(text: str) -> list[str]:
    """The normalised words of ``text`` in order, repeats kept (see the module docstring)."""
    if text.isascii():  # NFKC leaves ASCII as is; its word characters are letters and digits
        return _ASCII_WORD.findall(text.lower())
    normalised = unicodedata.normalize("NFKC", text).casefold()
    result: list[str] = []
    current: list[str] = []
    for ch in normalised + " ":
        if _is_word_char(ch):
            if unicodedata.category(ch) not in ("Mn", "Me") and ch != _TATWEEL:
                current.append(ch)
        elif current:
            result.append("".join(current))
            current = []
    return result


def words(text: str) -> set[str]:
    """The set of normalised words in ``text``."""
    return set(word_list(text))
