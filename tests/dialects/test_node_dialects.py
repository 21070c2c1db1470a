"""TypeScript/JavaScript apps, each in its documented idiom with its real npm packages (pinned,
``scripts/node_deps.sh``), exporting with the standard Node OTLP exporters straight to the
evaluator (chunked requests, no re-framing proxy): LangChain.js with OpenInference JS, and the
Vercel AI SDK 5 and 6 (its own ``ai.*`` spans) and 7 (GenAI-convention spans) with RAG as a tool
call. Fake model at the wire, the corpus labels plus a two-search question's and a follow-up
turn's, k=3, the lexical judge. Each result's retrieval steps (tool, query, IDs in rank order)
are asserted; a follow-up turn whose own search misses is grounded in the passage its session's
first turn retrieved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.scored_results import ScoredResult
from tests.dialects.apps import corpus
from tests.dialects.kit import make_evaluator, scored
from tests.dialects.node_kit import (
    BOTH,
    BOTH_ANSWER,
    FOLLOW_UP,
    FOLLOW_UP_RETRIEVED,
    SESSION,
    SUBQUERIES,
    TURNS,
    run_node,
    write_corpus,
    write_labels,
)

Step = tuple[str | None, str | None, tuple[str, ...]]


@pytest.fixture()
def node_evaluator(tmp_path: Path) -> Iterator[EmbeddedEvaluator]:
    with make_evaluator(tmp_path, labels=write_labels(tmp_path / "node-labels.jsonl")) as ev:
        yield ev


def _steps(r: ScoredResult) -> list[Step]:
    steps = r.extra.get("steps")
    assert isinstance(steps, list)
    return [(s["tool"], s["query"], tuple(s["ids"])) for s in steps]


def _assert_two_turns(
    ev: EmbeddedEvaluator, turns: dict[str, ScoredResult], tool: str | None
) -> None:
    """The first turn is fine; the follow-up's own search misses its gold (recall 0, the turn's
    own) and its answer, copied from the first turn's passage, is grounded by that earlier
    turn's evidence: retrieval failed, not both failed."""
    first, second = turns[corpus.AUDIT], turns[FOLLOW_UP]
    assert (first.question_id, first.recall, first.groundedness, first.cell) == corpus.EXPECTED[
        corpus.AUDIT
    ]
    assert _steps(first) == [(tool, corpus.AUDIT, corpus.RETRIEVED[corpus.AUDIT])]
    assert second.query == FOLLOW_UP
    assert _steps(second) == [(tool, FOLLOW_UP, FOLLOW_UP_RETRIEVED)]
    assert second.retrieved == FOLLOW_UP_RETRIEVED
    assert second.answer == corpus.ANSWERS[corpus.AUDIT]
    assert (second.question_id, second.recall, second.groundedness, second.cell) == (
        "q-follow-up",
        0.0,
        1.0,
        "retrieval_failed",
    )
    detail = ev.state.results.detail(second.trace_id)
    assert detail is not None
    assert detail["session_id"] == SESSION
    assert set(detail["earlier_turn_units"].values()) == {first.trace_id}
    earlier = [c["id"] for c in detail["context"] if c.get("turn") == first.trace_id]
    assert "doc-audit" in earlier


# --- the Vercel AI SDK -------------------------------------------------------------------------

TOOL = "searchDocs"
BOTH_STEPS = {(TOOL, sub, corpus.RETRIEVED[q]) for sub, q in SUBQUERIES.items()}


def _assert_two_searches(r: ScoredResult) -> None:
    """BOTH: the user's question, one step per sub-query, recall@3 over their pooled top 3."""
    # The two searches run concurrently and their spans start in the same millisecond (the
    # SDK's start times have millisecond precision): which step comes first is not recorded;
    # the union in first-appearance order follows the step order.
    steps = _steps(r)
    assert set(steps) == BOTH_STEPS and len(steps) == 2
    assert r.retrieved == tuple(dict.fromkeys(i for _, _, ids in steps for i in ids))
    assert (r.query, r.question_id, r.answer) == (BOTH, "q-both", BOTH_ANSWER)
    assert (r.recall, r.groundedness, r.cell) == (1.0, 1.0, "fine")
    assert r.extra["step_recall"] == [0.5, 0.5]  # each search found one of the two gold IDs


