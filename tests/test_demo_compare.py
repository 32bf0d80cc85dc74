"""A regression made on the deterministic target and caught end to end: ``tracer demo --slow`` on
QEMU, then ``tracer compare`` (the firmware's slow=LAYER:PERMILLE option on the START line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require_tools

pytestmark = pytest.mark.qemu


@pytest.fixture(scope="module")
def demo_runs(qemu_build: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two clean demo runs and one with pw4 3 % slower, 8 inferences each."""
    from tracer.cli.main import main

    require_tools("qemu-system-arm")
    root = tmp_path_factory.mktemp("demo-compare")
    runs = {"base": [], "again": [], "slow": ["--slow", "pw4:3"]}
    out = {}
    for name, extra in runs.items():
        out[name] = root / f"{name}.trace"
        code = main(
            [
                "demo",
                "--inferences",
                "8",
                "-o",
                str(out[name]),
                "--build-dir",
                str(qemu_build),
                "-q",
                "--format",
                "json",
                *extra,
            ]
        )
        assert code == 0, name
    return out


def test_a_3_percent_slower_layer_fails_compare(demo_runs: dict[str, Path], run_cli) -> None:
    """pw4 3 % slower: compare --threshold 2 exits 1 naming pw4 alone, by 3.00 %; the capture says
    which layer was slowed."""
    done = run_cli("compare", demo_runs["base"], demo_runs["slow"], "--threshold", "2", "--format", "json")
    assert done.code == 1, done.err
    obj = json.loads(done.out)
    assert obj["regressions"] == ["pw4"]
    pw4 = next(layer for layer in obj["layers"] if layer["label"] == "pw4")
    assert pw4["verdict"] == "slower" and pw4["p50"]["pct"] == pytest.approx(3.0, abs=0.05)
    assert pw4["why"]["interrupts"]["delta"] == 0 and pw4["why"]["own"]["delta"] == pw4["p50"]["delta"]
    assert all(layer["p50"]["delta"] in (-1, 0, 1) for layer in obj["layers"] if layer["label"] != "pw4")
    assert obj["new"]["labels"]["slow_layer"] == "pw4" and obj["new"]["labels"]["slow_pct"] == "3.0"
    # Within the default 5 % threshold it is reported as a real change, and passes.
    default = run_cli("compare", demo_runs["base"], demo_runs["slow"], "--format", "json")
    assert default.code == 0
    assert next(x for x in json.loads(default.out)["layers"] if x["label"] == "pw4")["verdict"] == "changed"


def test_two_builds_with_no_change_pass(demo_runs: dict[str, Path], run_cli) -> None:
    """Two clean runs on the deterministic target: every layer the same cycles, exit 0."""
    done = run_cli("compare", demo_runs["base"], demo_runs["again"], "--threshold", "0.5", "--format", "json")
    assert done.code == 0, done.out
    obj = json.loads(done.out)
    assert all(layer["p50"]["delta"] == 0 and layer["verdict"] == "unchanged" for layer in obj["layers"])
    assert obj["findings"] == {"appeared": [], "gone": []}


def test_a_bad_slow_option_is_refused(run_cli) -> None:
    """--slow without a percentage, or out of range: exit 2 before anything runs."""
    for value in ("pw4", "pw4:0", "pw4:x", ":3"):
        done = run_cli("demo", "--slow", value, "--inferences", "1")
        assert done.code == 2 and "LAYER:PERCENT" in done.err, value


def test_a_layer_the_demo_does_not_have_is_said(qemu_build: Path, run_cli, tmp_path: Path) -> None:
    """--slow names a layer the demo network does not have: refused as a bad option (exit 2), before
    QEMU runs (no capture made)."""
    done = run_cli(
        "demo", "--slow", "nope:3", "--inferences", "1", "-o", tmp_path / "x.trace", "--build-dir", qemu_build
    )
    assert done.code == 2 and "the demo has no layer 'nope'" in done.err
    assert not (tmp_path / "x.trace").exists()
