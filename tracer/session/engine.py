"""The session: one engine behind ``tracer live`` and ``tracer replay``, with no user interface in it.

A :class:`Session` runs in a worker thread (:meth:`Session.run`): it takes pieces of bytes from its
feed (a capture being replayed at a speed, or a live source being recorded), decodes them
(:class:`~tracer.session.rolling.RollingDecoder`), and folds what is new into bounded state:
a ring of recent inferences, the events around them and the decoder's interrupt slices
(:class:`~tracer.session.window.EventWindow`), running per-layer and latency statistics, memory,
console lines, loss counters and rates. About once a second, when new inferences arrived, it
runs the CI gate's findings rules on that window (:mod:`tracer.session.findings`). A front end
calls :meth:`Session.snapshot` on its own timer and gets one consistent, immutable picture.
Every record that arrives is counted in the statistics; the ring only bounds how many whole
inferences are kept for viewing.

Controls (any thread): :meth:`pause`, :meth:`resume`, :meth:`faster`, :meth:`slower`,
:meth:`step` (replay: release bytes until the next inference closes), :meth:`stop`.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from tracer.analysis.settings import DEFAULT_TOLERANCE_PCT
from tracer.budget.model import Budget
from tracer.capture.metadata import CaptureMetadata
from tracer.decode.tpiu import TpiuMode
from tracer.errors import TracerError
from tracer.session.budget import SessionBudget
from tracer.session.feeds import DEFAULT_PIECE, FAST_PIECE, CaptureFeed, Piece, SourceFeed
from tracer.session.findings import INTERVAL_S, Diagnosis, capture_analysis, describe_scope, window_analysis
from tracer.session.memory import MemoryTracker
from tracer.session.pacing import Pacer, RateMeter
from tracer.session.ring import DEFAULT_RING, InferenceBlock, InferenceRing
from tracer.session.rolling import DecodedDelta, RollingDecoder
from tracer.session.snapshot import LatencyInfo, LayerRow, SessionSnapshot, StatusInfo
from tracer.analysis.statistics import DEFAULT_WINDOW, CycleSummary, RunningMean, RunningStats
from tracer.session.window import EventWindow, window_timeline
from tracer.sources.base import SourceEnded, SourceLost
from tracer.base.timeline import (
    ConsoleLine,
    Engine,
    InferenceTimeline,
    IsrSlice,
    LayerInfo,
)

if TYPE_CHECKING:
    from tracer.base.facts import InputFacts

LATENCY_HISTORY = 1024
CONSOLE_LINES = 2000
SNAPSHOT_WAIT_S = 0.005  # a screen waits at most this long for the decoder before taking the last snapshot
STEP_SLICE = 128  # bytes decoded at a time while stepping, so a step stops right after one inference
NO_TELEMETRY_BYTES = 64 * 1024  # a replay paced by target time falls back to bytes if none is seen by then
EMULATED = "emulated: QEMU counts instructions, not real CPU cycles"
MAX_ISRS = 65_536  # interrupt slices kept at most when no inference closes to set a horizon


@dataclasses.dataclass(frozen=True)
class SessionOptions:
    """How a session keeps its state.

    Attributes:
        ring: Recent inferences kept whole.
        window: Values per layer the percentiles, history and distribution cover.
        latency_history: Recent inference latencies kept for the plot.
        speed: Replay speed (None: as fast as possible).
        paused: Start paused (replay).
    """

    ring: int = DEFAULT_RING
    window: int = DEFAULT_WINDOW
    latency_history: int = LATENCY_HISTORY
    speed: float | None = 1.0
    paused: bool = False


def tpiu_mode(metadata: CaptureMetadata, trusted: bool = True) -> TpiuMode:
    """The TPIU mode the metadata asks for (AUTO when it does not say, or cannot be trusted)."""
    if trusted and metadata.tpiu is not None:
        return TpiuMode.ON if metadata.tpiu else TpiuMode.OFF
    return TpiuMode.AUTO


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
        tpiu: TPIU deframing.
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
        tpiu: TpiuMode = TpiuMode.AUTO,
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
        self._decoder = RollingDecoder(metadata.cpu_hz, metadata.source or source, tpiu, metadata.tpiu_id)
        self._budget = SessionBudget(budget) if budget is not None else None
        self._pacer = Pacer(self.options.speed, self.options.paused, clock)
        self._rates = RateMeter(clock=clock)
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._done = threading.Event()
        self._steps = 0
        self._ui_hold_until = 0.0
        self._pending_piece: Piece | None = None
        self._state = "starting" if mode == "live" else ("paused" if self.options.paused else "playing")
        self._message = ""
        self._reconnects = 0
        self._timebase = "host arrival" if isinstance(feed, CaptureFeed) and feed.has_host_times else ""
        self._media_origin: int | None = None
        self._frozen: SessionSnapshot | None = None
        self._last: SessionSnapshot | None = None
        self._version = 0
        # state folded from the stream
        self._ring = InferenceRing(self.options.ring)
        self._events = EventWindow()
        self._isr_slices: Sequence[IsrSlice] = ()
        self._isrs_forgotten = False
        self._isr_cap = MAX_ISRS
        self._horizon_applied: int | None = None
        self._memory = MemoryTracker()
        self._layer_stats: dict[int, RunningStats] = {}
        self._excluded: dict[int, int] = collections.defaultdict(int)
        self._isr_hits: dict[int, int] = collections.defaultdict(int)
        self._pmu: dict[int, dict[str, RunningMean]] = collections.defaultdict(dict)
        self._latency = RunningStats(self.options.window)
        n = self.options.latency_history
        self._lat_numbers = np.zeros(n, np.int64)
        self._lat_cycles = np.full(n, -1, np.int64)
        self._lat_complete = np.zeros(n, bool)
        self._lat_held = 0
        self._inferences = 0
        self._complete = 0
        self._spans = 0
        self._console: collections.deque[tuple[int, ConsoleLine]] = collections.deque(maxlen=CONSOLE_LINES)
        self._console_seq = 0
        self._rows_cache: dict[int, LayerRow] = {}
        self._dirty_layers: set[int] = set()
        self._warnings: list[str] = []
        # the CI gate's findings on the window (worker thread)
        self._diagnosis = Diagnosis()
        self._sampling: dict[int, Any] = {}  # issue 15: per-layer sampled breakdowns (layer detail)
        self._layer_flags: dict[int, tuple[tuple[str, str], ...]] = {}
        self._analysed: tuple[Any, ...] | None = None
        self._analysed_at = float("-inf")
        self.analyses = 0  # times the rules ran (tests, benchmarks)

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
        return cls(feed, "replay", path, feed.metadata, budget=budget, options=options, clock=clock,
                   tpiu=tpiu_mode(feed.metadata, feed.is_capture), capture_path=path)  # fmt: skip

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
        """A session on a live source (already opened); ``feed.writer`` records it unless None."""
        path = str(feed.writer.path) if feed.writer is not None else None
        mode = tpiu if tpiu is not None else tpiu_mode(metadata)
        session = cls(feed, "live", metadata.source or feed.url, metadata, budget=budget, options=options,
                      clock=clock, tpiu=mode, capture_path=path)  # fmt: skip
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
            self._steps += 1
            self._wake.notify_all()
            return True

    @property
    def stepping(self) -> bool:
        """True while a requested step has not completed yet."""
        return self._steps > 0

    def stop(self) -> None:
        """Ask :meth:`run` to return soon."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()

    def wait_done(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`run` has returned; True if it has."""
        return self._done.wait(timeout)

    @property
    def ended(self) -> bool:
        """True once the stream has ended (or the source gave up)."""
        return self._state in ("ended", "error")

    def close(self) -> None:
        """Stop, then release the feed (live: flush and close the capture, close the source)."""
        self.stop()
        self._feed.close()

    def _adapt_pieces(self) -> None:
        if isinstance(self._feed, CaptureFeed):
            self._feed.set_piece_bytes(FAST_PIECE if self._pacer.speed is None else DEFAULT_PIECE)

    # -- the worker ------------------------------------------------------------------------------
    def run(self, stop: threading.Event | None = None) -> None:
        """Feed, decode and fold until the stream ends or :meth:`stop` (or ``stop``) is set.

        Runs in a worker thread; errors end up in the status (state ``error``), never raised.
        """
        external = stop
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

    def _stopped(self, external: threading.Event | None) -> bool:
        return self._stop.is_set() or (external is not None and external.is_set())

    def _loop(self, external: threading.Event | None) -> None:
        if isinstance(self._feed, SourceFeed):
            self._feed.start()
        while not self._stopped(external):
            self._give_way(external)
            try:
                piece = self._next_piece()
            except SourceEnded as exc:
                self._finish("end of stream" if self.mode == "replay" else f"the source ended ({exc or 'closed'})")
                return
            except SourceLost as exc:
                self._fold(self._decoder.finish())
                self._diagnose(final=True)
                self._set_state("lost", f"{exc}; every byte received is in the capture" if self.capture_path else str(exc))
                return
            if piece is None:
                self._heartbeat()
                self._diagnose()
                continue
            if self.mode == "live":
                self._fold(self._decoder.feed(piece.data, piece.lost_before))
                self._diagnose()
                continue
            media = None
            if self._timebase != "target time":
                media = self._media_time(piece, None)
                if not self._wait_due(media, external):
                    return
                piece = self._cut_for_step(piece)
            delta = self._decoder.feed(piece.data, piece.lost_before)
            if media is None:
                media = self._media_time(piece, delta)
                if not self._wait_due(media, external):
                    return
            self._fold(delta)
            with self._lock:
                self._pacer.release(media)
                if self._steps > 0 and len(delta.inferences):
                    self._steps -= 1
            self._diagnose()

    def hold_for_ui(self, seconds: float = 0.1) -> None:
        """Let the screen answer a key first: the decoder waits (at most ``seconds``).

        Decoding and drawing share one interpreter lock, and a decoder call holds it for
        milliseconds at a time; while a key is being answered the decoder stands aside. Live bytes
        are still read and recorded meanwhile (the reader thread does not wait); the decoder
        catches up afterwards.
        """
        self._ui_hold_until = time.monotonic() + seconds

    def release_ui_hold(self) -> None:
        """The screen has answered: decode on."""
        self._ui_hold_until = 0.0
        with self._wake:
            self._wake.notify_all()

    def _give_way(self, external: threading.Event | None) -> None:
        while not self._stopped(external):
            left = self._ui_hold_until - time.monotonic()
            if left <= 0:
                return
            with self._wake:
                self._wake.wait(min(left, 0.02))

    def _next_piece(self) -> Piece | None:
        if self._pending_piece is not None:
            piece, self._pending_piece = self._pending_piece, None
            return piece
        return self._feed.next_piece(0.1)

    def _cut_for_step(self, piece: Piece) -> Piece:
        """While stepping, decode in small slices so the step ends right after one inference."""
        if self._steps <= 0 or len(piece.data) <= STEP_SLICE:
            return piece
        rest = Piece(piece.data[STEP_SLICE:], piece.offset + STEP_SLICE, 0, piece.host_seconds)
        self._pending_piece = rest
        return Piece(piece.data[:STEP_SLICE], piece.offset, piece.lost_before, piece.host_seconds)

    def _media_time(self, piece: Piece, delta: DecodedDelta | None) -> float:
        """Seconds into the capture on the pacing clock."""
        if piece.host_seconds is not None:
            return piece.host_seconds
        clock_hz = self._decoder.clock_hz
        if delta is not None and clock_hz and len(delta.inferences):
            ends = delta.inferences.end[delta.inferences.end >= 0]
            if len(ends):
                if self._media_origin is None:
                    starts = delta.inferences.start[delta.inferences.start >= 0]
                    self._media_origin = int(starts.min()) if len(starts) else int(ends.min())
                self._timebase = "target time"
                return max(0.0, (int(ends.max()) - self._media_origin) / clock_hz)
        if self._timebase == "target time" and self._decoder.records == 0 and piece.offset > NO_TELEMETRY_BYTES:
            self._timebase = "byte rate"  # a raw trace with no telemetry in it: pace by bytes
        if self._timebase == "target time" or (self._timebase == "" and clock_hz and self._decoder.records == 0):
            # Until the telemetry says what time it is (or between inferences): no wait.
            if self._timebase == "":
                self._timebase = "target time" if clock_hz else "byte rate"
            return self._pacer.media
        self._timebase = "byte rate"
        return piece.offset / self._byte_rate()

    def _byte_rate(self) -> float:
        """Bytes per second of a capture with no clock: its SWO rate if known, else 1 MB/s."""
        swo = self.metadata.swo_hz
        return swo / 10 if swo else 1_000_000.0

    def _wait_due(self, media: float, external: threading.Event | None) -> bool:
        """Block until ``media`` is due (or a step is asked for); False if stopped meanwhile."""
        with self._wake:
            while not self._stopped(external):
                if self._steps > 0:
                    return True
                wait = self._pacer.wait_for(media)
                if wait == 0.0:
                    return True
                self._wake.wait(0.1 if wait is None else min(wait, 0.1))
        return False

    def _heartbeat(self) -> None:
        with self._lock:
            self._rates.add(0, 0)
            self._version += 1

    def _finish(self, message: str) -> None:
        self._fold(self._decoder.finish())
        self._diagnose(final=True)
        with self._lock:
            self._steps = 0
        self._set_state("ended", message)

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

    # -- folding ---------------------------------------------------------------------------------
    def _fold(self, delta: DecodedDelta) -> None:
        """Apply what one feed produced (under the lock: snapshots see all of it or none)."""
        with self._lock:
            self._rates.add(delta.bytes, delta.packets)
            self._fold_inferences(delta)
            self._events.add(delta.cache_ops, delta.npu_jobs, delta.marks, delta.crcs, delta.records)
            self._isr_slices = self._decoder.telemetry.isr_slices()
            self._forget_old()
            self._memory.add_arena(delta.arena)
            self._memory.add_stacks(delta.stacks)
            for line in delta.console:
                self._console.append((self._console_seq, line))
                self._console_seq += 1
            if self._budget is not None:
                if self._budget.update(self._decoder.layers, self._decoder.clock_hz):
                    self._dirty_layers.update(self._decoder.layers)
            for warning in self._decoder.warnings + (self._feed.warnings if isinstance(self._feed, CaptureFeed) else []):
                if warning not in self._warnings:
                    self._warnings.append(warning)
            self._version += 1

    def _fold_inferences(self, delta: DecodedDelta) -> None:
        inf = delta.inferences
        if not len(inf):
            return
        self._ring.add_block(InferenceBlock(inf, delta.spans, delta.span_first, delta.span_end))
        self._inferences += len(inf)
        self._complete += int(inf.complete.sum())
        self._fold_latency(inf)
        self._fold_spans(delta)

    def _forget_old(self) -> None:
        """Events and interrupt slices from before the ring's horizon go (memory stays flat)."""
        horizon = self._ring.horizon
        telemetry = self._decoder.telemetry
        if horizon is not None and horizon != self._horizon_applied:
            self._horizon_applied = horizon
            self._events.forget_before(horizon)
            if telemetry.discard_isrs(horizon):
                self._isrs_forgotten = True
                self._isr_slices = telemetry.isr_slices()
        if len(self._isr_slices) > self._isr_cap:  # no inference closes to set a horizon: keep the newest half
            oldest_kept = min(s.end for s in self._isr_slices[-MAX_ISRS // 2 :])
            if telemetry.discard_isrs(oldest_kept):
                self._isrs_forgotten = True
                self._isr_slices = telemetry.isr_slices()
            # Slices timed in timestamp ticks or byte offsets cannot be placed against cycles and stay.
            self._isr_cap = max(MAX_ISRS, len(self._isr_slices) + MAX_ISRS // 2)

    def _fold_latency(self, inf: Any) -> None:
        latency = inf.latency
        ok = inf.complete & (latency >= 0)
        self._latency.add(latency[ok])
        size = self._lat_numbers.shape[0]
        numbers, cycles, complete = inf.number[-size:], latency[-size:], inf.complete[-size:]
        k = int(numbers.shape[0])
        for column, values in ((self._lat_numbers, numbers), (self._lat_cycles, cycles), (self._lat_complete, complete)):
            column[: size - k] = column[k:].copy()
            column[size - k :] = values
        self._lat_held = min(size, self._lat_held + k)

    def _fold_spans(self, delta: DecodedDelta) -> None:
        spans = delta.spans
        if not len(spans):
            return
        self._spans += len(spans)
        layers = spans.layer.astype(np.int64)
        cycles = spans.cycles
        ok = spans.complete
        if (~ok).any():
            for index, count in zip(*(a.tolist() for a in np.unique(layers[~ok], return_counts=True))):
                self._excluded[index] += count
                self._dirty_layers.add(index)
        hit = spans.isr_cycles > 0
        if hit.any():
            for index, count in zip(*(a.tolist() for a in np.unique(layers[hit], return_counts=True))):
                self._isr_hits[index] += count
                self._dirty_layers.add(index)
        if not ok.any():
            return
        order = np.argsort(layers[ok], kind="stable")  # stable: arrival order within a layer
        by_layer, values = layers[ok][order], cycles[ok][order]
        pmu = spans.pmu[ok][order] if spans.pmu.shape[1] else None
        indices, starts = np.unique(by_layer, return_index=True)
        bounds = list(starts.tolist()) + [len(by_layer)]
        for j, index in enumerate(indices.tolist()):
            lo, hi = bounds[j], bounds[j + 1]
            stats = self._layer_stats.get(index)
            if stats is None:
                stats = self._layer_stats[index] = RunningStats(self.options.window)
            stats.add(values[lo:hi])
            if pmu is not None:
                means = self._pmu[index]
                for c, name in enumerate(spans.pmu_names):
                    column = pmu[lo:hi, c]
                    column = column[column >= 0]
                    if len(column):
                        means.setdefault(name, RunningMean()).add(column)
            self._dirty_layers.add(index)

    # -- the CI gate's findings ------------------------------------------------------------------
    def _window_whole(self) -> bool:
        """True while nothing the stream brought has left the window (its timeline is the whole stream's)."""
        return (self._ring.holds_everything and not self._events.forgot and not self._isrs_forgotten
                and self._console_seq <= CONSOLE_LINES)  # fmt: skip

    def window_timeline(self) -> InferenceTimeline:
        """The recent window as a timeline (worker thread only: it reads the decoder)."""
        from tracer.telemetry.console_text import merge_console

        with self._lock:
            records = self._ring.items()
            view = self._events.view(self._isr_slices)
            console = [line for _, line in self._console]
            memory = self._memory.deciding_samples()
            horizon = self._ring.horizon
        base = self._decoder.telemetry.timeline()
        timeline = window_timeline(base, self._decoder.layers, records, view, horizon, memory, console)
        # As `tracer report` reads a capture: the port-0 text adds what the records do not say.
        return merge_console(timeline) if timeline.console else timeline

    def _diagnose(self, final: bool = False) -> None:
        """Run the gate's rules on the window when due (worker thread; see tracer.session.findings)."""
        key = (self._inferences,) if self._inferences else (self._console_seq, self._memory.reports)
        now = self._clock()
        if not final and (key in (self._analysed, (0, 0)) or now - self._analysed_at < INTERVAL_S
                          or time.monotonic() < self._ui_hold_until):  # fmt: skip
            return
        self._analysed, self._analysed_at = key, now
        self.analyses += 1
        whole = self._window_whole()
        budget = self._budget.budget if self._budget is not None else None
        numbers = [record.number for record in self._ring.items()]
        try:
            if final and not whole and self.mode == "replay" and self.capture_path:
                analysis = capture_analysis(self.capture_path, budget, self._unless_stopped)
                diagnosis = Diagnosis(analysis.findings, analysis, "the whole capture", True, self._inferences)
            else:
                analysis = window_analysis(self.window_timeline(), self._facts(), budget)
                scope = describe_scope(numbers, whole)
                diagnosis = Diagnosis(analysis.findings, analysis, scope, whole, self._inferences)
        except _Stopped:
            return
        except Exception as exc:  # noqa: BLE001 - a rule failing must not stop the screen; it says so
            message = f"the findings rules failed: {type(exc).__name__}: {exc}"
            with self._lock:
                if message not in self._warnings:
                    self._warnings.append(message)
                self._version += 1
            return
        from tracer.analysis.sampling import layer_breakdowns

        sampling = layer_breakdowns(analysis.sampling)
        with self._lock:
            self._diagnosis = diagnosis
            self._sampling = sampling
            flags = diagnosis.layer_flags()
            self._dirty_layers.update(set(flags) | set(self._layer_flags))
            self._layer_flags = flags
            self._version += 1

    def _unless_stopped(self, _bytes_read: int) -> None:
        """Reading a whole capture again: give up as soon as the session is asked to stop."""
        if self._stop.is_set():
            raise _Stopped

    def _facts(self) -> InputFacts:
        from tracer.base.facts import InputFacts

        kind = "capture" if self.capture_path else "live"
        return InputFacts(kind, self.metadata.source or self.source, self.capture_path, self._decoder.bytes,
                          warnings=list(self._warnings))  # fmt: skip

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
                return dataclasses.replace(frozen, status=self._status(paused=True))
            self._last = self._build_snapshot()
            return self._last
        finally:
            self._lock.release()

    def _build_snapshot(self) -> SessionSnapshot:
        layers = self._layer_rows()
        memory = self._memory.info(self._budget.arena_bytes if self._budget else None)
        status = self._status()
        held = self._lat_held
        size = self._lat_numbers.shape[0]
        latency = LatencyInfo(
            numbers=self._lat_numbers[size - held :].copy(), cycles=self._lat_cycles[size - held :].copy(),
            complete=self._lat_complete[size - held :].copy(), stats=self._latency.summary(),
            budget_cycles=self._budget.inference_cycles if self._budget else None,
        )  # fmt: skip
        extra: dict[str, Any] = {}
        target = self._decoder.target
        if target is not None and target.marker_cost_cycles is not None:
            extra["marker_cost_cycles"] = target.marker_cost_cycles
        if self._decoder.telemetry.pmu_event_ids:
            extra["npu"] = f"Ethos-U{self._decoder.telemetry.pmu_npu}"
        if self._sampling:
            extra["sampling"] = self._sampling
        return SessionSnapshot(
            version=self._version, status=status, latency=latency, layers=layers, memory=memory,
            diagnosis=self._diagnosis, ring=self._ring.items(), events=self._events.view(self._isr_slices),
            inferences=self._inferences,
            complete_inferences=self._complete, spans=self._spans, console_seq=self._console_seq,
            budget_name=self._budget.name if self._budget else "", extra=extra,
        )  # fmt: skip

    def _layer_rows(self) -> tuple[LayerRow, ...]:
        infos = dict(self._decoder.layers)
        for index in set(self._layer_stats) | set(self._excluded):
            infos.setdefault(index, LayerInfo(index, "", "", Engine.CPU))
        rows = []
        for index, info in sorted(infos.items()):
            cached = self._rows_cache.get(index)
            if cached is None or index in self._dirty_layers or cached.info != info:
                cached = self._layer_row(info)
                self._rows_cache[index] = cached
            rows.append(cached)
        self._dirty_layers.clear()
        return tuple(rows)

    def _layer_row(self, info: LayerInfo) -> LayerRow:
        index = info.index
        stats = self._layer_stats.get(index)
        summary: CycleSummary | None = stats.summary() if stats is not None else None
        plan = self._budget.plans.get(index) if self._budget else None
        pmu = {name: mean.mean for name, mean in self._pmu.get(index, {}).items() if mean.mean is not None}
        return LayerRow(
            info=info, cycles=summary, excluded=self._excluded.get(index, 0),
            predicted=plan.predicted_cycles if plan else None,
            tolerance_pct=plan.tolerance_pct if plan else DEFAULT_TOLERANCE_PCT,
            planned_engine=plan.planned_engine if plan else None,
            isr_hits=self._isr_hits.get(index, 0), pmu_mean=pmu,  # type: ignore[arg-type]
            note=plan.note if plan else "", findings=self._layer_flags.get(index, ()),
        )  # fmt: skip

    def _status(self, paused: bool | None = None) -> StatusInfo:
        ended = self._state in ("ended", "error", "lost")
        bps, pps = (None, None) if ended else self._rates.rates()
        feed = self._feed
        position = media = duration = None
        recording = recording_bytes = None
        if isinstance(feed, CaptureFeed):
            total = feed.stream_bytes
            position = min(1.0, self._decoder.bytes / total) if total else (1.0 if self._state == "ended" else None)
            media, duration = self._pacer.media, feed.duration_seconds if self._timebase == "host arrival" else None
        else:
            recording = self.capture_path
            recording_bytes = feed.recording_bytes
        return StatusInfo(
            mode=self.mode, source=self.source, state=self._state, message=self._message,
            bytes=self._decoder.bytes, packets=self._decoder.packets, records=self._decoder.records,
            bytes_per_s=bps, packets_per_s=pps, loss=self._decoder.loss,
            firmware_dropped=self._decoder.telemetry.firmware_dropped, recording=recording,
            recording_bytes=recording_bytes, position=position, media_seconds=media, duration_seconds=duration,
            speed=self._pacer.speed, timebase=self._timebase or ("byte rate" if self.mode == "replay" else ""),
            paused=self.paused if paused is None else paused, clock_hz=self._decoder.clock_hz,
            clock_source=self._decoder.target.time_source.label if self._decoder.target else "unknown",
            labels=self._labels(), reconnects=self._reconnects, warnings=tuple(self._warnings[-5:]),
        )  # fmt: skip

    def _labels(self) -> dict[str, str]:
        labels: dict[str, str] = {}
        if self._decoder.emulated:
            labels["cycles"] = EMULATED
        timing = str(self.metadata.extra.get("cpu_timing", ""))
        if "model estimate" in timing or "model estimate" in self.metadata.notes:
            labels["cycles"] = "model estimate"
        if self._decoder.pmu_simulated:
            labels["npu_pmu"] = "simulated"
        return labels

    def console_since(self, seq: int, until: int | None = None) -> tuple[list[ConsoleLine], int]:
        """Console lines numbered ``seq`` up to ``until`` (default: the newest), and the next number.

        Lines older than the buffer (2,000 lines) are gone; the numbering says how many.
        """
        with self._lock:
            end = self._console_seq if until is None else min(until, self._console_seq)
            lines = [line for s, line in self._console if seq <= s < end]
            return lines, max(end, seq)

    def layer_history(self, index: int, limit: int | None = None) -> np.ndarray:
        """Recent cycle counts of layer ``index`` (complete executions), oldest first."""
        with self._lock:
            stats = self._layer_stats.get(index)
            return stats.recent(limit) if stats is not None else np.zeros(0, np.int64)

    @property
    def budget(self) -> SessionBudget | None:
        """The budget in use."""
        return self._budget

    @property
    def decoder(self) -> RollingDecoder:
        """The decoder (tests, benchmarks)."""
        return self._decoder

    def capture_file(self) -> Path | None:
        """The capture behind the session, if there is one on disk."""
        return Path(self.capture_path) if self.capture_path else None


class _Stopped(Exception):
    """The session was asked to stop during a long piece of work."""
