"""``serve``'s flags are generated from the settings model: each overrides its key (flag >
environment variable > file > default), keeps the variable ``serve`` read before it was a key,
and parses its value by the key's type."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ragtrace_consumers.commands.setting_flags import add_setting_flags, with_flags
from ragtrace_consumers.config import ConsumerConfig, env_var, load_config
from ragtrace_consumers.config.flags import Flag, FlaggedKey, flagged


def _parse(argv: list[str]) -> tuple[argparse.Namespace, tuple[FlaggedKey, ...]]:
    parser = argparse.ArgumentParser(exit_on_error=False)
    keys = add_setting_flags(parser, ("serve", "judge", "web"))
    return parser.parse_args(argv), keys


def test_a_given_flag_overrides_the_environment_and_the_file(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("serve:\n  port: 5000\n  metrics_port: 5001\n  host: 10.0.0.1\n")
    env = {"RAGTRACE_SERVE_PORT": "6000"}
    args, keys = _parse(["--port", "7000", "--no-metrics", "--no-web", "--judge", "lexical"])
    config = with_flags(load_config(file, env=env), args, keys)
    assert (config.serve.port, config.serve.metrics_port, config.serve.host) == (
        7000,
        5001,
        "10.0.0.1",
    )
    assert (config.serve.metrics, config.web.enabled, config.judge.name) == (
        False,
        False,
        "lexical",
    )
    assert config.source_of("serve", "port") == "override"
    assert config.source_of("serve", "metrics_port") == str(file)


def test_flags_not_given_change_nothing() -> None:
    args, keys = _parse([])
    config = ConsumerConfig.defaults()
    assert with_flags(config, args, keys) == config


@pytest.mark.parametrize(
    ("key", "variable"),
    [
        ("labels", "RAGTRACE_LABELS"),
        ("state", "RAGTRACE_STATE"),
        ("otlp_endpoint", "RAGTRACE_EXPORT_OTLP_ENDPOINT"),
        ("token", "RAGTRACE_SERVE_TOKEN"),
        ("host", "RAGTRACE_SERVE_HOST"),
    ],
)
def test_serve_keys_read_the_variables_serve_read_before(key: str, variable: str) -> None:
    assert env_var("serve", key) == variable
    value = "http://127.0.0.1:4328" if key == "otlp_endpoint" else "some-value"
    config = load_config(None, env={variable: value})
    got = getattr(config.serve, key)
    assert (got.get_secret_value() if key == "token" else got) == value


def test_flag_values_are_parsed_by_the_keys_type() -> None:
    for argv in (["--port", "70000"], ["--max-pending-mib", "0"], ["--otlp-signals", "logs"]):
        with pytest.raises(argparse.ArgumentError):
            _parse(argv)
    args, _ = _parse(["--port", "0", "--max-pending-traces", "3", "--otlp-signals", "traces"])
    assert (args.port, args.max_pending_traces, args.otlp_signals) == (0, 3, "traces")


def test_every_flag_belongs_to_one_key() -> None:
    names = [k.flag.name for k in flagged(ConsumerConfig, ("serve", "judge", "web"))]
    assert len(names) == len(set(names)) == 20
    with pytest.raises(ValueError, match="starts with --"):
        Flag("port", "help")
