"""Vela per-layer CSVs (both dialects), summary CSVs and debug databases, on Vela's real outputs
for our test model (tests/data/vela, written by Vela 5.2.0)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tracer.base.timeline import Engine
from tracer.budget import file_kind, load_budget
from tracer.budget.text import BudgetText
from tracer.budget.vela_csv import read_per_layer, read_summary
from tracer.errors import UsageError

VELA = Path(__file__).parent / "data" / "vela"
U55 = VELA / "out_u55-128_regor"
U65 = VELA / "out_u65-256_regor"
LEGACY = VELA / "out_u55-128_legacy"
U55_SUMMARY = "tiny_int8_summary_Ethos_U55_High_End_Embedded.csv"
U65_SUMMARY = "tiny_int8_summary_Ethos_U65_High_End.csv"

# (folder, summary, Vela's cycles_total, dialect, rows in the per-layer CSV)
CONFIGS = [
    (U55, U55_SUMMARY, 63878, "regor", 39),
    (U65, U65_SUMMARY, 93588, "regor", 39),
    (LEGACY, U55_SUMMARY, 62279, "legacy", 39),
]


@pytest.mark.parametrize(("folder", "summary", "total", "dialect", "rows"), CONFIGS)
def test_per_layer_predictions_add_up_to_velas_own_total(
    folder: Path, summary: str, total: int, dialect: str, rows: int
) -> None:
    """The grouped layers' predicted cycles sum to the summary's cycles_total (both dialects)."""
    budget = load_budget([folder / "tiny_int8_per-layer.csv", folder / summary])
    assert budget.model.cycles_total == total
    assert budget.layer_cycles_total == pytest.approx(total, abs=1e-6)
    assert sum(len(la.parts) for la in budget.layers) == rows
    assert budget.model.compiler is not None and budget.model.compiler.config["core"] == dialect
    assert not any("add up to" in n for n in budget.notes)


@pytest.mark.parametrize(("folder", "summary", "total", "dialect", "rows"), CONFIGS)
def test_debug_database_gives_the_same_total_and_model_indices(
    folder: Path, summary: str, total: int, dialect: str, rows: int
) -> None:
    """With the debug database each layer is one model operator with its index in the model."""
    budget = load_budget([folder / "tiny_int8_per-layer.csv", folder / summary, folder / "tiny_int8_debug.xml"])
    assert budget.layer_cycles_total == pytest.approx(total, abs=1e-6)
    indices = [la.index for la in budget.layers]
    assert indices == sorted(indices) and None not in indices
    ops = {la.index: la.op for la in budget.layers}
    # The model: 0 conv, 1 dw, 2 add, 3 avgpool, 4 l2norm (CPU), 5 mean, 6 reshape, 7 fc, 8 softmax.
    assert ops[0] in ("Conv2D", "CONV_2D") and ops[4] in ("L2Norm",) and ops[8] in ("Softmax", "SOFTMAX")
    cpu = [la for la in budget.layers if la.engine is Engine.CPU]
    assert [la.index for la in cpu] == [4]
    assert cpu[0].predicted_cycles is None  # Vela makes no CPU estimate


def test_regor_grouping_matches_the_csv_rows() -> None:
    """Regor U55: nine model operators; Softmax is 29 NPU operations; names are output tensors."""
    budget = load_budget([U55 / "tiny_int8_per-layer.csv", U55 / U55_SUMMARY])
    got = [
        (
            la.name,
            la.op,
            la.engine.value if la.engine else None,
            la.predicted_cycles,
            la.sram_bytes,
            len(la.parts),
            la.npu_subgraph,
        )
        for la in budget.layers
    ]
    assert got == [
        ("conv/Relu", "Conv2D", "npu", 14283, 29440, 2, 0),
        ("dw/Relu6", "DepthwiseConv2D", "npu", 13444, 33104, 2, 0),
        ("add", "Add", "npu", 24576, 32768, 1, 0),
        ("avgpool", "AvgPool", "npu", 4448, 20480, 1, 0),
        ("l2norm", "L2Norm", "cpu", None, 0, 1, None),
        ("mean", "Mean", "npu", 5662 + 128, 4160, 2, 1),
        ("fc", "FullyConnected", "npu", 352, 32, 1, 1),
        ("output", "Softmax", "npu", 985, 320, 29, 1),
    ]
    assert budget.layers[5].aliases == ("mean_intermediate",)
    conv = budget.layers[0].parts[0]
    assert conv.detail["npu_cycles"] == 14283 and conv.detail["sram_access_cycles"] == 10684
    assert conv.detail["off_chip_flash_access_cycles"] == 3168 and conv.detail["mac_count"] == 442368
    assert conv.origin.endswith("tiny_int8_per-layer.csv:2")


def test_legacy_dialect_two_network_pct_columns_and_repeated_header() -> None:
    """Legacy: header repeated once per NPU subgraph; the two Network% columns keep their meaning."""
    table = read_per_layer(BudgetText.read(LEGACY / "tiny_int8_per-layer.csv"))
    assert table.dialect == "legacy"
    assert {r.block for r in table.rows} == {0, 1}
    assert [r.subgraph for r in table.rows[:5]] == [0, 0, 0, 0, 1]
    first = table.rows[0].part
    assert first.op == "Conv2DBias" and first.cycles == 10000.0 and first.sram_bytes == 29392
    assert first.detail["network_cycles_pct"] == pytest.approx(16.05677676263267)
    assert first.detail["network_mac_pct"] == pytest.approx(77.81935245533947)
    assert table.rows[4].line == 7  # the repeated header is line 6
    # Fractional legacy cycles (16.5, 18.5) are kept.
    assert any(not float(r.part.cycles).is_integer() for r in table.rows)
    assert math.fsum(r.part.cycles for r in table.rows) == 62279.0


def test_legacy_debug_database_maps_memcpy_and_restores_the_cpu_operator() -> None:
    """The legacy CSV leaves out L2Norm; its debug database still lists it (not queued)."""
    budget = load_budget([LEGACY / "tiny_int8_per-layer.csv", LEGACY / U55_SUMMARY, LEGACY / "tiny_int8_debug.xml"])
    assert [(la.index, la.op, la.engine.value if la.engine else None) for la in budget.layers] == [
        (0, "CONV_2D", "npu"),
        (1, "DEPTHWISE_CONV_2D", "npu"),
        (2, "ADD", "npu"),
        (3, "AVERAGE_POOL_2D", "npu"),
        (4, "L2Norm", "cpu"),
        (5, "MEAN", "npu"),
        (6, "RESHAPE", "npu"),
        (7, "FULLY_CONNECTED", "npu"),
        (8, "SOFTMAX", "npu"),
    ]
    assert len(budget.layers[8].parts) == 31
    assert any("legacy core's CSV omits them" in n for n in budget.notes)


def test_summary_units_kib_to_bytes_and_clock() -> None:
    """KiB columns become bytes; the clock is Hz; Shared_Sram's SRAM peak is the arena."""
    budget = load_budget([U55 / U55_SUMMARY])
    m = budget.model
    assert (m.name, m.clock_hz, m.cycles_total) == ("tiny_int8", 500_000_000, 63878)
    assert m.sram_bytes == 33104 == m.arena_bytes  # 32.328125 KiB
    assert m.flash_bytes == 3344  # 3.265625 KiB off-chip flash
    assert m.dram_bytes == 0
    assert m.memory["arena_cache_size_bytes"] == 4194304 * 1024
    assert m.memory["total_npu_encoded_weights_bytes"] == 1552
    assert m.details["cycles_npu"] == 63390 and m.details["inference_time_s"] == pytest.approx(0.000127756)
    assert m.compiler is not None
    assert m.compiler.config["accelerator_configuration"] == "Ethos_U55_128"
    assert budget.layers == ()


