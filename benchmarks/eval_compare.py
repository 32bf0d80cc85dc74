"""Evaluation of ``tracer compare``'s statistics on captures whose truth is known (docs/compare.md).

One command (about two minutes on one core; ``--trials`` scales it)::

    nice python benchmarks/eval_compare.py
    nice python benchmarks/eval_compare.py --trials 200     # quicker, coarser

Each trial generates the captures of a base and a new build of one layer and compares them with
:func:`tracer.compare.compare.compare`, the function ``tracer compare`` calls, on digests made
directly from the generated cycles (no capture files: the statistics are what is evaluated).

The generator: a layer of 100,000 cycles. Every execution gets noise of 2 % (Student t with 3
degrees of freedom: heavy tails) and, one time in twenty, an interrupt-like excursion of 2 to 10 %
(one-sided: a long right tail); every capture is shifted as a whole by a uniform 0 to ``shift`` %
(the run-to-run variance of a board: 0, or 2 %); the new build is slower by ``slow`` % (every
execution scaled, so every quantile's true change is exactly ``slow`` %).

It prints:

  false positives  share of A/A pairs (slow 0) whose change is significant at alpha 0.01, and the
                   share that exits 1 at --threshold 0 (slower) and at 5 %; nominal: at most 1 %
  power            share of pairs called slower (threshold 0: significant and slower; threshold
                   5: the interval above 5 %) and inconclusive, per slowdown of 1 to 10 %
  coverage         share of pairs whose 95 % interval of the median (p99) change holds the truth
                   (given: share of pairs with an interval at all)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the generated digest (a test helper)

from one_layer_digest import one_layer_digest

from tracer.compare.compare import Change, Verdict, compare
from tracer.compare.digest import CaptureDigest

LEVEL = 100_000.0
NOISE = 0.02
SPIKE_SHARE = 0.05
Design = tuple[int | tuple[int, int], int, float]  # captures a side (or base, new), executions, shift


def capture(rng: np.random.Generator, executions: int, slow: float, shift: float) -> CaptureDigest:
    """One capture's digest: ``executions`` executions of a layer slower by ``slow`` (a fraction),
    the capture shifted by a uniform 0 .. ``shift``."""
    noise = NOISE * rng.standard_t(3, executions)
    spikes = np.where(rng.random(executions) < SPIKE_SHARE, rng.uniform(0.02, 0.10, executions), 0.0)
    whole = 1.0 + rng.uniform(0.0, shift) if shift else 1.0
    cycles = np.round(LEVEL * (1 + slow) * whole * (1 + noise + spikes)).astype(np.int64)
    return one_layer_digest(cycles)


def trial(rng: np.random.Generator, design: Design, slow: float, threshold: float) -> Change:
    """The layer's change of one generated pair of builds (``design``: captures a side, executions
    a capture, shift)."""
    k, m, shift = design
    kb, kn = k if isinstance(k, tuple) else (k, k)
    base = [capture(rng, m, 0.0, shift) for _ in range(kb)]
    new = [capture(rng, m, slow, shift) for _ in range(kn)]
    return compare(base, new, threshold_pct=threshold).layers[0]


def name(design: Design) -> str:
    k, m, shift = design
    kb, kn = k if isinstance(k, tuple) else (k, k)
    return f"{kb} v {kn} captures x {m} exec, shift 0-{100 * shift:g} %"


def false_positives(trials: int, rng: np.random.Generator) -> None:
    print(f"\nfalse positives: A/A pairs (no change), alpha 0.01, {trials} pairs each")
    print(
        f"  {'design':42} {'unit':10} {'significant':>12} {'exit 1 @0 %':>12} {'exit 1 @5 %':>12} {'inconcl. @5 %':>14}"
    )
    designs: tuple[Design, ...] = (
        (1, 30, 0.0),
        (1, 30, 0.02),
        ((1, 4), 30, 0.02),
        (3, 30, 0.02),
        (5, 30, 0.0),
        (5, 30, 0.02),
        (10, 30, 0.02),
    )
    for design in designs:
        sig = slow0 = slow5 = inc5 = 0
        unit = ""
        for _ in range(trials):
            state = rng.bit_generator.state
            ch = trial(rng, design, 0.0, 0.0)
            sig += ch.significant
            slow0 += ch.verdict is Verdict.SLOWER
            rng.bit_generator.state = state  # the same captures at threshold 5 %
            ch5 = trial(rng, design, 0.0, 5.0)
            slow5 += ch5.verdict is Verdict.SLOWER
            inc5 += ch5.verdict is Verdict.INCONCLUSIVE
            unit = ch.unit or ""
        print(
            f"  {name(design):42} {unit:10} {sig / trials:12.1%} {slow0 / trials:12.1%} "
            f"{slow5 / trials:12.1%} {inc5 / trials:14.1%}"
        )


def power(trials: int, rng: np.random.Generator) -> None:
    slows = (0.01, 0.02, 0.03, 0.05, 0.07, 0.10)
    print(f"\npower: share called slower (inconclusive), {trials} pairs each")
    print("  " + f"{'design':42} {'threshold':>9} " + " ".join(f"{f'+{100 * s:g} %':>14}" for s in slows))
    designs: tuple[Design, ...] = ((1, 30, 0.0), (5, 30, 0.02), (10, 30, 0.02))
    for design in designs:
        for threshold in (0.0, 5.0):
            cells = []
            for slow in slows:
                slower = inconclusive = 0
                for _ in range(trials):
                    ch = trial(rng, design, slow, threshold)
                    slower += ch.verdict is Verdict.SLOWER
                    inconclusive += ch.verdict is Verdict.INCONCLUSIVE
                cells.append(f"{slower / trials:6.0%} ({inconclusive / trials:3.0%})")
            print(f"  {name(design):42} {threshold:8g}% " + " ".join(f"{c:>14}" for c in cells))


def coverage(trials: int, rng: np.random.Generator) -> None:
    print(f"\ncoverage of the 95 % intervals (truth: +3 %), {trials} pairs each")
    print(f"  {'design':42} {'quantile':8} {'method':24} {'given':>7} {'covered':>8}")
    slow = 0.03
    cases: tuple[tuple[Design, str], ...] = (
        ((1, 30, 0.0), "p50"),
        ((1, 1000, 0.0), "p50"),
        ((5, 30, 0.02), "p50"),
        ((3, 200, 0.02), "p50"),
        (((1, 4), 30, 0.02), "p50"),
        ((1, 30, 0.0), "p99"),
        ((1, 1000, 0.0), "p99"),
        ((1, 3000, 0.0), "p99"),
        ((5, 200, 0.02), "p99"),
        ((1, 30, 0.02), "p50"),
    )
    for design, q in cases:
        given = held = 0
        method = "-"
        for _ in range(trials):
            ch = trial(rng, design, slow, 5.0)
            quantile = ch.p50 if q == "p50" else ch.p99
            assert quantile is not None
            ci = quantile.interval
            if ci is None or ci.low_pct is None or ci.high_pct is None:
                continue
            method = ci.method
            given += 1
            held += ci.low_pct <= 100 * slow <= ci.high_pct
        shown = f"{held / given:8.1%}" if given else "       -"
        print(f"  {name(design):42} {q:8} {method:24} {given / trials:7.0%} {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1500, help="pairs per false-positive and coverage row")
    parser.add_argument("--power-trials", type=int, default=200, help="pairs per power cell")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    false_positives(args.trials, rng)
    power(args.power_trials, rng)
    coverage(args.trials, rng)
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
