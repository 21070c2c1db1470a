"""An app traced by MLflow Tracing (``mlflow-tracing`` 3.x) as its docs show: the retriever
decorated ``@mlflow.trace(span_type=SpanType.RETRIEVER)`` returning ``Document``s (the chunk
ID in ``Document.id``), the app's entry point ``@mlflow.trace``, and ``mlflow.openai.autolog()``
around the real ``openai`` client against a wire-level fake; traces exported over OTLP/HTTP by
MLflow itself (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, protocol ``http/protobuf``).

``python -m tests.dialects.apps.mlflow_app ENDPOINT [MODE]``; MODE ``native`` (MLflow's own
``mlflow.span*`` attributes) or ``genai`` (``MLFLOW_ENABLE_OTEL_GENAI_SEMCONV``: MLflow's
OpenTelemetry GenAI export, the context then in the chat span's ``gen_ai.system_instructions``).
Besides the corpus questions it asks a two-search question (two RETRIEVER calls, the second
with the model's own sub-query) and a two-turn conversation (``mlflow.trace.session``) whose
second turn answers from what the first turn retrieved (its own search finds nothing on topic). The app runs in the agents venv
(scripts/agents_venv.sh): mlflow-tracing is not in the project's.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tests.dialects.apps import corpus
from tests.fakes.openai_server import FakeOpenAI

TWO_SEARCH = "How long are audit logs kept and which regions can workspace data be hosted in?"
# The model's own sub-queries: neither is the user's question.
SUB_QUERIES = ("audit log retention", "workspace data hosting regions")
FOLLOW_UP = "And how long are they kept?"
SESSION = "mlflow-session-1"
FOLLOW_UP_RETRIEVED = ("doc-pricing",)
# The two-search question retrieves the audit passages for the first sub-query, then the
# regions passages for the second.
TWO_SEARCH_RETRIEVED = (("doc-audit", "doc-pricing"), ("doc-regions", "doc-pricing"))
TWO_SEARCH_ANSWER = (
    "Audit logs are kept for 90 days. Workspace data can be hosted in the EU or the US."
)


def _reply(messages: list[dict[str, Any]]) -> str:
    last = str(messages[-1]["content"])
    if TWO_SEARCH in last:
        return TWO_SEARCH_ANSWER
    if FOLLOW_UP in last:
        return corpus.ANSWERS[corpus.AUDIT]
    return corpus.fake_reply(messages)


def main(endpoint: str, mode: str = "native") -> None:
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = endpoint.rstrip("/") + "/v1/traces"
    os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    os.environ["OTEL_SERVICE_NAME"] = "mlflow-app"
    # No tracking server: without a tracking URI mlflow-tracing 3.17 probes for a local
    # ./mlruns store through an import the tracing-only package does not ship (sqlparse).
    os.environ["MLFLOW_TRACKING_URI"] = endpoint
    if mode == "genai":
        os.environ["MLFLOW_ENABLE_OTEL_GENAI_SEMCONV"] = "true"
    import mlflow
    import openai
    from mlflow.entities import Document, SpanType
    from mlflow.tracing.provider import get_bridged_tracer_provider

    mlflow.openai.autolog()

    @mlflow.trace(span_type=SpanType.RETRIEVER)  # type: ignore[untyped-decorator]
    def search(query: str, docs: tuple[str, ...]) -> list[Document]:
        return [
            Document(page_content=corpus.PASSAGES[d], metadata={"score": s}, id=d)
            for d, s in zip(docs, corpus.SCORES, strict=False)
        ]

    def context_of(documents: list[Document]) -> str:
        return "\n".join(f"[{d.id}] {d.page_content}" for d in documents)

    with FakeOpenAI(_reply) as api:
        client = openai.OpenAI(base_url=api.base_url, api_key="test-key", max_retries=0)

        def chat(question: str, context: str, history: tuple[Any, ...] = ()) -> str:
            system = "Answer using only the context below."
            if context:
                system += f"\nContext:\n{context}"
            done = client.chat.completions.create(
                model="gpt-test",
                messages=[
                    {"role": "system", "content": system},
                    *history,
                    {"role": "user", "content": question},
                ],
            )
            return str(done.choices[0].message.content)

        traces: list[str] = []

        def note() -> None:
            """Remember the trace this call became (in OTLP mode MLflow keeps no last trace)."""
            active = mlflow.get_active_trace_id()
            assert active is not None and active.startswith("tr-"), active
            traces.append(active[3:])

        @mlflow.trace  # type: ignore[untyped-decorator]  # untyped outside the agents venv
        def answer(question: str) -> str:
            note()
            return chat(question, context_of(search(question, corpus.RETRIEVED[question])))

        @mlflow.trace  # type: ignore[untyped-decorator]  # untyped outside the agents venv
        def answer_twice(question: str) -> str:
            note()
            first = search(SUB_QUERIES[0], TWO_SEARCH_RETRIEVED[0])
            second = search(SUB_QUERIES[1], TWO_SEARCH_RETRIEVED[1])
            return chat(question, context_of([*first, *second]))

        history: list[dict[str, str]] = []

        @mlflow.trace  # type: ignore[untyped-decorator]  # untyped outside the agents venv
        def converse(question: str) -> str:
            """One turn of a conversation: each retrieves; the follow-up's search finds
            nothing on its topic, and the model answers from the conversation so far."""
            note()
            # MLflow's session metadata is not exported over OTLP (3.17), and a trace tag
            # stops the root span from ending there: the session is the span's own attribute.
            mlflow.update_current_trace(metadata={"mlflow.trace.session": SESSION})
            span = mlflow.get_current_active_span()
            assert span is not None
            span.set_attribute("session.id", SESSION)
            docs = search(question, FOLLOW_UP_RETRIEVED if history else corpus.RETRIEVED[question])
            reply = chat(question, context_of(docs), tuple(history))
            history.extend(
                [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]
            )
            return reply

        out: list[dict[str, str]] = []

        def run(question: str, call: Any) -> None:
            before = len(traces)
            call()
            get_bridged_tracer_provider().force_flush()
            assert len(traces) == before + 1, question
            out.append({"question": question, "trace_id": traces[-1]})

        for q in corpus.QUESTIONS:
            run(q, lambda q=q: answer(q))
        run(TWO_SEARCH, lambda: answer_twice(TWO_SEARCH))
        # Turn 1 retrieves; turn 2 answers from turn 1's context with no retrieval of its own.
        run(corpus.AUDIT, lambda: converse(corpus.AUDIT))
        run(FOLLOW_UP, lambda: converse(FOLLOW_UP))
        print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
