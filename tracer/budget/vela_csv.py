"""Vela's CSV outputs: the per-layer estimate (``<model>_per-layer.csv``, both dialects) and the
network summary (``<model>_summary_<system-config>.csv``).

Per-layer dialects (Vela 5.x):

* default (C++ "regor") core: one header ``Original Operator,NNG Operator,Target,...,Name``
  (16 columns), one row per scheduled operation, CPU operations included (``Target`` = ``CPU``);
* legacy (Python) core: the header ``TFLite_operator,NNG Operator,SRAM Usage,...`` is repeated at
  the start of each NPU subgraph, two columns are both named ``Network%`` (share of cycles, then
  of MACs), CPU operations are left out and numbers are floats.

Summary units: ``core_clock`` Hz, ``*_memory_used`` and ``arena_cache_size`` KiB,
``inference_time`` seconds, ``cycles_*`` NPU cycles per inference, ``*_bytes`` bytes.
"""

from __future__ import annotations

import csv
import dataclasses
import math

from tracer.base.timeline import Engine
from tracer.budget.model import BudgetPart
from tracer.budget.text import BudgetText
from tracer.limits import MAX_CYCLES, MAX_MEMORY_BYTES, MAX_NUMBER_CHARS, MAX_SECONDS, valid_clock_hz

MAX_COUNT = 2**53  # any other count or rate Vela writes: exact as a double

REGOR_FIRST = "Original Operator"
LEGACY_FIRST = "TFLite_operator"
SUMMARY_FIRST = "experiment,network,accelerator_configuration"

# Per-layer columns: header name -> detail key. ``Network%`` is handled by position.
_DETAIL_COLUMNS = {
    "NPU": "npu_cycles",
    "SRAM AC": "sram_access_cycles",
    "DRAM AC": "dram_access_cycles",
    "OnFlash AC": "on_chip_flash_access_cycles",
    "OffFlash AC": "off_chip_flash_access_cycles",
    "MAC Count": "mac_count",
    "Util% (MAC)": "mac_utilization_pct",
    "Util%": "mac_utilization_pct",
    "Peak% (Staging)": "sram_peak_pct",
    "Peak%": "sram_peak_pct",
    "Network% (cycles)": "network_cycles_pct",
    "Network% (MAC)": "network_mac_pct",
}
_REQUIRED = ("NNG Operator", "Op Cycles", "Name")


@dataclasses.dataclass(frozen=True, slots=True)
class VelaRow:
    """One row of a per-layer CSV.

    Attributes:
        original_op: The model operator the row belongs to (``Original Operator`` /
            ``TFLite_operator``).
        part: The row as a budget part.
        subgraph: NPU command stream number (None for CPU rows).
        block: Header block the row is in (legacy: one per NPU subgraph; regor: always 0).
        line: Line number in the file.
    """

    original_op: str
    part: BudgetPart
    subgraph: int | None
    block: int
    line: int


@dataclasses.dataclass(frozen=True, slots=True)
class VelaLayerTable:
    """A parsed per-layer CSV.

    Attributes:
        dialect: ``"regor"`` (default core) or ``"legacy"``.
        rows: The rows in file order (execution order).
        source: The file.
    """

    dialect: str
    rows: tuple[VelaRow, ...]
    source: BudgetText

    @property
    def cycles_total(self) -> float:
        """Sum of ``Op Cycles`` over every row."""
        return math.fsum(r.part.cycles for r in self.rows)


@dataclasses.dataclass(frozen=True, slots=True)
class VelaSummary:
    """A parsed summary CSV (one network).

    Attributes:
        network: The network name.
        clock_hz: The NPU core clock.
        cycles_total: Estimated cycles per inference (None: Vela's console output without
            ``--verbose-performance`` prints none).
        values: Every column, numbers converted (KiB columns to bytes, with ``_bytes`` names).
        source: The file.
        printed: True when read from Vela's console output (sizes rounded to 0.01 KiB there).
    """

    network: str
    clock_hz: int
    cycles_total: float | None
    values: dict[str, float | str]
    source: BudgetText
    printed: bool = False


