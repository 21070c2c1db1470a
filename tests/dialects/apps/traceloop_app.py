"""The LangChain chain of :mod:`langchain_app` traced by OpenLLMetry: ``Traceloop.init`` with
an OTLP exporter to the evaluator, and traceloop's LangChain instrumentation.

``python -m tests.dialects.apps.traceloop_app ENDPOINT``. Traceloop enables its LangChain
instrumentation only when the ``langchain`` meta-package is installed; with ``langchain-core``
alone the app instruments it explicitly, which is what Traceloop's docs show for that case.
"""

from __future__ import annotations

import sys

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import TraceIds, ask_all, exporter


def main(endpoint: str) -> None:
    from opentelemetry import trace
    from traceloop.sdk import Traceloop

    ids = TraceIds()
    Traceloop.init(
        app_name="traceloop-app",
        exporter=exporter(endpoint),
        disable_batch=True,
        telemetry_enabled=False,
        processor=None,
    )
    provider = trace.get_tracer_provider()
    provider.add_span_processor(ids)  # type: ignore[attr-defined]
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    LangchainInstrumentor().instrument()

    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough

    class CorpusRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(page_content=corpus.PASSAGES[d], metadata={"doc_id": d})
                for d in corpus.RETRIEVED[query]
            ]

    llm = FakeListChatModel(responses=[corpus.ANSWERS[q] for q in corpus.QUESTIONS])
    prompt = PromptTemplate.from_template(
        "Answer from the context only.\nContext:\n{context}\nQuestion: {question}"
    )
    chain = (
        {
            "context": CorpusRetriever() | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | llm
        | StrOutputParser()
    )
    ask_all(corpus.QUESTIONS, chain.invoke, ids, provider.force_flush)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1])
