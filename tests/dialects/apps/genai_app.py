"""An app on the OpenTelemetry GenAI conventions: its own request span (where it calls
``ragtrace.set_question_id()``, outside any ragtrace decorator), a retrieval span it records
itself with ``gen_ai.operation.name=retrieval`` / ``gen_ai.retrieval.documents``, and the real
``openai`` client against a wire-level fake, traced by opentelemetry-instrumentation-openai-v2
(latest experimental conventions; content on the span, or as log events to ``/v1/logs``).

``python -m tests.dialects.apps.genai_app ENDPOINT [BACKEND]``: with BACKEND, spans are also
exported there (a trace backend beside the evaluator). The retrieval query is the question with
a prefix, so the label can only match by the question ID set on the app's own span. With
``GENAI_IDS_ONLY=1`` the retrieval span carries document IDs and scores only (the conventions
make content opt-in): the context is then only in the chat's input messages.
"""

from __future__ import annotations

import json
import os
import sys

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.openai_server import FakeOpenAI

QUERY_PREFIX = "user asks: "
QIDS = {str(item["question"]): str(item["qid"]) for item in corpus.LABELS}


def main(endpoint: str, backend: str | None = None) -> None:
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    import ragtrace

    ids_only = os.environ.get("GENAI_IDS_ONLY") == "1"
    tp, ids = provider(endpoint, "genai-app")
    if backend is not None:
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        from tests.dialects.apps._harness import exporter

        tp.add_span_processor(SimpleSpanProcessor(exporter(backend)))
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    # Content sent as log events (event_only mode) goes to the evaluator's /v1/logs.
    lp = LoggerProvider(resource=tp.resource)
    lp.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(endpoint=endpoint.rstrip("/") + "/v1/logs"))
    )
    instrumentor = OpenAIInstrumentor()  # type: ignore[no-untyped-call]  # untyped upstream
    instrumentor.instrument(tracer_provider=tp, logger_provider=lp)
    tracer = tp.get_tracer("support-app")

    with FakeOpenAI(corpus.fake_reply) as api:
        client = openai.OpenAI(base_url=api.base_url, api_key="test-key", max_retries=0)

        def ask(question: str) -> str:
            with tracer.start_as_current_span("POST /chat"):
                if question in QIDS:
                    assert ragtrace.set_question_id(QIDS[question])
                docs = corpus.RETRIEVED[question]
                with tracer.start_as_current_span("retrieval corpus") as span:
                    span.set_attribute("gen_ai.operation.name", "retrieval")
                    span.set_attribute("gen_ai.retrieval.query.text", QUERY_PREFIX + question)
                    span.set_attribute(
                        "gen_ai.retrieval.documents",
                        json.dumps(
                            [
                                {"id": d, "score": s}
                                if ids_only
                                else {"id": d, "score": s, "content": corpus.PASSAGES[d]}
                                for d, s in zip(docs, corpus.SCORES, strict=False)
                            ]
                        ),
                    )
                context = "\n".join(corpus.PASSAGES[d] for d in docs)
                return corpus.ask_model(client, question, context)

        ask_all(corpus.QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(*sys.argv[1:3])
