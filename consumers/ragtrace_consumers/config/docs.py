"""Files generated from the settings model's JSON schema (``ConsumerConfig.model_json_schema()``):
the documented example configuration, the consumer section of the Helm chart's
``values.schema.json`` and the tables of ``docs/configuration.md``.

:func:`key_specs` reads every key off the schema; each ``render_*`` function returns a file's whole
text; ``scripts/gen_config.py`` writes them (``make config-docs``) and a unit test fails when a
committed file differs from its rendering.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from ragtrace._config import env_settings
from ragtrace_consumers.config._sources import ENV_CONFIG_FILE, env_var
from ragtrace_consumers.config.settings import SECTIONS, ConsumerConfig

__all__ = [
    "CHART_SCHEMA",
    "DOCS_TABLE",
    "EXAMPLE",
    "GENERATED",
    "NOT_IN_CHART_SECTIONS",
    "SET_BY_CHART",
    "KeySpec",
    "key_specs",
    "render_chart_schema",
    "render_docs",
    "render_example",
]

EXAMPLE = "consumers/ragtrace_consumers/config/ragtrace-consumer.yaml"
CHART_SCHEMA = "helm/ragtrace/values.schema.json"
DOCS_TABLE = "docs/configuration.md"

SET_BY_CHART: frozenset[str] = frozenset(
    {
        *("kafka.bootstrap_servers", "kafka.topic", "kafka.group_id", "kafka.dlq_topic"),
        *("kafka.security_protocol", "kafka.sasl_mechanism", "kafka.sasl_username"),
        *("kafka.sasl_password", "kafka.ssl_cafile", "kafka.ssl_certfile", "kafka.ssl_keyfile"),
        *("kafka.ssl_check_hostname", "redis.url", "redis.password", "export.otlp_endpoint"),
        *("judge.name", "judge.model", "health.enabled", "health.host", "health.port"),
    }
)
"""Keys the Helm chart sets from its own top-level values (helm/ragtrace/templates), so they are
not under ``consumer.config`` in values.yaml or its schema."""
NOT_IN_CHART_SECTIONS: frozenset[str] = frozenset({"serve", "web", "audit"})
"""Sections only ``ragtrace serve`` reads: the chart runs ``consume``, so they are not under
``consumer.config`` either."""
_NOT_RULES = ("type", "title", "default", "description", "anyOf", "format", "writeOnly")


@dataclass(frozen=True)
class KeySpec:
    """One configuration key as the model's JSON schema declares it."""

    section: str
    name: str
    env: str
    kind: str
    """JSON type: string, integer, number, boolean or array."""
    optional: bool
    default: object
    doc: str
    secret: bool
    chart: bool
    """False: the chart sets it from its own values (so it is not in ``consumer.config``)."""
    schema: Mapping[str, object]
    """The key's JSON schema as the chart validates it: type, then its rules."""

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"


def _key_spec(section: str, name: str, prop: Mapping[str, Any]) -> KeySpec:
    variants = prop.get("anyOf", [prop])
    kinds = [v["type"] for v in variants if v["type"] != "null"]
    optional = len(kinds) < len(variants)
    rules = {k: v for k, v in prop.items() if k not in _NOT_RULES}
    for variant in variants:  # a check inside an optional type
        rules.update({k: v for k, v in variant.items() if k not in _NOT_RULES})
    if optional and "enum" in rules:
        rules["enum"] = [*rules["enum"], None]
    return KeySpec(
        section=section,
        name=name,
        env=env_var(section, name),
        kind=kinds[0],
        optional=optional,
        default=prop["default"],
        doc=prop["description"],
        secret=any(v.get("format") == "password" for v in variants),
        chart=f"{section}.{name}" not in SET_BY_CHART and section not in NOT_IN_CHART_SECTIONS,
        schema={"type": [kinds[0], "null"] if optional else kinds[0], **rules},
    )


class _InOrder(GenerateJsonSchema):
    """Keywords in the order the model writes them (pydantic sorts them by default)."""

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        return value


def key_specs() -> tuple[KeySpec, ...]:
    """Every key of every section, in declaration order, from ``model_json_schema()``."""
    schema = ConsumerConfig.model_json_schema(schema_generator=_InOrder)
    out: list[KeySpec] = []
    for section in SECTIONS:
        ref = schema["properties"][section]["$ref"].rsplit("/", 1)[-1]
        props = schema["$defs"][ref]["properties"]
        out += [_key_spec(section, name, prop) for name, prop in props.items()]
    return tuple(out)


_EXAMPLE_HEADER = f"""\
# Configuration of `ragtrace consume`, the Kafka consumer that scores RAG traces (`ragtrace serve`
# reads its assembly, sampling, scoring, judge and mapping sections).
#
# GENERATED from the settings model (consumers/ragtrace_consumers/config/) by
# `make config-docs`: edit the model, not this file.
#
# Use it with `ragtrace consume --config FILE` (or {ENV_CONFIG_FILE}=FILE). Every key below
# is shown with its default. Each key can be overridden by an environment variable named
# RAGTRACE_<SECTION>_<KEY> in upper case, e.g. kafka.bootstrap_servers -> {env_var("kafka", "bootstrap_servers")}.
# Precedence: environment variable > this file > default. A bad value, in this file or in an
# environment variable, stops the consumer (exit status 2) with an error naming the key and where
# the value came from; an unknown RAGTRACE_* variable is reported with the closest known name.
# Credentials belong in environment variables, not in this file: the Anthropic judge reads
# ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL), the Kafka SASL password {env_var("kafka", "sasl_password")}.
# `ragtrace consume --print-config` masks secrets (and the password of a URL) as *** and shows
# where each value came from.
"""


