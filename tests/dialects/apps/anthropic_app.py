"""An app calling Claude through the real ``anthropic`` client, traced by
``opentelemetry-instrumentation-anthropic`` — on PyPI that name is OpenLLMetry's (Traceloop's)
Anthropic instrumentation, the only Anthropic instrumentation published under the
OpenTelemetry name — against the wire-level fake Anthropic API (tests/fakes/anthropic_server.py).

Like :mod:`genai_app`: the app's own request span (where it calls ``ragtrace.set_question_id()``,
outside any ragtrace decorator) and a retrieval span it records itself on the GenAI conventions
(``gen_ai.operation.name=retrieval``, ``gen_ai.retrieval.documents``); the instrumentation's
``anthropic.chat`` span carries the answer. ``python -m tests.dialects.apps.anthropic_app
ENDPOINT``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text_reply

QUERY_PREFIX = "user asks: "
QIDS = {str(item["question"]): str(item["qid"]) for item in corpus.LABELS}
MODEL = "claude-haiku-4-5"


def _reply(request: Mapping[str, Any]) -> Reply:
    content = request["messages"][-1]["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    return text_reply(corpus.ANSWERS[corpus.question_in(text)], model=MODEL)


def main(endpoint: str) -> None:
    import anthropic
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

    import ragtrace

    tp, ids = provider(endpoint, "anthropic-app")
    AnthropicInstrumentor().instrument(tracer_provider=tp)
    tracer = tp.get_tracer("support-app")

    with FakeAnthropic(_reply) as api:
        client = anthropic.Anthropic(base_url=api.base_url, api_key="test-key", max_retries=0)

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
                                {"id": d, "score": s, "content": corpus.PASSAGES[d]}
                                for d, s in zip(docs, corpus.SCORES, strict=False)
                            ]
                        ),
                    )
                context = "\n".join(corpus.PASSAGES[d] for d in docs)
                message = client.messages.create(
                    model=MODEL,
                    max_tokens=256,
                    system="Answer from the context only.",
                    messages=[
                        {"role": "user", "content": f"Context:\n{context}\nQuestion: {question}"}
                    ],
                )
                return "".join(getattr(b, "text", "") for b in message.content)

        ask_all(corpus.QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(sys.argv[1])
