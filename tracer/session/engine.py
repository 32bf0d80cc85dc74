"""The session: one engine behind ``tracer live`` and ``tracer replay``, with no user interface in it.

A :class:`Session` runs in a worker thread (:meth:`Session.run`): it takes pieces of bytes from its
feed (a capture being replayed at a speed, or a live source being recorded), decodes them
(:class:`~tracer.session.rolling.RollingDecoder`) and folds what is new into bounded state
(:class:`~tracer.session.state.StreamState`). About once a second, when new inferences arrived, it
runs the CI gate's findings rules on that window (:class:`~tracer.session.schedule.FindingsSchedule`).
Replays are paced by :class:`~tracer.session.pacing.Pacer` on the capture's media time
(:class:`~tracer.session.media.MediaClock`); the worker takes its pieces through a
:class:`~tracer.session.transport.Transport` (due times, steps, the screen's right of way). What is
held beyond the ring (pins, inferences read again from the file, the baseline) is
:class:`~tracer.session.holdings.Holdings`'. The capture is indexed so that any inference of it can
be read again (:class:`~tracer.session.index.CaptureIndex`): a replay's in a thread of its own, a
live recording's by the worker as it decodes. A front end calls :meth:`Session.snapshot` on its own
timer and gets one consistent, immutable picture.

Controls (any thread): :meth:`pause`, :meth:`resume`, :meth:`faster`, :meth:`slower`,
:meth:`step` (replay: release bytes until the next inference closes), :meth:`stop`, :meth:`pin`,
:meth:`seek`.

This module is the session's one public face, hence its length: construction, controls, the
worker loop and snapshots, each a short section delegating to the modules above.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.analysis.statistics import DEFAULT_WINDOW
from tracer.base.timeline import ConsoleLine, InferenceTimeline
from tracer.budget.model import Budget
from tracer.capture.metadata import CaptureMetadata
from tracer.decode.tpiu import TpiuMode
from tracer.errors import TracerError
from tracer.pipeline.stream_setup import StreamSetup
from tracer.session.budget import SessionBudget
from tracer.session.energy import SessionEnergy
from tracer.session.feeds import DEFAULT_PIECE, FAST_PIECE, CaptureFeed, SourceFeed
from tracer.session.held import Stretch
from tracer.session.holdings import Holdings
from tracer.session.index import CaptureIndex
from tracer.session.media import MediaClock
from tracer.session.pacing import Pacer, RateMeter
from tracer.session.ring import DEFAULT_RING
from tracer.session.rolling import DecodedDelta, RollingDecoder
from tracer.session.schedule import FindingsSchedule, Stopped
from tracer.session.snapshot import SessionSnapshot, StatusInfo
from tracer.session.state import CONSOLE_LINES, StreamState, window_of
from tracer.session.status import status_info
from tracer.session.transport import Transport
from tracer.sources.base import SourceEnded, SourceLost

if TYPE_CHECKING:
    import numpy as np

    from tracer.analysis.calibration_file import Calibration
    from tracer.base.facts import InputFacts
    from tracer.power.live import MeterRecorder
    from tracer.power.recording import PowerRecording

__all__ = ["CONSOLE_LINES", "Session", "SessionOptions"]

LATENCY_HISTORY = 1024
RECORDED_WAIT_S = 2.0  # live: longest wait for an inference decoded to reach the recording (seek)
SNAPSHOT_WAIT_S = 0.005  # a screen waits at most this long for the decoder before taking the last snapshot


@dataclasses.dataclass(frozen=True)
class SessionOptions:
    """How a session keeps its state.

    Attributes:
        ring: Recent inferences kept whole.
        window: Values per layer the percentiles, history and distribution cover.
        latency_history: Recent inference latencies kept for the plot.
        speed: Replay speed (None: as fast as possible).
        paused: Start paused (replay).
        baseline: A capture to compare per-layer p50 against (``--baseline``).
        index: Index the capture (replay: on load; live: the recording, as it is decoded), so any
            inference of it can be shown.
        calibration: ``--calibration``: each layer's calibrated prediction beside the planner's.
        power: Replay: a power recording of the same run (``--power``), attributed beside it
            (:mod:`tracer.session.energy`); meter_input: the digital input of its sync pin.
        meter: Live: a power meter recording beside the capture (started), stopped and
            attributed when the source ends, stopped when the session closes.
    """

    ring: int = DEFAULT_RING
    window: int = DEFAULT_WINDOW
    latency_history: int = LATENCY_HISTORY
    speed: float | None = 1.0
    paused: bool = False
    baseline: str | None = None
    index: bool = True
    calibration: Calibration | None = None
    power: PowerRecording | None = None
    meter_input: int | None = None
    meter: MeterRecorder | None = None


class Session:
    """Decoding, statistics and state of one live or replayed stream.

    Use :meth:`replay` or :meth:`live` to build one.

    Args:
        feed: Where the bytes come from.
        mode: ``"replay"`` or ``"live"``.
        source: What to call the source on screen.
        metadata: The capture header (replay) or the source's facts (live).
        budget: What to compare against.
        options: Sizes and replay settings.
        clock: Monotonic clock (injectable for tests).
        setup: How the stream is decoded (:class:`~tracer.pipeline.stream_setup.StreamSetup`).
        capture_path: The capture file (replayed, or being recorded).
    """

    def __init__(
        self,
        feed: CaptureFeed | SourceFeed,
        mode: str,
        source: str,
        metadata: CaptureMetadata,
        *,
        budget: Budget | None = None,
        options: SessionOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        setup: StreamSetup | None = None,
        capture_path: str | None = None,
    ) -> None:
        self.options = options or SessionOptions()
        self.mode = mode
        self.source = source
        self.metadata = metadata
        self.capture_path = capture_path
        self._feed = feed
        self._clock = clock
        # Named as `tracer report` names a capture's decoder (the findings read the same).
        self._decoder = RollingDecoder(setup or StreamSetup.of(metadata, trusted=True, source=source))
        self._budget = SessionBudget(budget, self.options.calibration) if budget is not None else None
        self._pacer = Pacer(self.options.speed, self.options.paused, clock)
        self._media = MediaClock(self._pacer, metadata.swo_hz, isinstance(feed, CaptureFeed) and feed.has_host_times)
        self._rates = RateMeter(clock=clock)
        self._lock = threading.RLock()
        self._transport = Transport(self._pacer, self._lock)
        self._wake = self._transport.wake
        self._stop = threading.Event()
        self._done = threading.Event()
        self._started = False  # run() began (under _lock, with _stop: see wait_done)
        self._state = "starting" if mode == "live" else ("paused" if self.options.paused else "playing")
        self._message = ""
        self._reconnects = 0
        self._frozen: SessionSnapshot | None = None
        self._last: SessionSnapshot | None = None
        self._last_made_at: tuple[int, int | None, bool | None] | None = None  # see _build_snapshot
        self._version = 0
        self._held = StreamState(self.options.ring, self.options.window, self.options.latency_history)
        self._findings = FindingsSchedule(clock)
        self._layer_flags: dict[int, tuple[tuple[str, str], ...]] = {}
        self._holdings = Holdings(baseline=self.options.baseline)
        self._helpers: list[threading.Thread] = []
        self._energy: SessionEnergy | None = None
        if self.options.power is not None and mode == "replay" and capture_path:
            self._energy = SessionEnergy.replayed(self.options.power, self.options.meter_input)
        elif self.options.meter is not None and mode == "live" and capture_path:
            self._energy = SessionEnergy.metered(self.options.meter, self.options.meter_input)

    @property
    def analyses(self) -> int:
        """Times the findings rules ran (tests, benchmarks)."""
        return self._findings.runs

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def replay(
        cls,
        path: str,
        *,
        budget: Budget | None = None,
        options: SessionOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> Session:
        """A session replaying a capture.

        Raises:
            CaptureError: The capture cannot be read.
        """
        options = options or SessionOptions()
        feed = CaptureFeed(path, FAST_PIECE if options.speed is None else DEFAULT_PIECE)
        # A capture's header says how its stream is framed; another tool's raw file is detected.
        setup = StreamSetup.of(feed.metadata, trusted=feed.is_capture, source=path)
        session = cls(
            feed,
            "replay",
            path,
            feed.metadata,
            budget=budget,
            options=options,
            clock=clock,
            setup=setup,
            capture_path=path,
        )
        if options.index:
            session._holdings.index = CaptureIndex(path, setup, options.window)
        return session

    @classmethod
    def live(
        cls,
        feed: SourceFeed,
        metadata: CaptureMetadata,
        *,
        budget: Budget | None = None,
        options: SessionOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        tpiu: TpiuMode | None = None,
    ) -> Session:
        """A session on a live source (already opened); ``feed.writer`` records it unless None.

        ``tpiu``: the framing asked for (AUTO: detect it); None: what the source says of itself.
        """
        path = str(feed.writer.path) if feed.writer is not None else None
        setup = StreamSetup.of(
            metadata, trusted=tpiu is None, source=feed.url, tpiu=TpiuMode.AUTO if tpiu is None else tpiu
        )
        session = cls(
            feed,
            "live",
            metadata.source or feed.url,
            metadata,
            budget=budget,
            options=options,
            clock=clock,
            setup=setup,
            capture_path=path,
        )
        if path is not None and session.options.index:
            session._holdings.index = CaptureIndex(path, setup, session.options.window, live=True)
        listen = getattr(feed.source, "add_listener", None)
        if listen is not None:
            listen(session._source_event)
        state = getattr(feed.source, "state", "connected")
        session._state = state if state in ("connected", "lost", "reconnecting") else "connected"
        return session

    # -- controls (any thread) -------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        """True while paused."""
        return self._pacer.paused if self.mode == "replay" else self._frozen is not None

    def pause(self) -> None:
        """Replay: stop feeding. Live: hold the picture still (recording and decoding go on)."""
        if self.mode != "replay":
            self._frozen = self.snapshot()  # the picture as the screen last had it, without waiting
            self._version += 1
            return
        with self._wake:
            self._pacer.pause()
            if self._state == "playing":
                self._state = "paused"
            self._version += 1
            self._wake.notify_all()

    def resume(self) -> None:
        """Undo :meth:`pause`."""
        with self._wake:
            if self.mode == "replay":
                self._pacer.resume()
                if self._state == "paused":
                    self._state = "playing"
            self._frozen = None
            self._version += 1
            self._wake.notify_all()

    def toggle_pause(self) -> bool:
        """Pause or resume; returns True if now paused."""
        if self.paused:
            self.resume()
        else:
            self.pause()
        return self.paused

    def faster(self) -> float | None:
        """Replay one step faster (×2; beyond ×64 as fast as possible)."""
        with self._wake:
            speed = self._pacer.faster()
            self._adapt_pieces()
            self._version += 1
            self._wake.notify_all()
            return speed

    def slower(self) -> float | None:
        """Replay one step slower (÷2, down to ×1/16)."""
        with self._wake:
            speed = self._pacer.slower()
            self._adapt_pieces()
            self._version += 1
            self._wake.notify_all()
            return speed

    def set_speed(self, speed: float | None) -> None:
        """Set the replay speed (None: as fast as possible)."""
        with self._wake:
            self._pacer.set_speed(speed)
            self._adapt_pieces()
            self._version += 1
            self._wake.notify_all()

    @property
    def speed(self) -> float | None:
        """The replay speed."""
        return self._pacer.speed

    def step(self) -> bool:
        """Replay: pause if needed, then release bytes until the next inference closes.

        Returns:
            False when there is nothing to step (live, or the replay has ended).
        """
        with self._wake:
            if self.mode != "replay" or self._state == "ended":
                return False
            self._pacer.pause()
            self._state = "paused"
            self._transport.steps += 1
            self._wake.notify_all()
            return True

    @property
    def stepping(self) -> bool:
        """True while a requested step has not completed yet."""
        return self._transport.steps > 0

    def stop(self) -> None:
        """Ask :meth:`run` to return soon."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()

    def wait_done(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`run` (and its helper threads) have returned; True if they have.

        A session stopped before its worker began (Ctrl-C while the screen was starting) has
        nothing to wait for: :meth:`run` sees the stop under the same lock and returns at once.
        """
        with self._lock:
            if not self._started and self._stop.is_set():
                return True
        done = self._done.wait(timeout)
        for thread in self._helpers:
            thread.join(timeout)
        return done and not any(t.is_alive() for t in self._helpers)

    @property
    def ended(self) -> bool:
        """True once the stream has ended (or the source gave up)."""
        return self._state in ("ended", "error")

    def close(self) -> None:
        """Stop, then release the feed (live: flush and close the capture, close the source; then
        stop the power meter, which covered all of it).
        """
        self.stop()
        self._feed.close()
        if self._energy is not None:
            self._energy.stop_meter()

    def _adapt_pieces(self) -> None:
        if isinstance(self._feed, CaptureFeed):
            self._feed.set_piece_bytes(FAST_PIECE if self._pacer.speed is None else DEFAULT_PIECE)

    # -- the worker ------------------------------------------------------------------------------
    def run(self, stop: threading.Event | None = None) -> None:
        """Feed, decode and fold until the stream ends or :meth:`stop` (or ``stop``) is set.

        Runs in a worker thread; errors end up in the status (state ``error``), never raised.
        """
        external = stop
        with self._lock:
            if self._stop.is_set():  # stopped before it began: wait_done did not wait for it
                self._done.set()
                return
            self._started = True
        self._start_helpers()
        try:
            self._loop(external)
        except TracerError as exc:
            with self._lock:
                self._state, self._message = "error", str(exc)
                self._version += 1
        finally:
            self._done.set()

    def start(self) -> threading.Thread:
        """Run in a new daemon thread (for front ends without their own worker API)."""
        thread = threading.Thread(target=self.run, name="tracer-session", daemon=True)
        thread.start()
        return thread

    def _start_helpers(self) -> None:
        """The capture's index and the baseline are read in threads of their own, beside the replay."""
        budget = self._budget.budget if self._budget else None
        give_way = functools.partial(self._transport.give_way_briefly, self._stop)
        for name, job in self._holdings.jobs(self._stop.is_set, give_way, budget, self._baseline_read):
            thread = threading.Thread(target=job, name=name, daemon=True)
            thread.start()
            self._helpers.append(thread)
        if self.mode == "replay":
            self._attribute_energy()
        elif self._energy is not None and self._energy.follows and self.capture_path:
            thread = threading.Thread(
                target=self._energy.follow,
                args=(self.capture_path, self._energy_read, self._follow_done),
                name="tracer-energy-live",
                daemon=True,
            )
            thread.start()
            self._helpers.append(thread)

    def _follow_done(self) -> bool:
        """Live energy stops following once the session stops or the source ends."""
        return self._stop.is_set() or self._done.is_set() or self._state == "ended"

    def _attribute_energy(self) -> None:
        """Attribute the power recording to the capture in a helper thread (replay: from the
        start; live: once the source has ended, the meter stopped and the capture flushed).
        """
        energy, capture = self._energy, self.capture_path
        if energy is None or not capture:
            return
        writer = self._feed.writer if isinstance(self._feed, SourceFeed) else None
        thread = threading.Thread(
            target=energy.attribute,
            args=(capture, self._energy_read, writer.flush if writer is not None else None, self._stop.is_set),
            name="tracer-energy",
            daemon=True,
        )
        thread.start()
        self._helpers.append(thread)

    def _energy_read(self) -> None:
        with self._lock:
            self._version += 1

    def _baseline_read(self, warning: str | None) -> None:
        with self._lock:
            if warning:
                self._held.warn([warning])
            self._held.layers.touch(self._decoder.layers)
            self._version += 1

    def _stopped(self, external: threading.Event | None) -> bool:
        return self._stop.is_set() or (external is not None and external.is_set())

    def _loop(self, external: threading.Event | None) -> None:
        stopped = functools.partial(self._stopped, external)
        if isinstance(self._feed, SourceFeed):
            self._feed.start()
        while not self._stopped(external):
            self._transport.give_way(stopped)
            try:
                piece = self._transport.next_piece(self._feed)
            except SourceEnded as exc:
                self._finish("end of stream" if self.mode == "replay" else f"the source ended ({exc or 'closed'})")
                return
            except SourceLost as exc:
                self._fold(self._decoder.finish(), recorded=True)
                self._diagnose(final=True)
                self._set_state(
                    "lost", f"{exc}; every byte received is in the capture" if self.capture_path else str(exc)
                )
                return
            if piece is None:
                self._heartbeat()
                self._diagnose()
                continue
            if self.mode == "live":
                index = self._holdings.index
                for part in self._transport.live_slices(piece, stopped):
                    if index is not None and index.due(part.offset):
                        with self._lock:  # a snapshot reads the decoder meanwhile: not while it is pickled
                            index.before(part.offset, self._decoder)
                    self._fold(self._decoder.feed(part.data, part.lost_before))
                self._diagnose()
                continue
            media = None
            if self._media.before_decoding:
                media = self._media.media_time(piece, None, self._decoder)
                if not self._transport.wait_due(media, stopped):
                    return
                piece = self._transport.cut_for_step(piece)
            delta = self._decoder.feed(piece.data, piece.lost_before)
            if media is None:
                media = self._media.media_time(piece, delta, self._decoder)
                if not self._transport.wait_due(media, stopped):
                    return
            self._fold(delta)
            with self._lock:
                self._pacer.release(media)
                if self._transport.steps > 0 and len(delta.inferences):
                    self._transport.steps -= 1
            self._diagnose()

    def hold_for_ui(self, seconds: float = 0.1) -> None:
        """Let the screen answer a key first: the decoder waits (at most ``seconds``; see
        :mod:`tracer.session.transport`).
        """
        self._transport.hold_for_ui(seconds)

    def release_ui_hold(self) -> None:
        """The screen has answered: decode on."""
        self._transport.release_ui_hold()

    def _heartbeat(self) -> None:
        with self._lock:
            self._rates.add(0, 0)
            self._version += 1

    def _finish(self, message: str) -> None:
        damaged = self._decoder.loss.damaged_records
        delta = self._decoder.finish()
        with self._lock:
            self._held.cut_records = self._decoder.loss.damaged_records - damaged  # cut short by the end
        self._fold(delta, recorded=self.mode == "live")
        self._diagnose(final=True)
        with self._lock:
            self._transport.steps = 0
        self._set_state("ended", message)
        if self.mode == "live":
            self._attribute_energy()  # the run is over: the meter's recording covers it

    def _set_state(self, state: str, message: str = "") -> None:
        with self._lock:
            self._state, self._message = state, message
            self._version += 1

    def _source_event(self, event: Any) -> None:
        """A :class:`~tracer.sources.reconnect.SourceEvent` (lost, reconnecting, connected, ended)."""
        with self._lock:
            if event.state == "connected" and self._state in ("lost", "reconnecting"):
                self._reconnects += 1
            self._state = event.state
            if event.state == "reconnecting":
                self._message = f"attempt {event.attempt} in {event.delay:.1f} s: {event.message}"
            elif event.state == "lost":
                self._message = event.message
            elif event.state == "connected":
                self._message = ""
            self._version += 1

    def _fold(self, delta: DecodedDelta, recorded: bool = False) -> None:
        """Apply what one feed produced (under the lock: snapshots see all of it or none).

        ``recorded``: the last delta of a live source; every byte of it is in the capture file
        (the feed flushed the recorder when the source ended), whose index is then complete.
        """
        index = self._holdings.index
        if index is not None and index.live:
            index.add(delta.inferences.number)
            if recorded:
                index.close()
        with self._lock:
            self._rates.add(delta.bytes, delta.packets)
            feed_warnings = self._feed.warnings if isinstance(self._feed, CaptureFeed) else []
            self._held.fold(delta, self._decoder, self._decoder.warnings + feed_warnings)
            if self._budget is not None and self._budget.update(self._decoder.layers, self._decoder.clock_hz):
                self._held.layers.touch(self._decoder.layers)
            self._version += 1

    # -- the CI gate's findings ------------------------------------------------------------------
    def window_timeline(self) -> InferenceTimeline:
        """The recent window as a timeline (worker thread only: it reads the decoder)."""
        with self._lock:
            parts = self._held.window_parts()
        return window_of(parts, self._decoder)

    def _diagnose(self, final: bool = False) -> None:
        """Run the gate's rules on the window when due (worker thread; see tracer.session.schedule)."""
        held = self._held
        if not self._findings.due(held.analysis_key, final, self._transport.ui_hold_until):
            return
        whole = held.whole
        # At the end of a stream that outgrew the window, the rules read the whole capture again: a
        # replay's file, or the recording (complete on disk: the feed flushed it when the source ended).
        capture = (self.capture_path or None) if final and not whole else None
        budget = self._budget.budget if self._budget is not None else None
        try:
            if capture is None:
                # The window is built first (under the session's lock: not while yielding); its rules
                # then stand aside at each call.
                window = self.window_timeline()
                timeline: Callable[[], InferenceTimeline] = lambda: window  # noqa: E731 - one name, both branches
                guard: contextlib.AbstractContextManager[None] = self._transport.yielding(self._stop.is_set)
            else:
                # Reading a whole capture again (much longer, and where a profile hook would cost
                # most) gives way between its reads instead (:meth:`_unless_stopped`).
                timeline, guard = self.window_timeline, contextlib.nullcontext()
            with guard:
                diagnosis = self._findings.run(
                    timeline,
                    self._facts,
                    budget,
                    [r.number for r in held.ring.items()],
                    whole,
                    held.inferences,
                    capture,
                    self._unless_stopped,
                )
        except Stopped:
            return
        except Exception as exc:  # noqa: BLE001 - a rule failing must not stop the screen; it says so
            with self._lock:
                held.warn([f"the findings rules failed: {type(exc).__name__}: {exc}"])
                self._version += 1
            return
        with self._lock:
            self._findings.diagnosis = diagnosis
            flags = diagnosis.layer_flags()
            held.layers.touch(set(flags) | set(self._layer_flags))
            self._layer_flags = flags
            self._version += 1

    def _unless_stopped(self, _bytes_read: int) -> None:
        """Reading a whole capture again: give up as soon as the session is asked to stop, and
        give way while the screen answers a key.
        """
        if self._stop.is_set():
            raise Stopped
        self._transport.give_way(self._stop.is_set)

    def _facts(self) -> InputFacts:
        from tracer.base.facts import InputFacts

        kind = "capture" if self.capture_path else "live"
        return InputFacts(
            kind,
            self.metadata.source or self.source,
            self.capture_path,
            self._decoder.bytes,
            warnings=list(self._held.warnings),
        )

    # -- reading (any thread) --------------------------------------------------------------------
    @property
    def version(self) -> int:
        """Increases with every change; a front end can skip redrawing when it has not moved."""
        return self._version

    def snapshot(self) -> SessionSnapshot:
        """Everything to show, consistent at one moment (the held picture while live is paused).

        Never keeps a screen waiting: while the decoder is folding a large piece, the snapshot
        built last is returned (it is at most one piece old).
        """
        frozen = self._frozen
        if not self._lock.acquire(timeout=SNAPSHOT_WAIT_S if self._last is not None else -1):
            last = self._last
            assert last is not None
            return last if frozen is None else frozen
        try:
            if frozen is not None:
                # The picture holds still; the status (the recording growing) and the version go on.
                return dataclasses.replace(frozen, status=self._status(paused=True), version=self._version)
            self._last = self._build_snapshot()
            return self._last
        finally:
            self._lock.release()

    def _build_snapshot(self) -> SessionSnapshot:
        """The snapshot of now; the last one with a fresh status when nothing else changed since.

        Everything but the status changes only with :attr:`version` (the worker's folds, the
        findings, controls, pins and seeks count it up), or with the replay's index growing in its
        own thread: a screen asking again (a key answered while the decoder stands aside, a refresh
        with nothing new) gets the same picture without building it again.
        """
        index = self._holdings.index
        made_at = (
            self._version,
            index.count if index is not None else None,
            index.ready if index is not None else None,
        )
        if self._last is not None and made_at == self._last_made_at:
            return dataclasses.replace(self._last, status=self._status())
        self._last_made_at = made_at
        held, budget, telemetry = self._held, self._budget, self._decoder.telemetry
        baseline = self._holdings.baseline
        extra: dict[str, Any] = {}
        target = self._decoder.target
        if target is not None and target.marker_cost_cycles is not None:
            extra["marker_cost_cycles"] = target.marker_cost_cycles
        if telemetry.pmu_event_ids:
            extra["npu"] = f"Ethos-U{telemetry.pmu_npu}"
        if self._findings.diagnosis.sampling:
            extra["sampling"] = self._findings.diagnosis.sampling  # issue 15: the layer detail's breakdowns
        return SessionSnapshot(
            version=self._version,
            status=self._status(),
            latency=held.latency.info(budget.inference_cycles if budget else None),
            layers=held.layers.rows(self._decoder.layers, budget, self._layer_flags),
            memory=held.memory.info(budget.arena_bytes if budget else None),
            diagnosis=self._findings.diagnosis,
            ring=held.ring.items(),
            events=held.view(),
            inferences=held.inferences,
            complete_inferences=held.complete,
            spans=held.spans,
            console_seq=held.console_seq,
            budget_name=budget.name if budget else "",
            extra=extra,
            cut_at_end=held.cut_at_end,
            cut_records=held.cut_records,
            stretches=self._holdings.stretches(),
            file_inferences=index.count if index is not None and index.ready else None,
            indexed=index.count if index is not None else 0,
            baseline=baseline.matched(self._decoder.layers) if baseline else {},
            baseline_name=baseline.name if baseline else "",
            energy=self._energy.state if self._energy is not None else None,
        )

    def _status(self, paused: bool | None = None) -> StatusInfo:
        return status_info(
            mode=self.mode,
            source=self.source,
            state=self._state,
            message=self._message,
            feed=self._feed,
            decoder=self._decoder,
            metadata=self.metadata,
            pacer=self._pacer,
            rates=self._rates,
            timebase=self._media.timebase,
            paused=self.paused if paused is None else paused,
            capture_path=self.capture_path,
            reconnects=self._reconnects,
            warnings=self._held.warnings,
        )

    def console_since(self, seq: int, until: int | None = None) -> tuple[list[ConsoleLine], int]:
        """Console lines numbered ``seq`` up to ``until`` (default: the newest), and the next number.

        Lines older than the buffer (2,000 lines) are gone; the numbering says how many.
        """
        with self._lock:
            return self._held.console_since(seq, until)

    def layer_history(self, index: int, limit: int | None = None) -> np.ndarray:
        """Recent cycle counts of layer ``index`` (complete executions), oldest first."""
        with self._lock:
            return self._held.layers.history(index, limit)

    @property
    def budget(self) -> SessionBudget | None:
        """The budget in use."""
        return self._budget

    @property
    def decoder(self) -> RollingDecoder:
        """The decoder (tests, benchmarks)."""
        return self._decoder

    @property
    def held(self) -> StreamState:
        """The state folded from the stream (tests)."""
        return self._held

    # -- holding inferences beyond the ring (any thread; never waits for the decoder) ------------
    def pin(self, number: int) -> bool:
        """Keep inference ``number`` (and its neighbours) when the ring moves on; False if not held now."""
        last = self._last
        pinned = self._holdings.pin(number, last.ring_stretch if last is not None else None)
        self._version += 1
        return pinned

    def unpin(self, number: int) -> None:
        """Let a pinned inference go (it stays while the ring holds it)."""
        self._holdings.unpin(number)
        self._version += 1

    @property
    def index(self) -> CaptureIndex | None:
        """The capture's index: the replayed file's, or the live recording's (None: live without
        recording, or not wanted).
        """
        return self._holdings.index

    def seek(self, ordinal: int) -> Stretch | None:
        """Read the inference at stream position ``ordinal`` (and neighbours) again from the capture.

        Blocking (a front end calls it from a worker thread); the stretch is held (the last few
        loaded) and shows in the next snapshots. Live, an inference the session has decoded may
        not be in the file yet (the recorder writes within its flush interval): the read is tried
        again for up to :data:`RECORDED_WAIT_S`. None: not indexed (yet), or nothing recorded.
        """
        stretch = self._holdings.load(ordinal)
        index = self._holdings.index
        if stretch is None and index is not None and index.live:
            give_up = time.monotonic() + RECORDED_WAIT_S
            while stretch is None and 0 <= ordinal < index.count and time.monotonic() < give_up:
                if self._stop.wait(0.02):
                    break
                stretch = self._holdings.load(ordinal)
        self._version += 1
        return stretch

    def capture_file(self) -> Path | None:
        """The capture behind the session, if there is one on disk."""
        return Path(self.capture_path) if self.capture_path else None
