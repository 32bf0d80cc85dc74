"""Builds judged as builds: captures as the unit, honest tail intervals, inconclusive verdicts, the
plan, and the distribution functions they rest on (held against SciPy).

Most tests work on digests generated directly (cycles whose truth is known: per-execution noise,
per-capture shifts, a slowdown), through :func:`tracer.compare.compare.compare`, the function the
command calls; the command itself runs on captures written by ``fleet_streams``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from fleet_streams import Build, write_build
from one_layer_digest import one_layer_digest

from tracer.analysis.distributions import binomial_range, t_quantile, t_sf
from tracer.compare.compare import Verdict, compare
from tracer.compare.digest import CaptureDigest
from tracer.compare.intervals import execution_interval, min_executions
from tracer.compare.plan import Variance, plan
from tracer.compare.significance import mann_whitney_u


def capture(rng: np.random.Generator, executions: int, slow: float = 0.0, shift: float = 0.0) -> CaptureDigest:
    """A capture of one layer of 100,000 cycles: 1 % Gaussian noise per execution, the whole
    capture ``shift`` (a fraction) slower, the build ``slow`` slower."""
    cycles = np.round(1e5 * (1 + slow) * (1 + shift) * (1 + 0.01 * rng.standard_normal(executions)))
    return one_layer_digest(cycles)


@pytest.mark.xdist_group("scipy")
def test_distribution_functions_agree_with_scipy() -> None:
    """t tail probabilities and quantiles, binomial ranges: the values SciPy gives."""
    from scipy import stats

    for t, df in ((0.5, 1.0), (1.0, 3.0), (2.5, 7.3), (4.0, 18.0), (10.0, 2.0), (3.0, 250.0)):
        assert t_sf(t, df) == pytest.approx(float(stats.t.sf(t, df)), rel=1e-9)
        assert t_sf(-t, df) == pytest.approx(float(stats.t.sf(-t, df)), rel=1e-9)
    for p, df in ((0.975, 2.0), (0.995, 4.5), (0.8, 8.0), (0.999, 30.0), (0.1, 3.0)):
        assert t_quantile(p, df) == pytest.approx(float(stats.t.ppf(p, df)), rel=1e-9)
    for n, p, lo, hi in ((30, 0.5, 9, 20), (1000, 0.99, 983, 996), (50_000, 0.99, 49_450, 49_550)):
        assert binomial_range(n, p, lo, hi) == pytest.approx(
            float(stats.binom.cdf(hi, n, p) - stats.binom.cdf(lo - 1, n, p)), abs=2e-4
        )


def test_per_capture_shifts_are_not_a_change_of_the_build() -> None:
    """Five captures a side, each shifted as a whole (0 to 2 %), no change of the build. Pooled as
    independent executions, the rank test calls it real (the defect); over captures it is not."""
    rng = np.random.default_rng(4)
    base = [capture(rng, 30, shift=s) for s in (0.0, 0.002, 0.004, 0.006, 0.008)]
    new = [capture(rng, 30, shift=s) for s in (0.012, 0.014, 0.016, 0.018, 0.02)]
    pooled = mann_whitney_u(
        np.concatenate([d.samples[0].cycles for d in base]), np.concatenate([d.samples[0].cycles for d in new])
    )
    assert pooled.p_value < 1e-6  # what the executions alone say
    unshifted = [capture(rng, 30, shift=s) for s in (0.02, 0.0, 0.016, 0.004, 0.01)]
    same = compare(base, unshifted, threshold_pct=0.0).layers[0]
    assert same.unit == "capture" and same.captures == (5, 5)
    assert same.test is not None and same.test.p_value > 0.01 and not same.significant
    assert same.verdict is Verdict.UNCHANGED


def test_false_positives_over_captures_stay_within_alpha() -> None:
    """300 A/A pairs of 4 captures a side with shifts of 0 to 2 %: at most a few in a hundred are
    significant at alpha 0.05 (the nominal rate), where pooled executions call most of them real."""
    rng = np.random.default_rng(9)
    significant = pooled = 0
    for _ in range(300):
        base = [capture(rng, 20, shift=rng.uniform(0, 0.02)) for _ in range(4)]
        new = [capture(rng, 20, shift=rng.uniform(0, 0.02)) for _ in range(4)]
        significant += compare(base, new, alpha=0.05, threshold_pct=0.0).layers[0].significant
        pooled += (
            mann_whitney_u(
                np.concatenate([d.samples[0].cycles for d in base]),
                np.concatenate([d.samples[0].cycles for d in new]),
            ).p_value
            < 0.05
        )
    assert significant / 300 <= 0.08
    assert pooled / 300 > 0.3


def test_a_real_change_is_found_over_captures() -> None:
    """4 % slower with shifts of 0 to 2 % a capture: slower beyond 2 %, interval over captures."""
    rng = np.random.default_rng(2)
    base = [capture(rng, 30, shift=rng.uniform(0, 0.02)) for _ in range(6)]
    new = [capture(rng, 30, slow=0.04, shift=rng.uniform(0, 0.02)) for _ in range(6)]
    change = compare(base, new, threshold_pct=1.0).layers[0]
    assert change.verdict is Verdict.SLOWER and change.unit == "capture"
    assert change.p50 is not None and change.p50.interval is not None
    assert change.p50.interval.method == "welch-t over captures"
    assert change.p50.interval.low_pct is not None and change.p50.interval.high_pct is not None
    assert 1.0 < change.p50.interval.low_pct < 4.0 < change.p50.interval.high_pct


def test_one_capture_a_side_says_run_to_run_is_not_measured() -> None:
    """One capture each: executions are the unit, and a note says what that leaves out and how many
    captures would measure it."""
    rng = np.random.default_rng(1)
    result = compare([capture(rng, 30)], [capture(rng, 30, slow=0.1)])
    assert result.layers[0].unit == "execution"
    (note,) = result.notes
    assert "run-to-run variance" in note and "not measured" in note and "at least 3 captures a side" in note


def test_p99_of_few_executions_has_no_interval_and_says_why() -> None:
    """30 executions: the p99 is the maximum and gets no interval (the bootstrap's was called 95 %
    and held 80-90 %); 1000 a side: an order-statistic interval."""
    rng = np.random.default_rng(5)
    few = compare([capture(rng, 30)], [capture(rng, 30, slow=0.03)]).layers[0]
    assert few.p99 is not None and few.p99.interval is None
    assert few.p99.note is not None and "maximum" in few.p99.note and f"{min_executions(0.99)}" in few.p99.note
    many = compare([capture(rng, 1000)], [capture(rng, 1000, slow=0.03)]).layers[0]
    assert many.p99 is not None and many.p99.interval is not None and many.p99.note is None
    assert many.p99.interval.method == "order statistics"
    # Over captures of 30 executions each, a capture's p99 is its maximum: no interval either.
    sets = compare([capture(rng, 30) for _ in range(3)], [capture(rng, 30) for _ in range(3)]).layers[0]
    assert sets.p99 is not None and sets.p99.interval is None and "101" in (sets.p99.note or "")


def test_p99_interval_holds_its_confidence() -> None:
    """300 pairs of 1000 executions a side, 3 % slower: the p99 interval holds +3 % at least 93 %
    of the time and at most 99.5 % (a conservative interval is honest, a short one is not)."""
    rng = np.random.default_rng(8)
    held = 0
    for _ in range(300):
        base = np.sort(np.round(1e5 * (1 + 0.01 * rng.standard_normal(1000))))
        new = np.sort(np.round(1.03e5 * (1 + 0.01 * rng.standard_normal(1000))))
        interval = execution_interval(base, new, 0.99)
        assert interval is not None and interval.low_pct is not None and interval.high_pct is not None
        held += interval.low_pct <= 3.0 <= interval.high_pct
    assert 0.93 <= held / 300 <= 0.995


def test_a_change_at_the_threshold_is_inconclusive_with_what_would_decide_it() -> None:
    """5 % slower against a 5 % threshold, one capture a side: the interval straddles the threshold;
    the verdict says so, with the executions a side that would decide it; it does not fail."""
    rng = np.random.default_rng(3)
    result = compare([capture(rng, 30)], [capture(rng, 30, slow=0.05)], threshold_pct=5.0)
    change = result.layers[0]
    assert change.p50 is not None and change.p50.interval is not None
    assert change.p50.interval.low_pct is not None and change.p50.interval.high_pct is not None
    assert change.p50.interval.low_pct < 5.0 < change.p50.interval.high_pct
    assert change.verdict is Verdict.INCONCLUSIVE and result.passed
    assert result.inconclusive == (change,)
    assert change.decide is not None and change.decide.unit == "executions"
    assert change.decide.per_side is not None and change.decide.per_side > 30


def test_plan_detects_what_it_promises() -> None:
    """The plan's captures give the power asked for (simulated), one capture fewer does not reach the
    bound the plan computes."""
    v = Variance(within=0.01**2, between=0.006**2, executions=30, captures=(5, 5))
    p = plan(v, 2.0, 0.01, 0.8)
    assert p is not None and p.captures is not None and not p.assumes_no_run_to_run
    smaller = plan(v, 4.0, 0.01, 0.8)
    assert smaller is not None and smaller.captures is not None and smaller.captures < p.captures
    rng = np.random.default_rng(12)
    found = 0
    for _ in range(200):
        base = [capture(rng, 30, shift=rng.normal(0, 0.006)) for _ in range(p.captures)]
        new = [capture(rng, 30, slow=0.02, shift=rng.normal(0, 0.006)) for _ in range(p.captures)]
        found += compare(base, new, threshold_pct=0.0).layers[0].verdict is Verdict.SLOWER
    assert found / 200 >= 0.72  # power 0.8 asked; 200 pairs leave some room
    unmeasured = plan(Variance(0.03**2, None, 30, (1, 1)), 2.0, 0.01, 0.8)
    assert unmeasured is not None and unmeasured.captures is None and unmeasured.assumes_no_run_to_run
    z = 2.5758 + 0.8416
    assert unmeasured.executions == math.ceil(2 * 0.03**2 * (z / math.log1p(0.02)) ** 2)


@pytest.fixture(scope="module")
def shifted_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Three captures of build 41 and three of 42 (dw1 8 % slower, conv0 2 % slower), each capture
    shifted as a whole by up to 2 %."""
    root = tmp_path_factory.mktemp("shifted")
    shifts = (0.0, 0.012, 0.02, 0.006, 0.016, 0.004)
    out: dict[str, list[Path]] = {"41": [], "42": []}
    for i, shift in enumerate(shifts):
        build = "41" if i < 3 else "42"
        spec = Build(scale=1 + shift) if build == "41" else Build(scale=(1 + shift) * 1.0, slow=(1, 8.0))
        out[build].append(write_build(root / f"{build}-{i}.trace", spec, 30, 40 + i, labels={"build": build}))
    return out


