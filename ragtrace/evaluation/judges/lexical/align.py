"""Support of one answer unit against its best-aligned source window, and contradiction cues.

The source is read as *windows*: each sentence of a context passage, and each pair of adjacent
sentences of one passage (a unit may join two neighbouring sentences). A unit's tokens
(:mod:`ragtrace.evaluation.judges.lexical.tokens`) are looked up in every window; a token missing
from the whole source is matched fuzzily (``rapidfuzz`` ratio ≥ :data:`FUZZY_CUTOFF` against the
source's words, tokens of at least :data:`FUZZY_MIN_LENGTH` letters, numbers never) and then
counts :data:`FUZZY_CREDIT` of its weight.

``aligned`` is the largest weighted share of the unit's tokens found in one window (a pair of
sentences counts :data:`PAIR_DISCOUNT` of its share, so one sentence that says it all wins);
``anywhere`` is the weighted share found anywhere in the source; ``overlap`` is the seed's rough
check with inflection folded: the share of the unit's distinct words (stop words included)
found anywhere in the source as they are or by one of their match keys ("carried" by "carries").
The unit's *support* (:func:`support`) is ``(1 - UNIT_OVERLAP_SHARE) * lexical +
UNIT_OVERLAP_SHARE * overlap`` with ``lexical = ALIGNED_SHARE * aligned + (1 - ALIGNED_SHARE) *
anywhere``: the aligned part weighs rare words, names and figures and keeps to one window, so
words gathered from across the context (a recombined fabrication) do not add up to support; the
overlap part counts every word the same, which ranks answers better on data the weights were
not chosen on. :data:`UNIT_OVERLAP_SHARE` is fitted (``bench/fit_lexical_judge.py``).

A *contradiction cue* compares the unit with its best window: a negation on one side only, a
hedge of the source ("reportedly", "may", "allegedly") dropped by the unit, or a certainty the
source does not have ("must", "always" where it says "may", "can"). A cue multiplies the whole
support by :data:`CUE_PENALTY`. So does a *mismatch*: a figure written in digits (``figure``) or a name
(``name``) of the unit found nowhere in the source, not even fuzzily — "$181,674,817" where the
source says "$181.7 million", "Alex Tucker" in an article that never names him.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..text import split_sentences, words
from .tokens import Token, keys, require, spaced_figures, tokens, word_keys

__all__ = [
    "ALGORITHM",
    "ALIGNED_SHARE",
    "CUE_PENALTY",
    "FUZZY_CREDIT",
    "FUZZY_CUTOFF",
    "FUZZY_MIN_LENGTH",
    "PAIR_DISCOUNT",
    "Alignment",
    "UNIT_OVERLAP_SHARE",
    "Source",
    "align",
    "cues",
    "support",
]

ALIGNED_SHARE = 0.8
PAIR_DISCOUNT = 0.95
FUZZY_CUTOFF = 88.0
FUZZY_MIN_LENGTH = 5
FUZZY_CREDIT = 0.8
CUE_PENALTY = 0.5
UNIT_OVERLAP_SHARE = 0.1
"""Share of the seed's word overlap in a unit's support (module docstring); fitted."""

_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n[’']t\b"
    r"|(?<!\w)(?:لا|لم|لن|ليس|ليست|غير)(?!\w)",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:reportedly|allegedly|alleged|apparently|possibly|probably|perhaps|suspected|"
    r"believed|rumou?red|purportedly|presumably|seemingly|unconfirmed|might)\b"
    r"|(?<!\w)(?:ربما|يعتقد|يُعتقد|يزعم|مزعوم)(?!\w)",
    re.IGNORECASE,
)
_CERTAIN = re.compile(r"\b(?:must|always|required|mandatory|definitely|certainly)\b", re.I)
_OPTIONAL = re.compile(r"\b(?:may|might|can|could|optional|optionally|sometimes)\b", re.I)
_RANKED = 5
"""How many best windows an alignment keeps (evidence candidates, best first): of 4,127 units
the benchmark found supported, 2 took their evidence from a window ranked below fifth."""
_SCOPE = 3
"""A negation or hedge of the source governs the next few words: only when one of them is a
word of the unit does the unit have to carry it too."""


@dataclass(frozen=True)
class Window:
    """One source window: its text (verbatim, for evidence), passage index and keys."""

    text: str
    doc: int
    keys: frozenset[str]
    pair: bool = False


@dataclass
class Source:
    """The context, prepared once per judgement: windows, a key index and the vocabulary."""

    windows: list[Window] = field(default_factory=list)
    index: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    vocabulary: list[str] = field(default_factory=list)
    words: frozenset[str] = frozenset()
    """The passages' words as the seed's overlap reads them."""
    _fuzzy: dict[str, str | None] = field(default_factory=dict)
    _by_length: dict[int, tuple[list[int], list[str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, docs: Sequence[tuple[int, str]]) -> Source:
        """Windows of ``(passage index, text)`` pairs (module docstring)."""
        source = cls()
        every: set[str] = set()
        for doc, text in docs:
            every |= words(text)
            sentences = [(s, keys(s)) for s in split_sentences(text)]
            for i, (s, k) in enumerate(sentences):
                source._add(Window(s, doc, k))
                if i + 1 < len(sentences):
                    nxt, nk = sentences[i + 1]
                    pair = f"{s} {nxt}"
                    # a figure the sentence splitter cut in two ("$ 1. 7 million") is whole here
                    source._add(Window(pair, doc, k | nk | spaced_figures(pair), pair=True))
        source.vocabulary = sorted(source.index)
        source.words = frozenset(every)
        return source

    def _add(self, window: Window) -> None:
        n = len(self.windows)
        self.windows.append(window)
        for key in window.keys:
            self.index[key].add(n)

    def fuzzy(self, token: Token) -> str | None:
        """The source key a token missing from the source matches fuzzily, if any."""
        if token.number or len(token.text) < FUZZY_MIN_LENGTH or not self.vocabulary:
            return None
        if token.text not in self._fuzzy:
            self._fuzzy[token.text] = self._closest(token.text)
        return self._fuzzy[token.text]

    def _closest(self, text: str) -> str | None:
        """The vocabulary's best ratio match of ``text`` at or above the cutoff (the first in
        vocabulary order among equals). A ratio of r needs lengths within r / (2 - r) of each
        other, so only words of such lengths are compared: the same answer as a search of the
        whole vocabulary, at a fraction of its cost on a long context."""
        rapidfuzz = require("rapidfuzz")
        if not self._by_length:
            for i, word in enumerate(self.vocabulary):
                self._by_length.setdefault(len(word), ([], []))
                self._by_length[len(word)][0].append(i)
                self._by_length[len(word)][1].append(word)
        ratio = FUZZY_CUTOFF / 100
        shortest = math.ceil(len(text) * ratio / (2 - ratio) - 1e-9)
        longest = math.floor(len(text) * (2 - ratio) / ratio + 1e-9)
        best: tuple[float, int, str] | None = None
        for length in range(shortest, longest + 1):
            if length not in self._by_length:
                continue
            indices, words = self._by_length[length]
            hit = rapidfuzz.process.extractOne(
                text, words, scorer=rapidfuzz.fuzz.ratio, score_cutoff=FUZZY_CUTOFF
            )
            if hit is not None:
                candidate = (-hit[1], indices[hit[2]], hit[0])
                best = candidate if best is None or candidate < best else best
        return None if best is None else best[2]


@dataclass(frozen=True)
class Alignment:
    """A unit's support (module docstring) and its parts, its best window (None: nothing
    matched) and the contradiction cues found against that window."""

    support: float
    aligned: float
    anywhere: float
    window: Window | None
    cues: tuple[str, ...]
    ranked: tuple[Window, ...]
    overlap: float = 0.0

    def support_at(self, overlap_share: float) -> float:
        """The support with another share of the word overlap (fitting tries several)."""
        return support(self.aligned, self.anywhere, self.overlap, bool(self.cues), overlap_share)


def support(
    aligned: float,
    anywhere: float,
    overlap: float,
    cued: bool,
    overlap_share: float = UNIT_OVERLAP_SHARE,
) -> float:
    """A unit's support from its parts (module docstring), in [0, 1]."""
    lexical = ALIGNED_SHARE * aligned + (1 - ALIGNED_SHARE) * anywhere
    blended = (1 - overlap_share) * lexical + overlap_share * overlap
    return min(1.0, blended * (CUE_PENALTY if cued else 1.0))


