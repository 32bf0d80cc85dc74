"""What a capture knows about where its bytes came from."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

import tracer
from tracer.limits import CLOCK_RANGE, valid_clock_hz

# What each known header key may hold; a value that is not is dropped (the default stays) and said.
_TEXT = (lambda v: isinstance(v, str), "text")
_OPTIONAL_TEXT = (lambda v: v is None or isinstance(v, str), "text or null")
_CLOCK = (lambda v: v is None or valid_clock_hz(v), CLOCK_RANGE)
_CHECKS: dict[str, tuple[Any, str]] = {
    "source": _TEXT,
    "encoding": _TEXT,
    "tpiu": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
    "tpiu_id": (
        lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 0x6F,
        "a TPIU source ID, 1..111",
    ),
    "cpu_hz": _CLOCK,
    "swo_hz": _CLOCK,
    "ts_prescaler": (lambda v: v in (1, 4, 16, 64) and not isinstance(v, bool), "1, 4, 16 or 64"),
    "ts_clock": (lambda v: v in ("cpu", "swo"), '"cpu" or "swo"'),
    "firmware_hash": _OPTIONAL_TEXT,
    "elf_build_id": _OPTIONAL_TEXT,
    "notes": _TEXT,
    "created": _TEXT,
    "tool": _TEXT,
}


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
        """Build metadata from a header dict, keeping unknown keys in ``extra``; a known key whose
        value is of the wrong kind or out of range keeps its default (see :meth:`checked`).
        """
        return cls.checked(data)[0]

    @classmethod
    def checked(cls, data: dict[str, Any]) -> tuple[CaptureMetadata, list[str]]:
        """:meth:`from_json`, and a sentence for each value dropped (``'cpu_hz' is 'fast': expected
        ...; ignored``).
        """
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        problems: list[str] = []
        for key, value in data.items():
            check = _CHECKS.get(key)
            if check is None:
                extra[key] = value
            elif check[0](value):
                known[key] = value
            else:
                problems.append(f"{key!r} is {_show(value)}: expected {check[1]}; ignored")
        return cls(**known, extra=extra), problems

    def stamped(self) -> CaptureMetadata:
        """Return a copy with ``created`` and ``tool`` filled in if empty."""
        return dataclasses.replace(
            self,
            created=self.created or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            tool=self.tool or f"tracer {tracer.__version__}",
        )

    def merged(self, patch: dict[str, Any]) -> CaptureMetadata:
        """Return a copy with the keys of ``patch`` applied (a METADATA chunk); a value of the
        wrong kind leaves the key as it was.
        """
        return self.merged_checked(patch)[0]

    def merged_checked(self, patch: dict[str, Any]) -> tuple[CaptureMetadata, list[str]]:
        """:meth:`merged`, and a sentence for each value of ``patch`` dropped."""
        applied, problems = CaptureMetadata.checked(patch)
        known = {k: v for k, v in patch.items() if k in _CHECKS and getattr(applied, k) == v}
        # The extra keys are copied shallowly, and only when the patch adds some: a capture may
        # carry thousands of patches to a large metadata, each must cost what the patch holds.
        extra = {**self.extra, **applied.extra} if applied.extra else self.extra
        return dataclasses.replace(self, **known, extra=extra), problems


def _show(value: Any) -> str:
    """A value for a message, short (a header may hold anything)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
