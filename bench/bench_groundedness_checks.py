"""Cost of the code-side groundedness checks per judged answer, against the quote check alone.

The model judge's verdicts are fixed (every unit one entailed claim quoting a real sentence), so
only our own work is timed: segmenting the answer, scanning the passages for injections, the
evidence, unit-fidelity and coverage checks, and scoring over units (``score_units``). The
baseline is what verification cost before: one ``quote_found`` per claim. *Cold* clears every
cache first (each answer and passage seen for the first time); *warm* repeats answers and
passages, as a consumer does when the same chunks are retrieved again.

Run: ``python bench/bench_groundedness_checks.py [--quick]``; writes the ``groundedness-checks``
section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._report import machine_line, write_section
from ragtrace.evaluation.judges import (
    GroundednessResult,
    JudgeInfo,
    checks,
    injection,
    quote_found,
    terms,
)
from ragtrace.evaluation.judges.injection import suspect_documents
from ragtrace.evaluation.judges.scoring import JudgedClaim, score_units
from ragtrace.evaluation.judges.segment import segment_answer
from ragtrace.evaluation.judges.text import split_sentences

ROOT = Path(__file__).resolve().parent.parent
INFO = JudgeInfo("bench", None, "0" * 64)


def _cases() -> list[tuple[str, str, list[str]]]:
    corpus = [
        json.loads(line)["text"]
        for line in (ROOT / "consumers/ragtrace_consumers/demo/corpus.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    demo_docs = corpus[:5]
    demo_answer = " ".join(split_sentences(" ".join(corpus[2:5])))
    # a long answer: 12 units over 8 passages of about 1,000 characters
    long_docs = [" ".join(corpus[(i + j) % len(corpus)] for j in range(8)) for i in range(8)]
    long_answer = " ".join(split_sentences(" ".join(corpus))[:12])
    return [
        ("demo-sized: 3 units, 5 passages", demo_answer, demo_docs),
        ("long: 12 units, 8 passages of ~1,000 chars", long_answer, long_docs),
    ]


def _verdicts(answer: str, docs: list[str]) -> dict[int, list[JudgedClaim]]:
    units = segment_answer(answer)
    sentences = [s for d in docs for s in split_sentences(d)]
    judged = {
        u.id: [JudgedClaim(u.text, True, next((s for s in sentences if s == u.text), sentences[0]))]
        for u in units
    }
    return judged


def _clear() -> None:
    for cached in (
        terms.content_words,
        terms.numbers,
        terms.named_entities,
        injection._hits,
        checks._normalised,
    ):
        cached.cache_clear()


def _time(fn: Callable[[], object], rounds: int, clear: bool) -> float:
    best = float("inf")
    for _ in range(rounds):
        if clear:
            _clear()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main(quick: bool = False) -> None:
    rounds = 5 if quick else 30
    rows = []
    for label, answer, docs in _cases():
        judged = _verdicts(answer, docs)

        def checked(
            answer: str = answer,
            docs: list[str] = docs,
            judged: dict[int, list[JudgedClaim]] = judged,
        ) -> GroundednessResult:
            return score_units(
                segment_answer(answer), judged, docs, INFO, suspect=suspect_documents(docs)
            )

        def quote_only(
            docs: list[str] = docs, judged: dict[int, list[JudgedClaim]] = judged
        ) -> list[bool]:
            return [quote_found(c.evidence, docs) for cs in judged.values() for c in cs]

        result = checked()
        assert result.score == 1.0, (label, result.to_dict())  # honest verdicts: no downgrade
        base = _time(quote_only, rounds, True)
        cold = _time(checked, rounds, True)
        warm = _time(checked, rounds, False)
        rows.append(
            f"| {label} | {base * 1e3:.2f} ms | {cold * 1e3:.2f} ms | {warm * 1e3:.2f} ms |"
        )
        print(
            label,
            f"quote only {base * 1e3:.2f} ms, cold {cold * 1e3:.2f} ms, warm {warm * 1e3:.2f} ms",
        )
    write_section(
        "groundedness-checks",
        "\n".join(
            [
                "## Groundedness checks (`bench/bench_groundedness_checks.py`)",
                "",
                (
                    "CPU time per judged answer of the code-side checks (segmenting, injection scan, evidence, "
                    "unit and coverage checks, scoring over units), the judge's verdicts fixed; against the "
                    "quote check alone (one `quote_found` per claim, what verification cost before). Best of "
                    f"{rounds} rounds; {machine_line()}."
                ),
                "",
                "| answer | quote check only | all checks, cold caches | all checks, warm |",
                "|---|---|---|---|",
                *rows,
                "",
                (
                    "Goal: a few milliseconds at most, cold — noise next to a judge call (about a second or "
                    "more against the real API). Warm is the common case in a consumer: retrieved passages "
                    "recur, and their normalised text, content words and injection scan are cached "
                    "(bounded LRU caches of 1,024–4,096 entries)."
                ),
            ]
        ),
    )


if __name__ == "__main__":
    main("--quick" in sys.argv)
