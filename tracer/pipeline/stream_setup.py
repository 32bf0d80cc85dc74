"""What a stream's header says about decoding it, read once: :class:`StreamSetup`.

The one rule for TPIU framing (a ``.trace`` capture's header, or a live source's, is trusted;
another tool's raw file is detected) and the checks of the clock and source ID the header gives.
A leaf module: ``tracer decode`` reads it without the telemetry decoder.
"""

from __future__ import annotations

import dataclasses

from tracer.capture.metadata import CaptureMetadata
from tracer.decode.tpiu import TpiuMode

MAX_TPIU_ID = 0x6F  # TPIU source IDs 0x70-0x7F are reserved, 0 is the null ID


@dataclasses.dataclass(frozen=True)
class StreamSetup:
    """How one stream is decoded.

    Attributes:
        tpiu: TPIU deframing: ON, OFF, or AUTO (detected from the first 64 KiB).
        tpiu_id: The TPIU source ID carrying ITM.
        clock_hz: The clock the timestamps count until the firmware says (the header's).
        source: Where the bytes come from (for the decoders' messages).
        warnings: What was wrong in the header (a source ID out of range, replaced).
    """

    tpiu: TpiuMode = TpiuMode.AUTO
    tpiu_id: int = 1
    clock_hz: int | None = None
    source: str = ""
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        metadata: CaptureMetadata,
        *,
        trusted: bool,
        source: str = "",
        tpiu: TpiuMode = TpiuMode.AUTO,
        tpiu_id: int | None = None,
    ) -> StreamSetup:
        """The setup a header asks for.

        Args:
            metadata: The header (of a capture, or what a live source says of itself).
            trusted: Whether the header says how the stream is framed (a ``.trace`` capture or a
                live source: yes; another tool's raw file: no, its framing is detected).
            source: The name to use when the header gives none.
            tpiu: ON or OFF forces framing (``tracer decode --tpiu``); AUTO follows the header.
            tpiu_id: Forces the source ID (``tracer decode --tpiu-id``); None: the header's.
        """
        if tpiu is TpiuMode.AUTO and trusted and isinstance(metadata.tpiu, bool):
            tpiu = TpiuMode.ON if metadata.tpiu else TpiuMode.OFF
        warnings: list[str] = []
        if tpiu_id is None:
            given = metadata.tpiu_id
            if isinstance(given, int) and not isinstance(given, bool) and 0 < given <= MAX_TPIU_ID:
                tpiu_id = given
            else:
                warnings.append(f"capture header names TPIU source {given!r}, not 1..111; using 1")
                tpiu_id = 1
        clock = metadata.cpu_hz
        clock_hz = clock if isinstance(clock, int) and not isinstance(clock, bool) and clock > 0 else None
        return cls(tpiu, tpiu_id, clock_hz, metadata.source or source, tuple(warnings))
