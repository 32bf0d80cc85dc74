"""What ``vela`` prints: its "Network summary" and, with ``--verbose-performance``, the per-layer
performance table, read from a saved console output (``vela model.tflite ... > vela.txt``).

Grammar (Vela 5.x, both compiler cores; other lines of the console output are skipped)::

    Performance for NPU Grap <dir>/<model>          (legacy core: "Performance for NPU Subgraph <name>")
    Original Operator    NNG Operator   Target ...  Name     column titles, as in the per-layer CSV
    -------------------- -------------- ------ ...           one run of dashes per column
    Conv2D               Conv2D         NPU    ...  conv/Relu
                                                             a blank line ends the table
    Network summary for <model>
    Accelerator configuration               Ethos_U55_128
    System configuration             Ethos_U55_High_End_Embedded
    Memory mode                               Shared_Sram
    Accelerator clock                                 500 MHz
    Total SRAM used                                 32.33 KiB    (also DRAM, On-chip / Off-chip Flash)
    Original Weights Size                            4.72 KiB
    NPU Encoded Weights Size                         1.52 KiB
    Neural network macs                            610484 MACs/batch
    NPU cycles                                      63390 cycles/batch
    SRAM Access cycles                              26615 cycles/batch   (also DRAM, flash)
    Total cycles                                    63878 cycles/batch
    Batch Inference time                 0.13 ms, 7827.42 inferences/s (batch size 1)

The cycle lines of the summary come with ``--verbose-cycle-estimate``, the weight sizes with
``--verbose-weights``, the table with ``--verbose-performance``; without any of them Vela prints no
cycle estimate at all and the budget holds the clock and the memory only. Without the cycle lines
the model total is the sum of the table's rows. A row's fields are split at white space; operator names have none, so only the last column
(``Name``, a tensor name) may hold spaces. Sizes are printed in KiB with two decimals, so the bytes
taken from them are within 5 bytes of Vela's own (the summary CSV has them exactly).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from tracer.budget.text import BudgetText
from tracer.budget.vela_csv import LEGACY_FIRST, MAX_COUNT, REGOR_FIRST, VelaLayerTable, VelaSummary, layer_table
from tracer.limits import MAX_NUMBER_DIGITS

_SUMMARY = re.compile(r"^Network summary for (?P<name>\S.*?)\s*$")
_ROW = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 ./-]*?)\s{2,}(?P<value>\S.*?)\s*$")
# Vela pads its numbers to a width (``f"{ms:7.2f} ms, {ips:7.2f} inferences/s"`` prints
# "18.22 ms,   54.88 inferences/s"): any run of spaces between the parts. ASCII digits only.
_CLOCK = re.compile(r"^(?P<v>\d+(?:\.\d+)?)\s+(?P<unit>[kMG]?Hz)$", re.ASCII)
_SIZE = re.compile(r"^(?P<v>\d+(?:\.\d+)?)\s+(?P<unit>B|KiB|MiB|GiB)$", re.ASCII)
_PER_BATCH = re.compile(r"^(?P<v>\d+(?:\.\d+)?)\s+(?P<unit>cycles|MACs)/batch$", re.ASCII)
_TIME = re.compile(
    r"^(?P<ms>\d+(?:\.\d+)?)\s+ms,\s+(?P<ips>\d+(?:\.\d+)?)\s+inferences/s\s+\(batch size\s+(?P<batch>\d+)\)$",
    re.ASCII,
)
_PERF = re.compile(r"^Performance for NPU ")
_DASHES = re.compile(r"^-+(?: +-+)*\s*$")
_CLOCK_UNITS = {"Hz": 1, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9}
_SIZE_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
# Summary row title -> the summary CSV's column name (so both readers give the same budget).
_TEXT = {
    "Accelerator configuration": "accelerator_configuration",
    "System configuration": "system_config",
    "Memory mode": "memory_mode",
}
_SIZES = {
    "Total SRAM used": "sram_memory_used_bytes",
    "Total DRAM used": "dram_memory_used_bytes",
    "Total On-chip Flash used": "on_chip_flash_memory_used_bytes",
    "Total Off-chip Flash used": "off_chip_flash_memory_used_bytes",
    "Original Weights Size": "total_original_weights",
    "NPU Encoded Weights Size": "total_npu_encoded_weights",
}
_COUNTS = {
    "Neural network macs": "nn_macs",
    "NPU cycles": "cycles_npu",
    "SRAM Access cycles": "cycles_sram_access",
    "DRAM Access cycles": "cycles_dram_access",
    "On-chip Flash Access cycles": "cycles_on_chip_flash_access",
    "Off-chip Flash Access cycles": "cycles_off_chip_flash_access",
    "Total cycles": "cycles_total",
}


def is_vela_stdout(text: str) -> bool:
    """True if the text holds Vela's printed network summary (a saved ``vela`` console output)."""
    return bool(re.search(r"^Network summary for \S", text, re.M)) and bool(
        re.search(r"^Accelerator (?:clock|configuration)\s", text, re.M)
    )


