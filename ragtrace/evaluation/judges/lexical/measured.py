"""What the offline judge measured against people, on sets it was not fitted on.

The judge's constants are fitted on public human-labelled sets (``bench/fit_lexical_judge.py``);
``bench/bench_judge_quality.py --fit bench.fit_lexical_judge:lodo_judge`` measures that fitting
leave-one-dataset-out — each set judged by the constants fitted on every *other* dataset — and
writes the pooled row of the sets none of the judge's parts was tuned on (its token weights and
cues were chosen on other datasets) to ``held_out.json`` beside this module; the web view states
it on its judge panel. A record belongs to one version of the judge (its prompt
hash): for any other version :func:`held_out_for` returns None rather than figures that were not
measured on it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ragtrace.evaluation.judges.base import JudgeInfo

__all__ = ["HeldOut", "held_out_for", "held_out_from_dict", "load_held_out", "write_held_out"]

_FILE = "held_out.json"


@dataclass(frozen=True)
class HeldOut:
    """The pooled held-out figures of one judge version."""

    prompt_sha256: str
    sets: tuple[str, ...]  # the sets pooled, each judged by a fit without its dataset
    tuned_on: tuple[str, ...]  # the sets the shipped constants were fitted on
    answers: int
    human_flag_rate: float  # share of answers people marked hallucinated
    flag_rate: float  # share the judge flags at its pass mark
    auroc: float
    auroc_low: float
    auroc_high: float
    overlap_auroc: float  # plain unigram overlap on the same answers
    f1: float  # % at the pass mark
    flag_all_f1: float  # % when every answer is flagged
    leave_one_dataset_out: bool = False  # each set judged by a fit without its dataset

    @property
    def held_out(self) -> bool:
        """Whether no figure was measured on a set its judge was fitted on."""
        return self.leave_one_dataset_out or not set(self.sets) & set(self.tuned_on)

    def describe(self) -> str:
        """One line for a person: the figures beside their baselines."""
        return (
            f"on {self.answers:,} human-labelled answers of sets none of its parts was tuned on "
            f"(its fitted constants fitted without each set): "
            f"AUROC {self.auroc:.3f} ({self.auroc_low:.3f}–{self.auroc_high:.3f}; plain word "
            f"overlap {self.overlap_auroc:.3f}), F1 {self.f1:.1f} at the pass mark (flagging "
            f"every answer: {self.flag_all_f1:.1f}); it flags {self.flag_rate:.0%} of answers "
            f"where people flag {self.human_flag_rate:.0%}"
        )


def held_out_from_dict(raw: dict[str, Any]) -> HeldOut:
    """A record from its JSON form; TypeError or KeyError when it is not one."""
    return HeldOut(**{**raw, "sets": tuple(raw["sets"]), "tuned_on": tuple(raw["tuned_on"])})


@functools.cache
def _shipped() -> HeldOut | None:
    # Read once: the web view asks on every overview, and the package does not change under it.
    source = resources.files(__package__).joinpath(_FILE)
    if not source.is_file():
        return None
    return held_out_from_dict(json.loads(source.read_text(encoding="utf-8")))


def load_held_out(path: Path | None = None) -> HeldOut | None:
    """The shipped record (or the one at ``path``); None when there is none."""
    if path is None:
        return _shipped()
    if not path.is_file():
        return None
    return held_out_from_dict(json.loads(path.read_text(encoding="utf-8")))


def held_out_for(judge: JudgeInfo, path: Path | None = None) -> HeldOut | None:
    """The record of exactly this judge version, else None."""
    record = load_held_out(path)
    if record is None or judge.name != "lexical" or judge.prompt_sha256 != record.prompt_sha256:
        return None
    return record


def write_held_out(record: HeldOut, path: Path | None = None) -> Path:
    """Write ``record`` (by default as the shipped file); returns where."""
    target = path if path is not None else Path(__file__).with_name(_FILE)
    target.write_text(json.dumps(asdict(record), indent=2) + "\n", encoding="utf-8")
    return target
