"""A tiny deterministic lexical retriever over the demo corpus.

Score of a passage for a query: the sum, over the distinct query words (lower-cased runs of
letters and digits, minus a short stop-word list) that occur in the passage, of the word's
inverse document frequency ``ln(1 + (N - df + 0.5) / (df + 0.5))`` — BM25's IDF without term
frequency or length normalisation. Ties are broken by chunk ID, so the ranking never varies.

Being lexical it has lexical retrieval's classic blind spot, which the demo relies on: a passage
that answers the question in other words ("activity history" for "audit logs") ranks below
passages that merely share the question's vocabulary.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["LexicalRetriever", "Passage", "load_corpus", "tokens"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "their",
        "then",
        "there",
        "to",
        "what",
        "when",
        "which",
        "who",
        "why",
        "with",
        "my",
        "our",
        "your",
        "long",
    ]
)


def tokens(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stop words, in order."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


@dataclass(frozen=True)
class Passage:
    """One corpus chunk: its ID, the document it comes from, its text."""

    id: str
    source: str
    text: str

    def __post_init__(self) -> None:
        if not self.id or not self.text:
            raise ValueError(f"a passage needs an id and a text, got {self!r}")


def load_corpus(path: str | Path | None = None) -> list[Passage]:
    """Read a JSONL corpus (``{"id", "source", "text"}`` per line); the bundled one by default."""
    if path is None:
        raw = resources.files("ragtrace_consumers.demo").joinpath("corpus.jsonl").read_text("utf-8")
        where = "consumers/ragtrace_consumers/demo/corpus.jsonl"
    else:
        raw = Path(path).read_text("utf-8")
        where = str(path)
    passages = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            passages.append(Passage(str(obj["id"]), str(obj.get("source", "")), str(obj["text"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{where}, line {number}: bad corpus entry: {exc}") from None
    return passages


class LexicalRetriever:
    """Ranks passages by summed IDF of the query words they contain (see module docstring)."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        if not passages:
            raise ValueError("LexicalRetriever needs at least one passage")
        self._passages = tuple(passages)
        self._words = [frozenset(tokens(p.text)) for p in self._passages]
        n = len(self._passages)
        df: dict[str, int] = {}
        for words in self._words:
            for w in words:
                df[w] = df.get(w, 0) + 1
        self._idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        """The top ``k`` passages with a positive score, best first, scores rounded to 4 places."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        q = set(tokens(query))
        scored = []
        for passage, words in zip(self._passages, self._words, strict=False):
            score = sum(self._idf[w] for w in q & words)
            if score > 0:
                scored.append((passage, round(score, 4)))
        scored.sort(key=lambda ps: (-ps[1], ps[0].id))
        return scored[:k]
