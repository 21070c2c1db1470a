"""The rendered values that matter: secrets referenced (never inlined), config checksums,
graceful termination, the consumer configuration file, the collector's, HPA, labels Job,
dashboards for Grafana's sidecar."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragtrace_consumers import config as consumer_config
from ragtrace_consumers.commands.labels import resolve_redis
from ragtrace_consumers.config import docs as config_docs
from ragtrace_consumers.config import load_config
from ragtrace_consumers.scoring.sampling import SamplingRule
from tests.unit.helm.conftest import (
    CHART,
    ROOT,
    Rendered,
    collector_workload,
    containers,
    env_of,
    helm_template,
    values_file,
)

VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
INLINE_SECRETS = ("sk-ant-test-inline-key", "inline-redis-password")
_SECRETISH = re.compile(r"PASSWORD|API_KEY|TOKEN|HEADER|SECRET", re.IGNORECASE)


def _consumer(r: Rendered) -> dict[str, Any]:
    return r.get("Deployment", "-consumer")


def _consumer_file(r: Rendered) -> dict[str, Any]:
    cm = r.get("ConfigMap", "-consumer")
    loaded: dict[str, Any] = yaml.safe_load(cm["data"]["ragtrace-consumer.yaml"])
    return loaded


# --- secrets -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "scenario", ["tls-sasl-existingsecret", "autoscaling", "labels-job", "default", "minimal"]
)
def test_credentials_are_secret_references_never_values(
    rendered: Callable[[str], Rendered], scenario: str
) -> None:
    r = rendered(scenario)
    for doc in r.docs:
        if doc["kind"] in ("Deployment", "Job"):
            for c in containers(doc):
                for name, var in env_of(c).items():
                    if _SECRETISH.search(name):
                        assert set(var) == {"name", "valueFrom"}, f"{name} is inlined"
                        assert set(var["valueFrom"]) == {"secretKeyRef"}, name
    text_outside_secrets = "\n".join(json.dumps(d) for d in r.docs if d["kind"] != "Secret")
    for s in INLINE_SECRETS:
        assert s not in text_outside_secrets, f"{s!r} leaked outside a Secret"


def test_existing_secrets_only_renders_no_secret(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("tls-sasl-existingsecret")
    assert r.of_kind("Secret") == []
    env = env_of(containers(_consumer(r))[0])
    assert env["RAGTRACE_KAFKA_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "kafka-ragtrace-user",
        "key": "password",
    }
    assert env["RAGTRACE_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "redis-credentials",
        "key": "redis-password",
    }
    assert env["ANTHROPIC_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "anthropic",
        "key": "api-key",
    }
    # The password goes to the client apart: never inside the URL a library may print.
    assert "REDIS_PASSWORD" not in env
    assert env["RAGTRACE_REDIS_URL"]["value"] == (
        "rediss://ragtrace@redis-master:6380/0?ssl_ca_certs=/etc/ragtrace/tls/redis/ca.crt"
    )
    coll = env_of(containers(collector_workload(r))[0])
    assert (
        coll["RAGTRACE_KAFKA_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"]
        == "kafka-ragtrace-user"
    )
    assert coll["RAGTRACE_TRACE_BACKEND_HEADER_X_SCOPE_ORGID"]["valueFrom"]["secretKeyRef"] == {
        "name": "tempo-tenant",
        "key": "org-id",
    }


def test_inline_credentials_go_into_the_charts_secret(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("autoscaling")
    secret = r.get("Secret", "-credentials")
    assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == {
        "anthropic-api-key": "sk-ant-test-inline-key"
    }
    env = env_of(containers(_consumer(r))[0])
    assert env["ANTHROPIC_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": secret["metadata"]["name"],
        "key": "anthropic-api-key",
    }


def test_default_needs_no_secret_and_sets_no_credential(
    rendered: Callable[[str], Rendered],
) -> None:
    r = rendered("default")
    assert r.of_kind("Secret") == []
    env = env_of(containers(_consumer(r))[0])
    assert not [n for n in env if _SECRETISH.search(n)]
    assert env["RAGTRACE_REDIS_URL"] == {
        "name": "RAGTRACE_REDIS_URL",
        "value": VALUES["redis"]["url"],
    }


# --- checksums -----------------------------------------------------------------------------
def _checksum(d: dict[str, Any]) -> str:
    value = d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert re.fullmatch(r"[0-9a-f]{64}", value)
    return str(value)


def test_config_checksum_changes_with_the_config(render: Callable[..., Rendered]) -> None:
    base = render()
    tuned = render(sets=["consumer.config.judge.concurrency=3"])
    keyed = render(sets=['judge.anthropic.apiKey.value="sk-new"'])
    kafka = render(
        sets=["kafka.sasl.enabled=true", 'kafka.sasl.username="u"', 'kafka.sasl.password.value="p"']
    )
    c0, c1, c2 = (_checksum(_consumer(x)) for x in (base, tuned, keyed))
    assert len({c0, c1, c2}) == 3
    assert _checksum(_consumer(render())) == c0  # deterministic
    col0 = _checksum(collector_workload(base))
    assert _checksum(collector_workload(tuned)) == col0  # not the collector's config
    assert _checksum(collector_workload(kafka)) != col0


# --- termination -------------------------------------------------------------------------
@pytest.mark.parametrize(("scenario", "drain"), [("default", 60.0), ("autoscaling", 90.0)])
def test_grace_period_outlasts_the_drain(
    rendered: Callable[[str], Rendered], scenario: str, drain: float, tmp_path: Path
) -> None:
    r = rendered(scenario)
    grace = _consumer(r)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    path = tmp_path / "c.yaml"
    path.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    cfg = consumer_config.load_config(path, env={})
    assert cfg.kafka.drain_timeout_s == drain  # the drain the consumer will really use
    assert grace == drain + VALUES["consumer"]["terminationGraceMarginSeconds"]
    assert grace > drain


def test_grace_period_rounds_a_fractional_drain_up(render: Callable[..., Rendered]) -> None:
    r = render(
        sets=[
            "consumer.config.kafka.drain_timeout_s=30.2",
            "consumer.terminationGraceMarginSeconds=1",
        ]
    )
    assert _consumer(r)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 32


# --- consumer configuration ---------------------------------------------------------------
_CONNECTION_KEYS = {
    ("kafka", "bootstrap_servers"),
    ("kafka", "topic"),
    ("kafka", "group_id"),
    ("kafka", "dlq_topic"),
    ("redis", "url"),
    ("redis", "password"),
    ("export", "otlp_endpoint"),
    ("judge", "name"),
    ("judge", "model"),
}
# Kafka TLS/SASL keys come from the top-level kafka.tls and kafka.sasl values, as RAGTRACE_KAFKA_*
# environment variables (the password from a Secret), never from consumer.config.
_CONNECTION_KEYS |= {
    ("kafka", k)
    for k in (
        "security_protocol",
        "sasl_mechanism",
        "sasl_username",
        "sasl_password",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_check_hostname",
    )
}
# Where the health endpoints listen comes from consumer.health (the probes need the port).
_CONNECTION_KEYS |= {("health", "enabled"), ("health", "host"), ("health", "port")}
# Read by `ragtrace serve` only: the chart runs `consume`.
_SERVE_KEYS = (
    {("serve", k) for k in consumer_config.ServeSettings.model_fields}
    | {("web", k) for k in consumer_config.WebSettings.model_fields}
    | {("audit", k) for k in consumer_config.AuditSettings.model_fields}
)


def _keys(tree: dict[str, Any]) -> set[tuple[str, str]]:
    return {(s, k) for s, body in tree.items() for k in (body or {})}


def test_values_carry_every_key_of_the_consumer_example_file() -> None:
    example = yaml.safe_load(consumer_config.example_path().read_text())
    assert _keys(VALUES["consumer"]["config"]) == _keys(example) - _CONNECTION_KEYS - _SERVE_KEYS


def test_values_consumer_config_keys_are_the_models_chart_keys() -> None:
    """values.yaml is hand-written: its consumer.config holds exactly the keys the model does not
    mark as set by the chart, and the model marks exactly the connection keys."""
    specs = config_docs.key_specs()
    assert _keys(VALUES["consumer"]["config"]) == {(s.section, s.name) for s in specs if s.chart}
    assert {(s.section, s.name) for s in specs if not s.chart} == _CONNECTION_KEYS | _SERVE_KEYS


def test_values_defaults_equal_the_consumers_defaults() -> None:
    defaults = consumer_config.ConsumerConfig.defaults().to_dict(redact=False)
    for section, body in VALUES["consumer"]["config"].items():
        for key, value in body.items():
            assert defaults[section][key] == value, f"{section}.{key}"


def test_sampling_rules_and_salt_reach_the_consumer(
    render: Callable[..., Rendered], tmp_path: Path
) -> None:
    rules = [
        {
            "name": "checkout-light",
            "match": {"service": "checkout", "http.route": "/ask*"},
            "judge_rate": 0.1,
        },
        {"match": {"tenant": "acme"}, "recall_rate": 1, "judge_rate": 1},
    ]
    r = render(
        sets=[
            f"consumer.config.sampling.rules={json.dumps(rules)}",
            'consumer.config.sampling.salt="q3"',
        ]
    )
    path = tmp_path / "c.yaml"
    path.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    sampling = consumer_config.load_config(path, env={}).sampling
    assert sampling.rules == (
        SamplingRule(
            match={"service": "checkout", "http.route": "/ask*"},
            judge_rate=0.1,
            name="checkout-light",
        ),
        SamplingRule(match={"tenant": "acme"}, recall_rate=1.0, judge_rate=1.0),
    )
    assert sampling.salt == "q3"


@pytest.mark.parametrize(
    "rule",
    [
        {"judge_rate": 0.5},  # no match
        {"match": {}, "judge_rate": 0.5},
        {"match": {"tenant": "a"}, "judge_rate": 2},
        {"match": {"tenant": "a"}, "rate": 0.5},
    ],
)
def test_schema_rejects_a_bad_sampling_rule(helm_bin: Path, rule: dict[str, Any]) -> None:
    proc = helm_template(
        helm_bin,
        "--set-json",
        f"consumer.config.sampling.rules=[{json.dumps(rule)}]",
    )
    assert proc.returncode != 0
    assert "rules" in proc.stderr, proc.stderr


@pytest.mark.parametrize("scenario", ["default", "tls-sasl-existingsecret", "minimal"])
def test_rendered_consumer_file_loads(
    rendered: Callable[[str], Rendered], scenario: str, tmp_path: Path
) -> None:
    r = rendered(scenario)
    path = tmp_path / "ragtrace-consumer.yaml"
    path.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    cfg = consumer_config.load_config(path, env={})
    values = yaml.safe_load(values_file(scenario).read_text()) or {}
    kafka = {**VALUES["kafka"], **values.get("kafka", {})}
    assert cfg.kafka.bootstrap_servers == kafka["bootstrapServers"]
    assert (cfg.kafka.topic, cfg.kafka.group_id, cfg.kafka.dlq_topic) == (
        kafka["topic"],
        kafka["groupId"],
        kafka["dlqTopic"],
    )
    assert cfg.redis.url == {**VALUES["redis"], **values.get("redis", {})}["url"]
    expected_export = {
        "default": "http://rt-ragtrace-collector:4328",
        "tls-sasl-existingsecret": "http://rt-ragtrace-collector:4328",
        "minimal": "http://otel-collector.observability:4328",
    }[scenario]
    assert cfg.export.otlp_endpoint == expected_export
    judge = {**VALUES["judge"], **values.get("judge", {})}
    assert cfg.judge.name == judge["name"] and cfg.judge.model == (judge["model"] or None)
    # The collector's evaluation port is where the file points.
    if scenario != "minimal":
        svc = r.get("Service", "-collector")
        ports = {p["name"]: p["port"] for p in svc["spec"]["ports"]}
        assert expected_export.endswith(f":{ports['eval-http']}")


_NOT_CONFIG = {"RAGTRACE_CONSUMER_CONFIG"}
_SECTIONS = ("kafka", "redis", "export", "assembly", "sampling", "scoring", "judge", "health")


def _config_env_vars() -> set[str]:
    defaults = consumer_config.ConsumerConfig.defaults()
    return {
        consumer_config.env_var(s, name)
        for s in _SECTIONS
        for name in type(getattr(defaults, s)).model_fields
    }


def test_consumer_env_names_follow_the_config_module() -> None:
    assert consumer_config.ENV_CONFIG_FILE == "RAGTRACE_CONSUMER_CONFIG"
    assert {
        "RAGTRACE_KAFKA_SECURITY_PROTOCOL",
        "RAGTRACE_KAFKA_SASL_PASSWORD",
        "RAGTRACE_KAFKA_SSL_CHECK_HOSTNAME",
    } <= _config_env_vars()


@pytest.mark.parametrize("scenario", ["tls-sasl-existingsecret", "default", "labels-job"])
def test_every_ragtrace_env_var_is_a_config_key(
    rendered: Callable[[str], Rendered], scenario: str
) -> None:
    """Every RAGTRACE_* variable the chart sets is read by the consumer's configuration."""
    known = _config_env_vars()
    env = env_of(containers(_consumer(rendered(scenario)))[0])
    for name in env:
        if name.startswith("RAGTRACE_") and name not in _NOT_CONFIG:
            assert name in known, f"{name} is not a consumer configuration key"


