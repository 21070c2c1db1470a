"""ConsumerConfig: defaults, the documented example file, env overrides, errors naming the key."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragtrace_consumers.config import (
    ENV_CONFIG_FILE,
    ConfigError,
    ConsumerConfig,
    ScoringSettings,
    env_var,
    example_path,
    load_config,
)
from tests.unit.consumers.config.config_errors import config_error


def _without_source(cfg: ConsumerConfig) -> ConsumerConfig:
    return cfg.model_copy(update={"source": "x"})


def test_example_is_package_data_next_to_the_module() -> None:
    assert example_path().name == "ragtrace-consumer.yaml"
    module_file = importlib.import_module("ragtrace_consumers.config").__file__
    assert example_path().parent == Path(str(module_file)).parent


def test_defaults() -> None:
    cfg = ConsumerConfig.defaults()
    assert cfg.kafka.topic == "otlp_spans"
    assert cfg.kafka.group_id == "ragtrace-consumer"
    assert cfg.kafka.commit_interval_s == 1.0
    assert cfg.judge.concurrency == 8
    assert cfg.judge.model is None
    assert cfg.scoring.k == 5
    assert cfg.source == "defaults"


def test_env_var_names() -> None:
    assert env_var("kafka", "bootstrap_servers") == "RAGTRACE_KAFKA_BOOTSTRAP_SERVERS"
    assert env_var("judge", "model") == "RAGTRACE_JUDGE_MODEL"


def test_env_overrides_file(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("kafka:\n  topic: from-file\n  group_id: g1\njudge:\n  concurrency: 3\n")
    cfg = load_config(
        f,
        env={
            "RAGTRACE_KAFKA_TOPIC": "from-env",
            "RAGTRACE_JUDGE_MODEL": "m-1",
            "RAGTRACE_SAMPLING_JUDGE_RATE": "0.25",
        },
    )
    assert cfg.kafka.topic == "from-env"
    assert cfg.kafka.group_id == "g1"
    assert cfg.judge.concurrency == 3
    assert cfg.judge.model == "m-1"
    assert cfg.sampling.judge_rate == 0.25
    assert cfg.source == str(f)


def test_config_file_from_env_variable(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("scoring:\n  k: 10\n")
    assert load_config(None, env={ENV_CONFIG_FILE: str(f)}).scoring.k == 10


@pytest.mark.parametrize(
    "body, message",
    [
        ("judge:\n  concurrency: 0\n", "judge.concurrency: must be > 0, got 0"),
        ("judge:\n  concurrency: many\n", "judge.concurrency: expected integer, got 'many'"),
        ("judge:\n  concurrency: 2.5\n", "judge.concurrency: expected integer, got 2.5"),
        ("sampling:\n  judge_rate: 1.5\n", "sampling.judge_rate: must be between 0 and 1, got 1.5"),
        (
            "kafka:\n  auto_offset_reset: middle\n",
            "kafka.auto_offset_reset: must be one of earliest, latest, got 'middle'",
        ),
        ("kafka:\n  topc: x\n", "kafka.topc: unknown key"),
        ("kafak:\n  topic: x\n", "kafak: unknown section"),
        ("redis:\n  url: localhost\n", "redis.url: must be a URL, got 'localhost'"),
        (
            "judge:\n  park_backoff_s: 100\n  park_backoff_max_s: 10\n",
            "judge.park_backoff_max_s: must be >= judge.park_backoff_s",
        ),
        ("- a\n- b\n", "expected a mapping of sections"),
        ("kafka: [1]\n", "kafka: expected a mapping of keys"),
        ("kafka:\n  topic: [a\n", "not valid YAML"),
    ],
)
def test_bad_file_value_names_file_and_key(tmp_path: Path, body: str, message: str) -> None:
    f, error = config_error(tmp_path, body)
    assert message in error
    assert str(f) in error


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_config(tmp_path / "nope.yaml", env={})


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("RAGTRACE_JUDGE_CONCURRENCY", "lots", "judge.concurrency: expected integer, got 'lots'"),
        ("RAGTRACE_JUDGE_CONCURRENCY", "2.5", "judge.concurrency: expected integer, got '2.5'"),
        ("RAGTRACE_JUDGE_CONCURRENCY", "0", "judge.concurrency: must be > 0, got 0"),
        ("RAGTRACE_SAMPLING_RECALL_RATE", "2", "sampling.recall_rate: must be between 0 and 1"),
        ("RAGTRACE_KAFKA_COMMIT_INTERVAL_S", "soon", "kafka.commit_interval_s: expected number"),
        ("RAGTRACE_HEALTH_ENABLED", "maybe", "health.enabled: expected boolean, got 'maybe'"),
        ("RAGTRACE_KAFKA_TOPIC", "", "kafka.topic: must be non-empty"),
        ("RAGTRACE_JUDGE_MODE", "later", "judge.mode: must be one of realtime, batch"),
        ("RAGTRACE_REDIS_URL", "localhost", "redis.url: must be a URL"),
        ("RAGTRACE_MAPPING_QUERY", "a:$$[", "mapping.query:"),
    ],
)
def test_bad_env_value_of_each_type_is_an_error_naming_variable_and_key(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    _, error = config_error(tmp_path, "judge:\n  concurrency: 3\n", {name: value})
    assert error.startswith(f"environment variable {name}: "), error
    assert message in error


def test_consume_exits_2_on_a_bad_env_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtrace.cli import main

    monkeypatch.delenv(ENV_CONFIG_FILE, raising=False)
    monkeypatch.setenv("RAGTRACE_JUDGE_CONCURRENCY", "lots")
    assert main(["consume", "--print-config"]) == 2
    assert "RAGTRACE_JUDGE_CONCURRENCY" in capsys.readouterr().err


def test_cross_field_error_names_each_keys_source(tmp_path: Path) -> None:
    f, error = config_error(
        tmp_path, "judge:\n  park_backoff_max_s: 10\n", {"RAGTRACE_JUDGE_PARK_BACKOFF_S": "100"}
    )
    assert error.startswith(f"{f}: judge.park_backoff_max_s: must be >= ")
    assert "judge.park_backoff_s from environment variable RAGTRACE_JUDGE_PARK_BACKOFF_S" in error


@pytest.mark.parametrize(
    "name, closest",
    [
        ("RAGTRACE_JUDGE_CONCURENCY", "RAGTRACE_JUDGE_CONCURRENCY"),
        ("RAGTRACE_KAFKA_BOOTSTRAP_SERVER", "RAGTRACE_KAFKA_BOOTSTRAP_SERVERS"),
        ("RAGTRACE_SAMPLE_JUDGE_RATE", "RAGTRACE_SAMPLING_JUDGE_RATE"),
    ],
)
def test_unknown_ragtrace_variable_warns_with_the_closest_name(
    caplog: pytest.LogCaptureFixture, name: str, closest: str
) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = load_config(None, env={name: "1"})
    assert cfg == ConsumerConfig.defaults()
    assert f"unknown environment variable {name}" in caplog.text
    assert f"did you mean {closest}?" in caplog.text


def test_known_variables_of_other_ragtrace_parts_are_not_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {
        "RAGTRACE_ENABLED": "true",
        "RAGTRACE_STATE": "x",
        "RAGTRACE_CONSUMER_CONFIG": "",
        "RAGTRACE_BATCH_MAX_SPANS": "10",
        "RAGTRACE_TRACE_BACKEND_HEADER_X_SCOPE_ORGID": "t",
        "OTHER_VARIABLE": "x",
    }
    with caplog.at_level(logging.WARNING):
        load_config(None, env=env)
    assert "unknown" not in caplog.text


def test_unknown_key_in_the_file_names_the_closest_key(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("judge:\n  concurency: 3\n")
    with pytest.raises(
        ConfigError, match="judge.concurency: unknown key .*did you mean concurrency"
    ):
        load_config(f, env={})


def test_sources_of_each_value(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("judge:\n  concurrency: 3\n  budget_s: 40\n")
    cfg = load_config(f, env={"RAGTRACE_JUDGE_BUDGET_S": "50", "RAGTRACE_SCORING_K": "7"})
    assert cfg.source_of("judge", "concurrency") == str(f)
    assert cfg.source_of("judge", "budget_s") == "env RAGTRACE_JUDGE_BUDGET_S"
    assert cfg.source_of("scoring", "k") == "env RAGTRACE_SCORING_K"
    assert cfg.source_of("kafka", "topic") == "default"
    assert cfg.replace(judge={"name": "lexical"}).source_of("judge", "name") == "override"


def test_print_config_shows_each_values_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtrace.cli import main

    f = tmp_path / "c.yaml"
    f.write_text("judge:\n  concurrency: 3\nsampling:\n  rules: [{match: {tenant: a}}]\n")
    monkeypatch.delenv(ENV_CONFIG_FILE, raising=False)
    monkeypatch.setenv("RAGTRACE_SCORING_K", "7")
    assert main(["consume", "--config", str(f), "--print-config"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert f"  concurrency: 3  # {f}" in lines
    assert "  k: 7  # env RAGTRACE_SCORING_K" in lines
    assert "  topic: otlp_spans  # default" in lines
    assert "  rules: [{match: {tenant: a}}]  # " + str(f) in lines
    # still YAML that loads as the same configuration
    again = tmp_path / "again.yaml"
    again.write_text(out)
    assert _without_source(load_config(again, env={})) == _without_source(
        load_config(f, env={"RAGTRACE_SCORING_K": "7"})
    )


def test_deprecated_recall_definition_variable_still_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = load_config(None, env={"RAGTRACE_RECALL_DEFINITION": "hit_rate"})
    assert cfg.scoring.recall_definition == "hit_rate"
    assert cfg.source_of("scoring", "recall_definition") == "env RAGTRACE_RECALL_DEFINITION"
    assert "RAGTRACE_RECALL_DEFINITION is deprecated" in caplog.text
    assert "RAGTRACE_SCORING_RECALL_DEFINITION" in caplog.text
    both = {
        "RAGTRACE_RECALL_DEFINITION": "hit_rate",
        "RAGTRACE_SCORING_RECALL_DEFINITION": "mean_recall",
    }
    assert load_config(None, env=both).scoring.recall_definition == "mean_recall"


def test_null_model_from_env() -> None:
    assert load_config(None, env={"RAGTRACE_JUDGE_MODEL": ""}).judge.model is None


def test_replace_validates() -> None:
    cfg = ConsumerConfig.defaults()
    assert cfg.replace(judge={"concurrency": 2}).judge.concurrency == 2
    with pytest.raises(ConfigError, match="judge.concurrency: must be > 0"):
        cfg.replace(judge={"concurrency": 0})
    with pytest.raises(ConfigError, match="unknown section"):
        cfg.replace(nope={})


def test_config_is_frozen() -> None:
    cfg = ConsumerConfig.defaults()
    with pytest.raises(ValidationError, match="frozen"):
        cfg.kafka = cfg.kafka


def test_serve_prints_the_config_with_sources(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtrace.cli import main

    monkeypatch.delenv(ENV_CONFIG_FILE, raising=False)
    monkeypatch.setenv("RAGTRACE_SCORING_K", "9")
    assert main(["serve", "--judge", "lexical", "--print-config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  k: 9  # env RAGTRACE_SCORING_K" in lines
    assert "  name: lexical  # override" in lines
    monkeypatch.setenv("RAGTRACE_SCORING_K", "zero")
    assert main(["serve", "--print-config"]) == 2
    assert "environment variable RAGTRACE_SCORING_K: scoring.k" in capsys.readouterr().err


def test_other_readers_of_redis_keys_use_the_models_names_and_defaults() -> None:
    """The labels command and the Redis stores read redis.url/redis.key_prefix themselves (no
    configuration file): their variable names and defaults are the model's."""
    from ragtrace_consumers.commands import labels
    from ragtrace_consumers.config import RedisSettings
    from ragtrace_consumers.stores import redis as redis_stores

    for module in (labels, redis_stores):
        assert env_var("redis", "url") == module.ENV_REDIS_URL
        assert env_var("redis", "key_prefix") == module.ENV_REDIS_PREFIX
        assert RedisSettings().url == module.DEFAULT_REDIS_URL
        assert RedisSettings().key_prefix == module.DEFAULT_PREFIX


