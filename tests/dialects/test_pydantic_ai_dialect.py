"""Pydantic AI (its own OpenTelemetry instrumentation, GenAI conventions): RAG as a tool call
and RAG in the system instructions, the real package in the agents venv against a wire-level
fake OpenAI that scripts the tool calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.scored_results import ScoredResult
from tests.dialects.apps import corpus
from tests.dialects.apps.pydantic_ai_app import (
    ANSWERS,
    LABELS,
    RESULTS,
    SUBQUERIES,
    TOOL,
    TURN1,
    TURN2,
    TWO,
)
from tests.dialects.kit import make_evaluator, run_app, scored, venv_python


@pytest.fixture(scope="module")
def agents_python() -> str:
    return venv_python("agents_venv.sh")


def _labels(tmp_path: Path) -> Path:
    labels = tmp_path / "agent-labels.jsonl"
    labels.write_text("".join(json.dumps(q) + "\n" for q in LABELS), encoding="utf-8")
    return labels


@pytest.fixture()
def agent_evaluator(tmp_path: Path) -> Iterator[EmbeddedEvaluator]:
    with make_evaluator(tmp_path, labels=_labels(tmp_path)) as ev:
        yield ev


def _steps(r: ScoredResult) -> list[tuple[str | None, str | None, list[str]]]:
    steps = r.extra.get("steps")
    assert isinstance(steps, list)
    return [(s["tool"], s["query"], s["ids"]) for s in steps]


# question -> (question id, recall@3, groundedness, cell)
EXPECTED = {
    **corpus.EXPECTED,
    TWO: ("q-two", 1.0, 1.0, "fine"),
    TURN1: ("q-team", 1.0, 1.0, "fine"),
    TURN2: (None, None, 1.0, "unlabelled"),
}


def test_retrieval_as_a_tool_call_is_read_step_by_step(
    agents_python: str, agent_evaluator: EmbeddedEvaluator
) -> None:
    asked = run_app("pydantic_ai_app", agent_evaluator.endpoint, "tools", python=agents_python)
    results = scored(agent_evaluator, asked)
    got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
    assert got == EXPECTED
    for q, r in results.items():
        # the user's question, not the model's sub-query
        assert r.query == q
        if q == TURN2:
            continue
        steps = [(TOOL, sub, list(RESULTS[sub])) for sub in SUBQUERIES[q]]
        assert _steps(r) == steps
        assert r.retrieved == tuple(dict.fromkeys(i for _, _, ids in steps for i in ids))
        assert r.extra["context_sources"] == ["tool_result"]
    for q in corpus.QUESTIONS:
        assert results[q].answer == corpus.ANSWERS[q]
    two = results[TWO]
    # Pooled top 3: the regions passage, rank 2 of the second search, is found; the first 3 of
    # the joined lists (audit, pricing, dark) would have missed it. Each step's own recall too.
    assert two.retrieved == ("doc-audit", "doc-pricing", "doc-dark", "doc-regions")
    assert two.extra["step_recall"] == [0.5, 0.5]
    assert two.answer == (
        "Audit logs are kept for 90 days. Workspace data can be hosted in the EU or the US."
    )
    # The second turn searched nothing: it answers from the first turn's search results,
    # which the model was given again as tool results in its input messages.
    second = results[TURN2]
    assert second.retrieved == () and "steps" not in second.extra
    assert second.extra["context_sources"] == ["tool_result"]
    assert second.answer == "Yes: the Team plan costs 20 dollars per seat."


def test_context_in_the_system_instructions_is_judged(
    agents_python: str, evaluator: EmbeddedEvaluator
) -> None:
    """The app retrieves itself (IDs only on its GenAI retrieval span) and puts the passages
    in the agent's instructions: the answer is judged against ``gen_ai.system_instructions``
    (its instruction sentence left out), so a faithful answer is grounded and each question
    lands in its right cell."""
    asked = run_app("pydantic_ai_app", evaluator.endpoint, "system", python=agents_python)
    results = scored(evaluator, asked)
    got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
    assert got == corpus.EXPECTED
    for q, r in results.items():
        assert r.query == q
        assert r.retrieved == corpus.RETRIEVED[q]
        assert r.answer == corpus.ANSWERS[q]
        assert _steps(r) == [(None, q, list(corpus.RETRIEVED[q]))]
        assert r.extra["context_sources"] == ["generation_input", "system_instructions"]


def test_an_agent_slower_than_the_quiet_period_is_scored_on_its_answer(
    agents_python: str, tmp_path: Path
) -> None:
    """Each model call takes longer than the quiet period: Pydantic AI's tool-call turns
    (``gen_ai.response.finish_reasons`` ``tool_call``) do not start it, so every trace is
    scored on its answering call, with all its searches, and none is skipped."""
    with make_evaluator(tmp_path, labels=_labels(tmp_path), quiet_s=0.3) as ev:
        asked = run_app(
            "pydantic_ai_app",
            ev.endpoint,
            "tools",
            env={"AGENT_MODEL_DELAY_S": "0.6"},
            python=agents_python,
        )
        results = scored(ev, asked)
        got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
        assert got == EXPECTED
        assert {q: r.answer for q, r in results.items()} == {q: ANSWERS[q] for q in results}
        for q, r in results.items():
            if q != TURN2:
                assert [sub for _, sub, _ in _steps(r)] == list(SUBQUERIES[q]), q
        assert ev.skipped_traces() == []
