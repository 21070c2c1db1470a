"""One soak run: load, the seeded fault schedule, the drain, the checker, the figures.

:func:`run_soak` starts :func:`~tests.soak.stack.soak_stack`, waits until every replica owns
partitions, sends :class:`~tests.soak.load.SteadyLoad` for ``warmup_s`` (the normal latency is
measured there), then for the fault phase while the main thread injects and lifts the faults of
:func:`~tests.soak.schedule.fault_schedule` at their times, then ``calm_s`` more (the recovery is
measured there). Optionally one oversized trace (a 25,000-sentence answer, ~1 MB) is sent with
ordinary traces right behind it. Then it waits until every accepted trace is scored or given
up, and checks the history (:mod:`tests.soak.history`). A monitor thread samples every replica's
RSS, Redis' memory and key count, and the replicas' traces-scored counters once a second.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import redis as redis_client

from tests.e2e.online import ASSIGNED
from tests.soak.bigtrace import big_trace_request
from tests.soak.history import History, Verdict, check, p95, recovery_s
from tests.soak.load import SteadyLoad
from tests.soak.schedule import Fault, fault_schedule
from tests.soak.stack import SoakStack, soak_stack

__all__ = ["SoakConfig", "SoakResult", "run_soak"]

_SCORED = re.compile(r"^ragtrace_traces_scored_total(\{[^}]*\})?\s+([0-9.eE+-]+)$", re.M)


@dataclass(frozen=True)
class SoakConfig:
    """What to run; see the module docstring. ``fault_s`` is the fault phase's length."""

    seed: int
    fault_s: float
    rate: float
    warmup_s: float = 15.0
    calm_s: float = 30.0
    replicas: int = 2
    gap_s: tuple[float, float] = (20.0, 60.0)
    overlap: float = 0.3
    max_hold_s: float | None = None
    drain_timeout_s: float = 180.0
    big_trace: bool = True

    def __post_init__(self) -> None:
        if self.replicas < 2 or self.rate <= 0 or self.fault_s <= 0:
            raise ValueError(f"SoakConfig: replicas >= 2, rate > 0, fault_s > 0: {self}")

    def schedule(self) -> list[Fault]:
        return fault_schedule(
            self.seed,
            self.fault_s,
            gap_s=self.gap_s,
            overlap=self.overlap,
            max_hold_s=self.max_hold_s,
        )


@dataclass
class Samples:
    """The monitor's samples: (seconds since the start, value)."""

    rss_kib: list[tuple[float, int]] = field(default_factory=list)  # the largest replica's
    redis_memory: list[tuple[float, int]] = field(default_factory=list)
    redis_keys: list[tuple[float, int]] = field(default_factory=list)
    scored_max: dict[str, float] = field(default_factory=dict)  # series -> highest value seen