@pytest.mark.parametrize("key", ["attempts", "retry_backoff_s"])
def test_removed_judge_keys_are_refused_by_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    """judge.attempts and judge.retry_backoff_s gave way to judge.budget_s (one retry owner)."""
    f = tmp_path / "c.yaml"
    f.write_text(f"judge:\n  {key}: 3\n")
    with pytest.raises(ConfigError, match=rf"^{f}: judge\.{key}: unknown key \(known: name, "):
        load_config(f, env={})
    with caplog.at_level(logging.WARNING):
        load_config(None, env={env_var("judge", key): "3"})
    assert f"unknown environment variable {env_var('judge', key)} is ignored" in caplog.text


def test_the_settings_class_reads_the_environment_and_the_file_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ConsumerConfig(**values) is a BaseSettings: the values > os.environ > the file named by
    $RAGTRACE_CONSUMER_CONFIG > the defaults, each key's source kept."""
    f = tmp_path / "c.yaml"
    f.write_text("judge:\n  concurrency: 3\n  budget_s: 40\nscoring:\n  k: 4\n")
    monkeypatch.setenv(ENV_CONFIG_FILE, str(f))
    monkeypatch.setenv("RAGTRACE_JUDGE_BUDGET_S", "50")
    cfg = ConsumerConfig(scoring=ScoringSettings(k=9))
    assert (cfg.judge.concurrency, cfg.judge.budget_s, cfg.scoring.k) == (3, 50.0, 9)
    assert cfg.source == str(f)
    assert cfg.source_of("judge", "concurrency") == str(f)
    assert cfg.source_of("judge", "budget_s") == "env RAGTRACE_JUDGE_BUDGET_S"
