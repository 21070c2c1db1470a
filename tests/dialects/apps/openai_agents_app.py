"""An OpenAI Agents SDK agent whose retrieval is a ``@function_tool`` search, traced by
openinference-instrumentation-openai-agents, against a wire-level fake model that scripts the
tool calls (:mod:`tests.dialects.apps.agent_corpus`).

``python -m tests.dialects.apps.openai_agents_app ENDPOINT API [KIND]``; API ``responses`` (the
SDK's default) or ``chat_completions`` (``set_default_openai_api``, as for other providers);
KIND ``tool`` (default: the search is a TOOL span) or ``retriever`` (the instrumentor's
``tool_span_kinds={"search": "RETRIEVER"}``: a RETRIEVER span with ``retrieval.documents``). The
two-turn conversation keeps its history in an ``SQLiteSession`` and carries its ID as
``session.id`` (OpenInference's ``using_session``). Runs in the agents venv
(scripts/agents_venv.sh).
"""

from __future__ import annotations

import sys

from tests.dialects.apps import agent_corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.openai_server import FakeOpenAI


def main(endpoint: str, api: str, kind: str = "tool") -> None:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # type: ignore[import-not-found]

    tp, ids = provider(endpoint, f"openai-agents-{api}")
    kinds = {"search": "RETRIEVER"} if kind == "retriever" else None
    OpenAIAgentsInstrumentor().instrument(tracer_provider=tp, tool_span_kinds=kinds)

    from agents import (  # type: ignore[import-not-found]
        Agent,
        Runner,
        SQLiteSession,
        function_tool,
        set_default_openai_api,
        set_default_openai_client,
    )
    from openai import AsyncOpenAI
    from openinference.instrumentation import using_session

    @function_tool  # type: ignore[untyped-decorator]
    def search(query: str) -> list[dict[str, object]]:
        """Search the help centre; the passages that match ``query``, best first."""
        return agent_corpus.search(query)

    with FakeOpenAI(agent_corpus.agent_reply) as api_server:
        set_default_openai_client(
            AsyncOpenAI(base_url=api_server.base_url, api_key="test-key", max_retries=0),
            use_for_tracing=False,
        )
        set_default_openai_api("responses" if api == "responses" else "chat_completions")
        agent = Agent(
            name="Help centre",
            instructions="Answer from the search results only.",
            tools=[search],
            model="gpt-test",
        )
        session = SQLiteSession(agent_corpus.SESSION)

        def ask(question: str) -> object:
            if question not in agent_corpus.TURNS:
                return Runner.run_sync(agent, question).final_output
            with using_session(agent_corpus.SESSION):
                return Runner.run_sync(agent, question, session=session).final_output

        ask_all(agent_corpus.ALL_QUESTIONS, ask, ids, tp.force_flush)


if __name__ == "__main__":
    main(*sys.argv[1:])
