"""The demo's Vela-compiled model is what its scripts make: regenerated here, byte for byte.

``firmware_snippets/demo/model/compile.py --out TMP`` writes the model (``make_model.py``, no
TensorFlow), runs the real Vela (``ethos-u-vela`` of the ``test`` extra) on it and derives the
firmware header and the ground-truth JSON; everything must equal the committed files. The header
is also checked to hold the command stream whose kernel commands sit at the debug database's
offsets (compile.py refuses otherwise) and the JSON to follow the documented simulation rule.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / "firmware_snippets" / "demo" / "model"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model")
    done = subprocess.run(
        [sys.executable, str(MODEL_DIR / "compile.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.parametrize(
    "name",
    [
        "sampling_net.tflite",
        "sampling_stream.h",
        "sampling_stream.json",
        "vela/sampling_net_vela.tflite",
        "vela/sampling_net_debug.xml",
        "vela/sampling_net_per-layer.csv",
        "vela/sampling_net_summary_Ethos_U55_High_End_Embedded.csv",
        "vela/sampling_net_vela.txt",
    ],
)
def test_committed_outputs_are_reproduced(regenerated: Path, name: str) -> None:
    """Byte for byte; the debug database table by table, each row by column name: Vela does not
    always write a table's columns in the same order (seen once in CI, not reproduced since)."""
    got, committed = (regenerated / name).read_bytes(), (MODEL_DIR / name).read_bytes()
    if name.endswith("_debug.xml"):
        assert debug_tables(got) == debug_tables(committed), name
    else:
        assert got == committed, name


def debug_tables(xml: bytes) -> dict[str, list[dict[str, str]]]:
    """A Vela debug database's tables: name -> rows, each a mapping of column name to value."""
    root = ElementTree.fromstring(xml)
    assert root.tag == "debug" and len(root), "not a Vela debug database"
    return {
        table.attrib["name"]: list(csv.DictReader(io.StringIO((table.text or "").strip())))
        for table in root.iter("table")
    }


def test_ground_truth_follows_the_simulation_rule() -> None:
    truth = json.loads((MODEL_DIR / "sampling_stream.json").read_text())
    ops = truth["operations"]
    assert [op["offset"] for op in ops] == [328, 484, 628, 744, 904, 1016, 1156]
    for op in ops:
        factor = truth["slowdown"].get(op["name"], 1.0)
        assert op["npu_cycles"] == round(op["vela_op_cycles"] * factor)
        assert op["ticks"] == op["npu_cycles"] * truth["ticks_per_npu_cycle"]
    assert truth["total_npu_cycles"] == sum(op["npu_cycles"] for op in ops)
    assert truth["stream_bytes"] == 1164 and truth["setup_cycles"] == ops[0]["npu_cycles"] // 8


def test_no_machine_path_in_the_vela_outputs() -> None:
    for path in (MODEL_DIR / "vela").iterdir():
        text = path.read_bytes()
        assert b"/work/" not in text and b"/tmp/" not in text and b"/home/" not in text, path.name
