"""The rank test and the bootstrap intervals of ``tracer compare``, held against SciPy and brute force.

SciPy (installed with the fleet extra) is the reference for the Mann-Whitney U test: the same U and
p-value, exact and normal, with and without ties. The bootstrap's Beta shortcut is held against
resampling done the plain way.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracer.analysis.statistics import nearest_rank, rank_index
from tracer.compare.significance import _replicates, bootstrap_change, mann_whitney_u


@pytest.mark.xdist_group("scipy")  # one worker pays SciPy's import
@pytest.mark.parametrize(
    ("n1", "n2", "shift", "ties"),
    [
        (3, 5, 1.0, False),
        (8, 8, 0.5, False),
        (6, 7, 0.0, False),
        (20, 30, 0.3, False),
        (200, 150, 0.1, False),
        (40, 30, 0.5, True),
        (5, 6, 0.5, True),
        (1, 12, 2.0, False),
    ],
)
def test_mann_whitney_matches_scipy(n1: int, n2: int, shift: float, ties: bool) -> None:
    """U and the two-sided p-value agree with SciPy's for the same method."""
    from scipy.stats import mannwhitneyu  # here: SciPy takes seconds to import, only this test needs it

    rng = np.random.default_rng(n1 * 100 + n2)
    x = rng.normal(0, 1, n1)
    y = rng.normal(shift, 1, n2)
    if ties:
        x, y = np.round(x * 2), np.round(y * 2)
    ours = mann_whitney_u(x, y)
    theirs = mannwhitneyu(x, y, alternative="two-sided", method="exact" if ours.method == "exact" else "asymptotic")
    assert ours.u == pytest.approx(float(theirs.statistic))
    assert ours.p_value == pytest.approx(float(theirs.pvalue), rel=1e-9, abs=1e-15)
    assert ours.method == ("exact" if max(n1, n2) <= 8 and not ties else "normal")


def test_identical_values_are_no_difference() -> None:
    """Every value equal on both sides: p = 1 (nothing tells them apart), no division by zero."""
    assert mann_whitney_u(np.full(5, 7), np.full(9, 7)).p_value == 1.0


def test_separated_samples_are_significant() -> None:
    """Twenty executions of a deterministic layer against twenty slower ones: p far below 0.01."""
    base = np.array([20_697, 20_698] * 10)
    new = np.array([21_318, 21_319] * 10)
    assert mann_whitney_u(base, new).p_value < 1e-6


def test_beta_shortcut_is_the_bootstrap() -> None:
    """The order-statistic shortcut gives the distribution plain resampling gives (medians and p99)."""
    rng = np.random.default_rng(3)
    values = np.sort(rng.integers(1000, 1100, 41))
    for q in (0.5, 0.99):
        fast = _replicates(values, q, 20_000, np.random.default_rng(1))
        plain = np.array([nearest_rank(rng.choice(values, len(values)), q) for _ in range(20_000)])
        for p in (0.05, 0.25, 0.5, 0.75, 0.95):
            k = rank_index(20_000, p)
            assert np.sort(fast)[k] == pytest.approx(np.sort(plain)[k], abs=2)


def test_interval_covers_the_true_change() -> None:
    """Over many samples of a known shift, the 95 % interval of the median change holds the true
    change about 95 % of the time."""
    rng = np.random.default_rng(11)
    held = 0
    trials = 300
    for t in range(trials):
        base = np.sort(np.round(rng.normal(10_000, 100, 60)))
        new = np.sort(np.round(rng.normal(10_300, 100, 60)))
        interval = bootstrap_change(base, new, 0.5, replicates=1000, seed=t)
        held += interval.low <= 300 <= interval.high
    assert 0.89 <= held / trials <= 0.99


def test_interval_is_the_same_on_every_run() -> None:
    """Seeded: the gate does not flip on a rerun."""
    base, new = np.sort(np.arange(100) % 7 + 1000), np.sort(np.arange(90) % 5 + 1010)
    assert bootstrap_change(base, new, 0.5) == bootstrap_change(base, new, 0.5)
    interval = bootstrap_change(base, new, 0.5)
    assert interval.excludes_zero() and interval.low > 0
    assert interval.low_pct is not None and 0 < interval.low_pct <= interval.high_pct
