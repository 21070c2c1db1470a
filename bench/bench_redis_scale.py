"""A scale model of the consumer's Redis, measured on the real stack, and consumer replicas
1 -> 2 -> 4 on one server and on a cluster.

The topic of :mod:`bench.bench_consumer` (one Kafka message per trace, three spans, 1 % naming a
labelled question, every answer different) is read by ``ragtrace consume``'s own service with
the instant judge (:class:`bench.bench_consumer.InstantJudge`) at 1 %, 10 % and 100 % judged.
Each share is run twice on a fresh Redis server:

* *counted*: ``MONITOR`` on the server attributes every command it runs, those run inside the
  stores' Lua scripts included, to the kind of key it touches; the consumer process counts its
  own round trips (a pipeline or transaction is one) by the kinds of key they touch (a round trip
  touching k kinds counts 1/k for each);
* *clean* (no MONITOR): the server's CPU (``INFO cpu``) and the consumer's CPU from its first
  finished trace to its last, then ``MEMORY USAGE`` and ``PTTL`` of every key left, by kind.

The keys in flight (a trace's spans, its due and lease entries) are gone once a trace is done,
so they are measured apart: the kept traces' spans appended to a store and not consumed.

From these: bytes each kind holds per offered trace and how long it lives, and the offered rate
at which one node saturates — its one core (server CPU per trace) or its memory (a stated
``maxmemory``; the key's bytes per trace x rate x lifetime, plus what does not grow with the
rate: the write-back marks table as configured, labels, counters).

Replicas: at 10 % judged, 1, 2 and 4 consumer processes in one group, on one server and on a
cluster of three primaries with a replica each (``scripts/services``): consumer CPU and Redis CPU
(all primaries) per offered trace.

Run: ``python bench/bench_redis_scale.py [--traces N] [--memory-gib G] [--quick]`` (needs ``make
provision``); writes the ``redis-scale`` section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import atexit
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._redis_nodes import server_totals
from bench._report import machine_line, write_section

__all__ = [
    "KINDS",
    "KindCost",
    "Saturation",
    "command_key",
    "key_kind",
    "marks_in_table",
    "monitor_args",
    "saturation",
]

#: Kinds of key, in the order of the tables, with the first segment of their names after the
#: key space (``P`` on one server, ``P:{part}`` on a cluster; see the stores' docstrings).
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("spans being assembled", ("trace",)),
    ("due and leases", ("due", "leases", "lease_tokens", "attempts")),
    ("done marks", ("done",)),
    ("written marks", ("written_marks",)),
    ("judge cache", ("judge",)),
    ("labels", ("labels",)),
    ("budget", ("budget",)),
    ("counters and dead", ("stats", "dead")),
    ("session turns", ("session",)),
    ("batches", ("batch", "batches", "batch_submitted")),
)
OTHER = "other (no key: PING, INFO, SCRIPT, MULTI/EXEC)"
_KIND_OF = {segment: kind for kind, segments in KINDS for segment in segments}
_SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})
_KEYLESS = frozenset(
    {"PING", "INFO", "MULTI", "EXEC", "DISCARD", "SCRIPT", "CLUSTER", "CLIENT", "HELLO",
     "READONLY", "COMMAND", "SELECT", "AUTH", "TIME", "ECHO", "DBSIZE", "CONFIG", "ROLE"}
)  # fmt: skip
_QUOTED = re.compile(r'"((?:\\.|[^"\\])*)"')
JUDGED_SHARES = (0.01, 0.1, 1.0)
REPLICAS = (1, 2, 4)
REPLICA_SHARE = 0.1
MARK_FILL = 0.87  # the load the written-marks table is sized for (15 % headroom: 0.3 % evicted)


def key_kind(key: str, prefix: str) -> str:
    """The kind (a name of :data:`KINDS`) of ``key`` under ``prefix``; :data:`OTHER` for a key
    outside it."""
    if not key.startswith(prefix + ":"):
        return OTHER
    rest = key[len(prefix) + 1 :]
    if rest.startswith("{"):
        _, _, rest = rest.partition("}:")
    return _KIND_OF.get(rest.split(":", 1)[0], OTHER)


def command_key(args: Sequence[str]) -> str | None:
    """The first key a command touches (a script's first KEYS entry), or None."""
    if not args:
        return None
    name = args[0].upper()
    if name in _SCRIPTS:
        return args[3] if len(args) > 3 and args[2].isdigit() and int(args[2]) > 0 else None
    if name in _KEYLESS or len(args) < 2:
        return None
    return args[1]


def monitor_args(line: str) -> tuple[bool, list[str]]:
    """(run inside a script, arguments) of one ``MONITOR`` line, e.g. ``1700000000.1 [0 lua]
    "GET" "k"``."""
    head, _, _ = line.partition('"')
    args = [re.sub(r"\\(.)", r"\1", a) for a in _QUOTED.findall(line)]
    return " lua]" in head, args


def marks_in_table(value: bytes, mark_bytes: int) -> int:
    """Occupied slots of one written-marks string (a slot of zeros is empty)."""
    empty = bytes(mark_bytes)
    return sum(
        1 for i in range(0, len(value) - mark_bytes + 1, mark_bytes)
        if value[i : i + mark_bytes] != empty
    )  # fmt: skip


@dataclass(frozen=True)
class KindCost:
    """What one kind of key costs per offered trace."""

    kind: str
    commands: float  # server commands (script bodies included)
    round_trips: float  # consumer round trips
    bytes_per_trace: float  # held per offered trace while it lives
    lifetime_s: float  # 0: does not grow with the rate (see fixed_bytes)
    fixed_bytes: float = 0.0


@dataclass(frozen=True)
class Saturation:
    """The offered rate (traces/s) at which one node runs out of a resource."""

    cpu: float
    memory: float
    bytes_per_rate: float  # memory held per trace/s of offered traffic
    memory_share: Mapping[str, float] = field(default_factory=dict)  # kind -> share at saturation

    @property
    def limit(self) -> str:
        return "memory" if self.memory < self.cpu else "CPU"

    @property
    def rate(self) -> float:
        return min(self.cpu, self.memory)


def saturation(
    costs: Iterable[KindCost], server_cpu_s_per_trace: float, memory_bytes: float
) -> Saturation:
    """One node's saturating rate: one core at ``server_cpu_s_per_trace``, and ``memory_bytes``
    filled by the fixed bytes plus rate x bytes x lifetime of every kind."""
    costs = list(costs)
    growth = {c.kind: c.bytes_per_trace * c.lifetime_s for c in costs if c.lifetime_s > 0}
    fixed = sum(c.fixed_bytes for c in costs)
    per_rate = sum(growth.values())
    if fixed >= memory_bytes:
        raise ValueError(f"the fixed {fixed:.0f} bytes exceed the node's {memory_bytes:.0f}")
    memory = (memory_bytes - fixed) / per_rate if per_rate > 0 else float("inf")
    cpu = 1.0 / server_cpu_s_per_trace if server_cpu_s_per_trace > 0 else float("inf")
    shares = {k: v * memory / memory_bytes for k, v in growth.items()}
    shares.update({c.kind: shares.get(c.kind, 0.0) + c.fixed_bytes / memory_bytes for c in costs})
    return Saturation(cpu, memory, per_rate, shares)


# -- in the consumer process ---------------------------------------------------------------------
def _count_round_trips(prefix: str, out: Path) -> None:
    """Count this process's Redis round trips by kind of key; written to ``out`` at exit."""
    from redis.connection import AbstractConnection

    trips: dict[str, float] = {}
    lock = threading.Lock()

    def text(a: object) -> str:
        return a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a)

    def note(commands: Sequence[Sequence[object]]) -> None:
        kinds = set()
        for args in commands:
            key = command_key([text(a) for a in args[:4]])
            if key is not None:
                kinds.add(key_kind(key, prefix))
        kinds = kinds or {OTHER}
        with lock:
            for kind in kinds:
                trips[kind] = trips.get(kind, 0.0) + 1 / len(kinds)

    send: Any = AbstractConnection.send_command
    pack: Any = AbstractConnection.pack_commands

    def send_command(self: Any, *args: Any, **kwargs: Any) -> None:
        note([args])
        send(self, *args, **kwargs)

    def pack_commands(self: Any, commands: Any) -> Any:
        commands = list(commands)
        note(commands)
        return pack(self, commands)

    AbstractConnection.send_command = send_command  # type: ignore[method-assign]
    AbstractConnection.pack_commands = pack_commands  # type: ignore[method-assign]
    atexit.register(lambda: out.write_text(json.dumps(dict(trips))))