_KAFKA_TLS = "/etc/ragtrace/tls/kafka"


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ([], {"security_protocol": "PLAINTEXT"}),
        (
            [
                "kafka.sasl.enabled=true",
                'kafka.sasl.username="app"',
                'kafka.sasl.mechanism="PLAIN"',
                'kafka.sasl.password.existingSecret="kafka-user"',
            ],
            {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "PLAIN",
                "sasl_plain_username": "app",
                "sasl_plain_password": "secret-from-k8s",
            },
        ),
        (
            ["kafka.tls.enabled=true", "kafka.tls.insecureSkipVerify=true"],
            {"security_protocol": "SSL", "ssl_check_hostname": False},
        ),
        (
            ["kafka.tls.enabled=true", 'kafka.tls.existingSecret="kafka-ca"'],
            {
                "security_protocol": "SSL",
                "ssl_check_hostname": True,
                "ssl_cafile": f"{_KAFKA_TLS}/ca.crt",
            },
        ),
    ],
)
def test_kafka_security_values_reach_kafka_python(
    render: Callable[..., Rendered],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sets: list[str],
    expected: dict[str, object],
) -> None:
    """The chart's Kafka TLS/SASL values, through the pod environment and the consumer
    configuration, become exactly these kafka-python keyword arguments."""
    r = render(sets=sets)
    env = _pod_env(containers(_consumer(r))[0], {("kafka-user", "password"): "secret-from-k8s"})
    path = tmp_path / "c.yaml"
    path.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    cfg = consumer_config.load_config(path, env=env)
    monkeypatch.setattr(os, "access", lambda p, mode: p.startswith(_KAFKA_TLS))
    assert cfg.kafka.client_options() == expected