def read_vela_stdout(source: BudgetText) -> tuple[VelaLayerTable | None, VelaSummary]:
    """The per-layer table (None when Vela ran without ``--verbose-performance``) and the summary.

    Raises:
        UsageError: Two network summaries, a summary without its clock or total cycles, a number
            that is not one, or a table row that does not fit its column titles (file and line).
    """
    lines = source.lines
    starts = [i for i, ln in enumerate(lines) if _SUMMARY.match(ln)]
    if len(starts) > 1:
        raise source.error(starts[1] + 1, "a second 'Network summary': give one model's Vela output per budget")
    summary = _summary(source, lines, starts[0])
    return _table(source, lines), summary


def _summary(source: BudgetText, lines: list[str], start: int) -> VelaSummary:
    m = _SUMMARY.match(lines[start])
    assert m is not None
    values: dict[str, float | str] = {"network": m.group("name")}
    where: dict[str, int] = {}
    for i in range(start + 1, len(lines)):
        row = _ROW.match(lines[i].strip())
        if not row:
            continue
        key, value, line = " ".join(row.group("key").split()), row.group("value"), i + 1
        if key in _TEXT:
            values[_TEXT[key]] = value
        elif key == "Accelerator clock":
            values["core_clock"] = _unit_number(
                source, line, key, value, _CLOCK, _CLOCK_UNITS, "a clock such as '500 MHz'"
            )
        elif key in _SIZES:
            values[_SIZES[key]] = float(
                round(_unit_number(source, line, key, value, _SIZE, _SIZE_UNITS, "a size such as '32.33 KiB'"))
            )
        elif key in _COUNTS:
            found = _PER_BATCH.match(value)
            if not found:
                raise source.error(line, f"{key}: expected a count such as '63878 cycles/batch', got {value!r}")
            values[_COUNTS[key]] = _bounded(source, line, key, found.group("v"))
        elif key == "Batch Inference time":
            found = _TIME.match(value)
            if not found:
                raise source.error(line, f"{key}: expected '<ms> ms, <n> inferences/s (batch size <b>)', got {value!r}")
            values["inference_time"] = _bounded(source, line, key, found.group("ms")) / 1000
            values["inferences_per_second"] = _bounded(source, line, key, found.group("ips"))
            values["batch_size"] = _bounded(source, line, key, found.group("batch"))
        else:
            continue
        where[key] = line
    if "core_clock" not in values:
        raise source.error(
            start + 1, "the network summary has no 'Accelerator clock' line (expected Vela's console output)"
        )
    clock, cycles = values["core_clock"], values.get("cycles_total")
    assert isinstance(clock, float) and (cycles is None or isinstance(cycles, float))
    if clock < 1:
        raise source.error(
            where["Accelerator clock"], f"Accelerator clock: expected a clock of at least 1 Hz, got {clock:g} Hz"
        )
    return VelaSummary(str(values["network"]), int(round(clock)), cycles, values, source, printed=True)


def _table(source: BudgetText, lines: list[str]) -> VelaLayerTable | None:
    header: list[str] | None = None
    header_line = 0
    body: list[tuple[int, list[str]]] = []
    i = 0
    while i < len(lines):
        if not _PERF.match(lines[i]) or i + 2 >= len(lines) or not _DASHES.match(lines[i + 2]):
            i += 1
            continue
        columns = len(lines[i + 2].split())
        titles = _titles(lines[i + 1], lines[i + 2])
        if titles[0] not in (REGOR_FIRST, LEGACY_FIRST):
            raise source.error(
                i + 2, f"expected the column titles of Vela's per-layer table, got {lines[i + 1].strip()!r}"
            )
        if header is None:
            header, header_line = titles, i + 2
        else:
            if titles != header:
                raise source.error(i + 2, "a per-layer table whose columns differ from the first one")
            body.append((i + 2, titles))  # the legacy core: one table per NPU subgraph
        i += 3
        while i < len(lines) and lines[i].strip():
            tokens = lines[i].split()
            fields = [*tokens[: columns - 1], " ".join(tokens[columns - 1 :])]
            body.append((i + 1, fields))
            i += 1
    if header is None:
        return None
    return layer_table(source, header, header_line, body, "white-space separated fields")


def _titles(title_line: str, dashes: str) -> list[str]:
    """Column titles cut at the dash runs below them (titles hold spaces: "Op Cycles")."""
    spans = [m.span() for m in re.finditer(r"-+", dashes)]
    titles = [title_line[a:b].strip() for a, b in spans[:-1]]
    titles.append(title_line[spans[-1][0] :].strip())
    return titles


def _unit_number(
    source: BudgetText,
    line: int,
    key: str,
    value: str,
    pattern: re.Pattern[str],
    units: Mapping[str, float],
    what: str,
) -> float:
    found = pattern.match(value)
    if not found:
        raise source.error(line, f"{key}: expected {what}, got {value!r}")
    number = _bounded(source, line, key, found.group("v")) * units[found.group("unit")]
    if number > MAX_COUNT:
        raise source.error(line, f"{key}: {value!r} is beyond 2**53")
    return number


def _bounded(source: BudgetText, line: int, key: str, text: str) -> float:
    if len(text) > MAX_NUMBER_DIGITS:
        raise source.error(line, f"{key}: a number of {len(text)} digits")
    number = float(text)
    if not math.isfinite(number) or number > MAX_COUNT:
        raise source.error(line, f"{key}: expected a number from 0 to 2**53, got {text!r}")
    return number
