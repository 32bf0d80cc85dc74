"""The Textual app of ``tracer live`` and ``tracer replay``: one screen over one :class:`Session`.

The session decodes in a thread worker; the app never touches its data except through
:meth:`Session.snapshot`, called by one timer (10 Hz by default) that updates every visible view
inside one ``batch_update`` (one repaint). Views on hidden tabs are skipped; a view drawn before
the last change of what it shows (new data, or the selection changed meanwhile) is drawn again as
soon as it is shown or resized. The timer pauses while the help screen covers the app's.

What the user chose is one :class:`~tracer.tui.state.UiState` (inference, layer, cursor and range,
finding) that every view follows; :meth:`TracerApp.select` is the only way it changes, and
:mod:`tracer.tui.navigation` says where a key goes. Keys and navigation live in
:mod:`tracer.tui.actions`.

One module although over 400 lines: the app's composition, timers and worker messages (its key
actions are in actions.py).
"""

from __future__ import annotations

import functools
import gc
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.terminal_theme import TerminalTheme
from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.filter import ANSIToTruecolor
from textual.reactive import Reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input

from tracer.session.engine import Session
from tracer.session.ring import InferenceRecord
from tracer.session.snapshot import SessionSnapshot
from tracer.tui import keys, strip_cycles
from tracer.tui.actions import Actions
from tracer.tui.collections_held import CollectionsHeld
from tracer.tui.navigation import shown
from tracer.tui.state import SESSION, UiState
from tracer.tui.truecolor import CachedTruecolor
from tracer.tui.widgets.base import View
from tracer.tui.widgets.console import ConsoleView
from tracer.tui.widgets.findings import FindingsView, summary_text
from tracer.tui.widgets.keybar import KeyBar
from tracer.tui.widgets.latency import LatencyPlot
from tracer.tui.widgets.layer_detail import LayerDetail
from tracer.tui.widgets.layers import LayersTable
from tracer.tui.widgets.line_table import LineTable
from tracer.tui.widgets.memory import MemoryView
from tracer.tui.widgets.scrolling import SteadyVerticalScroll
from tracer.tui.widgets.spans import SpansTable
from tracer.tui.widgets.status import StatusBar
from tracer.tui.widgets.tab_bar import TabBar
from tracer.tui.widgets.timeline import InferenceHeader, Legend, TimelineView, extent_of

if TYPE_CHECKING:
    from tracer.elf.inlines import CodeLocator

TABS = {"overview": "Overview", "timeline": "Timeline", "findings": "Findings", "console": "Console", "layer": "Layer"}
NARROW = 100  # columns below which panels shrink (memory bars, table columns by priority)
ANSWER_S = 0.25  # at most this long, new data waits while the screen answers a key (released when painted)
SHORT = 32  # rows below which the overview keeps latency, memory and layers, and the findings count
HEX = re.compile(r"0x[0-9a-fA-F]+")  # a hot spot no symbol named yet
PAINT_HZ = 120  # at most this often the screen paints what changed (Textual's own: 60)


class TracerScreen(Screen[None]):
    """The app's screen: a change of focus repaints the two widgets it concerns, not the screen.

    Textual's screen repaints itself whole when its ``focused`` changes (a tab switch moves the
    focus to the table in front: a second paint of every cell, after the one the new layout asks).
    What shows focus is each widget's own style (``:focus`` borders, restyled by Textual when the
    focus moves), and the screen itself draws only its background.
    """

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    @property
    def _update_timer(self) -> Timer:
        """Textual's paint timer, at :data:`PAINT_HZ`: a paint asked for waits at most one period.

        Textual paints what changed on a 60 Hz timer it starts when something changed; an answer
        to a key takes two or three paints (the layout, then the views redrawn for what the key
        changed), each waiting up to a period for its turn.
        """
        timer = self.__dict__.get("_paint_timer")
        if timer is None:
            timer = self.set_interval(1 / PAINT_HZ, self._on_timer_update, name="screen_update", pause=True)
            self.__dict__["_paint_timer"] = timer
        return timer