def consume_counted(prefix: str, out: str | None) -> int:
    from bench.bench_consumer import consume_main

    if out:
        _count_round_trips(prefix, Path(out))
    return consume_main(None)


# -- on the bench's side -------------------------------------------------------------------------
@dataclass
class Stack:
    """The services one run uses: Kafka with the filled topic, the sink and fake judge, and the
    Redis under test (``ports``: its primaries)."""

    bootstrap: str
    sink: Any
    judge: Any
    work: Path
    n: int
    kept: Mapping[float, int]
    messages: Sequence[bytes]


@dataclass(frozen=True)
class Run:
    wall_s: float
    consumer_cpu_s: float
    server_cpu_s: float
    server_commands: float
    prefix: str


def _connect(url: str) -> Any:
    from ragtrace_consumers.stores.redis import connect

    return connect(url)


def consumer_run(
    stack: Stack,
    url: str,
    ports: Sequence[int],
    share: float,
    *,
    prefix: str | None = None,
    replicas: int = 1,
    trips: Path | None = None,
    unwatched: set[str] | None = None,
) -> Run:
    """``replicas`` consumers read the whole topic at ``share`` judged, their keys under
    ``prefix`` (a new one by default); CPU and commands from the first finished trace to the
    last, scaled to every offered trace. The address of the client that watches the progress is
    added to ``unwatched``."""
    from bench.bench_consumer import TOPIC, consumer_env, cpu_seconds, load_labels, stop_consumers
    from ragtrace_consumers.stores.redis import RedisTraceStore

    env = consumer_env(
        stack.bootstrap, url, stack.sink.endpoint, stack.judge.base_url, TOPIC, judge_rate=share
    )
    prefix = env["RAGTRACE_REDIS_KEY_PREFIX"] = prefix or env["RAGTRACE_REDIS_KEY_PREFIX"]
    load_labels(url, prefix)
    expect = stack.kept[share]
    client = _connect(url)
    store = RedisTraceStore(client, prefix=prefix)
    if unwatched is not None:
        unwatched.add(str(client.client_info()["addr"]))
    log = stack.work / f"consumer-{uuid.uuid4().hex[:6]}.log"
    cmd = [sys.executable, str(Path(__file__)), "--consume", prefix]
    procs = []
    with log.open("ab") as err:
        for i in range(replicas):
            extra = ["--trips", str(trips.with_suffix(f".{i}.json"))] if trips else []
            procs.append(
                subprocess.Popen(
                    cmd + extra, env=env, cwd=ROOT, stdout=err, stderr=subprocess.STDOUT
                )
            )

    def released() -> int:
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise RuntimeError(f"consumer failed:\n{log.read_text()[-3000:]}")
        return int(store.stats()["released"])

    try:
        deadline = time.monotonic() + 900
        while (first := released()) == 0:
            time.sleep(0.02)
        start, cpu0 = time.perf_counter(), sum(cpu_seconds(p.pid) for p in procs)
        server0, calls0 = server_totals(ports)
        shown = time.monotonic()
        while (done := released()) < expect:
            if time.monotonic() - shown > 10:
                print(f"  {done:,} of {expect:,} traces finished", file=sys.stderr, flush=True)
                shown = time.monotonic()
            time.sleep(0.05)
        took = time.perf_counter() - start
        cpu = sum(cpu_seconds(p.pid) for p in procs) - cpu0
        server1, calls1 = server_totals(ports)
    finally:
        stop_consumers(procs)
        client.close()
    scale = expect / max(1, expect - first)
    return Run(
        took * scale, cpu * scale, (server1 - server0) * scale, (calls1 - calls0) * scale, prefix
    )


