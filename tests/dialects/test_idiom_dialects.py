"""Haystack, DSPy and GenAI apps written the way each tool's users write them, each through its
real package with a wire-level fake LLM and the corpus labels."""

from __future__ import annotations

import sys

import pytest

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from tests.dialects.kit import assert_known_truth, run_app, scored, venv_python


@pytest.mark.parametrize("major", ["3", "2"])
def test_haystack_prefers_the_users_document_id_over_its_content_hash(
    evaluator: EmbeddedEvaluator, major: str
) -> None:
    """``document.id`` is Haystack's SHA-256 of content and meta; the user's ``doc_id`` in the
    document's metadata is the ID recall is computed on (haystack-ai 3.x in the project's venv,
    2.x in its own, scripts/haystack2_venv.sh)."""
    python = venv_python("haystack2_venv.sh") if major == "2" else sys.executable
    asked = run_app(
        "haystack_app", evaluator.endpoint, env={"HAYSTACK_MAJOR": major}, python=python
    )
    assert_known_truth(scored(evaluator, asked))


def test_dspy_program_gets_the_known_truth(evaluator: EmbeddedEvaluator) -> None:
    """``Retrieve.forward`` (passage texts) around ``ColBERTv2.__call__`` (passage IDs) is one
    retrieval; the answer is the program's ``response`` field, not the LM's
    ``[[ ## reasoning ## ]] …`` completion (its reasoning would lower groundedness)."""
    asked = run_app("dspy_app", evaluator.endpoint)
    assert_known_truth(scored(evaluator, asked))


def test_openlit_with_the_one_line_retrieval_fix_gets_the_known_truth(
    evaluator: EmbeddedEvaluator,
) -> None:
    """OpenLIT traces the OpenAI call (GenAI conventions); its vector-database spans carry no
    document IDs or texts, so the app's retrieval function wears ``@ragtrace.retrieve`` (the
    documented fix). OpenLIT runs in its own venv (scripts/openlit_venv.sh)."""
    asked = run_app("openlit_app", evaluator.endpoint, python=venv_python("openlit_venv.sh"))
    assert_known_truth(scored(evaluator, asked))
    assert evaluator.skipped_traces() == []
