"""Soak of ``ragtrace serve``: 50 concurrent clients for a few minutes; RSS must stay flat and no
connection may be reset.

Starts ``ragtrace serve`` (lexical judge, a fresh state file, default bounds) as a subprocess;
50 client threads, each on its own keep-alive connection, post OTLP protobuf requests of 2
complete RAG traces back to back (a refused or reset connection is reconnected and counted).
Every 5 s the server's RSS (``VmRSS``) is sampled. Reports requests answered 200 and 503, resets,
other errors, the RSS series (first sample after a 30 s warm-up, last, highest) and the traces
scored. Writes its section of docs/benchmarks.md.

    python bench/bench_serve_soak.py [--seconds 180] [--clients 50]
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._report import machine_line, write_section
from bench._serve import free_port, rss_kib, start_serve
from tests.e2e.chaos import trace_request

RESETS = (
    ConnectionResetError,
    BrokenPipeError,
    ConnectionRefusedError,
    http.client.RemoteDisconnected,
    ConnectionAbortedError,
)


class Client(threading.Thread):
    def __init__(self, port: int, salt: int, until: float) -> None:
        super().__init__(daemon=True)
        self.port, self.salt, self.until = port, salt, until
        self.ok = self.busy = self.resets = self.errors = 0
        self.traces = 0

    def run(self) -> None:
        conn: http.client.HTTPConnection | None = None
        n = 1
        while time.monotonic() < self.until:
            body, ids = trace_request(n, 2, self.salt)
            n += 2
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request(
                    "POST",
                    "/v1/traces",
                    body=body,
                    headers={"Content-Type": "application/x-protobuf"},
                )
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    self.ok += 1
                    self.traces += len(ids)
                elif resp.status == 503:
                    self.busy += 1
                    time.sleep(float(resp.getheader("Retry-After") or 1))
                else:
                    self.errors += 1
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except RESETS:
                self.resets += 1
                conn = None
            except (OSError, http.client.HTTPException):
                self.errors += 1
                conn = None
        if conn is not None:
            conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--clients", type=int, default=50)
    args = parser.parse_args()
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="ragtrace-soak-"))
    state = tmp / "state.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTRACE_", "ANTHROPIC_"))}
    config = tmp / "serve.yaml"  # no judge budget: every trace is judged (lexical, offline)
    config.write_text("judge:\n  calls_per_minute: 100000000\n  tokens_per_minute: 100000000000\n")
    options = ["--state", str(state), "--config", str(config), "--json", "--history", "0"]
    serve = start_serve(
        port, options, env=env, log=tmp / "serve.log", stdout=subprocess.DEVNULL, timeout_s=30
    )
    try:
        started = time.monotonic()
        until = started + args.seconds
        clients = [Client(port, i + 1, until) for i in range(args.clients)]
        for c in clients:
            c.start()
        samples: list[tuple[float, int]] = []
        while time.monotonic() < until:
            time.sleep(5.0)
            samples.append((time.monotonic() - started, rss_kib(serve.pid)))
        for c in clients:
            c.join(60)
        time.sleep(5.0)
        samples.append((time.monotonic() - started, rss_kib(serve.pid)))
        serve.send_signal(signal.SIGTERM)
        rc = serve.wait(60)
    finally:
        if serve.poll() is None:
            serve.kill()
    with sqlite3.connect(state) as db:
        scored = int(db.execute("SELECT COUNT(*) FROM scored").fetchone()[0])
        held = int(db.execute("SELECT COUNT(*) FROM traces").fetchone()[0])
    ok = sum(c.ok for c in clients)
    busy = sum(c.busy for c in clients)
    resets = sum(c.resets for c in clients)
    errors = sum(c.errors for c in clients)
    accepted = sum(c.traces for c in clients)
    warm = [rss for t, rss in samples if t >= 30] or [rss for _, rss in samples]
    third = max(1, len(warm) // 3)
    early, late = sum(warm[:third]) / third, sum(warm[-third:]) / third
    mib = 1024.0
    print(
        f"{ok} ok, {busy} busy (503), {resets} resets, {errors} errors; accepted {accepted} "
        f"traces, scored {scored}, {held} held at stop; RSS after warm-up {warm[0] / mib:.0f} "
        f"MiB, last {warm[-1] / mib:.0f} MiB, max {max(warm) / mib:.0f} MiB; "
        f"exit {rc}"
    )
    series = ", ".join(
        f"{t:.0f}s {rss / mib:.0f}" for t, rss in samples[:: max(1, len(samples) // 12)]
    )
    write_section(
        "serve_soak",
        f"""
## `ragtrace serve` under 50 clients (`bench/bench_serve_soak.py`)

{machine_line()}; `ragtrace serve` (lexical judge without a call budget, default bounds: 10,000 traces / 256 MiB
held, 64 HTTP workers, 1024-deep backlog, 10 s read/idle timeout, every request committed to
SQLite before its 200) against {args.clients} client threads, each on a keep-alive
connection posting 2-trace OTLP protobuf requests back to back, for {args.seconds:.0f} s.

| requests 200 | 503 (Retry-After) | connection resets | other errors | traces accepted | scored by the end | held at stop (resumed on restart) |
|---:|---:|---:|---:|---:|---:|---:|
| {ok:,} | {busy:,} | **{resets}** | {errors} | {accepted:,} | {scored:,} | {held:,} |

Server RSS (MiB), sampled every 5 s: after the 30 s warm-up **{warm[0] / mib:.0f}**, mean of
the first third {early / mib:.0f}, mean of the last third **{late / mib:.0f}**, highest
{max(warm) / mib:.0f}, last {warm[-1] / mib:.0f}. Samples: {series}.
SIGTERM exit status {rc}.
""",
    )
    return 0 if resets == 0 and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
