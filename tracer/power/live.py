"""Live power meters recorded beside the capture: ``tracer record SOURCE -o run.trace --power URL``.

* ``joulescope://[SERIAL][?rate=HZ]``: a Joulescope JS110/JS220 through Jetperch's
  ``pyjoulescope_driver``; its own recorder (``Record``) writes the JLS (current, voltage and the
  general-purpose inputs gpi[0]-gpi[3]) at ``rate`` (default 1 MS/s on a JS220, 2 MS/s on a JS110).
* ``ppk2://PORT[?voltage=MV][&mode=source|ampere]``: a Nordic PPK2 through ``ppk2-api``
  (source mode by default, powering the target at ``voltage`` mV, default 3300); a reading thread
  turns its samples (current, 8 digital inputs, 100 kS/s) into power and writes them to a JLS
  through ``pyjls`` (signals ``power`` and ``gpi[0]``-``gpi[7]``).

The meter is started before the target's source and stopped after it, so the recording covers
the capture; ``tracer report run.trace --power run.jls`` then attributes it. The drivers load only
here, when a meter is asked for (exit 4 when the library or the meter is missing).

While it records, each recorder also hands the samples to its ``tap``
(:class:`~tracer.power.tap.SampleTap`, the newest samples in bounded memory), from which
``tracer live`` shows energy as it goes; the JLS file is read only once closed. The PPK2's
thread does so as it writes them; for a Joulescope, tracer subscribes to the same data topics
as the maker's recorder and lines the signals up by sample id (:class:`JoulescopeTap`).
"""

from __future__ import annotations

import dataclasses
import threading
import urllib.parse
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from tracer.errors import SourceUnavailable, UsageError
from tracer.power.recording import RecordingInfo
from tracer.power.tap import SampleTap

PPK2_RATE = 100_000  # samples per second of the PPK2's averaged stream
PPK2_MAX_CURRENT_A = 1.0  # its measuring range tops out near 1 A
_TOPICS = {"current": "s/i/!data", "voltage": "s/v/!data"}  # pyjoulescope_driver's data topics


@dataclasses.dataclass(frozen=True)
class MeterUrl:
    """A meter named on the command line."""

    kind: str  # "joulescope" or "ppk2"
    device: str  # serial number (Joulescope, may be empty) or serial port (PPK2)
    rate: int | None = None
    voltage_mv: int = 3300
    source_mode: bool = True


def parse_meter(url: str) -> MeterUrl:
    """``joulescope://...`` or ``ppk2://...`` (exit 2 on anything else)."""
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    device = (parts.netloc + parts.path).strip()
    try:
        if parts.scheme == "joulescope":
            unknown = set(query) - {"rate"}
            if not unknown:
                return MeterUrl("joulescope", device.strip("/"), int(query["rate"]) if "rate" in query else None)
        elif parts.scheme == "ppk2":
            unknown = set(query) - {"voltage", "mode"}
            mode = query.get("mode", "source")
            if not device:
                raise UsageError(f"{url}: name the PPK2's serial port, e.g. ppk2:///dev/ttyACM0")
            if not unknown and mode in ("source", "ampere"):
                return MeterUrl("ppk2", device, PPK2_RATE, int(query.get("voltage", 3300)), mode == "source")
        else:
            raise UsageError(f"{url}: a meter is joulescope://[SERIAL][?rate=HZ] or ppk2://PORT[?voltage=MV]")
    except ValueError:
        pass
    raise UsageError(f"{url}: bad meter options (joulescope: rate=HZ; ppk2: voltage=MV, mode=source|ampere)")


class MeterRecorder(Protocol):
    """A meter recording into a file (``path``, a .jls) until stopped."""

    path: str
    tap: SampleTap | None  # its newest samples while it records (None: only the file, once closed)

    def start(self) -> None:
        """Open the meter and start recording (exit 4 if it cannot)."""
        ...

    def stop(self) -> None:
        """Stop recording and close the file."""
        ...


def meter_recorder(url: str, path: str) -> MeterRecorder:
    """The recorder for meter ``url``, writing ``path`` (a .jls)."""
    meter = parse_meter(url)
    if meter.kind == "joulescope":
        return JoulescopeRecorder(meter, path)
    return Ppk2Recorder(meter, path)


