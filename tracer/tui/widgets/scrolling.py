"""Scroll views that lay out without repainting: a layout that changes nothing of theirs is a no-op.

Textual's ``ScrollView`` updates and repaints its scrollbars at every layout of the screen, also
when neither its size nor what it scrolls changed: it compares the container size the layout
gives it with the one it derives itself, and the two never agree. The scrollbar's repaint is
asked for after the layout's paint, so every layout (a tab switch) is followed by a second paint,
a frame later (up to one frame period, ~17 ms, of waiting, plus the paint itself).
"""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView


class SteadyScrollView(ScrollView):
    """A ``ScrollView`` whose layout is skipped when it gets the very same as the last time.

    What its scrollbars show depends on what it is given here and on its own virtual size; with
    all of them as they were, Textual's update would set every value to what it already is.
    """

    _laid_out_as: tuple[Size, Size, Size, Size] | None = None

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        given = (size, virtual_size, container_size, self.virtual_size)
        if given == self._laid_out_as:
            return False  # nothing changed: no resize to send, no scrollbar to repaint
        self._laid_out_as = given
        return super()._size_updated(size, virtual_size, container_size, layout)