def test_compare_plan_and_inconclusive_on_the_command_line(shifted_sets, run_cli) -> None:
    """--plan 2 puts a plan of captures a side into the JSON and the text; an inconclusive change
    exits 0 with a warning naming it."""
    base, new = shifted_sets["41"], shifted_sets["42"]
    done = run_cli("compare", "--base", *base, "--new", *new, "--workers", "1", "--plan", "2", "--format", "json")
    assert done.code == 1, done.err
    obj = json.loads(done.out)
    assert obj["plan"]["change_pct"] == 2.0 and obj["regressions"] == ["dw1"]
    dw1 = next(ch for ch in obj["layers"] if ch["label"] == "dw1")
    assert dw1["unit"] == "capture" and dw1["test"]["name"] == "welch-t-captures"
    assert dw1["captures"] == {"base": 3, "new": 3} and dw1["plan"]["captures_per_side"] >= 2
    assert dw1["variance"]["run_to_run_pct"] is not None
    text = run_cli("compare", "--base", *base, "--new", *new, "--workers", "1", "--plan", "2")
    assert "to detect 2 % at alpha 0.01 with power 80 %" in text.out and "captures of 30 executions" in text.out
    # A threshold of 8 % sits on dw1's change: inconclusive, exit 0, said on stderr.
    at = run_cli("compare", "--base", *base, "--new", *new, "--workers", "1", "--threshold", "8", "--format", "json")
    assert at.code == 0, at.out
    assert json.loads(at.out)["inconclusive"] == ["dw1"] and "inconclusive" in at.err and "dw1" in at.err


