"""Which power recording goes with which capture (``tracer ingest --power [PATTERN]``).

``tracer record --power`` and ``tracer demo --power`` write the meter's recording beside the
capture with its name: ``run.trace`` and ``run.jls``. That is the default pairing. A pattern
names another place: ``{stem}`` is the capture's name without its extension, ``{name}`` its
whole name, ``{dir}`` its folder; a relative result is taken from the capture's folder
(``meter/{stem}.csv``: a folder ``meter`` beside the captures).

A capture whose recording is not there is ingested without energy (its energy columns are null:
not every capture of a fleet is metered); a recording that is there but cannot be aligned with
its capture fails that capture (exit 3, the errors table), never a silent misalignment.
"""

from __future__ import annotations

import dataclasses
import os
import string

from tracer.errors import UsageError

BESIDE = "{stem}.jls"  # what `tracer record --power` writes
FIELDS = {"stem", "name", "dir"}


@dataclasses.dataclass(frozen=True)
class PowerPairing:
    """How each capture finds its power recording, and how to read one.

    Attributes:
        pattern: Where the recording of a capture is (see the module docstring).
        supply_voltage: Volts, for recordings of current only (``--supply-voltage``).
        meter_input: The meter's digital input of the sync pin (``--sync-input``; None: what the
            firmware says).
    """

    pattern: str = BESIDE
    supply_voltage: float | None = None
    meter_input: int | None = None

    def __post_init__(self) -> None:
        try:
            used = {f for _text, f, _spec, _conv in string.Formatter().parse(self.pattern) if f is not None}
        except ValueError as exc:
            raise UsageError(f"--power {self.pattern!r}: not a pattern ({exc})") from None
        unknown = used - FIELDS
        if unknown or not used:
            raise UsageError(
                f"--power {self.pattern!r}: a pattern names the recording by the capture's {{stem}}, {{name}} "
                f"or {{dir}} (e.g. '{BESIDE}' or 'meter/{{stem}}.csv')"
                + (f"; unknown: {', '.join(sorted('{' + u + '}' for u in unknown))}" if unknown else "")
            )

    def path_for(self, capture: str) -> str:
        """The recording's path for ``capture`` (it may not exist)."""
        folder, name = os.path.split(capture)
        stem = os.path.splitext(name)[0]
        found = self.pattern.format(stem=stem, name=name, dir=folder or ".")
        return found if os.path.isabs(found) else os.path.join(folder, found)
