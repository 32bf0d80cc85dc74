"""Live meters at the library boundary: a fake Joulescope driver and a fake PPK2, each with the
real library's method signatures (checked against ``pyjoulescope_driver.Driver`` and
``ppk2_api.ppk2_api.PPK2_API`` with ``inspect.signature``), feed the real recorders: Jetperch's
``pyjoulescope_driver.Record`` and tracer's PPK2 thread, both writing real JLS files (pyjls) that
tracer's reader reads back, edges and power intact."""

from __future__ import annotations

import inspect
import time
from pathlib import Path

import numpy as np
import pytest

from tracer.errors import SourceUnavailable, UsageError
from tracer.power.edges import find_edges
from tracer.power.live import JoulescopeRecorder, MeterUrl, Ppk2Recorder, parse_meter
from tracer.power.reading import open_recording

driver_lib = pytest.importorskip("pyjoulescope_driver")
ppk2_lib = pytest.importorskip("ppk2_api.ppk2_api")
pytest.importorskip("pyjls")


class FakeDriver:
    """pyjoulescope_driver.Driver's methods that the recorders call, one JS220 attached."""

    def __init__(self, paths=("u/js220/000415",)):
        self.paths = list(paths)
        self.published: dict[str, object] = {}
        self.subscribers: dict[str, list] = {}
        self.opened: list[str] = []
        self.finalized = False

    def device_paths(self, timeout=None):
        return list(self.paths)

    def open(self, device_prefix, mode=None, timeout=None):
        self.opened.append(device_prefix)

    def close(self, device_prefix, timeout=None):
        self.opened.remove(device_prefix)

    def publish(self, topic: str, value, timeout=None):
        self.published[topic] = value

    def subscribe(self, topic: str, flags, fn, timeout=None):
        self.subscribers.setdefault(topic, []).append(fn)

    def unsubscribe(self, topic, fn, timeout=None):
        self.subscribers[topic].remove(fn)

    def send(self, topic: str, value: dict) -> None:
        """The device publishing ``value`` on ``topic``: every subscriber gets it."""
        for fn in list(self.subscribers.get(topic, ())):
            fn(topic, value)

    def finalize(self, timeout=None):
        self.finalized = True


class FakePpk2:
    """ppk2_api.PPK2_API's methods that the recorder calls: a PPK2 whose samples are scripted."""

    def __init__(self, port: str, **kwargs):
        self.port, self.calls, self.batches = port, [], []

    def get_modifiers(self):
        self.calls.append("get_modifiers")

    def use_source_meter(self):
        self.calls.append("use_source_meter")

    def use_ampere_meter(self):
        self.calls.append("use_ampere_meter")

    def set_source_voltage(self, mV):
        self.calls.append(("set_source_voltage", mV))

    def toggle_DUT_power(self, state):
        self.calls.append(("toggle_DUT_power", state))

    def start_measuring(self):
        self.calls.append("start_measuring")

    def stop_measuring(self):
        self.calls.append("stop_measuring")

    def get_data(self):
        return self.batches.pop(0) if self.batches else b""

    def get_samples(self, buf):
        return buf  # the batches are already (microamperes, digital bytes)


@pytest.mark.parametrize(
    ("fake", "real", "names"),
    [
        (FakeDriver, "Driver", ["device_paths", "open", "close", "publish", "subscribe", "unsubscribe", "finalize"]),
        (FakePpk2, "PPK2_API", ["__init__", "get_modifiers", "use_source_meter", "use_ampere_meter",
                                "set_source_voltage", "toggle_DUT_power", "start_measuring", "stop_measuring",
                                "get_data", "get_samples"]),
    ],
)  # fmt: skip
def test_fakes_have_the_real_signatures(fake, real, names) -> None:
    cls = getattr(driver_lib, real) if real == "Driver" else getattr(ppk2_lib, real)
    for name in names:
        fake_params = [(p.name, p.default) for p in inspect.signature(getattr(fake, name)).parameters.values()]
        real_params = [(p.name, p.default) for p in inspect.signature(getattr(cls, name)).parameters.values()]
        assert fake_params == real_params, name


