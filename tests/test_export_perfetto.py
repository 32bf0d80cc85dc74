"""``tracer export --format perfetto``: read back by an independent decoder (Google's protobuf runtime
with Perfetto's own trace schema, see ``perfetto_reader.py``): tracks, slice counts and names,
timestamps from cycles at the capture's clock, counters, ISR tracks, labels; and the wire-format
writer checked value by value against the protobuf runtime."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest
from analysis_helpers import analyse
from hypothesis import given, settings
from hypothesis import strategies as st
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from perfetto_reader import read_trace

from tracer.base.timeline import (
    Engine,
    Inference,
    IsrSlice,
    LayerInfo,
    LayerSpan,
    TimelineBuilder,
)
from tracer.budget.model import Budget, BudgetLayer, ModelBudget
from tracer.export.perfetto import perfetto_packets, write_perfetto
from tracer.export.protobuf import Message, varint
from tracer.pipeline.load import load_timeline

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"


def ns(cycles: int, hz: int) -> int:
    """The documented conversion, computed independently: cycles / hz seconds, to the nearest ns
    (halves up)."""
    return math.floor(Fraction(cycles * 10**9, hz) + Fraction(1, 2))


def export(timeline, budget=None) -> bytes:
    """The trace bytes (as write_perfetto writes them) of the timeline analysed against ``budget``."""
    import io

    out = io.BytesIO()
    write_perfetto(out, analyse(timeline, budget))
    return out.getvalue()


def test_demo_trace_read_back(run_cli, tmp_path: Path, demo_budget: dict) -> None:
    """Tracks, slice counts and names, timestamps and args of the shipped capture."""
    path = tmp_path / "demo.pftrace"
    done = run_cli("export", DEMO, "--format", "perfetto", "--budget", DEMO_BUDGET, "-o", path)
    assert done.code == 0, done.err
    data = path.read_bytes()
    trace = read_trace(data)
    # Re-serialised by the protobuf runtime, the trace is byte for byte what we wrote: every field
    # is in Perfetto's schema with its declared type, in field-number order.
    assert pb.Trace.FromString(data).SerializeToString() == data
    assert trace.sequence_ids == {1}
    assert trace.process.startswith("tracer-demo-int8-10layer") and "emulated" in trace.process
    names = list(trace.tracks.values())
    assert names[1:4] == ["Inferences", "CPU", "NPU"]
    assert {"NPU jobs", "Cache maintenance", "Arena used", "Stack main high-water", "Stack handler high-water"} <= set(
        names
    )
    assert all(parent == 1 for parent in trace.parents.values()) and len(trace.parents) == len(names) - 1
    timeline, _ = load_timeline(DEMO)
    hz = timeline.clock_hz
    assert hz == 32_000_000
    cpu, npu = trace.slices_on("CPU"), trace.slices_on("NPU")
    assert len(cpu) == 80 and len(npu) == 120 and len(trace.slices_on("Inferences")) == 20
    assert {s.name for s in npu} == {"conv0", "dw1", "pw2", "dw3", "pw4", "conv7"}
    assert {s.name for s in cpu} == {"add5", "pool6", "gap8", "fc9"}
    spans = timeline.spans
    expected = sorted(
        (timeline.layer(int(la)).label, ns(int(s), hz), ns(int(e), hz))
        for la, s, e in zip(spans.layer, spans.start, spans.end)
    )
    got = sorted((s.name, s.start, s.end) for s in cpu + npu)
    assert got == expected
    conv0 = min((s for s in npu if s.name == "conv0"), key=lambda s: s.start)
    # Row 0 of the spans is conv0 of the first inference, predicted in demo_budget.toml.
    predicted0 = next(la["cycles"] for la in demo_budget["layer"] if la["name"] == "conv0")
    cycles0 = int(spans.end[0] - spans.start[0])
    active0 = int(spans.pmu[0, spans.pmu_names.index("NPU_ACTIVE")])
    assert timeline.layer(int(spans.layer[0])).label == "conv0" and active0 > 0
    assert conv0.args["cycles"] == cycles0 and conv0.args["predicted_cycles"] == float(predicted0)
    assert conv0.args["ratio"] == round(cycles0 / predicted0, 4) and conv0.args["npu_pmu"] == "simulated"
    assert conv0.args["pmu.NPU_ACTIVE"] == active0 and conv0.args["op"] == "CONV_2D"
    assert trace.timestamps == sorted(trace.timestamps)
    inf = timeline.inferences
    assert [s.start for s in trace.slices_on("Inferences")] == [ns(int(v), hz) for v in inf.start]
    assert len([i for i in trace.instants if i[0] == "Cache maintenance"]) == 240
    assert len(trace.slices_on("NPU jobs")) == 120
    assert trace.counter_units["Arena used"] == pb.CounterDescriptor.UNIT_SIZE_BYTES
    pmu_track = "NPU PMU NPU_ACTIVE (simulated)"
    assert trace.counter_units[pmu_track] == pb.CounterDescriptor.UNIT_COUNT
    values = trace.counters[pmu_track]
    assert len(values) == 240 and values[0] == (conv0.start, active0) and values[1] == (conv0.end, 0)
    main_hwm = [s.high_water for s in timeline.stacks if s.stack == "main"]
    assert len(main_hwm) == 20 and [v for _, v in trace.counters["Stack main high-water"]] == main_hwm


def test_isr_tracks_and_overlaps_and_labels() -> None:
    """A track per interrupt; overlapping executions on one engine go to a second lane (slices on a
    track must nest); an FVP's CPU timings say "model estimate"; zero-length spans are instants."""
    b = TimelineBuilder(clock_hz=1_000_000, labels={"cpu_cycles": "model estimate (FVP)"}, source="fvp")
    b.add_layer(LayerInfo(0, "conv", "CONV_2D", Engine.CPU))
    b.add_layer(LayerInfo(1, "fc", "FULLY_CONNECTED", Engine.CPU))
    b.add_span(LayerSpan(0, 0, 100, 300, True))
    b.add_span(LayerSpan(0, 1, 250, 400, False))  # damaged data: overlaps the first
    b.add_span(LayerSpan(0, 1, 400, 400, True))  # zero length
    b.add_inference(Inference(0, 90, 410, False, ("damaged",), ()))
    timeline = b.build()
    timeline.isrs = [
        IsrSlice(120, 130, 15, "SysTick"),
        IsrSlice(140, 160, 16, "", depth=1, repaired=True),
        IsrSlice(200, 215, 15, "SysTick"),
    ]
    conv_budget = Budget(ModelBudget(clock_hz=1_000_000), [BudgetLayer(0, 0, "conv", "CONV_2D", Engine.CPU, 150.0)])
    trace = read_trace(export(timeline, conv_budget))
    names = set(trace.tracks.values())
    assert {"CPU (model estimate)", "CPU (model estimate) #2", "ISR SysTick", "ISR exception 16"} <= names
    first, second = trace.slices_on("CPU (model estimate)"), trace.slices_on("CPU (model estimate) #2")
    assert [(s.name, s.start, s.end) for s in first] == [("conv", 100_000, 300_000)]
    assert [(s.name, s.start, s.end) for s in second] == [("fc (incomplete)", 250_000, 400_000)]
    assert first[0].args["timing"] == "model estimate" and first[0].args["ratio"] == round(200 / 150, 4)
    systick = trace.slices_on("ISR SysTick")
    assert [(s.start, s.end) for s in systick] == [(120_000, 130_000), (200_000, 215_000)]
    assert trace.slices_on("ISR exception 16")[0].args["repaired"].startswith("exit lost")
    zero = [i for i in trace.instants if i[2] == "fc"]
    assert len(zero) == 1 and zero[0][1] == 400_000


