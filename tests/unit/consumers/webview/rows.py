"""Scored rows for the web view's unit tests."""

from __future__ import annotations

from ragtrace_consumers.stores.scored_results import ScoredResult

HOSTILE = '<script>alert("x")</script>'


def result(n: int, cell: str, **kw: object) -> ScoredResult:
    fields: dict[str, object] = {
        "trace_id": f"{n:032x}",
        "scored_at": 1_800_000_000.0 + n,
        "service": "svc-a" if n % 2 else "svc-b",
        "cell": cell,
        "query": f"question {n}?",
        "judge_name": "lexical",
        "k": 3,
        "recall": 1.0,
        "groundedness": 1.0,
    }
    fields.update(kw)
    return ScoredResult(**fields)  # type: ignore[arg-type]


def detail() -> dict[str, object]:
    return {
        "retrieved": [
            {"id": "c-1", "text": "Alpha passage about exports.", "score": 2.0},
            {"id": "c-2", "text": "Beta passage " + HOSTILE, "score": 1.0},
            {"id": "c-3", "text": "Gamma passage.", "score": 0.5},
            {"id": "c-gold", "text": "The gold passage, ranked fourth.", "score": 0.1},
        ],
        "context": [
            {"id": "c-1", "text": "Alpha passage about exports."},
            {"id": "c-2", "text": "Beta passage " + HOSTILE},
        ],
        "gold": ["c-gold", "c-missing"],
        "groundedness": {
            "score": 0.5,
            "judge": {"name": "lexical", "model": None, "prompt_sha256": "a" * 64},
            "units": [
                {"id": 1, "text": "Alpha about exports.", "supported": True},
                {"id": 2, "text": "An invented " + HOSTILE, "supported": False},
            ],
            "claims": [
                {
                    "claim": "Alpha about exports.",
                    "entailed": True,
                    "judge_entailed": True,
                    "evidence": "alpha  passage\nabout exports",
                    "evidence_verified": True,
                    "unit": 1,
                },
                {
                    "claim": "An invented " + HOSTILE,
                    "entailed": False,
                    "judge_entailed": True,
                    "evidence": "Beta passage",
                    "evidence_verified": True,
                    "downgraded": True,
                    "downgrade_reason": "the quote shares none of the claim's key terms",
                    "check": "unrelated",
                    "unit": 2,
                },
            ],
        },
        "span_ids": {"target": "1" * 16, "retrieval": "2" * 16, "generation": "3" * 16},
    }
