"""The files generated from the settings models are the committed ones (no hand edits, no drift)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ragtrace_consumers.config import ConsumerConfig, example_path, load_config
from ragtrace_consumers.config import docs as config_docs
from ragtrace_consumers.config.docs import key_specs
from scripts import gen_config

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("path", sorted(config_docs.GENERATED))
def test_committed_file_is_what_the_model_generates(path: str) -> None:
    expected = gen_config.rendered(ROOT)[ROOT / path]
    actual = (ROOT / path).read_text(encoding="utf-8")
    assert actual == expected, (
        f"{path} differs from what the settings model generates: run `make config-docs` "
        "(python scripts/gen_config.py) and commit the result"
    )


def test_check_mode_names_a_stale_file_and_how_to_regenerate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = gen_config
    for path in config_docs.GENERATED:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text(encoding="utf-8"), encoding="utf-8")
    assert gen.main(["--check"], root=tmp_path) == 0
    stale = tmp_path / config_docs.DOCS_TABLE
    stale.write_text(stale.read_text(encoding="utf-8") + "hand edit\n", encoding="utf-8")
    assert gen.main(["--check"], root=tmp_path) == 1
    err = capsys.readouterr().err
    assert config_docs.DOCS_TABLE in err and "make config-docs" in err
    assert gen.main([], root=tmp_path) == 0  # regenerates
    assert gen.main(["--check"], root=tmp_path) == 0


def test_generated_example_loads_as_exactly_the_defaults() -> None:
    loaded = load_config(example_path(), env={})
    assert loaded.model_copy(update={"source": "x"}) == ConsumerConfig.defaults().model_copy(
        update={"source": "x"}
    )
    data = yaml.safe_load(example_path().read_text(encoding="utf-8"))
    assert {(s, k) for s, body in data.items() for k in body} == {
        (s.section, s.name) for s in key_specs()
    }


def test_every_key_has_a_description_and_the_table_names_its_variable() -> None:
    table = (ROOT / config_docs.DOCS_TABLE).read_text(encoding="utf-8")
    for spec in key_specs():
        assert spec.doc.strip(), spec.dotted
        assert f"| `{spec.dotted}`" in table and f"`{spec.env}`" in table


def test_chart_schema_section_validates_like_the_model() -> None:
    schema = json.loads((ROOT / config_docs.CHART_SCHEMA).read_text(encoding="utf-8"))
    config = schema["properties"]["consumer"]["properties"]["config"]["properties"]
    judge = config["judge"]["properties"]
    assert judge["concurrency"]["type"] == "integer" and judge["concurrency"]["minimum"] == 1
    assert judge["mode"]["enum"] == ["realtime", "batch"]
    assert config["sampling"]["properties"]["recall_rate"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": config["sampling"]["properties"]["recall_rate"]["description"],
    }
    # keys the chart sets from its own values are not under consumer.config
    assert "bootstrap_servers" not in config["kafka"]["properties"]
    assert "sasl_password" not in config["kafka"]["properties"]


def test_the_sdk_table_of_the_semantic_conventions_matches_the_model() -> None:
    """docs/semantic-conventions.md keeps a hand-written table (it adds configure()'s arguments):
    each SDK variable is in it with the model's default."""
    from ragtrace._config import env_settings

    rows = {
        line.split("|")[1].strip(): line
        for line in (ROOT / "docs" / "semantic-conventions.md").read_text().splitlines()
        if line.startswith("| `RAGTRACE_")
    }
    for setting in env_settings():
        row = rows[f"`{setting.env}`"]
        default = str(setting.default).lower()
        assert f"| {default} |" in row or f"| `{default}` |" in row, (setting.env, row)