# --- health endpoints and probes ----------------------------------------------------------
@pytest.mark.parametrize(
    "scenario", ["default", "tls-sasl-existingsecret", "minimal", "autoscaling"]
)
def test_probes_hit_the_consumers_health_endpoints(
    rendered: Callable[[str], Rendered], scenario: str, tmp_path: Path
) -> None:
    r = rendered(scenario)
    c = containers(_consumer(r))[0]
    assert c["ports"] == [{"name": "health", "containerPort": 8086, "protocol": "TCP"}]
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/livez", "port": "health"},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 3,
    }
    assert c["readinessProbe"] == {
        "httpGet": {"path": "/readyz", "port": "health"},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 3,
    }
    assert c["startupProbe"] == {
        "httpGet": {"path": "/livez", "port": "health"},
        "periodSeconds": 5,
        "timeoutSeconds": 5,
        "failureThreshold": 60,
    }
    # The consumer will really serve them there: the file it reads turns them on, on all
    # interfaces, on the port the probes name.
    path = tmp_path / "c.yaml"
    path.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    health = consumer_config.load_config(path, env={}).health
    assert (health.enabled, health.host, health.port, health.liveness_timeout_s) == (
        True,
        "0.0.0.0",
        8086,
        120.0,
    )


def test_health_port_and_timeout_come_from_values(
    render: Callable[..., Rendered], tmp_path: Path
) -> None:
    r = render(sets=["consumer.health.port=9191", "consumer.config.health.liveness_timeout_s=45"])
    c = containers(_consumer(r))[0]
    assert c["ports"] == [{"name": "health", "containerPort": 9191, "protocol": "TCP"}]
    path = tmp_path / "c.yaml"
    path.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    health = consumer_config.load_config(path, env={}).health
    assert (health.port, health.liveness_timeout_s) == (9191, 45.0)