def is_per_layer_csv(text: str) -> bool:
    """True if the text starts with a Vela per-layer CSV header of either dialect."""
    first = _first_line(text)
    return first.startswith((REGOR_FIRST + ",", LEGACY_FIRST + ","))


def is_summary_csv(text: str) -> bool:
    """True if the text starts with a Vela summary CSV header."""
    return _first_line(text).startswith(SUMMARY_FIRST)


def read_per_layer(source: BudgetText) -> VelaLayerTable:
    """Parse a per-layer CSV of either dialect.

    Raises:
        UsageError: A row does not fit the header, a number is not a number, a column is missing.
    """
    lines = source.lines
    first_no = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
    header = _split(source, lines[first_no], first_no + 1)
    body: list[tuple[int, list[str]]] = []
    for i in range(first_no + 1, len(lines)):
        if lines[i].strip():
            body.append((i + 1, _split(source, lines[i], i + 1)))
    return layer_table(source, header, first_no + 1, body, "comma-separated fields", "CSV ")


def layer_table(
    source: BudgetText,
    header: list[str],
    header_line: int,
    body: list[tuple[int, list[str]]],
    what: str,
    kind: str = "",
) -> VelaLayerTable:
    """The rows of a per-layer table given as fields (from the CSV, or from the table Vela prints
    with ``--verbose-performance``): ``body`` is ``(line, fields)`` in order; a row equal to the
    header starts a new block (the legacy core repeats it per NPU subgraph).

    Raises:
        UsageError: As :func:`read_per_layer`.
    """
    dialect = "regor" if header[0] == REGOR_FIRST else "legacy"
    columns = _column_map(source, header, header_line)
    rows: list[VelaRow] = []
    block = 0
    subgraph = -1
    last_engine: Engine | None = None
    for line, fields in body:
        if fields == header:  # legacy: a new NPU subgraph starts
            block += 1
            last_engine = None
            continue
        if len(fields) != len(header):
            raise source.error(line, f"expected {len(header)} {what} as in the header, got {len(fields)}")
        engine = Engine.NPU
        if "Target" in columns:
            target = fields[columns["Target"]].strip().upper()
            if target not in ("NPU", "CPU"):
                raise source.error(line, f"column 'Target': expected NPU or CPU, got {target!r}")
            engine = Engine(target.lower())
        if engine is Engine.NPU and last_engine is not Engine.NPU:
            # A header block (legacy) or CPU operations (regor) start a new command stream.
            subgraph += 1
        last_engine = engine
        usage_col = columns.get("Staging Usage", columns.get("SRAM Usage"))
        detail: dict[str, float] = {}
        for col_name, key in _DETAIL_COLUMNS.items():
            if col_name in columns and key not in detail:
                detail[key] = _count(source, fields[columns[col_name]], line, col_name)
        if "#net_cycles" in columns:
            detail["network_cycles_pct"] = _count(source, fields[columns["#net_cycles"]], line, "Network%")
        if "#net_mac" in columns:
            detail["network_mac_pct"] = _count(source, fields[columns["#net_mac"]], line, "Network%")
        usage_name = header[usage_col].strip() if usage_col is not None else ""
        part = BudgetPart(
            op=fields[columns["NNG Operator"]].strip(),
            name=fields[columns["Name"]].strip(),
            engine=engine,
            cycles=_count(source, fields[columns["Op Cycles"]], line, "Op Cycles", MAX_CYCLES, "2**48"),
            sram_bytes=None
            if usage_col is None
            else int(_count(source, fields[usage_col], line, usage_name, MAX_MEMORY_BYTES, "2**40")),
            detail=detail,
            origin=source.where(line),
        )
        rows.append(VelaRow(fields[0].strip(), part, subgraph if engine is Engine.NPU else None, block, line))
    if not rows:
        raise source.error(body[-1][0] if body else header_line, f"a Vela per-layer {kind}header but no rows")
    return VelaLayerTable(dialect, tuple(rows), source)


