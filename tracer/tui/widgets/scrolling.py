"""Scroll views that lay out without repainting: a layout that changes nothing of theirs is a no-op.

Textual's ``ScrollView`` updates and repaints its scrollbars at every layout of the screen, also
when neither its size nor what it scrolls changed: it compares the container size the layout
gives it with the one it derives itself, and the two never agree. The scrollbar's repaint is
asked for after the layout's paint, so every layout (a tab switch) is followed by a second paint,
a frame later (up to one frame period, ~17 ms, of waiting, plus the paint itself). Its vertical
scrollbar draws its lines once per look (:class:`SteadyScrollBar`).

Textual also refuses a scroll while the view shows no scrollbar, and the layout that shows it (after
new lines or rows) may come after the view asked to scroll, even after its ``call_after_refresh``
on a busy machine. So a view says where it wants to be (:meth:`SteadyScrollView.scroll_wanted`)
and is put there again when its scrollbar appears.
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip


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

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """The scrollbar just appeared: a scroll asked for before it was refused, so ask again.

        Not from here, in the middle of Textual's update of the scrollbars (the bar may not be
        mounted yet, and a bar changed before its mount keeps lines drawn before): once it is done.
        """
        if shown:
            self.call_later(self.scroll_wanted)

    def scroll_wanted(self) -> None:
        """Scroll to where the view wants to be (its cursor, its newest line); none by default."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's, made as Textual makes it, but a :class:`SteadyScrollBar`."""
        if self._vertical_scrollbar is None:
            bar = SteadyScrollBar(vertical=True, name="vertical", thickness=self.scrollbar_size_vertical)
            bar.display = False
            self.app._start_widget(self, bar)  # (Textual's own step when it makes one)
            self._vertical_scrollbar = bar
        return self._vertical_scrollbar


class SteadyVerticalScroll(VerticalScroll):
    """A ``VerticalScroll`` (a box of widgets) whose layout is skipped when it is the very same as
    the last time (see :class:`SteadyScrollView`): the layer detail's box, on the overview.
    """

    _laid_out_as: tuple[Size, Size, Size, Size] | None = None

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        given = (size, virtual_size, container_size, self.virtual_size)
        if given == self._laid_out_as:
            return False
        self._laid_out_as = given
        return super()._size_updated(size, virtual_size, container_size, layout)


class SteadyScrollBar(ScrollBar):
    """A scrollbar that draws its lines once per look (size, position, colours).

    Textual repaints a scrollbar whenever its view is restyled (a focus change restyles the
    view and what it holds) or laid out, and each repaint renders the bar through Rich anew:
    1-1.6 ms of the screen's thread a time, in every tab switch and sort (measured on the bench's
    capture). What it shows depends only on what Textual's ``render`` passes to the bar's
    renderer and on its size and background: with all of them as last time, its lines are too.
    """

    _look: tuple[object, ...] | None = None
    _lines: list[Strip] = []  # noqa: RUF012  (replaced, never changed in place)

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines of ``crop``, drawn again only when the look changed."""
        bar = self.render()
        look = (
            self.size,
            crop,
            self.background_colors,
            *(getattr(bar, name, None) for name in LOOK),
        )
        if look != self._look:
            self._lines = super().render_lines(crop)
            self._look = look
        return list(self._lines)


LOOK = ("virtual_size", "window_size", "position", "thickness", "vertical", "style")  # the renderer's inputs
