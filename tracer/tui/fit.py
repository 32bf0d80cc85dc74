"""A line that never wraps: pieces that say less, then go, the least important first."""

from __future__ import annotations

import dataclasses

from rich.text import Text

from tracer.tui import palette as pal


@dataclasses.dataclass
class Piece:
    """Part of a status line: ``priority`` 0 always stays, higher ones go first; ``short`` is what
    it says when room is scarce (before anything goes).
    """

    priority: int
    text: Text
    short: Text | None = None


SEP = "  │  "


def fit(pieces: list[Piece], width: int, sep: str = SEP) -> Text:
    """The pieces joined by separators, fitted to ``width``: the pieces say their short form (the
    least important first) until it fits, then (above priority 0) go, the least important first;
    at the end the line is cut with an ellipsis.
    """
    texts: list[Text | None] = [p.text for p in pieces]

    def length() -> int:
        shown = [t for t in texts if t is not None]
        return sum(len(t) for t in shown) + len(sep) * max(0, len(shown) - 1)

    order = sorted(range(len(pieces)), key=lambda i: (-pieces[i].priority, -i))
    for i in order:  # first every piece says less ...
        if length() > width and pieces[i].short is not None:
            texts[i] = pieces[i].short
    for i in order:  # ... then the least important go
        if length() > width and pieces[i].priority > 0:
            texts[i] = None
    out = Text(no_wrap=True, overflow="ellipsis")
    for n, text in enumerate(t for t in texts if t is not None):
        if n:
            out.append(sep, style=pal.MUTED)
        out.append_text(text)
    out.truncate(width, overflow="ellipsis")
    return out


def flow(pieces: list[Text], width: int, sep: str = "  ") -> Text:
    """The pieces on as many lines as they take, a line broken only between pieces: a value
    keeps its unit (``p50 1.041 ms``, not ``p50 1.041`` / ``ms``).
    """
    out = Text()
    used = 0
    for piece in pieces:
        if not len(piece):
            continue
        if used and used + len(sep) + len(piece) > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(sep)
            used += len(sep)
        out.append_text(piece)
        used += len(piece)
    return out
