"""A hand-written RAG app traced with the Langfuse SDK (v3+, OpenTelemetry-based): a root
span, a ``retriever`` observation and a ``generation`` observation, on a ``TracerProvider``
that also exports to the evaluator (``Langfuse(tracer_provider=...)``).

``python -m tests.dialects.apps.langfuse_app ENDPOINT``. There is no Langfuse server here, so
Langfuse's own exporter is told to send nothing (``should_export_span``).
"""

from __future__ import annotations

import sys

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider


def main(endpoint: str) -> None:
    from langfuse import Langfuse

    tp, ids = provider(endpoint, "langfuse-app")
    langfuse = Langfuse(
        public_key="pk-lf-test",
        secret_key="sk-lf-test",
        host="http://127.0.0.1:9",
        tracer_provider=tp,
        should_export_span=lambda span: False,
    )

    def ask(question: str) -> str:
        with langfuse.start_as_current_observation(
            as_type="span", name="rag", input=question
        ) as root:
            with langfuse.start_as_current_observation(
                as_type="retriever", name="search", input={"query": question}
            ) as r:
                docs = [
                    {"id": d, "content": corpus.PASSAGES[d], "score": s}
                    for d, s in zip(corpus.RETRIEVED[question], corpus.SCORES, strict=False)
                ]
                r.update(output=docs)
            with langfuse.start_as_current_observation(
                as_type="generation",
                name="llm",
                model="fake-llm",
                input=[{"role": "user", "content": question}],
            ) as g:
                answer = corpus.ANSWERS[question]
                g.update(output={"role": "assistant", "content": answer})
            root.update(output=answer)
        return answer

    ask_all(corpus.QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(sys.argv[1])
