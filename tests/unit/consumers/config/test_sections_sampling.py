"""Sampling rules and salt from the configuration file and the environment, down to the Sampler
the Kafka consumer and the embedded evaluator run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ragtrace.evaluation.judges import make_judge
from ragtrace_consumers.config import ConfigError, ConsumerConfig, load_config
from ragtrace_consumers.model import RagTrace
from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from ragtrace_consumers.scoring.sampling import Sampler, SamplerConfig, SamplingRule, trace_position
from tests.unit.consumers.config.config_errors import config_error
from tests.unit.consumers.service_fakes import build_with_fakes

FILE = """\
sampling:
  recall_rate: 0.5
  judge_rate: 0.25
  salt: "2025-q3"
  rules:
    - name: checkout-light
      match: {service: "checkout", http.route: "/api/ask*"}
      judge_rate: 0.1
    - match: {tenant: "acme"}
      recall_rate: 1
      judge_rate: 1.0
"""
RULES = (
    SamplingRule(
        match={"service": "checkout", "http.route": "/api/ask*"},
        judge_rate=0.1,
        name="checkout-light",
    ),
    SamplingRule(match={"tenant": "acme"}, recall_rate=1.0, judge_rate=1.0),
)


def _trace(trace_id: str, service: str = "shop", **attributes: str) -> RagTrace:
    return RagTrace(
        trace_id=trace_id,
        service=service,
        target_span_id="b7ad6b7169203331",
        query="q",
        has_retrieval=True,
        attributes=attributes,
    )


def test_defaults_have_no_rules_and_no_salt() -> None:
    s = ConsumerConfig.defaults().sampling
    assert (s.rules, s.salt) == ((), "")
    assert s.sampler_config() == SamplerConfig()


def test_rules_and_salt_from_the_file(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(FILE)
    s = load_config(f, env={}).sampling
    assert s.rules == RULES
    assert s.salt == "2025-q3"
    assert s.sampler_config() == SamplerConfig(
        recall_rate=0.5, judge_rate=0.25, rules=RULES, salt="2025-q3"
    )


def test_rules_from_the_environment_as_json(tmp_path: Path) -> None:
    env = {
        "RAGTRACE_SAMPLING_RULES": '[{"match": {"tenant": "acme"}, "recall_rate": 1, "judge_rate": 1.0}]',
        "RAGTRACE_SAMPLING_SALT": "s1",
    }
    s = load_config(None, env=env).sampling
    assert s.rules == RULES[1:]
    assert s.salt == "s1"


def test_an_empty_environment_list_clears_the_files_rules(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(FILE)
    assert load_config(f, env={"RAGTRACE_SAMPLING_RULES": "[]"}).sampling.rules == ()


@pytest.mark.parametrize(
    "rules, message",
    [
        (
            '[{"match": {"tenant": "a"}, "judge_rate": 2}]',
            "sampling.rules[0]: judge_rate must be between 0 and 1, got 2.0",
        ),
        (
            '[{"match": {"tenant": "a"}}, {"judge_rate": 0.5}]',
            "sampling.rules[1].match: expected a mapping of attribute -> glob",
        ),
        ('[{"match": {}}]', "sampling.rules[0]: a sampling rule needs at least one match pattern"),
        ('[{"match": {"tenant": "a"}, "rate": 0.5}]', "sampling.rules[0]: unknown keys ['rate']"),
        (
            '[{"match": {"tenant": "a"}, "recall_rate": "half"}]',
            "sampling.rules[0]: rate must be a number, got 'half'",
        ),
        ('["tenant=a"]', "sampling.rules[0]: expected a mapping, got str"),
        ('{"match": {"tenant": "a"}}', "sampling.rules: expected a list of rules, got dict"),
    ],
)
def test_bad_rules_in_the_file_name_the_rule(tmp_path: Path, rules: str, message: str) -> None:
    f, error = config_error(tmp_path, f"sampling:\n  rules: {rules}\n")
    assert message in error
    assert f"{f}: sampling.rules" in error


def test_a_non_ascii_salt_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text('sampling:\n  salt: "sél"\n')
    with pytest.raises(ConfigError, match="sampling.salt: must be ASCII, got 'sél'"):
        load_config(f, env={})


def test_bad_rules_in_the_environment_are_an_error_naming_the_variable(tmp_path: Path) -> None:
    _, error = config_error(tmp_path, FILE, {"RAGTRACE_SAMPLING_RULES": "[{match: oops"})
    assert "environment variable RAGTRACE_SAMPLING_RULES: sampling.rules" in error
    assert "not valid JSON or YAML" in error


def test_replace_accepts_rule_data_and_rule_values() -> None:
    cfg = ConsumerConfig.defaults()
    assert (
        cfg.replace(
            sampling={"rules": [{"match": {"tenant": "acme"}, "recall_rate": 1, "judge_rate": 1.0}]}
        ).sampling.rules
        == RULES[1:]
    )
    assert cfg.replace(sampling={"rules": RULES}).sampling.rules == RULES
    assert (
        cfg.replace(sampling={"salt": "x"}).replace(judge={"concurrency": 2}).sampling
        == cfg.replace(sampling={"salt": "x"}).sampling
    )


def test_rules_print_as_the_file_form(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(FILE)
    shown = load_config(f, env={}).to_dict()["sampling"]
    assert shown == {
        "recall_rate": 0.5,
        "judge_rate": 0.25,
        "rules": [
            {
                "name": "checkout-light",
                "match": {"service": "checkout", "http.route": "/api/ask*"},
                "judge_rate": 0.1,
            },
            {"match": {"tenant": "acme"}, "recall_rate": 1.0, "judge_rate": 1.0},
        ],
        "salt": "2025-q3",
    }
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump({"sampling": shown}))
    assert load_config(again, env={}).sampling == load_config(f, env={}).sampling


def test_the_configured_sampler_applies_rules_and_salt(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(FILE)
    sampler = Sampler(load_config(f, env={}).sampling.sampler_config())
    ids = [f"{i:032x}" for i in range(400)]
    # Default rates for a trace no rule matches: recall when u < 0.5 with the salt applied.
    for trace_id in ids:
        d = sampler.decide(_trace(trace_id))
        assert d.rule is None
        assert d.recall == (trace_position(trace_id, "2025-q3") < 0.5)
    acme = [sampler.decide(_trace(t, tenant="acme")) for t in ids]
    assert all(d.recall and d.rule == "tenant=acme" for d in acme)
    light = sampler.decide(_trace(ids[0], service="checkout", **{"http.route": "/api/ask/v2"}))
    assert light.rule == "checkout-light"
    # The salt changes which traces are chosen, not how many on average.
    unsalted = Sampler(SamplerConfig(recall_rate=0.5))
    assert [unsalted.decide(_trace(t)).recall for t in ids] != [
        sampler.decide(_trace(t)).recall for t in ids
    ]


def test_kafka_consumer_runs_the_configured_sampler(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(FILE)
    cfg = load_config(f, env={})
    built = build_with_fakes(monkeypatch, cfg)
    try:
        sampler = built.service.pipeline.sampler
        assert isinstance(sampler, Sampler)
        assert sampler.config == cfg.sampling.sampler_config()
    finally:
        built.service.meter_provider.shutdown()


def test_embedded_evaluator_runs_the_configured_sampler(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(FILE)
    cfg = load_config(f, env={})
    ev = EmbeddedEvaluator(
        cfg.replace(serve={"port": 0, "state": tmp_path / "s.db", "metrics": False}),
        judge=make_judge("lexical"),
    )
    try:
        sampler = ev.pipeline.sampler
        assert isinstance(sampler, Sampler)
        assert sampler.config == cfg.sampling.sampler_config()
    finally:
        ev.stop()
