"""The answer's units: the code, not the judge, decides what has to be judged.

:func:`segment_answer` splits an answer into numbered units (IDs 1, 2, … in reading order):

* a fenced code block (```` ``` ```` or ``~~~`` … to the matching fence) is one unit, verbatim;
* a list item (``-``, ``*``, ``+``, ``•``, ``1.``, ``1)``, ``a)`` at the start of a line) starts a
  new block, its marker dropped; a heading's ``#`` marks are dropped the same way;
* other lines of a paragraph are joined (hard-wrapped prose stays one text), paragraphs end at a
  blank line;
* each block is split into sentences by :func:`ragtrace.evaluation.judges.text.split_sentences`
  (Latin, Arabic and CJK terminators, abbreviations and decimals kept whole);
* bracketed citation markers (``[c-9930]``) are removed, whitespace collapsed and dropped before
  punctuation; a piece left with no word (punctuation, a lone marker) is not a unit;
* a *meta* sentence, one that only speaks about the answer itself ("Here is a concise summary of
  the passage:", "I hope this helps!"; :mod:`ragtrace.evaluation.judges.meta`), is not a unit,
  and a meta lead-in ending in a colon ("Based on the passages, the answer is: …") is cut off
  the sentence it opens.

Every unit must get a verdict, and the groundedness score is computed over units, so a judge
that drops, merges, repeats or invents claims cannot move the denominator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .meta import is_meta, meta_lead
from .text import split_sentences, strip_citations, words

__all__ = ["Unit", "segment_answer"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+•‣◦▪]|\d{1,3}[.)]|[a-zA-Z][.)]|[٠-٩]{1,3}[.)\-])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_SPACE = re.compile(r"\s+")
_SPACE_BEFORE_MARK = re.compile(r"\s+(?=[.,;:!?؟،。])")


@dataclass(frozen=True)
class Unit:
    """One numbered piece of the answer; ``kind`` is ``sentence`` or ``code``."""

    id: int
    text: str
    kind: str = "sentence"

    def __post_init__(self) -> None:
        if self.id < 1 or not self.text.strip():
            raise ValueError(f"Unit needs an id >= 1 and text: {self!r}")
        if self.kind not in ("sentence", "code"):
            raise ValueError(f"Unit.kind must be 'sentence' or 'code', got {self.kind!r}")


def _blocks(answer: str) -> list[tuple[str, str]]:
    """(kind, text) blocks: code blocks whole, list items and paragraphs as prose."""
    blocks: list[tuple[str, str]] = []
    prose: list[str] = []
    code: list[str] | None = None
    fence = ""

    def flush() -> None:
        if prose:
            blocks.append(("sentence", " ".join(prose)))
            prose.clear()

    for line in answer.splitlines():
        if code is not None:
            if line.strip().startswith(fence):
                blocks.append(("code", "\n".join(code)))
                code = None
            else:
                code.append(line)
            continue
        fenced = _FENCE.match(line)
        if fenced:
            flush()
            fence, code = fenced.group(1), []
            continue
        if not line.strip():
            flush()
            continue
        item = _ITEM.match(line) or _HEADING.match(line)
        if item:
            flush()
            prose.append(line[item.end() :].strip())
            if _HEADING.match(line):
                flush()
            continue
        prose.append(line.strip())
    if code is not None:  # an unclosed fence runs to the end
        blocks.append(("code", "\n".join(code)))
    flush()
    return blocks


def segment_answer(answer: str) -> tuple[Unit, ...]:
    """The answer's units (module docstring); empty for an answer with no words."""
    units: list[Unit] = []
    for kind, text in _blocks(answer):
        if kind == "code":
            if words(text):
                units.append(Unit(len(units) + 1, text.strip("\n"), "code"))
            continue
        for sentence in split_sentences(strip_citations(text)):
            sentence = _SPACE_BEFORE_MARK.sub("", _SPACE.sub(" ", sentence)).strip()
            sentence = sentence[meta_lead(sentence) :].strip()
            if words(sentence) and not is_meta(sentence):
                units.append(Unit(len(units) + 1, sentence))
    return tuple(units)