def test_health_disabled_needs_the_probes_cleared(
    helm_bin: Path, render: Callable[..., Rendered], tmp_path: Path
) -> None:
    proc = helm_template(
        helm_bin,
        "--set",
        "consumer.health.enabled=false",
    )
    assert proc.returncode != 0
    assert (
        "consumer.livenessProbe probes the health port but consumer.health.enabled is false"
        in proc.stderr
    ), proc.stderr
    r = render(
        sets=[
            "consumer.health.enabled=false",
            "consumer.livenessProbe=null",
            "consumer.readinessProbe=null",
            "consumer.startupProbe=null",
        ]
    )
    c = containers(_consumer(r))[0]
    assert not {"ports", "livenessProbe", "readinessProbe", "startupProbe"} & set(c)
    path = tmp_path / "c.yaml"
    path.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    assert consumer_config.load_config(path, env={}).health.enabled is False


def test_consumer_runs_consume_with_the_mounted_file(rendered: Callable[[str], Rendered]) -> None:
    c = containers(_consumer(rendered("default")))[0]
    assert c["args"] == [
        "consume",
        "--config",
        "/etc/ragtrace/ragtrace-consumer.yaml",
        "--log-level",
        "INFO",
    ]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["config"] == "/etc/ragtrace"
    assert env_of(c)["RAGTRACE_CONSUMER_CONFIG"]["value"] == "/etc/ragtrace/ragtrace-consumer.yaml"


