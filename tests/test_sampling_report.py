"""The sampling sections as the commands show them, on the shipped ``captures/demo_sampling.trace``.

The capture is 10 inferences of the QEMU demo's npu-sampling scenario at 10 kHz (see
``captures/README.md``). No QEMU or ELF is needed here: PCs are shown as addresses. Checked: the
report's JSON and text sections, the per-job view without a debug database, the Perfetto trace
read back by an independent reader (Perfetto's own schema), the Chrome JSON's operator slices
staying inside their job, and the TUI's layer detail.
"""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from perfetto_reader import read_trace

from tracer.analysis.sampling import sampling_analysis
from tracer.base.samples import NpuSamples, PcSamples, SamplerInfo, Samples
from tracer.base.timeline import InferenceTimeline

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "captures" / "demo_sampling.trace"
VELA = ROOT / "firmware_snippets" / "demo" / "model" / "vela"
BUDGET = [
    VELA / "sampling_net_per-layer.csv",
    VELA / "sampling_net_summary_Ethos_U55_High_End_Embedded.csv",
    VELA / "sampling_net_debug.xml",
]
OPERATIONS = ["conv1", "dw2", "add3", "pool4", "pw5", "gap6", "fc7"]


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    from tracer.analysis.analyze import analyze
    from tracer.budget import load_budget
    from tracer.export.report_json import report_object
    from tracer.pipeline.load import load_timeline

    timeline, source = load_timeline(CAPTURE)
    return report_object(analyze(timeline, source, load_budget(BUDGET)), per_inference=True)


def test_json_sections(report: dict[str, Any]) -> None:
    sampling = report["sampling"]
    assert sampling["npu_samples"] == 836 and sampling["pc_samples"] == 1320 and sampling["calibration_records"] == 66
    (info,) = sampling["sampler"]
    assert info["how"] == "timer interrupt" and info["period_cycles"] == 3200 and info["cost_cycles"] > 0
    npu = report["npu_operators"]
    assert npu["mapped"] and npu["message"] is None and npu["simulated"]
    (job,) = npu["jobs"]
    assert job["layer"] == 10 and job["jobs"] == 10 and job["stream"] == 1 and job["qsize"] == 1164
    assert [op["name"] for op in job["operators"]] == OPERATIONS
    assert sum(op["samples"] for op in job["operators"]) == job["running"]
    for op in job["operators"]:
        assert op["share_low"] <= op["share"] <= op["share_high"]
    assert len(job["per_inference"]) == 10 and all(len(row["cycles"]) == 7 for row in job["per_inference"])
    spots = report["cpu_hotspots"]
    assert not spots["symbolised"] and "no ELF" in spots["message"]
    for layer in spots["layers"]:
        assert sum(f["samples"] for f in layer["functions"]) == layer["samples"]


def test_text_report(run_cli) -> None:
    done = run_cli("report", CAPTURE, "--budget", *BUDGET)
    assert done.code == 0, done.err
    text = done.out
    assert "npu ops     836 NPU samples" in text and "[SIMULATED NPU]" in text
    for name in OPERATIONS:
        assert f"  {name} " in text
    assert "95% interval" in text and "hot spots   timer interrupt PC samples: 1,320" in text
    assert "sampling    NPU+PC by timer interrupt, 10,000 Hz nominal" in text


def test_without_the_debug_database_the_report_says_why(run_cli) -> None:
    done = run_cli("report", CAPTURE, "--format", "json", "--budget", *BUDGET[:2])
    assert done.code == 0, done.err
    npu = json.loads(done.out)["npu_operators"]
    assert not npu["mapped"] and "no Vela debug database" in npu["message"]
    assert npu["jobs"][0]["operators"] == [] and npu["jobs"][0]["samples"] == 836
    text = run_cli("report", CAPTURE).out
    assert "per-job view only: no Vela debug database" in text


