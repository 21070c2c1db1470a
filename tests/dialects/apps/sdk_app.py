"""The corpus app traced by ragtrace's own decorators (OpenInference documents on the
retriever), its spans sent to the evaluator and to a second backend (Phoenix).

``python -m tests.dialects.apps.sdk_app ENDPOINT BACKEND``.
"""

from __future__ import annotations

import sys


def main(endpoint: str, backend: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import ragtrace
    from tests.dialects.apps import corpus
    from tests.dialects.apps._harness import ask_all, exporter, provider

    tp, ids = provider(endpoint, "sdk-app")
    tp.add_span_processor(SimpleSpanProcessor(exporter(backend)))
    trace.set_tracer_provider(tp)

    @ragtrace.retrieve(data_source="corpus")
    def search(query: str) -> list[dict[str, object]]:
        docs = corpus.RETRIEVED[query]
        return [
            {"id": d, "text": corpus.PASSAGES[d], "score": s}
            for d, s in zip(docs, corpus.SCORES, strict=False)
        ]

    @ragtrace.generate(model="gpt-test", provider="openai")
    def answer(query: str, context: list[dict[str, object]]) -> str:
        return corpus.ANSWERS[query]

    @ragtrace.pipeline(name="support")
    def ask(query: str) -> str:
        return answer(query, search(query))

    ask_all(corpus.QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
