"""Budget findings on timelines with known numbers: over budget (p50 and p99), the tolerance order,
whole-inference budgets, unmatched layers, clocks that cannot be converted, CPU fallbacks."""

from __future__ import annotations

from tracer.analysis.analyze import analyze
from tracer.analysis.settings import AnalysisSettings
from tracer.base.facts import InputFacts
from tracer.base.timeline import Engine, Inference, LayerInfo, LayerSpan, TimelineBuilder
from tracer.budget.loader import load_budget_texts
from tracer.budget.text import BudgetText
from tracer.export.report_json import report_object

FACTS = InputFacts("capture", "test://", None, 0)


def timeline(
    layers: list[tuple[str, str, Engine, list[int]]],
    clock_hz: int | None = 100_000_000,
    incomplete: tuple[int, ...] = (),
):
    """Inferences laid end to end: layer k of inference n takes ``layers[k][3][n]`` cycles."""
    b = TimelineBuilder(clock_hz=clock_hz, clock_source="dwt", source="test")
    for index, (name, op, engine, _) in enumerate(layers):
        b.add_layer(LayerInfo(index, name, op, engine))
    t = 0
    for n in range(len(layers[0][3])):
        start = t
        for index, (_, _, _, cycles) in enumerate(layers):
            b.add_span(LayerSpan(n, index, t, t + cycles[n], n not in incomplete))
            t += cycles[n] + 2
        ok = n not in incomplete
        b.add_inference(Inference(n, start, t, ok, () if ok else ("lost",), ()))
        t += 100
    return b.build()


def budget(toml: str):
    """A budget from TOML text."""
    return load_budget_texts([BudgetText("budget.toml", toml)])


def findings(tl, b=None, tolerance=None):
    """Every finding of the analysis."""
    return list(analyze(tl, FACTS, b, AnalysisSettings(tolerance_pct=tolerance)).findings)


def test_layer_over_budget_names_the_layer_and_the_inferences() -> None:
    """p50 1300 against 1000 predicted (+10%): error, with p50, p99, ratio and which inferences."""
    tl = timeline(
        [
            ("conv", "CONV_2D", Engine.NPU, [1300, 1300, 1290, 1310, 1300]),
            ("fc", "FULLY_CONNECTED", Engine.CPU, [100] * 5),
        ]
    )
    b = budget('[[layer]]\nname = "conv"\ncycles = 1000\n[[layer]]\nname = "fc"\ncycles = 100\n')
    found = findings(tl, b)
    over = [f for f in found if f.id == "layer-over-budget"]
    assert len(over) == 1
    f = over[0]
    assert f.severity.value == "error" and f.layer == 0
    assert f.evidence["p50"] == 1300 and f.evidence["p99"] == 1310 and f.evidence["predicted"] == 1000
    assert f.evidence["ratio"] == 1.3 and f.evidence["limit"] == 1100 and f.evidence["tolerance_from"] == "default"
    assert f.evidence["inferences_over"] == [0, 1, 2, 3, 4] and f.inferences == (0, 1, 2, 3, 4)
    assert "conv" in f.message and "1.30x" in f.message and "30% over" in f.message and "(13.0 us)" in f.message
    assert "NPU" in f.fix and "Vela" in f.fix
    assert not [x for x in found if x.layer == 1 and x.id.startswith("layer-")]


def test_p99_only_is_a_warning() -> None:
    """p50 within budget, one slow inference in twenty: layer-p99-over-budget warning on that one."""
    cycles = [1000] * 19 + [1500]
    tl = timeline([("conv", "CONV_2D", Engine.CPU, cycles)])
    f = findings(tl, budget('[[layer]]\nname = "conv"\ncycles = 1000\n'))
    # The jitter rules (issue 7) rightly flag the same outlier; this test is about the budget rules.
    budget_findings = [x for x in f if x.id.startswith("layer-")]
    assert [(x.id, x.severity.value, x.inferences) for x in budget_findings] == [
        ("layer-p99-over-budget", "warning", (19,))
    ]


def test_tolerance_order_layer_model_option_default() -> None:
    """--tolerance when given, else the layer's own tolerance, else the model's, else 10%."""
    tl = timeline([("a", "ADD", Engine.CPU, [1150] * 3), ("b", "ADD", Engine.CPU, [1150] * 3)])
    layers = '[[layer]]\nname = "a"\ncycles = 1000\ntolerance_pct = 20\n[[layer]]\nname = "b"\ncycles = 1000\n'

    def over(fs: list) -> list:
        return sorted(f.layer for f in fs if f.id == "layer-over-budget")

    assert over(findings(tl, budget(layers))) == [1]  # a: own 20%; b: default 10%
    assert over(findings(tl, budget(layers), tolerance=16)) == []  # b: --tolerance 16
    assert over(findings(tl, budget("[model]\ntolerance_pct = 12\n" + layers))) == [1]  # b: the model's 12%
    assert over(findings(tl, budget("[model]\ntolerance_pct = 12\n" + layers), tolerance=30)) == []  # the option
    assert over(findings(tl, budget(layers), tolerance=12)) == [0, 1]  # a's own 20% replaced too
    plans = analyze(tl, FACTS, budget(layers), AnalysisSettings(tolerance_pct=16)).comparison.plans
    assert (plans[0].tolerance_from, plans[1].tolerance_from) == ("option", "option")
    plans = analyze(tl, FACTS, budget(layers)).comparison.plans
    assert (plans[0].tolerance_from, plans[1].tolerance_from) == ("layer", "default")


