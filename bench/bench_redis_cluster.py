"""The consumer's Redis work per trace on one server and on a Redis Cluster (three primaries,
three replicas), both started by the project's service scripts.

Each round does what the pipeline does for a batch of 50 traces: append their spans (three per
trace), claim them, load them, look up and set their write-back marks (two families), release
them. Measured per trace: the client's CPU (this process), the servers' CPU (``INFO cpu`` of
every primary) and the commands they ran (``INFO commandstats``).

Run: ``python bench/bench_redis_cluster.py [--traces N]`` (needs ``make provision``); prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "consumers")]

from bench._redis_nodes import server_totals
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.stores.redis import RedisTraceStore, connect
from ragtrace_consumers.stores.redis_marks import RedisIdempotencyStore
from scripts.services import start_redis, start_redis_cluster

BATCH = 50
FAMILIES = ("recall", "groundedness")


def _spans(trace_id: str) -> list[SpanRecord]:
    text = {"output.value": "Keys rotate from the Settings page. " * 8}
    return [
        SpanRecord(trace_id, f"{i:016x}", None if i == 1 else "1" * 16, "s", "r", "svc", 1, 2, text)
        for i in (1, 2, 3)
    ]


def run(url: str, ports: list[int], traces: int) -> dict[str, float]:
    client: Any = connect(url)
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    store = RedisTraceStore(client, prefix=prefix)
    marks = RedisIdempotencyStore(client, prefix=prefix, capacity=4 * traces)
    ids = [uuid.uuid4().hex for _ in range(traces)]
    cpu0, calls0 = server_totals(ports)
    t0 = time.process_time()
    for i in range(0, traces, BATCH):
        batch = ids[i : i + BATCH]
        spans = [s for t in batch for s in _spans(t)]
        store.append(spans, dict.fromkeys(batch, 0.0), set(batch))
        leases = store.claim(time.time(), BATCH, 60.0)
        claimed = [lease.trace_id for lease in leases]
        store.load_many(claimed)
        pairs = [(t, f) for t in claimed for f in FAMILIES]
        marks.written_many(pairs)
        marks.mark_written_many(pairs)
        store.release_many([(lease.trace_id, lease.token) for lease in leases])
    client_cpu = time.process_time() - t0
    cpu1, calls1 = server_totals(ports)
    assert store.stats()["released"] == traces
    return {
        "client_us": 1e6 * client_cpu / traces,
        "server_us": 1e6 * (cpu1 - cpu0) / traces,
        "commands": (calls1 - calls0) / traces,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=20_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-redis-cluster-"))
    single = start_redis(work / "single")
    cluster = start_redis_cluster(work / "cluster")
    try:
        rows = {
            "one server": run(single.url, [single.port], args.traces),
            "cluster (3 primaries)": run(cluster.url, cluster.primaries(), args.traces),
        }
    finally:
        single.stop()
        cluster.stop()
    print(f"{args.traces} traces, batches of {BATCH}\n")
    print("| Redis | client CPU µs/trace | server CPU µs/trace | commands/trace |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['client_us']:.0f} | {r['server_us']:.0f} | {r['commands']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
