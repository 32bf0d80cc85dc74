"""Jitter: per-layer distributions, outliers and their causes (preemption, contention, warm-up,
more work), the findings' words, and the report sections. Streams are built with our encoder."""

from __future__ import annotations

import json

import numpy as np
from analysis_helpers import analyse, findings_of
from jitter_streams import PERIOD, build, timer_in_layer
from telemetry_encoder import TelemetryEncoder

from tracer.analysis.findings.jitter import RULES as JITTER_RULES
from tracer.analysis.jitter import CONTENTION, MORE_WORK, PREEMPTION, WARM_UP, analyse_jitter
from tracer.base.timeline import InferenceTimeline
from tracer.export.report_json import report_object
from tracer.export.report_text import render_report


def findings(timeline: InferenceTimeline) -> list:
    return findings_of(timeline, JITTER_RULES)


def test_preemption_names_the_layer_the_interrupt_and_its_cost() -> None:
    """TIMER0 inside layer 4 in 5 of 20 inferences, 12,800 cycles each: the field's message."""
    lengths = [5000, 7000, 6000, 4000, 11_000, 3000]
    tl = build(20, lengths, timer_in_layer(4, 4, 1, 12_800))
    analysis = analyse_jitter(tl)
    layer4 = analysis.layers[4]
    assert layer4.outliers == 5 and layer4.causes == {PREEMPTION: 5}
    assert [o.inference for o in layer4.listed] == [1, 5, 9, 13, 17]
    assert layer4.own_p50 == 11_000 and layer4.own_cv == 0.0
    assert all(layer.outliers == 0 for i, layer in enumerate(analysis.layers) if i != 4)
    (finding,) = findings(tl)
    assert finding.id == "jitter-preemption" and finding.severity.value == "warning" and finding.layer == 4
    assert finding.message == (
        "layer 4 (l4) took up to 2.2x its median (11,000 cycles) in 5 of 20 inferences (1, 5, 9, 13, 17); "
        "in each, the TIMER0 interrupt (exception 24) ran inside it for 12,800 cycles"
    )
    assert "deferred task" in finding.fix and finding.inferences == (1, 5, 9, 13, 17)
    assert finding.evidence["listed"][0]["isrs"] == [{"exception": 24, "name": "TIMER0", "runs": 1, "cycles": 12_800}]


def test_distribution_histogram_percentiles_and_cv() -> None:
    """The histogram covers every execution; p50/p99/max are measured values; cv = std/mean."""
    tl = build(20, [1000, 2000], timer_in_layer(1, 4, 1, 500))
    layer = analyse_jitter(tl).layers[1]
    edges, counts = layer.histogram
    assert sum(counts) == 20 and edges[0] == 2000 and edges[-1] == 2501  # the last edge is past the maximum
    assert counts[0] == 15 and counts[-1] == 5
    assert (layer.p50, layer.p99, layer.max) == (2000, 2500, 2500)
    values = np.array([2500 if n % 4 == 1 else 2000 for n in range(20)], float)
    assert abs(layer.cv - values.std() / values.mean()) < 1e-9


