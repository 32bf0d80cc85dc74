"""What the user chose on screen (not data): selection, filter, sort, zoom."""

from __future__ import annotations

import dataclasses

SORT_KEYS = ("index", "p50", "p99", "max", "ratio", "jitter", "name")


@dataclasses.dataclass
class UiState:
    """Selections shared by the views.

    Attributes:
        layer: The selected layer index (None: none yet).
        inference: The pinned inference number (None: follow the newest).
        filter: Layer filter text.
        sort: Sort key of the layers table (one of :data:`SORT_KEYS`).
        reverse: Reverse the sort.
    """

    layer: int | None = None
    inference: int | None = None
    filter: str = ""
    sort: str = "index"
    reverse: bool = False