def test_parse_meter() -> None:
    assert parse_meter("joulescope://") == MeterUrl("joulescope", "", None)
    assert parse_meter("joulescope://000415?rate=500000") == MeterUrl("joulescope", "000415", 500_000)
    assert parse_meter("ppk2:///dev/ttyACM0?voltage=1800") == MeterUrl("ppk2", "/dev/ttyACM0", 100_000, 1800, True)
    assert parse_meter("ppk2:///dev/ttyACM0?mode=ampere").source_mode is False
    for bad in ("joulescope://?rate=fast", "ppk2://", "ppk2:///dev/x?mode=both", "otii://x", "joulescope://?x=1"):
        with pytest.raises(UsageError):
            parse_meter(bad)


def test_joulescope_recorded_by_the_makers_recorder(tmp_path: Path) -> None:
    """The real Record, fed by the fake driver as the device would: a JLS with current, voltage
    and gpi[0], which tracer reads back (power = current x voltage, the pin's edges)."""
    path = tmp_path / "live.jls"
    d = FakeDriver()
    rec = JoulescopeRecorder(MeterUrl("joulescope", "000415", 1_000_000), str(path), d, driver_lib.Record)
    rec.start()
    assert d.published["u/js220/000415/h/fs"] == 1_000_000
    assert d.published["u/js220/000415/s/i/range/mode"] == "auto"
    n = 4000
    current = np.linspace(0.01, 0.03, n, dtype=np.float32)
    level = (np.arange(n) // 1000 % 2).astype(np.uint8)
    base = {"decimate_factor": 2, "sample_rate": 2_000_000, "utc": 0}  # sample ids at the 2 MHz base
    signals = {"s/i/!data": current, "s/v/!data": np.full(n, 3.3, np.float32),
               "s/gpi/0/!data": level, **{f"s/gpi/{k}/!data": np.zeros(n, np.uint8) for k in (1, 2, 3)}}  # fmt: skip
    # In blocks of 800 samples, each signal's blocks arriving in its own turn (the gpi late).
    for at in range(0, n, 800):
        for topic, data in signals.items():
            block = data[at : at + 800]
            if topic.startswith("s/gpi"):
                block = np.packbits(block, bitorder="little")
            d.send(f"u/js220/000415/{topic}", {**base, "sample_id": 2 * at, "data": block})
        if at == 1600:  # what the tap holds meanwhile: what every signal has sent (a digital
            assert rec.tap is not None and 2400 - 7 <= rec.tap.samples <= 2400  # block's last bits wait)
    window = rec.tap.window()
    rec.stop()
    assert d.finalized and not d.opened
    assert not any(d.subscribers.values())  # the recorder and the tap both stopped listening
    tapped = list(window.chunks())
    power = np.concatenate([c.power for c in tapped])
    assert len(power) >= n - 7
    np.testing.assert_allclose(power, current[: len(power)] * 3.3, rtol=1e-6)
    assert find_edges(tapped, 0).position.tolist() == [999.5, 1999.5, 2999.5]
    assert window.info.sample_rate == 1_000_000 and window.info.digital[0] == "gpi[0]"
    recording = open_recording(str(path))
    assert recording.info.meter == "Joulescope JS220" and recording.info.sample_rate == 1_000_000
    chunks = list(recording.chunks())
    power = np.concatenate([c.power for c in chunks])
    np.testing.assert_allclose(power, current * 3.3, rtol=1e-5)
    edges = find_edges(recording.chunks(), 0)
    assert edges.position.tolist() == [999.5, 1999.5, 2999.5] and edges.level.tolist() == [1, 0, 1]


def test_joulescope_digital_blocks_padded_to_whole_bytes_make_no_edge() -> None:
    """The driver packs a digital block of ``count`` samples in ``(count + 7) // 8`` bytes
    (pyjoulescope_driver's binding) without saying ``count``: the padding bits of a block that
    ends while the pin is high are not taken for a falling edge; the next block replaces them."""
    from tracer.power.live import JoulescopeTap
    from tracer.power.recording import RecordingInfo
    from tracer.power.tap import SampleTap

    d, n, size = FakeDriver(), 4000, 803
    tap = SampleTap(RecordingInfo("x.jls", "Joulescope JS110", 1e6, None, "power", None, {0: "gpi[0]"}))
    lined = JoulescopeTap(d, "u/js110/1", ["current", "voltage", "gpi[0]"], tap)
    level = ((np.arange(n) >= 1500) & (np.arange(n) < 2500)).astype(np.uint8)  # high across 1606
    for at in range(0, n, size):
        for topic, data in (("s/i/!data", np.full(n, 0.01, np.float32)), ("s/v/!data", np.full(n, 2.0, np.float32)),
                            ("s/gpi/0/!data", level)):  # fmt: skip
            block = data[at : at + size]
            if topic.startswith("s/gpi"):
                block = np.packbits(block, bitorder="little")
            d.send(f"u/js110/1/{topic}", {"sample_id": at, "decimate_factor": 1, "data": block})
    lined.close()
    assert not any(d.subscribers.values())
    chunks = list(tap.window().chunks())
    assert sum(len(c) for c in chunks) >= n - 7
    assert find_edges(chunks, 0).position.tolist() == [1499.5, 2499.5]
    np.testing.assert_allclose(np.concatenate([c.power for c in chunks]), 0.02, rtol=1e-6)


def test_no_joulescope_attached_exit_4(tmp_path: Path) -> None:
    d = FakeDriver(paths=())
    with pytest.raises(SourceUnavailable, match="no Joulescope with serial number 9 attached"):
        JoulescopeRecorder(MeterUrl("joulescope", "9"), str(tmp_path / "x.jls"), d, driver_lib.Record).start()
    assert d.finalized


def test_ppk2_recorded_to_jls(tmp_path: Path) -> None:
    """Source mode at 1.8 V: the target powered, microamperes times volts in the JLS, 8 inputs."""
    path = tmp_path / "ppk.jls"
    rec = Ppk2Recorder(MeterUrl("ppk2", "/dev/ttyACM0", 100_000, 1800, True), str(path), FakePpk2)
    rec.start()
    ppk = rec._ppk
    assert ppk.calls == ["get_modifiers", "use_source_meter", ("set_source_voltage", 1800),
                         ("toggle_DUT_power", "ON"), "start_measuring"]  # fmt: skip
    digital = [0b100 if (k // 250) % 2 else 0 for k in range(1000)]
    ppk.batches += [([1000.0] * 333, digital[:333]), ([2000.0] * 667, digital[333:])]
    deadline = time.monotonic() + 5
    while rec.samples < 1000 and time.monotonic() < deadline:
        time.sleep(0.01)
    rec.stop()
    assert ppk.calls[-1] == "stop_measuring"
    recording = open_recording(str(path))
    assert recording.info.sample_rate == 100_000 and recording.info.quantity == "power"
    power = np.concatenate([c.power for c in recording.chunks()])
    np.testing.assert_allclose(power[:333], 1000e-6 * 1.8, rtol=1e-6)
    np.testing.assert_allclose(power[333:1000], 2000e-6 * 1.8, rtol=1e-6)
    edges = find_edges(recording.chunks(), 2)
    assert edges.position.tolist() == [249.5, 499.5, 749.5]
    # What the tap held while it recorded (tracer live shows energy from it): the same samples.
    window = rec.tap.window()
    assert window.info.samples == 1000 and window.info.first_sample == 0
    tapped = list(window.chunks())
    np.testing.assert_allclose(np.concatenate([c.power for c in tapped]), power[:1000], rtol=1e-6)
    assert find_edges(tapped, 2).position.tolist() == [249.5, 499.5, 749.5]


def test_a_source_that_cannot_open_stops_the_meter_started_for_it() -> None:
    """``record``/``live --power`` start the meter before the source (it covers the run): a source
    that then fails to open must not leave the meter recording."""
    from tracer.cli.cmd_record import open_beside_meter
    from tracer.errors import SourceUnavailable

    class Meter:
        stopped = False

        def stop(self) -> None:
            self.stopped = True

    class Unreachable:
        def open(self) -> None:
            raise SourceUnavailable("serial:///dev/ttyNONE: no such port")

    meter = Meter()
    with pytest.raises(SourceUnavailable):
        open_beside_meter(Unreachable(), meter)  # type: ignore[arg-type]
    assert meter.stopped