def test_unknown_clock_draws_one_cycle_as_one_nanosecond() -> None:
    """No clock: cycles are drawn as ns, and the process name says so."""
    b = TimelineBuilder(source="log")
    b.add_layer(LayerInfo(0, "", "CONV_2D", Engine.CPU))
    b.add_span(LayerSpan(0, 0, 0, 12345, True))
    b.add_inference(Inference(0, None, None, True, (), ()))
    trace = read_trace(export(b.build()))
    assert "clock unknown" in trace.process
    assert [(s.name, s.start, s.end) for s in trace.slices_on("CPU")] == [("CONV_2D#0", 0, 12345)]


def test_back_to_back_layers_nest_correctly() -> None:
    """A layer ending on the cycle the next begins: the END is written before the next BEGIN."""
    b = TimelineBuilder(clock_hz=1_000_000_000)
    for i in range(3):
        b.add_layer(LayerInfo(i, f"l{i}", "ADD", Engine.NPU))
        b.add_span(LayerSpan(0, i, 10 * i, 10 * i + 10, True))
    timeline = b.build()
    trace = read_trace(export(timeline))
    assert [(s.name, s.start, s.end) for s in trace.slices_on("NPU")] == [("l0", 0, 10), ("l1", 10, 20), ("l2", 20, 30)]
    packets = [pb.TracePacket.FromString(p) for p in perfetto_packets(analyse(timeline))]
    kinds = [(p.timestamp, p.track_event.type) for p in packets if p.HasField("track_event")]
    assert kinds == [(0, 1), (10, 2), (10, 1), (20, 2), (20, 1), (30, 2)]


@settings(max_examples=200, deadline=None)
@given(
    value=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    name=st.text(max_size=40),
    real=st.floats(allow_nan=False),
    uuid=st.integers(min_value=0, max_value=2**64 - 1),
)
def test_wire_format_matches_the_protobuf_runtime(value: int, name: str, real: float, uuid: int) -> None:
    """Our writer's bytes equal the protobuf runtime's for the same message, for any values."""
    ours = (
        Message()
        .message(4, Message().double(5, real).string(10, name))
        .uint(9, 4)
        .uint(11, uuid)
        .string(23, name)
        .uint(30, value)
        .bytes()
    )
    theirs = pb.TrackEvent(
        debug_annotations=[pb.DebugAnnotation(double_value=real, name=name)],
        type=4,
        track_uuid=uuid,
        name=name,
        counter_value=value,
    ).SerializeToString()
    assert ours == theirs
    assert pb.TrackEvent.FromString(ours).counter_value == value


def test_varint_edges() -> None:
    """Known encodings; out-of-range values refused."""
    assert varint(0) == b"\x00" and varint(1) == b"\x01" and varint(300) == b"\xac\x02"
    assert varint(-1) == b"\xff" * 9 + b"\x01"
    with pytest.raises(ValueError):
        varint(2**64)
