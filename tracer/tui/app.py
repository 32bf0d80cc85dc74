"""The Textual app of ``tracer live`` and ``tracer replay``: one screen over one :class:`Session`.

The session decodes in a thread worker; the app never touches its data except through
:meth:`Session.snapshot`, called by one timer (10 Hz by default) that updates every visible view
inside one ``batch_update`` (one repaint). Views on hidden tabs are skipped and catch up when
shown; the timer pauses while the help overlay covers the app.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from pathlib import Path
from typing import Iterable

from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Container, Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Tab, Tabs

from tracer.errors import ExitCode, TracerError
from tracer.session.engine import Session
from tracer.session.pacing import speed_label
from tracer.session.report import default_report_path, write_session_report
from tracer.session.snapshot import SessionSnapshot
from tracer.tui import keys
from tracer.tui.help import HelpPanel
from tracer.tui.state import SORT_KEYS, UiState
from tracer.tui.widgets.base import View
from tracer.tui.widgets.console import ConsoleView
from tracer.tui.widgets.findings import FindingsView
from tracer.tui.widgets.keybar import KeyBar
from tracer.tui.widgets.latency import LatencyPlot
from tracer.tui.widgets.layer_detail import LayerDetail
from tracer.tui.widgets.layers import LayersTable
from tracer.tui.widgets.line_table import LineTable
from tracer.tui.widgets.memory import MemoryView
from tracer.tui.widgets.status import StatusBar
from tracer.tui.widgets.timeline import InferenceHeader, SpansTable, TimelineView, inference_of

TABS = {"overview": "Overview", "timeline": "Timeline", "findings": "Findings", "console": "Console"}


class TracerApp(App[int]):
    """Status, latency, memory, layers, layer detail, timeline, findings and console of a session.

    Args:
        session: The session to show (not yet running).
        refresh_hz: Screen refreshes per second.
        run_session: Start the session's worker on mount (tests drive it themselves if False).
        export_dir: Where ``e`` writes the report (default: the current directory).
    """

    CSS_PATH = Path(__file__).resolve().parent / "tracer.tcss"  # absolute: subclasses live elsewhere
    TITLE = "tracer"
    BINDINGS = keys.bindings()

    def __init__(
        self,
        session: Session,
        *,
        refresh_hz: float = 10.0,
        run_session: bool = True,
        export_dir: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.ui = UiState()
        self.refresh_hz = refresh_hz
        self.run_session = run_session
        self.export_dir = Path(export_dir) if export_dir is not None else None
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            self.animation_level = "none"  # a monitor should snap, not slide
        self.snapshot: SessionSnapshot | None = None
        self.last_export: Path | None = None
        self.refreshes = 0
        self._views: list[View] = []
        self._version = -1
        self._stale = False
        self._dirty = False
        self._pending_fields: set[str] = set()
        self._pending_views: set[View] = set()
        self._timer: Timer | None = None

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """Status on top, four tabs, keys at the bottom."""
        yield StatusBar(id="status")
        yield Tabs(*(Tab(title, id=f"tab-{name}") for name, title in TABS.items()), id="tabs")
        # The overview stays laid out underneath; the other views are panes drawn over it. Going
        # back to the overview then repaints from what is already drawn instead of laying out and
        # rendering the whole screen again.
        with Container(id="views"):
            with Vertical(id="overview", classes="pane"):
                with Horizontal(id="row-top"):
                    yield LatencyPlot(id="latency")
                    yield MemoryView(id="memory")
                with Vertical(id="row-layers"):
                    yield Input(placeholder="filter layers by name, op or engine · enter keeps it · escape clears",
                                id="filter")  # fmt: skip
                    yield LayersTable(id="layers")
                with Horizontal(id="row-bottom"):
                    yield LayerDetail(self.session.layer_history, id="detail")
                    yield FindingsView(id="findings-compact")
                    yield ConsoleView(self.session.console_since, id="console-compact")
            with Vertical(id="timeline", classes="pane over"):
                yield InferenceHeader(id="inference-header")
                yield TimelineView(id="gantt")
                yield SpansTable(id="spans")
            with Vertical(id="findings", classes="pane over"):
                yield FindingsView(detailed=True, id="findings-full")
            with Vertical(id="console", classes="pane over"):
                yield ConsoleView(self.session.console_since, id="console-full")
        yield HelpPanel(id="help")
        yield KeyBar(self.session.mode, id="keys")

    def on_mount(self) -> None:
        """Start the worker and the refresh timer."""
        self.title = f"tracer {self.session.mode} · {self.session.source}"
        self.query_one("#tabs", Tabs).can_focus = False
        self.active_tab = "overview"
        self.query_one("#filter", Input).cursor_blink = False
        self._views = [w for w in self.query("*") if isinstance(w, View)]
        self._timer = self.set_interval(1 / self.refresh_hz, self.refresh_views)
        if self.run_session:
            self.run_worker(self.session.run, thread=True, group="session", name="decode", exit_on_error=False)
        self.query_one("#layers", LayersTable).focus()
        self.refresh_views(force=True)
        self.call_after_refresh(_settle_garbage_collector)

    def on_unmount(self) -> None:
        """Ask the worker to stop (the caller closes the session)."""
        self.session.stop()

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
        self.call_after_refresh(self.session.release_ui_hold)

    async def on_event(self, event: events.Event) -> None:
        """A key or a click: the decoder stands aside (at most 0.1 s) until the screen has answered."""
        if isinstance(event, (events.Key, events.MouseDown)):
            self.session.hold_for_ui()
        await super().on_event(event)

    def refresh_views(self, force: bool = False, fields: set[str] | None = None, views: set[View] | None = None) -> None:
        """Take a snapshot and update visible views in one batch.

        Args:
            force: Redraw every visible view.
            fields: On-screen choices that changed: redraw the views showing them.
            views: Views to redraw (just shown or resized).
        """
        snapshot = self.session.snapshot()
        new_data = snapshot.version != self._version
        asked = bool(fields or views)
        if not (force or new_data or asked or self._stale):
            return
        self._version = snapshot.version
        self.snapshot = snapshot
        self.refreshes += 1
        if self.ui.layer is None and snapshot.layers:
            self.ui.layer = snapshot.layers[0].index
        now = time.monotonic()
        fields = fields or set()
        views = views or set()
        stale = False
        with self.batch_update():
            for view in self._views:
                status = isinstance(view, StatusBar)
                if not (view.shown or status):
                    continue
                behind = view.drawn_version != snapshot.version
                due = behind and now - view.last_draw >= view.interval
                wanted = view in views and behind  # shown again, or resized
                if force or due or wanted or (fields & view.depends) or (status and asked):
                    view.show_snapshot(snapshot, self.ui)
                    view.draws += 1
                    view.last_draw = now
                    view.drawn_version = snapshot.version
                elif behind:
                    stale = True  # drawn at its own pace: a later tick brings it up to date
        self._stale = stale

    # -- reacting to widgets ---------------------------------------------------------------------
    @on(LineTable.RowHighlighted, "#layers")
    def _layer_highlighted(self, event: LineTable.RowHighlighted) -> None:
        layer = self.query_one("#layers", LayersTable).layer_at_cursor()
        if layer is not None and layer != self.ui.layer:
            self.ui.layer = layer
            self.request_refresh("layer")

    @on(LineTable.HeaderClicked, "#layers")
    def _header_selected(self, event: LineTable.HeaderClicked) -> None:
        sort = self.query_one("#layers", LayersTable).header_sort_key(event.column)
        if sort is None:
            return
        if sort == self.ui.sort:
            self.ui.reverse = not self.ui.reverse
        else:
            self.ui.sort, self.ui.reverse = sort, False
        self.request_refresh("sort")

    @on(TimelineView.LayerClicked)
    def _timeline_clicked(self, event: TimelineView.LayerClicked) -> None:
        self.select_layer(event.layer)

    @on(LatencyPlot.InferenceClicked)
    def _latency_clicked(self, event: LatencyPlot.InferenceClicked) -> None:
        self.ui.inference = event.number
        self.request_refresh("inference")

    @on(Tabs.TabActivated, "#tabs")
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        name = (event.tab.id or "").removeprefix("tab-")
        if name in TABS and name != getattr(self, "active_tab", None):
            self.show_view(name)

    def show_view(self, name: str) -> None:
        """Bring a view to the front; only its views are refreshed from now on."""
        self.active_tab = name
        with self.batch_update():
            for pane in self.query(".over"):
                pane.display = pane.id == name
            # Hidden, not removed: it keeps its layout and what it last drew.
            self.query_one("#overview").styles.visibility = "visible" if name == "overview" else "hidden"
            shown: set[View] = set()
            for pane in self.query(".pane"):
                in_front = pane.id == name
                for view in pane.query("*"):
                    if isinstance(view, View):
                        view.shown = in_front
                        if in_front:
                            shown.add(view)
            # Draw the views in front now, before the first paint: one repaint, not two.
            self.refresh_views(views=shown)
        self.query_one("#tabs", Tabs).active = f"tab-{name}"
        # Keys act on what is in front: the layers on the overview, the spans on the timeline.
        target = {"overview": "#layers", "timeline": "#spans", "console": "#console-full"}.get(name)
        if target is not None:
            self.query_one(target).focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.ui.filter = event.value.strip()
        self.request_refresh("filter")

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.query_one("#filter", Input).display = False
        self.query_one("#layers", LayersTable).focus()

    def select_layer(self, layer: int) -> None:
        """Select a layer everywhere."""
        self.ui.layer = layer
        self.query_one("#layers", LayersTable).select_layer(layer)
        self.request_refresh("layer")

    # -- actions ---------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Replay speed keys only in replay."""
        if action in ("faster", "slower") and self.session.mode != "replay":
            return False
        return True

    def action_toggle_pause(self) -> None:
        """Pause or resume."""
        paused = self.session.toggle_pause()
        if paused and self.session.mode == "live":
            self.notify("the screen holds still; recording and decoding go on", title="paused", timeout=3)
        self.request_refresh("paused")

    def _ring_numbers(self) -> list[int]:
        snapshot = self.snapshot or self.session.snapshot()
        return [record.number for record in snapshot.ring]

    def _current_inference(self) -> int | None:
        snapshot = self.snapshot or self.session.snapshot()
        record = inference_of(snapshot, self.ui)
        return record.number if record is not None else None

    def action_previous_inference(self) -> None:
        """Show the inference before the one shown."""
        numbers = self._ring_numbers()
        current = self._current_inference()
        if current is None or current not in numbers:
            return
        at = numbers.index(current)
        if at > 0:
            self.ui.inference = numbers[at - 1]
        else:
            self.ui.inference = current
            self.bell()
        self.request_refresh("inference")

    def action_next_inference(self) -> None:
        """Show the next inference; at the newest of a paused replay, step to the next one."""
        numbers = self._ring_numbers()
        current = self._current_inference()
        if current is not None and current in numbers and numbers.index(current) < len(numbers) - 1:
            self.ui.inference = numbers[numbers.index(current) + 1]
        elif self.session.mode == "replay" and (self.session.paused or self.ui.inference is not None):
            self.ui.inference = None
            if not self.session.step():
                self.bell()
        else:
            self.ui.inference = None
        self.request_refresh("inference")

    def action_follow(self) -> None:
        """Follow the newest inference."""
        self.ui.inference = None
        self.request_refresh("inference")

    def action_faster(self) -> None:
        """Replay faster."""
        self.notify(f"replay speed {speed_label(self.session.faster())}", timeout=2)
        self.request_refresh("speed")

    def action_slower(self) -> None:
        """Replay slower."""
        self.notify(f"replay speed {speed_label(self.session.slower())}", timeout=2)
        self.request_refresh("speed")

    def action_filter(self) -> None:
        """Show and focus the layer filter."""
        self.action_show_tab("overview")
        field = self.query_one("#filter", Input)
        field.display = True
        field.focus()

    def action_escape(self) -> None:
        """Clear the filter (and leave it)."""
        field = self.query_one("#filter", Input)
        if field.display or self.ui.filter:
            field.value = ""
            field.display = False
            self.ui.filter = ""
            self.query_one("#layers", LayersTable).focus()
            self.request_refresh("filter")

    def action_sort_next(self) -> None:
        """Sort by the next column."""
        at = SORT_KEYS.index(self.ui.sort) if self.ui.sort in SORT_KEYS else 0
        self.ui.sort, self.ui.reverse = SORT_KEYS[(at + 1) % len(SORT_KEYS)], False
        self.notify(f"layers sorted by {self.ui.sort}", timeout=2)
        self.request_refresh("sort")

    def action_sort_reverse(self) -> None:
        """Reverse the sort."""
        self.ui.reverse = not self.ui.reverse
        self.request_refresh("sort")

    def action_zoom_in(self) -> None:
        """Timeline: zoom in."""
        self.query_one("#gantt", TimelineView).zoom_in()

    def action_zoom_out(self) -> None:
        """Timeline: zoom out."""
        self.query_one("#gantt", TimelineView).zoom_out()

    def action_zoom_reset(self) -> None:
        """Timeline: fit the inference."""
        self.query_one("#gantt", TimelineView).set_zoom(1.0)

    def action_scroll_later(self) -> None:
        """Timeline: scroll right."""
        self.query_one("#gantt", TimelineView).scroll_by_screens(0.25)

    def action_scroll_earlier(self) -> None:
        """Timeline: scroll left."""
        self.query_one("#gantt", TimelineView).scroll_by_screens(-0.25)

    def action_show_tab(self, tab: str) -> None:
        """Switch to a tab."""
        if tab in TABS and tab != self.active_tab:
            self.show_view(tab)

    def action_help(self) -> None:
        """Show every key (the refresh timer rests while the help covers the screen)."""
        panel = self.query_one("#help", HelpPanel)
        if panel.is_open:
            return
        if self._timer is not None:
            self._timer.pause()
        self._focus_before_help = self.focused
        panel.open()

    @on(HelpPanel.Closed)
    def _help_closed(self) -> None:
        if self._timer is not None:
            self._timer.resume()
        before = getattr(self, "_focus_before_help", None)
        (before or self.query_one("#layers", LayersTable)).focus()

    def action_export(self) -> None:
        """Write the report JSON in the background; say where when done."""
        path = default_report_path(self.session, self.export_dir)
        self.notify(f"writing the report to {path} ...", timeout=2)
        self.run_worker(functools.partial(self._export, path), thread=True, group="export", exit_on_error=False)

    def _export(self, path: Path) -> None:
        try:
            written = write_session_report(self.session, path)
        except TracerError as exc:
            self.call_from_thread(self.notify, str(exc), title="export failed", severity="error", timeout=8)
            return
        self.last_export = written
        self.call_from_thread(self.notify, f"report written to {written}", title="exported", timeout=8)

    async def action_quit(self) -> None:
        """Quit (exit code 0)."""
        self.exit(int(ExitCode.OK))

    def action_interrupt(self) -> None:
        """Ctrl+C: quit as an interrupt (exit code 130)."""
        self.exit(int(ExitCode.INTERRUPTED))

    # -- command palette -------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every key's action, by name, plus Textual's own commands."""
        for key in keys.KEYS:
            name = key.action.split("(")[0]
            if name in ("faster", "slower") and self.session.mode != "replay":
                continue
            yield SystemCommand(f"{key.title} ({key.display})", key.help, functools.partial(self.run_action, key.action))
        yield from super().get_system_commands(screen)


def _settle_garbage_collector() -> None:
    """Keep full garbage collections short and rare while data streams in.

    The screen makes a few thousand short-lived cyclic objects a second (Textual's strips and
    caches); with Python's default thresholds that triggers a full collection about every second,
    each walking every object of the app (~100 ms under load: a key press would wait for it).
    Objects that exist once the screen is up live as long as the app, so they are frozen out of
    collections, and young objects are collected in larger batches.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 100)
