"""A Pydantic AI agent as its users write one: ``Agent(model,
capabilities=[Instrumentation(settings=…)])`` (Pydantic AI 2's form of ``instrument=``; default
instrumentation version, content included) over the real OpenAI chat model against a wire-level fake that scripts the tool calls, exporting OTLP/HTTP.

``python -m tests.dialects.apps.pydantic_ai_app ENDPOINT MODE``:

* ``tools`` — RAG as a tool call: the model calls ``search_docs`` with its own sub-query
  (``SUBQUERIES``), the tool returns ``{"id", "text", "score"}`` documents, the model answers.
  The corpus questions (one per cell), a question answered from two searches (``TWO``) and a
  two-turn conversation (``TURN1``, then ``TURN2`` answered from the first turn's search
  results, with the first run's messages as history).
* ``system`` — the most common RAG prompt: the app retrieves itself (its own GenAI
  ``retrieval`` span, document IDs only) and puts the passages in the agent's instructions
  ("Answer using only the context below. Context: …"); no tool.

Each model reply comes after ``AGENT_MODEL_DELAY_S`` seconds (a real model's latency; 0 unset).

Prints the harness's ``[{"question", "trace_id"}, …]``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from tests.dialects.apps import corpus
from tests.dialects.apps._harness import ask_all, provider
from tests.fakes.openai_server import FakeOpenAI

TWO = "How long are audit logs kept, and where can workspace data be hosted?"
TURN1 = "What does the Team plan cost?"
TURN2 = "Is that price per seat?"
TOOL = "search_docs"

# question -> the sub-queries the model searches with, in order
SUBQUERIES: dict[str, tuple[str, ...]] = {
    **{q: (f"docs about: {q.rstrip('?').lower()}",) for q in corpus.QUESTIONS},
    TWO: ("audit log retention", "workspace data hosting regions"),
    TURN1: ("team plan price",),
}
# sub-query -> the ranked documents the search returns
RESULTS: dict[str, tuple[str, ...]] = {
    **{SUBQUERIES[q][0]: corpus.RETRIEVED[q] for q in corpus.QUESTIONS},
    # Pooled top 3: the regions passage (rank 2 of the second search) counts; the first 3
    # of the two lists joined would stop before it.
    "audit log retention": ("doc-audit", "doc-pricing", "doc-dark"),
    "workspace data hosting regions": ("doc-pricing", "doc-regions"),
    "team plan price": ("doc-pricing", "doc-audit"),
}
ANSWERS = {
    **corpus.ANSWERS,
    TWO: "Audit logs are kept for 90 days. Workspace data can be hosted in the EU or the US.",
    TURN1: "The Team plan costs 20 dollars per seat.",
    TURN2: "Yes: the Team plan costs 20 dollars per seat.",
}
LABELS = (
    *corpus.LABELS,
    {"qid": "q-two", "question": TWO, "gold": ["doc-audit", "doc-regions"]},
    {"qid": "q-team", "question": TURN1, "gold": ["doc-pricing"]},
)
SYSTEM_PROMPT = "Answer using only the context below."


def _question(text: str) -> str:
    for q in (*corpus.QUESTIONS, TWO, TURN1, TURN2):
        if q in text:
            return q
    raise KeyError(text[:200])


def fake_model(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
    """The scripted model: each sub-query of the last user question searched in turn (one
    tool call per response), then the answer."""
    time.sleep(float(os.environ.get("AGENT_MODEL_DELAY_S", "0")))
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    question = _question(str(messages[last]["content"]))
    searched = sum(1 for m in messages[last:] if m["role"] == "tool")
    plan = SUBQUERIES.get(question, ())
    if any(m["role"] == "system" and "Context:" in str(m["content"]) for m in messages):
        plan = ()  # the context is in the instructions: no search
    if searched < len(plan):
        arguments = json.dumps({"query": plan[searched]})
        call = {"name": TOOL, "arguments": arguments}
        return {"tool_calls": [{"id": f"call_{searched}", "type": "function", "function": call}]}
    return ANSWERS[question]


def search_docs(query: str) -> list[dict[str, object]]:
    """Search the documentation; the best passages first."""
    docs = RESULTS[query]
    return [
        {"id": d, "text": corpus.PASSAGES[d], "score": s}
        for d, s in zip(docs, (0.9, 0.5, 0.3), strict=False)
    ]


def _with_context(ctx: Any) -> str:
    """The agent's instructions: the passages the app retrieved (``ctx.deps``) below them."""
    return f"{SYSTEM_PROMPT}\n\nContext:\n{ctx.deps}"


def main(endpoint: str, mode: str) -> None:
    # The agents venv's packages, not the project's: unknown to its type check.
    from pydantic_ai import Agent  # type: ignore[import-not-found]
    from pydantic_ai.capabilities import Instrumentation  # type: ignore[import-not-found]
    from pydantic_ai.models.instrumented import (  # type: ignore[import-not-found]
        InstrumentationSettings,
    )
    from pydantic_ai.models.openai import OpenAIChatModel  # type: ignore[import-not-found]
    from pydantic_ai.providers.openai import OpenAIProvider  # type: ignore[import-not-found]

    tp, ids = provider(endpoint, "pydantic-ai-app")
    instrument = [Instrumentation(settings=InstrumentationSettings(tracer_provider=tp))]
    with FakeOpenAI(fake_model) as api:
        model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(api.base_url, "test-key"))
        if mode == "tools":
            agent = Agent(
                model,
                instructions="Answer from the documentation search results only.",
                tools=[search_docs],
                capabilities=instrument,
            )
            history: list[Any] = []

            def ask(question: str) -> str:
                if question == TURN2:  # the second turn of TURN1's conversation
                    done = agent.run_sync(question, message_history=history)
                else:
                    done = agent.run_sync(question)
                history[:] = done.all_messages()
                return str(done.output)

            ask_all((*corpus.QUESTIONS, TWO, TURN1, TURN2), ask, ids, tp.force_flush)
            return

        tracer = tp.get_tracer("support-app")
        system_agent = Agent(
            model, deps_type=str, instructions=_with_context, capabilities=instrument
        )

        def ask_with_context(question: str) -> str:
            docs = corpus.RETRIEVED[question]
            with tracer.start_as_current_span("POST /chat"):
                with tracer.start_as_current_span("retrieval docs") as span:
                    span.set_attribute("gen_ai.operation.name", "retrieval")
                    span.set_attribute("gen_ai.retrieval.query.text", question)
                    listed = [
                        {"id": d, "score": s} for d, s in zip(docs, corpus.SCORES, strict=False)
                    ]
                    span.set_attribute("gen_ai.retrieval.documents", json.dumps(listed))
                passages = "\n".join(f"[{d}] {corpus.PASSAGES[d]}" for d in docs)
                return str(system_agent.run_sync(question, deps=passages).output)

        ask_all(corpus.QUESTIONS, ask_with_context, ids, tp.force_flush)


if __name__ == "__main__":
    main(*sys.argv[1:3])
