"""Budget readers on any input: a budget, or a UsageError naming the file and a line."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.budget.loader import load_budget_texts
from tracer.budget.text import BudgetText
from tracer.errors import UsageError

DATA = Path(__file__).parent / "data"
SAMPLES = [
    DATA / "vela" / "out_u55-128_regor" / "tiny_int8_per-layer.csv",
    DATA / "vela" / "out_u55-128_legacy" / "tiny_int8_per-layer.csv",
    DATA / "vela" / "out_u55-128_regor" / "tiny_int8_summary_Ethos_U55_High_End_Embedded.csv",
    DATA / "vela" / "out_u55-128_legacy" / "tiny_int8_debug.xml",
    DATA / "logs" / "glow_bundle_nanodet_m_glow_cm7.h",
]
TOML = (
    '[model]\nname = "m"\nclock_hz = "400M"\narena_bytes = 100\n\n[[layer]]\nindex = 0\nop = "CONV_2D"\ncycles = 10\n'
)
LOCATED = re.compile(r"^f\.txt:\d+: |^f\.txt: ")


def _load(blob: bytes) -> None:
    try:
        budget = load_budget_texts([BudgetText.from_bytes(blob, "f.txt")])
    except UsageError as exc:
        assert LOCATED.match(str(exc)), str(exc)
        return
    json.dumps(budget.to_json(), allow_nan=False)  # plain JSON, whatever came in


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes(blob: bytes) -> None:
    _load(blob)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([*SAMPLES, None]), st.data())
def test_mutated_real_files(path: Path | None, data: st.DataObject) -> None:
    """Real files with lines replaced, cut or duplicated."""
    lines = (path.read_text() if path else TOML).splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        action = data.draw(st.sampled_from(["replace", "cut", "dup", "text"]))
        if action == "replace":
            lines[i] = data.draw(st.text(alphabet=",.0123456789-abcxyz\"'=[] <>/", max_size=40))
        elif action == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
        elif action == "dup":
            lines.insert(i, lines[i])
        else:
            lines[i] = data.draw(st.text(max_size=30))
    _load("\n".join(lines).encode("utf-8", "replace"))
