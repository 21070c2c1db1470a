"""``ragtrace serve`` as a child process: spans from the SDK in another process are scored and
printed, Prometheus /metrics carries the groundedness histogram, SIGTERM stops it cleanly, and a
restart on the same state file shows what was scored before."""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import IO

import pytest

from ragtrace.evaluation.judges.answer_metrics import token_f1
from tests.unit.consumers.demo_client import CLI, QUESTIONS, clean_env, run_app

LABELS = str(resources.files("ragtrace_consumers.demo").joinpath("labels.jsonl"))
REFERENCE = "Audit logs are kept for 90 days on the Enterprise plan and 30 days on the Team plan."


class Serve:
    """A running ``ragtrace serve --json``; lines of stdout and stderr arrive on queues."""

    def __init__(
        self, state: Path, json_args: tuple[str, ...] = ("--json",), labels: str = LABELS
    ) -> None:
        self.proc = subprocess.Popen(
            [
                *CLI,
                "serve",
                "--port",
                "0",
                "--metrics-port",
                "0",
                "--labels",
                labels,
                "--state",
                str(state),
                "--judge",
                "lexical",
                *json_args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        self.out: queue.Queue[str] = queue.Queue()
        self.err: queue.Queue[str] = queue.Queue()
        self.err_lines: list[str] = []
        for stream, q in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, q), daemon=True).start()

    @staticmethod
    def _pump(stream: IO[str] | None, q: queue.Queue[str]) -> None:
        assert stream is not None
        for line in stream:
            q.put(line.rstrip("\n"))

    def err_line(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.err.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no stderr line matching {pattern!r}; got {self.err_lines}"
                ) from None
            self.err_lines.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def results(self, count: int, timeout: float = 30.0) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        deadline = time.monotonic() + timeout
        while len(rows) < count:
            try:
                rows.append(
                    json.loads(self.out.get(timeout=max(0.01, deadline - time.monotonic())))
                )
            except queue.Empty:
                raise AssertionError(f"{len(rows)} of {count} results printed") from None
        return rows

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


@pytest.fixture()
def serve_factory() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_serve_scores_sdk_spans_serves_metrics_and_restarts_with_its_state(
    tmp_path: Path, serve_factory: list[Serve]
) -> None:
    state = tmp_path / "state.sqlite3"
    serve = Serve(state)
    serve_factory.append(serve)
    endpoint = serve.err_line(r"receiving OTLP/HTTP on (http://127\.0\.0\.1:\d+)/v1/traces")[1]
    assert serve.err_line(r"judge: +(.*)")[1].startswith("lexical (offline")
    assert serve.err_line(r"labels: +(.*)")[1] == f"5 labelled questions from {LABELS}"
    assert serve.err_line(r"state: +(.*)")[1] == str(state)
    metrics_url = serve.err_line(r"metrics: +(http://127\.0\.0\.1:\d+/metrics)")[1]
    assert serve.err_line(r"results: +(.*)")[1] == "kept local (no OTLP endpoint for them)"

    asked = run_app(endpoint)
    rows = serve.results(len(QUESTIONS))
    cells = {str(r["query"]): r["cell"] for r in rows}
    assert cells == {
        QUESTIONS[0]: "retrieval_failed",
        QUESTIONS[1]: "generation_failed",
        QUESTIONS[2]: "fine",
        QUESTIONS[3]: "fine",
        QUESTIONS[4]: "fine",
        QUESTIONS[5]: "unlabelled",
    }
    assert {r["trace_id"] for r in rows} == {a["trace_id"] for a in asked}
    audit = next(r for r in rows if r["query"] == QUESTIONS[0])
    assert (audit["recall"], audit["groundedness"], audit["question_id"], audit["k"]) == (
        0.0,
        1.0,
        "q-audit-team",
        3,
    )  # the k the demo app's @ragtrace.retrieve(top_k=3) declares, not scoring.k = 5

    scrape = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    count = [
        line for line in scrape.splitlines() if line.startswith("ragtrace_groundedness_count{")
    ]
    assert len(count) == 1 and count[0].endswith(" 6.0"), count
    assert 'le="0.5"' in scrape and "ragtrace_groundedness_bucket{" in scrape

    assert serve.terminate() == 0
    serve.err_line(r"ragtrace serve: stopping")

    again = Serve(state)
    serve_factory.append(again)
    again.err_line(r"receiving OTLP/HTTP on")
    again.err_line(r"6 traces scored earlier; the last 6:")
    history = again.results(6)
    assert [r["trace_id"] for r in history] == [r["trace_id"] for r in rows]
    assert again.terminate() == 0


def test_serve_rejects_a_bad_labels_file(tmp_path: Path) -> None:
    bad = tmp_path / "labels.jsonl"
    bad.write_text('{"qid": "q1", "question": "x"}\n')
    done = subprocess.run(
        [
            *CLI,
            "serve",
            "--port",
            "0",
            "--no-metrics",
            "--labels",
            str(bad),
            "--state",
            str(tmp_path / "s.db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"ragtrace serve: error: {bad}, line 1")


def test_serve_json_to_a_file_keeps_the_text_on_stdout(
    tmp_path: Path, serve_factory: list[Serve]
) -> None:
    """``--json-file PATH``: the scored traces as JSON Lines in PATH, flushed per trace, while the
    banner and the text lines stay on stdout. The audit question's label carries a reference
    answer: its trace is also scored for answer correctness (the lexical judge: token F1)."""
    target = tmp_path / "scored.jsonl"
    labels = tmp_path / "labels.jsonl"
    rows_in = [json.loads(line) for line in Path(LABELS).read_text().splitlines() if line]
    rows_in[0]["reference_answer"] = REFERENCE
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows_in))
    serve = Serve(
        tmp_path / "state.sqlite3", json_args=("--json-file", str(target)), labels=str(labels)
    )
    serve_factory.append(serve)
    lines: list[str] = []
    endpoint = None
    deadline = time.monotonic() + 30
    while endpoint is None:
        lines.append(serve.out.get(timeout=max(0.01, deadline - time.monotonic())))
        found = re.search(r"receiving OTLP/HTTP on (http://127\.0\.0\.1:\d+)/v1/traces", lines[-1])
        endpoint = found[1] if found else None
    asked = run_app(endpoint, QUESTIONS[:2])
    texts: list[str] = []
    while len(texts) < 2:
        line = serve.out.get(timeout=max(0.01, deadline + 30 - time.monotonic()))
        if line.startswith("trace "):
            texts.append(line)
    rows = [json.loads(line) for line in target.read_text().splitlines()]  # flushed per trace
    assert {r["trace_id"] for r in rows} == {a["trace_id"] for a in asked}
    assert {t.split()[1] for t in texts} == {a["trace_id"] for a in asked}
    audit = next(r for r in rows if r["question_id"] == rows_in[0]["qid"])
    extra = audit["extra"]
    assert extra["answer_question_id"] == rows_in[0]["qid"]
    assert extra["answer_correctness"] == token_f1(str(audit["answer"]), REFERENCE) > 0
    assert "answer_relevancy" not in extra  # needs a model judge
    other = next(r for r in rows if r is not audit)
    assert "answer_correctness" not in other["extra"]  # its label has no reference answer
    assert any("answer_correctness=" in t for t in texts)
    assert serve.terminate() == 0
