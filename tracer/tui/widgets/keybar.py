"""The key bar at the bottom: the keys used most, always the same.

Not Textual's ``Footer``: it rebuilds its key widgets on every focus change (a repaint each time),
and with Textual 8.2.8 the replaced widgets stayed alive, so memory grew with every tab switch
(measured: about 650 ``FooterKey`` widgets after 50 switches).
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
    ("1-4", "Views"),
    ("e", "Export"),
    ("p", "Shot"),
    ("?", "Help"),
    ("q", "Quit"),
)
LIVE_KEYS = tuple(k for k in REPLAY_KEYS if k[0] != "+ -")


def key_text(mode: str) -> Text:
    """The bar's text for ``live`` or ``replay``."""
    text = Text(no_wrap=True, overflow="ellipsis")
    for key, label in LIVE_KEYS if mode == "live" else REPLAY_KEYS:
        text.append(f" {key} ", style=f"bold {pal.ACCENT}")
        text.append(f"{label} ", style=pal.TEXT)
    text.append("  ctrl+p ", style=f"bold {pal.ACCENT}")
    text.append("palette", style=pal.MUTED)
    return text


class KeyBar(Static):
    """One line of keys."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $panel; }
    """

    def __init__(self, mode: str, *, id: str | None = None) -> None:
        super().__init__(key_text(mode), id=id)
