"""What the user chose on screen (not data): one selection every view follows, filter, sort.

The selection is an inference, a layer, a time range on the timeline (a cursor and a mark) and a
finding. Every change goes through :meth:`UiState.set`, which counts changes per field: a view
drawn before the last change of a field it shows is out of date, whether it was on screen then
or not, and is drawn again as soon as it is shown.
"""

from __future__ import annotations

import collections
import dataclasses

# The order ``s`` goes through the layers' columns (the ones shown; then the others shown, in
# the table's order).
SORT_KEYS = ("index", "p50", "p99", "max", "ratio", "jitter", "delta", "name")
FIELDS = ("layer", "inference", "cursor", "finding", "filter", "sort", "compare")
# Not a choice but asked for with them: the session's own state changed by a key (pause, speed,
# a step): the status bar shows it at once. Other keys leave the status bar to its own pace.
SESSION = "session"


@dataclasses.dataclass
class UiState:
    """Selections shared by the views.

    Attributes:
        layer: The selected layer index (None: none yet).
        inference: The pinned inference number (None: follow the newest).
        ordinal: Its position in the stream, when known (an inference number can repeat).
        cursor: The timeline's time cursor, in cycles (None: not placed).
        mark: The other end of the measured range, in cycles (None: no range).
        finding: The selected finding, as (id, layer) (None: none; ``n``/``N`` then go through all).
        filter: Layer filter text.
        sort: Sort key of the layers table (one of :data:`SORT_KEYS`).
        reverse: Reverse the sort.
        compare: The inference marked to compare the shown one with, as (number, position in the
            stream) (None: none; key ``c``).
        changes: Per field of :data:`FIELDS`, how many times it changed.
    """

    layer: int | None = None
    inference: int | None = None
    ordinal: int | None = None
    cursor: int | None = None
    mark: int | None = None
    finding: tuple[str, int | None] | None = None
    filter: str = ""
    sort: str = "index"
    reverse: bool = False
    compare: tuple[int, int | None] | None = None
    changes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)

    def set(self, **values: object) -> set[str]:
        """Change fields; returns the :data:`FIELDS` that changed (``ordinal`` counts as
        ``inference``, ``mark`` as ``cursor``, ``reverse`` as ``sort``).
        """
        group = {"ordinal": "inference", "mark": "cursor", "reverse": "sort"}
        changed: set[str] = set()
        for name, value in values.items():
            if getattr(self, name) != value:
                setattr(self, name, value)
                changed.add(group.get(name, name))
        for name in changed:
            self.changes[name] += 1
        return changed

    def generation(self, fields: frozenset[str]) -> int:
        """How many changes ``fields`` have seen (a view compares it with what it drew)."""
        return sum(self.changes[name] for name in fields)
