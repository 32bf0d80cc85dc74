"""``tracer trend`` and its change-point detector: a step is found at its build, a flat noisy series
has none, the newest build's regression fails the command."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from fleet_streams import Build, write_build

from tracer.fleet.changepoints import find_changes, segment


def noisy(seed: int, n: int = 30, level: float = 100_000.0, noise: float = 0.01) -> np.ndarray:
    """A flat series with Gaussian noise of ``noise`` of its level."""
    return level * (1 + noise * np.random.default_rng(seed).standard_normal(n))


@pytest.mark.parametrize("seed", range(12))
def test_a_step_is_found_at_its_build(seed: int) -> None:
    """+8 % from a build between 5 and 25 on 1 % noise: one change, at that build, of about 8 %."""
    at = 5 + seed * 20 // 12
    y = noisy(seed)
    y[at:] *= 1.08
    changes = find_changes(y)
    assert [c.index for c in changes] == [at]
    assert changes[0].pct == pytest.approx(8.0, abs=1.5) and changes[0].p_value < 1e-3
    assert changes[0].builds_after == 30 - at


def test_flat_noisy_series_have_no_change_point() -> None:
    """Fifty flat series with 1 % noise: no change point in any of them (the default 5 % threshold),
    nor with the threshold at 2 %."""
    for seed in range(50):
        assert find_changes(noisy(100 + seed)) == []
        assert find_changes(noisy(100 + seed), threshold_pct=2.0) == []


def test_the_newest_build_can_start_a_level() -> None:
    """A jump at the last build alone is a change (what CI asks about every build)."""
    y = noisy(7)
    y[-1] *= 1.10
    changes = find_changes(y)
    assert [(c.index, c.builds_after) for c in changes] == [(29, 1)]


def test_an_outlier_build_is_not_a_change() -> None:
    """One build 15 % slow in the middle, then back: an outlier, no change of level."""
    y = noisy(8)
    y[12] *= 1.15
    result = segment(y)
    assert result.changes == () and result.outliers == (12,)


def test_a_deterministic_series_changes_exactly_where_it_changes() -> None:
    """No noise at all (the QEMU demo): every change of value beyond the threshold is a change."""
    y = [20_698] * 10 + [21_319] * 5 + [21_319 + 30] * 5
    changes = find_changes(y, threshold_pct=2.0)
    assert [(c.index, c.before, c.after, c.p_value) for c in changes] == [(10, 20_698, 21_334, 0.0)]
    assert [c.index for c in find_changes(y, threshold_pct=0.1)] == [10, 15]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 builds with 1 % build-to-build noise; dw1 10 % slower from build 17 on."""
    root = tmp_path_factory.mktemp("trend")
    rng = random.Random(5)
    paths = []
    for b in range(30):
        build = Build(scale=1 + rng.gauss(0, 0.01), slow=(1, 10.0) if b >= 17 else None)
        paths.append(write_build(root / f"b{b:02d}.trace", build, 8, seed=b, labels={"build": b}))
    from tracer.cli.main import main

    assert main(["ingest", *map(str, paths), "-o", str(root / "results"), "--workers", "1", "-q"]) == 0
    return root / "results"


def test_trend_finds_the_step_and_nothing_else(dataset: Path, run_cli) -> None:
    """dw1 changes at build 17 by about 10 %; the other layers (flat, noisy) have no change point;
    the newest build starts nothing: exit 0."""
    done = run_cli("trend", dataset, "--by", "build", "--format", "json")
    assert done.code == 0, done.err
    obj = json.loads(done.out)
    assert obj["builds"] == [str(b) for b in range(30)] and obj["captures"] == [1] * 30
    series = {s["label"]: s for s in obj["series"]}
    assert set(series) == {"inference", "conv0", "dw1", "add2", "pool3", "fc4"}
    (change,) = series["dw1"]["changes"]
    assert change["build"] == "17" and change["pct"] == pytest.approx(10.0, abs=1.5)
    for label in ("conv0", "add2", "pool3", "fc4", "inference"):
        assert series[label]["changes"] == [], label
    text = run_cli("trend", dataset, "--by", "build")
    assert "17: " in text.out and "PASS" in text.out
    assert run_cli("trend", dataset, "--by", "build", "--format", "markdown").out.startswith(
        "### tracer trend by build: PASS"
    )


def test_the_newest_build_regressing_fails(dataset: Path, tmp_path: Path, run_cli) -> None:
    """Build 30 makes conv0 12 % slower: exit 1, naming conv0; the step at 17 is still found."""
    newest = write_build(tmp_path / "b30.trace", Build(slow=(0, 12.0)), 8, seed=30, labels={"build": 30})
    grown = tmp_path / "results"
    import shutil

    shutil.copytree(dataset, grown)
    assert run_cli("ingest", newest, "-o", grown, "--workers", "1").code == 0
    done = run_cli("trend", grown, "--by", "build", "--format", "json")
    assert done.code == 1
    obj = json.loads(done.out)
    assert obj["newest_regressions"] == ["conv0"] and obj["passed"] is False
    conv0 = next(s for s in obj["series"] if s["label"] == "conv0")
    assert [(c["build"], c["builds_after"]) for c in conv0["changes"]] == [("30", 1)]
    assert "FAIL: the newest build (30) starts a regression in conv0" in run_cli("trend", grown, "--by", "build").out


def test_trend_says_what_is_wrong(dataset: Path, run_cli, tmp_path: Path) -> None:
    """A label no capture has, a selection that matches none, not a dataset: exit 2 in words."""
    missing = run_cli("trend", dataset, "--by", "commit")
    assert missing.code == 2 and "no capture of" in missing.err and "build" in missing.err
    assert run_cli("trend", dataset, "--by", "build", "--where", "board=none").code == 2
    assert run_cli("trend", tmp_path / "nothing", "--by", "build").code == 2
