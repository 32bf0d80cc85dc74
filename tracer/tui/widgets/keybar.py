"""The key bar at the bottom: the keys used most, always the same.

Not Textual's ``Footer``: it rebuilds its key widgets on every focus change (a repaint each time),
and with Textual 8.2.8 the replaced widgets stayed alive, so memory grew with every tab switch
(measured: about 650 ``FooterKey`` widgets after 50 switches).

When the bar is narrow, keys go from the middle of the list (the least used first), never
``?`` and ``q``: help and quit are on screen at any size.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tracer.tui import palette as pal

REPLAY_KEYS = (
    ("space", "Pause"),
    ("← →", "Inference"),
    ("n N", "Finding"),
    ("+ -", "Speed"),
    ("/", "Filter"),
    ("1-5", "Views"),
    ("e", "Export"),
    ("p", "Shot"),
    ("?", "Help"),
    ("q", "Quit"),
)
LIVE_KEYS = tuple(k for k in REPLAY_KEYS if k[0] != "+ -")
KEPT = ("?", "q")  # on the bar at any width
# Which keys go first when the bar is too narrow for all (the palette's hint, then these).
DROPPED_FIRST = ("p", "e", "+ -", "/", "n N", "1-5", "space", "← →")
PALETTE = "  ctrl+p palette"


def _width(keys: tuple[tuple[str, str], ...]) -> int:
    return sum(len(key) + len(label) + 3 for key, label in keys)


def key_text(mode: str, width: int | None = None) -> Text:
    """The bar's text for ``live`` or ``replay``, as many keys as fit ``width`` cells (all if None)."""
    keys = LIVE_KEYS if mode == "live" else REPLAY_KEYS
    palette = True
    if width is not None:
        palette = _width(keys) + len(PALETTE) <= width
        for key in DROPPED_FIRST:
            if palette or _width(keys) <= width:
                break
            keys = tuple(k for k in keys if k[0] != key)
    text = Text(no_wrap=True, overflow="ellipsis")
    for key, label in keys:
        text.append(f" {key} ", style=f"bold {pal.ACCENT}")
        text.append(f"{label} ", style=pal.TEXT)
    if palette:
        text.append("  ctrl+p ", style=f"bold {pal.ACCENT}")
        text.append("palette", style=pal.MUTED)
    return text


class KeyBar(Static):
    """One line of keys, as many as fit (``?`` and ``q`` always)."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $panel; }
    """

    def __init__(self, mode: str, *, id: str | None = None) -> None:
        super().__init__(key_text(mode), id=id)
        self._mode = mode
        self._fitted: int | None = None

    def on_resize(self) -> None:
        """Fit the keys to the new width (drawn again only when the width changed)."""
        if self.size.width != self._fitted:
            self._fitted = self.size.width
            self.update(key_text(self._mode, self.size.width))
