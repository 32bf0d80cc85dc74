"""Our own budget file (TOML, and the JSON ``tracer budget`` prints), and combining files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracer.base.timeline import Engine
from tracer.budget import load_budget
from tracer.errors import UsageError

VELA = Path(__file__).parent / "data" / "vela" / "out_u55-128_regor"
PER_LAYER = VELA / "tiny_int8_per-layer.csv"
SUMMARY = VELA / "tiny_int8_summary_Ethos_U55_High_End_Embedded.csv"

EXAMPLE = """\
# predicted by our own planner
[model]
name = "kws"
clock_hz = "400M"
arena_bytes = 48_000
sram_bytes = 33_104
sram_available_bytes = 2_097_152
tolerance_pct = 10
compiler = "plan.py"

[[layer]]
index = 0
name = "conv1"
op = "CONV_2D"
engine = "npu"
cycles = 14_283
sram_bytes = 29_440

[[layer]]
index = 1
op = "DEPTHWISE_CONV_2D"
cycles = 13444.5
tolerance_pct = 25

[[layer]]
name = "softmax"
engine = "cpu"
cycles = 985
"""


def _write(tmp_path: Path, text: str, name: str = "budget.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_toml_example(tmp_path: Path) -> None:
    budget = load_budget([_write(tmp_path, EXAMPLE)])
    m = budget.model
    assert (m.name, m.clock_hz, m.arena_bytes, m.sram_bytes, m.sram_available_bytes, m.tolerance_pct) == (
        "kws",
        400_000_000,
        48000,
        33104,
        2097152,
        10.0,
    )
    assert m.cycles_total == 14283 + 13444.5 + 985  # the layers' sum when not given
    assert m.compiler is not None and m.compiler.name == "plan.py"
    got = [
        (la.index, la.name, la.op, la.engine, la.predicted_cycles, la.sram_bytes, la.tolerance_pct)
        for la in budget.layers
    ]
    assert got == [
        (0, "conv1", "CONV_2D", Engine.NPU, 14283, 29440, None),
        (1, "", "DEPTHWISE_CONV_2D", None, 13444.5, None, 25.0),
        (None, "softmax", "", Engine.CPU, 985, None, None),
    ]
    assert budget.layers[1].origin.endswith("budget.toml:19")


def test_clock_defaults_to_the_captures(tmp_path: Path) -> None:
    budget = load_budget([_write(tmp_path, "[[layer]]\nindex = 0\ncycles = 5\n")])
    assert budget.model.clock_hz is None and budget.model.cycles_total == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[model]\nname = "x"\nclok_hz = 5\n',
            r"budget\.toml:3: unknown key 'clok_hz' in \[model\]; expected one of: name",
        ),
        (
            '[model]\nclock_hz = "fast"\n',
            r"budget\.toml:2: 'clock_hz': expected a frequency, a whole number of Hz from 1 kHz to 10 GHz",
        ),
        (
            "[model]\narena_bytes = -4\n",
            r"budget\.toml:2: 'arena_bytes': expected a whole number of bytes from 0 to 2\*\*40, got -4",
        ),
        ("[model]\narena_bytes = 1.5\n", r"budget\.toml:2: 'arena_bytes': expected a whole number of bytes"),
        (
            '[[layer]]\nindex = 0\ncycles = 1\n\n[[layer]]\nindex = 1\ncycles = "many"\n',
            r"budget\.toml:7: 'cycles': expected a number of cycles from 0 to 2\*\*48, got 'many'",
        ),
        ("[[layer]]\ncycles = 1\n", r"budget\.toml:1: layer #1: give 'index' or 'name' \(or both\)"),
        (
            "[[layer]]\nindex = 0\ncycles = 1\n[[layer]]\nindex = 0\ncycles = 2\n",
            r"budget\.toml:5: index 0 is already used by layer #1",
        ),
        (
            '[[layer]]\nindex = 0\nengine = "gpu"\ncycles = 1\n',
            r"budget\.toml:3: 'engine': expected \"npu\" or \"cpu\", got 'gpu'",
        ),
        ("[[layer]]\nindex = 0\ncycle = 1\n", r"budget\.toml:3: unknown key 'cycle' in layer #1"),
        ('[model]\nname = "x"\n[extra]\na = 1\n', r"budget\.toml:3: unknown table or key 'extra'"),
        ('[model]\nname = "x\n', r"budget\.toml:2: not valid TOML"),
        ("[model]\nname = 5\n", r"budget\.toml:2: 'name': expected text in quotes, got 5"),
    ],
)
def test_toml_errors_name_file_line_and_expectation(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_budget([_write(tmp_path, text)])


def test_unrecognised_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"notes\.txt:1: not a budget file; expected a Vela per-layer CSV"):
        load_budget([_write(tmp_path, "hello\n", "notes.txt")])
    with pytest.raises(UsageError, match=r"empty\.toml:1: empty file"):
        load_budget([_write(tmp_path, "", "empty.toml")])
    with pytest.raises(UsageError, match=r"missing\.toml: no such file"):
        load_budget([tmp_path / "missing.toml"])
    binary = tmp_path / "model.tflite"
    binary.write_bytes(b"\x1c\x00\x00\x00TFL3\xff\xfe")
    with pytest.raises(UsageError, match=r"model\.tflite:1: not a text file"):
        load_budget([binary])


def test_json_round_trip(tmp_path: Path) -> None:
    """What ``tracer budget --format json`` prints reads back as the same budget."""
    first = load_budget([PER_LAYER, SUMMARY])
    saved = _write(tmp_path, json.dumps(first.to_json(parts=True), indent=2), "budget.json")
    again = load_budget([saved])
    a, b = first.to_json(), again.to_json()
    for layer in a["layers"] + b["layers"]:
        layer.pop("origin")
        for part in layer.get("parts", []):
            part.pop("origin")
    assert a["model"] == b["model"]
    assert a["layers"] == b["layers"]
    assert again.layers[5].aliases == ("mean_intermediate",)


def test_json_errors_have_lines(tmp_path: Path) -> None:
    text = '{\n  "model": {"name": "x"},\n  "layers": [\n    {"index": 0, "cycles": 1},\n    {"index": 1,\n     "cycles": "x"}\n  ]\n}\n'
    with pytest.raises(
        UsageError, match=r"budget\.json:6: 'cycles': expected a number of cycles from 0 to 2\*\*48, got 'x'"
    ):
        load_budget([_write(tmp_path, text, "budget.json")])
    with pytest.raises(UsageError, match=r"budget\.json:2: not valid JSON"):
        load_budget([_write(tmp_path, '{\n "model": ,\n}', "budget.json")])


def test_toml_with_vela_fills_limits_and_overrides_with_a_note(tmp_path: Path) -> None:
    """A TOML [model] beside Vela's files adds the SRAM on the part and the default tolerance;
    a value it sets explicitly wins over Vela's, with a note."""
    extra = _write(tmp_path, "[model]\nsram_available_bytes = 2_097_152\ntolerance_pct = 15\narena_bytes = 40_000\n")
    budget = load_budget([PER_LAYER, SUMMARY, extra])
    assert budget.model.sram_available_bytes == 2097152 and budget.model.tolerance_pct == 15
    assert budget.model.arena_bytes == 40000 and budget.model.sram_bytes == 33104
    assert any("arena_bytes 40000" in n and "replaces 33104" in n for n in budget.notes)
    assert budget.model.clock_hz == 500_000_000 and len(budget.layers) == 8