def test_files_dataset_and_trend_give_one_verdict(shifted_sets, run_cli, tmp_path: Path) -> None:
    """The same captures compared as files, from a dataset, and as trend's newest build: the same
    verdicts, the same numbers."""
    base, new = shifted_sets["41"], shifted_sets["42"]
    files = run_cli("compare", "--base", *base, "--new", *new, "--workers", "1", "--format", "json")
    ds = tmp_path / "results"
    assert run_cli("ingest", *base, *new, "-o", ds, "--workers", "1").code == 0
    selected = run_cli("compare", "--dataset", ds, "--base", "build=41", "--new", "build=42", "--format", "json")
    a, b = json.loads(files.out), json.loads(selected.out)
    assert files.code == selected.code == 1
    for key in ("inference", "layers", "regressions", "inconclusive"):
        assert a[key] == b[key], key
    trend = run_cli("trend", ds, "--by", "build", "--format", "json")
    assert trend.code == 1, trend.err
    obj = json.loads(trend.out)
    verdicts = {ch["label"]: ch["verdict"] for ch in [a["inference"], *a["layers"]]}
    for series in obj["series"]:
        assert series["newest"]["verdict"] == verdicts[series["label"]], series["label"]
        assert series["newest"]["unit"] == "capture" and series["capture_spread_pct"] is not None
    assert obj["newest_regressions"] == a["regressions"] == ["dw1"]


