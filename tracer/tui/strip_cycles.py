"""Textual's strips without the reference cycles that made the live screen's memory grow.

A Textual ``Strip`` (one painted line) remembers what its ``extend_cell_length``,
``crop_extend`` and ``divide`` returned. When the answer is the strip itself (already the width
asked for; divided at its own end), it remembers itself: a reference cycle. Such a strip is not
freed when the screen lets go of it but only by a garbage collection of its generation, and the
lines the screen keeps for a while are in an old one, collected about every 100 s with the app's
thresholds (see ``_settle_garbage_collector`` in :mod:`tracer.tui.app`). Fed 100,000 records/s
(``benchmarks/bench_tui.py``), 15,000 to 45,000 objects (strips, their segments and caches) were
left over every 5 s, Python's allocator took a new 1 MB arena every ten seconds or so (39 to 53 in
two minutes), and a collection then left them fragmented.

:func:`install` answers those three calls without remembering the strip itself: the same strip
back, nothing kept. Every other answer is Textual's own (and remembered as before). Textual is
pinned (pyproject.toml); ``tests/test_tui_strip_cycles.py`` checks the answers against Textual's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.style import Style
from textual.strip import Strip

_ORIGINAL = "_tracer_original"  # where an installed method keeps Textual's


def install() -> None:
    """Replace the three methods of Textual's ``Strip`` (once; again is a no-op)."""
    for name, make in (
        ("extend_cell_length", _extend_cell_length),
        ("crop_extend", _crop_extend),
        ("divide", _divide),
    ):
        method = getattr(Strip, name)
        if not hasattr(method, _ORIGINAL):
            replacement = make(method)
            setattr(replacement, _ORIGINAL, method)
            setattr(Strip, name, replacement)


def installed() -> bool:
    """Whether :func:`install` has run."""
    return hasattr(Strip.crop_extend, _ORIGINAL)


def _extend_cell_length(textual: Callable[..., Strip]) -> Callable[..., Strip]:
    def extend_cell_length(self: Strip, cell_length: int, style: Style | None = None) -> Strip:
        if self.cell_length == cell_length:
            return self  # (Textual's answer too, which it would remember)
        return textual(self, cell_length, style)

    extend_cell_length.__doc__ = textual.__doc__
    return extend_cell_length


def _crop_extend(textual: Callable[..., Strip]) -> Callable[..., Strip]:
    def crop_extend(self: Strip, start: int, end: int, style: Style | None) -> Strip:
        if start == 0 and end == self.cell_length:
            return self  # (extended to its own length and cropped to all of it: itself)
        return textual(self, start, end, style)

    crop_extend.__doc__ = textual.__doc__
    return crop_extend


def _divide(textual: Callable[..., Sequence[Strip]]) -> Callable[..., Sequence[Strip]]:
    def divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
        cuts = list(cuts)
        if [cut for cut in cuts if cut <= self.cell_length] == [self.cell_length]:
            return [self]  # (cut at its own end only: itself)
        return textual(self, cuts)

    divide.__doc__ = textual.__doc__
    return divide


def original(name: str) -> Callable[..., Any]:
    """Textual's own method ``name`` of ``Strip`` (tests compare against it)."""
    method = getattr(Strip, name)
    return getattr(method, _ORIGINAL, method)