def _overlap(unit: str, source: Source) -> float:
    w = words(unit)
    if not w:
        return 0.0
    found = sum(1 for x in w if x in source.words or any(k in source.index for k in word_keys(x)))
    return found / len(w)


def align(unit: str, source: Source, overlap_share: float = UNIT_OVERLAP_SHARE) -> Alignment:
    """Align ``unit`` (its citation markers removed) with ``source`` (module docstring)."""
    toks = tokens(unit)
    total = sum(t.weight for t in toks)
    overlap = _overlap(unit, source)
    nothing = Alignment(
        support(0.0, 0.0, overlap, False, overlap_share), 0.0, 0.0, None, (), (), overlap
    )
    if not toks or not source.windows:
        return nothing
    per_window: dict[int, float] = defaultdict(float)
    anywhere = 0.0
    missing: list[Token] = []
    for tok in toks:
        hits: set[int] = set()
        for key in tok.keys:
            hits |= source.index.get(key, set())
        credit = tok.weight
        if not hits:
            alias = source.fuzzy(tok)
            if alias is None:
                missing.append(tok)
                continue
            hits = source.index[alias]
            credit *= FUZZY_CREDIT
        anywhere += credit
        for w in hits:
            per_window[w] += credit
    if not per_window:
        return nothing

    windows = source.windows
    shares = {
        w: (c / total) * PAIR_DISCOUNT if windows[w].pair else c / total
        for w, c in per_window.items()
    }
    # the top few only (what ``ranked`` keeps), not a sort of every window sharing a word:
    # linear in the windows hit, so a long context does not cost each unit a full sort
    ranked = heapq.nlargest(_RANKED, shares, key=shares.__getitem__)
    best = windows[ranked[0]]
    aligned = shares[ranked[0]]
    found = cues(unit, best.text)
    # a figure or a name found nowhere in the source is a new fact, however much else matches
    if any(t.figure for t in missing):
        found += ("figure",)
    if any(t.name for t in missing):
        found += ("name",)
    return Alignment(
        support(aligned, anywhere / total, overlap, bool(found), overlap_share),
        aligned,
        anywhere / total,
        best,
        found,
        tuple(windows[w] for w in ranked),
        overlap,
    )


