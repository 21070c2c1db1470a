"""A small RAG app instrumented with the ragtrace SDK, for the online end-to-end tests.

Run as ``python -m tests.e2e.online_app --endpoint URL [--repeat N] [--unique]``: it sends its
spans to the collector's application receiver (``configure(endpoint=...)``), asks every
question in :data:`QUESTIONS` ``N`` times and prints one JSON line per request
(``{"trace_id", "key", "root_span_id"}``), flushing its spans before it exits.

The retriever and the generator are scripted so every score is known in advance:
:data:`EXPECTED` holds them (the fake judge entails exactly the answer sentences that appear
verbatim in the supplied context).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

CORPUS = {
    "c-audit-ent": "Audit log retention on the Enterprise plan is 90 days.",
    "c-audit-del": "Logs older than the retention window are deleted nightly.",
    "c-export": "The /v1/exports endpoint returns a CSV file.",
    "c-sso": "SSO is available on the Team plan.",
    "c-rate": "The API allows 100 requests per minute.",
}


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    retrieved: tuple[str, ...]
    answer: str
    question_id: str | None = None


QUESTIONS: tuple[Question, ...] = (
    # Labelled, matched by text; 1 of 2 gold chunks at rank 2; fully grounded.
    Question(
        "audit",
        "How long are audit logs kept?",
        ("c-sso", "c-audit-ent", "c-rate"),
        "Audit log retention on the Enterprise plan is 90 days.",
    ),
    # Labelled; the gold chunk at rank 1; one of two claims unsupported.
    Question(
        "export",
        "What does the exports endpoint return?",
        ("c-export", "c-rate"),
        "The /v1/exports endpoint returns a CSV file. It can also return Parquet.",
    ),
    # Labelled, matched by the explicit question ID (its text is not the labelled one).
    Question(
        "sso",
        "sso on team?",
        ("c-rate",),
        "The API allows 100 requests per minute.",
        question_id="q-sso",
    ),
    # Unlabelled; same answer and context as "sso": the judge result comes from the cache.
    Question(
        "rate", "What is the rate limit?", ("c-rate",), "The API allows 100 requests per minute."
    ),
    # Unlabelled; nothing supported.
    Question("forever", "Tell me about retention.", ("c-audit-del",), "Logs are kept forever."),
)

LABELS = (
    {
        "qid": "q-audit",
        "question": "How long are audit logs kept?",
        "gold": ["c-audit-ent", "c-audit-del"],
    },
    {"qid": "q-export", "question": "What does the exports endpoint return?", "gold": ["c-export"]},
    {"qid": "q-sso", "question": "Is SSO available on the Team plan?", "gold": ["c-sso"]},
)

# Reference answers the session run's labels carry (online.py): the audit trace is also scored
# for answer relevancy and correctness. The fake judge (online.verbatim_responder) supports an
# answer sentence found verbatim in the reference, covers a reference sentence found verbatim in
# the answer, and calls the question addressed when the answer shares a word with it:
# relevancy 1.0; correctness TP 1, FP 0, FN 1 -> 1 / (1 + 1/2) = 2/3.
REFERENCE_ANSWERS = {
    "q-audit": "Audit log retention on the Enterprise plan is 90 days. "
    "Older logs are deleted nightly."
}
EXPECTED_ANSWER = {"audit": (1.0, 2 / 3)}

# key -> (recall, hit_rate, precision@5, reciprocal_rank, groundedness, cell); None: not scored
EXPECTED: dict[str, tuple[float | None, float | None, float | None, float | None, float, str]] = {
    "audit": (0.5, 1.0, 0.2, 0.5, 1.0, "fine"),
    "export": (1.0, 1.0, 0.2, 1.0, 0.5, "generation_failed"),
    "sso": (0.0, 0.0, 0.0, 0.0, 1.0, "retrieval_failed"),
    "rate": (None, None, None, None, 1.0, "unlabelled"),
    "forever": (None, None, None, None, 0.0, "unlabelled_not_grounded"),
}
MATCHED_BY = {"audit": "query_text", "export": "query_text", "sso": "question_id"}
QUESTION_IDS = {"audit": "q-audit", "export": "q-export", "sso": "q-sso"}
SERVICE = "support-bot"
PIPELINE = "support"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", default=None, help="comma-separated question keys")
    parser.add_argument(
        "--unique",
        action="store_true",
        help="append a request-specific note to each retrieved list, so no two "
        "requests share a judge-cache entry (scores are unchanged except "
        "context relevancy)",
    )
    args = parser.parse_args(argv)

    from opentelemetry import trace

    import ragtrace

    provider = ragtrace.configure(service_name=SERVICE, endpoint=args.endpoint)
    by_key = {q.key: q for q in QUESTIONS}

    counter = iter(range(1, 10**9))

    @ragtrace.retrieve
    def retrieve(query: str, key: str) -> list[dict[str, str]]:
        docs = [{"id": cid, "text": CORPUS[cid]} for cid in by_key[key].retrieved]
        if args.unique:
            n = next(counter)
            docs.append({"id": f"note-{n}", "text": f"Request note {n}."})
        return docs

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, str]], key: str) -> str:
        return by_key[key].answer

    @ragtrace.pipeline(name=PIPELINE)
    def answer(query: str, key: str) -> dict[str, str]:
        q = by_key[key]
        if q.question_id:
            ragtrace.set_question_id(q.question_id)
        generate(query, retrieve(query, key), key)
        ctx = trace.get_current_span().get_span_context()
        return {"trace_id": f"{ctx.trace_id:032x}", "root_span_id": f"{ctx.span_id:016x}"}

    keys = args.only.split(",") if args.only else [q.key for q in QUESTIONS]
    for _ in range(args.repeat):
        for key in keys:
            ids = answer(by_key[key].text, key)
            print(json.dumps({"key": key, **ids}), flush=True)
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