def test_clock_conversion_and_ratio_in_the_report() -> None:
    """Budget cycles at 500 MHz against a 100 MHz capture: predicted = cycles / 5."""
    tl = timeline([("conv", "CONV_2D", Engine.NPU, [2000] * 3)])
    b = budget('[model]\nclock_hz = 500000000\n[[layer]]\nname = "conv"\ncycles = 9000\n')
    a = analyze(tl, FACTS, b)
    report = report_object(a)
    layer = report["layers"][0]
    assert layer["predicted_cycles"] == 1800 and layer["ratio"] == round(2000 / 1800, 4)
    assert layer["budget"]["matched_by"] == "name" and layer["budget"]["budget_cycles"] == 9000
    assert report["budget"]["scale"] == 0.2
    assert [f.id for f in a.findings] == ["layer-over-budget"]


def test_clock_unknown_is_an_error_not_a_silent_pass() -> None:
    """A budget with a clock and a capture without one: nothing can be compared: say so."""
    tl = timeline([("conv", "CONV_2D", Engine.NPU, [2000] * 3)], clock_hz=None)
    f = findings(tl, budget('[model]\nclock_hz = 500000000\n[[layer]]\nname = "conv"\ncycles = 9000\n'))
    assert [(x.id, x.severity.value) for x in f] == [("budget-clock-unknown", "error")]
    assert "--clock" in (f[0].fix or "")


def test_whole_inference_budget() -> None:
    """Only cycles_total: the p50 latency is checked against it."""
    tl = timeline([("a", "ADD", Engine.CPU, [500] * 4), ("b", "ADD", Engine.CPU, [600] * 4)])
    f = findings(tl, budget("[model]\ncycles_total = 900\n"))
    assert [(x.id, x.severity.value) for x in f] == [("latency-over-budget", "error")]
    assert f[0].evidence["p50"] == 1104 and f[0].evidence["predicted"] == 900
    assert findings(tl, budget("[model]\ncycles_total = 1050\n")) == []


def test_whole_inference_budget_with_zero_tolerance() -> None:
    """``--tolerance 0`` means no slack at all, not the 10% default: 1104 against 1050 fails."""
    tl = timeline([("a", "ADD", Engine.CPU, [500] * 4), ("b", "ADD", Engine.CPU, [600] * 4)])
    b = budget("[model]\ncycles_total = 1050\n")
    assert [x.id for x in findings(tl, b, tolerance=0.0)] == ["latency-over-budget"]
    assert findings(tl, b, tolerance=10.0) == []


def test_unmatched_layers_both_ways() -> None:
    """A budget layer nobody measured (warning) and a measured layer without prediction (info)."""
    tl = timeline([("conv", "CONV_2D", Engine.CPU, [100] * 2), ("extra", "RESHAPE", Engine.CPU, [5] * 2)])
    b = budget('[[layer]]\nname = "conv"\ncycles = 100\n[[layer]]\nname = "softmax"\nop = "SOFTMAX"\ncycles = 50\n')
    f = {x.id: x for x in findings(tl, b)}
    assert set(f) == {"budget-layer-not-measured", "layer-without-budget"}
    assert (
        f["budget-layer-not-measured"].severity.value == "warning"
        and "softmax" in f["budget-layer-not-measured"].message
    )
    assert f["layer-without-budget"].evidence["layers"] == [1]


def test_cpu_fallback_planned_npu_measured_cpu() -> None:
    """The plan says NPU, the capture says CPU: an error, zero fallbacks being the rule."""
    tl = timeline([("conv", "CONV_2D", Engine.CPU, [1000] * 3), ("add", "ADD", Engine.CPU, [10] * 3)])
    b = budget(
        '[[layer]]\nname = "conv"\nengine = "npu"\ncycles = 1000\n'
        '[[layer]]\nname = "add"\nengine = "cpu"\ncycles = 10\n'
    )
    f = findings(tl, b)
    assert [(x.id, x.severity.value, x.layer) for x in f] == [
        ("cpu-fallback", "error", 0),
        ("cpu-operators", "info", None),
    ]
    assert "planned for the NPU" in f[0].message and "AddEthosU" in (f[0].fix or "")
    assert f[1].evidence["layers"] == [1]


def test_incomplete_spans_never_count() -> None:
    """A slow but incomplete inference neither fails the layer nor hides loss."""
    tl = timeline([("conv", "CONV_2D", Engine.CPU, [1000, 9000, 1000])], incomplete=(1,))
    f = findings(tl, budget('[[layer]]\nname = "conv"\ncycles = 1000\n'))
    assert [(x.id, x.severity.value) for x in f] == [("capture-loss", "warning")]
    assert f[0].evidence["incomplete_inferences"] == [1] and "1 of 3 inference(s)" in f[0].message


def test_a_budget_nothing_matches_is_an_error() -> None:
    """Different names and operators: nothing was compared, so the gate must not pass."""
    tl = timeline([("conv", "CONV_2D", Engine.CPU, [100] * 2)])
    b = budget('[[layer]]\nname = "softmax"\nop = "SOFTMAX"\ncycles = 50\n')
    f = [x for x in findings(tl, b) if x.id == "budget-layer-not-measured"]
    assert [x.severity.value for x in f] == ["error"] and "no measured layer matches" in f[0].message
