"""``ragtrace serve`` killed (SIGKILL) or stopped (SIGTERM) under steady traffic, then started
again on the same state file: every trace it answered 2xx for is scored, and written back exactly
once (one evaluation span ID per trace and metric at the trace backend).

The sender behaves like an OTLP exporter: it retries a request (connection refused, 503) until it
is answered 2xx, so a trace counts as *accepted* only once serve acknowledged it. The fake
Anthropic judge answers in 0.2 s with 4 scoring threads, slower than the traffic: hundreds of
traces are pending when the process goes down.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.services import OtlpSink
from tests.e2e.chaos import Sender, assert_scored_once
from tests.e2e.online import RAGTRACE, ROOT, verbatim_responder
from tests.fakes.anthropic_server import FakeAnthropic

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(tmp: Path, port: int, judge_url: str, otlp: str, log: Path) -> subprocess.Popen[bytes]:
    config = tmp / "serve.yaml"
    config.write_text(
        "assembly:\n  quiet_s: 0.5\njudge:\n  concurrency: 4\n"
        "  model: claude-haiku-4-5\n  calls_per_minute: 100000\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    env.update(
        {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": judge_url, "PYTHONPATH": str(ROOT)}
    )
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                RAGTRACE,
                "serve",
                "--port",
                str(port),
                "--state",
                str(tmp / "state.sqlite3"),
                "--no-metrics",
                "--judge",
                "anthropic",
                "--config",
                str(config),
                "--otlp-endpoint",
                otlp,
                "--json",
                "--history",
                "0",
            ],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)


def _scored(state: Path) -> set[str]:
    with sqlite3.connect(state, timeout=30) as db:
        return {r[0] for r in db.execute("SELECT trace_id FROM scored")}


def _held(state: Path) -> set[str]:
    with sqlite3.connect(state, timeout=30) as db:
        return {r[0] for r in db.execute("SELECT trace_id FROM traces")}


@pytest.fixture()
def backend() -> Iterator[OtlpSink]:
    with OtlpSink() as sink:
        yield sink


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_serve_restart_under_traffic_scores_every_accepted_trace_once(
    tmp_path: Path, backend: OtlpSink, how: str
) -> None:
    port = _free_port()
    state = tmp_path / "state.sqlite3"
    log = tmp_path / "serve.log"
    with FakeAnthropic(verbatim_responder(delay_s=0.2)) as judge:
        serve = _serve(tmp_path, port, judge.base_url, backend.endpoint, log)
        sender = Sender(f"http://127.0.0.1:{port}/v1/traces")
        sender.start()
        try:
            time.sleep(3.0)
            before = len(sender.accepted)
            if how == "sigkill":
                serve.kill()
                serve.wait(10)
            else:
                serve.send_signal(signal.SIGTERM)
                assert serve.wait(60) == 0, log.read_text()[-3000:]
                # A graceful stop finished or kept every accepted trace.
                kept = _scored(state) | _held(state)
                assert set(sender.accepted) <= kept, set(sender.accepted) - kept
            down_scored = len(_scored(state))
            assert before >= 50 and len(sender.accepted) - down_scored >= 20, (
                before,
                down_scored,
            )  # traces were pending when it went down
            time.sleep(1.0)  # the sender is refused meanwhile and retries
            serve = _serve(tmp_path, port, judge.base_url, backend.endpoint, log)
            time.sleep(2.0)
        finally:
            sender.halt.set()
            sender.join(15)
        accepted = set(sender.accepted)
        try:
            deadline = time.monotonic() + 120
            while not accepted <= _scored(state):
                assert time.monotonic() < deadline, len(accepted - _scored(state))
                assert serve.poll() is None, log.read_text()[-3000:]
                time.sleep(0.2)
            assert_scored_once(backend, accepted, timeout=30)
        finally:
            serve.send_signal(signal.SIGTERM)
            rc = serve.wait(60)
    assert rc == 0, log.read_text()[-3000:]
    assert sender.refused > 0  # it was down while traffic kept coming
    print(
        json.dumps(
            {
                "how": how,
                "accepted": len(accepted),
                "refused_attempts": sender.refused,
                "pending_at_stop": len(accepted) - down_scored,
            }
        )
    )