def _pod_env(container: dict[str, Any], secrets: dict[tuple[str, str], str]) -> dict[str, str]:
    """The container's environment as Kubernetes would build it: Secret references resolved
    from ``secrets`` and $(VAR) replaced by variables declared earlier."""
    out: dict[str, str] = {}
    for var in container.get("env", []):
        if "valueFrom" in var:
            ref = var["valueFrom"]["secretKeyRef"]
            out[var["name"]] = secrets[(ref["name"], ref["key"])]
        else:
            out[var["name"]] = re.sub(
                r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                lambda m: out.get(m.group(1), m.group(0)),
                var["value"],
            )
    return out


def test_consume_sees_the_charts_settings(
    rendered: Callable[[str], Rendered], tmp_path: Path
) -> None:
    """`ragtrace consume --print-config` with the rendered file and environment."""
    r = rendered("tls-sasl-existingsecret")
    c = containers(_consumer(r))[0]
    secrets = {
        ("redis-credentials", "redis-password"): "pw",
        ("kafka-ragtrace-user", "password"): "kpw",
        ("anthropic", "api-key"): "sk-x",
    }
    env = _pod_env(c, secrets)
    conf = tmp_path / "ragtrace-consumer.yaml"
    conf.write_text(r.get("ConfigMap", "-consumer")["data"]["ragtrace-consumer.yaml"])
    env["RAGTRACE_CONSUMER_CONFIG"] = str(conf)
    cli = "import sys; from ragtrace.cli import main; sys.exit(main())"
    proc = subprocess.run(
        [sys.executable, "-c", cli, "consume", "--config", str(conf), "--print-config"],
        # This checkout's consumer package, not an installed copy (the cwd gives its ragtrace).
        env={**env, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "consumers")},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    effective = yaml.safe_load(proc.stdout)
    # Secrets are masked in the output: the Redis password (apart from the URL) and the SASL one.
    assert effective["redis"] == {
        "url": "rediss://ragtrace@redis-master:6380/0?ssl_ca_certs=/etc/ragtrace/tls/redis/ca.crt",
        "key_prefix": "ragtrace",
        "password": "***",
    }
    assert "pw@" not in proc.stdout and "kpw" not in proc.stdout and "sk-x" not in proc.stdout
    password = load_config(conf, env=env).redis.password
    assert password is not None and password.get_secret_value() == "pw"
    assert effective["kafka"]["bootstrap_servers"] == "kafka-0.kafka:9093,kafka-1.kafka:9093"
    assert {
        k: v
        for k, v in effective["kafka"].items()
        if k.startswith(("ssl_", "sasl_")) or k == "security_protocol"
    } == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "ragtrace",
        "sasl_password": "***",
        "ssl_cafile": "/etc/ragtrace/tls/kafka/ca.crt",
        "ssl_certfile": "/etc/ragtrace/tls/kafka/tls.crt",
        "ssl_keyfile": "/etc/ragtrace/tls/kafka/tls.key",
        "ssl_check_hostname": True,
    }
    assert effective["judge"]["name"] == "anthropic"
    assert effective["export"]["otlp_endpoint"] == "http://rt-ragtrace-collector:4328"
    assert "ignoring" not in proc.stderr  # no environment value was rejected


