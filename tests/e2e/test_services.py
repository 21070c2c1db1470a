"""The service fixtures themselves: each service is really up and usable."""

from __future__ import annotations

import redis

import pytest

pytestmark = pytest.mark.e2e


def test_redis_url_serves_a_private_redis(redis_url: str) -> None:
    assert redis_url.startswith("redis://127.0.0.1:") and redis_url.endswith("/0")
    client = redis.Redis.from_url(redis_url)
    client.set("ragtrace:fixture-check", "ok")
    assert client.get("ragtrace:fixture-check") == b"ok"
    assert client.config_get("save") == {"save": ""}
    client.delete("ragtrace:fixture-check")
