"""Evaluation of change-point libraries for ``tracer trend`` (the numbers in docs/trend.md).

One command, in any environment that has the libraries to evaluate::

    python benchmarks/eval_changepoints.py            # 200 series per case
    python benchmarks/eval_changepoints.py --trials 50

It generates per-build series like the ones ``tracer trend`` reads (one value per build: a layer's
median cycles), 30 builds each, with Gaussian or heavy-tailed (Student t, 3 degrees of freedom)
noise of 1 % of the level, and measures for each method:

  found      share of series with a step where the step was found at exactly the right build
  near       ... within one build
  extra      mean number of change points that are not the step (false alarms)
  flat FP    share of flat series (no step) with at least one change point
  ms         mean time per series

Methods: ``ruptures`` PELT and binary segmentation (least-squares cost, penalty from a robust
noise estimate: what ``tracer trend`` uses), and MongoDB's ``signal-processing-algorithms``
E-Divisive means (its permutation test at p = 0.05, 100 permutations), each when importable.
The ``tracer`` rows are the product's own detector (:mod:`tracer.fleet.changepoints`: ruptures'
PELT for candidates, then tests), with a threshold of 0 (judged on the statistics alone) and of
2 % (a change must also be that large).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BUILDS = 30
LEVEL = 100_000.0
NOISE = 0.01


def robust_sigma(y: np.ndarray) -> float:
    """Noise from the median absolute deviation of successive differences (a step moves one difference)."""
    d = np.diff(y)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2))


def methods() -> dict[str, Callable[[np.ndarray], list[int]]]:
    """The detectors that can be imported here; each returns the builds where a new level begins."""
    out: dict[str, Callable[[np.ndarray], list[int]]] = {}
    try:
        import ruptures as rpt

        def pelt(y: np.ndarray) -> list[int]:
            pen = 3.0 * robust_sigma(y) ** 2 * math.log(len(y))
            return rpt.Pelt(model="l2", min_size=1, jump=1).fit(y).predict(pen=pen)[:-1]

        def binseg(y: np.ndarray) -> list[int]:
            pen = 3.0 * robust_sigma(y) ** 2 * math.log(len(y))
            return rpt.Binseg(model="l2", min_size=1, jump=1).fit(y).predict(pen=pen)[:-1]

        out["ruptures PELT l2"] = pelt
        out["ruptures Binseg l2"] = binseg
    except ImportError:
        pass
    try:
        from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

        def edivisive(y: np.ndarray) -> list[int]:
            return sorted(e_divisive(y, pvalue=0.05, permutations=100))

        out["E-Divisive (p 0.05)"] = edivisive
    except ImportError:
        pass
    try:
        from tracer.fleet.changepoints import find_changes

        out["tracer (threshold 0)"] = lambda y: [c.index for c in find_changes(y, threshold_pct=0.0)]
        out["tracer (threshold 2 %)"] = lambda y: [c.index for c in find_changes(y, threshold_pct=2.0)]
    except ImportError:
        pass
    return out


def series(rng: np.random.Generator, step_at: int | None, step_pct: float, heavy: bool) -> np.ndarray:
    """One series of BUILDS values: a level, a step of ``step_pct`` from ``step_at`` on, noise."""
    noise = rng.standard_t(3, BUILDS) / math.sqrt(3) if heavy else rng.standard_normal(BUILDS)
    y = LEVEL * (1 + NOISE * noise)
    if step_at is not None:
        y[step_at:] += LEVEL * step_pct / 100
    return y


def evaluate(name: str, detect: Callable[[np.ndarray], list[int]], trials: int) -> list[str]:
    """Rows of the result table for one method."""
    rows = []
    for heavy in (False, True):
        noise = "t3" if heavy else "gauss"
        rng = np.random.default_rng(1)
        spent = 0.0
        fp = 0
        for _ in range(trials):
            y = series(rng, None, 0.0, heavy)
            t0 = time.perf_counter()
            fp += bool(detect(y))
            spent += time.perf_counter() - t0
        rows.append(f"| {name} | {noise} | flat | - | - | - | {fp / trials:.1%} | {1000 * spent / trials:.1f} |")
        for step_pct, where in ((3.0, "middle"), (5.0, "middle"), (10.0, "middle"), (5.0, "newest"), (10.0, "newest")):
            rng = np.random.default_rng(2)
            found = near = extra = 0
            spent = 0.0
            for _ in range(trials):
                at = BUILDS - 1 if where == "newest" else int(rng.integers(5, BUILDS - 5))
                y = series(rng, at, step_pct, heavy)
                t0 = time.perf_counter()
                points = detect(y)
                spent += time.perf_counter() - t0
                found += at in points
                close = [p for p in points if abs(p - at) <= 1]
                near += bool(close)
                extra += len(points) - (1 if close else 0)
            rows.append(
                f"| {name} | {noise} | +{step_pct:g} % {where} | {found / trials:.1%} | {near / trials:.1%} | "
                f"{extra / trials:.2f} | - | {1000 * spent / trials:.1f} |"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="series per case (default: 200)")
    args = parser.parse_args()
    found = methods()
    if not found:
        sys.exit("none of ruptures, signal-processing-algorithms or tracer[fleet] is importable")
    print(f"{BUILDS} builds, noise {NOISE:.0%} of the level, {args.trials} series per case\n")
    print("| method | noise | series | found | near | extra | flat FP | ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, detect in found.items():
        for row in evaluate(name, detect, args.trials):
            print(row)


if __name__ == "__main__":
    main()
