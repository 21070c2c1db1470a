"""A LangChain RAG chain (retriever returning ``Document``s with metadata IDs → prompt → fake
LLM → parser) traced by openinference-instrumentation-langchain.

``python -m tests.dialects.apps.langchain_app ENDPOINT MODE``; MODE ``llm`` (FakeListLLM),
``chat`` (FakeListChatModel) or ``noids`` (documents without any ID in their metadata).
"""

from __future__ import annotations

import sys
from typing import Any

from openinference.instrumentation.langchain import LangChainInstrumentor

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider


def main(endpoint: str, mode: str) -> None:
    tp, ids = provider(endpoint, f"langchain-{mode}")
    LangChainInstrumentor().instrument(tracer_provider=tp)

    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models import FakeListChatModel, FakeListLLM
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough

    class CorpusRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(
                    page_content=corpus.PASSAGES[d],
                    metadata={} if mode == "noids" else {"id": d, "source": "kb"},
                )
                for d in corpus.RETRIEVED[query]
            ]

    answers = [corpus.ANSWERS[q] for q in corpus.QUESTIONS]
    llm: Any = (
        FakeListChatModel(responses=answers) if mode == "chat" else FakeListLLM(responses=answers)
    )
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
    ask_all(corpus.QUESTIONS, chain.invoke, ids, tp.force_flush)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
