"""JudgeSpec: parsed once, one list of names, the model rule in one place, make_judge(spec)."""

from __future__ import annotations

import argparse

import pytest

from ragtrace.cli._judge_args import add_judge_arguments, judge_spec
from ragtrace.evaluation.judges import (
    AnthropicJudge,
    JudgeSpec,
    LexicalJudge,
    make_judge,
)
from ragtrace.evaluation.judges.spec import DEFAULT_MODEL, JUDGE_NAMES
from ragtrace_consumers.config import ConfigError, ConsumerConfig
from ragtrace_consumers.scoring.judging import judge_from_settings, spec_from_settings

KEY = {"ANTHROPIC_API_KEY": "k"}


def test_auto_resolves_by_the_api_key_and_a_model_free_judge_has_no_model() -> None:
    assert JudgeSpec("auto", model="m").resolved({}) == JudgeSpec("lexical", model=None)
    assert JudgeSpec("lexical", model="m").resolved(KEY).model is None
    auto = JudgeSpec("auto").resolved(KEY)
    assert (auto.name, auto.model) == ("anthropic", DEFAULT_MODEL)
    env = {**KEY, "RAGTRACE_JUDGE_MODEL": "claude-sonnet-4-6"}
    assert JudgeSpec("anthropic").resolved(env).model == "claude-sonnet-4-6"
    assert JudgeSpec("anthropic", model="claude-opus-4-6").resolved(env).model == "claude-opus-4-6"
    assert JudgeSpec("anthropic", api_key="explicit").resolved({}).name == "anthropic"
    with pytest.raises(ValueError, match="needs an API key"):
        JudgeSpec("anthropic").resolved({})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "gpt"}, "unknown judge 'gpt'; expected one of auto, lexical, anthropic"),
        ({"model": " "}, "model must be a non-empty"),
        ({"timeout_s": 0}, "timeout_s must be a finite number > 0"),
        ({"budget_s": float("inf")}, "budget_s must be a finite number > 0"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_a_bad_spec_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JudgeSpec(**kwargs)  # type: ignore[arg-type]


def test_the_api_key_never_shows_in_the_repr() -> None:
    assert "secret" not in repr(JudgeSpec("anthropic", api_key="secret"))


def test_make_judge_builds_what_the_spec_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("RAGTRACE_JUDGE_MODEL", raising=False)
    assert isinstance(make_judge(JudgeSpec()), LexicalJudge)
    spec = JudgeSpec("anthropic", model="claude-x", timeout_s=7, budget_s=42, api_key="k")
    judge = make_judge(spec)
    assert isinstance(judge, AnthropicJudge)
    assert (judge.model, judge.timeout_s, judge.budget_s) == ("claude-x", 7.0, 42.0)
    assert judge.info.model == "claude-x"
    # the name form still works: spec fields and constructor options among the keywords
    named = make_judge("anthropic", model="claude-y", budget_s=9.0, api_key="k")
    assert isinstance(named, AnthropicJudge) and (named.model, named.budget_s) == ("claude-y", 9)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_judge_arguments(parser)
    return parser


def test_cli_options_parse_into_one_spec() -> None:
    args = _parser().parse_args(
        ["--judge", "anthropic", "--model", "m", "--timeout", "5", "--budget", "20"]
    )
    assert judge_spec(args) == JudgeSpec("anthropic", model="m", timeout_s=5.0, budget_s=20.0)
    with pytest.raises(ValueError, match="budget_s"):
        judge_spec(_parser().parse_args(["--budget", "0"]))


def test_config_judge_section_parses_into_one_spec() -> None:
    cfg = ConsumerConfig.defaults().replace(
        judge={"name": "lexical", "model": "m", "timeout_s": 3, "budget_s": 12}
    )
    assert spec_from_settings(cfg.judge) == JudgeSpec(
        "lexical", model="m", timeout_s=3.0, budget_s=12.0
    )
    assert isinstance(judge_from_settings(cfg.judge), LexicalJudge)


def test_config_judge_section_carries_the_provider_and_its_connection() -> None:
    """The service reaches a provider's API from its settings alone: the judge it builds is the
    one the CLI builds from the same options."""
    cfg = ConsumerConfig.defaults().replace(
        judge={
            "name": "auto",
            "provider": "openai",
            "model": "qwen3",
            "base_url": "http://127.0.0.1:8000/v1",
            "output_mode": "json",
        }
    )
    assert spec_from_settings(cfg.judge) == JudgeSpec(
        "auto",
        provider="openai",
        model="qwen3",
        base_url="http://127.0.0.1:8000/v1",
        output_mode="json",
    )
    judge = judge_from_settings(cfg.judge)
    assert (judge.info.name, judge.info.provider, judge.info.model) == ("openai", "openai", "qwen3")
    vertex = ConsumerConfig.defaults().replace(
        judge={"name": "vertex", "region": "europe-west1", "project": "p-1"}
    )
    assert spec_from_settings(vertex.judge) == JudgeSpec(
        "vertex", region="europe-west1", project="p-1"
    )


@pytest.mark.parametrize(
    ("judge", "message"),
    [
        ({"name": "anthropic", "provider": "openai"}, "contradicts judge.name 'anthropic'"),
        ({"name": "openai", "mode": "batch"}, "batch needs the anthropic judge"),
        ({"provider": "bedrock", "mode": "batch"}, "not 'bedrock'"),
        ({"provider": "azure"}, "judge.provider: must be one of anthropic, bedrock"),
        ({"base_url": "vllm:8000"}, "judge.base_url: must be a URL"),
        ({"output_mode": "xml"}, "judge.output_mode: must be one of tools, json"),
    ],
)
def test_config_refuses_a_judge_provider_it_cannot_run(
    judge: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig.defaults().replace(judge=judge)


def test_one_list_of_judge_names_everywhere() -> None:
    from ragtrace.cli import build_parser

    choices = {}
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command, p in sub.choices.items():
        for action in p._actions:
            if action.dest == "judge" and action.choices is not None:
                choices[command] = tuple(action.choices)
    assert {"groundedness", "calibrate", "serve", "demo"} <= choices.keys()
    assert set(choices.values()) == {JUDGE_NAMES}
    with pytest.raises(ConfigError, match="must be one of auto, lexical, anthropic"):
        ConsumerConfig.defaults().replace(judge={"name": "gpt"})


def test_a_provider_names_the_model_judge_and_its_default_model() -> None:
    from ragtrace.evaluation.judges.spec import DEFAULT_MODELS, PROVIDERS

    assert PROVIDERS == ("anthropic", "bedrock", "vertex", "openai")
    assert tuple(JUDGE_NAMES) == ("auto", "lexical", "anthropic", "bedrock", "vertex", "openai")
    assert JudgeSpec("bedrock").provider == "bedrock"
    assert JudgeSpec("auto", provider="vertex").resolved({}) == JudgeSpec(
        "vertex", model=DEFAULT_MODELS["vertex"], provider="vertex"
    )
    bedrock = JudgeSpec("bedrock", region="eu-west-1").resolved({})  # no Anthropic key needed
    assert (bedrock.name, bedrock.model) == (
        "bedrock",
        "global.anthropic.claude-haiku-4-5-20251001-v1:0",
    )
    assert JudgeSpec("bedrock").resolved({"RAGTRACE_JUDGE_MODEL": "anthropic.x-v1:0"}).model == (
        "anthropic.x-v1:0"
    )
    # model-free: provider dropped with the model
    assert JudgeSpec("lexical", provider="openai", model="m").resolved({}) == JudgeSpec("lexical")
    # the openai judge has no default model
    with pytest.raises(ValueError, match="the openai judge needs a model"):
        JudgeSpec("openai").resolved({})
    assert JudgeSpec("openai", model="qwen").resolved({}).model == "qwen"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"provider": "azure"}, "unknown judge provider 'azure'; expected one of anthropic, "),
        ({"name": "openai", "provider": "bedrock"}, "judge 'openai' conflicts with provider"),
        ({"name": "vertex", "region": " "}, "region must be non-empty"),
        ({"name": "openai", "output_mode": "xml"}, "output_mode must be one of tools, json"),
    ],
)
def test_a_bad_provider_setting_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JudgeSpec(**kwargs)  # type: ignore[arg-type]


def test_old_results_without_a_provider_still_load() -> None:
    from ragtrace.evaluation.judges import JudgeInfo

    old = {"name": "anthropic", "model": "claude-haiku-4-5", "prompt_sha256": "a" * 64}
    assert JudgeInfo.from_dict(old).provider is None
    new = JudgeInfo("bedrock", "m", "a" * 64, "bedrock")
    assert JudgeInfo.from_dict(new.to_dict()) == new