def test_warm_up_first_inferences_against_steady_state() -> None:
    """The first two inferences slower: warm-up (info), against the steady-state median."""
    lengths = [8000, 3000]

    def cold(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        return 16_000 if n < 2 and index == 0 else 0

    tl = build(12, lengths, cold)
    layer = analyse_jitter(tl).layers[0]
    assert layer.causes == {WARM_UP: 2} and layer.warm_up_runs == 2 and layer.steady_p50 == 8000
    (finding,) = findings(tl)
    assert finding.id == "jitter-warm-up" and finding.severity.value == "info" and finding.layer == 0
    assert "in the first 2 inference(s) (0, 1)" in finding.message and "3.0x" in finding.message


def test_npu_contention_same_work_more_cycles() -> None:
    """An NPU layer with the same data beats but more NPU cycles (idle up): contention."""

    def pmu(n: int, index: int, length: int) -> list[int]:
        active = 4000
        cycles = 9000 if n in (3, 7) else 4200
        return [cycles, active, 512, 256, 40]

    def slow(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        return 4800 if n in (3, 7) and index == 1 else 0

    tl = build(12, [2000, 4500], slow, npu=(1,), pmu=pmu)
    layer = analyse_jitter(tl).layers[1]
    assert layer.causes == {CONTENTION: 2}
    detail = layer.listed[0].detail
    assert detail["idle_cycles"] == 5000 and detail["idle_cycles_median"] == 200
    assert detail["work"] == detail["work_median"]
    (finding,) = findings(tl)
    assert finding.id == "jitter-contention" and finding.layer == 1
    assert "on the NPU with the same work" in finding.message
    assert "9,000 NPU cycles instead of 4,200, idle 5,000 NPU cycles instead of 200" in finding.message
    assert "QoS" in finding.fix


def test_npu_more_work_is_data_dependent() -> None:
    """More read beats as well as more cycles: more work, not contention."""

    def pmu(n: int, index: int, length: int) -> list[int]:
        big = n in (2, 9)
        return [8400 if big else 4200, 8000 if big else 4000, 1024 if big else 512, 256, 40]

    def slow(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        return 4500 if n in (2, 9) and index == 0 else 0

    tl = build(12, [4500], slow, npu=(0,), pmu=pmu)
    assert analyse_jitter(tl).layers[0].causes == {MORE_WORK: 2}
    (finding,) = findings(tl)
    assert finding.id == "jitter-more-work" and finding.severity.value == "info"


def test_cpu_layer_slower_with_no_interrupt_is_contention() -> None:
    """A CPU layer slower with nothing inside: contention (warning), and the message says so."""

    def slow(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        return 900 if n == 6 and index == 1 else 0

    tl = build(10, [1000, 2000], slow)
    (finding,) = findings(tl)
    assert finding.id == "jitter-contention" and finding.layer == 1 and finding.inferences == (6,)
    assert "with no interrupt or task inside" in finding.message and "1.4x" in finding.message


def test_small_noise_is_not_an_outlier() -> None:
    """A few percent of variation stays below the threshold: no finding."""

    def noise(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        return (n * 37) % 150  # up to 3 % of 5000

    tl = build(30, [5000, 5000], noise)
    assert all(layer.outliers == 0 for layer in analyse_jitter(tl).layers)
    assert findings(tl) == []


def test_wrap_of_the_32_bit_counter_is_no_outlier() -> None:
    """Inferences across the 2^32 wrap of the target's counter: every layer exact, no jitter."""
    tl = build(20, [4000, 6000], start=(1 << 32) - 7 * PERIOD)
    assert tl.spans.cycles.tolist() == [4000, 6000] * 20
    assert all(layer.outliers == 0 and layer.cv == 0.0 for layer in analyse_jitter(tl).layers)


def test_report_has_interrupt_and_jitter_sections() -> None:
    """JSON sections and their text rendering carry the same content."""
    tl = build(8, [5000, 9000], timer_in_layer(1, 4, 1, 7000))
    report = report_object(analyse(tl))
    json.dumps(report)  # JSON-ready
    interrupts, jitter = report["interrupts"], report["jitter"]
    assert interrupts["count"] == 2 and interrupts["by_exception"][0]["name"] == "TIMER0"
    assert interrupts["by_layer"] == [
        {
            "layer": 1,
            "exception": 24,
            "name": "TIMER0",
            "hits": 2,
            "spans": 8,
            "inferences_hit": 2,
            "inferences": [1, 5],
            "cycles_total": 14_000,
            "cycles_per_hit": 7000.0,
            "cycles_max": 7000,
        }
    ]
    layer1 = jitter["layers"][1]
    assert layer1["outliers"] == 2 and layer1["causes"] == {"preemption": 2} and layer1["own_p50"] == 9000
    text = render_report(report)
    assert "in layer 1 (l1): TIMER0 2 times in 2 of 8 runs, 7,000 cycles per run" in text
    assert "layer 1 (l1): cv" in text and "inference 5: 16,000 cycles (1.78x), preemption (TIMER0 7,000 cycles)" in text


def test_every_outlier_is_kept_with_its_cause_beyond_the_listed_ones() -> None:
    """More outliers than the report lists: the analysis still knows each one's inference and cause
    (the live screen flags every inference from them)."""
    from tracer.analysis.jitter import MAX_LISTED

    tl = build(120, [5000, 7000, 6000], timer_in_layer(1, 4, 1, 12_800))
    layer1 = analyse_jitter(tl).layers[1]
    expected = list(range(1, 120, 4))
    assert layer1.outliers == len(expected) > MAX_LISTED == len(layer1.listed)
    assert list(layer1.outlier_inferences) == expected and set(layer1.outlier_causes) == {PREEMPTION}
