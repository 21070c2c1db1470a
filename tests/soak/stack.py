"""The soak's private pipeline, and the faults it can suffer.

:class:`SoakStack` runs Redis (append-only file, fsync always), a Kafka broker with the span topic
(3 partitions) and the DLQ topic, the collector writing application spans to Kafka and
evaluation spans to a recording :class:`~scripts.services.OtlpSink`, the fake judge API behind
:class:`~tests.fakes.judge_weather.JudgeWeather`, and ``replicas`` ``ragtrace consume``
subprocesses in one group. :meth:`SoakStack.begin` and :meth:`SoakStack.end` inject and lift one
:class:`~tests.soak.schedule.Fault`.

Each fault runs in its own thread (:meth:`SoakStack.play`), so a slow restart (a broker takes
tens of seconds to start on a busy machine) never delays the faults after it; one lock per
service keeps overlapping faults on one service in order. A service restarted from such a thread
is started detached from it (``ServiceProcess.die_with_parent`` off): otherwise it would be
killed when the thread ends. :meth:`SoakStack.stop` stops every service either way.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from scripts.services import (
    Collector,
    CollectorEndpoints,
    KafkaBroker,
    OtlpSink,
    RedisServer,
    create_topic,
    free_port,
    start_collector,
    start_kafka,
    start_redis,
)
from scripts.services.collector import collector_env
from scripts.services.process import ServiceProcess
from tests.e2e.online import (
    DLQ_TOPIC,
    ConsumerProcess,
    consumer_env,
    start_consumer,
    verbatim_responder,
)
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.judge_weather import JudgeWeather
from tests.soak.schedule import Fault

__all__ = ["TOPIC", "SoakStack", "soak_stack"]

TOPIC = "soak_spans"
JUDGE_BUDGET_S = 1.0
"""Seconds one judgement may take; the ``timeout`` spell hangs past it."""

# The consumers' settings: short waits so faults resolve within a short run, and TTLs short
# enough that the done markers, the write-back marks and the judge cache level off within a
# long one (each store holds about rate x its TTL keys).
_CONSUMER_SETTINGS = {
    "RAGTRACE_ASSEMBLY_LEASE_S": "10",
    "RAGTRACE_ASSEMBLY_QUIET_S": "0.5",
    "RAGTRACE_ASSEMBLY_TTL_S": "120",
    "RAGTRACE_JUDGE_BUDGET_S": str(JUDGE_BUDGET_S),
    "RAGTRACE_JUDGE_PARK_BACKOFF_S": "1",
    "RAGTRACE_JUDGE_PARK_BACKOFF_MAX_S": "5",
    "RAGTRACE_JUDGE_CALLS_PER_MINUTE": "1000000",
    "RAGTRACE_JUDGE_TOKENS_PER_MINUTE": "1000000000",
    "RAGTRACE_JUDGE_CONCURRENCY": "4",
    "RAGTRACE_JUDGE_CACHE_TTL_S": "120",
    "RAGTRACE_EXPORT_WRITTEN_TTL_S": "120",
    "RAGTRACE_KAFKA_DRAIN_TIMEOUT_S": "10",
}


@dataclass
class SoakStack:
    """The running services and replicas (see the module docstring)."""

    tmp: Path
    redis: RedisServer
    endpoints: CollectorEndpoints
    sink: OtlpSink
    judge: FakeAnthropic
    weather: JudgeWeather
    group: str
    prefix: str
    kafka: KafkaBroker = field(init=False)
    collector: Collector = field(init=False)
    replicas: list[ConsumerProcess] = field(default_factory=list)
    retired: list[ConsumerProcess] = field(default_factory=list)
    redis_stopped: bool = False
    _started: int = 0
    _locks: dict[str, threading.RLock] = field(
        default_factory=lambda: {
            k: threading.RLock() for k in ("redis", "kafka", "collector", "replicas")
        }
    )

    @property
    def app_url(self) -> str:
        return self.endpoints.app_otlp_http + "/v1/traces"

    # --- replicas -------------------------------------------------------------------------
    def add_replica(self) -> ConsumerProcess:
        """Start one more ``ragtrace consume`` in the group (not waiting for its assignment)."""
        self._started += 1
        env = consumer_env(
            collector=self.endpoints,
            redis_url=self.redis.url,
            prefix=self.prefix,
            group=self.group,
            judge_url=self.judge.base_url,
            extra=_CONSUMER_SETTINGS,
        )
        replica = start_consumer(env, self.tmp / f"consume-{self._started}.log")
        self.replicas.append(replica)
        return replica

    def _retire(self, replica: ConsumerProcess) -> None:
        self.replicas.remove(replica)
        self.retired.append(replica)

    def _pick(self, target: int) -> ConsumerProcess:
        alive = [r for r in self.replicas if r.proc.poll() is None]
        if not alive:
            raise AssertionError("no consume replica is running")
        return alive[target % len(alive)]

    def live_pids(self) -> list[int]:
        return [r.proc.pid for r in self.replicas if r.proc.poll() is None]

    # --- faults ---------------------------------------------------------------------------
    def play(self, fault: Fault, start: float, log: Callable[[str], None]) -> threading.Thread:
        """Inject ``fault`` at ``start + fault.at_s`` and lift it at ``start + fault.end_s``
        (``time.monotonic()``), in a thread of its own; the started thread."""

        def run() -> None:
            service = _SERVICE.get(fault.kind)
            # A service is held for the whole fault: a second fault on it waits (a restart never
            # starts while another one has it stopped); replica and judge faults interleave.
            whole = self._locks[service] if service else contextlib.nullcontext()
            step_lock = contextlib.nullcontext() if service else self._locks["replicas"]
            time.sleep(max(0.0, start + fault.at_s - time.monotonic()))
            with whole:
                for at, step, name in (
                    (fault.at_s, self.begin, "inject"),
                    (fault.end_s, self.end, "lift  "),
                ):
                    time.sleep(max(0.0, start + at - time.monotonic()))
                    late = time.monotonic() - start - at
                    log(f"  {name} {fault.describe()} (late {late:.1f} s)")
                    with step_lock:
                        step(fault)

        thread = threading.Thread(target=run, name=f"fault-{fault.kind}", daemon=True)
        thread.start()
        return thread

    def begin(self, fault: Fault) -> None:
        """Inject ``fault``; :meth:`end` lifts it ``fault.hold_s`` later."""
        kind = fault.kind
        if kind == "kill_replica":
            victim = self._pick(fault.target)
            victim.kill()
            self._retire(victim)
        elif kind == "sigterm_in_rebalance":
            self.add_replica()
        elif kind == "redis_restart":
            self._redis_signal(signal.SIGCONT)  # a stopped Redis is restarted too
            self.redis.stop()
            self.redis_stopped = True
        elif kind == "redis_unreachable":
            self._redis_signal(signal.SIGSTOP)
        elif kind == "broker_restart":
            self.kafka.stop()
        elif kind == "collector_restart":
            # Whatever the broker is doing: what the collector acknowledged is in its
            # persistent queue (docs/reliability.md, finding 1).
            if fault.sigkill:
                self.collector.kill()
            else:
                self.collector.stop()
        elif kind.startswith("judge_"):
            spell = kind.removeprefix("judge_")
            self.weather.spell(spell, fault.hold_s, fault.param)  # type: ignore[arg-type]

    def end(self, fault: Fault) -> None:
        kind = fault.kind
        if kind == "kill_replica":
            self.add_replica()
        elif kind == "sigterm_in_rebalance":
            self._locks["replicas"].release()  # not held while waiting for the rebalance
            try:
                self._sigterm_when_rebalancing(fault.target)
            finally:
                self._locks["replicas"].acquire()
        elif kind == "redis_restart":
            self.restart_redis()
        elif kind == "redis_unreachable":
            self._redis_signal(signal.SIGCONT)
        elif kind == "broker_restart":
            with _detached():
                kafka = self.kafka
                self.kafka = start_kafka(kafka.workdir, kafka.port, kafka.controller_port)
        elif kind == "collector_restart":
            with _detached():
                self.collector = self.collector.restart()

    def restart_redis(self) -> None:
        if self.redis_stopped:
            assert self.redis.workdir is not None
            with _detached():
                self.redis = start_redis(self.redis.workdir, self.redis.port, persistent=True)
            self.redis_stopped = False

    def _redis_signal(self, sig: signal.Signals) -> None:
        pid = self.redis.process.pid
        if pid is not None and not self.redis_stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def _sigterm_when_rebalancing(self, target: int, timeout: float = 30.0) -> None:
        """SIGTERM an older replica as soon as its log shows the rebalance the newest one's join
        started (its partitions revoked), or after ``timeout`` s."""
        with self._locks["replicas"]:
            newest = self.replicas[-1]
            older = [r for r in self.replicas if r is not newest and r.proc.poll() is None]
            if not older:
                return
            victim = older[target % len(older)]
            self._retire(victim)
        revoked = len(re.findall(r"revoked partitions", victim.text()))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and victim.proc.poll() is None:
            if len(re.findall(r"revoked partitions", victim.text())) > revoked:
                break
            time.sleep(0.05)
        if victim.proc.poll() is None:
            victim.proc.send_signal(signal.SIGTERM)

    def lift_all(self) -> None:
        """Every service back up (after a run stopped in the middle of a fault)."""
        self._redis_signal(signal.SIGCONT)
        self.restart_redis()
        self.weather.clear()

    def stop(self) -> None:
        for replica in self.replicas + self.retired:
            with contextlib.suppress(Exception):
                replica.kill()
        self._redis_signal(signal.SIGCONT)
        for name in ("collector", "kafka", "redis"):
            with contextlib.suppress(Exception):
                getattr(self, name).stop()  # one not started yet is not set
        self.judge.stop()
        self.sink.stop()


_SERVICE = {
    "redis_restart": "redis",
    "redis_unreachable": "redis",
    "broker_restart": "kafka",
    "collector_restart": "collector",
}
_detach_lock = threading.Lock()


@contextlib.contextmanager
def _detached() -> Iterator[None]:
    """Services started in this block outlive the thread starting them (module docstring)."""
    with _detach_lock:
        ServiceProcess.die_with_parent = False
        try:
            yield
        finally:
            ServiceProcess.die_with_parent = True


@contextlib.contextmanager
def soak_stack(
    tmp: Path,
    replicas: int = 2,
    judge_delay_s: float = 0.02,
) -> Iterator[SoakStack]:
    """Start everything (see :class:`SoakStack`), yield it, stop it.

    The replicas are started first, on ports chosen in advance, so their start-up (seconds of
    imports on a busy machine) overlaps the broker's; they wait for Kafka and the topic."""
    weather = JudgeWeather(verbatim_responder(delay_s=judge_delay_s), hang_s=JUDGE_BUDGET_S + 3)
    judge = FakeAnthropic(weather).start()
    sink = OtlpSink().start()
    tag = uuid.uuid4().hex[:6]
    kafka_port, controller_port = free_port(), free_port()
    ports = {
        name: free_port()
        for name in ("app_http", "app_grpc", "eval_http", "eval_grpc", "prometheus", "telemetry")
    } | {"health": free_port()}
    _, endpoints = collector_env(f"127.0.0.1:{kafka_port}", sink.endpoint, TOPIC, ports)
    try:
        redis = start_redis(tmp / "redis", persistent=True)
    except BaseException:
        judge.stop()
        sink.stop()
        raise
    stack = SoakStack(tmp, redis, endpoints, sink, judge, weather, f"soak-{tag}", f"soak-{tag}")
    try:
        for _ in range(replicas):
            stack.add_replica()
        stack.kafka = start_kafka(tmp / "kafka", kafka_port, controller_port)
        create_topic(stack.kafka.bootstrap, TOPIC, 3)
        create_topic(stack.kafka.bootstrap, DLQ_TOPIC, 1)
        stack.collector = start_collector(
            tmp / "collector", stack.kafka.bootstrap, sink.endpoint, topic=TOPIC, ports=ports
        )
        yield stack
    finally:
        stack.stop()