def read_summary(source: BudgetText) -> VelaSummary:
    """Parse a summary CSV.

    Raises:
        UsageError: Not exactly one data row, a row that does not fit the header, or a required
            column (``network``, ``core_clock``, ``cycles_total``) missing or not a number.
    """
    lines = source.lines
    numbered = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip()]
    header_line, header_text = numbered[0]
    header = [h.strip() for h in _split(source, header_text, header_line)]
    if len(numbered) != 2:
        where = numbered[2][0] if len(numbered) > 2 else header_line
        raise source.error(where, f"expected one data row after the header, found {len(numbered) - 1}")
    line, text = numbered[1]
    fields = _split(source, text, line)
    if len(fields) != len(header):
        raise source.error(line, f"expected {len(header)} comma-separated fields as in the header, got {len(fields)}")
    raw = dict(zip(header, (f.strip() for f in fields)))
    for required in ("network", "core_clock", "cycles_total"):
        if required not in raw:
            raise source.error(header_line, f"no '{required}' column (expected Vela's summary header)")
    values: dict[str, float | str] = {}
    for key, value in raw.items():
        if key in (
            "experiment",
            "network",
            "accelerator_configuration",
            "system_config",
            "memory_mode",
            "weights_storage_area",
            "feature_map_storage_area",
        ):
            values[key] = value
            continue
        number = _number(source, value, line, key)
        if key.endswith("_memory_used") or key == "arena_cache_size":
            if not 0 <= number <= MAX_MEMORY_BYTES / 1024:
                raise source.error(line, f"column '{key}': expected a size in KiB from 0 to 2**30, got {value!r}")
            values[key + "_bytes"] = _kib_to_bytes(number)
            continue
        if key == "core_clock":
            if not valid_clock_hz(round(number)):
                raise source.error(
                    line, f"column 'core_clock': expected a clock in Hz from 1 kHz to 10 GHz, got {value!r}"
                )
        elif key.startswith("cycles_"):
            _count(source, value, line, key, MAX_CYCLES, "2**48")
        elif key == "inference_time":
            if not 0 <= number <= MAX_SECONDS:
                raise source.error(
                    line, f"column 'inference_time': expected seconds from 0 to {MAX_SECONDS:g}, got {value!r}"
                )
        else:
            _count(source, value, line, key)
        values[key] = number
    clock = values["core_clock"]
    cycles = values["cycles_total"]
    assert isinstance(clock, float) and isinstance(cycles, float)
    return VelaSummary(str(values["network"]), int(round(clock)), cycles, values, source)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _split(source: BudgetText, text: str, line: int) -> list[str]:
    try:
        return next(csv.reader([text]))
    except (csv.Error, StopIteration) as exc:
        raise source.error(line, f"not a CSV row ({exc})") from None


def _column_map(source: BudgetText, header: list[str], line: int) -> dict[str, int]:
    columns: dict[str, int] = {}
    for i, name in enumerate(header):
        name = name.strip()
        if name == "Network%":  # legacy: share of cycles first, share of MACs second
            columns["#net_mac" if "#net_cycles" in columns else "#net_cycles"] = i
        elif name not in columns:
            columns[name] = i
    for required in _REQUIRED:
        if required not in columns:
            raise source.error(line, f"no '{required}' column in the header (expected Vela's per-layer CSV)")
    if "Target" not in columns and header[0] == REGOR_FIRST:
        raise source.error(line, "no 'Target' column in the header (expected Vela's per-layer CSV)")
    return columns


def _number(source: BudgetText, text: str, line: int, column: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise source.error(line, f"column '{column}': a number of {len(text)} characters (at most {MAX_NUMBER_CHARS})")
    try:
        value = float(text)
    except ValueError:
        raise source.error(line, f"column '{column}': expected a number, got {text.strip()!r}") from None
    if not math.isfinite(value):
        raise source.error(line, f"column '{column}': expected a finite number, got {text.strip()!r}")
    return value


def _count(
    source: BudgetText, text: str, line: int, column: str, high: float = MAX_COUNT, shown: str = "2**53"
) -> float:
    """A count, size or share Vela writes: a number from 0 to ``high`` (docs/limits.md)."""
    value = _number(source, text, line, column)
    if not 0 <= value <= high:
        what = "a number of cycles" if high == MAX_CYCLES else "a number"
        raise source.error(line, f"column '{column}': expected {what} from 0 to {shown}, got {text.strip()!r}")
    return value


def _kib_to_bytes(kib: float) -> float:
    return float(round(kib * 1024))