def _scoped(pattern: re.Pattern[str], text: str, unit_keys: frozenset[str]) -> bool:
    """Whether a ``pattern`` match in ``text`` governs a word of the unit (within _SCOPE)."""
    for match in pattern.finditer(text):
        after = " ".join(text[match.end() :].split()[:_SCOPE])
        if keys(after) & unit_keys:
            return True
    return False


def cues(unit: str, window: str) -> tuple[str, ...]:
    """The contradiction cues of ``unit`` against ``window``: ``negation``, ``hedge``,
    ``modality`` (module docstring)."""
    unit_keys = frozenset(k for t in tokens(unit) for k in t.keys)
    found: list[str] = []
    unit_negated = bool(_NEGATION.search(unit))
    if (
        unit_negated
        and not _NEGATION.search(window)
        or not unit_negated
        and _scoped(_NEGATION, window, unit_keys)
    ):
        found.append("negation")
    if not _HEDGE.search(unit) and _scoped(_HEDGE, window, unit_keys):
        found.append("hedge")
    if _CERTAIN.search(unit) and not _CERTAIN.search(window) and _OPTIONAL.search(window):
        found.append("modality")
    return tuple(found)


def _algorithm() -> str:
    """Every constant the support depends on, for the judge's prompt hash."""
    from ..segment import meta_fingerprint
    from . import tokens as t

    return (
        f"align mismatch=figure,name share={ALIGNED_SHARE} overlap={UNIT_OVERLAP_SHARE} "
        f"pair={PAIR_DISCOUNT} fuzzy={FUZZY_CUTOFF}/"
        f"{FUZZY_MIN_LENGTH}/{FUZZY_CREDIT} cue={CUE_PENALTY} scope={_SCOPE} "
        f"negation={_NEGATION.pattern} hedge={_HEDGE.pattern} certain={_CERTAIN.pattern} "
        f"optional={_OPTIONAL.pattern} weights number={t.NUMBER_WEIGHT} name={t.NAME_WEIGHT} "
        f"zipf={t.ZIPF_CEILING}/{t.ZIPF_SPAN} clip={t.MIN_WEIGHT}/{t.MAX_WEIGHT} "
        f"spaced={t._SPACED_NUMBER.pattern} meta={meta_fingerprint()}"
    )


ALGORITHM = _algorithm()
"""The support algorithm's constants as text, part of the lexical judge's prompt hash."""
