"""The fake judge's bad weather (tests/fakes/judge_weather.py), through the real client."""

from __future__ import annotations

import time

import anthropic
import pytest

from tests.fakes.anthropic_server import FakeAnthropic, text_reply
from tests.fakes.judge_weather import JudgeWeather, Spell


def _ask(api: FakeAnthropic, timeout: float = 5.0) -> str:
    client = anthropic.Anthropic(
        api_key="test-key", base_url=api.base_url, max_retries=0, timeout=timeout
    )
    reply = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
    )
    block = reply.content[0]
    assert block.type == "text"
    return block.text


def test_spells_answer_429_529_hang_and_slow_then_fair_weather() -> None:
    weather = JudgeWeather(lambda _request: text_reply("fine"), hang_s=1.0, retry_after_s=2.0)
    with FakeAnthropic(weather) as api:
        assert _ask(api) == "fine"
        weather.spell("rate_limited", 30)
        with pytest.raises(anthropic.RateLimitError) as limited:
            _ask(api)
        assert limited.value.response.headers["retry-after"] == "2"
        weather.spell("overloaded", 30)  # an error spell wins over none; both in force: 429
        with pytest.raises(anthropic.RateLimitError):
            _ask(api)
        weather.clear()
        weather.spell("overloaded", 30)
        with pytest.raises(anthropic.APIStatusError) as overloaded:
            _ask(api)
        assert overloaded.value.status_code == 529
        weather.clear()
        weather.spell("timeout", 30)
        with pytest.raises(anthropic.APITimeoutError):
            _ask(api, timeout=0.3)
        weather.clear()
        weather.spell("slow", 30, delay_s=0.3)
        began = time.monotonic()
        assert _ask(api) == "fine"
        assert time.monotonic() - began >= 0.3
        weather.clear()
        weather.spell("slow", 0.0, delay_s=5.0)  # over at once
        assert _ask(api) == "fine"
    assert weather.answered == {
        "ok": 2,
        "rate_limited": 2,
        "overloaded": 1,
        "timeout": 1,
        "slow": 1,
    }


def test_a_bad_spell_is_refused() -> None:
    with pytest.raises(ValueError, match="Spell.kind"):
        Spell("hail", 0.0, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="end before start"):
        Spell("slow", 2.0, 1.0)