def test_dataset_selection_that_matches_nothing_is_said_in_words(shifted_sets, run_cli, tmp_path: Path) -> None:
    """--new side=nosuch: exit 2 naming the labels the dataset has, with no SQL in the message."""
    ds = tmp_path / "results"
    assert run_cli("ingest", *shifted_sets["41"], "-o", ds, "--workers", "1").code == 0
    done = run_cli("compare", "--dataset", ds, "--base", "build=41", "--new", "side=nosuch")
    assert done.code == 2
    assert "SELECT" not in done.err and "no capture has the label 'side'" in done.err and "build" in done.err
    wrong = run_cli("compare", "--dataset", ds, "--base", "build=41", "--new", "build=43")
    assert wrong.code == 2 and "its captures have build=41" in wrong.err


def test_trend_noise_is_the_estimate_the_docs_describe(shifted_sets, run_cli, tmp_path: Path) -> None:
    """noise is the MAD estimate of successive build values whatever the threshold (it was the
    spread left after the fit, which moved with it); the JSON says what each figure is."""
    from tracer.fleet.changepoints import robust_sigma

    rng = np.random.default_rng(0)
    paths = [
        write_build(
            tmp_path / f"b{b}.trace",
            Build(scale=1 + rng.normal(0, 0.01), slow=(1, 6.0) if b >= 6 else None),
            8,
            b,
            labels={"build": b},
        )
        for b in range(12)
    ]
    ds = tmp_path / "series"
    assert run_cli("ingest", *paths, "-o", ds, "--workers", "1").code == 0
    objs = [
        json.loads(run_cli("trend", ds, "--by", "build", "--threshold", t, "--format", "json").out) for t in ("0", "5")
    ]
    for one, other in zip(objs[0]["series"], objs[1]["series"]):
        assert one["noise"] == other["noise"] == round(robust_sigma(np.array(one["values"], float)), 3)
    assert {"noise", "residual_sd", "capture_spread_pct", "newest"} <= set(objs[0]["figures"])


def test_one_capture_against_several_borrows_their_spread() -> None:
    """One capture of the base against four of the new build (shifts of 0 to 2 %, no change): the
    captures are the unit, the four's spread stands for the one's, and false positives stay near
    alpha; no note says the run-to-run variance is unmeasured."""
    rng = np.random.default_rng(21)
    significant = 0
    for _ in range(300):
        base = [capture(rng, 20, shift=rng.uniform(0, 0.02))]
        new = [capture(rng, 20, shift=rng.uniform(0, 0.02)) for _ in range(4)]
        result = compare(base, new, alpha=0.05, threshold_pct=0.0)
        change = result.layers[0]
        assert change.unit == "capture" and change.captures == (1, 4) and not result.notes
        significant += change.significant
    assert significant / 300 <= 0.08
