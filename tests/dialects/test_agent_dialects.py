"""Agents whose retrieval is a tool call, through the real OpenAI Agents SDK and LangGraph with
their OpenInference instrumentors (in the agents venv, scripts/agents_venv.sh), a wire-level
fake model scripting the tool calls, and the agent labels (:mod:`tests.dialects.apps.agent_corpus`).

What they emit (openai-agents 0.24 + openinference-instrumentation-openai-agents 2.6;
langgraph 1.2 + langchain-openai 1.8 + openinference-instrumentation-langchain 0.1.80):

* Agents SDK: a root ``Agent workflow`` AGENT span (no input), an ``Agent workflow`` CHAIN, the
  agent's AGENT span, one ``turn`` CHAIN per model call holding a ``response`` (Responses API)
  or ``generation`` (Chat Completions) LLM span and the ``search`` TOOL spans it asked for. A
  TOOL span has ``tool.name``, ``input.value`` the arguments JSON (``{"query": …}``: the
  model's sub-query) and ``output.value`` the tool's return value as JSON. LLM spans carry
  ``llm.input_messages`` (the agent's instructions at index 0 as ``system``, then the
  conversation: earlier turns' messages too, held by an ``SQLiteSession``; tool results as
  ``tool`` messages holding ``str()`` of the return value, a Python repr, not JSON),
  ``llm.output_messages`` (tool calls, or the answer) and ``output.value`` (the Responses
  API's ``Response`` JSON). ``using_session`` puts ``session.id`` on every span.
* LangGraph (``create_react_agent``): a root ``LangGraph`` CHAIN span whose ``input.value`` is
  ``{"messages": [{"role": "user", "content": <question>}]}``, an ``agent`` AGENT span per
  model step (``ChatOpenAI`` LLM span inside) and a ``tools`` CHAIN per tool call around the
  ``search`` TOOL span: ``input.value`` the sub-query as plain text, ``output.value`` the
  serialised ``ToolMessage`` (``{"type": "tool", "data": {"content": …, "artifact": […]}}``),
  the artifact the ``Document``s with their own ``id`` and ``metadata.source`` a file path.
  The checkpointer's ``thread_id`` becomes ``session.id``. With ``create_retriever_tool`` the
  tool returns text only and the retriever's RETRIEVER span inside it records
  ``retrieval.documents`` with content and metadata but no ``document.id``; its
  ``output.value`` (``{"documents": [{"id": …, "page_content": …, "type": "Document"}]}``)
  keeps the ``Document``'s own ``id``.

Asserted per question: the user's question (never the tool's sub-query), each retrieval step's
IDs in rank order, recall@3 over the union of every step's top 3 (first-appearance order),
groundedness on the real answer text, and the cell.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.scored_results import ScoredResult
from tests.dialects.apps import agent_corpus
from tests.dialects.kit import make_evaluator, run_app, scored, venv_python


def _labels(tmp_path: Path) -> Path:
    path = tmp_path / "agent-labels.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in agent_corpus.LABELS), encoding="utf-8")
    return path


@pytest.fixture()
def agent_evaluator(tmp_path: Path) -> Iterator[EmbeddedEvaluator]:
    with make_evaluator(tmp_path, labels=_labels(tmp_path)) as ev:
        yield ev


def _steps(result: ScoredResult) -> list[tuple[str, tuple[str, ...]]]:
    """Each retrieval step's query and ranked IDs, as the result records them."""
    steps = result.extra.get("steps")
    assert isinstance(steps, list), f"no retrieval steps on the result: {result.extra}"
    return [(step["query"], tuple(step["ids"])) for step in steps]


def assert_agent_truth(results: Mapping[str, ScoredResult]) -> None:
    got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
    assert got == {q: agent_corpus.EXPECTED[q] for q in results}
    for q, r in results.items():
        assert r.query == q
        assert r.answer == agent_corpus.ANSWERS[q]
        steps = [(sub, agent_corpus.SEARCHES[sub]) for sub in agent_corpus.PLANS[q]]
        if q in agent_corpus.PARALLEL:  # tools run concurrently: any start order
            assert sorted(_steps(r)) == sorted(steps), q
            assert set(r.retrieved) == set(agent_corpus.retrieved(q))
        else:
            assert _steps(r) == steps, q
            assert r.retrieved == agent_corpus.retrieved(q)


def _ask(
    app: str, ev: EmbeddedEvaluator, *args: str, delay_s: float = 0.0
) -> dict[str, ScoredResult]:
    asked = run_app(
        app,
        ev.endpoint,
        *args,
        env={"AGENT_MODEL_DELAY_S": str(delay_s)},
        python=venv_python("agents_venv.sh"),
    )
    assert [a["question"] for a in asked] == list(agent_corpus.ALL_QUESTIONS)
    return scored(ev, asked)


@pytest.mark.parametrize(
    ("api", "kind"),
    [("responses", "tool"), ("chat_completions", "tool"), ("responses", "retriever")],
)
def test_openai_agents_sdk_search_tool_gets_the_known_truth(
    agent_evaluator: EmbeddedEvaluator, api: str, kind: str
) -> None:
    """``@function_tool`` search returning ``{"id", "content", "score"}`` items: each call is a
    retrieval step, whether the instrumentor records it as a TOOL span (its default) or, with
    ``tool_span_kinds``, as a RETRIEVER span; the answer is the last model call's, judged
    against every step."""
    results = _ask("openai_agents_app", agent_evaluator, api, kind)
    assert_agent_truth(results)
    assert agent_evaluator.skipped_traces() == []


@pytest.mark.parametrize("tool", ["artifact", "retriever"])
def test_langgraph_react_agent_retriever_tool_gets_the_known_truth(
    agent_evaluator: EmbeddedEvaluator, tool: str
) -> None:
    """The ranked ``Document``s are the tool's ``ToolMessage`` artifact, or (with
    ``create_retriever_tool``) the inner retriever span's documents: each ``Document``'s own
    ``id`` is the chunk ID, never its ``metadata.source`` file path; the question is the graph
    input's user message."""
    results = _ask("langgraph_app", agent_evaluator, tool)
    assert_agent_truth(results)
    assert all(not i.startswith("help-centre/") for r in results.values() for i in r.retrieved)
    assert agent_evaluator.skipped_traces() == []


def test_an_agent_slower_than_the_quiet_period_is_scored_on_its_answer(tmp_path: Path) -> None:
    """Each model call takes longer than the quiet period: the tool-call turns do not start it,
    so no trace is scored before its answering call (nor skipped without its answer)."""
    with make_evaluator(tmp_path, labels=_labels(tmp_path), quiet_s=0.3) as ev:
        results = _ask("langgraph_app", ev, "artifact", delay_s=0.6)
        assert {q: r.answer for q, r in results.items()} == {
            q: agent_corpus.ANSWERS[q] for q in agent_corpus.ALL_QUESTIONS
        }
        for q, r in results.items():  # parallel tool calls start in any order
            ordered = q not in agent_corpus.PARALLEL
            assert (r.retrieved if ordered else set(r.retrieved)) == (
                agent_corpus.retrieved(q) if ordered else set(agent_corpus.retrieved(q))
            ), q
        assert ev.skipped_traces() == []
