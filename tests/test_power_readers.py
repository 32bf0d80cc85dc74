"""Power recordings read with their makers' formats: JLS through the real pyjls (written by
pyjls's Writer, as pyjoulescope_driver's recorder does: current, voltage, gpi[n] as u1), the PPK2
CSV export (header and D0-D7 field as nRF Connect Power Profiler writes them), a plain CSV."""

from __future__ import annotations

import numpy as np
import pytest

from tracer.errors import CaptureError, UsageError
from tracer.power.reading import open_recording

pyjls = pytest.importorskip("pyjls")


def _read_all(rec, chunk=1000):
    chunks = list(rec.chunks(chunk))
    power = np.concatenate([c.power for c in chunks])
    digital = np.concatenate([c.digital for c in chunks]) if chunks[0].digital is not None else None
    assert [c.first for c in chunks] == list(range(0, len(power), chunk))
    return power, digital


def _write_jls(path, n=2500, offset_digital=0, power_signal=False):
    rng = np.random.default_rng(0)
    current = rng.uniform(0.01, 0.05, n).astype(np.float32)
    bits = (np.arange(n) // 37 % 2).astype(np.uint8)
    with pyjls.Writer(str(path)) as w:
        w.source_def(source_id=1, name="JS220-1", vendor="Jetperch", model="JS220", version="", serial_number="1")
        kw = {"source_id": 1, "signal_type": pyjls.SignalType.FSR, "sample_rate": 1000}
        if power_signal:
            w.signal_def(signal_id=1, data_type=pyjls.DataType.F32, name="power", units="W", **kw)
            w.fsr_f32(1, 0, current * 2)
        else:
            w.signal_def(signal_id=1, data_type=pyjls.DataType.F32, name="current", units="A", **kw)
            w.signal_def(signal_id=2, data_type=pyjls.DataType.F32, name="voltage", units="V", **kw)
            w.fsr_f32(1, 0, current)
            w.fsr_f32(2, 0, np.full(n, 3.0, np.float32))
        w.signal_def(signal_id=3, data_type=pyjls.DataType.U1, name="gpi[1]", units="", **kw)
        w.fsr(3, offset_digital, np.packbits(bits[: n - offset_digital], bitorder="little"))
    return current.astype(np.float64), bits


def test_jls_current_times_voltage_and_digital(tmp_path):
    path = tmp_path / "run.jls"
    current, bits = _write_jls(path)
    rec = open_recording(str(path))
    assert rec.info.meter == "Joulescope JS220"
    assert rec.info.sample_rate == 1000 and rec.info.samples == 2500
    assert rec.info.digital == {1: "gpi[1]"}
    power, digital = _read_all(rec)
    np.testing.assert_allclose(power, current * 3.0, rtol=1e-6)
    np.testing.assert_array_equal((digital >> 1) & 1, bits)


def test_jls_digital_lined_up_by_sample_id(tmp_path):
    """A digital signal starting 16 samples later is shifted by its sample_id_offset."""
    path = tmp_path / "late.jls"
    _, bits = _write_jls(path, offset_digital=16)
    _, digital = _read_all(open_recording(str(path)), chunk=700)
    assert ((digital[:16] >> 1) & 1).sum() == 0
    np.testing.assert_array_equal((digital[16:] >> 1) & 1, bits[: len(bits) - 16])


def test_jls_power_signal(tmp_path):
    path = tmp_path / "p.jls"
    current, _ = _write_jls(path, power_signal=True)
    rec = open_recording(str(path))
    assert rec.info.quantity == "power"
    np.testing.assert_allclose(_read_all(rec)[0], current * 2, rtol=1e-6)


def test_jls_damaged_file_exit_3(tmp_path):
    path = tmp_path / "bad.jls"
    path.write_bytes(b"not a jls file at all" * 10)
    with pytest.raises(CaptureError, match=r"bad\.jls: not a readable JLS file"):
        open_recording(str(path))


PPK2_HEADER = "Timestamp(ms),Current(uA),D0-D7\n"


def test_ppk2_csv_packed_digital(tmp_path):
    """nRF Connect Power Profiler's export: ms, uA, and the D0-D7 string whose first character is D0."""
    rows = [f"{k * 0.01:.2f},{1000 + k:.3f},{'10000000' if k % 3 else '01000001'}\n" for k in range(500)]
    path = tmp_path / "ppk.csv"
    path.write_text(PPK2_HEADER + "".join(rows))
    rec = open_recording(str(path), supply_voltage=3.0)
    assert rec.info.meter == "PPK2 CSV" and rec.info.sample_rate == pytest.approx(100_000)
    power, digital = _read_all(rec, chunk=128)
    np.testing.assert_allclose(power, (1000 + np.arange(500)) * 1e-6 * 3.0)
    expected = np.where(np.arange(500) % 3, 0b00000001, 0b10000010)
    np.testing.assert_array_equal(digital, expected)


def test_ppk2_csv_separate_digital_fields(tmp_path):
    header = "Timestamp(ms),Current(uA),D0,D1,D2,D3,D4,D5,D6,D7\n"
    rows = [f"{k * 0.01:.2f},5.0,0,{k % 2},0,0,0,0,0,1\n" for k in range(20)]
    path = tmp_path / "sep.csv"
    path.write_text(header + "".join(rows))
    _, digital = _read_all(open_recording(str(path), supply_voltage=1.8))
    np.testing.assert_array_equal(digital, (np.arange(20) % 2) << 1 | 0x80)


def test_ppk2_csv_needs_supply_voltage(tmp_path):
    path = tmp_path / "ppk.csv"
    path.write_text(PPK2_HEADER + "0,1,00000000\n0.01,1,00000000\n")
    with pytest.raises(UsageError, match="--supply-voltage"):
        open_recording(str(path))


def test_csv_gap_said_with_its_line(tmp_path):
    rows = [f"{k * 0.01:.2f},5.0,00000000\n" for k in range(100) if k != 70]
    path = tmp_path / "gap.csv"
    path.write_text(PPK2_HEADER + "".join(rows))
    rec = open_recording(str(path), supply_voltage=3.3)
    with pytest.raises(CaptureError, match=r"gap.csv: line 72: time 0.00071 s, expected 0.0007 s"):
        _read_all(rec, chunk=1000)


def test_csv_bad_number_said_with_its_line(tmp_path):
    rows = [f"{k * 0.01:.2f},5.0,00000000\n" for k in range(100)]
    rows[40] = "0.40,five,00000000\n"
    path = tmp_path / "bad.csv"
    path.write_text(PPK2_HEADER + "".join(rows))
    with pytest.raises(CaptureError, match=r"bad.csv: line 42: expected numbers, found '0.40,five,00000000'"):
        _read_all(open_recording(str(path), supply_voltage=3.3), chunk=30)


def test_plain_csv_units_power_and_inputs(tmp_path):
    path = tmp_path / "meter.csv"
    rows = [f"{k * 4};{k * 0.5};{k % 2}\n" for k in range(50)]
    path.write_text("# exported by a meter\ntime [us];power (mW);gpi0\n" + "".join(rows))
    rec = open_recording(str(path))
    assert rec.info.sample_rate == pytest.approx(250_000) and rec.info.quantity == "power"
    power, digital = _read_all(rec, chunk=16)
    np.testing.assert_allclose(power, np.arange(50) * 0.5e-3)
    np.testing.assert_array_equal(digital, np.arange(50) % 2)


def test_plain_csv_current_and_voltage_columns(tmp_path):
    path = tmp_path / "iv.csv"
    path.write_text("time(s),current(mA),voltage(V)\n0,10,3.0\n0.001,20,3.0\n0.002,30,2.5\n")
    power, digital = _read_all(open_recording(str(path)))
    np.testing.assert_allclose(power, [0.03, 0.06, 0.075])
    assert digital is None


def test_csv_without_time_or_current_exit_3(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(CaptureError, match=r"x.csv: line 1: expected a header with a time column"):
        open_recording(str(path))


def test_missing_file_exit_3(tmp_path):
    with pytest.raises(CaptureError, match="no such file"):
        open_recording(str(tmp_path / "none.jls"))
