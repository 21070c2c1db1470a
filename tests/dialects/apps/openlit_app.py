"""An app traced by OpenLIT (``openlit.init``): the real ``openai`` client against a wire-level
fake, instrumented by OpenLIT; the retrieval is the user's own function with ragtrace's one-line
fix, ``@ragtrace.retrieve`` (OpenLIT's vector-database spans record the query, collection and
row count, never the documents' IDs or texts).

``python -m tests.dialects.apps.openlit_app ENDPOINT``. OpenLIT pins ``anthropic<1``, which the
project's venv does not hold: it runs in its own (scripts/openlit_venv.sh).
"""

from __future__ import annotations

import sys

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import TraceIds, ask_all
from tests.fakes.openai_server import FakeOpenAI


def main(endpoint: str) -> None:
    import openai
    import openlit
    from opentelemetry import trace

    import ragtrace

    openlit.init(
        otlp_endpoint=endpoint, service_name="openlit-app", disable_batch=True, disable_metrics=True
    )
    tp = trace.get_tracer_provider()
    ids = TraceIds()
    tp.add_span_processor(ids)  # type: ignore[attr-defined]

    with FakeOpenAI(corpus.fake_reply) as api:
        client = openai.OpenAI(base_url=api.base_url, api_key="test-key", max_retries=0)

        @ragtrace.retrieve
        def search(question: str) -> list[dict[str, object]]:
            return [
                {"id": d, "text": corpus.PASSAGES[d], "score": s}
                for d, s in zip(corpus.RETRIEVED[question], corpus.SCORES, strict=False)
            ]

        tracer = tp.get_tracer("openlit-app")

        def ask(question: str) -> str:
            with tracer.start_as_current_span("POST /chat"):
                docs = search(question)
                context = "\n".join(str(d["text"]) for d in docs)
                return corpus.ask_model(client, question, context)

        ask_all(corpus.QUESTIONS, ask, ids, tp.force_flush)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1])