def test_labels_job_reaches_the_consumers_redis(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("labels-job")
    job_env = _pod_env(
        containers(r.get("Job", "-labels-load"))[0],
        {("rt-ragtrace-credentials", "redis-password"): "pw"},
    )
    assert resolve_redis(None, None, job_env) == ("redis://redis-master:6379/0", "ragtrace")
    assert job_env["RAGTRACE_REDIS_PASSWORD"] == "pw"  # read by the labels command


def test_sentinel_values_give_the_consumers_a_sentinel_url(
    rendered: Callable[[str], Rendered],
) -> None:
    """redis.sentinel renders the redis+sentinel:// URL the consumers' client takes apart:
    every Sentinel, the primary's name and database, the user, TLS with the mounted CA."""
    from ragtrace_consumers.stores.redis_keys import parse_sentinel_url

    url = env_of(containers(_consumer(rendered("sentinel")))[0])["RAGTRACE_REDIS_URL"]["value"]
    address = parse_sentinel_url(url)
    assert address.sentinels == (
        ("redis-sentinel-0.redis-sentinel", 26379),
        ("redis-sentinel-1.redis-sentinel", 26379),
    )
    assert (address.primary, address.db, address.username, address.password) == (
        "mymaster",
        1,
        "ragtrace",
        None,
    )
    assert address.tls and address.ssl_ca_certs == "/etc/ragtrace/tls/redis/ca.crt"


def test_sentinel_hosts_without_a_primary_name_fail_to_render(helm_bin: Path) -> None:
    proc = helm_template(helm_bin, "--set", "redis.sentinel.hosts[0]=sentinel:26379")
    assert proc.returncode != 0
    assert "redis.sentinel.primaryName is required" in proc.stderr


# --- collector -----------------------------------------------------------------------------
def test_chart_collector_config_is_collector_config_yaml() -> None:
    chart_copy = CHART / "files" / "collector-config.yaml"
    assert not chart_copy.is_symlink()
    assert chart_copy.read_bytes() == (ROOT / "collector" / "config.yaml").read_bytes(), (
        "helm/ragtrace/files/collector-config.yaml drifted from collector/config.yaml: "
        "cp collector/config.yaml helm/ragtrace/files/collector-config.yaml"
    )


def test_rendered_collector_config_is_the_file_unchanged(
    rendered: Callable[[str], Rendered],
) -> None:
    cm = rendered("default").get("ConfigMap", "-collector")
    assert (
        cm["data"]["config.yaml"].strip()
        == (ROOT / "collector" / "config.yaml").read_text().strip()
    )
    assert "overlay.yaml" not in cm["data"]


_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")
# Variables whose defaults in collector/config.yaml are right in a cluster too.
COLLECTOR_DEFAULTS_KEPT = {"RAGTRACE_BATCH_TIMEOUT", "RAGTRACE_BATCH_MAX_SPANS"}


def test_collector_gets_every_variable_its_config_reads(
    rendered: Callable[[str], Rendered],
) -> None:
    text = (ROOT / "collector" / "config.yaml").read_text()
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())  # not the comments
    referenced = set(_ENV_REF.findall(code))
    names = {n for n, _ in referenced}
    env = env_of(containers(collector_workload(rendered("default")))[0])
    assert names - set(env) == COLLECTOR_DEFAULTS_KEPT
    assert env["RAGTRACE_KAFKA_TOPIC"]["value"] == VALUES["kafka"]["topic"]
    assert env["RAGTRACE_KAFKA_BOOTSTRAP_SERVERS"]["value"] == VALUES["kafka"]["bootstrapServers"]
    assert env["RAGTRACE_KAFKA_MAX_MESSAGE_BYTES"]["value"] == "8388608"
    ports = {
        p["name"]: p["containerPort"]
        for p in containers(collector_workload(rendered("default")))[0]["ports"]
    }
    for var, port in (
        ("RAGTRACE_APP_OTLP_HTTP_ENDPOINT", "otlp-http"),
        ("RAGTRACE_EVAL_OTLP_HTTP_ENDPOINT", "eval-http"),
        ("RAGTRACE_PROMETHEUS_EXPORTER_ENDPOINT", "prometheus"),
        ("RAGTRACE_HEALTH_ENDPOINT", "health"),
    ):
        assert env[var]["value"] == f"0.0.0.0:{ports[port]}"