@pytest.mark.parametrize("version", ["5", "6"])
def test_vercel_ai_sdk_tool_call_rag_gets_the_known_truth(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path, version: str
) -> None:
    corpus_file = write_corpus(tmp_path / "corpus.json", corpus.QUESTIONS)
    asked = run_node("vercel_app.mjs", node_evaluator.endpoint, str(corpus_file), version)
    results = scored(node_evaluator, asked)
    got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
    assert got == corpus.EXPECTED
    for q, r in results.items():
        assert r.query == q  # the user's prompt (the tool's query argument is the same here)
        assert _steps(r) == [(TOOL, q, corpus.RETRIEVED[q])]
        assert r.retrieved == corpus.RETRIEVED[q]
        assert r.answer == corpus.ANSWERS[q]


@pytest.mark.parametrize("version", ["5", "6"])
def test_vercel_ai_sdk_two_searches_score_the_users_question_over_both(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path, version: str
) -> None:
    """The model searches twice with its own sub-queries: the question is the user's prompt,
    and recall@3 is over the union of each search's top 3 in first-appearance order (both gold
    IDs, one from each search)."""
    corpus_file = write_corpus(tmp_path / "corpus.json", (BOTH,))
    asked = run_node("vercel_app.mjs", node_evaluator.endpoint, str(corpus_file), version)
    (result,) = scored(node_evaluator, asked).values()
    _assert_two_searches(result)


@pytest.mark.parametrize("version", ["5", "6", "7"])
def test_vercel_ai_sdk_follow_up_turn_is_grounded_in_the_earlier_turn(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path, version: str
) -> None:
    """Two turns of one conversation: its ID from ``experimental_telemetry.metadata.sessionId``
    (5, 6) or ``gen_ai.conversation.id`` (7, set from the call's runtime context)."""
    corpus_file = write_corpus(tmp_path / "corpus.json", TURNS, session=TURNS)
    asked = run_node("vercel_app.mjs", node_evaluator.endpoint, str(corpus_file), version)
    _assert_two_turns(node_evaluator, scored(node_evaluator, asked), TOOL)


def test_vercel_ai_sdk_7_genai_telemetry_gets_the_known_truth(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path
) -> None:
    """``ai`` 7 with ``@ai-sdk/otel``: ``invoke_agent`` / ``chat`` / ``execute_tool`` spans."""
    corpus_file = write_corpus(tmp_path / "corpus.json", (*corpus.QUESTIONS, BOTH))
    asked = run_node("vercel_app.mjs", node_evaluator.endpoint, str(corpus_file), "7")
    results = scored(node_evaluator, asked)
    _assert_two_searches(results.pop(BOTH))
    got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
    assert got == corpus.EXPECTED
    for q, r in results.items():
        assert r.query == q
        assert _steps(r) == [(TOOL, q, corpus.RETRIEVED[q])]
        assert r.answer == corpus.ANSWERS[q]