def _yaml_value(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)


def render_example() -> str:
    """The documented example file: every key with its default, its description as a comment."""
    lines = [_EXAMPLE_HEADER.rstrip("\n")]
    section = None
    for spec in key_specs():
        if spec.section != section:
            section = spec.section
            lines += ["", f"{section}:"]
        lines += [f"  # {line}".rstrip() for line in spec.doc.splitlines()]
        lines.append(f"  {spec.name}: {_yaml_value(spec.default)}")
    return "\n".join(lines) + "\n"


def _one_line(doc: str) -> str:
    return " ".join(doc.split())


def chart_config_schema() -> dict[str, object]:
    """JSON schema of the chart's ``consumer.config``: the keys the chart does not set itself."""
    sections: dict[str, object] = {}
    for section in SECTIONS:
        if section in NOT_IN_CHART_SECTIONS:
            continue
        props = {
            s.name: {**s.schema, "description": _one_line(s.doc)}
            for s in key_specs()
            if s.section == section and s.chart
        }
        sections[section] = {
            "type": "object",
            "properties": props,
            "additionalProperties": False,
        }
    return {"type": "object", "properties": sections, "additionalProperties": False}


def render_chart_schema(current: str) -> str:
    """``values.schema.json`` (its text ``current``) with the consumer.config section generated."""
    schema = json.loads(current)
    schema["properties"]["consumer"]["properties"]["config"] = chart_config_schema()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default(spec: KeySpec) -> str:
    if spec.default is None:
        return "—"
    return f"`{_yaml_value(spec.default)}`"


def _type(spec: KeySpec) -> str:
    kind = {"array": "list of rules"}.get(spec.kind, spec.kind)
    if spec.secret:
        kind = f"secret {kind}"
    return f"{kind} or null" if spec.optional else kind


def render_docs() -> str:
    """``docs/configuration.md``: one table of the service's keys, one of the SDK's variables."""
    out = [
        "# Configuration",
        "",
        "<!-- GENERATED by `make config-docs` (scripts/gen_config.py) from the settings models:",
        "     consumers/ragtrace_consumers/config/ and ragtrace/_config.py. Do not edit. -->",
        "",
        "## The service: `ragtrace consume` and `ragtrace serve`",
        "",
        f"One YAML file (`--config FILE` or `${ENV_CONFIG_FILE}`; the documented example is",
        "`consumers/ragtrace_consumers/config/ragtrace-consumer.yaml`) plus one environment variable per",
        "key. Precedence: environment variable > file > default. Every bad value, from the file or",
        "from the environment, stops the command with exit status 2 and an error naming the key and",
        "its source (the file's path or the variable's name); an unknown key in the file is an error,",
        "an unknown `RAGTRACE_*` variable a warning naming the closest known one.",
        "`ragtrace consume --print-config` prints every value with its source, secrets masked.",
        "Keys marked *chart* are set by the Helm chart from its top-level values (the others are",
        "under `consumer.config` in `helm/ragtrace/values.yaml`); keys marked *serve* are read by",
        "`ragtrace serve` only.",
        "",
        "| Key | Environment variable | Type | Default | Description |",
        "|---|---|---|---|---|",
    ]
    for spec in key_specs():
        chart = (
            ""
            if spec.chart
            else " *(serve)*"
            if spec.section in NOT_IN_CHART_SECTIONS
            else " *(chart)*"
        )
        out.append(
            f"| `{spec.dotted}`{chart} | `{spec.env}` | {_type(spec)} | {_default(spec)} "
            f"| {_cell(_one_line(spec.doc))} |"
        )
    out += [
        "",
        "`RAGTRACE_RECALL_DEFINITION`, the former name of `RAGTRACE_SCORING_RECALL_DEFINITION`, is",
        "still read (with a deprecation warning) when the new one is not set.",
        "",
        "## The SDK: what the decorators record",
        "",
        "Precedence: an argument of `ragtrace.configure()` (or a decorator's) > the environment",
        "variable > the default. A bad environment value is logged and the default used: the SDK",
        "never stops an application. Boolean variables read `1`, `true`, `yes`, `on` and `0`,",
        "`false`, `no`, `off` (any case), as the service's do.",
        "",
        "| Setting | Environment variable | Type | Default | Description |",
        "|---|---|---|---|---|",
    ]
    for s in env_settings():
        default = json.dumps(s.default)
        out.append(f"| `{s.name}` | `{s.env}` | {s.kind} | `{default}` | {_cell(s.doc)} |")
    return "\n".join(out) + "\n"


GENERATED: Mapping[str, str] = {
    EXAMPLE: "render_example",
    CHART_SCHEMA: "render_chart_schema",
    DOCS_TABLE: "render_docs",
}
"""Each generated file (path from the repository root) and the function rendering it."""
