"""Vela's console output ("Network summary" and the ``--verbose-performance`` table) read as a
budget: the research runs in tests/data/vela and a fresh run of the installed Vela."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_budget_vela_run import CONFIGS, MODEL, _vela

from tracer.base.timeline import Engine
from tracer.budget import load_budget
from tracer.budget.loader import file_kind
from tracer.budget.text import BudgetText
from tracer.errors import UsageError

VELA = Path(__file__).parent / "data" / "vela"
# config -> (clock, cycles_total, SRAM bytes as printed "32.33 KiB", layers, CSV folder)
EXPECTED = {
    "u55-128_regor": (500_000_000, 63878, 33106, 8),
    "u65-256_regor": (1_000_000_000, 93588, 33106, 8),
    "u55-128_legacy": (500_000_000, 62279, 33106, 8),
}


@pytest.mark.parametrize("config", sorted(EXPECTED))
def test_printed_summary_and_table(config: str) -> None:
    path = VELA / f"out_{config}.stdout.txt"
    assert file_kind(BudgetText.read(path)) == "vela-stdout"
    budget = load_budget([path])
    clock, cycles, sram, n_layers = EXPECTED[config]
    assert (budget.model.clock_hz, budget.model.cycles_total, budget.model.sram_bytes) == (clock, cycles, sram)
    assert budget.model.name == "tiny_int8"
    assert len(budget.layers) == n_layers
    # The printed table is the per-layer CSV, rounded: the same layers, the same operation count.
    csv = load_budget(
        [next((VELA / f"out_{config}").glob("*_per-layer.csv")), next((VELA / f"out_{config}").glob("*_summary_*.csv"))]
    )
    assert [(la.op, la.engine, len(la.parts)) for la in budget.layers] == [
        (la.op, la.engine, len(la.parts)) for la in csv.layers if la.engine is Engine.NPU or "legacy" not in config
    ] or "legacy" in config
    assert budget.layer_cycles_total == pytest.approx(
        csv.layer_cycles_total, abs=0.5 * sum(len(la.parts) for la in budget.layers)
    )
    assert abs(budget.model.sram_bytes - csv.model.sram_bytes) <= 5
    assert any("0.01 KiB" in note for note in budget.notes)


def test_regor_layers_as_printed() -> None:
    budget = load_budget([VELA / "out_u55-128_regor.stdout.txt"])
    rows = [(la.name, la.op, la.engine.value, la.predicted_cycles, la.sram_bytes) for la in budget.layers]
    assert rows[:5] == [
        ("conv/Relu", "Conv2D", "npu", 14283.0, 29440),
        ("dw/Relu6", "DepthwiseConv2D", "npu", 13444.0, 33104),
        ("add", "Add", "npu", 24576.0, 32768),
        ("avgpool", "AvgPool", "npu", 4448.0, 20480),
        ("l2norm", "L2Norm", "cpu", None, 0),
    ]
    assert budget.layer_cycles_total == 63878
    details = budget.model.details
    assert (
        details["cycles_npu"] == 63390
        and details["cycles_off_chip_flash_access"] == 7008
        and details["nn_macs"] == 610484
    )
    assert details["inference_time_s"] == pytest.approx(0.00013) and details["batch_size"] == 1


def test_printed_output_with_its_debug_db() -> None:
    budget = load_budget([VELA / "out_u55-128_regor.stdout.txt", VELA / "out_u55-128_regor" / "tiny_int8_debug.xml"])
    assert [la.index for la in budget.layers] == [0, 1, 2, 3, 4, 5, 7, 8]


def test_printed_output_and_a_csv_of_the_same_table_are_refused() -> None:
    with pytest.raises(UsageError, match="two Vela per-layer CSVs/tables"):
        load_budget([VELA / "out_u55-128_regor.stdout.txt", VELA / "out_u55-128_regor" / "tiny_int8_per-layer.csv"])


def _run(tmp_path: Path, *flags: str) -> Path:
    accel, system, memory = CONFIGS["u55-128"]
    model = tmp_path / MODEL.name
    model.write_bytes(MODEL.read_bytes())
    cmd = [
        *_vela(),
        str(model),
        "--config",
        "Arm/vela.ini",
        "--accelerator-config",
        accel,
        "--system-config",
        system,
        "--memory-mode",
        memory,
        "--output-dir",
        str(tmp_path / "out"),
        *flags,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "vela.txt"
    out.write_text(done.stdout)
    return out


@pytest.mark.parametrize("flags", [("--verbose-performance",), ("--verbose-performance", "--verbose-cycle-estimate")])
def test_fresh_vela_console_output(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """``vela --verbose-performance > vela.txt``: the printed budget equals the CSVs of the same run
    (the model total from the summary's cycle lines, or else the sum of the printed table)."""
    printed = load_budget([_run(tmp_path, *flags)])
    out = tmp_path / "out"
    csv = load_budget([out / "tiny_int8_per-layer.csv", next(out.glob("tiny_int8_summary_*.csv"))])
    assert printed.model.cycles_total == csv.model.cycles_total > 0
    assert printed.model.clock_hz == csv.model.clock_hz
    assert [(la.name, la.predicted_cycles) for la in printed.layers] == [
        (la.name, la.predicted_cycles) for la in csv.layers
    ]


def test_fresh_vela_summary_only(tmp_path: Path) -> None:
    """Without --verbose-performance Vela prints the summary only: a model budget with no layers."""
    printed = load_budget([_run(tmp_path)])
    assert printed.layers == () and printed.model.cycles_total is None and printed.model.clock_hz == 500_000_000
    assert printed.model.sram_bytes == 33106 and any("no cycle estimate" in n for n in printed.notes)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace(
                "Accelerator clock                                 500 MHz", "Accelerator clock   fast"
            ),
            "Accelerator clock: expected a clock",
        ),
        (lambda t: t.replace("63878 cycles/batch", "63878 cycles"), "Total cycles: expected a count"),
        (
            lambda t: t.replace("Accelerator clock                                 500 MHz\n", ""),
            "no 'Accelerator clock' line",
        ),
        (lambda t: t + "Network summary for x\nAccelerator clock  1 MHz\n", "a second 'Network summary'"),
        (
            lambda t: t.replace("Total cycles                                    63878", "Total cycles    " + "9" * 60),
            "a number of 60 digits",
        ),
    ],
)
def test_damaged_output_is_refused_with_its_line(edit, message: str) -> None:
    text = edit((VELA / "out_u55-128_regor.stdout.txt").read_text())
    with pytest.raises(UsageError, match=message) as err:
        load_budget_texts_one(text)
    assert "vela.txt:" in str(err.value)


def load_budget_texts_one(text: str):
    from tracer.budget.loader import load_budget_texts

    return load_budget_texts([BudgetText("vela.txt", text)])