@dataclass(frozen=True)
class SoakResult:
    """The figures of one run (:meth:`lines` prints them)."""

    config: SoakConfig
    faults: tuple[Fault, ...]
    verdict: Verdict
    baseline_p95_s: float
    recovery_threshold_s: float
    recovery_s: float | None
    samples: Samples
    refused: int
    judge_answers: dict[str, int]
    big_trace_delay_s: float | None
    pending_keys: int
    wall_s: float
    key_ttls_s: Mapping[str, float] = field(default_factory=dict)
    """The longest TTL left on the per-trace keys of each kind (``done``, ``written``, ``judge``)
    when the load stopped."""
    load_s: float = math.inf
    """Seconds from the start until the load stopped."""
    timeline: tuple[tuple[float, int, float], ...] = ()
    """(window start in s from the first fault, traces accepted in it, their latency p95)."""

    @property
    def peak_rss_mib(self) -> float:
        return max((v for _, v in self.samples.rss_kib), default=0) / 1024

    def drift(self, series: list[tuple[float, int]]) -> float:
        """Median of the last quarter of the loaded run over the median of its second quarter
        (1.0: flat); samples after the load stopped (the drain, TTLs running out) are left out."""
        series = [(t, v) for t, v in series if t <= self.load_s]
        if len(series) < 8:
            return math.nan
        q = len(series) // 4
        second = sorted(v for _, v in series[q : 2 * q])
        last = sorted(v for _, v in series[3 * q :])
        return last[len(last) // 2] / max(1, second[len(second) // 2])

    def lines(self) -> list[str]:
        v = self.verdict
        kinds = Counter(f.kind for f in self.faults)
        keys = [k for _, k in self.samples.redis_keys]
        return [
            f"seed {self.config.seed}: {self.config.fault_s:g} s of faults at "
            f"{self.config.rate:g} traces/s, {self.config.replicas} replicas, {self.wall_s:.0f} s",
            f"traces accepted {v.accepted}, scored {v.scored}, given up {len(v.given_up)} "
            f"{dict(Counter(v.given_up.values()))}, lost {len(v.lost)}",
            f"exactly-once violations: {len(v.violations)} {v.violations}",
            f"results written under 2+ span IDs: {len(v.duplicated)}; identical re-sends: "
            f"{v.resent}; scored but never acknowledged to the app: {v.scored_unacknowledged}",
            f"traces-scored counters summed: {v.scored_counted}",
            f"result errors: {v.errors}",
            f"faults injected ({len(self.faults)}): {dict(sorted(kinds.items()))}",
            f"latency p95: normal {self.baseline_p95_s:.2f} s, whole run "
            f"{p95(v.latency_s.values()):.2f} s, max {max(v.latency_s.values(), default=0):.1f} s",
            f"recovery under {self.recovery_threshold_s:.2f} s p95: "
            + ("never" if self.recovery_s is None else f"{self.recovery_s:.0f} s after last fault"),
            f"peak replica RSS {self.peak_rss_mib:.0f} MiB (drift {self.drift(self.samples.rss_kib):.2f}); "
            f"Redis peak {max((m for _, m in self.samples.redis_memory), default=0) / 2**20:.1f} MiB "
            f"(drift {self.drift(self.samples.redis_memory):.2f}), keys peak {max(keys, default=0)} "
            f"(drift {self.drift(self.samples.redis_keys):.2f}), pending at end {self.pending_keys}",
            "longest TTL left on per-trace keys: "
            + ", ".join(f"{k} {v:.0f} s" for k, v in self.key_ttls_s.items()),
            f"app requests refused and retried: {self.refused}; judge answers: {self.judge_answers}",
            "latency p95 by 10 s of acceptance (s from the first fault): "
            + ", ".join(f"{at:+.0f}: {p:.1f}" for at, _, p in self.timeline),
            "oversized trace: "
            + (
                "not sent"
                if self.big_trace_delay_s is None
                else f"traces behind it delayed {self.big_trace_delay_s:.2f} s beyond normal p95"
            ),
        ]


class _Monitor(threading.Thread):
    def __init__(self, stack: SoakStack, start: float) -> None:
        super().__init__(daemon=True, name="soak-monitor")
        self.stack = stack
        self.start_at = start
        self.samples = Samples()
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(1.0):
            self.sample()

    def sample(self) -> None:
        now = time.monotonic() - self.start_at
        rss = [_rss_kib(pid) for pid in self.stack.live_pids()]
        if rss:
            self.samples.rss_kib.append((now, max(rss)))
        with contextlib.suppress(Exception):
            r = redis_client.Redis.from_url(self.stack.redis.url, socket_timeout=0.5)
            try:
                memory = int(r.info("memory")["used_memory"])
                keys = int(r.dbsize())
            finally:
                r.close()
            self.samples.redis_memory.append((now, memory))
            self.samples.redis_keys.append((now, keys))
        with contextlib.suppress(Exception):
            url = self.stack.collector.endpoints.prometheus_metrics_url
            with urllib.request.urlopen(url, timeout=2) as resp:
                text = resp.read().decode()
            for labels, value in _SCORED.findall(text):
                best = self.samples.scored_max.get(labels, 0.0)
                self.samples.scored_max[labels] = max(best, float(value))


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _given_up(stack: SoakStack) -> dict[str, str]:
    """The consumers' dead set: trace ID -> the reason recorded with it."""
    r = redis_client.Redis.from_url(stack.redis.url, socket_timeout=5)
    try:
        info: dict[bytes, bytes] = r.hgetall(f"{stack.prefix}:dead:info")  # type: ignore[assignment]
        return {k.decode(): v.decode()[:200] for k, v in info.items()}
    finally:
        r.close()


def _pending(stack: SoakStack) -> int:
    """Traces still being assembled, due or leased (0 once everything is settled)."""
    r = redis_client.Redis.from_url(stack.redis.url, socket_timeout=5)
    try:
        p = stack.prefix
        spans = sum(1 for _ in r.scan_iter(f"{p}:trace:*", count=1000))
        return spans + int(r.zcard(f"{p}:due")) + int(r.zcard(f"{p}:leases"))
    finally:
        r.close()


def _longest_ttls(stack: SoakStack) -> dict[str, float]:
    """The longest TTL left, in seconds, on each kind of per-trace key now (inf for a key
    without one): each is bounded by its setting, so Redis holds about rate x TTL of them (the
    marks' table: at most its capacity)."""
    r = redis_client.Redis.from_url(stack.redis.url, socket_timeout=5)
    try:
        out: dict[str, float] = {}
        # The write-back marks are a table of a few strings (stores/redis_marks.py), refreshed
        # to export.written_ttl_s by each write, not a key per trace.
        patterns = {"done": "done:*", "written": "written_marks:*", "judge": "judge:*"}
        for kind, pattern in patterns.items():
            ttls = [int(r.pttl(k)) for k in r.scan_iter(f"{stack.prefix}:{pattern}", count=1000)]
            # -1: no expiry; -2: expired between the scan and the PTTL (not counted).
            out[kind] = max(
                (math.inf if t == -1 else t / 1000 for t in ttls if t != -2), default=0.0
            )
        return out
    finally:
        r.close()


def _wait_assigned(stack: SoakStack, timeout: float = 120.0) -> None:
    for replica in stack.replicas:
        replica.wait_for_log(ASSIGNED, timeout)


def run_soak(config: SoakConfig, tmp: Path, log: Callable[[str], None] = print) -> SoakResult:
    """Run the soak of ``config`` with its services under ``tmp``; see the module docstring."""
    faults = config.schedule()
    log(f"soak seed {config.seed} (replay: --seed {config.seed} with the same duration)")
    for fault in faults:
        log(f"  scheduled {fault.describe()}")
    began = time.monotonic()
    with soak_stack(tmp, config.replicas) as stack:
        _wait_assigned(stack)
        log(f"  replicas assigned after {time.monotonic() - began:.0f} s")
        monitor = _Monitor(stack, began)
        monitor.start()
        load = SteadyLoad(stack.app_url, config.rate, salt=config.seed & 0xFFFF_FFFF)
        load.start()
        load_start = time.monotonic()
        try:
            time.sleep(config.warmup_s)
            fault_start = time.monotonic()
            threads = [stack.play(f, fault_start, log) for f in faults]
            for thread in threads:
                thread.join()
            last_fault = time.monotonic()
            time.sleep(config.calm_s)
        finally:
            stack.lift_all()
            accepted = load.stop()
            load_stopped = time.monotonic()
            load_s = load_stopped - began
        key_ttls = _longest_ttls(stack)  # while the keys of the last traces are fresh
        big_delay = None
        if config.big_trace:
            big_delay = _oversized_trace(stack, config, accepted)
        latency_ok = _drain(stack, accepted, config.drain_timeout_s, log)
        log(f"  drained: {latency_ok}")
        time.sleep(2.0)  # a late duplicate (collector batch, a resend) would arrive by now
        monitor.halt.set()
        monitor.join(5)
        monitor.sample()
        writebacks, _ = stack.sink.spans_since(0)
        verdict = check(
            History(
                accepted,
                writebacks,
                _given_up(stack),
                sum(monitor.samples.scored_max.values()) if monitor.samples.scored_max else None,
            )
        )
        warm = [
            verdict.latency_s[t]
            for t, at in accepted.items()
            if load_start + 2 <= at < fault_start - 2 and t in verdict.latency_s
        ]
        baseline = p95(warm)
        threshold = max(1.0, 1.25 * baseline)
        return SoakResult(
            config=config,
            faults=tuple(faults),
            verdict=verdict,
            baseline_p95_s=baseline,
            recovery_threshold_s=threshold,
            # Over the steady load: the oversized trace's probe after it is measured apart.
            recovery_s=recovery_s(
                {t: at for t, at in accepted.items() if at <= load_stopped},
                verdict.latency_s,
                last_fault,
                threshold,
            ),
            samples=monitor.samples,
            refused=load.refused,
            judge_answers=dict(stack.weather.answered),
            big_trace_delay_s=None if big_delay is None else big_delay - baseline,
            pending_keys=_pending(stack) if latency_ok else -1,
            wall_s=time.monotonic() - began,
            key_ttls_s=key_ttls,
            load_s=load_s,
            timeline=_timeline(accepted, verdict.latency_s, fault_start),
        )


def _timeline(
    accepted: dict[str, float], latency_s: Mapping[str, float], origin: float, step: float = 10.0
) -> tuple[tuple[float, int, float], ...]:
    windows: dict[int, list[float]] = {}
    for trace, at in accepted.items():
        if trace in latency_s:
            windows.setdefault(int((at - origin) // step), []).append(latency_s[trace])
    return tuple((k * step, len(v), p95(v)) for k, v in sorted(windows.items()))


def _oversized_trace(
    stack: SoakStack, config: SoakConfig, accepted: dict[str, float]
) -> float | None:
    """Post the oversized trace, then 20 ordinary ones over 2 s; the largest latency of those
    (they join ``accepted``), or None if one was not scored within 60 s."""
    body, big_id = big_trace_request(salt=(config.seed & 0xFFFF) | 1 << 20)
    _post(stack.app_url, body)
    accepted[big_id] = time.monotonic()
    load = SteadyLoad(stack.app_url, 10.0, per_request=1, salt=(config.seed & 0xFFFF) | 2 << 20)
    load.start()
    time.sleep(2.0)
    behind = load.stop()
    accepted.update(behind)
    deadline = time.monotonic() + 60
    arrived: dict[str, float] = {}
    cursor = 0
    while len(arrived) < len(behind) and time.monotonic() < deadline:
        new, cursor = stack.sink.spans_since(cursor)
        for at, span in new:
            if span.trace_id in behind:
                arrived.setdefault(span.trace_id, at)
        time.sleep(0.2)
    if len(arrived) < len(behind):
        return None
    return max(arrived[t] - behind[t] for t in behind)


def _post(url: str, body: bytes) -> None:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/x-protobuf"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        if resp.status != 200:
            raise AssertionError(f"the collector refused the oversized trace: {resp.status}")


def _drain(
    stack: SoakStack, accepted: dict[str, float], timeout: float, log: Callable[[str], None]
) -> bool:
    """Wait until every accepted trace has its summary evaluation span or is given up."""
    from ragtrace import semconv

    left = set(accepted)
    cursor = 0
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        new, cursor = stack.sink.spans_since(cursor)
        left -= {s.trace_id for _, s in new if s.name == semconv.SPAN_EVALUATION}
        if left and len(left) < 50:
            left -= set(_given_up(stack))
        time.sleep(0.5)
    if left:
        log(f"  not scored after {timeout:g} s: {len(left)}, e.g. {sorted(left)[:3]}")
    return not left