def test_dedicated_sram_has_no_arena_prediction() -> None:
    """U65 Dedicated_Sram: SRAM is the NPU cache; the arena lives in DRAM with the constants."""
    budget = load_budget([U65 / U65_SUMMARY])
    assert budget.model.clock_hz == 1_000_000_000
    assert budget.model.sram_bytes == 33104 and budget.model.arena_bytes is None
    assert budget.model.dram_bytes == 15632  # 15.265625 KiB
    assert any("Dedicated_Sram" in n for n in budget.notes)


def test_without_summary_the_clock_is_unknown_and_said_so() -> None:
    budget = load_budget([U55 / "tiny_int8_per-layer.csv"])
    assert budget.model.clock_hz is None
    assert budget.model.cycles_total == 63878
    assert budget.model.name == "tiny_int8"
    assert any("no Vela summary CSV" in n for n in budget.notes)


def test_mismatched_summary_is_reported() -> None:
    """A per-layer CSV of one run with the summary of another: the sums differ, a note says so."""
    budget = load_budget([U55 / "tiny_int8_per-layer.csv", U65 / U65_SUMMARY])
    assert any("63878" in n and "93588" in n for n in budget.notes)


def test_files_are_recognised_by_content_not_name(tmp_path: Path) -> None:
    renamed = tmp_path / "whatever.txt"
    renamed.write_bytes((U55 / "tiny_int8_per-layer.csv").read_bytes())
    assert file_kind(BudgetText.read(renamed)) == "vela-per-layer"
    other = tmp_path / "x.dat"
    other.write_bytes((U55 / U55_SUMMARY).read_bytes())
    assert file_kind(BudgetText.read(other)) == "vela-summary"
    assert file_kind(BudgetText.read(U55 / "tiny_int8_debug.xml")) == "vela-debug-db"


