"""Glow bundle headers (real NXP eIQ headers in tests/data/logs): memory sizes and placeholders."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracer.budget import load_budget
from tracer.errors import UsageError

LOGS = Path(__file__).parent / "data" / "logs"
NANODET = LOGS / "glow_bundle_nanodet_m_glow_cm7.h"
MOBILENET = LOGS / "glow_bundle_mobilenet_v1_glow_cm7.h"


def test_nanodet_sizes_and_placeholders() -> None:
    budget = load_budget([NANODET])
    m = budget.model
    assert m.name == "nanodet_m"
    assert m.memory["constant_weights_bytes"] == 216704
    assert m.memory["mutable_weights_bytes"] == 352000
    assert m.memory["activations_bytes"] == 1075200
    assert m.memory["mem_align_bytes"] == 64
    assert m.memory["total_data_bytes"] == 1643904 == 216704 + 352000 + 1075200
    assert (m.flash_bytes, m.arena_bytes, m.sram_bytes) == (216704, 1075200, 352000 + 1075200)
    assert m.compiler is not None and m.compiler.name == "glow"
    assert m.compiler.version == "2022-05-11 (2ee55ec50) (Glow_Release_MCUX_SDK_2.12.0)"
    placeholders = {p["name"]: p for p in m.details["placeholders"]}
    assert placeholders["cls_pred"] == {
        "name": "cls_pred",
        "offset": 307200,
        "size_bytes": 32000,
        "elements": 8000,
        "type": "float<1 x 100 x 80>",
    }
    assert placeholders["reg_pred"]["offset"] == 339200
    assert placeholders["data"]["offset"] == 0 and placeholders["data"]["size_bytes"] == 307200
    assert budget.layers == () and budget.notes == ()


def test_mobilenet_sizes() -> None:
    m = load_budget([MOBILENET]).model
    assert m.name == "mobilenet_v1"
    assert (m.memory["constant_weights_bytes"], m.memory["mutable_weights_bytes"], m.memory["activations_bytes"]) == (
        479168,
        53184,
        98368,
    )
    offsets = {p["name"]: p["offset"] for p in m.details["placeholders"]}
    assert offsets == {"input": 0, "MobilenetV1_Predictions_Reshape_1": 49152}


def test_bad_size_macro_names_its_line(tmp_path: Path) -> None:
    text = NANODET.read_text().replace("NANODET_M_MUTABLE_MEM_SIZE      352000", "NANODET_M_MUTABLE_MEM_SIZE      lots")
    bad = tmp_path / "bundle.h"
    bad.write_text(text)
    line = text.splitlines().index("#define NANODET_M_MUTABLE_MEM_SIZE      lots") + 1
    with pytest.raises(UsageError, match=rf"bundle\.h:{line}: NANODET_M_MUTABLE_MEM_SIZE: expected a size in bytes"):
        load_budget([bad])


def test_missing_activations_size(tmp_path: Path) -> None:
    text = "\n".join(ln for ln in NANODET.read_text().splitlines() if "MUTABLE_MEM_SIZE" not in ln)
    bad = tmp_path / "bundle.h"
    bad.write_text(text)
    with pytest.raises(UsageError, match=r"bundle\.h:\d+: end of file without NANODET_M_MUTABLE_MEM_SIZE"):
        load_budget([bad])


def test_offset_disagreeing_with_the_comment_block(tmp_path: Path) -> None:
    text = NANODET.read_text().replace("#define NANODET_M_reg_pred  339200", "#define NANODET_M_reg_pred  339201")
    bad = tmp_path / "bundle.h"
    bad.write_text(text)
    with pytest.raises(UsageError, match=r"NANODET_M_reg_pred is 339201 but the comment block gives offset 339200"):
        load_budget([bad])
