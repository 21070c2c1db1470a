"""A RAG app written the way Traceloop's docs show: the user's own functions decorated with
``@workflow`` and ``@task`` (the retriever a task named ``retrieve``, returning a list of
``{id, text, score}``), the generation calling the real ``openai`` client (wire-level fake)
through OpenLLMetry's OpenAI instrumentation, which ``Traceloop.init`` turns on.

``python -m tests.dialects.apps.traceloop_decorators_app ENDPOINT``.
"""

from __future__ import annotations

import sys

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import TraceIds, ask_all, exporter
from tests.fakes.openai_server import FakeOpenAI


def main(endpoint: str) -> None:
    import openai
    from opentelemetry import trace
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import task, workflow
    from traceloop.sdk.instruments import Instruments

    ids = TraceIds()
    Traceloop.init(
        app_name="traceloop-decorators-app",
        exporter=exporter(endpoint),
        disable_batch=True,
        telemetry_enabled=False,
        instruments={Instruments.OPENAI},  # only what the app uses: import time
    )
    provider = trace.get_tracer_provider()
    provider.add_span_processor(ids)  # type: ignore[attr-defined]

    with FakeOpenAI(corpus.fake_reply) as api:
        client = openai.OpenAI(base_url=api.base_url, api_key="test-key", max_retries=0)

        @task(name="retrieve")
        def retrieve(question: str) -> list[dict[str, object]]:
            return [
                {"id": d, "text": corpus.PASSAGES[d], "score": s}
                for d, s in zip(corpus.RETRIEVED[question], corpus.SCORES, strict=False)
            ]

        @workflow(name="support_rag")
        def rag(question: str) -> str:
            docs = retrieve(question)
            context = "\n".join(str(d["text"]) for d in docs)
            return corpus.ask_model(client, question, context)

        ask_all(corpus.QUESTIONS, rag, ids, provider.force_flush)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1])
