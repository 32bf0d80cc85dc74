"""A budget for another model is refused (exit 2, with what differs) unless ``--match any``; and
``--tolerance`` applies to every layer, saying which budget tolerances it replaced (docs/budgets.md,
docs/check.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracer.base.timeline import Engine, LayerInfo
from tracer.budget import load_budget
from tracer.budget.matching import match_layers, model_difference
from tracer.budget.model import Budget, BudgetLayer, ModelBudget

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"

KWS_8_LAYERS = """\
[model]
name = "kws-ds-cnn"
clock_hz = 32000000

""" + "\n".join(
    f'[[layer]]\nindex = {k}\nname = "kws_{op.lower()}_{k}"\nop = "{op}"\nengine = "npu"\ncycles = {900 + 10 * k}\n'
    for k, op in enumerate(
        [
            "CONV_2D",
            "DEPTHWISE_CONV_2D",
            "CONV_2D",
            "DEPTHWISE_CONV_2D",
            "CONV_2D",
            "AVERAGE_POOL_2D",
            "FULLY_CONNECTED",
            "SOFTMAX",
        ]
    )
)


def test_a_budget_for_an_8_layer_model_is_refused_against_the_10_layer_demo(tmp_path: Path, run_cli) -> None:
    budget = tmp_path / "kws.toml"
    budget.write_text(KWS_8_LAYERS)
    for verb in ("check", "report"):
        result = run_cli(verb, DEMO, "--budget", budget)
        assert result.code == 2, result.out + result.err
        err = result.err
        assert "does not describe the capture's model" in err
        assert "8 layers" in err and "10 layers" in err
        assert "--match any" in err
        assert "x over budget" not in result.out


def test_match_any_pairs_anyway_and_says_what_differs(tmp_path: Path, run_cli) -> None:
    budget = tmp_path / "kws.toml"
    budget.write_text(KWS_8_LAYERS)
    result = run_cli("check", DEMO, "--budget", budget, "--match", "any", "--format", "json")
    assert result.code in (0, 1), result.err
    assert "does not describe the capture's model" in result.err and "warning" in result.err
    json.loads(result.out)


def test_the_right_budgets_are_not_called_a_different_model(run_cli) -> None:
    result = run_cli("check", DEMO, "--budget", DEMO_BUDGET)
    assert result.code == 0, result.err
    assert "does not describe" not in result.err


def test_a_partial_budget_naming_its_layers_is_not_a_different_model(tmp_path: Path, run_cli) -> None:
    budget = tmp_path / "partial.toml"
    budget.write_text('[[layer]]\nname = "conv0"\ncycles = 40000\n\n[[layer]]\nname = "fc9"\ncycles = 100\n')
    result = run_cli("check", DEMO, "--budget", budget)
    assert result.code == 0, result.err
    assert "does not describe" not in result.err


def _layers(*ops: str, names: tuple[str, ...] | None = None) -> list[LayerInfo]:
    return [LayerInfo(k, names[k] if names else "", op, Engine.CPU) for k, op in enumerate(ops)]


def _budget(*ops: str) -> Budget:
    return Budget(ModelBudget(), tuple(BudgetLayer(k, None, "", op, Engine.NPU, 100.0) for k, op in enumerate(ops)))


def test_model_difference_names_counts_and_the_first_operator_that_differs() -> None:
    measured = _layers("CONV_2D", "ADD", "MAX_POOL_2D", "CONV_2D")
    budget = _budget("CONV_2D", "ADD", "SOFTMAX")
    text = model_difference(match_layers(measured, budget, None), budget)
    assert text is not None
    assert "the budget has 3 layers, the capture 4 layers" in text
    assert "operators differ from position 2: budget SOFTMAX, capture MAX_POOL_2D" in text


def test_same_model_with_other_names_is_the_same_model() -> None:
    """Vela names layers by output tensor, the firmware by its own names: names alone decide nothing."""
    measured = _layers("CONV_2D", "DEPTHWISE_CONV_2D", "ADD", names=("conv0", "dw1", "add2"))
    budget = Budget(
        ModelBudget(),
        tuple(
            BudgetLayer(k, None, f"t{k}", op, Engine.NPU, 1.0)
            for k, op in enumerate(["Conv2D", "DepthwiseConv2D", "Add"])
        ),
    )
    assert model_difference(match_layers(measured, budget, None), budget) is None


def test_tflm_ethos_u_operators_against_velas_budget_are_the_same_model() -> None:
    """TFLM runs each Vela command stream as one ethos-u operator: 3 measured layers, 9 budget layers."""
    vela = Path(__file__).parent / "data" / "vela" / "out_u55-128_regor"
    budget = load_budget(
        [
            vela / "tiny_int8_per-layer.csv",
            vela / "tiny_int8_summary_Ethos_U55_High_End_Embedded.csv",
            vela / "tiny_int8_debug.xml",
        ]
    )
    measured = [
        LayerInfo(0, "", "ethos-u", Engine.NPU),
        LayerInfo(1, "", "L2_NORMALIZATION", Engine.CPU),
        LayerInfo(2, "", "ethos-u", Engine.NPU),
    ]
    assert model_difference(match_layers(measured, budget, 32_000_000), budget) is None
    one_stream = [LayerInfo(0, "", "ethos-u", Engine.NPU)]  # another model's log: one stream, no L2 norm
    text = model_difference(match_layers(one_stream, budget, 32_000_000), budget)
    assert text is not None and "match no layer of the capture" in text


# -- --tolerance ------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["check", "report"])
def test_tolerance_option_applies_to_every_layer_and_says_what_it_replaced(verb: str, tmp_path: Path, run_cli) -> None:
    overlay = tmp_path / "tolerances.toml"
    overlay.write_text('[[layer]]\nname = "conv0"\ntolerance_pct = 30\n')
    result = run_cli(verb, DEMO, "--budget", DEMO_BUDGET, overlay, "--tolerance", "5", "--format", "json")
    document = json.loads(result.out)
    tolerances = {layer["name"]: layer["budget"]["tolerance_pct"] for layer in document["layers"]}
    sources = {layer["budget"]["tolerance_from"] for layer in document["layers"]}
    assert set(tolerances.values()) == {5} and sources == {"option"}
    assert "--tolerance 5% applies to every layer, in place of the budget's own (model 15%; conv0 30%)" in result.err


def test_without_the_option_the_budget_tolerances_apply(run_cli) -> None:
    result = run_cli("report", DEMO, "--budget", DEMO_BUDGET, "--format", "json")
    document = json.loads(result.out)
    assert {layer["budget"]["tolerance_pct"] for layer in document["layers"]} == {15}
    assert "--tolerance" not in result.err


def test_a_capture_that_lost_layers_is_not_called_another_model(tmp_path: Path, run_cli) -> None:
    """Found by the campaign: a damaged demo capture holding a few layers' records only (its layer
    descriptions lost) had its own budget refused as another model's. Layers a capture that lost
    data lacks decide nothing."""
    from tracer.capture import CaptureReader, CaptureWriter

    reader = CaptureReader.from_bytes(DEMO.read_bytes())
    stream = reader.read_stream()
    damaged = tmp_path / "damaged.trace"
    with CaptureWriter(damaged, reader.metadata, flush_bytes=512) as writer:
        writer.write(stream[:512])  # the layer descriptions: damaged below
        writer.write(stream[20_000:21_500])  # part of one inference
    blob = bytearray(damaged.read_bytes())
    blob[blob.index(b"TRCK") + 100] ^= 0xFF
    damaged.write_bytes(bytes(blob))
    result = run_cli("check", damaged, "--budget", DEMO_BUDGET)
    assert "corrupt chunk" in result.err
    assert result.code in (0, 1), result.err
    assert "does not describe" not in result.err