def _corrupt(tmp_path: Path, source: Path, line: int, old: str, new: str) -> Path:
    lines = source.read_text().splitlines()
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    out = tmp_path / source.name
    out.write_text("\n".join(lines) + "\n")
    return out


def test_bad_number_names_file_line_and_column(tmp_path: Path) -> None:
    bad = _corrupt(tmp_path, U55 / "tiny_int8_per-layer.csv", 4, ",13444,", ",13x44,")
    with pytest.raises(
        UsageError, match=r"tiny_int8_per-layer\.csv:4: column 'Op Cycles': expected a number, got '13x44'"
    ):
        load_budget([bad])


def test_row_with_wrong_field_count(tmp_path: Path) -> None:
    bad = _corrupt(tmp_path, LEGACY / "tiny_int8_per-layer.csv", 3, ",dw/Relu6", "")
    with pytest.raises(UsageError, match=r":3: expected 15 comma-separated fields as in the header, got 14"):
        read_per_layer(BudgetText.read(bad))


def test_bad_target(tmp_path: Path) -> None:
    bad = _corrupt(tmp_path, U55 / "tiny_int8_per-layer.csv", 8, ",CPU,", ",GPU,")
    with pytest.raises(UsageError, match=r":8: column 'Target': expected NPU or CPU, got 'GPU'"):
        read_per_layer(BudgetText.read(bad))


def test_summary_with_two_rows_or_bad_clock(tmp_path: Path) -> None:
    text = (U55 / U55_SUMMARY).read_text().splitlines()
    two = tmp_path / "two.csv"
    two.write_text("\n".join([*text, text[1]]) + "\n")
    with pytest.raises(UsageError, match=r"two\.csv:3: expected one data row after the header, found 2"):
        read_summary(BudgetText.read(two))
    bad = _corrupt(tmp_path, U55 / U55_SUMMARY, 2, "500000000.0", "fast")
    with pytest.raises(UsageError, match=r":2: column 'core_clock': expected a number, got 'fast'"):
        read_summary(BudgetText.read(bad))


def test_header_only_csv(tmp_path: Path) -> None:
    only = tmp_path / "only_per-layer.csv"
    only.write_text((U55 / "tiny_int8_per-layer.csv").read_text().splitlines()[0] + "\n")
    with pytest.raises(UsageError, match=r"only_per-layer\.csv:1: a Vela per-layer CSV header but no rows"):
        load_budget([only])


def test_two_per_layer_csvs_are_refused() -> None:
    with pytest.raises(UsageError, match="two Vela per-layer CSVs"):
        load_budget([U55 / "tiny_int8_per-layer.csv", U65 / "tiny_int8_per-layer.csv"])


def test_two_summaries_with_different_clocks_are_refused() -> None:
    with pytest.raises(UsageError, match="two Vela summary CSVs"):
        load_budget([U55 / U55_SUMMARY, U65 / U65_SUMMARY])


def test_debug_db_that_does_not_fit_falls_back_with_a_note() -> None:
    """The regor run's database with the legacy run's CSV: its rows do not map onto the CSV's, so
    the reader groups the layers from the operation order and says why in a note."""
    budget = load_budget([LEGACY / "tiny_int8_per-layer.csv", LEGACY / U55_SUMMARY, U55 / "tiny_int8_debug.xml"])
    assert any("does not fit" in n for n in budget.notes)
    assert budget.layer_cycles_total == pytest.approx(62279)


def test_malformed_debug_db(tmp_path: Path) -> None:
    bad = tmp_path / "tiny_int8_debug.xml"
    bad.write_text("<?xml version='1.0'?>\n<debug source='x'>\n<table name='source'>\n</debug>\n")
    with pytest.raises(UsageError, match=r"tiny_int8_debug\.xml:4: not well-formed XML"):
        load_budget([U55 / "tiny_int8_per-layer.csv", bad])