class JoulescopeRecorder:
    """A Joulescope recorded by ``pyjoulescope_driver``'s own JLS recorder."""

    SIGNALS = ("current", "voltage", "gpi[0]", "gpi[1]", "gpi[2]", "gpi[3]")

    def __init__(self, meter: MeterUrl, path: str, driver: Any = None, record: Any = None) -> None:
        self.meter, self.path = meter, path
        self._driver, self._record_class = driver, record
        self._record: Any = None
        self._device = ""
        self.tap: SampleTap | None = None  # once started: the signals' samples, lined up
        self._lined_up: JoulescopeTap | None = None

    def start(self) -> None:
        """Find the Joulescope, set its rate and ranges, start its recorder."""
        if self._driver is None:
            try:
                from pyjoulescope_driver import Driver, Record
            except ImportError:
                raise SourceUnavailable(
                    "joulescope:// needs pyjoulescope_driver: pip install pyjoulescope_driver pyjls"
                ) from None
            self._driver, self._record_class = Driver(), Record
        d = self._driver
        paths = [p for p in d.device_paths() if not self.meter.device or p.lower().endswith(self.meter.device.lower())]
        if not paths:
            self._driver.finalize()
            which = f" with serial number {self.meter.device}" if self.meter.device else ""
            raise SourceUnavailable(f"no Joulescope{which} attached")
        self._device = paths[0]
        d.open(self._device, mode="defaults")
        rate = self.meter.rate or (2_000_000 if "js110" in self._device else 1_000_000)
        d.publish(f"{self._device}/h/fs", rate)
        if "js220" in self._device:  # auto ranging, as the maker's recorder sets it
            d.publish(f"{self._device}/s/i/range/mode", "auto")
            d.publish(f"{self._device}/s/v/range/mode", "auto")
        elif "js110" in self._device:
            d.publish(f"{self._device}/s/i/range/select", "auto")
            d.publish(f"{self._device}/s/v/range/select", "15 V")
        signals = self.SIGNALS if "js220" in self._device else self.SIGNALS[:4]
        self._record = self._record_class(d, self._device, list(signals))
        self._record.open(self.path)
        digital = dict(enumerate(signals[2:]))
        meter = "Joulescope " + self._device.split("/")[1].upper() if self._device.count("/") >= 2 else "Joulescope"
        self.tap = SampleTap(RecordingInfo(self.path, meter, float(rate), None, "power", None, digital))
        self._lined_up = JoulescopeTap(d, self._device, signals, self.tap)

    def stop(self) -> None:
        """Close the recorder (the JLS file), the device and the driver."""
        if self._lined_up is not None:
            self._lined_up.close()
            self._lined_up = None
        if self._record is not None:
            self._record.close()
            self._record = None
        if self._driver is not None and self._device:
            self._driver.close(self._device)
            self._driver.finalize()
            self._device = ""


class JoulescopeTap:
    """The Joulescope's data topics lined up into power and digital inputs for a tap.

    ``pyjoulescope_driver`` publishes each signal on its own topic (``s/i/!data``, ``s/v/!data``,
    ``s/gpi/N/!data``), in blocks that carry their first ``sample_id`` (at the device's base rate:
    divided by ``decimate_factor``); a digital input's block is packed 8 samples a byte, least
    significant bit first, as the maker's recorder writes it to JLS (a later block's samples
    replace an earlier one's padding bits). Each signal's blocks wait
    here until every signal has a sample; then the samples all have are handed on (current times
    voltage, the inputs as bits) and dropped. A signal that stops coming for
    :data:`MAX_WAITING` samples stops the tap (the JLS file still has everything).

    Args:
        driver: The open driver; device: The device's path; signals: The recorded signals
            (``current``, ``voltage``, then the ``gpi[N]`` inputs in bit order); tap: Fed.
    """

    MAX_WAITING = 1 << 22

    def __init__(self, driver: Any, device: str, signals: Sequence[str], tap: SampleTap) -> None:
        self._driver, self._tap = driver, tap
        self._lock = threading.Lock()
        self._topics = {f"{device}/{_TOPICS.get(name) or 's/gpi/' + name[4:-1] + '/!data'}": name for name in signals}
        self._waiting: dict[str, list[tuple[int, np.ndarray]]] = {name: [] for name in signals}
        self._next: int | None = None  # the first sample not yet handed on
        self.stopped = ""
        for topic in self._topics:
            driver.subscribe(topic, ["pub"], self._on_data)

    def close(self) -> None:
        """Stop listening."""
        for topic in self._topics:
            self._driver.unsubscribe(topic, self._on_data)

    def _on_data(self, topic: str, value: dict[str, Any]) -> None:
        name = self._topics.get(topic)
        if name is None or self.stopped:
            return
        first = int(value["sample_id"]) // max(int(value.get("decimate_factor", 1)), 1)
        data = np.asarray(value["data"])
        if name.startswith("gpi"):
            data = np.unpackbits(data.astype(np.uint8), bitorder="little")
        with self._lock:
            self._waiting[name].append((first, data))
            self._hand_on()

    def _hand_on(self) -> None:
        """Hand the tap the samples every signal has (called with the lock held)."""
        if any(not blocks for blocks in self._waiting.values()):
            if max(sum(len(d) for _, d in blocks) for blocks in self._waiting.values()) > self.MAX_WAITING:
                missing = [name for name, blocks in self._waiting.items() if not blocks]
                self.stopped = f"no samples of {', '.join(missing)}"
                self._waiting = {name: [] for name in self._waiting}
            return
        if self._next is None:
            self._next = max(blocks[0][0] for blocks in self._waiting.values())
        start = self._next
        end = min(self._known_end(name, blocks) for name, blocks in self._waiting.items())
        if end <= start:
            return
        taken = {name: self._take(name, start, end) for name in self._waiting}
        power = taken["current"].astype(np.float64) * taken["voltage"]
        digital = np.zeros(end - start, np.uint8)
        for bit, name in enumerate(n for n in self._waiting if n.startswith("gpi")):
            digital |= (taken[name].astype(np.uint8) & 1) << bit
        self._next = end
        self._tap.add(power, digital)

    @staticmethod
    def _known_end(name: str, blocks: list[tuple[int, np.ndarray]]) -> int:
        """Where the signal's samples received so far end. A digital input's block is packed in
        whole bytes (``(count + 7) // 8``, its count not said): its last 7 bits may be padding,
        known only once the next block comes (it starts where this one truly ended).
        """
        first, data = blocks[-1]
        return first + len(data) - (7 if name.startswith("gpi") else 0)

    def _take(self, name: str, start: int, end: int) -> np.ndarray:
        """Samples ``start`` to ``end`` of signal ``name`` (zeros where it has none), dropping
        its blocks that end by ``end``.
        """
        out = np.zeros(end - start, np.float64 if not name.startswith("gpi") else np.uint8)
        keep = []
        for first, data in self._waiting[name]:
            lo, hi = max(first, start), min(first + len(data), end)
            if hi > lo:
                out[lo - start : hi - start] = data[lo - first : hi - first]
            if first + len(data) > end:
                keep.append((first, data))
        self._waiting[name] = keep
        return out


