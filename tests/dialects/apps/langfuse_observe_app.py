"""A RAG app written the way Langfuse's docs show: the user's own functions decorated with
``@observe`` (``as_type="retriever"`` / ``"generation"``, the root plain), the generation
calling the real ``openai`` client against a wire-level fake. Langfuse records each call's
input as ``{"args": [...], "kwargs": {...}}``.

``python -m tests.dialects.apps.langfuse_observe_app ENDPOINT``. There is no Langfuse server
here, so Langfuse's own exporter is told to send nothing (``should_export_span``).
"""

from __future__ import annotations

import sys

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.openai_server import FakeOpenAI


def main(endpoint: str) -> None:
    import openai
    from langfuse import Langfuse, observe

    tp, ids = provider(endpoint, "langfuse-observe-app")
    Langfuse(
        public_key="pk-lf-test",
        secret_key="sk-lf-test",
        host="http://127.0.0.1:9",
        tracer_provider=tp,
        should_export_span=lambda span: False,
    )

    with FakeOpenAI(corpus.fake_reply) as api:
        client = openai.OpenAI(base_url=api.base_url, api_key="test-key", max_retries=0)

        @observe(as_type="retriever")
        def search(question: str, top_k: int = 3) -> list[dict[str, object]]:
            return [
                {"id": d, "content": corpus.PASSAGES[d], "score": s}
                for d, s in zip(corpus.RETRIEVED[question], corpus.SCORES, strict=False)
            ][:top_k]

        @observe(as_type="generation")
        def generate(question: str, docs: list[dict[str, object]]) -> str:
            context = "\n".join(str(d["content"]) for d in docs)
            return corpus.ask_model(client, question, context)

        @observe()
        def answer(question: str) -> str:
            return generate(question, search(question=question))

        ask_all(corpus.QUESTIONS, answer, ids, tp.force_flush)


if __name__ == "__main__":
    main(sys.argv[1])
