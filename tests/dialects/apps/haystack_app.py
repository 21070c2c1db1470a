"""A Haystack pipeline traced by OpenInference's Haystack instrumentation: the user's own
retriever component (its documents carry the user's ID in ``meta["doc_id"]``; Haystack gives
each ``Document`` its own ID, a SHA-256 of content and meta), a ``ChatPromptBuilder`` and
Haystack's ``OpenAIChatGenerator`` against a wire-level fake of the OpenAI API.

``python -m tests.dialects.apps.haystack_app ENDPOINT``. Runs on haystack-ai 2.x and 3.x; with
``HAYSTACK_MAJOR`` set, checks that is the major version it runs on.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from typing import Any

from haystack import Document, Pipeline, component

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.openai_server import FakeOpenAI


@component
class CorpusRetriever:
    """The user's own retriever (module level: the instrumentor wraps ``run`` by its path)."""

    @component.output_types(documents=list[Document])
    def run(self, query: str) -> dict[str, Any]:
        return {
            "documents": [
                Document(content=corpus.PASSAGES[d], meta={"doc_id": d}, score=s)
                for d, s in zip(corpus.RETRIEVED[query], corpus.SCORES, strict=False)
            ]
        }


def main(endpoint: str) -> None:
    major = os.environ.get("HAYSTACK_MAJOR")
    assert major is None or version("haystack-ai").startswith(major + "."), version("haystack-ai")
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.utils import Secret
    from openinference.instrumentation.haystack import HaystackInstrumentor

    tp, ids = provider(endpoint, "haystack-app")
    HaystackInstrumentor().instrument(tracer_provider=tp)

    def reply(messages: list[dict[str, object]]) -> str:
        return corpus.ANSWERS[corpus.question_in(str(messages[-1]["content"]))]

    with FakeOpenAI(reply) as api:
        template = [
            ChatMessage.from_system("Answer from the context only."),
            ChatMessage.from_user(
                "Context:\n{% for d in documents %}{{ d.content }}\n{% endfor %}"
                "Question: {{ question }}"
            ),
        ]
        rag = Pipeline()
        rag.add_component("retriever", CorpusRetriever())
        rag.add_component("prompt", ChatPromptBuilder(template=template, required_variables="*"))
        rag.add_component(
            "llm",
            OpenAIChatGenerator(
                api_key=Secret.from_token("test-key"),
                model="gpt-test",
                api_base_url=api.base_url,
                max_retries=0,
            ),
        )
        rag.connect("retriever.documents", "prompt.documents")
        rag.connect("prompt.prompt", "llm.messages")

        def ask(question: str) -> object:
            return rag.run({"retriever": {"query": question}, "prompt": {"question": question}})

        ask_all(corpus.QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(sys.argv[1])
