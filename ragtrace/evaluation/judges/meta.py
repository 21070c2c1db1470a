"""Meta units: what an answer says about itself, not about the world.

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

from .terms import content_words

__all__ = ["META_WORDS", "is_meta", "meta_fingerprint", "meta_lead"]

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
