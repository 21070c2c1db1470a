"""The numbers, commands and settings the README and docs quote are the code's: each is read from
the code here, so a change on either side fails until the other follows."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ragtrace.cli import build_parser
from ragtrace.evaluation.judges.lexical.align import ALIGNED_SHARE, CUE_PENALTY, UNIT_OVERLAP_SHARE
from ragtrace.evaluation.judges.lexical.judge import DEFAULT_THRESHOLD
from ragtrace_consumers.config import ConsumerConfig, env_var
from ragtrace_consumers.config.flags import flagged
from ragtrace_consumers.runtime.rescoring import RECENT_TRACES
from ragtrace_consumers.webview.trace_page import BACKEND_LINK_HINT

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _readme_lexical_bullet() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^- \*\*lexical\*\*.*?(?=^- |\Z)", text, re.M | re.S)
    assert match is not None, "README lost its lexical judge bullet"
    return " ".join(match[0].split())


def test_readme_quotes_the_lexical_judges_threshold_and_blend() -> None:
    bullet = _readme_lexical_bullet()
    assert f"support reaches {DEFAULT_THRESHOLD}" in bullet
    aligned = round(ALIGNED_SHARE * 100)
    assert f"blended {aligned} : {100 - aligned}" in bullet
    plain = round(UNIT_OVERLAP_SHARE * 100)
    assert f"then {100 - plain} : {plain} with the plain share of its words" in bullet
    assert CUE_PENALTY == 0.5 and "halved by a contradiction cue" in bullet
    assert "%" not in bullet  # the seed's "60 % of its words" is word_overlap, not this judge


def test_readme_quotes_the_lexical_judges_held_out_figures() -> None:
    from ragtrace.evaluation.judges.lexical.measured import load_held_out

    bullet = _readme_lexical_bullet()
    record = load_held_out()
    assert record is not None and record.leave_one_dataset_out
    assert f"{record.answers:,} human-labelled answers of six public sets" in bullet
    assert len(record.sets) == 6 and len(record.tuned_on) == 11
    assert "fitted on eleven public human-labelled sets" in bullet
    assert f"AUROC {record.auroc:.3f} where plain word overlap reaches" in bullet
    assert f"reaches {record.overlap_auroc:.3f}" in bullet
    assert f"F1 {record.f1:.1f} where flagging every answer scores {record.flag_all_f1:.1f}" in (
        bullet
    )


def _sub_choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return None


def _quoted_commands() -> list[tuple[str, list[str]]]:
    """Every ``ragtrace …`` command line the pages quote: in backticks, or a line of a fenced
    block."""
    found: list[tuple[str, list[str]]] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        quoted = re.findall(r"`(ragtrace [^`]+)`", text)
        for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
            quoted += re.findall(r"^\s*(?:\$ )?(ragtrace .+)$", block, re.M)
        found += [(page.name, line.split()[1:]) for line in quoted]
    return found


def test_every_quoted_command_and_action_exists() -> None:
    commands = _sub_choices(build_parser())
    assert commands is not None
    quoted = _quoted_commands()
    assert len(quoted) > 20  # the pages do quote commands: the check reads them
    wrong = []
    for page, words in quoted:
        if not words or words[0].startswith("-") or words[0].endswith(":"):
            continue  # an option alone, or a quoted message ("ragtrace consume: error: …")
        parser = commands.get(words[0])
        if parser is None:
            wrong.append((page, " ".join(words)))
            continue
        actions = _sub_choices(parser)
        operand = next((w for w in words[1:] if not w.startswith("-")), None)
        if actions is not None and operand is not None and set(operand.split("|")) - set(actions):
            wrong.append((page, " ".join(words)))
    assert wrong == []


@pytest.mark.parametrize("key", ["trace_url_template"])
def test_the_trace_page_names_the_flag_and_the_setting(key: str) -> None:
    (flagged_key,) = (k for k in flagged(ConsumerConfig, ("web",)) if k.key == key)
    assert f"{flagged_key.flag.name} {flagged_key.flag.metavar}" in BACKEND_LINK_HINT
    assert f"web.{key}" in BACKEND_LINK_HINT
    assert f"${env_var('web', key)}" in BACKEND_LINK_HINT


def test_the_web_view_page_quotes_how_many_recent_traces_a_save_rescores() -> None:
    text = " ".join((ROOT / "docs" / "web-view.md").read_text(encoding="utf-8").split())
    assert f"among the {RECENT_TRACES} most recently scored traces that ask it" in text
