"""What a capture knows about where its bytes came from."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

import tracer


@dataclasses.dataclass
class CaptureMetadata:
    """The header of a capture. Unknown values stay ``None``; nothing is guessed.

    Attributes:
        source: The source URL the bytes came from.
        encoding: ``"itm"`` for ITM/DWT packets (SWO, UART transport), ``"text"`` for a text log.
        tpiu: True if the stream is TPIU-formatted, False if not, None to detect.
        tpiu_id: The TPIU source ID that carries ITM.
        cpu_hz: The core clock, the unit of DWT CYCCNT and of our telemetry timestamps.
        swo_hz: The SWO bit rate, when the source is SWO.
        ts_prescaler: ITM local-timestamp prescaler (1, 4, 16 or 64).
        ts_clock: ``"cpu"`` or ``"swo"``: which clock drives ITM local timestamps.
        firmware_hash: A hash of the firmware image, when known.
        elf_build_id: The ELF build ID, when known.
        notes: Free text for the humans.
        created: ISO-8601 time the capture was started.
        tool: The tracer version that wrote it.
        extra: Further keys (launcher details, simulated-data labels); kept verbatim.
    """

    source: str = ""
    encoding: str = "itm"
    tpiu: bool | None = None
    tpiu_id: int = 1
    cpu_hz: int | None = None
    swo_hz: int | None = None
    ts_prescaler: int = 1
    ts_clock: str = "cpu"
    firmware_hash: str | None = None
    elf_build_id: str | None = None
    notes: str = ""
    created: str = ""
    tool: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the metadata as a JSON-ready dict."""
        data = dataclasses.asdict(self)
        extra = data.pop("extra")
        data.update(extra)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaptureMetadata:
        """Build metadata from a header dict, keeping unknown keys in ``extra``."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**known, extra=extra)

    def stamped(self) -> CaptureMetadata:
        """Return a copy with ``created`` and ``tool`` filled in if empty."""
        return dataclasses.replace(
            self,
            created=self.created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            tool=self.tool or f"tracer {tracer.__version__}",
        )

    def merged(self, patch: dict[str, Any]) -> CaptureMetadata:
        """Return a copy with the keys of ``patch`` applied (a METADATA chunk)."""
        data = self.to_json()
        data.update(patch)
        return CaptureMetadata.from_json(data)