@pytest.mark.parametrize("version", ["5", "7"])
def test_vercel_ai_sdk_slower_than_the_quiet_period_is_scored_on_its_answers(
    tmp_path: Path, version: str
) -> None:
    """Each model call takes longer than the quiet period and spans are exported as they end
    (``OTEL_BSP_SCHEDULE_DELAY``): the tool-call steps (``ai.response.finishReason`` in 5,
    ``gen_ai.response.finish_reasons`` in 7: ``tool-calls``) do not start it, so every trace
    is scored on its answer, with its searches, and none is skipped."""
    labels = write_labels(tmp_path / "node-labels.jsonl")
    corpus_file = write_corpus(tmp_path / "corpus.json", (*corpus.QUESTIONS, BOTH))
    slow = {"AGENT_MODEL_DELAY_S": "0.6", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    with make_evaluator(tmp_path, labels=labels, quiet_s=0.3) as ev:
        asked = run_node("vercel_app.mjs", ev.endpoint, str(corpus_file), version, env=slow)
        results = scored(ev, asked)
        _assert_two_searches(results.pop(BOTH))
        got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
        assert got == corpus.EXPECTED
        assert {q: r.answer for q, r in results.items()} == corpus.ANSWERS
        assert ev.skipped_traces() == []


# --- LangChain.js + OpenInference JS -----------------------------------------------------------

# A lone passage is followed by the pricing one in the app's vector store (k=2).
LANGCHAIN_RETRIEVED = {**corpus.RETRIEVED, corpus.DARK: ("doc-dark", "doc-pricing")}


def test_langchainjs_chain_gets_the_known_truth_from_document_ids(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path
) -> None:
    """Each chunk's own ``Document.id`` is its chunk ID, never the loader's file path."""
    corpus_file = write_corpus(tmp_path / "corpus.json", corpus.QUESTIONS)
    asked = run_node("langchain_app.mjs", node_evaluator.endpoint, str(corpus_file), "ids")
    results = scored(node_evaluator, asked)
    got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
    assert got == corpus.EXPECTED
    for q, r in results.items():
        assert r.query == q
        assert _steps(r) == [(None, q, LANGCHAIN_RETRIEVED[q])]
        assert r.retrieved == LANGCHAIN_RETRIEVED[q]
        assert r.answer == corpus.ANSWERS[q]


def test_langchainjs_documents_with_only_a_file_path_get_recall_na_not_zero(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path
) -> None:
    """Without ``Document.id`` a chunk has only the loader's ``metadata.source`` (a path shared
    by every chunk of its file): no chunk ID, so recall is n/a with its reason, never a silent
    0.0 and a "retrieval failed" cell for a fine answer."""
    corpus_file = write_corpus(tmp_path / "corpus.json", (corpus.AUDIT,))
    asked = run_node("langchain_app.mjs", node_evaluator.endpoint, str(corpus_file), "noids")
    (result,) = scored(node_evaluator, asked).values()
    assert result.recall is None and result.groundedness == 1.0
    assert all(c.startswith("sha256:") for c in result.retrieved)
    assert not any(c.endswith(".md") for c in result.retrieved)
    assert result.cell != "retrieval_failed"


def test_langchainjs_two_searches_score_the_users_question_over_both(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path
) -> None:
    """A chain running the retriever once per sub-query: the question is the chain's input, one
    step per retriever run (its sub-query, its IDs in rank order), recall@3 over their union."""
    corpus_file = write_corpus(tmp_path / "corpus.json", (BOTH,))
    asked = run_node("langchain_app.mjs", node_evaluator.endpoint, str(corpus_file), "ids")
    (r,) = scored(node_evaluator, asked).values()
    steps = [(None, sub, corpus.RETRIEVED[q]) for sub, q in SUBQUERIES.items()]
    assert _steps(r) == steps
    assert r.retrieved == ("doc-audit", "doc-pricing", "doc-rotate")
    assert (r.query, r.question_id, r.answer) == (BOTH, "q-both", BOTH_ANSWER)
    assert (r.recall, r.groundedness, r.cell) == (1.0, 1.0, "fine")
    assert r.extra["step_recall"] == [0.5, 0.5]


def test_langchainjs_follow_up_turn_is_grounded_in_the_earlier_turn(
    node_evaluator: EmbeddedEvaluator, tmp_path: Path
) -> None:
    """Two turns of one conversation, its ID the runs' ``session_id`` metadata."""
    corpus_file = write_corpus(tmp_path / "corpus.json", TURNS, session=TURNS)
    asked = run_node("langchain_app.mjs", node_evaluator.endpoint, str(corpus_file), "ids")
    _assert_two_turns(node_evaluator, scored(node_evaluator, asked), None)