class Ppk2Recorder:
    """A PPK2 read by ``ppk2-api`` on a thread of its own, written as JLS through ``pyjls``."""

    def __init__(self, meter: MeterUrl, path: str, api: Any = None) -> None:
        self.meter, self.path = meter, path
        self._api_class = api
        self._ppk: Any = None
        self._writer: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples = 0
        self.error: BaseException | None = None
        digital = {bit: f"gpi[{bit}]" for bit in range(8)}
        self.tap: SampleTap | None = SampleTap(RecordingInfo(path, "PPK2", PPK2_RATE, None, "power", None, digital))

    def start(self) -> None:
        """Open the PPK2, power the target (source mode), start measuring and the reading thread."""
        from tracer.power.jls import _pyjls

        pyjls = _pyjls()
        if self._api_class is None:
            try:
                from ppk2_api.ppk2_api import PPK2_API
            except ImportError:
                raise SourceUnavailable("ppk2:// needs ppk2-api: pip install ppk2-api pyjls") from None
            self._api_class = PPK2_API
        try:
            ppk = self._api_class(self.meter.device)
        except OSError as exc:
            raise SourceUnavailable(f"ppk2://{self.meter.device}: cannot open the PPK2: {exc}") from None
        ppk.get_modifiers()
        if self.meter.source_mode:
            ppk.use_source_meter()
        else:
            ppk.use_ampere_meter()
        ppk.set_source_voltage(self.meter.voltage_mv)
        if self.meter.source_mode:
            ppk.toggle_DUT_power("ON")
        self._ppk = ppk
        w = pyjls.Writer(self.path)
        w.source_def(source_id=1, name="PPK2", vendor="Nordic Semiconductor", model="PPK2", version="",
                     serial_number=self.meter.device)  # fmt: skip
        kw = {"source_id": 1, "signal_type": pyjls.SignalType.FSR, "sample_rate": PPK2_RATE}
        w.signal_def(signal_id=1, data_type=pyjls.DataType.F32, name="power", units="W", **kw)
        for bit in range(8):
            w.signal_def(signal_id=2 + bit, data_type=pyjls.DataType.U1, name=f"gpi[{bit}]", units="", **kw)
        self._writer = w
        ppk.start_measuring()
        self._thread = threading.Thread(target=self._run, name="tracer-ppk2", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        volts = self.meter.voltage_mv / 1000
        pending_bits = np.zeros(0, np.uint8)
        try:
            while not self._stop.wait(0.02):
                data = self._ppk.get_data()
                if not data:
                    continue
                samples, bits = self._ppk.get_samples(data)
                n = min(len(samples), len(bits))
                if n == 0:
                    continue
                power = np.asarray(samples[:n], np.float64) * 1e-6 * volts  # ppk2-api gives microamperes
                self._writer.fsr_f32(1, self.samples, power.astype(np.float32))
                if self.tap is not None:
                    self.tap.add(power, np.asarray(bits[:n], np.uint8))
                # u1 signals are written in whole bytes: keep the samples of a partial byte for later.
                pending_bits = np.concatenate((pending_bits, np.asarray(bits[:n], np.uint8)))
                whole = len(pending_bits) // 8 * 8
                if whole:
                    first = self.samples + n - len(pending_bits)
                    for bit in range(8):
                        packed = np.packbits((pending_bits[:whole] >> bit) & 1, bitorder="little")
                        self._writer.fsr(2 + bit, first, packed)
                    pending_bits = pending_bits[whole:]
                self.samples += n
        except BaseException as exc:  # noqa: BLE001 - said by stop(), the recording stays readable
            self.error = exc

    def stop(self) -> None:
        """Stop the thread and the PPK2 (the target stays powered) and close the JLS file."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        if self._ppk is not None:
            self._ppk.stop_measuring()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self.error is not None:
            raise SourceUnavailable(f"ppk2://{self.meter.device}: reading stopped: {self.error}")