def test_kafka_tls_and_sasl_overlay_the_kafka_exporter(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("tls-sasl-existingsecret")
    cm = r.get("ConfigMap", "-collector")
    overlay = yaml.safe_load(cm["data"]["overlay.yaml"])
    assert overlay == {
        "exporters": {
            "kafka": {
                "tls": {
                    "ca_file": "/etc/ragtrace/tls/kafka/ca.crt",
                    "cert_file": "/etc/ragtrace/tls/kafka/tls.crt",
                    "key_file": "/etc/ragtrace/tls/kafka/tls.key",
                    "insecure_skip_verify": False,
                },
                "auth": {
                    "sasl": {
                        "mechanism": "SCRAM-SHA-512",
                        "username": "${env:RAGTRACE_KAFKA_SASL_USERNAME}",
                        "password": "${env:RAGTRACE_KAFKA_SASL_PASSWORD}",
                    }
                },
            },
            "otlp_http/backend": {
                "headers": {"X-Scope-OrgID": "${env:RAGTRACE_TRACE_BACKEND_HEADER_X_SCOPE_ORGID}"}
            },
        }
    }
    base = yaml.safe_load(cm["data"]["config.yaml"])
    assert set(overlay["exporters"]) <= set(base["exporters"])
    c = containers(collector_workload(r))[0]
    assert c["command"][1:] == [
        "--config=file:/conf/config.yaml",
        "--config=file:/conf/overlay.yaml",
    ]
    assert {"RAGTRACE_KAFKA_SASL_USERNAME", "RAGTRACE_KAFKA_SASL_PASSWORD"} <= set(env_of(c))


def test_collector_probes_use_the_health_extension(rendered: Callable[[str], Rendered]) -> None:
    c = containers(collector_workload(rendered("default")))[0]
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"] == {"path": "/", "port": "health"}


def test_minimal_deploys_no_collector(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("minimal")
    assert [d["metadata"]["name"] for d in r.docs if "collector" in d["metadata"]["name"]] == []
    assert sorted(d["kind"] for d in r.docs) == ["ConfigMap", "Deployment", "Service"]
    spec = _consumer(r)["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "default"


# --- autoscaling, labels, dashboards, alerts --------------------------------------------------
def test_autoscaling_scales_on_external_lag(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("autoscaling")
    assert "replicas" not in _consumer(r)["spec"]
    hpa = r.get("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": _consumer(r)["metadata"]["name"],
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 12)
    assert hpa["spec"]["metrics"] == [
        {
            "type": "External",
            "external": {
                "metric": {
                    "name": "ragtrace_consumer_lag",
                    "selector": {"matchLabels": {"topic": "otlp_spans"}},
                },
                "target": {"type": "AverageValue", "averageValue": "500"},
            },
        }
    ]
    assert rendered("default").of_kind("HorizontalPodAutoscaler") == []


def test_labels_job_loads_the_labels_configmap(rendered: Callable[[str], Rendered]) -> None:
    r = rendered("labels-job")
    job = r.get("Job", "-labels-load")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    c = containers(job)[0]
    assert c["args"] == ["labels", "load", "/etc/ragtrace/labels/labels.jsonl"]
    assert c["image"] == containers(_consumer(r))[0]["image"]
    assert env_of(c) == env_of(containers(_consumer(r))[0])
    cm = r.get("ConfigMap", "-labels")
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["labels"]["configMap"]["name"] == cm["metadata"]["name"]
    lines = cm["data"]["labels.jsonl"].splitlines()
    assert [json.loads(x)["qid"] for x in lines] == ["q1", "q2"]
    assert r.get("Secret", "-credentials")["data"] == {
        "redis-password": base64.b64encode(b"inline-redis-password").decode()
    }


def test_dashboards_are_configmaps_for_the_grafana_sidecar(
    rendered: Callable[[str], Rendered],
) -> None:
    r = rendered("default")
    cms = [d for d in r.of_kind("ConfigMap") if "-dashboard-" in d["metadata"]["name"]]
    files = sorted((CHART / "dashboards").glob("*.json"))
    assert len(cms) == len(files) == 2
    for cm, path in zip(sorted(cms, key=lambda d: d["metadata"]["name"]), files, strict=False):
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["namespace"] == "rag"
        assert list(cm["data"]) == [path.name]
        assert json.loads(cm["data"][path.name]) == json.loads(path.read_text())
    assert rendered("minimal").of_kind("ConfigMap") == [
        d
        for d in rendered("minimal").of_kind("ConfigMap")
        if "-dashboard-" not in d["metadata"]["name"]
    ]


def test_prometheus_rule_has_every_alert(rendered: Callable[[str], Rendered]) -> None:
    rule = rendered("monitoring").get("PrometheusRule")
    alerts = [x["alert"] for g in rule["spec"]["groups"] for x in g["rules"]]
    assert alerts == [
        "RagtraceGroundednessBudgetBurn",
        "RagtraceGroundednessBudgetBurn",
        "RagtraceGroundednessBudgetBurn",
        "RagtraceRecallLow",
        "RagtraceUnanswerableAnswered",
        "RagtraceJudgeErrorRateHigh",
        "RagtraceJudgeBudgetExhausted",
        "RagtraceDeadLetterGrowing",
        "RagtraceConsumerLagHigh",
        "RagtraceConsumersDown",
        "RagtraceCollectorDroppingSpans",
        "RagtraceCollectorQueueFilling",
        "RagtraceScoringStalled",
        "RagtraceJudgeAgreementLow",
    ]
    labelled = rendered("tls-sasl-existingsecret").get("PrometheusRule")
    assert labelled["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_alert_thresholds_come_from_values(render: Callable[..., Rendered]) -> None:
    r = render(
        sets=[
            "prometheusRule.enabled=true",
            "prometheusRule.groundedness.objective=0.9",
            "prometheusRule.groundedness.burnRates="
            '[{"longWindow": "2h", "shortWindow": "10m", "factor": 5, "minJudged": 7,'
            ' "for": "1m", "severity": "info"}]',
            "prometheusRule.recall.enabled=false",
        ]
    )
    rules = [x for g in r.get("PrometheusRule")["spec"]["groups"] for x in g["rules"]]
    burn = [x for x in rules if x["alert"] == "RagtraceGroundednessBudgetBurn"]
    assert len(burn) == 1
    (rule,) = burn
    assert rule["expr"].count(") / (1 - 0.9) > 5\n") == 2
    assert "[2h]" in rule["expr"] and "[10m]" in rule["expr"]
    assert rule["expr"].endswith("[2h])) >= 7")
    assert (rule["for"], rule["labels"]["severity"], rule["labels"]["burn_window"]) == (
        "1m",
        "info",
        "2h",
    )
    assert not any(x["alert"] == "RagtraceRecallLow" for x in rules)


@pytest.mark.parametrize(
    "old", ["threshold=0.7", "window=30m", "minSamples=20", "burnRates[0].factor=0"]
)
def test_schema_refuses_the_old_groundedness_keys_and_a_zero_burn(helm_bin: Path, old: str) -> None:
    """The mean-below-threshold keys of earlier charts mean nothing now: refused, not ignored."""
    proc = helm_template(
        helm_bin,
        "--set",
        "prometheusRule.enabled=true",
        "--set",
        f"prometheusRule.groundedness.{old}",
    )
    assert proc.returncode != 0
    assert "/prometheusRule/groundedness" in proc.stderr, proc.stderr


# --- values.yaml documentation ------------------------------------------------------------------
# Kubernetes objects passed through verbatim: their inner keys are Kubernetes' own.
_PASS_THROUGH = {
    "resources",
    "podSecurityContext",
    "securityContext",
    "behavior",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "topologySpreadConstraints",
}
_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*|\"[^\"]+\"):")


def test_every_values_key_has_a_comment() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    stack: list[tuple[int, str]] = []
    undocumented = []
    for i, line in enumerate(lines):
        m = _KEY_LINE.match(line)
        if not m:
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [k for _, k in stack] + [m["key"]]
        stack.append((indent, m["key"]))
        if _PASS_THROUGH & set(path[:-1]):
            continue
        prev = next((x for x in reversed(lines[:i]) if x.strip()), "")
        if not prev.strip().startswith("#"):
            undocumented.append(".".join(path))
    assert undocumented == []


def test_schema_covers_every_values_key() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())

    def walk(values: dict[str, Any], node: dict[str, Any], where: str) -> None:
        props = node.get("properties")
        if props is None:
            return
        for key, value in values.items():
            assert key in props, f"{where}{key} is not in values.schema.json"
            child = props[key]
            if "$ref" in child:
                child = schema["definitions"][child["$ref"].rsplit("/", 1)[1]]
            if isinstance(value, dict):
                walk(value, child, f"{where}{key}.")

    walk(VALUES, schema, "")
