"""MLflow Tracing (``mlflow-tracing`` 3.17, its own OTLP export) through the real package: a
``RETRIEVER`` function returning ``Document``s, ``mlflow.openai.autolog()`` around the real
``openai`` client, the context in the system message, a two-search answer and a two-turn
conversation. The app runs in the agents venv (scripts/agents_venv.sh)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.scored_results import ScoredResult
from tests.dialects.apps import corpus
from tests.dialects.apps.mlflow_app import (
    FOLLOW_UP,
    FOLLOW_UP_RETRIEVED,
    SUB_QUERIES,
    TWO_SEARCH,
    TWO_SEARCH_ANSWER,
    TWO_SEARCH_RETRIEVED,
)
from tests.dialects.kit import make_evaluator, run_app, venv_python

TWO_SEARCH_LABEL = {"qid": "q-two", "question": TWO_SEARCH, "gold": ["doc-audit", "doc-regions"]}


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEvaluator]:
    """The dialect evaluator with the corpus labels and the two-search question's."""
    tmp_path = tmp_path_factory.mktemp("mlflow")
    labels = corpus.write_labels(tmp_path / "mlflow-labels.jsonl")
    with labels.open("a", encoding="utf-8") as f:
        f.write(json.dumps(TWO_SEARCH_LABEL) + "\n")
    with make_evaluator(tmp_path, labels=labels) as ev:
        yield ev


def _results(ev: EmbeddedEvaluator, mode: str) -> list[tuple[str, ScoredResult]]:
    """Each asked question with its result, in the order asked."""
    asked = run_app("mlflow_app", ev.endpoint, mode, python=venv_python("agents_venv.sh"))
    wanted = {a["trace_id"] for a in asked}
    deadline = time.monotonic() + 60
    rows: dict[str, ScoredResult] = {}
    while time.monotonic() < deadline and not wanted <= rows.keys():
        rows = {r.trace_id: r for _, r in ev.state.results.all() if r.trace_id in wanted}
        time.sleep(0.1)
    missing = [a for a in asked if a["trace_id"] not in rows]
    assert not missing, f"not scored: {missing}; skipped: {ev.skipped_traces()}"
    return [(a["question"], rows[a["trace_id"]]) for a in asked]


def _steps(result: ScoredResult) -> list[tuple[str, tuple[str, ...]]]:
    """Each retrieval step's query and ranked IDs, as the result records them."""
    steps = result.extra.get("steps")
    assert isinstance(steps, list), f"no retrieval steps on the result: {result.extra}"
    return [(step["query"], tuple(step["ids"])) for step in steps]


@pytest.fixture(scope="module")
def native(evaluator: EmbeddedEvaluator) -> list[tuple[str, ScoredResult]]:
    results = _results(evaluator, "native")
    assert [q for q, _ in results] == [*corpus.QUESTIONS, TWO_SEARCH, corpus.AUDIT, FOLLOW_UP]
    return results


def test_mlflow_retriever_and_autolog_get_the_known_truth(
    native: list[tuple[str, ScoredResult]],
) -> None:
    """Documents' own ``id`` in rank order; the answer from the OpenAI ``ChatCompletion``; the
    context in the system message."""
    for q, r in native[:4]:
        assert (r.question_id, r.recall, r.groundedness, r.cell) == corpus.EXPECTED[q], q
        assert r.query == q
        assert r.retrieved == corpus.RETRIEVED[q]
        assert _steps(r) == [(q, corpus.RETRIEVED[q])]
        assert r.answer == corpus.ANSWERS[q]


def test_mlflow_two_searches_score_the_users_question_over_both(
    native: list[tuple[str, ScoredResult]],
) -> None:
    """Two RETRIEVER calls with the model's own sub-queries: the question is the root's, recall
    is over the union of both steps' top k in first-appearance order."""
    two = native[4][1]
    assert two.query == TWO_SEARCH
    assert _steps(two) == list(zip(SUB_QUERIES, TWO_SEARCH_RETRIEVED, strict=True))
    assert two.retrieved == ("doc-audit", "doc-pricing", "doc-regions")
    assert (two.question_id, two.recall, two.groundedness, two.cell) == (
        "q-two",
        1.0,
        1.0,
        "fine",
    )
    assert two.answer == TWO_SEARCH_ANSWER


def test_mlflow_follow_up_turn_is_grounded_in_the_earlier_turn(
    native: list[tuple[str, ScoredResult]],
) -> None:
    """The session is the root's ``session.id`` (JSON-encoded by MLflow); the follow-up's own
    search finds nothing on topic, its answer comes from the first turn's passage."""
    (_, turn1), (_, turn2) = native[5:]
    assert (turn1.question_id, turn1.recall, turn1.groundedness, turn1.cell) == corpus.EXPECTED[
        corpus.AUDIT
    ]
    assert turn2.query == FOLLOW_UP
    assert turn2.retrieved == FOLLOW_UP_RETRIEVED
    assert _steps(turn2) == [(FOLLOW_UP, FOLLOW_UP_RETRIEVED)]
    assert turn2.answer == corpus.ANSWERS[corpus.AUDIT]
    assert (turn2.recall, turn2.groundedness, turn2.cell) == (None, 1.0, "unlabelled")


@pytest.fixture(scope="module")
def system_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEvaluator]:
    """An evaluator with ``mapping.system_context`` on: an answer with no retrieval of its own
    is judged against its system message."""
    tmp_path = tmp_path_factory.mktemp("mlflow-genai")
    with make_evaluator(tmp_path, mapping={"system_context": True}) as ev:
        yield ev


def test_mlflow_genai_export_is_skipped_without_context_by_default(
    evaluator: EmbeddedEvaluator,
) -> None:
    """``MLFLOW_ENABLE_OTEL_GENAI_SEMCONV``: no ``mlflow.*`` attributes, and the RETRIEVER span
    leaves with no attributes at all; the context is only in the chat span's
    ``gen_ai.system_instructions``. Unconfigured, that is no evidence: skipped ``no_context``
    with its reason, never judged against nothing."""
    asked = run_app("mlflow_app", evaluator.endpoint, "genai", python=venv_python("agents_venv.sh"))
    wanted = {a["trace_id"] for a in asked[:4]}
    deadline = time.monotonic() + 60
    skipped: dict[str, str] = {}
    while time.monotonic() < deadline and not wanted <= skipped.keys():
        skipped = {s.trace_id: s.reason for s in evaluator.skipped_traces()}
        time.sleep(0.1)
    assert {t: skipped.get(t) for t in wanted} == dict.fromkeys(wanted, "no_context")


def test_mlflow_genai_export_is_grounded_in_its_system_instructions_when_configured(
    system_context: EmbeddedEvaluator,
) -> None:
    """The same export with ``mapping.system_context``: each answer judged against the passages
    in its system instructions (the instructions themselves are no evidence)."""
    results = _results(system_context, "genai")[:4]
    for q, r in results:
        assert r.query == q
        assert r.answer == corpus.ANSWERS[q]
        assert r.retrieved == ()
        assert r.extra["context_sources"] == ["system_instructions"]
        assert r.groundedness == corpus.EXPECTED[q][2], q
