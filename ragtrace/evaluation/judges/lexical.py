"""The offline judge: word overlap per answer sentence, no model and no key.

Each answer unit (:mod:`ragtrace.evaluation.judges.segment`: sentences, list items, code blocks,
citation markers removed) is one claim. Its *support* is the share of its distinct words found
anywhere in the context (passages flagged for injection left out); it is entailed at
support ≥ 0.6, and its evidence then goes through the same checks as a model judge's
(:mod:`ragtrace.evaluation.judges.checks`).
That is a rough check — it catches outright invention, not a negation or a swapped number — and
the score carries this judge's name so it is never mistaken for a model judge's.

The evidence for a supported unit is the context sentence sharing most words with it among those
that pass the evidence checks, else the whole passage sharing most words that passes them (a
unit may draw on two sentences of one passage), else the best-overlapping sentence, which is
then downgraded; copied from the context, it points at where the words came from, it does not
prove entailment.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

from .answer_metrics import token_f1
from .base import GroundednessResult, JudgeCapabilityError, JudgeInfo, MetricResult
from .checks import check_evidence
from .injection import suspect_documents
from .prompts import CHECKS_VERSION
from .scoring import JudgedClaim, score_units
from .segment import Unit, segment_answer
from .text import split_sentences, strip_citations, words

__all__ = ["DEFAULT_THRESHOLD", "LexicalJudge"]

DEFAULT_THRESHOLD = 0.6
_CANDIDATES = 20


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
        self._info = JudgeInfo(
            self.name,
            None,
            _sha(
                f"ragtrace lexical groundedness v2: unit word overlap >= {self.threshold}; "
                f"{CHECKS_VERSION}"
            ),
        )
        self._correctness_info = JudgeInfo(
            self.name, None, _sha("ragtrace lexical answer correctness v1: token F1")
        )

    @property
    def info(self) -> JudgeInfo:
        return self._info

    def _claim(
        self,
        claim: str,
        context: Sequence[str],
        source_docs: Sequence[str],
        source_words: set[str],
        source_sentences: list[tuple[str, set[str]]],
    ) -> JudgedClaim:
        w = words(strip_citations(claim))
        support = len(w & source_words) / len(w) if w else 0.0
        entailed = support >= self.threshold
        evidence = None
        if entailed and source_sentences:
            ranked = sorted(source_sentences, key=lambda s: len(s[1] & w), reverse=True)
            # the best-overlapping sentence that carries the claim's figures and key terms, else
            # the best whole passage (a unit may draw on two sentences of one passage)
            candidates = [s for s, _ in ranked[:_CANDIDATES]] + sorted(
                source_docs, key=lambda d: len(words(d) & w), reverse=True
            )
            evidence = next(
                (c for c in candidates if check_evidence(claim, c, context) is None), ranked[0][0]
            )
        return JudgedClaim(claim, entailed, evidence, support)

    @staticmethod
    def _prepare(
        context: Sequence[str], suspect: Sequence[int]
    ) -> tuple[set[str], list[tuple[str, set[str]]]]:
        source_words: set[str] = set()
        sentences: list[tuple[str, set[str]]] = []
        for i, doc in enumerate(context, start=1):
            if i in suspect:  # a passage flagged for injection is never evidence
                continue
            source_words |= words(doc)
            sentences.extend((s, words(s)) for s in split_sentences(doc))
        return source_words, sentences

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        return self._score(segment_answer(answer), context, time.perf_counter(), True)

    def judge_claims(self, claims: Sequence[str], context: Sequence[str]) -> GroundednessResult:
        """Verdicts on claims already split (calibration), one per claim, in order."""
        units = tuple(Unit(i, c) for i, c in enumerate(claims, start=1))
        return self._score(units, context, time.perf_counter(), False)

    def _score(
        self, units: Sequence[Unit], context: Sequence[str], start: float, answer_mode: bool
    ) -> GroundednessResult:
        suspect = suspect_documents(context)
        source_words, sentences = self._prepare(context, suspect)
        clean = [d for i, d in enumerate(context, start=1) if i not in suspect]
        judged = {
            u.id: [self._claim(u.text, context, clean, source_words, sentences)] for u in units
        }
        return score_units(
            units,
            judged,
            context,
            self._info,
            suspect=suspect,
            answer_mode=answer_mode,
            latency_s=time.perf_counter() - start,
        )

    def answer_relevancy(self, question: str, answer: str) -> MetricResult:
        raise JudgeCapabilityError(
            "answer relevancy needs a model judge (--judge anthropic); it is not available offline"
        )

    def answer_correctness(self, question: str, answer: str, reference: str) -> MetricResult:
        """SQuAD token F1 between ``answer`` and ``reference`` (``question`` is unused)."""
        start = time.perf_counter()
        return MetricResult(
            "answer_correctness",
            token_f1(answer, reference),
            self._correctness_info,
            ({"method": "token_f1"},),
            latency_s=time.perf_counter() - start,
        )
