"""Assembly settings: the trace store's TTL and park limit, validated and handed to the Redis
store of the Kafka consumer and the in-memory store of the embedded evaluator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace.evaluation.judges import make_judge
from ragtrace_consumers.config import ConfigError, ConsumerConfig, load_config
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.stores.defaults import DEFAULT_MAX_ATTEMPTS, DEFAULT_TTL_S
from tests.unit.consumers.config.config_errors import config_error
from tests.unit.consumers.service_fakes import build_with_fakes


def test_defaults_are_the_stores_defaults() -> None:
    a = ConsumerConfig.defaults().assembly
    assert (a.ttl_s, a.max_attempts) == (DEFAULT_TTL_S, DEFAULT_MAX_ATTEMPTS) == (3600.0, 200)


def test_from_the_file_and_the_environment(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("assembly:\n  ttl_s: 900\n  max_attempts: 5\n")
    a = load_config(f, env={"RAGTRACE_ASSEMBLY_MAX_ATTEMPTS": "7"}).assembly
    assert (a.ttl_s, a.max_attempts) == (900.0, 7)


@pytest.mark.parametrize(
    "body, message",
    [
        ("ttl_s: 0\n", "assembly.ttl_s: must be > 0, got 0.0"),
        ("max_attempts: 0\n", "assembly.max_attempts: must be > 0, got 0"),
        ("max_attempts: 1.5\n", "assembly.max_attempts: expected integer, got 1.5"),
        # default quiet_s 5 -> idle wait 60; + lease 300 = 360
        (
            "ttl_s: 360\n",
            (
                "assembly.ttl_s: must exceed the longest wait for completion "
                "(max(assembly.quiet_s, 60)) plus assembly.lease_s = 360, got 360"
            ),
        ),
        (
            "quiet_s: 120\n  lease_s: 100\n  ttl_s: 200\n",
            (
                "assembly.ttl_s: must exceed the longest wait for completion (max(assembly.quiet_s, 60)) "
                "plus assembly.lease_s = 220, got 200"
            ),
        ),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    f, error = config_error(tmp_path, "assembly:\n  " + body)
    assert message in error
    assert str(f) in error


def test_a_too_short_ttl_from_the_environment_is_an_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, env={"RAGTRACE_ASSEMBLY_TTL_S": "10"})
    assert str(err.value).startswith(
        "environment variable RAGTRACE_ASSEMBLY_TTL_S: assembly.ttl_s:"
    )
    # the cross-field check names where each key it compares came from
    assert "assembly.lease_s from default" in str(err.value)


def test_the_kafka_consumers_redis_store_gets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = ConsumerConfig.defaults().replace(assembly={"ttl_s": 900, "max_attempts": 5})
    built = build_with_fakes(monkeypatch, cfg)
    try:
        assert built.stores["RedisTraceStore"] == {
            "prefix": "ragtrace",
            "ttl_s": 900.0,
            "max_attempts": 5,
        }
        traces: Any = built.service.pipeline.traces  # the Redis store behind its retrying proxy
        assert (traces._ttl_ms, traces._max_attempts) == (900_000, 5)
    finally:
        built.service.meter_provider.shutdown()


def test_the_embedded_evaluators_store_gets_them(tmp_path: Path) -> None:
    cfg = ConsumerConfig.defaults().replace(assembly={"ttl_s": 900, "max_attempts": 5})
    ev = EmbeddedEvaluator(
        cfg.replace(serve={"port": 0, "state": tmp_path / "s.db", "metrics": False}),
        judge=make_judge("lexical"),
    )
    try:
        assert (ev.traces._ttl_s, ev.traces._max_attempts) == (900.0, 5)
    finally:
        ev.stop()