def test_overlay_sets_per_layer_tolerance_on_velas_layers(tmp_path: Path) -> None:
    overlay = _write(
        tmp_path,
        '[[layer]]\nname = "conv/Relu"\ntolerance_pct = 30\n\n[[layer]]\nname = "mean_intermediate"\ntolerance_pct = 5\n',
    )
    budget = load_budget([PER_LAYER, SUMMARY, overlay])
    tolerances = {la.name: la.tolerance_pct for la in budget.layers}
    assert tolerances["conv/Relu"] == 30 and tolerances["mean"] == 5 and tolerances["add"] is None
    assert budget.layer_cycles_total == 63878  # the overlay changes no cycles


def test_overlay_that_matches_nothing(tmp_path: Path) -> None:
    overlay = _write(tmp_path, '[[layer]]\nname = "nope"\ntolerance_pct = 30\n')
    with pytest.raises(UsageError, match=r"budget\.toml:1: layer with name 'nope' matches no layer"):
        load_budget([PER_LAYER, SUMMARY, overlay])
    with pytest.raises(UsageError, match="its layers have no 'cycles' and no other file gives layers"):
        load_budget([overlay])


def test_two_files_with_layers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"both .*tiny_int8_per-layer\.csv and .*budget\.toml give layers"):
        load_budget([PER_LAYER, _write(tmp_path, EXAMPLE)])


def test_glow_and_toml_combine(tmp_path: Path) -> None:
    glow = Path(__file__).parent / "data" / "logs" / "glow_bundle_mobilenet_v1_glow_cm7.h"
    toml = _write(tmp_path, '[model]\nclock_hz = 600_000_000\n\n[[layer]]\nname = "conv0"\ncycles = 100\n')
    budget = load_budget([glow, toml])
    assert budget.model.name == "mobilenet_v1" and budget.model.clock_hz == 600_000_000
    assert budget.model.arena_bytes == 98368 and [la.name for la in budget.layers] == ["conv0"]
