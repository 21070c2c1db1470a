"""Kafka TLS/SASL settings: keys, validation naming the key, kafka-python's keyword arguments,
and secrets that never reach --print-config or a repr."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ragtrace.cli import main
from ragtrace_consumers.config import (
    REDACTED,
    ConfigError,
    ConsumerConfig,
    load_config,
    redact_url,
)
from tests.unit.consumers.config.config_errors import config_error
from tests.unit.consumers.service_fakes import build_with_fakes

# The variables the Helm chart sets for Kafka over mutual TLS with SASL/SCRAM.
CHART_ENV = {
    "RAGTRACE_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "RAGTRACE_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "RAGTRACE_KAFKA_SASL_USERNAME": "ragtrace",
    "RAGTRACE_KAFKA_SASL_PASSWORD": "s3cret-kafka",
    "RAGTRACE_KAFKA_SSL_CHECK_HOSTNAME": "false",
}


def _tls_files(tmp_path: Path) -> dict[str, str]:
    files = {}
    for key, name in (
        ("RAGTRACE_KAFKA_SSL_CAFILE", "ca.crt"),
        ("RAGTRACE_KAFKA_SSL_CERTFILE", "tls.crt"),
        ("RAGTRACE_KAFKA_SSL_KEYFILE", "tls.key"),
    ):
        (tmp_path / name).write_text("-----BEGIN-----\n")
        files[key] = str(tmp_path / name)
    return files


def test_defaults_are_plaintext() -> None:
    k = ConsumerConfig.defaults().kafka
    assert (k.security_protocol, k.sasl_mechanism, k.sasl_username, k.sasl_password) == (
        "PLAINTEXT",
        None,
        None,
        None,
    )
    assert (k.ssl_cafile, k.ssl_certfile, k.ssl_keyfile, k.ssl_check_hostname) == (
        None,
        None,
        None,
        True,
    )
    assert k.client_options() == {"security_protocol": "PLAINTEXT"}


def test_chart_environment_becomes_kafka_python_arguments(tmp_path: Path) -> None:
    files = _tls_files(tmp_path)
    cfg = load_config(None, env={**CHART_ENV, **files})
    assert cfg.kafka.client_options() == {
        "security_protocol": "SASL_SSL",
        "ssl_check_hostname": False,
        "ssl_cafile": str(tmp_path / "ca.crt"),
        "ssl_certfile": str(tmp_path / "tls.crt"),
        "ssl_keyfile": str(tmp_path / "tls.key"),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "ragtrace",
        "sasl_plain_password": "s3cret-kafka",
    }


def test_tls_without_files_uses_the_system_cas() -> None:
    cfg = load_config(None, env={"RAGTRACE_KAFKA_SECURITY_PROTOCOL": "SSL"})
    assert cfg.kafka.client_options() == {"security_protocol": "SSL", "ssl_check_hostname": True}


def test_sasl_plaintext_has_no_tls_options() -> None:
    cfg = ConsumerConfig.defaults().replace(
        kafka={
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_username": "u",
            "sasl_password": "p",
        }
    )
    assert cfg.kafka.client_options() == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
    }


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "security_protocol: TLS\n",
            "kafka.security_protocol: must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, got 'TLS'",
        ),
        (
            "security_protocol: SASL_SSL\n",
            "kafka.sasl_mechanism: required when kafka.security_protocol is SASL_SSL",
        ),
        (
            "sasl_mechanism: PLAIN\n  sasl_username: u\n  sasl_password: p\n",
            (
                "kafka.sasl_mechanism: needs kafka.security_protocol SASL_SSL or SASL_PLAINTEXT, "
                "got PLAINTEXT"
            ),
        ),
        (
            "security_protocol: SASL_SSL\n  sasl_mechanism: SCRAM-SHA-256\n  sasl_password: p\n",
            "kafka.sasl_username: required with kafka.sasl_mechanism SCRAM-SHA-256",
        ),
        (
            "security_protocol: SASL_SSL\n  sasl_mechanism: PLAIN\n  sasl_username: u\n",
            "kafka.sasl_password: required with kafka.sasl_mechanism PLAIN",
        ),
        (
            (
                "security_protocol: SASL_SSL\n  sasl_mechanism: GSSAPI\n  sasl_username: u\n"
                "  sasl_password: p\n"
            ),
            "kafka.sasl_mechanism: must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, got 'GSSAPI'",
        ),
        ("sasl_username: u\n", "kafka.sasl_username: set but kafka.sasl_mechanism is not"),
        ("sasl_password: p\n", "kafka.sasl_password: set but kafka.sasl_mechanism is not"),
        (
            "ssl_cafile: /ca.crt\n",
            "kafka.ssl_cafile: needs kafka.security_protocol SSL or SASL_SSL, got PLAINTEXT",
        ),
        (
            (
                "security_protocol: SASL_PLAINTEXT\n  sasl_mechanism: PLAIN\n  sasl_username: u\n"
                "  sasl_password: p\n  ssl_certfile: /c.crt\n"
            ),
            "kafka.ssl_certfile: needs kafka.security_protocol SSL or SASL_SSL, got SASL_PLAINTEXT",
        ),
        (
            "security_protocol: SSL\n  ssl_keyfile: /k.key\n",
            "kafka.ssl_keyfile: needs kafka.ssl_certfile",
        ),
        ("ssl_check_hostname: maybe\n", "kafka.ssl_check_hostname: expected boolean, got 'maybe'"),
    ],
)
def test_bad_security_settings_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    f, error = config_error(tmp_path, "kafka:\n  " + body)
    assert message in error
    assert str(f) in error
    assert "'p'" not in error  # a password is never quoted back


def test_sasl_from_the_environment_without_a_password_is_an_error() -> None:
    env = {k: v for k, v in CHART_ENV.items() if k != "RAGTRACE_KAFKA_SASL_PASSWORD"}
    with pytest.raises(
        ConfigError, match="kafka.sasl_password: required with kafka.sasl_mechanism SCRAM-SHA-512"
    ):
        load_config(None, env=env)


def test_an_unreadable_tls_file_fails_at_start_naming_the_key(tmp_path: Path) -> None:
    env = {
        **CHART_ENV,
        **_tls_files(tmp_path),
        "RAGTRACE_KAFKA_SSL_CAFILE": str(tmp_path / "missing-ca.crt"),
    }
    cfg = load_config(None, env=env)
    with pytest.raises(ConfigError, match=r"kafka.ssl_cafile: cannot read .*missing-ca.crt"):
        cfg.kafka.client_options()


def test_password_is_not_in_the_repr() -> None:
    cfg = load_config(None, env=CHART_ENV)
    assert "s3cret-kafka" not in repr(cfg.kafka)
    assert "s3cret-kafka" not in repr(cfg)
    assert "sasl_username='ragtrace'" in repr(cfg.kafka)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        (
            "rediss://ragtrace:pw@redis:6380/0?ssl_ca_certs=/ca.crt",
            "rediss://ragtrace:***@redis:6380/0?ssl_ca_certs=/ca.crt",
        ),
        ("redis://:pw@redis:6379/0", "redis://:***@redis:6379/0"),
        ("redis://user@redis:6379/0", "redis://user@redis:6379/0"),
        ("redis://redis:6379/0?password=pw&db=1", "redis://redis:6379/0?password=***&db=1"),
        ("http://collector:4328", "http://collector:4328"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_to_dict_masks_secrets_unless_asked() -> None:
    env = {**CHART_ENV, "RAGTRACE_REDIS_URL": "rediss://ragtrace:redis-pw@redis:6380/0"}
    cfg = load_config(None, env=env)
    shown = cfg.to_dict()
    assert shown["kafka"]["sasl_password"] == REDACTED == "***"
    assert shown["redis"]["url"] == "rediss://ragtrace:***@redis:6380/0"
    assert shown["kafka"]["sasl_username"] == "ragtrace"
    full = cfg.to_dict(redact=False)
    assert full["kafka"]["sasl_password"] == "s3cret-kafka"
    assert full["redis"]["url"] == "rediss://ragtrace:redis-pw@redis:6380/0"
    assert set(full) == set(ConsumerConfig.model_fields) - {"source", "sources"}


def test_unredacted_dict_loads_back_to_the_same_config(tmp_path: Path) -> None:
    cfg = load_config(None, env={**CHART_ENV, "RAGTRACE_JUDGE_CONCURRENCY": "3"})
    f = tmp_path / "dump.yaml"
    f.write_text(yaml.safe_dump(cfg.to_dict(redact=False)))
    assert load_config(f, env={}).model_copy(update={"source": "x"}) == cfg.model_copy(
        update={"source": "x"}
    )


def test_print_config_masks_every_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in {
        **CHART_ENV,
        "RAGTRACE_REDIS_URL": "redis://default:redis-pw@redis:6379/0",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RAGTRACE_CONSUMER_CONFIG", raising=False)
    assert main(["consume", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert "s3cret-kafka" not in out + err and "redis-pw" not in out + err
    printed = yaml.safe_load(out)
    assert printed["kafka"]["sasl_password"] == "***"
    assert printed["kafka"]["security_protocol"] == "SASL_SSL"
    assert printed["kafka"]["ssl_check_hostname"] is False
    assert printed["redis"]["url"] == "redis://default:***@redis:6379/0"


def test_build_service_hands_the_settings_to_consumer_and_producer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = load_config(None, env={**CHART_ENV, **_tls_files(tmp_path)})
    built = build_with_fakes(monkeypatch, cfg)
    try:
        expected = cfg.kafka.client_options()
        for client in (built.consumer, built.producer):
            assert {k: client.kwargs[k] for k in expected} == expected
            assert client.kwargs["sasl_plain_password"] == "s3cret-kafka"
        assert built.consumer.kwargs["group_id"] == "ragtrace-consumer"
        assert built.producer.kwargs["acks"] == "all"
    finally:
        built.service.meter_provider.shutdown()


def test_build_service_checks_tls_files_before_connecting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = load_config(None, env={**CHART_ENV, "RAGTRACE_KAFKA_SSL_CAFILE": str(tmp_path / "no")})
    with pytest.raises(ConfigError, match="kafka.ssl_cafile: cannot read"):
        build_with_fakes(monkeypatch, cfg)


def test_the_password_is_a_secret_type_never_shown(tmp_path: Path) -> None:
    from pydantic import SecretStr

    cfg = load_config(None, env=CHART_ENV)
    assert isinstance(cfg.kafka.sasl_password, SecretStr)
    assert cfg.kafka.sasl_password.get_secret_value() == "s3cret-kafka"
    for text in (repr(cfg), repr(cfg.kafka), str(cfg.kafka.sasl_password), cfg.to_yaml()):
        assert "s3cret-kafka" not in text
    assert cfg.kafka.client_options()["sasl_plain_password"] == "s3cret-kafka"
    _, error = config_error(tmp_path, "kafka:\n  sasl_password: [s3cret-kafka]\n")
    assert "kafka.sasl_password: expected string, got ***" in error
    assert "s3cret-kafka" not in error
