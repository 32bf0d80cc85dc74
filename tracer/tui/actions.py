"""What the keys do: playback, going from inference to inference and from a finding to its
evidence, the timeline's cursor, range and zoom, the layers table, export and screenshot.

A mixin of :class:`~tracer.tui.app.TracerApp` (kept apart so the app's module is the layout and
the refresh loop); every action changes the selection through ``TracerApp.select``.

One module although over 400 lines: the screen's key actions are methods of one mixin, since
Textual binds actions by name on the app's class; each is short.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.widgets import Input

from tracer.errors import ExitCode, TracerError
from tracer.session.pacing import speed_label
from tracer.session.report import default_report_path, free_path, write_session_report
from tracer.tui.help import HelpScreen
from tracer.tui.navigation import Target, current, neighbour, next_instance, shown
from tracer.tui.state import SESSION, SORT_KEYS
from tracer.tui.widgets.layers import LayersTable
from tracer.tui.widgets.timeline import TimelineView

TRAIL = 50  # places ``backspace`` can go back to

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from tracer.session.engine import Session
    from tracer.session.snapshot import SessionSnapshot
    from tracer.tui.state import UiState
    from tracer.tui.widgets.base import View

    _Base = App[int]
else:
    _Base = object


class Actions(_Base):
    """The app's actions (see the module docstring)."""

    if TYPE_CHECKING:  # what the actions use of TracerApp, which defines them
        session: Session
        ui: UiState
        snapshot: SessionSnapshot | None
        export_dir: Path | None
        last_export: Path | None
        last_screenshot: Path | None
        active_tab: str
        _timer: Timer | None
        _pinned: int | None

        def select(self, **values: object) -> set[str]:
            """Defined by TracerApp."""

        def request_refresh(self, *fields: str, view: View | None = None) -> None:
            """Defined by TracerApp."""

        def show_view(self, name: str) -> None:
            """Defined by TracerApp."""

    def _snap(self) -> SessionSnapshot:
        return self.snapshot or self.session.snapshot()

    def _shown_number(self) -> int | None:
        found = shown(self._snap(), self.ui)
        return found[1].number if found is not None else None

    def _gantt(self) -> TimelineView:
        return self.query_one("#gantt", TimelineView)

    def _refocus(self) -> None:
        target = {
            "overview": "#layers",
            "timeline": "#spans",
            "findings": "#findings-full",
            "console": "#console-full",
            "layer": "#layer",
        }.get(self.active_tab, "#layers")
        self.query_one(target).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Replay speed keys only in replay."""
        return not (action in ("faster", "slower") and self.session.mode != "replay")

    # -- playback --------------------------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        """Pause or resume."""
        paused = self.session.toggle_pause()
        if paused and self.session.mode == "live":
            self.notify("the screen holds still; recording and decoding go on", title="paused", timeout=3)
        self.request_refresh("inference", SESSION)

    def action_faster(self) -> None:
        """Replay faster."""
        self.notify(f"replay speed {speed_label(self.session.faster())}", timeout=2)
        self.request_refresh("inference", SESSION)

    def action_slower(self) -> None:
        """Replay slower."""
        self.notify(f"replay speed {speed_label(self.session.slower())}", timeout=2)
        self.request_refresh("inference", SESSION)

    # -- inferences ------------------------------------------------------------------------------
    def action_previous_inference(self) -> None:
        """Show the inference before the one shown (in replay, anywhere in the file)."""
        self._step_inference(-1)

    def action_next_inference(self) -> None:
        """Show the next inference; at the newest of a paused replay, step to the next one."""
        self._step_inference(1)

    def _step_inference(self, direction: int) -> None:
        snapshot = self._snap()
        target = neighbour(snapshot, self.ui, direction)
        if target is not None and not (direction > 0 and self.ui.inference is None):
            newest = snapshot.ring[-1].number if snapshot.ring else None
            if (
                direction > 0
                and target.number == newest
                and target.ordinal == snapshot.ring_stretch.ordinal(len(snapshot.ring) - 1)
            ):
                self.action_follow()
                return
            self.goto(target, place_cursor=False)
            return
        if direction > 0 and self.session.mode == "replay" and (self.session.paused or self.ui.inference is not None):
            self.action_follow()
            if not self.session.step():
                self.bell()
            self.request_refresh(SESSION)
            return
        if direction > 0:
            self.action_follow()
            return
        here = current(snapshot, self.ui)
        if here is not None and self.ui.inference is None:
            self.select(inference=here.number, ordinal=here.ordinal)
        self.bell()

    def action_follow(self) -> None:
        """Follow the newest inference."""
        self.select(inference=None, ordinal=None)

    def action_goto(self) -> None:
        """Ask for an inference number."""
        field = self.query_one("#goto", Input)
        field.display = True
        field.focus()

    def goto_inference(
        self, number: int, layer: int | None = None, tab: str | None = None, place_cursor: bool = True
    ) -> None:
        """Show inference ``number`` (read from the capture in replay when it is not held)."""
        here = current(self._snap(), self.ui)
        self.goto(
            Target(number, None, layer if layer is not None else self.ui.layer),
            tab,
            place_cursor,
            near=here.ordinal if here else None,
        )

    def remember(self) -> None:
        """Note where the user is (tab and selection): ``backspace`` comes back here after a jump."""
        ui = self.ui
        here = (self.active_tab, ui.inference, ui.ordinal, ui.layer, ui.cursor, ui.mark)
        trail = self.__dict__.setdefault("_trail", [])
        if not trail or trail[-1] != here:
            trail.append(here)
            del trail[:-TRAIL]

    def action_go_back(self) -> None:
        """Go back to where the user was before the last jump."""
        trail = self.__dict__.get("_trail") or []
        if not trail:
            self.notify("nowhere to go back to", timeout=2)
            return
        tab, inference, ordinal, layer, cursor, mark = trail.pop()
        if tab != self.active_tab:
            self.show_view(tab)
        self.select(inference=inference, ordinal=ordinal, layer=layer, cursor=cursor, mark=mark)
        if layer is not None:
            self.query_one("#layers", LayersTable).select_layer(layer)

    def goto(self, target: Target, tab: str | None = None, place_cursor: bool = True, near: int | None = None) -> None:
        """Select ``target``: the inference (pinned), the layer, the cursor at the layer's start."""
        snapshot = self._snap()
        index = self.session.index
        number, ordinal = target.number, target.ordinal
        if number < 0 and ordinal is not None and index is not None:
            at = index.number_at(ordinal)
            number = at if at is not None else -1
        if ordinal is None:
            held = snapshot.ordinal_of(number)
            ordinal = held if held is not None else (index.ordinal(number, near) if index is not None else None)
        layer = target.layer if target.layer is not None else self.ui.layer
        found = snapshot.locate(ordinal=ordinal) if ordinal is not None else snapshot.locate(number=number)
        if number < 0 and found is None:
            self.bell()
            return
        if found is None and index is not None and (ordinal is None or not 0 <= ordinal < index.count):
            self.notify(str(index.missing(number)), severity="warning", timeout=6)
            return
        self.remember()
        if tab is not None and tab != self.active_tab:
            self.show_view(tab)
        if found is None and index is not None and ordinal is not None:
            before = (self.ui.inference, self.ui.ordinal)
            self.select(inference=number, ordinal=ordinal, layer=layer)
            self.run_worker(
                functools.partial(self._load, ordinal, number, layer, place_cursor, before),
                thread=True,
                group="seek",
                exclusive=True,
                exit_on_error=False,
            )
            return
        if found is None and index is None and snapshot.status.mode == "replay" and ordinal is None:
            self.notify(f"no inference #{number} in this capture", severity="warning", timeout=3)
            return
        self.select(inference=number, ordinal=ordinal, layer=layer)
        if layer is not None:
            self.query_one("#layers", LayersTable).select_layer(layer)
        if found is not None and place_cursor:
            self._cursor_to_layer(found[1], layer)

    def _load(
        self,
        ordinal: int,
        number: int,
        layer: int | None,
        place_cursor: bool,
        before: tuple[int | None, int | None] = (None, None),
    ) -> None:
        """Read an inference from the capture (a worker thread), then show it.

        When it cannot be read, the selection goes back to what was shown before (the message
        "reading inference ..." does not stay) and a notice says why.
        """
        try:
            stretch = self.session.seek(ordinal)
        except TracerError as exc:
            self.call_from_thread(self._not_loaded, number, ordinal, before, str(exc))
            return
        if stretch is None or stretch.at_ordinal(ordinal) is None:
            index = self.session.index
            why = str(index.missing(number)) if index is not None else f"inference #{number} cannot be read"
            self.call_from_thread(self._not_loaded, number, ordinal, before, why)
            return
        self.call_from_thread(self._loaded, number, ordinal, layer, place_cursor)

    def _not_loaded(self, number: int, ordinal: int, before: tuple[int | None, int | None], why: str) -> None:
        self.notify(why, title="cannot read the inference", severity="warning", timeout=6)
        if self.ui.inference == number and self.ui.ordinal == ordinal:  # (not if the user went elsewhere)
            self.select(inference=before[0], ordinal=before[1])

    def _loaded(self, number: int, ordinal: int, layer: int | None, place_cursor: bool) -> None:
        if self.ui.inference != number or self.ui.ordinal != ordinal:
            return  # the user went elsewhere meanwhile
        self.snapshot = self.session.snapshot()
        if self.session.pin(number):
            self._pinned = number
        found = self.snapshot.locate(ordinal=ordinal)
        if found is not None and place_cursor:
            self._cursor_to_layer(found[1], layer)
        self.request_refresh("inference")

    def _cursor_to_layer(self, record: Any, layer: int | None) -> None:
        span = next((s for s in record.inference.layers if s.layer == layer), None)
        if span is None:
            return
        self.select(cursor=span.start, mark=None)
        self._gantt().show_cycle(span.start)

    # -- findings --------------------------------------------------------------------------------
    def action_next_finding(self) -> None:
        """Go to the next inference and layer that shows the chosen finding (any, if none chosen)."""
        self.go_to_finding(1)

    def action_previous_finding(self) -> None:
        """Go to the previous one."""
        self.go_to_finding(-1)

    def go_to_finding(self, direction: int, from_start: bool = False) -> None:
        """Jump to the next instance of the chosen finding, on the timeline."""
        snapshot = self._snap()
        ui = self.ui
        if from_start:
            saved = (ui.inference, ui.ordinal, ui.layer)
            ui.inference, ui.ordinal, ui.layer = -(1 << 62), None, -1
            target = next_instance(snapshot, ui, direction)
            ui.inference, ui.ordinal, ui.layer = saved
        else:
            target = next_instance(snapshot, ui, direction)
        if target is None:
            what = "the chosen finding" if ui.finding is not None else "a finding"
            self.notify(
                f"no inference shows {what} (in {snapshot.diagnosis.scope or 'what was analysed'})",
                severity="warning",
                timeout=3,
            )
            return
        self.goto_inference(target.number, layer=target.layer, tab="timeline")

    # -- the timeline's cursor, range, zoom ------------------------------------------------------
    def action_cursor(self, cells: int) -> None:
        """Move the time cursor by ``cells`` of the timeline."""
        gantt = self._gantt()
        cursor = gantt.cursor_step(self.ui.cursor, cells)
        if cursor is not None:
            self.select(cursor=cursor)
            gantt.show_cycle(cursor)

    def action_cursor_edge(self, direction: int) -> None:
        """Move the cursor to the next (or previous) edge of a layer, handler or inference."""
        gantt = self._gantt()
        cursor = gantt.cursor_jump(self.ui.cursor, direction)
        if cursor is not None:
            self.select(cursor=cursor)
            gantt.show_cycle(cursor)

    def action_mark(self) -> None:
        """Mark one end of a range at the cursor (again: clear it)."""
        if self.ui.mark is not None:
            self.select(mark=None)
        elif self.ui.cursor is not None:
            self.select(mark=self.ui.cursor)
        else:
            self.action_cursor(0)
            self.select(mark=self.ui.cursor)

    def action_compare(self) -> None:
        """Mark the shown inference to compare others with (again on it: clear the mark)."""
        here = current(self._snap(), self.ui)
        if here is None:
            self.bell()
            return
        mark = (here.number, here.ordinal)
        if self.ui.compare == mark:
            self.select(compare=None)
            self.notify("comparison cleared", timeout=2)
            return
        self.session.pin(here.number)  # held while others are shown (the ring moves on live)
        self.select(compare=mark)
        self.notify(f"#{here.number} marked: step to another inference to compare (c again: clear)", timeout=4)

    def action_zoom_in(self) -> None:
        """Timeline: zoom in (around the cursor)."""
        self._gantt().zoom_in(cursor=self.ui.cursor)

    def action_zoom_out(self) -> None:
        """Timeline: zoom out."""
        self._gantt().zoom_out(cursor=self.ui.cursor)

    def action_zoom_reset(self) -> None:
        """Timeline: fit the inference."""
        self._gantt().set_zoom(1.0)

    def action_scroll_later(self) -> None:
        """Timeline: scroll right."""
        self._gantt().scroll_by_screens(0.25)

    def action_scroll_earlier(self) -> None:
        """Timeline: scroll left."""
        self._gantt().scroll_by_screens(-0.25)

    # -- layers ----------------------------------------------------------------------------------
    def action_filter(self) -> None:
        """Search the findings or the console (in front), else show and focus the layer filter."""
        if self.active_tab in ("findings", "console"):
            search = self.query_one("#search", Input)
            search.display = True
            search.focus()
            return
        self.action_show_tab("overview")
        field = self.query_one("#filter", Input)
        field.display = True
        field.focus()

    def action_escape(self) -> None:
        """Clear the filter, else the range, else the chosen finding."""
        field = self.query_one("#filter", Input)
        goto = self.query_one("#goto", Input)
        search = self.query_one("#search", Input)
        if goto.display or search.display:
            goto.display = search.display = False
            self._refocus()
        elif field.display or self.ui.filter:
            field.value = ""
            field.display = False
            self.select(filter="")
            self.query_one("#layers", LayersTable).focus()
        elif self.ui.mark is not None:
            self.select(mark=None)
        elif self.ui.finding is not None:
            self.select(finding=None)

    def action_sort_next(self) -> None:
        """Sort by the next column."""
        keys = self.query_one("#layers", LayersTable).sort_keys() or list(SORT_KEYS)
        at = keys.index(self.ui.sort) if self.ui.sort in keys else 0
        self.select(sort=keys[(at + 1) % len(keys)], reverse=False)
        self.notify(f"layers sorted by {self.ui.sort}", timeout=2)

    def action_sort_reverse(self) -> None:
        """Reverse the sort."""
        self.select(reverse=not self.ui.reverse)

    # -- views -----------------------------------------------------------------------------------
    def action_show_tab(self, tab: str) -> None:
        """Switch to a tab."""
        if tab != self.active_tab:
            self.show_view(tab)

    def action_help(self) -> None:
        """Show every key (the refresh timer rests while the help covers the screen)."""
        if isinstance(self.screen, HelpScreen):
            return
        if self._timer is not None:
            self._timer.pause()
        self.prepare_help()
        self.push_screen("help", self._help_closed)

    def prepare_help(self) -> None:
        """Make the help screen and mount it out of sight, once (the app does it once it is up).

        Made on the first ``?`` instead, it took 35-70 ms of the screen's thread (its widgets
        composed, styled and mounted, the help's lines drawn), the slowest key of a run; made
        ahead, opening it lays out and paints it, nothing more.
        """
        if not self.is_screen_installed("help"):
            self.install_screen(HelpScreen(), "help")  # the same every time
            self._get_screen("help")  # (Textual's own step of a push: mounts it, not shown)

    def _help_closed(self, _result: None = None) -> None:
        """The help closed: refresh again (the app's screen gives the keys back where they were)."""
        if self._timer is not None:
            self._timer.resume()

    # -- files -----------------------------------------------------------------------------------
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

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Write the screen as it is, as SVG.

        Args:
            filename: The file's name (Textual's parameter); default: a free one named after the capture and tab.
            path: Its folder (Textual's parameter); default: the export folder, else the current one.
        """
        folder = Path(path) if path is not None else (self.export_dir or Path.cwd())
        if filename is not None:
            target = folder / filename
        else:
            capture = self.session.capture_file()
            stem = f"{capture.stem if capture is not None else 'tracer-live'}-{self.active_tab}"
            target = free_path(folder, stem, ".svg")
        try:
            self.save_screenshot(filename=target.name, path=str(folder))
        except OSError as exc:
            self.notify(f"cannot write {target}: {exc.strerror}", title="screenshot failed", severity="error")
            return
        self.last_screenshot = target
        self.notify(f"screen written to {target}", title="screenshot", timeout=6)

    async def action_quit(self) -> None:
        """Quit (exit code 0)."""
        self.exit(int(ExitCode.OK))

    def action_interrupt(self) -> None:
        """Ctrl+C: quit as an interrupt (exit code 130)."""
        self.exit(int(ExitCode.INTERRUPTED))
