"""Leave-one-dataset-out splitting and the seeded bootstrap intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from bench._heldout import (
    Interval,
    bootstrap,
    bootstrap_auroc,
    bootstrap_auroc_gap,
    dataset,
    lodo,
)


def test_a_dataset_is_the_name_before_the_first_dash() -> None:
    assert [dataset(n) for n in ("qags-cnndm", "faithbench-rest", "begin", "ragtruth-qa")] == [
        "qags",
        "faithbench",
        "begin",
        "ragtruth",
    ]


def test_lodo_holds_out_every_part_of_the_dataset() -> None:
    plan = lodo(["qags-xsum", "begin", "qags-cnndm", "faithbench", "faithbench-rest"])
    assert plan["qags-cnndm"] == ("begin", "faithbench", "faithbench-rest")
    assert plan["faithbench-rest"] == ("begin", "qags-cnndm", "qags-xsum")
    assert plan["begin"] == ("faithbench", "faithbench-rest", "qags-cnndm", "qags-xsum")
    for name, tuning in plan.items():
        assert all(dataset(t) != dataset(name) for t in tuning)


def test_lodo_of_one_dataset_tunes_on_nothing() -> None:
    assert lodo(["qags-cnndm", "qags-xsum"]) == {"qags-cnndm": (), "qags-xsum": ()}


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    values = [float(i % 7) for i in range(200)]

    def mean(ix: Sequence[int]) -> float:
        return sum(values[i] for i in ix) / len(ix)

    first = bootstrap(mean, len(values), resamples=300)
    assert first == bootstrap(mean, len(values), resamples=300)
    assert first != bootstrap(mean, len(values), resamples=300, seed=1)
    assert first.low < first.value < first.high
    assert first.value == pytest.approx(sum(values) / len(values))
    # the standard error of the mean of 200 draws of 0..6 is about 0.14: a 95 % interval ~0.55
    assert 0.3 < first.high - first.low < 0.8


def test_bootstrap_drops_undefined_resamples() -> None:
    labels = [True] + [False] * 9
    interval = bootstrap_auroc([0.0] + [1.0] * 9, labels, resamples=200)
    assert interval.value == 1.0 and interval.low == 1.0  # resamples without the positive dropped
    assert math.isnan(bootstrap_auroc([1.0, 2.0], [True, True]).low)


def test_auroc_interval_of_a_perfect_and_a_useless_ranking() -> None:
    labels = [i % 2 == 0 for i in range(100)]
    perfect = [0.0 if bad else 1.0 for bad in labels]
    assert bootstrap_auroc(perfect, labels) == Interval(1.0, 1.0, 1.0)
    useless = bootstrap_auroc([0.5] * 100, labels)
    assert (useless.value, useless.low, useless.high) == (0.5, 0.5, 0.5)


def test_paired_gap_is_zero_for_the_same_scores_and_clear_for_a_better_one() -> None:
    labels = [i % 3 == 0 for i in range(120)]
    good = [(0.2 if bad else 0.8) + (i % 5) / 10 for i, bad in enumerate(labels)]
    noise = [(i * 37 % 11) / 11 for i in range(120)]
    assert bootstrap_auroc_gap(good, good, labels) == Interval(0.0, 0.0, 0.0)
    gap = bootstrap_auroc_gap(good, noise, labels)
    assert gap.value > 0.3 and gap.excludes(0.0)
    with pytest.raises(ValueError):
        bootstrap_auroc_gap(good, noise[:-1], labels)


def test_interval_formats_three_places() -> None:
    assert str(Interval(0.71234, 0.6, 0.8)) == "0.712 [0.600, 0.800]"
    assert Interval(0.1, -0.05, 0.2).excludes(-0.1) and not Interval(0.1, -0.05, 0.2).excludes(0)
