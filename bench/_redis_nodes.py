"""What Redis servers did, read from each node itself (``INFO``), for the benchmarks that put a
consumer's work on one server or on a cluster's primaries."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["server_totals"]


def server_totals(ports: Sequence[int]) -> tuple[float, int]:
    """(CPU seconds, commands run) so far, summed over the loopback Redis nodes at ``ports``
    (``INFO cpu``, ``INFO commandstats``; each node asked directly, never through a cluster
    client)."""
    import redis

    cpu, calls = 0.0, 0
    for port in ports:
        r = redis.Redis(port=port)
        info = r.info("cpu")
        cpu += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        calls += sum(int(v["calls"]) for v in r.info("commandstats").values())
        r.close()
    return cpu, calls
