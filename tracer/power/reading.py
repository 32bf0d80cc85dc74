"""A power recording opened by the reader its file asks for (the readers, and the recording they
all give, live apart: :mod:`tracer.power.recording` is the vocabulary they share).
"""

from __future__ import annotations

from pathlib import Path

from tracer.errors import CaptureError, reading_file
from tracer.power.csv_files import open_csv
from tracer.power.jls import JlsRecording
from tracer.power.recording import PowerRecording


def open_recording(path: str, supply_voltage: float | None = None) -> PowerRecording:
    """Open a power recording, the reader chosen by the file's name and first bytes.

    Args:
        path: A Joulescope ``.jls``, a PPK2 CSV export or a plain CSV.
        supply_voltage: Volts, to turn a recording of current only into power.

    Raises:
        CaptureError: The file is missing or not a recording tracer reads (exit 3).
        UsageError: A recording of current only without ``supply_voltage`` (exit 2).
    """
    p = Path(path)
    with reading_file(path, "a power recording", CaptureError), p.open("rb") as f:
        head = f.read(16)
    if head.startswith(b"\xd3tagfmt ") or p.suffix.lower() == ".jls":
        return JlsRecording(path, supply_voltage)
    if p.suffix.lower() in (".otii", ".otii3"):
        raise CaptureError(
            f"{path}: Otii projects are read through Qoitech's otiio library, which needs Python 3.12; "
            "export the recording from Otii as CSV, with a header naming time, current, voltage and the "
            "digital input (docs/energy.md, 'Which meters and files')"
        )
    return open_csv(path, supply_voltage)
