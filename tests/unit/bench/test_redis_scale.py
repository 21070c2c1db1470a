"""The scale model's arithmetic and its reading of key names, commands and MONITOR lines
(bench/bench_redis_scale.py); tests/e2e/test_redis_key_kinds.py checks the kinds against the
keys the real stores write."""

from __future__ import annotations

import pytest

from bench.bench_redis_scale import (
    OTHER,
    KindCost,
    command_key,
    key_kind,
    marks_in_table,
    monitor_args,
    saturation,
)


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("rt:trace:abc:spans", "spans being assembled"),
        ("rt:{t3}:trace:abc:spans", "spans being assembled"),
        ("rt:due", "due and leases"),
        ("rt:{t15}:lease_tokens", "due and leases"),
        ("rt:done:abc", "done marks"),
        ("rt:{w2}:written_marks:0", "written marks"),
        ("rt:judge:9f", "judge cache"),
        ("rt:{labels}:labels:current", "labels"),
        ("rt:{budget}:budget:sums", "budget"),
        ("rt:stats", "counters and dead"),
        ("rt:dead:info", "counters and dead"),
        ("rt:session:12", "session turns"),
        ("rt:batch_submitted", "batches"),
        ("other:judge:9f", OTHER),
        ("rt:unknown", OTHER),
    ],
)
def test_key_kinds(key: str, kind: str) -> None:
    assert key_kind(key, "rt") == kind


def test_the_first_key_of_a_command_or_script() -> None:
    assert command_key(["EVALSHA", "ab12", "1", "rt:due", "x"]) == "rt:due"
    assert command_key(["evalsha", "ab12", "0", "arg"]) is None
    assert command_key(["HINCRBY", "rt:stats", "released", "1"]) == "rt:stats"
    assert command_key(["PING"]) is None
    assert command_key(["MULTI"]) is None
    assert command_key(["INFO", "cpu"]) is None
    assert command_key([]) is None


def test_monitor_lines_from_a_client_and_from_a_script() -> None:
    assert monitor_args('1700000000.123456 [0 127.0.0.1:5000] "GET" "rt:judge:x"') == (
        False,
        ["GET", "rt:judge:x"],
    )
    in_script, args = monitor_args('1700000000.2 [0 lua] "SET" "rt:done:a" "say \\"hi\\""')
    assert in_script and args == ["SET", "rt:done:a", 'say "hi"']


def test_occupied_slots_of_a_marks_string() -> None:
    slot = 12
    table = bytes(slot) + b"\x01" * slot + bytes(slot) + b"\x00" * 11 + b"\x02"
    assert marks_in_table(table, slot) == 2
    assert marks_in_table(b"", slot) == 0


def test_a_node_saturates_on_the_resource_it_runs_out_of_first() -> None:
    week = 7 * 86400.0
    costs = [
        KindCost("judge cache", 1.0, 0.03, 800.0, week),
        KindCost("spans being assembled", 9.0, 0.02, 1500.0, 5.0),
        KindCost("labels", 0.0, 0.0, 0.0, 0.0, fixed_bytes=2**20),
    ]
    node = 8 * 2**30
    sat = saturation(costs, 70e-6, node)
    per_rate = 800.0 * week + 1500.0 * 5.0
    assert sat.memory == pytest.approx((node - 2**20) / per_rate)
    assert sat.cpu == pytest.approx(1 / 70e-6)
    assert sat.limit == "memory" and sat.rate == sat.memory
    assert sum(sat.memory_share.values()) == pytest.approx(1.0)
    assert sat.memory_share["judge cache"] > 0.99
    # With no judge cache kept the node runs out of CPU first.
    short = saturation([KindCost("spans being assembled", 9.0, 0.02, 1500.0, 5.0)], 70e-6, node)
    assert short.limit == "CPU" and short.rate == pytest.approx(1 / 70e-6)


def test_fixed_bytes_beyond_the_node_are_refused() -> None:
    with pytest.raises(ValueError, match="exceed"):
        saturation([KindCost("labels", 0, 0, 0, 0, fixed_bytes=2.0)], 1e-6, 1.0)
