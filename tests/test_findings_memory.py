"""Memory, NPU, loss and firmware-error findings on timelines and captures with known numbers."""

from __future__ import annotations

from pathlib import Path

from check_streams import LayerSpec, encode_model, write_capture

from tracer.analysis.analyze import analyze
from tracer.analysis.settings import AnalysisSettings
from tracer.base.facts import InputFacts
from tracer.base.log_facts import LogFacts
from tracer.base.timeline import (
    AllocationFailure,
    ArenaSample,
    Engine,
    Inference,
    InferenceTimeline,
    LayerInfo,
    LayerSpan,
    StackSample,
    TimelineBuilder,
)
from tracer.budget.loader import load_budget_texts
from tracer.budget.text import BudgetText
from tracer.pipeline.load import load_timeline
from tracer.telemetry.wire import RecordType

FACTS = InputFacts("capture", "test://", None, 0)


def ids(timeline: InferenceTimeline, budget=None, **options) -> list[tuple[str, str]]:
    """(id, severity) of every finding."""
    return [(f.id, f.severity.value) for f in analyze(timeline, FACTS, budget, AnalysisSettings(**options)).findings]


def one(timeline: InferenceTimeline, kind: str, budget=None):
    """The only finding of ``kind``."""
    found = [f for f in analyze(timeline, FACTS, budget).findings if f.id == kind]
    assert len(found) == 1, found
    return found[0]


def test_arena_headroom_and_overrun() -> None:
    """Below 10% headroom: warning with the sizes; used above size: arena-too-small."""
    assert ids(InferenceTimeline(arena=[ArenaSample(1, 14_000, 16_384)])) == []  # 14.5% headroom
    tight = InferenceTimeline(arena=[ArenaSample(1, 15_000, 16_384), ArenaSample(2, 15_500, 16_384)])
    f = one(tight, "arena-headroom")
    assert f.severity.value == "warning" and f.evidence["used"] == 15_500
    assert f.evidence["headroom"] == round(1 - 15500 / 16384, 4)
    assert "94.6% used" in f.message and "10-15% headroom" in (f.fix or "")
    assert f.evidence["recommended_min"] >= 15_500 * 1.10 and f.evidence["recommended_max"] >= 15_500 * 1.15
    assert ids(tight, arena_headroom=0.05) == []
    over = one(InferenceTimeline(arena=[ArenaSample(1, 20_000, 16_384)]), "arena-too-small")
    assert over.severity.value == "error" and over.evidence["missing"] == 20_000 - 16_384


def test_arena_over_plan_is_information() -> None:
    """Above the planner's figure (TFLM bookkeeping): info, with the difference."""
    b = load_budget_texts([BudgetText("b.toml", "[model]\narena_bytes = 12000\n")])
    f = one(InferenceTimeline(arena=[ArenaSample(1, 13_312, 16_384)]), "arena-over-plan", b)
    assert f.severity.value == "info" and f.evidence["over"] == 1312


def test_allocation_failure_fix_follows_the_npu() -> None:
    """U55: the linker-script fix; U65: Dedicated_Sram; the arena size needed when it is known."""
    tl = InferenceTimeline(
        allocation_failures=[AllocationFailure("resize buffer", 49_152, 47_544, 1_608, None, 2)],
        arena=[ArenaSample(None, 40_000, 50_000)],
        npu="Ethos-U55",
    )
    f = one(tl, "arena-too-small")
    assert f.evidence["needed"] == 51_608 and "51,608" in f.message
    assert f.evidence["recommended_min"] == 56_784 and f.evidence["recommended_max"] == 59_360  # +10%, +15%, to 16 B
    assert "linker script" in (f.fix or "") and "Dedicated_Sram" not in (f.fix or "") and "0x0000DDD0" in (f.fix or "")
    tl.npu, tl.log_facts = None, LogFacts(lines=3, npu={"arch": "Ethos-U65"})  # as a log gives it
    f65 = one(tl, "arena-too-small")
    assert "--memory-mode=Dedicated_Sram" in (f65.fix or "") and "linker script" not in (f65.fix or "")


def test_stacks() -> None:
    """Above 75%: warning; canary overwritten: error, with when it was first seen."""
    tl = InferenceTimeline(
        stacks=[
            StackSample(10, "main", 3000, 4096),
            StackSample(20, "main", 3100, 4096),
            StackSample(10, "isr", 200, 1024),
            StackSample(30, "isr", 1024, 1024, False),
            StackSample(40, "idle", 100, 1024),
        ]
    )
    found = {f.evidence["stack"]: f for f in analyze(tl, FACTS).findings}
    assert set(found) == {"main", "isr"}
    assert found["main"].id == "stack-high-water" and found["main"].severity.value == "warning"
    assert found["main"].evidence["high_water"] == 3100 and "75.7%" in found["main"].message
    assert "4,134" in (found["main"].fix or "")  # 3100 / 0.75, the size that brings it under 75%
    assert found["isr"].id == "stack-canary" and found["isr"].severity.value == "error"
    assert found["isr"].evidence["first_broken_cycle"] == 30