@contextmanager
def monitored(port: int, prefix: str, unwatched: set[str]) -> Iterator[Counter[str]]:
    """Every command the server at ``port`` runs meanwhile, counted by kind of key; commands of
    the client addresses in ``unwatched`` (added to meanwhile) are left out."""
    import redis

    counts: Counter[str] = Counter()
    stop = threading.Event()
    connection: Any = redis.Connection
    conn: Any = connection(port=port, socket_timeout=5)
    conn.connect()
    conn.send_command("MONITOR")
    conn.read_response()

    def read() -> None:
        while not stop.is_set() or conn.can_read(0.5):
            if not conn.can_read(0.2):
                continue
            line = conn.read_response().decode("utf-8", "replace")
            if line.partition('"')[0].split(" ", 2)[-1].rstrip("] ") in unwatched:
                continue
            _, args = monitor_args(line)
            key = command_key(args)
            counts[OTHER if key is None else key_kind(key, prefix)] += 1

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield counts
    finally:
        stop.set()
        reader.join(60)
        conn.disconnect()


def memory_by_kind(url: str, prefix: str) -> dict[str, tuple[int, int, float]]:
    """kind -> (keys, bytes by MEMORY USAGE, longest PTTL in seconds; 0 without one)."""
    client = _connect(url)
    out: dict[str, list[float]] = {}
    for raw in client.scan_iter(match=f"{prefix}:*", count=1000):
        key = raw.decode()
        row = out.setdefault(key_kind(key, prefix), [0, 0, 0.0])
        row[0] += 1
        row[1] += int(client.memory_usage(key, samples=0) or 0)
        row[2] = max(row[2], max(0, int(client.pttl(key))) / 1000)
    client.close()
    return {k: (int(v[0]), int(v[1]), float(v[2])) for k, v in out.items()}


