"""A LangGraph ReAct agent (``create_react_agent``) whose retrieval is a ``@tool`` returning
documents, traced by openinference-instrumentation-langchain, with ``ChatOpenAI`` against a
wire-level fake model that scripts the tool calls (:mod:`tests.dialects.apps.agent_corpus`).

The tool is the LangChain RAG tutorial's: ``@tool(response_format="content_and_artifact")``
returning the serialised passages for the model and the ``Document``s (``Document.id`` the
vector store's ID, ``metadata["source"]`` the file the passage was split from) as the artifact.
Every question is its own conversation (a checkpointer ``thread_id``); the two turns share one.

``python -m tests.dialects.apps.langgraph_app ENDPOINT [TOOL]``; TOOL ``artifact`` (default, the
tool above) or ``retriever`` (the agentic RAG tutorial's ``create_retriever_tool`` over a
retriever returning the same ``Document``s: the tool returns text only, and the retriever's own
span records each document's content and metadata, not its ``id``). Runs in the agents venv
(scripts/agents_venv.sh).
"""

from __future__ import annotations

import sys
from typing import Any

from tests.dialects.apps import agent_corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.openai_server import FakeOpenAI


def main(endpoint: str, kind: str = "artifact") -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    tp, ids = provider(endpoint, f"langgraph-{kind}")
    LangChainInstrumentor().instrument(tracer_provider=tp)

    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import create_retriever_tool, tool
    from langchain_openai import ChatOpenAI  # type: ignore[import-not-found]
    from langgraph.checkpoint.memory import InMemorySaver  # type: ignore[import-not-found]
    from langgraph.prebuilt import create_react_agent  # type: ignore[import-not-found]

    def documents(query: str) -> list[Any]:
        return [
            Document(
                id=str(item["id"]),
                page_content=str(item["content"]),
                metadata={"source": f"help-centre/{str(item['id'])[4:]}.md"},
            )
            for item in agent_corpus.search(query)
        ]

    class HelpCentre(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Any]:
            return documents(query)

    @tool(response_format="content_and_artifact")
    def search(query: str) -> tuple[str, list[Any]]:
        """Search the help centre for passages about the query."""
        docs = documents(query)
        serialized = "\n\n".join(
            f"Source: {doc.metadata}\nContent: {doc.page_content}" for doc in docs
        )
        return serialized, docs

    with FakeOpenAI(agent_corpus.agent_reply) as api:
        model = ChatOpenAI(
            model="gpt-test", base_url=api.base_url, api_key="test-key", max_retries=0
        )
        agent: Any = create_react_agent(
            model,
            tools=[
                search
                if kind == "artifact"
                else create_retriever_tool(
                    HelpCentre(), "search", "Search the help centre for passages."
                )
            ],
            prompt="Answer from the search results only.",
            checkpointer=InMemorySaver(),
        )

        def ask(question: str) -> str:
            thread = (
                agent_corpus.SESSION
                if question in agent_corpus.TURNS
                else f"thread-{agent_corpus.ALL_QUESTIONS.index(question)}"
            )
            state = agent.invoke(
                {"messages": [{"role": "user", "content": question}]},
                {"configurable": {"thread_id": thread}},
            )
            return str(state["messages"][-1].content)

        ask_all(agent_corpus.ALL_QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(*sys.argv[1:])
