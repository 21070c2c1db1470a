"""Shared by the dialect tests: a real instrumentor drives a real framework app (fake LLM) in a child
process, exporting over OTLP/HTTP to an embedded evaluator (``ragtrace serve``'s engine) in
this process; the scores of labelled traces with known truth are asserted exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from ragtrace.evaluation.judges import LexicalJudge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.scored_results import ScoredResult
from tests.dialects.apps import corpus

ROOT = Path(__file__).resolve().parents[2]


def run_app(
    module: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
    python: str = sys.executable,
) -> list[dict[str, str]]:
    """Run ``tests.dialects.apps.<module>`` with ``args`` (under ``python``: another venv's
    interpreter for a framework version the project's venv does not hold); what it printed
    (its last line)."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("OTEL_", "RAGTRACE_", "ANTHROPIC_", "OPENAI_", "TRACELOOP_", "LANGFUSE_")
        )
    }
    clean.update({"PYTHONPATH": str(ROOT), **(env or {})})
    return run_printing(
        [python, "-m", f"tests.dialects.apps.{module}", *args], env=clean, timeout=timeout
    )


def run_printing(
    argv: list[str], *, env: Mapping[str, str], timeout: float, cwd: Path = ROOT
) -> list[dict[str, str]]:
    """Run an app's command line; the JSON list it printed last (which trace each question
    became)."""
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env),
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def venv_python(script: str) -> str:
    """The interpreter of a framework's own cached venv (made on first use by
    ``scripts/<script>``)."""
    venv = subprocess.run(
        [str(ROOT / "scripts" / script)],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    ).stdout.strip()
    return f"{venv}/bin/python"


def make_evaluator(
    tmp_path: Path,
    otlp_endpoint: str | None = None,
    mapping: Mapping[str, object] | None = None,
    phoenix_endpoint: str | None = None,
    quiet_s: float = 0.2,
    **settings: object,
) -> EmbeddedEvaluator:
    """``ragtrace serve``'s engine on a free loopback port: the corpus labels, k=3, the lexical
    judge; evaluation spans to ``otlp_endpoint`` when given; ``quiet_s`` the assembly's quiet
    period (``settings`` are serve's: ``labels=`` another labels file)."""
    labels = corpus.write_labels(tmp_path / "labels.jsonl")
    config = ConsumerConfig.defaults().replace(
        scoring={"k": 3},
        assembly={"quiet_s": quiet_s},
        export={"metrics_interval_s": 3600},
        mapping=mapping or {},
        # write-back retried soon (Phoenix stores
        # spans asynchronously)
        judge={"park_backoff_s": 0.5, "park_backoff_max_s": 1.0},
        serve={
            "port": 0,
            "state": tmp_path / "state.db",
            "labels": labels,
            "metrics": False,
            "otlp_endpoint": otlp_endpoint,
            "phoenix_url": phoenix_endpoint,
            **settings,
        },
    )
    return EmbeddedEvaluator(config, judge=LexicalJudge())


def scored(ev: EmbeddedEvaluator, asked: list[dict[str, str]]) -> dict[str, ScoredResult]:
    """The evaluator's result for each asked question, by question."""
    rows = {r.trace_id: r for r in ev.wait_for_results(len(asked), timeout_s=60)}
    missing = [a for a in asked if a["trace_id"] not in rows]
    assert not missing, f"not scored: {missing}; scored: {list(rows)}"
    return {a["question"]: rows[a["trace_id"]] for a in asked}


def assert_known_truth(results: Mapping[str, ScoredResult], *, query_prefix: str = "") -> None:
    """Every question got exactly its expected question ID, recall@3, groundedness and cell."""
    got = {q: (r.question_id, r.recall, r.groundedness, r.cell) for q, r in results.items()}
    assert got == corpus.EXPECTED
    for q, r in results.items():
        assert r.query == query_prefix + q
        assert r.retrieved == corpus.RETRIEVED[q]
        assert r.answer == corpus.ANSWERS[q]