class TracerApp(Actions, App[int]):
    """Status, latency, memory, layers, layer detail, timeline, findings and console of a session.

    Args:
        session: The session to show (not yet running).
        refresh_hz: Screen refreshes per second.
        run_session: Start the session's worker on mount (tests drive it themselves if False).
        export_dir: Where ``e`` writes the report and ``p`` the screenshot (default: the current directory).
        locator: The firmware ELF's symbols (``--elf``), to name the addresses of CPU hot spots.
    """

    CSS_PATH = Path(__file__).resolve().parent / "tracer.tcss"  # absolute: subclasses live elsewhere
    TITLE = "tracer"
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings()

    def __init__(
        self,
        session: Session,
        *,
        refresh_hz: float = 10.0,
        run_session: bool = True,
        export_dir: str | Path | None = None,
        locator: CodeLocator | None = None,
    ) -> None:
        super().__init__()
        self.locator = locator  # --elf: names the CPU hot spots' addresses
        strip_cycles.install()  # lines freed when let go of, not at a rare collection (see the module)
        self._cache_truecolor()
        self.session = session
        self.ui = UiState()
        self.refresh_hz = refresh_hz
        self.run_session = run_session
        self.export_dir = Path(export_dir) if export_dir is not None else None
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            self.animation_level = "none"  # a monitor should snap, not slide
        self.snapshot: SessionSnapshot | None = None
        # Set by a stop signal (tracer.cli.screen); the refresh timer honours it too, because an
        # exit asked of Textual while the app is still starting up can be lost.
        self.exit_requested: int | None = None
        self.last_export: Path | None = None
        self.last_screenshot: Path | None = None
        self.refreshes = 0
        self.active_tab = "overview"
        self._views: list[View] = []
        self._pane_views: dict[str, list[View]] = {}  # per tab's pane, its views
        self._version = -1
        self._stale = False
        self._dirty = False
        self._pending_fields: set[str] = set()
        self._pending_views: set[View] = set()
        self._timer: Timer | None = None
        self._answering_until = 0.0  # a key is being answered until then (see on_event)
        self._collections = CollectionsHeld()
        self._findings_label = ""
        self._pinned: int | None = None

    def symbol_of(self, label: str) -> str:
        """A hot spot's raw address (``0x10000cd4``) as ``main+0x1c`` or ``conv [in net_run_layer+0x8]``.

        Only with ``--elf``. The session's hot spots are per address (its analysis runs without the
        ELF), so each address is named on its own, not added up per function as ``tracer report``
        does.
        """
        if self.locator is None or not HEX.fullmatch(label):
            return label
        address = int(label, 16)
        found = self.locator.image.function_at(address & ~1)
        if found is None:
            return label
        function, offset = found
        _function, inlined = self.locator.locate(address)
        name = f"{function}+{offset:#x}" if offset else function
        return f"{inlined} [in {name}]" if inlined and inlined != function else name

    def _cache_truecolor(self) -> None:
        """Textual's ANSI-to-truecolor filter, the same output for less work (see :mod:`tracer.tui.truecolor`)."""
        self._filters = [
            CachedTruecolor.like(f) if type(f) is ANSIToTruecolor else f
            for f in self._filters  # Textual's line filters (private; Textual is pinned)
        ]

    def _refresh_truecolor_filter(self, theme: TerminalTheme) -> None:
        """A new theme makes Textual a new filter: ours again."""
        super()._refresh_truecolor_filter(theme)
        self._cache_truecolor()

    # -- layout ----------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        """:class:`TracerScreen`, as Textual's default screen."""
        return TracerScreen(id="_default")

    def compose(self) -> ComposeResult:
        """Status on top, four tabs, keys at the bottom."""
        yield StatusBar(id="status")
        yield TabBar({name: f"{n} {title}" for n, (name, title) in enumerate(TABS.items(), 1)}, id="tabs")
        # One pane per tab; only the one in front is laid out and drawn (a key lays out and paints
        # what is shown, never the views behind it).
        with Container(id="views"):
            with Vertical(id="overview", classes="pane"):
                with Horizontal(id="row-top"):
                    yield LatencyPlot(id="latency")
                    yield MemoryView(id="memory")
                with Vertical(id="row-layers"):
                    yield Input(
                        placeholder="filter layers by name, op or engine · enter keeps it · escape clears", id="filter"
                    )
                    yield LayersTable(id="layers")
                with Horizontal(id="row-bottom"):
                    with SteadyVerticalScroll(id="detail-box"):
                        yield LayerDetail(self.session.layer_history, id="detail")
                    yield FindingsView(id="findings-compact")
                    yield ConsoleView(self.session.console_since, id="console-compact")
            with Vertical(id="timeline", classes="pane"):
                yield InferenceHeader(id="inference-header")
                yield TimelineView(id="gantt")
                yield Legend(id="legend")
                yield SpansTable(id="spans")
            with Vertical(id="findings", classes="pane"):
                yield FindingsView(detailed=True, id="findings-full")
            with Vertical(id="console", classes="pane"):
                yield ConsoleView(self.session.console_since, id="console-full")
            with SteadyVerticalScroll(id="layer", classes="pane"):
                yield LayerDetail(self.session.layer_history, detailed=True, id="detail-full")
        yield Input(placeholder="go to inference number · enter goes · escape cancels", id="goto")
        yield Input(placeholder="search · enter finds the next · escape closes", id="search")
        yield KeyBar(self.session.mode, id="keys")

    def on_mount(self) -> None:
        """Start the worker and the refresh timer."""
        if self.exit_requested is not None:  # a stop signal came while Textual was starting: nothing to show
            self.exit(self.exit_requested)
            return
        self.title = f"tracer {self.session.mode} · {self.session.source}"
        for field in self.query(Input):
            field.cursor_blink = False
        self._views = [w for w in self.query("*") if isinstance(w, View)]
        self._pane_views = {
            pane.id or "": [w for w in pane.query("*") if isinstance(w, View)] for pane in self.query(".pane")
        }
        self._timer = self.set_interval(1 / self.refresh_hz, self.refresh_views)
        if self.run_session:
            self.run_worker(self.session.run, thread=True, group="session", name="decode", exit_on_error=False)
        self.query_one("#layers", LayersTable).focus()
        self._fit_layout()
        self.refresh_views(force=True)
        self.call_after_refresh(self._started)

    def _started(self) -> None:
        """The first paint is done: make what a key would otherwise make on the spot."""
        self.prepare_help()
        _settle_garbage_collector()

    def on_unmount(self) -> None:
        """Ask the worker to stop (the caller closes the session)."""
        self._collections.resume()
        self.session.stop()

    def on_resize(self, event: events.Resize) -> None:
        """Lay out by priority for the new size (see the stylesheet's ``-narrow`` and ``-short``)."""
        self._fit_layout(event.size.width, event.size.height)

    def _fit_layout(self, width: int | None = None, height: int | None = None) -> None:
        width = self.size.width if width is None else width
        height = self.size.height if height is None else height
        self.screen.set_class(width < NARROW, "-narrow")
        self.screen.set_class(height < SHORT, "-short")

    # -- refreshing ------------------------------------------------------------------------------
    def request_refresh(self, *fields: str, view: View | None = None) -> None:
        """Redraw soon what depends on the changed on-screen choices ``fields`` (and ``view``).

        A user action redraws only the views it affects, so a key is answered quickly however
        fast the data moves; every other view keeps its own pace.
        """
        self._pending_fields.update(fields)
        if view is not None:
            self._pending_views.add(view)
        if not self._dirty:
            self._dirty = True
            self.call_after_refresh(self._flush_requests)

    def _flush_requests(self) -> None:
        fields, views = set(self._pending_fields), set(self._pending_views)
        self._pending_fields.clear()
        self._pending_views.clear()
        self._dirty = False
        self.refresh_views(fields=fields, views=views)
        self.call_after_refresh(self._answered)

    def _answered(self) -> None:
        """The screen has painted its answer to a key: decode and draw new data again.

        Not while a redraw the answer asked for is still to come (its own call follows it). A key
        that asks no redraw (zoom, help) is answered when the hold ends by itself (:data:`ANSWER_S`).
        """
        if self._dirty or not self._answering_until:
            return
        self._answering_until = 0.0
        self._collections.resume()
        self.session.release_ui_hold()

    async def on_event(self, event: events.Event) -> None:
        """A key or a click: until the screen has answered (at most :data:`ANSWER_S`), the decoder
        stands aside, views wait with new data, so the answer paints only what the key changed,
        and no garbage collection starts (see :class:`CollectionsHeld`).
        """
        if isinstance(event, (events.Key, events.MouseDown)):
            self._answering_until = time.monotonic() + ANSWER_S
            self._collections.hold(ANSWER_S)
            self.session.hold_for_ui(ANSWER_S)
        await super().on_event(event)

    def refresh_views(
        self, force: bool = False, fields: set[str] | None = None, views: set[View] | None = None
    ) -> None:
        """Take a snapshot and update visible views in one batch.

        Args:
            force: Redraw every visible view.
            fields: On-screen choices that changed: redraw the views showing them.
            views: Views to redraw (just shown or resized).
        """
        if self.exit_requested is not None:
            self.exit(self.exit_requested)
            return
        answering = time.monotonic() < self._answering_until
        if answering and not (force or fields or views):
            self._stale = True  # new data waits for the answer to a key; the next tick draws it
            return
        snapshot = self.session.snapshot()
        new_data = snapshot.version != self._version
        asked = bool(fields or views)
        if not (force or new_data or asked or self._stale or self._resized()):
            return
        self._version = snapshot.version
        self.snapshot = snapshot
        if self.ui.layer is None and snapshot.layers:
            self.ui.layer = snapshot.layers[0].index
        now = time.monotonic()
        stale = False
        drawn = 0
        views = views or set()
        with self.batch_update():
            self._label_findings_tab(snapshot)
            for view in self._views:
                status = isinstance(view, StatusBar)
                # Not laid out (a tab behind; not attached yet, or any more: a quit by a signal tears
                # the screen down while a redraw is pending): nothing to draw into.
                if not (view.shown or status) or not view.laid_out:
                    continue
                behind = view.drawn_version != snapshot.version
                # New data waits for the view's own pace, also when it was just shown again: the
                # key that showed it is answered with what it drew (at most its pace old) and the
                # next ticks bring it up to date, instead of drawing every view at once.
                due = behind and (
                    (now - view.last_draw >= view.interval and not answering)
                    or (view in views and view.drawn_version < 0)
                )
                choices = self.ui.generation(view.depends)
                size = view.layout_size()
                changed = choices != view.drawn_choices or size != view.drawn_size  # what it shows moved
                if force or due or changed or (status and SESSION in (fields or ())):
                    drawn += 1
                    view.show_snapshot(snapshot, self.ui)
                    view.draws += 1
                    view.last_draw = now
                    view.drawn_version = snapshot.version
                    view.drawn_choices = choices
                    view.drawn_size = size
                elif behind:
                    stale = True  # drawn at its own pace: a later tick brings it up to date
        self._stale = stale
        self.refreshes += bool(drawn)

    @property
    def settled(self) -> bool:
        """Nothing is waiting to be redrawn (no key's answer pending, no view behind the data)."""
        return not (self._dirty or self._stale)

    def _resized(self) -> bool:
        """A shown view's size changed since it was drawn (it lays its text out for its size)."""
        return any(view.shown and view.laid_out and view.layout_size() != view.drawn_size for view in self._views)

    def _label_findings_tab(self, snapshot: SessionSnapshot) -> None:
        """The findings tab says how many there are (seen at any size, from any view)."""
        summary = summary_text(snapshot.findings)
        label = "3 Findings" + (f" ({summary.replace(' · ', ', ')})" if summary else "")
        if label != self._findings_label:
            self._findings_label = label
            self.query_one("#tabs", TabBar).set_label("findings", label)

    # -- the selection ---------------------------------------------------------------------------
    def select(self, **values: object) -> set[str]:
        """Change the selection (:class:`UiState` fields) and redraw what shows it.

        The inference chosen is pinned in the session (it stays when the ring moves on); the one
        chosen before is let go.
        """
        moves = ("inference" in values or "ordinal" in values) and "cursor" not in values
        before = self._shown_record() if moves and self.ui.cursor is not None else None
        changed = self.ui.set(**values)
        if "inference" in changed and before is not None:
            changed |= self._carry_cursor(before)
        if "inference" in changed:
            number = self.ui.inference
            if self._pinned is not None and self._pinned != number:
                self.session.unpin(self._pinned)
                self._pinned = None
            if number is not None and self.session.pin(number):
                self._pinned = number
        if changed:
            self.request_refresh(*changed)
        return changed

    def _shown_record(self) -> InferenceRecord | None:
        """The inference the selection shows (None: not held)."""
        found = shown(self.snapshot or self.session.snapshot(), self.ui)
        return found[1] if found is not None else None

    def _carry_cursor(self, before: InferenceRecord) -> set[str]:
        """Another inference is shown: the cursor (and mark) keep their place in it, or go.

        Left where they were, they named a cycle of the inference shown before (``cursor ... in
        dw3 of #1`` under inference #19). The place is kept in the layer the cursor was in (the
        same layer starts a few cycles earlier or later from one inference to the next), else
        from the inference's start.
        """
        after = self._shown_record()
        ui = self.ui
        old, new = extent_of(before), extent_of(after) if after is not None else None
        if after is None or old is None or new is None:
            return ui.set(cursor=None, mark=None)

        def carried(cycle: int | None) -> int | None:
            if cycle is None:
                return None
            span = next((s for s in before.inference.layers if s.start <= cycle < s.end), None)
            same = next((s for s in after.inference.layers if span and s.layer == span.layer), None)
            if span is not None and same is not None:
                return min(same.start + cycle - span.start, same.end - 1)
            return cycle + new[0] - old[0]

        return ui.set(cursor=carried(ui.cursor), mark=carried(ui.mark))

    # -- reacting to widgets ---------------------------------------------------------------------
    @on(LineTable.RowHighlighted, "#layers")
    def _layer_highlighted(self, event: LineTable.RowHighlighted) -> None:
        layer = self.query_one("#layers", LayersTable).layer_at_cursor()
        if layer is not None:
            self.select(layer=layer)

    @on(LineTable.RowHighlighted, "#spans")
    def _span_highlighted(self, event: LineTable.RowHighlighted) -> None:
        self.select(layer=int(event.key))
        self.query_one("#layers", LayersTable).select_layer(int(event.key))

    @on(LineTable.HeaderClicked, "#layers")
    def _header_selected(self, event: LineTable.HeaderClicked) -> None:
        sort = self.query_one("#layers", LayersTable).header_sort_key(event.column)
        if sort is None:
            return
        if sort == self.ui.sort:
            self.select(reverse=not self.ui.reverse)
        else:
            self.select(sort=sort, reverse=False)

    @on(TimelineView.LayerClicked)
    def _timeline_clicked(self, event: TimelineView.LayerClicked) -> None:
        layer = event.layer if event.layer >= 0 else self.ui.layer
        if event.inference != self._shown_number():
            self.goto_inference(event.inference, layer=layer, place_cursor=False)
        elif layer is not None:
            self.select_layer(layer)

    @on(TimelineView.CursorPlaced)
    def _cursor_placed(self, event: TimelineView.CursorPlaced) -> None:
        self.select(cursor=event.cycle)

    @on(LatencyPlot.InferenceClicked)
    def _latency_clicked(self, event: LatencyPlot.InferenceClicked) -> None:
        self.goto_inference(event.number, place_cursor=False)

    @on(FindingsView.Chosen)
    def _finding_chosen(self, event: FindingsView.Chosen) -> None:
        snapshot = self.snapshot or self.session.snapshot()
        if not 0 <= event.index < len(snapshot.findings):
            return
        finding = snapshot.findings[event.index]
        self.select(finding=(finding.id, finding.layer))
        if event.go:
            self.go_to_finding(1, from_start=True)

    @on(TabBar.Chosen)
    def _tab_chosen(self, event: TabBar.Chosen) -> None:
        if event.name in TABS and event.name != self.active_tab:
            self.show_view(event.name)

    def show_view(self, name: str) -> None:
        """Bring a tab's pane to the front; only its views are laid out and refreshed from now on.

        The panes behind are out of the layout: the compositor neither arranges nor renders them.
        A view keeps what it drew, so the pane coming back is painted from that at once, and a
        view is drawn again (when Textual shows it, laid out) only if the data or the selection
        moved meanwhile.
        """
        self.active_tab = name
        with self.batch_update():
            for pane in self.query(".pane"):
                in_front = pane.id == name
                if pane.display != in_front:  # (Textual lays the screen out again at every set, also of the same)
                    pane.display = in_front
                for view in self._pane_views.get(pane.id or "", ()):
                    view.shown = in_front
        self.query_one("#tabs", TabBar).active = name  # its label and underline, painted with the switch
        self._refocus()  # keys act on what is in front: the layers on the overview, the spans on the timeline

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.select(filter=event.value.strip())

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.query_one("#filter", Input).display = False
        self.query_one("#layers", LayersTable).focus()

    @on(Input.Submitted, "#goto")
    def _goto_submitted(self, event: Input.Submitted) -> None:
        field = self.query_one("#goto", Input)
        field.display = False
        text = event.value.strip().lstrip("#")
        field.value = ""
        self._refocus()
        if not text:
            return
        try:
            number = int(text, 0)
        except ValueError:
            self.notify(f"not an inference number: {text!r}", severity="warning", timeout=3)
            return
        self.goto_inference(number, tab="timeline")

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        """Find the next finding or console line holding the words (the field stays for the next)."""
        words = event.value.strip()
        if not words:
            self.query_one("#search", Input).display = False
            self._refocus()
            return
        snapshot = self.snapshot or self.session.snapshot()
        if self.active_tab == "findings":
            labels = {row.index: row.info.label for row in snapshot.layers}
            found = self.query_one("#findings-full", FindingsView).search(words, snapshot.findings, labels) is not None
        else:
            found = self.query_one("#console-full", ConsoleView).search(words)
        if not found:
            self.notify(
                f"no {self.active_tab[:-1] if self.active_tab == 'findings' else 'line'} holds {words!r}", timeout=3
            )

    def select_layer(self, layer: int) -> None:
        """Select a layer everywhere."""
        self.select(layer=layer)
        self.query_one("#layers", LayersTable).select_layer(layer)

    # -- command palette -------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every key's action, by name, plus Textual's own commands."""
        for key in keys.KEYS:
            name = key.action.split("(")[0]
            if name in ("faster", "slower") and self.session.mode != "replay":
                continue
            yield SystemCommand(
                f"{key.title} ({key.display})", key.help, functools.partial(self.run_action, key.action)
            )
        yield from super().get_system_commands(screen)


def _settle_garbage_collector() -> None:
    """Keep full garbage collections short and rare while data streams in.

    The screen makes a few thousand short-lived cyclic objects a second (Textual's strips and
    caches); with Python's default thresholds that triggers a full collection about every second,
    each walking every object of the app (~100 ms under load: a key press would wait for it).
    Objects that exist once the screen is up live as long as the app, so they are frozen out of
    collections, and young objects are collected in larger batches. The garbage of starting up is
    young: collecting the two young generations before freezing is enough, and does not walk every
    object of the process (which, in a process that ran other work before, costs a lot).
    """
    gc.collect(1)
    gc.freeze()
    gc.set_threshold(20_000, 20, 100)
