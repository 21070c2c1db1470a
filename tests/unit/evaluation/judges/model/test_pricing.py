from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ragtrace.evaluation.judges import ModelPrice, PriceTable, Usage, load_prices
from ragtrace.evaluation.judges.model.caching import (
    estimate_tokens,
    min_cacheable_tokens,
    should_cache,
)


def test_cost_per_token_type() -> None:
    price = ModelPrice(1.0, 5.0)  # claude-haiku-4-5: $1 in, $5 out, writes 1.25x, reads 0.1x
    usage = Usage(
        input_tokens=3000,
        output_tokens=200,
        cache_read_input_tokens=10000,
        cache_creation_input_tokens=4000,
    )
    # 3000*1 + 200*5 + 4000*1.25 + 10000*0.1 = 3000 + 1000 + 5000 + 1000 = 10000 per 1e6
    assert price.cost(usage) == pytest.approx(0.01)


def test_dated_model_ids_find_their_prefix() -> None:
    table = PriceTable()
    assert table.lookup("claude-haiku-4-5-20251001") == ModelPrice(1.0, 5.0)
    assert table.lookup("claude-opus-4-5-20251101") == ModelPrice(5.0, 25.0)
    assert table.lookup("claude-opus-4-20250514") == ModelPrice(15.0, 75.0)
    assert table.lookup("claude-sonnet-4-5-20250929") == ModelPrice(3.0, 15.0)
    assert table.lookup("gpt-4o") is None


def test_unknown_model_costs_zero_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert PriceTable().cost("mystery-model", Usage(10, 10)) == 0.0
    assert "no price for judge model 'mystery-model'" in caplog.text


def test_json_file_overrides_and_merges(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "claude-haiku-4-5": {"input": 2, "output": 10, "cache_read_multiplier": 0.05},
                "my-model": {"input": 0.5, "output": 1},
            }
        )
    )
    table = load_prices(path)
    assert table.lookup("claude-haiku-4-5-20251001") == ModelPrice(2, 10, 1.25, 0.05)
    assert table.lookup("my-model-v2") == ModelPrice(0.5, 1)
    assert table.lookup("claude-sonnet-4-5") == ModelPrice(3.0, 15.0)  # defaults kept


def test_bad_explicit_file_raises_with_where(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"m": {"input": -1, "output": 1}}')
    with pytest.raises(ValueError, match=r"prices.json: m: ModelPrice.input"):
        load_prices(path)
    path.write_text('{"m": {"input": 1, "output": 1, "cache_write": 2}}')
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['cache_write'\]"):
        load_prices(path)
    path.write_text("{oops")
    with pytest.raises(ValueError, match="invalid JSON at line 1"):
        load_prices(path)


def test_env_inline_json_path_and_bad_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE_PRICES", '{"x-model": {"input": 1, "output": 2}}')
    assert load_prices().lookup("x-model") == ModelPrice(1, 2)
    path = tmp_path / "p.json"
    path.write_text('{"y-model": {"input": 3, "output": 4}}')
    monkeypatch.setenv("RAGTRACE_JUDGE_PRICES", str(path))
    assert load_prices().lookup("y-model") == ModelPrice(3, 4)
    monkeypatch.setenv("RAGTRACE_JUDGE_PRICES", str(tmp_path / "missing.json"))
    with caplog.at_level(logging.WARNING):
        assert load_prices() == PriceTable()
    assert "ignoring RAGTRACE_JUDGE_PRICES" in caplog.text


def test_cache_minimums_per_model_family() -> None:
    assert min_cacheable_tokens("claude-haiku-4-5-20251001") == 4096
    assert min_cacheable_tokens("claude-sonnet-4-5-20250929") == 1024
    assert min_cacheable_tokens("claude-opus-4-1-20250805") == 1024
    assert min_cacheable_tokens("claude-opus-4-5") == 4096
    assert min_cacheable_tokens("claude-3-5-haiku-latest") == 2048
    assert min_cacheable_tokens("some-future-model") == 4096
    assert estimate_tokens("x" * 5000) == 1000
    assert not should_cache("claude-sonnet-4-5", "x" * (5 * 1024 - 1))
    assert should_cache("claude-sonnet-4-5", "x" * (5 * 1024))
    assert not should_cache("claude-haiku-4-5", "x" * (5 * 1024))
    assert should_cache("claude-haiku-4-5", "x" * (5 * 4096))


@pytest.mark.parametrize(
    ("model", "claude", "price"),
    [
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5-20251001", (1, 5)),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929", (3, 15)),
        ("anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku-20240307", (0.25, 1.25)),
        ("claude-opus-4-1@20250805", "claude-opus-4-1-20250805", (15, 75)),
        ("claude-haiku-4-5@20251001", "claude-haiku-4-5-20251001", (1, 5)),
    ],
)
def test_bedrock_and_vertex_ids_are_priced_as_claude(
    model: str, claude: str, price: tuple[float, float]
) -> None:
    from ragtrace.evaluation.judges.model.pricing import claude_model_name

    assert claude_model_name(model) == claude
    assert PriceTable().lookup(model) == ModelPrice(*price)
    assert min_cacheable_tokens(model) == min_cacheable_tokens(claude)


def test_an_explicit_entry_for_a_platform_id_wins_and_other_models_are_unknown() -> None:
    bedrock = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    table = PriceTable(
        {**PriceTable().prices, "us.anthropic.claude-sonnet-4-5": ModelPrice(3.3, 16.5)}
    )
    assert table.lookup(bedrock) == ModelPrice(3.3, 16.5)
    assert not PriceTable().known("qwen2.5:7b") and PriceTable().known(bedrock)
    assert PriceTable().cost("qwen2.5:7b", Usage(1000, 100)) == 0.0
