"""Goal: on a simulated stream with a known true hallucination rate and a judge of known
sensitivity and specificity, the corrected rate's 95 % interval covers the true rate in at
least 93 % of 1,000 seeded runs, where the raw rate's does not."""

from __future__ import annotations

import numpy as np
import pytest

from ragtrace.evaluation.rates import rogan_gladen, wilson

RUNS = 1000


def _coverage(
    true_rate: float,
    sensitivity: float,
    specificity: float,
    judged: int,
    calibration_unsupported: int,
    calibration_supported: int,
    seed: int,
) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    # Each judged answer is truly unsupported with p = true_rate; the judge flags it with
    # p = sensitivity, and flags a supported answer with p = 1 - specificity.
    truly = rng.random((RUNS, judged)) < true_rate
    flagged = np.where(
        truly,
        rng.random((RUNS, judged)) < sensitivity,
        rng.random((RUNS, judged)) >= specificity,
    )
    raw_k = flagged.sum(axis=1)
    # A calibration set of people's labels, judged by the same judge.
    se_k = rng.binomial(calibration_unsupported, sensitivity, RUNS)
    sp_k = rng.binomial(calibration_supported, specificity, RUNS)
    covered = raw_covered = 0
    for k, a, b in zip(raw_k.tolist(), se_k.tolist(), sp_k.tolist(), strict=True):
        raw = wilson(k, judged)
        corrected = rogan_gladen(
            raw, wilson(a, calibration_unsupported), wilson(b, calibration_supported)
        )
        covered += corrected.low <= true_rate <= corrected.high
        raw_covered += raw.low <= true_rate <= raw.high
    return covered / RUNS, raw_covered / RUNS


@pytest.mark.parametrize(
    ("true_rate", "sensitivity", "specificity", "judged", "unsupported", "supported", "raw_max"),
    [
        # a day of judged answers; 200 labelled claims, 30 % unsupported (a realistic set)
        (0.10, 0.80, 0.95, 2000, 60, 140, 0.20),
        # a rarer failure, a weaker judge, a smaller calibration set
        (0.05, 0.80, 0.90, 1000, 30, 170, 0.05),
    ],
)
def test_corrected_interval_covers_the_true_rate_where_the_raw_one_does_not(
    true_rate: float,
    sensitivity: float,
    specificity: float,
    judged: int,
    unsupported: int,
    supported: int,
    raw_max: float,
) -> None:
    corrected, raw = _coverage(
        true_rate, sensitivity, specificity, judged, unsupported, supported, seed=31
    )
    assert corrected >= 0.93, f"corrected interval covered the true rate in {corrected:.1%}"
    assert raw <= raw_max, f"raw interval covered the true rate in {raw:.1%}"
