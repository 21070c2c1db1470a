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
  the passage:", "I hope this helps!"; :func:`is_meta`, below), is not a unit,
  and a meta lead-in ending in a colon ("Based on the passages, the answer is: …") is cut off
  the sentence it opens.

Every unit must get a verdict, and the groundedness score is computed over units, so a judge
that drops, merges, repeats or invents claims cannot move the denominator.

*Meta units*: what an answer says about itself, not about the world.

Generators open and close with lines such as "Here is a concise summary of the passage:",
"Sure! Based on the given passages, the answer is:" or "I hope this helps!". They make no claim
the context could support, so the offline judge does not count them as unsupported.

:func:`is_meta` is deliberately narrow: a unit is meta only when *every* content word of it is a
word of the meta vocabulary below (summary, passage, answer, question, help, …) and it matches
one of the meta shapes (an announcement of what follows, a greeting or thanks, an offer of more
help). A unit that names anything else — a person, a figure other than a length limit ("in 116
words"), any topic word — is a claim and is judged. Since the unit must contain only meta words,
no fact can ride along in it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .terms import content_words
from .text import split_sentences, strip_citations, words

__all__ = ["META_WORDS", "Unit", "is_meta", "meta_fingerprint", "meta_lead", "segment_answer"]

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


# Meta units (the module docstring's second part).

META_WORDS = frozenset(
    [
        "answer",
        "answers",
        "article",
        "articles",
        "based",
        "brief",
        "briefly",
        "certainly",
        "concise",
        "concisely",
        "context",
        "document",
        "documents",
        "excerpt",
        "following",
        "given",
        "glad",
        "happy",
        "help",
        "helps",
        "helpful",
        "hope",
        "hopefully",
        "information",
        "info",
        "key",
        "let",
        "main",
        "news",
        "overview",
        "passage",
        "passages",
        "point",
        "points",
        "provide",
        "provided",
        "question",
        "questions",
        "question's",
        "response",
        "sentence",
        "sentences",
        "short",
        "source",
        "sources",
        "sure",
        "summarise",
        "summarize",
        "summarised",
        "summarized",
        "summary",
        "summaries",
        "text",
        "thank",
        "thanks",
        "way",
        "word",
        "words",
        "within",
        "absolutely",
        "okay",
        "ok",
        "hello",
        "hi",
        "great",
        "welcome",
        "feel",
        "free",
        "further",
        "clarification",
        "ask",
        "assist",
        "additional",
        "know",
        "anything",
        "else",
        "clarify",
        "query",
        "request",
        "note",
        "content",
        "here",
        "there's",
        "here's",
        "core",
        "cover",
        "covers",
        "covering",
        "piece",
        "pieces",
        "described",
        "include",
        "includes",
        "including",
        "solely",
        "offer",
        "detail",
        "details",
        "highlights",
    ]
)
_META_TERMS = frozenset(t for w in META_WORDS for t in (w, *content_words(w)))
_LENGTH = re.compile(r"\b(?:in|within|under|of|about|around|up to)?\s*\d+\s*words?\b", re.I)
_SHAPES = re.compile(
    r"^\s*(?:(?:sure|certainly|absolutely|of course|okay|ok)\b[!,.]?\s*)?"
    r"(?:$|here(?:'s| is| are)|below is|the following is|based (?:solely |only |entirely )?on|according to the (?:given )?"
    r"(?:passages?|context|text|article|documents?)|i hope|hope this|thank|thanks|you're welcome|"
    r"(?:the )?key (?:points|facts|details)|glad|happy to|let me know|feel free|if you have|is there anything|hello|hi\b|great question|"
    r"(?:(?:a |the )?(?:brief |short |concise )?(?:summary|answer|response|overview)\s*:?\s*$))",
    re.I,
)


def meta_lead(unit: str) -> int:
    """The length of a meta lead-in ending in a colon that opens ``unit`` ("Here is the
    answer: …"), else 0; the rest of the unit is its claim."""
    head, colon, rest = unit.partition(":")
    if colon and rest.strip() and is_meta(head + colon):
        return len(head) + 1
    return 0


def is_meta(unit: str) -> bool:
    """Whether ``unit`` only talks about the answer itself (module docstring)."""
    if not _SHAPES.match(unit):
        return False
    return content_words(_LENGTH.sub(" ", unit)) <= _META_TERMS


def meta_fingerprint() -> str:
    """SHA-256 of the meta vocabulary and shapes: which units are exempt is part of a judge."""
    blob = "\n".join([*sorted(META_WORDS), _SHAPES.pattern, _LENGTH.pattern])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
