"""The rank test and the execution intervals of ``tracer compare``, held against SciPy and simulation.

SciPy (installed with the fleet extra) is the reference for the Mann-Whitney U test: the same U and
p-value, exact and normal, with and without ties. (The bootstrap of quantiles these tests once held
was replaced by order-statistic intervals: ``tests/test_compare_runs.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest

from tracer.compare.intervals import execution_interval
from tracer.compare.significance import mann_whitney_u


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


def test_interval_covers_the_true_change() -> None:
    """Over many samples of a known shift, the 95 % interval of the median change (order statistics,
    one capture a side) holds the true change about 95 % of the time."""
    rng = np.random.default_rng(11)
    held = 0
    trials = 400
    for _ in range(trials):
        base = np.sort(np.round(rng.normal(10_000, 100, 60)))
        new = np.sort(np.round(rng.normal(10_300, 100, 60)))
        interval = execution_interval(base, new, 0.5)
        assert interval is not None
        held += interval.low_pct <= 3.0 <= interval.high_pct
    assert 0.925 <= held / trials <= 0.975


def test_interval_is_the_same_on_every_run() -> None:
    """No random draw at all: the gate does not flip on a rerun."""
    base, new = np.sort(np.arange(100) % 7 + 1000), np.sort(np.arange(90) % 5 + 1010)
    assert execution_interval(base, new, 0.5) == execution_interval(base, new, 0.5)
    interval = execution_interval(base, new, 0.5)
    assert interval is not None and interval.excludes_zero() and interval.low > 0
    assert interval.low_pct is not None and interval.high_pct is not None and 0 < interval.low_pct <= interval.high_pct