def written_marks(url: str, prefix: str) -> int:
    from ragtrace_consumers.stores.redis_marks import MARK_BYTES

    client = _connect(url)
    total = 0
    for raw in client.scan_iter(match=f"{prefix}*:written_marks:*", count=1000):
        if not raw.endswith(b":evicted"):
            total += marks_in_table(client.get(raw) or b"", MARK_BYTES)
    client.close()
    return total


def in_flight(url: str, messages: Sequence[bytes], share: float) -> tuple[int, int, int]:
    """(traces, bytes of their spans, bytes of due and lease entries) for the traces sampling
    keeps at ``share``, appended to a store and not consumed."""
    from ragtrace_consumers.intake.admission import EarlySampler
    from ragtrace_consumers.intake.decode import decode_request
    from ragtrace_consumers.scoring.sampling import SamplerConfig
    from ragtrace_consumers.stores.redis import RedisTraceStore

    prefix = f"flight-{uuid.uuid4().hex[:6]}"
    client = _connect(url)
    store = RedisTraceStore(client, prefix=prefix)
    early = EarlySampler(SamplerConfig(judge_rate=share))
    traces = 0
    for message in messages:
        spans = decode_request(message, early)
        if spans:
            ids = {s.trace_id for s in spans}
            store.append(spans, dict.fromkeys(ids, time.time() + 3600), ids)
            traces += len(ids)
    client.close()
    kinds = memory_by_kind(url, prefix)
    return traces, kinds.get(KINDS[0][0], (0, 0, 0.0))[1], kinds.get(KINDS[1][0], (0, 0, 0.0))[1]


