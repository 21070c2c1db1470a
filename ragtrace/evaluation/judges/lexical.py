"""The offline judge: word overlap per answer sentence, no model and no key.

Each answer sentence (bracketed citation markers removed; see
:mod:`ragtrace.evaluation.judges.text` for sentences and words) is one claim. Its *support* is
the share of its distinct words found anywhere in the context; it is entailed at support ≥ 0.6.
That is a rough check — it catches outright invention, not a negation or a swapped number — and
the score carries this judge's name so it is never mistaken for a model judge's.

The evidence for a supported sentence is the context sentence sharing most words with it, copied
from the context (so it verifies); it points at where the words came from, it does not prove
entailment.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

from .answer_metrics import token_f1
from .base import ClaimVerdict, GroundednessResult, JudgeCapabilityError, JudgeInfo, MetricResult
from .evidence import quote_found
from .text import split_sentences, strip_citations, words

__all__ = ["DEFAULT_THRESHOLD", "LexicalJudge"]

DEFAULT_THRESHOLD = 0.6


def _sha(description: str) -> str:
    return hashlib.sha256(description.encode("utf-8")).hexdigest()


class LexicalJudge:
    """Model-free groundedness (and token-F1 answer correctness). Answer relevancy needs a model
    and raises :class:`JudgeCapabilityError`."""

    name = "lexical"
    paid = False  # local word overlap: the consumers' judge call budget does not apply

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        if isinstance(threshold, bool) or not 0.0 < float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        self.threshold = float(threshold)
        self._info = JudgeInfo(self.name, None, _sha(
            f"ragtrace lexical groundedness v1: sentence word overlap >= {self.threshold}"))
        self._correctness_info = JudgeInfo(self.name, None,
                                           _sha("ragtrace lexical answer correctness v1: token F1"))

    @property
    def info(self) -> JudgeInfo:
        return self._info

    def _verdict(self, claim: str, context: Sequence[str],
                 source_words: set[str], source_sentences: list[tuple[str, set[str]]]
                 ) -> ClaimVerdict:
        w = words(strip_citations(claim))
        support = len(w & source_words) / len(w) if w else 0.0
        entailed = support >= self.threshold
        evidence = None
        if entailed and source_sentences:
            evidence = max(source_sentences, key=lambda s: len(s[1] & w))[0]
        return ClaimVerdict(claim, entailed, evidence, quote_found(evidence, context), support)

    def _prepare(self, context: Sequence[str]) -> tuple[set[str], list[tuple[str, set[str]]]]:
        source_words: set[str] = set()
        sentences: list[tuple[str, set[str]]] = []
        for doc in context:
            source_words |= words(doc)
            sentences.extend((s, words(s)) for s in split_sentences(doc))
        return source_words, sentences

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        start = time.perf_counter()
        claims = [s for s in split_sentences(strip_citations(answer)) if words(s)]
        return self._score(claims, context, start)

    def judge_claims(self, claims: Sequence[str], context: Sequence[str]) -> GroundednessResult:
        """Verdicts on claims already split (calibration), one per claim, in order."""
        return self._score(list(claims), context, time.perf_counter())

    def _score(self, claims: list[str], context: Sequence[str], start: float
               ) -> GroundednessResult:
        source_words, sentences = self._prepare(context)
        verdicts = [self._verdict(c, context, source_words, sentences) for c in claims]
        return GroundednessResult.from_claims(verdicts, self._info,
                                              latency_s=time.perf_counter() - start)

    def answer_relevancy(self, question: str, answer: str) -> MetricResult:
        raise JudgeCapabilityError("answer relevancy needs a model judge (--judge anthropic); "
                                   "it is not available offline")

    def answer_correctness(self, question: str, answer: str, reference: str) -> MetricResult:
        """SQuAD token F1 between ``answer`` and ``reference`` (``question`` is unused)."""
        start = time.perf_counter()
        return MetricResult("answer_correctness", token_f1(answer, reference),
                            self._correctness_info, ({"method": "token_f1"},),
                            latency_s=time.perf_counter() - start)
