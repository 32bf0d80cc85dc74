"""Documented examples that did not run, each end as it says: ``demo --slow`` checked before a
build, ``compare`` of a file that measured nothing, ``trend`` over too few builds or an empty
dataset, the npu-sampling demo against Vela, and the shipped captures equal to what their
documented commands make (QEMU, real firmware: ``.ci/run`` installs both)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fleet_streams import Build, write_build

from tracer.capture.reader import open_capture

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
SAMPLING = ROOT / "captures" / "demo_sampling.trace"
VELA = ROOT / "firmware_snippets" / "demo" / "model" / "vela"
SAMPLING_BUDGET = [
    VELA / "sampling_net_per-layer.csv",
    VELA / "sampling_net_summary_Ethos_U55_High_End_Embedded.csv",
    VELA / "sampling_net_debug.xml",
]


def test_demo_layers_are_the_firmware_s() -> None:
    """The names --slow accepts are the network's, in order (net.c's g_net table)."""
    from tracer.sources.qemu import DEMO_LAYERS

    net = (ROOT / "firmware_snippets" / "demo" / "net.c").read_text()
    table = net[net.index("g_net[NET_LAYERS] = {") :]
    assert tuple(re.findall(r'^\s*\{"\w+",\s*"(\w+)"', table, re.M)) == DEMO_LAYERS


def test_a_bad_slow_layer_is_refused_before_anything_is_built(run_cli, tmp_path: Path) -> None:
    build = tmp_path / "build"
    done = run_cli("demo", "--slow", "xx9:3", "--build-dir", build)
    assert done.code == 2, done.err
    assert "no layer 'xx9'" in done.err and "pw4" in done.err
    assert not build.exists()


def test_compare_of_a_file_that_measured_nothing_is_exit_3(run_cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.trace"
    empty.write_bytes(b"")
    for base, new, side in ((DEMO, empty, "new"), (empty, DEMO, "base"), (empty, empty, "base")):
        done = run_cli("compare", base, new)
        assert done.code == 3, done.err
        assert f"empty.trace ({side}): nothing measured" in done.err
        assert "different models" not in done.err


def test_trend_of_an_empty_dataset_says_it_is_empty(run_cli, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    ds = tmp_path / "results"
    assert run_cli("ingest", tmp_path / "missing.trace", "-o", ds, "--label", "build=42").code == 3
    done = run_cli("trend", ds, "--by", "build")
    assert done.code == 3, done.err
    assert "the dataset holds no capture" in done.err and "has the label" not in done.err


def test_trend_of_two_builds_says_it_cannot_judge(run_cli, tmp_path: Path) -> None:
    """Two deterministic builds, the second 3 % slower in one layer: compare calls it; trend says
    two builds are too few, never PASS as if it had looked."""
    pytest.importorskip("ruptures")
    good = write_build(tmp_path / "good.trace")
    slow = write_build(tmp_path / "slow.trace", Build(slow=(2, 3.0)))
    assert run_cli("compare", good, slow, "--threshold", "2").code == 1
    ds = tmp_path / "results"
    assert run_cli("ingest", good, "-o", ds, "--label", "build=41").code == 0
    assert run_cli("ingest", slow, "-o", ds, "--label", "build=42").code == 0
    done = run_cli("trend", ds, "--by", "build")
    assert done.code == 0, done.err
    verdict = next(line for line in done.out.splitlines() if line.startswith("verdict"))
    assert "NOT JUDGED" in verdict and "PASS" not in verdict and "tracer compare" in verdict
    doc = json.loads(run_cli("trend", ds, "--by", "build", "--format", "json").out)
    assert len(doc["not_judged"]) == len(doc["series"]) > 0


def test_a_simulated_npu_is_not_held_against_vela(run_cli) -> None:
    """The npu-sampling demo's NPU job is the CPU emulating the NPU: its time is not compared with
    Vela's estimate of a real Ethos-U (no layer- or latency-over-budget), and says why."""
    doc = json.loads(run_cli("report", SAMPLING, "--budget", *SAMPLING_BUDGET, "--format", "json").out)
    ids = {f["id"] for f in doc["findings"]}
    assert not ids & {"layer-over-budget", "latency-over-budget"}, ids
    job = next(layer for layer in doc["layers"] if layer["name"] == "sampling_net")
    assert job["predicted_cycles"] is None
    assert "simulated NPU" in job["budget"]["note"]
    assert doc["npu_operators"]["jobs"][0]["operators"], "the per-operator comparison stays"
    check = run_cli("check", SAMPLING, "--budget", *SAMPLING_BUDGET)
    line = next(line for line in check.out.splitlines() if "budget layers measured" in line)
    assert "simulated NPU" in line


def _stream(path: Path) -> bytes:
    with open_capture(path) as reader:
        return b"".join(chunk.data for chunk in reader.chunks())


@pytest.mark.qemu
@pytest.mark.parametrize(("shipped", "args"), [(DEMO, ["--inferences", "20"])], ids=["demo"])
def test_shipped_captures_are_what_their_commands_make(
    qemu_build: Path, run_cli, tmp_path: Path, shipped: Path, args: list[str]
) -> None:
    """captures/README.md's commands make the shipped captures again, stream byte for byte (only
    the header's creation time differs). When this fails, run those commands."""
    fresh = tmp_path / shipped.name
    done = run_cli("demo", *args, "-o", fresh, "--build-dir", qemu_build, "--format", "json")
    assert done.code == 0, done.err
    assert _stream(fresh) == _stream(shipped), f"re-make {shipped.name}: see captures/README.md"
    readme = (ROOT / "captures" / "README.md").read_text()
    assert f"tracer demo {' '.join(args)} -o captures/{shipped.name} --force" in readme
