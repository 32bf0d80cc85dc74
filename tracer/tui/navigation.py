"""Finding one's way: which inference the selection shows, the one before or after it, the next
inference and layer that shows a finding. Pure functions of a snapshot and the selection.
"""

from __future__ import annotations

import dataclasses

from tracer.session.held import Stretch
from tracer.session.ring import InferenceRecord
from tracer.session.snapshot import SessionSnapshot
from tracer.tui.state import UiState


@dataclasses.dataclass(frozen=True)
class Target:
    """Where to go: an inference (by number, and by position when known) and a layer in it."""

    number: int
    ordinal: int | None = None
    layer: int | None = None


def shown(snapshot: SessionSnapshot, ui: UiState) -> tuple[Stretch, InferenceRecord] | None:
    """The stretch and inference the selection shows: the pinned one wherever it is held, else the
    newest. None when the pinned one is no longer held (or nothing arrived yet).
    """
    if ui.inference is None:
        ring = snapshot.ring_stretch
        return (ring, ring.records[-1]) if ring.records else None
    if ui.ordinal is not None:
        found = snapshot.locate(ordinal=ui.ordinal)
        if found is not None and found[1].number == ui.inference:
            return found
    return snapshot.locate(number=ui.inference)


def current(snapshot: SessionSnapshot, ui: UiState) -> Target | None:
    """The inference the selection is on (held or not)."""
    found = shown(snapshot, ui)
    if found is not None:
        stretch, record = found
        return Target(record.number, stretch.ordinal(stretch.records.index(record)), ui.layer)
    if ui.inference is not None:
        return Target(ui.inference, ui.ordinal, ui.layer)
    return None


def neighbour(snapshot: SessionSnapshot, ui: UiState, direction: int) -> Target | None:
    """The inference before (``direction`` -1) or after (+1) the selected one, by stream position.

    None at either end of what is known (the ring in live, the file's index in replay).
    """
    here = current(snapshot, ui)
    if here is None or here.ordinal is None:
        return None
    ordinal = here.ordinal + direction
    if ordinal < 0:
        return None
    found = snapshot.locate(ordinal=ordinal)
    if found is not None:
        return Target(found[1].number, ordinal, ui.layer)
    known = snapshot.file_inferences if snapshot.file_inferences is not None else snapshot.indexed
    if known and ordinal < known:
        return Target(-1, ordinal, ui.layer)  # in the file: the number comes with the load
    return None


def finding_index(snapshot: SessionSnapshot, ui: UiState) -> int | None:
    """The selected finding's position among the snapshot's findings (None: none selected, or gone)."""
    if ui.finding is None:
        return None
    kind, layer = ui.finding
    return next((i for i, f in enumerate(snapshot.findings) if f.id == kind and f.layer == layer), None)


def next_instance(snapshot: SessionSnapshot, ui: UiState, direction: int) -> Target | None:
    """The next (or previous) inference and layer that shows the selected finding (any finding if
    none is selected), after the selection; wraps around.
    """
    flags = snapshot.diagnosis.flags
    here = current(snapshot, ui)
    found = flags.step(finding_index(snapshot, ui), here.number if here else None, ui.layer, direction)
    if found is None:
        return None
    number, layer = found
    return Target(number, None, layer if layer is not None else ui.layer)
