"""Joulescope JLS v2 files, read through Jetperch's ``pyjls`` (the ``power`` extra).

A JLS file holds fixed-rate signals by name, as the Joulescope UI and ``pyjoulescope_driver``'s
recorder write them: ``current`` (A), ``voltage`` (V), ``power`` (W), and the general-purpose
inputs ``gpi[0]`` ... ``gpi[3]`` and ``trigger_in`` (1 bit per sample). Power is the ``power``
signal when recorded, else current times voltage sample by sample, else current times the
supply voltage given. Signals may start at different sample ids (``sample_id_offset``): the
digital inputs are lined up with the power by it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from tracer.errors import CaptureError, UsageError
from tracer.power.recording import CHUNK_SAMPLES, PowerChunk, RecordingInfo, power_of

DIGITAL_NAMES = ("gpi[0]", "gpi[1]", "gpi[2]", "gpi[3]", "trigger_in")
FSR = 0  # pyjls SignalType.FSR: fixed sample rate


def _pyjls() -> Any:
    try:
        import pyjls
    except ImportError:
        raise UsageError(
            "reading a Joulescope .jls file needs pyjls: pip install 'tracer[power]' (or pip install pyjls)"
        ) from None
    return pyjls


class JlsRecording:
    """A JLS file opened for reading (the file stays closed between passes)."""

    def __init__(self, path: str, supply_voltage: float | None = None) -> None:
        self.path = path
        self._supply = supply_voltage
        pyjls = _pyjls()
        try:
            with pyjls.Reader(path) as reader:
                signals = {s.name: s for s in reader.signals.values() if s.signal_type == FSR and s.length > 0}
                sources = dict(reader.sources)
                user = _user_data(reader)
        except RuntimeError as exc:
            raise CaptureError(f"{path}: not a readable JLS file ({exc})") from None
        main = signals.get("power") or signals.get("current")
        if main is None:
            raise CaptureError(
                f"{path}: the JLS file has no 'power' or 'current' signal (it has: {', '.join(signals) or 'none'})"
            )
        self._main = main
        self._voltage = signals.get("voltage") if main.name == "current" else None
        if main.name == "current" and self._voltage is None and supply_voltage is None:
            power_of(np.zeros(0), None, path)  # says what to give
        for other in (self._voltage, *(signals.get(n) for n in DIGITAL_NAMES)):
            if other is not None and other.sample_rate != main.sample_rate:
                raise CaptureError(
                    f"{path}: signal '{other.name}' is at {other.sample_rate} Hz and '{main.name}' at "
                    f"{main.sample_rate} Hz; tracer reads signals recorded at one rate"
                )
        self._digital = [(i, signals[n]) for i, n in enumerate(DIGITAL_NAMES) if n in signals]
        source = sources.get(main.source_id)
        meter = " ".join(x for x in ("Joulescope", getattr(source, "model", "") or "") if x).strip()
        if user.get("simulated"):
            meter = "simulated meter (JLS)"
        self._info = RecordingInfo(
            path=path,
            meter=meter,
            sample_rate=float(main.sample_rate),
            samples=int(main.length),
            quantity="power" if main.name == "power" else "current",
            voltage=None if (main.name == "power" or self._voltage is not None) else supply_voltage,
            digital={i: DIGITAL_NAMES[i] for i, _ in self._digital},
            simulated=bool(user.get("simulated", False)),
        )

    @property
    def info(self) -> RecordingInfo:
        """The recording's description."""
        return self._info

    def chunks(self, samples: int = CHUNK_SAMPLES) -> Iterator[PowerChunk]:
        """The samples in chunks of ``samples``, digital inputs lined up by sample id."""
        pyjls = _pyjls()
        main, total = self._main, int(self._main.length)
        with pyjls.Reader(self.path) as reader:
            for first in range(0, total, samples):
                n = min(samples, total - first)
                try:
                    values = np.asarray(reader.fsr(main.signal_id, first, n), np.float64)
                    if self._voltage is not None:
                        volts = self._signal(reader, self._voltage, main, first, n, np.float64)
                        values = power_of(values, volts, self.path)
                    elif main.name == "current":
                        values = power_of(values, self._supply, self.path)
                    digital = None
                    if self._digital:
                        digital = np.zeros(n, np.uint8)
                        for bit, signal in self._digital:
                            digital |= self._signal(reader, signal, main, first, n, np.uint8) << bit
                except RuntimeError as exc:
                    raise CaptureError(f"{self.path}: cannot read samples {first} to {first + n} ({exc})") from None
                yield PowerChunk(first, values, digital)

    @staticmethod
    def _signal(reader: Any, signal: Any, main: Any, first: int, n: int, dtype: type) -> np.ndarray:
        """``n`` samples of ``signal`` lined up with ``main``'s sample ``first`` (0 outside it)."""
        start = first + int(main.sample_id_offset) - int(signal.sample_id_offset)
        out: np.ndarray = np.zeros(n, dtype)
        lo, hi = max(start, 0), min(start + n, int(signal.length))
        if hi <= lo:
            return out
        raw = reader.fsr(signal.signal_id, lo, hi - lo)
        if signal.data_type == _pyjls().DataType.U1:  # packed little-endian bits
            values: np.ndarray = np.unpackbits(np.asarray(raw, np.uint8), count=hi - lo, bitorder="little")
        else:
            values = np.asarray(raw)
        out[lo - start : hi - start] = values
        return out


def _user_data(reader: Any) -> dict[str, Any]:
    """The JSON user data tracer's simulator writes (``{"simulated": true}``), else empty."""
    found: dict[str, Any] = {}

    def take(chunk_meta: int, data: Any) -> bool:
        if isinstance(data, (bytes, bytearray, str)):
            try:
                data = json.loads(data)
            except ValueError:
                return False
        if isinstance(data, dict):
            found.update(data)
        return False

    try:
        reader.user_data(take)
    except Exception:  # noqa: BLE001 - user data is optional; a file without it is fine
        return {}
    return found
