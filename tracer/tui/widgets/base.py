"""Views refresh from snapshots, and only while visible."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

    from tracer.session.snapshot import SessionSnapshot
    from tracer.tui.state import UiState


class View:
    """Mixin for widgets that show part of a snapshot.

    Textual sends ``Show``/``Hide`` when a widget enters or leaves the screen (another tab, a
    scroll); the app's refresh timer skips views that are not shown, and a view coming back asks
    for a refresh so it is never stale.
    """

    shown: bool = False
    draws: int = 0  # snapshots drawn (tests check hidden views are skipped)
    last_draw: float = float("-inf")
    drawn_version: int = -1  # the snapshot version last drawn
    drawn_choices: int = -1  # how many changes of the choices it depends on it had seen when drawn
    drawn_size: tuple[int, ...] = (-1, -1)  # its layout_size() when drawn (a new one: drawn again)
    interval: float = 0.0  # least seconds between redraws for new data: numbers changing faster are unreadable
    depends: frozenset[str] = frozenset()  # the on-screen choices (UiState fields) it shows

    @property
    def laid_out(self) -> bool:
        """In the screen's layout now: a view of a tab behind (out of the layout) or not arranged
        yet has no size to draw for; it is drawn when Textual shows it (:meth:`on_show`).
        """
        return bool(self.is_attached and self.region)  # type: ignore[attr-defined]  # View is mixed into a Textual widget

    # What of its size the view lays its text out for (drawn again when that changes): width and
    # height by default; ("width",) for a view whose height follows its text (the timeline's lanes,
    # two-line headers); () for a table that arranges its columns itself, so that a layout that
    # moves or stretches it (another view's height changed) does not redraw it.
    layout_axes: tuple[str, ...] = ("width", "height")

    def layout_size(self) -> tuple[int, ...]:
        """Its :attr:`layout_axes` of its content size now."""
        size = self.content_size  # type: ignore[attr-defined]  # View is mixed into a Textual widget
        return tuple(getattr(size, axis) for axis in self.layout_axes)

    def on_show(self) -> None:
        """Visible again: ask for a refresh now."""
        self.shown = True
        request = getattr(getattr(self, "app", None), "request_refresh", None)
        if request is not None:
            request(view=self)

    def on_resize(self) -> None:
        """A new size: draw again if the view lays its text out for it (:meth:`layout_size`)."""
        request = getattr(getattr(self, "app", None), "request_refresh", None)
        if request is not None and self.shown and self.layout_size() != self.drawn_size:
            request(view=self)

    def on_hide(self) -> None:
        """Hidden: the refresh timer skips it."""
        self.shown = False

    def update_if_changed(self, text: Text) -> None:
        """``Static.update`` only when the text differs (an unchanged panel is not repainted).

        The views that use it have a size set by the layout, not by their text, so the screen is
        repainted, not laid out again (a layout of the whole screen costs tens of milliseconds).
        """
        if text != getattr(self, "_last_text", None):
            self._last_text = text
            self.update(text, layout=False)  # type: ignore[attr-defined]  # the views with text are Static widgets

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw ``snapshot`` (called from the app's refresh, inside a batch update)."""
        raise NotImplementedError
