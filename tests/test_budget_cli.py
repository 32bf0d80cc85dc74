"""``tracer budget`` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).parent / "data"
U55 = DATA / "vela" / "out_u55-128_regor"
LEGACY = DATA / "vela" / "out_u55-128_legacy"
SUMMARY = "tiny_int8_summary_Ethos_U55_High_End_Embedded.csv"


def test_json_shape(run_cli) -> None:
    result = run_cli("budget", U55 / "tiny_int8_per-layer.csv", U55 / SUMMARY, "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    model = data["model"]
    assert (model["name"], model["clock_hz"], model["cycles_total"], model["sram_bytes"], model["arena_bytes"]) == (
        "tiny_int8",
        500000000,
        63878,
        33104,
        33104,
    )
    assert set(data["layers"][0]) >= {"index", "name", "op", "engine", "predicted_cycles", "sram_bytes"}
    assert [la["engine"] for la in data["layers"]].count("cpu") == 1
    assert sum(la["predicted_cycles"] or 0 for la in data["layers"]) == 63878
    assert "parts" not in data["layers"][0]
    assert "note: layers grouped from the operation order" in result.err  # notes on stderr, data on stdout


def test_json_with_parts_and_output_file(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "budget.json"
    result = run_cli(
        "budget",
        LEGACY / "tiny_int8_per-layer.csv",
        LEGACY / SUMMARY,
        LEGACY / "tiny_int8_debug.xml",
        "--format",
        "json",
        "--parts",
        "-o",
        out,
    )
    assert result.code == 0 and result.out == ""
    data = json.loads(out.read_text())
    softmax = data["layers"][-1]
    assert softmax["index"] == 8 and len(softmax["parts"]) == 31
    assert sum(p["cycles"] for p in softmax["parts"]) == softmax["predicted_cycles"]
    # The saved JSON is itself a budget.
    again = run_cli("budget", out, "--format", "json")
    assert again.code == 0 and json.loads(again.out)["model"]["cycles_total"] == 62279


def test_text_output(run_cli) -> None:
    result = run_cli("budget", U55 / "tiny_int8_per-layer.csv", U55 / SUMMARY, U55 / "tiny_int8_debug.xml")
    assert result.code == 0
    assert "model: tiny_int8 (vela, regor, Ethos_U55_128, Ethos_U55_High_End_Embedded, Shared_Sram)" in result.out
    assert "cycles per inference: 63878 (127.8 us) at 500 MHz" in result.out
    assert "sum of layer predictions: 63878 cycles (= the model total)" in result.out
    rows = [ln.split() for ln in result.out.splitlines() if ln.strip().startswith(("0 ", "4 "))]
    assert ["0", "0", "conv/Relu", "Conv2D", "npu", "14283", "29440", "-", "2"] in rows
    assert ["4", "4", "l2norm", "L2Norm", "cpu", "-", "0", "-", "1"] in rows


def test_glow_and_toml(run_cli, tmp_path: Path) -> None:
    result = run_cli("budget", DATA / "logs" / "glow_bundle_nanodet_m_glow_cm7.h")
    assert result.code == 0 and "memory: SRAM 1427200 B, arena 1075200 B, flash 216704 B" in result.out
    toml = tmp_path / "b.toml"
    toml.write_text('[model]\nname = "demo"\nclock_hz = "32M"\n\n[[layer]]\nindex = 0\nop = "CONV_2D"\ncycles = 1000\n')
    result = run_cli("budget", toml, "--format", "json")
    assert result.code == 0
    data = json.loads(result.out)
    assert data["model"]["clock_hz"] == 32000000 and data["layers"][0]["predicted_cycles"] == 1000


def test_bad_files_exit_2_with_the_line(run_cli, tmp_path: Path) -> None:
    bad = tmp_path / "b.toml"
    bad.write_text('[[layer]]\nindex = 0\ncycles = "lots"\n')
    result = run_cli("budget", bad)
    assert result.code == 2 and result.out == ""
    assert f"tracer: error: {bad}:3: 'cycles': expected a number of cycles from 0 to 2**48, got 'lots'" in result.err
    result = run_cli("budget", tmp_path / "nope.csv")
    assert result.code == 2 and "nope.csv: no such file" in result.err
    result = run_cli("budget", DATA / "vela" / "tiny_int8.tflite")
    assert result.code == 2 and "not a text file" in result.err
    assert "Traceback" not in result.err


def test_help_teaches(run_cli) -> None:
    result = run_cli("budget", "--help")
    assert result.code == 0
    assert "examples:" in result.out and "--format {text,json}" in result.out and "FILE" in result.out
