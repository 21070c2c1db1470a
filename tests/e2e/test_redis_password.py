"""A real Redis that requires a password: the password reaches the client apart from the URL
(``RAGTRACE_REDIS_PASSWORD``, the Helm chart's wiring) in ``ragtrace labels`` and ``ragtrace
consume``, and no output of either carries it — nor a wrong one."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.cli import main
from scripts.services.process import free_port
from scripts.services.redis import RedisServer, start_redis

PASSWORD = "e2e-Redis-pw-4k7"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "labels.jsonl"


@pytest.fixture(scope="module")
def locked_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    import redis

    server = start_redis(tmp_path_factory.mktemp("redis-auth"))
    redis.Redis(port=server.port).config_set("requirepass", PASSWORD)
    yield server
    server.stop()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("RAGTRACE_"):
            monkeypatch.delenv(name)
    return monkeypatch


def _run(
    argv: list[str], capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> tuple[int, str]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        code = main(argv)
    out, err = capfd.readouterr()
    return code, out + err + "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)


def test_labels_authenticate_with_the_separate_password(
    locked_redis: RedisServer,
    clean_env: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    clean_env.setenv("RAGTRACE_REDIS_URL", locked_redis.url)
    clean_env.setenv("RAGTRACE_REDIS_KEY_PREFIX", "auth-e2e")
    code, text = _run(["labels", "load", str(EXAMPLE)], capfd, caplog)
    assert code == 3 and "Authentication required" in text  # the server does require it
    clean_env.setenv("RAGTRACE_REDIS_PASSWORD", PASSWORD)
    code, text = _run(["labels", "load", str(EXAMPLE)], capfd, caplog)
    assert code == 0, text
    assert "loaded" in text and PASSWORD not in text
    wrong = "Wrong-pw-e2e-81"
    clean_env.setenv("RAGTRACE_REDIS_PASSWORD", wrong)
    code, text = _run(["labels", "list"], capfd, caplog)
    assert code == 3 and wrong not in text and PASSWORD not in text
    assert f"cannot use Redis at {locked_redis.url}" in text


def test_consume_gets_the_password_from_its_settings(
    locked_redis: RedisServer,
    clean_env: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis answers (the password worked); start-up then fails on the Kafka that is not there,
    with the SASL password planted too: neither appears in the output."""
    clean_env.setenv("RAGTRACE_REDIS_URL", locked_redis.url)
    clean_env.setenv("RAGTRACE_REDIS_PASSWORD", PASSWORD)
    clean_env.setenv("RAGTRACE_KAFKA_BOOTSTRAP_SERVERS", f"127.0.0.1:{free_port()}")
    clean_env.setenv("RAGTRACE_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    clean_env.setenv("RAGTRACE_KAFKA_SASL_MECHANISM", "PLAIN")
    clean_env.setenv("RAGTRACE_KAFKA_SASL_USERNAME", "ragtrace")
    clean_env.setenv("RAGTRACE_KAFKA_SASL_PASSWORD", PASSWORD + "-kafka")
    clean_env.setenv("RAGTRACE_HEALTH_STARTUP_WAIT_S", "1")
    code, text = _run(["consume", "--log-level", "DEBUG"], capfd, caplog)
    assert code == 3  # a dependency unreachable (docs/cli.md)
    assert "ragtrace consume: error: Kafka at 127.0.0.1:" in text, text
    assert PASSWORD not in text
