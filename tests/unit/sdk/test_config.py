"""The SDK's settings are declared once: each field carries its variable, default and description."""

from __future__ import annotations

import dataclasses

import pytest

from ragtrace import _config
from tests.unit.sdk.conftest import ENV_VARS


def test_every_environment_setting_is_a_field_with_its_variable_and_default() -> None:
    listed = {s.env: s for s in _config.env_settings()}
    # The list the SDK tests clear before each test: a new variable must join it.
    assert set(listed) == set(ENV_VARS)
    defaults = _config.Settings()
    for setting in listed.values():
        assert getattr(defaults, setting.name) == setting.default
        assert setting.doc.strip()
    # redact is explicit only (configure()): a function cannot come from the environment
    fields = {f.name: f for f in dataclasses.fields(_config.Settings)}
    assert fields["redact"].metadata["env"] is None


@pytest.mark.parametrize("word", sorted(_config.TRUE_WORDS | {"TRUE", " On "}))
def test_true_words(word: str) -> None:
    assert _config.parse_bool(word) is True


@pytest.mark.parametrize("word", sorted(_config.FALSE_WORDS | {"OFF", "No"}))
def test_false_words(word: str) -> None:
    assert _config.parse_bool(word) is False


@pytest.mark.parametrize("word", ["", "t", "y", "enabled", "2"])
def test_other_words_are_neither(word: str) -> None:
    assert _config.parse_bool(word) is None


def test_the_service_reads_booleans_with_the_sdks_words() -> None:
    consumers_config = pytest.importorskip("ragtrace_consumers.config")
    for word in _config.TRUE_WORDS:
        cfg = consumers_config.load_config(None, env={"RAGTRACE_HEALTH_ENABLED": word})
        assert cfg.health.enabled is True
    for word in _config.FALSE_WORDS:
        cfg = consumers_config.load_config(None, env={"RAGTRACE_EXPORT_METRICS_OTLP": word})
        assert cfg.export.metrics_otlp is False
    with pytest.raises(consumers_config.ConfigError, match="expected boolean, got 't'"):
        consumers_config.load_config(None, env={"RAGTRACE_HEALTH_ENABLED": "t"})
