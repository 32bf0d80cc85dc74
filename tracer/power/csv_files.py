"""Power recordings as CSV: the export of Nordic's Power Profiler (PPK2), and a plain CSV.

**PPK2** (nRF Connect Power Profiler, "Export"): a header ``Timestamp(ms),Current(uA)``, then
optionally the digital inputs as one field ``D0-D7`` (eight characters, the first is D0) or as
eight fields ``D0,D1,...,D7``. The file has current only: the supply voltage comes from the user.

**Plain CSV** (any other meter's export, a script's output): a header naming a time
column (``time``, ``timestamp``, ``t``), a current (``current``, ``i``) or power (``power``, ``p``)
column, optionally ``voltage`` (``v``) and digital inputs (``d0``, ``gpi0``, ``digital0``, ``in0``
...), each with its unit in parentheses or brackets: ``time(s)``, ``current [mA]``, ``power(uW)``
(default units: s, A, W, V). Separators: comma, semicolon or tab; ``#`` lines are comments.

Samples must come at a fixed rate (what every meter records): the rate is taken from the
timestamps, and a timestamp more than half a sample off the grid is a gap, said with its line.
Read in chunks of lines: memory stays bounded whatever the file's size.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterator
from typing import IO

import numpy as np

from tracer.errors import CaptureError, reading_file
from tracer.power.recording import CHUNK_SAMPLES, PowerChunk, RecordingInfo, power_of

UNITS = {
    "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9,
    "a": 1.0, "ma": 1e-3, "ua": 1e-6, "µa": 1e-6, "na": 1e-9,
    "w": 1.0, "mw": 1e-3, "uw": 1e-6, "µw": 1e-6, "nw": 1e-9,
    "v": 1.0, "mv": 1e-3,
}  # fmt: skip
_ROLE = {
    "time": "time", "timestamp": "time", "t": "time",
    "current": "current", "i": "current",
    "power": "power", "p": "power",
    "voltage": "voltage", "v": "voltage",
}  # fmt: skip
_DIGITAL = re.compile(r"^(?:d|gpi|gpio|digital|in|dig)[ _\[]?([0-7])\]?$")
_NAME_UNIT = re.compile(r"^\s*([^(\[]*?)\s*(?:[(\[]\s*([^)\]]*?)\s*[)\]])?\s*$")
RATE_ROWS = 64  # rows whose timestamps give the first estimate of the rate


@dataclasses.dataclass(frozen=True)
class Layout:
    """Which column holds what, and the scale of each to SI units."""

    time: int
    time_scale: float
    main: int
    main_scale: float
    quantity: str  # "power" or "current"
    voltage: int | None
    voltage_scale: float
    digital: tuple[tuple[int, int], ...]  # (bit, column)
    packed: int | None  # PPK2's "D0-D7" column: eight characters, the first D0
    meter: str
    delimiter: str


def _split(line: str) -> tuple[list[str], str]:
    for delimiter in (",", ";", "\t"):
        if delimiter in line:
            return [f.strip() for f in line.split(delimiter)], delimiter
    return [line.strip()], ","


def parse_header(line: str, path: str) -> Layout:
    """The layout of a header line (exit 3 saying what is missing)."""
    fields, delimiter = _split(line)
    lowered = [f.lower() for f in fields]
    if lowered[:2] == ["timestamp(ms)", "current(ua)"]:
        digital: list[tuple[int, int]] = []
        packed = None
        for col, name in enumerate(lowered[2:], 2):
            if name == "d0-d7":
                packed = col
            elif (m := _DIGITAL.match(name)) is not None:
                digital.append((int(m.group(1)), col))
        return Layout(0, 1e-3, 1, 1e-6, "current", None, 1.0, tuple(digital), packed, "PPK2 CSV", delimiter)
    roles: dict[str, tuple[int, float]] = {}
    digital = []
    for col, field in enumerate(fields):
        m = _NAME_UNIT.match(field)
        name, unit = (m.group(1).lower(), (m.group(2) or "").lower()) if m else (field.lower(), "")
        if (d := _DIGITAL.match(name)) is not None:
            digital.append((int(d.group(1)), col))
            continue
        role = _ROLE.get(name)
        if role is None or role in roles:
            continue
        default = {"time": "s", "current": "a", "power": "w", "voltage": "v"}[role]
        scale = UNITS.get(unit or default)
        if scale is None or (unit and unit[-1] != default[-1]):
            raise CaptureError(f"{path}: line 1: column '{field}': unknown unit '{unit}' for {role}")
        roles[role] = (col, scale)
    if "time" not in roles or not ({"power", "current"} & roles.keys()):
        raise CaptureError(
            f"{path}: line 1: expected a header with a time column and a current or power column "
            f"(e.g. 'time(s),current(A),voltage(V),d0'), found: {line.strip()[:120]!r}"
        )
    quantity = "power" if "power" in roles else "current"
    volt = roles.get("voltage") if quantity == "current" else None
    return Layout(
        roles["time"][0], roles["time"][1], roles[quantity][0], roles[quantity][1], quantity,
        volt[0] if volt else None, volt[1] if volt else 1.0, tuple(digital), None, "CSV", delimiter,
    )  # fmt: skip


class CsvRecording:
    """A CSV power recording (PPK2 export or plain), read in chunks of lines."""

    def __init__(self, path: str, layout: Layout, rate: float, first_time: float, supply: float | None) -> None:
        self.path, self.layout, self._t0, self._supply = path, layout, first_time, supply
        if layout.quantity == "current" and layout.voltage is None and supply is None:
            power_of(np.zeros(0), None, path)  # says what to give
        bits = [b for b, _ in layout.digital] + (list(range(8)) if layout.packed is not None else [])
        self._info = RecordingInfo(
            path=path,
            meter=layout.meter,
            sample_rate=rate,
            samples=None,
            quantity=layout.quantity,
            voltage=supply if layout.quantity == "current" and layout.voltage is None else None,
            digital={b: f"D{b}" for b in sorted(set(bits))},
        )

    @property
    def info(self) -> RecordingInfo:
        """The recording's description."""
        return self._info

    def chunks(self, samples: int = CHUNK_SAMPLES) -> Iterator[PowerChunk]:
        """The samples in chunks; a gap or a bad line raises :class:`CaptureError` with its line."""
        try:
            yield from self._chunks(samples)
        except UnicodeDecodeError:
            raise CaptureError(f"{self.path}: not text after its header: a CSV recording is text") from None

    def _chunks(self, samples: int) -> Iterator[PowerChunk]:
        lay, rate = self.layout, self._info.sample_rate
        first = 0
        with reading_file(self.path, "a power recording", CaptureError), open(self.path, encoding="utf-8-sig") as f:
            line_no = _skip_header(f)
            while True:
                lines = list(itertools.islice(f, samples))
                lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
                if not lines:
                    return
                table = self._parse(lines, line_no + 1)
                n = table.shape[0]
                t = table[:, lay.time] * lay.time_scale - self._t0
                off = self._off_grid(t, first, rate)
                if off.any() and t[-1] > 0:  # the first rows' rate may be off by their rounding
                    refined = (first + n - 1) / t[-1]
                    if not self._off_grid(t, first, refined).any():
                        rate, off = refined, off & False
                if off.any():
                    expected = (first + np.arange(n)) / rate
                    k = int(np.argmax(off))
                    raise CaptureError(
                        f"{self.path}: line {line_no + 1 + k}: time {t[k] + self._t0:.9g} s, expected "
                        f"{expected[k] + self._t0:.9g} s at {rate:g} samples/s: samples missing or not at a fixed rate"
                    )
                values = table[:, lay.main] * lay.main_scale
                if lay.quantity == "current":
                    volts = table[:, lay.voltage] * lay.voltage_scale if lay.voltage is not None else self._supply
                    values = power_of(values, volts, self.path)
                yield PowerChunk(first, values, self._digital(table))
                first += n
                line_no += len(lines)

    @staticmethod
    def _off_grid(t: np.ndarray, first: int, rate: float) -> np.ndarray:
        """Where the timestamps are more than half a sample off the fixed-rate grid."""
        return np.abs(t - (first + np.arange(t.shape[0])) / rate) > 0.5 / rate

    def _parse(self, lines: list[str], first_line: int) -> np.ndarray:
        try:
            table = np.loadtxt(lines, delimiter=self.layout.delimiter, dtype=np.float64, ndmin=2)
        except ValueError:
            for k, line in enumerate(lines):
                try:
                    [float(x) for x in line.split(self.layout.delimiter)]
                except ValueError:
                    raise CaptureError(
                        f"{self.path}: line {first_line + k}: expected numbers, found {line.strip()[:80]!r}"
                    ) from None
            raise CaptureError(
                f"{self.path}: lines {first_line}-{first_line + len(lines)}: rows of unequal length"
            ) from None
        if not np.isfinite(table).all():
            k = int(np.argmax(~np.isfinite(table).all(axis=1)))
            raise CaptureError(f"{self.path}: line {first_line + k}: not a finite number: {lines[k].strip()[:80]!r}")
        return table

    def _digital(self, table: np.ndarray) -> np.ndarray | None:
        lay = self.layout
        if not lay.digital and lay.packed is None:
            return None
        out = np.zeros(table.shape[0], np.uint8)
        if lay.packed is not None:  # "01001000" read as the number 1001000: digit i from the left is Di
            packed = table[:, lay.packed].astype(np.int64)
            for bit in range(8):
                out |= (((packed // 10 ** (7 - bit)) % 10) != 0).astype(np.uint8) << bit
        for bit, col in lay.digital:
            out |= (table[:, col] != 0).astype(np.uint8) << bit
        return out


def _skip_header(f: IO[str]) -> int:
    """Read up to the header line; the number of lines read."""
    for k, line in enumerate(f, 1):
        if line.strip() and not line.lstrip().startswith("#"):
            return k
    return 0


def open_csv(path: str, supply_voltage: float | None = None) -> CsvRecording:
    """Open a CSV recording: its layout from the header, its rate from the first timestamps."""
    try:
        return _open_csv(path, supply_voltage)
    except UnicodeDecodeError as exc:
        raise CaptureError(
            f"{path}: byte {exc.start}: not text: expected a Joulescope .jls or a CSV recording (time, current or power)"
        ) from None


def _open_csv(path: str, supply_voltage: float | None) -> CsvRecording:
    with reading_file(path, "a power recording", CaptureError), open(path, encoding="utf-8-sig") as f:
        header_line = _skip_header(f)
        if header_line == 0:
            raise CaptureError(f"{path}: empty: expected a CSV header and samples")
        f.seek(0)
        header = next(ln for k, ln in enumerate(f, 1) if k == header_line)
        layout = parse_header(header, path)
        rows = [ln for ln in itertools.islice(f, RATE_ROWS + 1) if ln.strip() and not ln.lstrip().startswith("#")]
    if len(rows) < 2:
        raise CaptureError(f"{path}: line {header_line + 1}: fewer than 2 samples: no sample rate to take")
    recording = CsvRecording(path, layout, 1.0, 0.0, supply_voltage)
    table = recording._parse(rows, header_line + 1)
    t = table[:, layout.time] * layout.time_scale
    steps = np.diff(t)
    if (steps <= 0).any():
        k = int(np.argmax(steps <= 0))
        raise CaptureError(f"{path}: line {header_line + 2 + k}: time does not increase ({t[k + 1]:.9g} s)")
    rate = 1.0 / float(np.median(steps))
    return CsvRecording(path, layout, rate, float(t[0]), supply_voltage)
