"""The short fault soak (fixed seed): every fault kind at least once in 35 s, several at once,
under 5 traces/s across two replicas, then the history checked (tests/soak/run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.services import NotProvisioned
from tests.soak.run import SoakConfig, run_soak

pytestmark = pytest.mark.e2e

SHORT = SoakConfig(
    seed=420,
    fault_s=35.0,
    rate=5.0,
    warmup_s=8.0,
    calm_s=50.0,
    gap_s=(2.5, 5.0),
    overlap=0.3,
    max_hold_s=5.0,
    drain_timeout_s=60.0,
)


@pytest.mark.timeout(400)
def test_short_fault_soak(tmp_path: Path) -> None:
    try:
        result = run_soak(SHORT, tmp_path)
    except NotProvisioned as exc:
        pytest.fail(str(exc), pytrace=False)
    report = "\n".join(result.lines())
    print(report)
    verdict = result.verdict
    kinds = {f.kind for f in result.faults}
    assert len(kinds) == 10, report  # the fixed seed covers every kind
    assert verdict.accepted >= 0.8 * SHORT.rate * (SHORT.warmup_s + SHORT.fault_s), report
    assert not verdict.violations, report
    assert not verdict.lost, report
    assert all(verdict.given_up.values()), report  # a trace given up says why
    assert result.pending_keys == 0, report  # nothing left being assembled, due or leased
    assert result.recovery_s is not None and result.recovery_s <= 60, report
    assert result.peak_rss_mib < 700, report
    keys = max(k for _, k in result.samples.redis_keys)
    assert keys <= 8 * verdict.accepted + 200, report  # bounded by the work, not the retries
    # Every per-trace key expires within its setting (120 s here: assembly.ttl_s,
    # export.written_ttl_s, judge.cache_ttl_s), so the key count levels off at rate x TTL.
    assert set(result.key_ttls_s) == {"done", "written", "judge"}, report
    assert all(0 < ttl <= 120 for ttl in result.key_ttls_s.values()), report
    assert result.big_trace_delay_s is not None and result.big_trace_delay_s < 5.0, report