def test_compiler_sram_peak() -> None:
    """Vela's SRAM peak above 75% of the part's SRAM: warning with both sizes."""
    b = load_budget_texts([BudgetText("b.toml", "[model]\nsram_bytes = 1700000\nsram_available_bytes = 2097152\n")])
    f = one(InferenceTimeline(), "sram-peak-high", b)
    assert f.severity.value == "warning" and f.evidence["fraction"] == round(1_700_000 / 2_097_152, 4)
    ok = load_budget_texts([BudgetText("b.toml", "[model]\nsram_bytes = 33104\nsram_available_bytes = 2097152\n")])
    assert "sram-peak-high" not in [i for i, _ in ids(InferenceTimeline(), ok)]


def test_npu_utilization_per_layer_from_a_capture(tmp_path: Path) -> None:
    """An NPU layer active 50% of its PMU cycles: warning on that layer only."""
    layers = [
        LayerSpec("conv", "CONV_2D", True, 1000, active=0.95),
        LayerSpec("fc", "FULLY_CONNECTED", True, 800, active=0.5),
    ]
    capture = write_capture(tmp_path / "c.trace", bytes(encode_model(layers).out))
    timeline, _ = load_timeline(capture)
    found = [f for f in analyze(timeline, FACTS).findings if f.id == "npu-utilization-low"]
    assert [(f.layer, f.severity.value) for f in found] == [(1, "warning")]
    assert found[0].evidence["ratio"] == 0.5 and found[0].evidence["total"] == 790


def test_loss_marks_inferences_and_goes_error_when_nothing_is_left(tmp_path: Path) -> None:
    """Some inferences incomplete: warning with the reasons; none complete: error."""
    enc = encode_model([LayerSpec("a", "ADD", False, 300)], inferences=3)
    data = bytes(enc.out)
    ends = [r for r in enc.records if r.type == RecordType.INFERENCE_END]
    one_lost = data[: ends[1].offset] + data[ends[1].offset + ends[1].length :]
    timeline, _ = load_timeline(write_capture(tmp_path / "a.trace", one_lost))
    f = one(timeline, "capture-loss")
    assert f.severity.value == "warning" and f.evidence["incomplete_inferences"] == [1]
    assert f.evidence["lost_records"] >= 1 and "1 of 3 inference(s)" in f.message and "sequence gap" in f.message
    all_lost = data
    for r in sorted(ends, key=lambda r: -r.offset):
        all_lost = all_lost[: r.offset] + all_lost[r.offset + r.length :]
    timeline, _ = load_timeline(write_capture(tmp_path / "b.trace", all_lost))
    f = one(timeline, "capture-loss")
    assert f.severity.value == "error" and "no complete inference" in f.message


def test_no_measurements() -> None:
    """Nothing at all: a warning; with a budget to check: an error."""
    assert ids(InferenceTimeline()) == [("no-measurements", "warning")]
    b = load_budget_texts([BudgetText("b.toml", '[[layer]]\nname = "x"\ncycles = 5\n')])
    assert ids(InferenceTimeline(), b) == [("no-measurements", "error")]


def test_firmware_errors_from_port_zero_text(tmp_path: Path) -> None:
    """Error lines the firmware printed next to its records: a firmware-error finding with the text."""
    enc = encode_model([LayerSpec("a", "ADD", False, 300)], inferences=2, text_after="ERROR - Invoke failed.\n")
    timeline, _ = load_timeline(write_capture(tmp_path / "e.trace", bytes(enc.out)))
    f = one(timeline, "firmware-error")
    assert f.severity.value == "error" and "Invoke failed." in f.message


def test_engine_of_a_log_layer_matched_to_a_vela_subgraph() -> None:
    """A TFLM log's ethos-u operator is an NPU layer: no fallback; its CPU neighbour with Vela's CPU row
    is Vela's own fallback (warning)."""
    b = TimelineBuilder(clock_hz=500_000_000)
    b.add_layer(LayerInfo(0, "", "ethos-u", Engine.NPU))
    b.add_layer(LayerInfo(1, "", "L2_NORMALIZATION", Engine.CPU))
    b.add_span(LayerSpan(0, 0, 0, 60_000, True))
    b.add_span(LayerSpan(0, 1, 60_000, 61_000, True))
    b.add_inference(Inference(0, 0, 61_000, True, (), ()))
    tl = b.build()
    vela = Path(__file__).parent / "data" / "vela" / "out_u55-128_regor"
    from tracer.budget import load_budget

    budget = load_budget([vela / "tiny_int8_per-layer.csv", next(vela.glob("tiny_int8_summary_*.csv"))])
    found = analyze(tl, FACTS, budget).findings
    fallback = [f for f in found if f.id == "cpu-fallback"]
    assert [(f.severity.value, f.layer) for f in fallback] == [("warning", 1)]
    assert "Vela could not map it" in fallback[0].message and "--supported-ops-report" in (fallback[0].fix or "")