def model_runs(stack: Stack, redis_url: str, port: int) -> dict[float, dict[str, Any]]:
    """Per judged share: the counted run's commands and round trips by kind, the clean run's
    CPU and memory by kind."""
    out: dict[float, dict[str, Any]] = {}
    for share in JUDGED_SHARES:
        _flush([port])
        trips = stack.work / f"trips-{share}"
        prefix, unwatched = f"bench-{uuid.uuid4().hex[:8]}", set[str]()
        with monitored(port, prefix, unwatched) as commands:
            counted = consumer_run(
                stack, redis_url, [port], share, prefix=prefix, trips=trips, unwatched=unwatched
            )
        round_trips = json.loads(trips.with_suffix(".0.json").read_text())
        _flush([port])
        clean = consumer_run(stack, redis_url, [port], share)
        memory = memory_by_kind(redis_url, clean.prefix)
        marks = written_marks(redis_url, clean.prefix)
        flight = in_flight(redis_url, stack.messages[: min(len(stack.messages), 5000)], share)
        out[share] = {
            "commands": dict(commands),
            "counted": counted,
            "round_trips": round_trips,
            "clean": clean,
            "memory": memory,
            "marks": marks,
            "flight": flight,
        }
    return out


def client_floor(url: str, calls: int = 5000) -> dict[str, float]:
    """Client CPU (µs) per call of the cheapest script and of a pipeline of 50 GETs, one key
    space: what any use of this client costs before the stores do anything."""
    from ragtrace_consumers.stores.redis_keys import key_space

    client = _connect(url)
    key = f"{key_space(client, 'floor', 'f')}:k"
    script = client.register_script("return redis.call('GET', KEYS[1])")
    client.set(key, b"x")
    out = {}
    t0 = time.process_time()
    for _ in range(calls):
        script(keys=[key])
    out["script"] = 1e6 * (time.process_time() - t0) / calls
    t0 = time.process_time()
    for _ in range(calls // 50):
        pipe = client.pipeline(transaction=False)
        for _ in range(50):
            pipe.get(key)
        pipe.execute()
    out["pipeline"] = 1e6 * (time.process_time() - t0) / (calls // 50)
    client.close()
    return out


def replica_runs(
    stack: Stack, backends: Mapping[str, tuple[str, Callable[[], list[int]]]]
) -> list[tuple[str, int, Run]]:
    """(backend, replicas, run) at :data:`REPLICA_SHARE` judged for each backend and count."""
    rows = []
    for name, (url, primaries) in backends.items():
        for replicas in REPLICAS:
            _flush(primaries())
            rows.append(
                (
                    name,
                    replicas,
                    consumer_run(stack, url, primaries(), REPLICA_SHARE, replicas=replicas),
                )
            )
    return rows


def _flush(ports: Sequence[int]) -> None:
    """Empty the Redis nodes at ``ports`` and reset their command statistics."""
    import redis

    for port in ports:
        r = redis.Redis(port=port)
        r.flushall()
        r.config_resetstat()
        r.close()


def kind_costs(
    stack: Stack, m: Mapping[str, Any], quiet_s: float, questions: int
) -> list[KindCost]:
    """The per-kind costs of one judged share's runs (see the module docstring)."""
    from bench.bench_consumer import LABELS
    from ragtrace_consumers.stores.redis_marks import MARK_BYTES

    n = stack.n
    commands, trips, memory = m["commands"], m["round_trips"], m["memory"]
    flight_traces, span_bytes, queue_bytes = m["flight"]
    kept_share = flight_traces / min(n, 5000)
    costs = []
    for kind, _ in (*KINDS, (OTHER, ())):
        keys, size, ttl = memory.get(kind, (0, 0, 0.0))
        fixed, per_trace, lifetime = 0.0, 0.0, 0.0
        if kind == KINDS[0][0]:
            per_trace, lifetime = kept_share * span_bytes / max(1, flight_traces), quiet_s
        elif kind == KINDS[1][0]:
            per_trace, lifetime = kept_share * queue_bytes / max(1, flight_traces), quiet_s
        elif kind == "written marks":
            per_trace, lifetime = m["marks"] / n * MARK_BYTES / MARK_FILL, ttl
        elif kind == "labels":
            fixed = size * questions / LABELS
        elif ttl > 0 and kind not in ("counters and dead",):
            per_trace, lifetime = size / n, ttl
        else:
            fixed = size
        costs.append(
            KindCost(
                kind,
                commands.get(kind, 0) / n,
                trips.get(kind, 0.0) / n,
                per_trace,
                lifetime,
                fixed,
            )
        )
    return costs


def _life(seconds: float) -> str:
    seconds = round(seconds)
    if seconds <= 0:
        return "fixed"
    if seconds >= 86400:
        return f"{seconds / 86400:.0f} d"
    if seconds >= 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds:.0f} s"


def render(
    stack: Stack,
    model: Mapping[float, Mapping[str, Any]],
    replicas: Sequence[tuple[str, int, Run]],
    floors: Mapping[str, Mapping[str, float]],
    memory_gib: float,
    quiet_s: float,
    questions: int,
) -> str:
    from ragtrace_consumers.stores.redis_marks import DEFAULT_WRITTEN_CAPACITY, MARK_BYTES

    node = memory_gib * 2**30
    out = [
        f"{stack.n:,} offered traces (three spans, 1 % naming one of 10 labelled questions, every "
        "answer different, so every judged trace adds a judge-cache entry), one Redis 7 server, "
        "`ragtrace consume`'s service with an instant judge, on this 2-core machine "
        f"({machine_line()}). Reproduce: `python bench/bench_redis_scale.py --traces {stack.n}`.",
        "",
        "Per offered trace (every trace the topic carries, judged or not); commands counted by "
        "`MONITOR` (script bodies included), round trips by the consumer's own client (a "
        "pipeline is one; one touching k kinds counts 1/k to each); bytes by `MEMORY USAGE` "
        "(allocator fragmentation not included) and how long a kind keeps them (spans and "
        f"queue entries: the assembly's quiet time, {quiet_s:.0f} s; the written marks as the "
        f"table's capacity they need at {MARK_FILL:.0%} full; labels for {questions:,} "
        "questions, not per trace).",
        "",
    ]
    sats = {}
    for share, m in model.items():
        costs = kind_costs(stack, m, quiet_s, questions)
        clean: Run = m["clean"]
        sats[share] = (saturation(costs, clean.server_cpu_s / stack.n, node), clean)
        out += [
            f"**{share:.0%} judged** ({stack.kept[share]:,} of {stack.n:,} traces reach Redis)",
            "",
            "| key | commands | round trips | bytes | lives |",
            "|---|---:|---:|---:|---|",
        ]
        for c in costs:
            if not (c.commands or c.round_trips or c.bytes_per_trace or c.fixed_bytes):
                continue
            size = f"{c.bytes_per_trace:,.1f}" if c.lifetime_s else f"{c.fixed_bytes:,.0f} in all"
            out.append(
                f"| {c.kind} | {c.commands:.2f} | {c.round_trips:.3f} | {size} | {_life(c.lifetime_s)} |"
            )
        out.append(
            f"| **all** | {sum(c.commands for c in costs):.2f} | "
            f"{sum(c.round_trips for c in costs):.3f} | | |"
        )
        out.append("")
    out += [
        f"One node ({memory_gib:g} GiB `maxmemory`, one core): the offered rate at which it runs "
        "out — CPU at the clean run's server CPU per trace, memory at the bytes above times "
        "rate times lifetime, plus what does not grow with the rate.",
        "",
        "| judged | Redis CPU µs/trace | consumer CPU µs/trace | memory per trace/s | CPU "
        "saturates at | memory saturates at | limit | largest share of memory |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for share, (sat, clean) in sats.items():
        top = max(sat.memory_share.items(), key=lambda kv: kv[1])
        out.append(
            f"| {share:.0%} | {1e6 * clean.server_cpu_s / stack.n:.1f} | "
            f"{1e6 * clean.consumer_cpu_s / stack.n:.0f} | {sat.bytes_per_rate / 1e6:,.1f} MB | "
            f"{sat.cpu:,.0f}/s | {sat.memory:,.0f}/s | "
            f"{sat.limit} | {top[0]} {top[1]:.0%} |"
        )
    marks_per_trace = model[JUDGED_SHARES[-1]]["marks"] / stack.n
    covered = DEFAULT_WRITTEN_CAPACITY * MARK_FILL / (7 * 86400 * max(marks_per_trace, 1e-9))
    out += [
        "",
        f"The default written-marks table ({DEFAULT_WRITTEN_CAPACITY:,} marks, "
        f"{DEFAULT_WRITTEN_CAPACITY * MARK_BYTES / 1e6:.1f} MB, allocated whole) covers "
        f"{covered:.1f} traces/s at 100 % judged ({marks_per_trace:.2f} marks per trace) for its 7 "
        "days; `export.written_capacity` grows it (the bytes above are what it then needs).",
        "",
        f"Consumer replicas at {REPLICA_SHARE:.0%} judged (one group, six partitions; CPU per "
        "offered trace, the consumer's summed over its replicas, Redis's over its primaries):",
        "",
        "| Redis | replicas | traces/s | consumer CPU µs/trace | per replica | Redis CPU µs/trace | "
        "consumer traces/s per core |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, count, run in replicas:
        per = run.consumer_cpu_s / stack.n
        out.append(
            f"| {name} | {count} | {stack.n / run.wall_s:,.0f} | {1e6 * per:.0f} | "
            f"{1e6 * per / count:.0f} | {1e6 * run.server_cpu_s / stack.n:.1f} | {1 / per:,.0f} |"
        )
    out += [
        "",
        "The client's own floor, before the stores do anything (this process's CPU per call, "
        "one key space):",
        "",
        "| Redis client | one script call | one pipeline of 50 GETs |",
        "|---|---:|---:|",
    ]
    for name, f in floors.items():
        out.append(f"| {name} | {f['script']:.0f} µs | {f['pipeline']:.0f} µs |")
    return "\n".join(out)


def main() -> int:
    args = parse_args()
    if args.consume:
        return consume_counted(args.consume, args.trips)
    from bench.bench_consumer import (
        PARTITIONS,
        TOPIC,
        require_crc32c,
        trace_message,
        write_messages,
    )
    from ragtrace_consumers.config import ConsumerConfig
    from ragtrace_consumers.intake.admission import EarlySampler
    from ragtrace_consumers.intake.decode import decode_request
    from ragtrace_consumers.scoring.sampling import SamplerConfig
    from scripts.services import (
        OtlpSink,
        create_topic,
        start_kafka,
        start_redis,
        start_redis_cluster,
    )
    from tests.fakes.anthropic_server import FakeAnthropic, entail_all

    require_crc32c()
    n = 3000 if args.quick else args.traces
    keyed = [trace_message(i) for i in range(n)]  # trace IDs are random: write these ones
    messages = [value for _, value in keyed]
    kept = {
        share: sum(
            bool(decode_request(m, EarlySampler(SamplerConfig(judge_rate=share)))) for m in messages
        )
        for share in JUDGED_SHARES
    }
    quiet_s = float(ConsumerConfig.defaults().assembly.quiet_s)
    with tempfile.TemporaryDirectory(prefix="ragtrace-bench-") as tmp:
        work = Path(tmp)
        single = start_redis(work / "redis")
        kafka = start_kafka(work / "kafka")
        sink = OtlpSink().start()
        cluster = None
        try:
            create_topic(kafka.bootstrap, TOPIC, PARTITIONS)
            write_messages(kafka.bootstrap, TOPIC, keyed)
            with FakeAnthropic(entail_all) as judge:
                stack = Stack(kafka.bootstrap, sink, judge, work, n, kept, messages)
                model = model_runs(stack, single.url, single.port)
                cluster = start_redis_cluster(work / "cluster")
                floors = {"one server": client_floor(single.url)}
                floors["cluster, 3 primaries"] = client_floor(cluster.url)
                rows = replica_runs(
                    stack,
                    {
                        "one server": (single.url, lambda: [single.port]),
                        "cluster, 3 primaries": (cluster.url, cluster.primaries),
                    },
                )
        finally:
            if cluster is not None:
                cluster.stop()
            sink.stop()
            kafka.stop()
            single.stop()
    md = render(stack, model, rows, floors, args.memory_gib, quiet_s, 10_000)
    print(md)
    if not args.quick:
        write_section("redis-scale", md)
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--memory-gib", type=float, default=8.0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--consume", metavar="PREFIX", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--trips", metavar="FILE", default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
