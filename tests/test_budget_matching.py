"""Matching measured layers to budget layers, and converting Vela's NPU cycles to capture cycles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracer.base.timeline import Engine, LayerInfo
from tracer.budget import load_budget
from tracer.budget.matching import MatchKind, cycle_scale, match_layers
from tracer.budget.model import Budget, BudgetLayer, ModelBudget
from tracer.telemetry.logs import read_log

DATA = Path(__file__).parent / "data"
U55 = DATA / "vela" / "out_u55-128_regor"
U55_FILES = [
    U55 / "tiny_int8_per-layer.csv",
    U55 / "tiny_int8_summary_Ethos_U55_High_End_Embedded.csv",
    U55 / "tiny_int8_debug.xml",
]


def _budget(*layers: BudgetLayer, clock: int | None = None, tolerance: float | None = None) -> Budget:
    return Budget(ModelBudget(clock_hz=clock, tolerance_pct=tolerance), layers)


def _layer(
    position: int,
    op: str,
    cycles: float | None,
    *,
    index: int | None = None,
    name: str = "",
    engine: Engine | None = Engine.NPU,
    subgraph: int | None = None,
    tolerance: float | None = None,
) -> BudgetLayer:
    return BudgetLayer(position, index, name, op, engine, cycles, tolerance_pct=tolerance, npu_subgraph=subgraph)


def test_cycle_scale() -> None:
    assert cycle_scale(None, 32_000_000)[0] == 1.0
    assert cycle_scale(500_000_000, 500_000_000)[0] == 1.0
    assert cycle_scale(500_000_000, 32_000_000)[0] == pytest.approx(0.064)
    scale, note = cycle_scale(500_000_000, None)
    assert scale is None and "cannot be converted" in note


def test_tflm_ethos_u_operators_match_velas_npu_subgraphs() -> None:
    """TFLM sees [ethos-u, L2_NORMALIZATION, ethos-u]: each ethos-u is one Vela command stream."""
    budget = load_budget(U55_FILES)
    measured = [
        LayerInfo(0, "", "ethos-u", Engine.NPU),
        LayerInfo(1, "", "L2_NORMALIZATION", Engine.CPU),
        LayerInfo(2, "", "ethos-u", Engine.NPU),
    ]
    result = match_layers(measured, budget, capture_hz=32_000_000)
    first, l2, second = result.matches
    assert first.how is MatchKind.NPU_SUBGRAPH and [b.index for b in first.budget] == [0, 1, 2, 3]
    assert first.budget_cycles == 14283 + 13444 + 24576 + 4448
    # NPU cycles at Vela's 500 MHz, as cycles of the capture's 32 MHz clock.
    assert first.predicted_cycles == pytest.approx(56751 * 32 / 500)
    assert second.how is MatchKind.NPU_SUBGRAPH and [b.index for b in second.budget] == [5, 7, 8]
    assert second.budget_cycles == 5790 + 352 + 985
    assert l2.how is MatchKind.OP_SEQUENCE and l2.budget[0].op == "L2Norm"
    assert l2.predicted_cycles is None and "no cycle estimate" in l2.note
    assert result.unmatched_budget == ()
    assert first.budget_cycles + second.budget_cycles == budget.model.cycles_total


def test_names_match_first_including_part_names() -> None:
    budget = load_budget(U55_FILES)
    measured = [LayerInfo(7, "conv/Relu", "", Engine.NPU), LayerInfo(3, "MEAN_INTERMEDIATE", "MEAN", Engine.NPU)]
    result = match_layers(measured, budget, capture_hz=500_000_000)
    by_index = {m.measured.index: m for m in result.matches}
    assert by_index[7].how is MatchKind.NAME and by_index[7].budget[0].name == "conv/Relu"
    assert by_index[7].predicted_cycles == 14283  # same clock: no scaling
    assert by_index[3].how is MatchKind.NAME and by_index[3].budget[0].name == "mean"  # case-folded alias
    assert by_index[3].ratio(5790 * 1.5) == pytest.approx(1.5)


def test_index_match_requires_the_same_operator() -> None:
    budget = _budget(
        _layer(0, "CONV_2D", 100, index=0),
        _layer(1, "ADD", 50, index=1),
        _layer(2, "SOFTMAX", 10, index=2),
    )
    measured = [
        LayerInfo(0, "", "Conv2D", Engine.NPU),  # same op, other spelling
        LayerInfo(1, "", "SOFTMAX", Engine.NPU),  # index 1 is ADD in the budget: not an index match
        LayerInfo(2, "", "", Engine.NPU),  # op unknown: index alone decides
    ]
    result = match_layers(measured, budget, None)
    assert [(m.how, m.budget[0].position if m.budget else None) for m in result.matches] == [
        (MatchKind.INDEX, 0),
        (MatchKind.NONE, None),
        (MatchKind.INDEX, 2),
    ]
    assert [b.position for b in result.unmatched_budget] == [1]
    assert result.matches[1].note == "no budget layer matches"


def test_op_sequence_alignment_skips_what_does_not_line_up() -> None:
    budget = _budget(
        _layer(0, "Conv2DBias", 100),
        _layer(1, "DepthwiseConv2D", 80),
        _layer(2, "AvgPool", 20),
        _layer(3, "FullyConnected", 5),
        _layer(4, "Softmax", 3),
    )
    measured = [
        LayerInfo(0, "", "CONV_2D", Engine.NPU),
        LayerInfo(1, "", "DEPTHWISE_CONV_2D", Engine.NPU),
        LayerInfo(2, "", "QUANTIZE", Engine.CPU),  # not in the budget
        LayerInfo(3, "", "AVERAGE_POOL_2D", Engine.NPU),
        LayerInfo(4, "", "SOFTMAX", Engine.NPU),
    ]
    result = match_layers(measured, budget, None)
    pairs = [(m.measured.index, m.how.value, m.budget[0].position if m.budget else None) for m in result.matches]
    assert pairs == [
        (0, "op-sequence", 0),
        (1, "op-sequence", 1),
        (2, "unmatched", None),
        (3, "op-sequence", 2),
        (4, "op-sequence", 4),
    ]
    assert [b.op for b in result.unmatched_budget] == ["FullyConnected"]


def test_engine_difference_is_noted() -> None:
    budget = _budget(_layer(0, "CONV_2D", 100, index=0))
    result = match_layers([LayerInfo(0, "", "CONV_2D", Engine.CPU)], budget, None)
    assert result.matches[0].note == "planned for the NPU, measured on the CPU"


def test_unknown_capture_clock_gives_no_converted_prediction() -> None:
    budget = _budget(_layer(0, "CONV_2D", 100, index=0), clock=500_000_000)
    match = match_layers([LayerInfo(0, "", "CONV_2D", Engine.NPU)], budget, None).matches[0]
    assert match.budget_cycles == 100 and match.predicted_cycles is None and match.ratio(100) is None
    assert "capture's clock is unknown" in match.note


def test_tolerance_layer_own_else_model_default() -> None:
    budget = _budget(_layer(0, "CONV_2D", 100, index=0, tolerance=30), _layer(1, "ADD", 10, index=1), tolerance=10)
    result = match_layers([LayerInfo(0, "", "", Engine.NPU), LayerInfo(1, "", "", Engine.NPU)], budget, None)
    assert [m.tolerance_pct for m in result.matches] == [30, 10]


def test_runs_of_npu_layers_are_subgraphs_when_the_budget_does_not_number_them() -> None:
    budget = _budget(
        _layer(0, "CONV_2D", 100),
        _layer(1, "ADD", 10),
        _layer(2, "L2_NORMALIZATION", None, engine=Engine.CPU),
        _layer(3, "SOFTMAX", 5),
    )
    measured = [
        LayerInfo(0, "", "ethos-u", Engine.NPU),
        LayerInfo(1, "", "L2_NORMALIZATION", Engine.CPU),
        LayerInfo(2, "", "ethos-u", Engine.NPU),
    ]
    result = match_layers(measured, budget, None)
    assert [m.budget_cycles for m in result.matches] == [110, None, 5]


def test_a_real_log_against_a_real_budget() -> None:
    """ExecuTorch's log (one ethos-u operator) against the U55 budget: the first command stream."""
    timeline = read_log(DATA / "logs" / "executorch_arm_fvp_corstone320_u85.log")
    result = match_layers(timeline.layers.values(), load_budget(U55_FILES), capture_hz=500_000_000)
    assert len(result.matches) == 1 and result.matches[0].how is MatchKind.NPU_SUBGRAPH
    assert result.matches[0].budget_cycles == 56751
    assert [b.index for b in result.unmatched_budget] == [4, 5, 7, 8]