def test_perfetto_has_the_operator_lane_inside_the_jobs(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "s.pftrace"
    done = run_cli("export", CAPTURE, "--format", "perfetto", "--budget", *BUDGET, "-o", path)
    assert done.code == 0, done.err
    trace = read_trace(path.read_bytes())
    ops = trace.slices_on("NPU operators (sampled)")
    jobs = [s for s in trace.slices_on("NPU") if s.name == "sampling_net"]
    assert len(jobs) == 10 and {s.name for s in ops} == set(OPERATIONS)
    for op in ops:  # every operation slice lies inside its job, in stream order
        job = next(j for j in jobs if j.start <= op.start < j.end)
        assert op.end <= job.end and op.args["layer"] == 10
    for job in jobs:
        mine = [o for o in ops if job.start <= o.start < job.end]
        assert [o.name for o in mine] == [n for n in OPERATIONS if n in {o.name for o in mine}]
    assert len(trace.counters["NPU QREAD (sampled)"]) == 836
    assert len([i for i in trace.instants if i[0] == "CPU PC samples"]) == 1320


def test_chrome_json_has_the_same_lanes(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    done = run_cli("export", CAPTURE, "--format", "chrome-json", "--budget", *BUDGET, "-o", path)
    assert done.code == 0, done.err
    events = json.loads(path.read_text())["traceEvents"]
    ops = [e for e in events if e.get("cat") == "npu-operator"]
    assert len(ops) >= 60 and {e["name"] for e in ops} == set(OPERATIONS)
    tids = {e["tid"] for e in ops}
    assert len(tids) == 1
    ordered = sorted(ops, key=lambda e: e["ts"])
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in itertools.pairwise(ordered))  # no overlap


def test_tui_layer_detail_shows_the_sampled_breakdown() -> None:
    """The session's analysis carries the breakdown the layer detail draws."""
    from tracer.analysis.sampling import layer_breakdowns, sampling_analysis
    from tracer.budget import load_budget
    from tracer.pipeline.load import load_timeline

    timeline, _ = load_timeline(CAPTURE)
    breakdowns = layer_breakdowns(sampling_analysis(timeline, load_budget(BUDGET)))
    npu = breakdowns[10]
    assert npu.kind == "npu operators" and npu.simulated and npu.parts[0][0] == "dw2"
    assert breakdowns[5].kind == "cpu hot spots" and sum(share for _, share in breakdowns[5].parts) == pytest.approx(
        1.0
    )


def test_tui_replay_draws_the_breakdown_in_the_layer_detail() -> None:
    """Headless replay (Textual's Pilot): selecting the sampled NPU layer shows its operations."""
    import asyncio

    from tracer.budget import load_budget
    from tracer.session.engine import Session, SessionOptions
    from tracer.tui.app import TracerApp

    session = Session.replay(str(CAPTURE), budget=load_budget(BUDGET), options=SessionOptions(speed=None))
    app = TracerApp(session)

    async def main() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(2000):
                if app.session.ended:
                    break
                await pilot.pause(0.01)
            assert app.session.ended
            app.select_layer(10)
            for _ in range(200):  # the session's analysis runs on its worker thread
                app.refresh_views(force=True)
                await pilot.pause(0.02)
                detail = app.query_one("#detail").content
                text = detail.plain if hasattr(detail, "plain") else str(detail)
                if "sampled npu operators" in text:
                    break
            assert "sampled npu operators (simulated NPU)" in text and "dw2" in text, text

    asyncio.run(main())


def test_the_sampling_overhead_of_samples_far_apart_is_exact() -> None:
    """PC samples of a damaged stream 2**64 - 2 cycles apart (the int64 extremes): the sampler's
    overhead share is its cost over that span, computed exactly, with no overflow warning."""
    pc = PcSamples(
        np.array([-(2**63) + 1, 2**63 - 1], np.int64),
        np.array([0x100, 0x104], np.int64),
        np.zeros(2, np.int64),
        np.full(2, -1, np.int64),
    )
    info = SamplerInfo(0, False, True, "timer interrupt", 1000, 0, 50.0)
    timeline = InferenceTimeline(samples=Samples(NpuSamples.from_rows([]), pc, (info,), 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        analysis = sampling_analysis(timeline)
    assert analysis is not None and analysis.overhead_share == 50.0 * 2 / (2**64 - 2)
