"""Cache coherency between the CPU and the NPU, checked from the order of what the firmware did.

The CPU writes through a write-back data cache; the NPU reads and writes memory. So, per NPU job
and per buffer it declared (``trc_npu_buffer``):

- **input** (the NPU reads it): every cache line of it that the CPU wrote (``trc_cpu_write``)
  since the NPU last wrote that line must be *cleaned* (or cleaned and invalidated) after that
  write and before the job begins, else the NPU reads stale memory;
- **output** (the NPU writes it): every line of it the CPU reads afterwards (``trc_cpu_read``,
  before another job writes it again) must be *invalidated* after the job ends and before that
  read, else the CPU reads stale cache lines;
- maintenance works on whole lines (32 bytes on Cortex-M55/M85/M7): an invalidate that does not
  start and end on a line boundary also throws away (or, later written back, overwrites) the
  neighbours sharing its edge lines, and an NPU buffer that does not fill whole lines shares
  them with other data.

Evidence that needs no marks: the same input CRC giving different output CRCs across inferences
(nondeterminism, a classic symptom of stale lines), and DWT data-trace writes into a buffer an NPU
job owns while it runs. Events are looked for from the start of the inference before the job's;
older writes are not considered.

The section is one accumulator (:class:`CoherencyAccumulator`): it runs :func:`analyse_coherency`,
the checks, on each window joined with what is around it; a timeline read whole is one window.
Over 400 lines: the checks and the accumulator that cuts the windows share the checks' private
columns (jobs, cache operations, accesses); kept in one module, the rules exist once.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from tracer.analysis.isr import span_of
from tracer.analysis.settings import CACHE_LINE_BYTES  # Cortex-M7, M55, M85 data cache lines
from tracer.base.columns import LazyRecords
from tracer.base.firmware_marks import NPU_READS, NPU_WRITES
from tracer.base.samples import Samples
from tracer.base.timeline import CACHE_OPS, CacheOp, Inferences, InferenceTimeline, LayerSpans, NpuJob

MISSING_CLEAN = "missing-clean"
MISSING_INVALIDATE = "missing-invalidate"
UNALIGNED = "unaligned"
NONDETERMINISTIC = "nondeterministic-output"
CPU_WRITE_DURING_JOB = "cpu-write-during-npu-job"


@dataclasses.dataclass(frozen=True)
class Buffer:
    """A buffer an NPU job reads or writes."""

    job: int
    role: int  # NPU_READS or NPU_WRITES
    address: int
    length: int

    @property
    def end(self) -> int:
        """One past its last byte."""
        return self.address + self.length


@dataclasses.dataclass(frozen=True)
class Access:
    """A CPU write or read mark, a cache operation, or an NPU output, as an interval in time order."""

    cycle: int
    address: int
    length: int
    what: str  # "write", "read", "clean", "invalidate", "clean_invalidate"


@dataclasses.dataclass(frozen=True)
class Problem:
    """One coherency problem at one NPU job (or one inference group, for nondeterminism).

    Attributes:
        kind: :data:`MISSING_CLEAN`, :data:`MISSING_INVALIDATE`, :data:`UNALIGNED`,
            :data:`NONDETERMINISTIC` or :data:`CPU_WRITE_DURING_JOB`.
        layer: The layer running the job (None if unknown or not about a job).
        job: The NPU job id, or None.
        inference: The inference it happened in, or None.
        buffer: (address, length) of the buffer concerned, or None.
        evidence: The facts (missing byte ranges, the write, the operations seen ...).
    """

    kind: str
    layer: int | None
    job: int | None
    inference: int | None
    buffer: tuple[int, int] | None
    evidence: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class CoherencyAnalysis:
    """What was checked and what was found."""

    jobs_checked: int
    buffers_declared: int
    cpu_writes: int
    cpu_reads: int
    problems: list[Problem]
    notes: list[str]


def lines_of(address: int, length: int, line: int = CACHE_LINE_BYTES) -> tuple[int, int]:
    """The cache lines ``[first, end)`` (in line numbers) holding any byte of the range."""
    return address // line, -(-(address + length) // line)


def _lines_within(a: Access, first: int, end: int, line: int) -> tuple[int, int]:
    """The cache lines of ``a`` inside ``[first, end)``, counted from ``first`` (empty when lo >= hi)."""
    lo, hi = lines_of(a.address, a.length, line)
    return max(lo, first) - first, min(hi, end) - first


def _hex_range(lo_line: int, hi_line: int, line: int) -> str:
    return f"0x{lo_line * line:08X}..0x{hi_line * line:08X}"


class _Events:
    """Time-sorted CPU writes, reads and cache operations, and NPU outputs, for window queries.

    A job's check looks at the few events that touch its buffer's cache lines among the many in
    its window: the lines and kinds of all events are kept as columns to pick those at once.
    """

    def __init__(self, items: list[Access], line: int) -> None:
        self.items = sorted(items, key=lambda a: a.cycle)
        self.cycles = np.array([a.cycle for a in self.items], np.int64)
        self.address = np.array([a.address for a in self.items], np.int64)
        self.end = self.address + np.array([a.length for a in self.items], np.int64)
        self.first_line = self.address // line
        self.end_line = -(-self.end // line)
        kinds = sorted({a.what for a in self.items})
        self.kind_bits = {what: 1 << code for code, what in enumerate(kinds)}
        self.kind = np.array([self.kind_bits[a.what] for a in self.items], np.int64)

    def touching(self, lo: int, hi: int, first: int, end: int, kinds: tuple[str, ...]) -> list[Access]:
        """Items of ``kinds`` with ``lo <= cycle < hi`` that touch the cache lines ``[first, end)``,
        in time order.
        """
        a, b = np.searchsorted(self.cycles, [lo, hi], side="left").tolist()
        return self._pick(a, b, kinds, (self.first_line[a:b] < end) & (self.end_line[a:b] > first))

    def overlapping(self, lo: int, hi: int, buffer: Buffer, kinds: tuple[str, ...]) -> list[Access]:
        """Items of ``kinds`` with ``lo <= cycle < hi`` whose bytes overlap ``buffer``'s."""
        a, b = np.searchsorted(self.cycles, [lo, hi], side="left").tolist()
        return self._pick(a, b, kinds, (self.address[a:b] < buffer.end) & (self.end[a:b] > buffer.address))

    def _pick(self, a: int, b: int, kinds: tuple[str, ...], near: np.ndarray) -> list[Access]:
        near &= (self.kind[a:b] & sum(self.kind_bits.get(k, 0) for k in kinds)) != 0
        return [self.items[a + i] for i in np.flatnonzero(near).tolist()]


def declared_buffers(timeline: InferenceTimeline) -> list[tuple[int, Buffer]]:
    """``(cycle, Buffer)`` of every buffer the NPU jobs declared, in time order."""
    return [(b.cycle, Buffer(b.job, b.role, b.address, b.length)) for b in timeline.npu_buffers]


def _buffers_of_jobs(jobs: Sequence[NpuJob], declared: list[tuple[int, Buffer]]) -> list[list[Buffer]]:
    """Each job's buffers: records with its id, after the previous job with that id began."""
    by_id: dict[int, tuple[list[int], list[Buffer]]] = {}
    for cycle, buf in sorted(declared, key=lambda d: d[0]):  # (stable: record order within a cycle)
        cycles, bufs = by_id.setdefault(buf.job, ([], []))
        cycles.append(cycle)
        bufs.append(buf)
    previous: dict[int, int] = {}
    out = []
    for job in jobs:
        cycles, bufs = by_id.get(job.job, ([], []))
        lo = bisect.bisect_right(cycles, previous.get(job.job, -1))
        out.append(bufs[lo : bisect.bisect_right(cycles, job.start)])
        previous[job.job] = job.start
    return out


def analyse_coherency(timeline: InferenceTimeline, line: int = CACHE_LINE_BYTES) -> CoherencyAnalysis:
    """Check every NPU job's declared buffers, cache operations' alignment, output determinism and
    data-trace writes.
    """
    declared = declared_buffers(timeline)
    problems: list[Problem] = []
    if not declared:
        # Nothing says which buffers the jobs use: only what needs no declaration is checked.
        unchecked = ["NPU jobs without buffer declarations (trc_npu_buffer): clean/invalidate order not checked"]
        problems += _check_unaligned_invalidates(timeline, line)
        problems += _check_determinism(timeline)
        return CoherencyAnalysis(len(timeline.npu_jobs), 0, 0, 0, problems, unchecked if len(timeline.npu_jobs) else [])
    jobs = sorted((j for j in timeline.npu_jobs if j.end is not None), key=lambda j: j.start)
    buffers = _buffers_of_jobs(jobs, declared)
    writes: list[Access] = []
    reads: list[Access] = []
    accesses: list[Access] = []
    for c in timeline.cpu_accesses:
        acc = Access(c.cycle, c.address, c.length, "write" if c.write else "read")
        (writes if c.write else reads).append(acc)
        accesses.append(acc)
    accesses += [Access(op.cycle, op.address, op.length, op.op) for op in timeline.cache_ops]
    for job, bufs in zip(jobs, buffers):
        end = job.end if job.end is not None else job.start
        accesses += [Access(end, b.address, b.length, "npu_write") for b in bufs if b.role == NPU_WRITES]
    events = _Events(accesses, line)
    layer_rows = span_of(timeline, np.array([j.start for j in jobs], np.int64))
    layer_of = [int(timeline.spans.layer[r]) if r >= 0 else None for r in layer_rows.tolist()]
    windows = _windows(timeline, jobs)
    notes: list[str] = []
    if not writes:
        notes.append("no CPU write marks (trc_cpu_write): input cleaning not checked")
    if not reads:
        notes.append("no CPU read marks (trc_cpu_read): output invalidation not checked")
    for n, (job, bufs) in enumerate(zip(jobs, buffers)):
        for buf in bufs:
            if buf.role == NPU_READS and writes:
                problems += _check_input(job, buf, events, windows[n], layer_of[n], line)
            elif buf.role == NPU_WRITES and reads:
                problems += _check_output(job, buf, events, jobs, buffers, n, layer_of[n], line)
    problems += _check_unaligned_invalidates(timeline, line)
    problems += _check_unaligned_buffers(jobs, buffers, layer_of, line)
    problems += _check_determinism(timeline)
    problems += _check_data_trace(timeline, jobs, buffers, layer_of)
    return CoherencyAnalysis(len(jobs), len(declared), len(writes), len(reads), problems, notes)


def _windows(timeline: InferenceTimeline, jobs: Sequence[NpuJob]) -> list[int]:
    """For each job, the earliest cycle whose events still count: the start of the inference
    before the job's (or the capture's start).
    """
    starts = np.sort(timeline.inferences.start[timeline.inferences.start >= 0])
    out = []
    for job in jobs:
        k = int(np.searchsorted(starts, job.start, side="right")) - 1  # the job's inference
        out.append(int(starts[k - 1]) if k >= 1 else -(1 << 62))
    return out


def _check_input(job: NpuJob, buf: Buffer, events: _Events, since: int, layer: int | None, line: int) -> list[Problem]:
    """Lines of an input the CPU wrote (after the NPU last did) need a clean before the job."""
    first, end = lines_of(buf.address, buf.length, line)
    writes = events.touching(since, job.start, first, end, ("write", "npu_write"))
    cleans = events.touching(since, job.start, first, end, ("clean", "clean_invalidate"))
    seg = _Segments(first, end, writes + cleans, line)
    last_write = np.full(seg.count, -1, np.int64)
    last_npu = np.full(seg.count, -1, np.int64)
    write_at: dict[int, Access] = {}
    for a in writes:
        at = seg.of(a)
        if a.what == "write":
            last_write[at] = a.cycle
            write_at[a.cycle] = a
        else:
            last_npu[at] = a.cycle
    needs = (last_write >= 0) & (last_write > last_npu)
    if not needs.any():
        return []
    cleaned = np.zeros(seg.count, bool)
    for a in cleans:
        at = seg.of(a)
        cleaned[at] |= a.cycle > last_write[at]
    missing = needs & ~cleaned
    if not missing.any():
        return []
    ranges = seg.runs(missing)
    last = int(last_write[missing].max())
    cleans_seen = [
        {"cycle": a.cycle, "address": a.address, "length": a.length}
        for a in events.overlapping(since, job.start, buf, ("clean", "clean_invalidate"))
    ]
    return [
        Problem(
            MISSING_CLEAN,
            layer,
            job.job,
            job.inference,
            (buf.address, buf.length),
            {
                "job_start": job.start,
                "last_cpu_write": {"cycle": last, "address": write_at[last].address, "length": write_at[last].length},
                "uncleaned_bytes": seg.lines(missing) * line,
                "uncleaned": [_hex_range(lo, hi, line) for lo, hi in ranges],
                "partly_cleaned": bool((needs & cleaned).any()),
                "cleans_seen": cleans_seen[-4:],
            },
        )
    ]


class _Segments:
    """The cache lines ``[first, end)`` of a buffer cut at the edges of the events that touch it.

    The checks keep one value per segment, so their arrays grow with the events, never with the
    buffer: a firmware may declare a 4 GiB buffer (2^27 lines, a 1 GiB array per value).
    """

    def __init__(self, first: int, end: int, accesses: Sequence[Access], line: int) -> None:
        self.first, self.end, self.line = first, end, line
        cuts = {0, end - first}
        for a in accesses:
            lo, hi = _lines_within(a, first, end, line)
            if lo < hi:
                cuts.update((lo, hi))
        self.bounds = np.array(sorted(cuts), np.int64)
        self.width = np.diff(self.bounds)
        self.count = len(self.width)

    def of(self, a: Access) -> slice:
        """The segments holding the lines of ``a``."""
        lo, hi = _lines_within(a, self.first, self.end, self.line)
        if lo >= hi:
            return slice(0, 0)
        return slice(int(np.searchsorted(self.bounds, lo)), int(np.searchsorted(self.bounds, hi)))

    def lines(self, mask: np.ndarray) -> int:
        """How many lines the segments ``mask`` hold."""
        return int(self.width[mask].sum())

    def runs(self, mask: np.ndarray) -> list[tuple[int, int]]:
        """The lines of the segments ``mask`` as ``[lo, hi)`` ranges of line numbers, adjacent ones joined."""
        out: list[tuple[int, int]] = []
        for i in np.flatnonzero(mask).tolist():
            lo, hi = self.first + int(self.bounds[i]), self.first + int(self.bounds[i + 1])
            if out and out[-1][1] == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return out


def _check_output(
    job: NpuJob,
    buf: Buffer,
    events: _Events,
    jobs: Sequence[NpuJob],
    buffers: Sequence[list[Buffer]],
    n: int,
    layer: int | None,
    line: int,
) -> list[Problem]:
    """Lines of an output the CPU reads next need an invalidate between the job's end and the read."""
    assert job.end is not None
    first, end = lines_of(buf.address, buf.length, line)
    # The CPU's reads count until a later job writes the same lines again.
    horizon = 1 << 62
    for m in range(n + 1, len(jobs)):  # (indices: slicing the lists would copy them for every job)
        if any(b.role == NPU_WRITES and b.address < buf.end and b.end > buf.address for b in buffers[m]):
            horizon = jobs[m].start
            break
    reads = events.touching(job.end, horizon, first, end, ("read",))
    invalidates = events.touching(job.end, horizon, first, end, ("invalidate", "clean_invalidate"))
    seg = _Segments(first, end, reads + invalidates, line)
    first_read = np.full(seg.count, -1, np.int64)
    for a in reads:
        part = first_read[seg.of(a)]
        part[part < 0] = a.cycle
    needs = first_read >= 0
    if not needs.any():
        return []
    valid = np.zeros(seg.count, bool)
    for a in invalidates:
        at = seg.of(a)
        valid[at] |= a.cycle < first_read[at]
    missing = needs & ~valid
    if not missing.any():
        return []
    ranges = seg.runs(missing)
    return [
        Problem(
            MISSING_INVALIDATE,
            layer,
            job.job,
            job.inference,
            (buf.address, buf.length),
            {
                "job_end": job.end,
                "first_cpu_read": int(first_read[missing].min()),
                "uninvalidated_bytes": seg.lines(missing) * line,
                "uninvalidated": [_hex_range(lo, hi, line) for lo, hi in ranges],
            },
        )
    ]


def _cache_columns(timeline: InferenceTimeline) -> tuple[np.ndarray, ...]:
    """(cycle, op code 1 clean / 2 invalidate / 3 both, address, length, inference) of every
    cache operation, as arrays (columns when the decoder kept them so).
    """
    ops = timeline.cache_ops
    if isinstance(ops, LazyRecords):
        return tuple(ops.column(i) for i in range(5))
    if isinstance(ops, _ChainedOps) and all(isinstance(s, LazyRecords) for s in ops.segments):
        # A window's operations: slices of the decoder's columns, joined (no object per operation).
        parts = [s for s in ops.segments if isinstance(s, LazyRecords)]
        if not parts:
            return tuple(np.zeros(0, np.int64) for _ in range(5))
        return tuple(np.concatenate([p.column(i) for p in parts]) for i in range(5))
    codes = {name: code for code, name in CACHE_OPS.items()}
    rows = list(ops)
    return (
        np.array([o.cycle for o in rows], np.int64),
        np.array([codes.get(o.op, 0) for o in rows], np.int64),
        np.array([o.address for o in rows], np.int64),
        np.array([o.length for o in rows], np.int64),
        np.array([-1 if o.inference is None else o.inference for o in rows], np.int64),
    )


def _off_lines(address: np.ndarray, length: np.ndarray, line: int) -> np.ndarray:
    """Which ranges do not start and end on a cache line boundary (0xFFFFFFFF bytes: the whole
    cache, not a range).
    """
    return (length != 0xFFFFFFFF) & ((address % line != 0) | (length % line != 0))


def _check_unaligned_invalidates(timeline: InferenceTimeline, line: int) -> list[Problem]:
    """Invalidates that do not start and end on a cache line boundary (once per range)."""
    cycle, code, address, length, inference = _cache_columns(timeline)
    bad = ((code == 2) | (code == 3)) & _off_lines(address, length, line)
    if not bad.any():
        return []
    idx = np.flatnonzero(bad)
    _, first = np.unique(np.stack([address[idx], length[idx]], axis=1), axis=0, return_index=True)
    idx = idx[np.sort(first)]
    rows = span_of(timeline, cycle[idx])
    out = []
    for i, row in zip(idx.tolist(), rows.tolist()):
        what = "invalidate range" if code[i] == 2 else "clean and invalidate range"
        layer = int(timeline.spans.layer[row]) if row >= 0 else None
        out.append(
            Problem(
                UNALIGNED,
                layer,
                None,
                int(inference[i]) if inference[i] >= 0 else None,
                (int(address[i]), int(length[i])),
                {"what": what, "cycle": int(cycle[i]), "line_bytes": line},
            )
        )
    return out


def _check_unaligned_buffers(
    jobs: Sequence[NpuJob], buffers: Sequence[list[Buffer]], layer_of: list[int | None], line: int
) -> list[Problem]:
    """NPU output buffers that do not fill whole cache lines (once per buffer)."""
    out = []
    seen: set[tuple[int, int]] = set()
    for job, bufs, layer in zip(jobs, buffers, layer_of):
        for b in bufs:
            if b.role == NPU_WRITES and (b.address % line or b.length % line) and (b.address, b.length) not in seen:
                seen.add((b.address, b.length))
                out.append(
                    Problem(
                        UNALIGNED,
                        layer,
                        job.job,
                        job.inference,
                        (b.address, b.length),
                        {"what": "NPU output buffer", "line_bytes": line},
                    )
                )
    return out


def _check_determinism(timeline: InferenceTimeline) -> list[Problem]:
    """The same input CRC with different output CRCs across complete inferences."""
    inf = timeline.inferences
    ok = inf.complete & (inf.input_crc >= 0) & (inf.output_crc >= 0)
    if ok.sum() < 2:
        return []
    out = []
    inputs, outputs, numbers = inf.input_crc[ok], inf.output_crc[ok], inf.number[ok]
    for crc in np.unique(inputs).tolist():
        mine = inputs == crc
        distinct = np.unique(outputs[mine])
        if len(distinct) > 1:
            out.append(
                Problem(
                    NONDETERMINISTIC,
                    None,
                    None,
                    None,
                    None,
                    {
                        "input_crc": f"0x{crc:08X}",
                        "inferences": int(mine.sum()),
                        "distinct_outputs": int(len(distinct)),
                        "output_crcs": [f"0x{c:08X}" for c in distinct[:8].tolist()],
                        "inference_numbers": numbers[mine][:20].tolist(),
                    },
                )
            )
    return out


def _check_data_trace(
    timeline: InferenceTimeline, jobs: Sequence[NpuJob], buffers: Sequence[list[Buffer]], layer_of: list[int | None]
) -> list[Problem]:
    """DWT data-trace writes into a buffer while the NPU job that owns it runs."""
    writes = [w for w in timeline.data_trace if w.write and w.address is not None]
    if not writes or not jobs:
        return []
    starts = [j.start for j in jobs]
    out = []
    for w in writes:
        k = bisect.bisect_right(starts, w.cycle) - 1
        end = jobs[k].end if k >= 0 else None
        if end is None or not jobs[k].start <= w.cycle < end:
            continue
        mask = (1 << (w.address_bits or 32)) - 1
        address = w.address or 0  # writes without an address were filtered out above
        for b in buffers[k]:
            if ((address - b.address) & mask) < b.length:
                role = "input" if b.role == NPU_READS else "output"
                out.append(
                    Problem(
                        CPU_WRITE_DURING_JOB,
                        layer_of[k],
                        jobs[k].job,
                        jobs[k].inference,
                        (b.address, b.length),
                        {"role": role, "write": w.to_json(), "job_start": jobs[k].start, "job_end": jobs[k].end},
                    )
                )
                break
    return out


SHORT_NOTE = (
    "read in windows: the CPU's reads of {} NPU output(s) were checked up to the end of the next window only "
    "(no job wrote them again before it; read whole, they are checked to the capture's end)"
)


class CoherencyAccumulator:
    """The coherency of a capture's windows, added in order (a timeline read whole is one).

    A job's checks look back to the start of the inference before its own and forward to the next
    job that writes its output again, so each window's jobs are checked one window late, on the
    window joined with the last inference of the window before it and with the next window (its
    first inferences when a job there writes every output again, else all of it): :meth:`add` in
    order, then :meth:`result`. A range or buffer reported once in the whole capture is reported
    once here too (each problem belongs to the window that holds its job or cache operation).
    Where the next job writing a job's output comes later than the next window, reads after that
    window are not checked: :attr:`short` counts those outputs, and a note says so (the caller
    puts it in the capture's warnings).

    Most captures declare no buffer: then a check can keep only the window's own unaligned
    invalidates (what needs a declaration is not checked, and the nondeterminism a window shows is
    computed again on the whole capture), so where neither the window nor the ones around it
    declare a buffer and the window's own cache operations hold no range not reported yet, the
    window's jobs and marks are only counted: nothing is joined (see :meth:`_keeps_nothing`).
    """

    def __init__(self, line: int = CACHE_LINE_BYTES) -> None:
        self.line = line
        self.before: InferenceTimeline | None = None  # the window before (its tail made if a check needs it)
        self.current: InferenceTimeline | None = None  # the window being held for its next one
        self.job_problems: list[Problem] = []
        self.invalidates: list[Problem] = []
        self.unaligned_buffers: list[Problem] = []
        self.data_trace: list[Problem] = []
        self.seen: dict[bool, set[tuple[int, int]]] = {False: set(), True: set()}  # (by a job?) reported unaligned
        self.jobs = self.declared = self.writes = self.reads = 0
        self.short = 0  # outputs whose reads were checked only up to the next window
        self.maybe_short = 0  # the same, of the last check: none if its next window was the last

    def add(self, window: InferenceTimeline) -> None:
        """The next window (in order; the final one last)."""
        view = _view(window)
        self.short += self.maybe_short  # (the window after the last check was not the last one)
        if self.current is not None:
            self.current, view = _move_after(self.current, view)
            self._check(self.current, view)
            self.before = self.current
        self.current = view

    def result(self, capture: InferenceTimeline) -> CoherencyAnalysis:
        """The capture's coherency; ``capture`` has every inference (for determinism)."""
        if self.current is not None:  # (the check before had the last window after it: exact)
            self._check(self.current, None)
            self.current = None
        problems = [
            *self.job_problems,
            *self.invalidates,
            *self.unaligned_buffers,
            *_check_determinism(capture),
            *self.data_trace,
        ]
        notes: list[str] = []
        if not self.declared:
            if self.jobs:
                notes.append(
                    "NPU jobs without buffer declarations (trc_npu_buffer): clean/invalidate order not checked"
                )
        else:
            if not self.writes:
                notes.append("no CPU write marks (trc_cpu_write): input cleaning not checked")
            if not self.reads:
                notes.append("no CPU read marks (trc_cpu_read): output invalidation not checked")
        if self.short:
            notes.append(SHORT_NOTE.format(self.short))
        if not self.declared:  # (as read whole: marks count only where buffers are declared)
            return CoherencyAnalysis(self.jobs, 0, 0, 0, problems, notes)
        return CoherencyAnalysis(self.jobs, self.declared, self.writes, self.reads, problems, notes)

    def _check(self, window: InferenceTimeline, after: InferenceTimeline | None) -> None:
        """Check ``window``'s jobs and cache operations, with the window before's last inference
        and the next window (None: ``window`` is the last) around it: first only the next
        window's first inferences, which is all a check needs when a job there writes each output
        of ``window`` again (the common case), else the whole next window.
        """
        self.jobs += _ended(window.npu_jobs)
        self.declared += len(window.npu_buffers)
        self.writes += sum(1 for c in window.cpu_accesses if c.write)
        self.reads += sum(1 for c in window.cpu_accesses if not c.write)
        if self._keeps_nothing(window, after):
            self.maybe_short = 0
            return
        tail = _tail(self.before) if self.before is not None else None
        head = _head(after) if after is not None else None
        joined = _joined(tail, window, head)
        # Without buffer or mark records around it, no job of the window is checked (only counted):
        # its jobs stay columns.
        declares = any(p is not None and (p.npu_buffers or p.cpu_accesses) for p in (tail, window, after))
        own_jobs = {(j.job, j.inference) for j in window.npu_jobs if j.end is not None} if declares else set()
        until = int(after.spans.end.max()) if after is not None and len(after.spans) else 1 << 62
        unbounded = _outputs_unbounded(joined, own_jobs, until) if after is not None else 0
        if unbounded and head is not after:
            joined = _joined(tail, window, after)
            unbounded = _outputs_unbounded(joined, own_jobs, until)
        self.maybe_short = unbounded
        checked = analyse_coherency(joined, self.line)
        own_ops: set[tuple[int, int, int]] | None = None  # (made when an unaligned invalidate asks)
        for problem in checked.problems:
            if problem.kind in (MISSING_CLEAN, MISSING_INVALIDATE) and (problem.job, problem.inference) in own_jobs:
                self.job_problems.append(problem)
            elif problem.kind == CPU_WRITE_DURING_JOB and (problem.job, problem.inference) in own_jobs:
                self.data_trace.append(problem)
            elif problem.kind == UNALIGNED and problem.buffer is not None:
                # Once per range (an invalidate) and once per buffer (a job's), in the window holding it.
                of_job = problem.job is not None
                if problem.buffer in self.seen[of_job]:
                    continue
                if of_job and (problem.job, problem.inference) in own_jobs:
                    self.unaligned_buffers.append(problem)
                elif not of_job:
                    own_ops = _ChainedOps.of(window.cache_ops).keys() if own_ops is None else own_ops
                    if (problem.evidence["cycle"], *problem.buffer) not in own_ops:
                        continue
                    self.invalidates.append(problem)
                else:
                    continue
                self.seen[of_job].add(problem.buffer)

    def _keeps_nothing(self, window: InferenceTimeline, after: InferenceTimeline | None) -> bool:
        """Whether the check of ``window`` (the next window ``after``) would keep no problem, known
        without joining anything.

        With no buffer declared in the window, the one before (its tail) or the one after (its
        head), :func:`analyse_coherency` of the joined timeline checks only unaligned invalidates
        and nondeterminism; the check drops the latter (the result computes it on the whole
        capture) and keeps an unaligned invalidate only where an operation of the window's own has
        its cycle, address and length, and its range was not reported yet. So a window none of
        whose own operations (of any kind: the key holds no kind) has a new unaligned range keeps
        nothing, and no output of it is unbounded (it has none).
        """
        if any(p is not None and p.npu_buffers for p in (self.before, window, after)):
            return False
        if self.line & (self.line - 1) == 0 and not _range_bits(window.cache_ops) & (self.line - 1):
            return True  # (every operation starts and ends on a line: the columns' bitwise or says so at once)
        _, _, address, length, _ = _cache_columns(window)
        unaligned = _off_lines(address, length, self.line)
        if not unaligned.any():
            return True
        ranges = zip(address[unaligned].tolist(), length[unaligned].tolist())
        return all(r in self.seen[False] for r in ranges)


class _ChainedOps(Sequence[CacheOp]):
    """A window's cache operations as the decoder's columns (a few slices of them, in time order),
    not as an object each: a window waiting for its check holds only columns, and the objects
    exist while a check runs.
    """

    def __init__(self, segments: Sequence[Sequence[CacheOp]]) -> None:
        self.segments = [s for s in segments if len(s)]

    @classmethod
    def of(cls, ops: Sequence[CacheOp]) -> _ChainedOps:
        return ops if isinstance(ops, _ChainedOps) else cls([ops])

    def __len__(self) -> int:
        return sum(len(s) for s in self.segments)

    def __iter__(self) -> Iterator[CacheOp]:
        for segment in self.segments:
            yield from segment

    def __getitem__(self, index: Any) -> Any:
        return list(self)[index]

    def between(self, since: int, until: int) -> _ChainedOps:
        """The operations from cycle ``since`` to ``until``."""
        out: list[Sequence[CacheOp]] = []
        for segment in self.segments:
            if isinstance(segment, LazyRecords):  # time order: a slice by the cycle column
                cycles = segment.column(0)
                lo, hi = np.searchsorted(cycles, since, "left"), np.searchsorted(cycles, until, "right")
                out.append(segment[int(lo) : int(hi)])
            else:
                out.append([op for op in segment if since <= op.cycle <= until])
        return _ChainedOps(out)

    def keys(self) -> set[tuple[int, int, int]]:
        """(cycle, address, length) of every operation."""
        keys: set[tuple[int, int, int]] = set()
        for segment in self.segments:
            if isinstance(segment, LazyRecords):
                keys.update(zip(segment.column(0).tolist(), segment.column(2).tolist(), segment.column(3).tolist()))
            else:
                keys.update((op.cycle, op.address, op.length) for op in segment)
        return keys


def _view(window: InferenceTimeline) -> InferenceTimeline:
    """What the checks read of a window (its buffers and CPU accesses, cache operations, jobs)."""
    spans = window.spans
    return dataclasses.replace(
        window,
        spans=dataclasses.replace(spans, pmu=np.zeros((len(spans), 0), np.int64), pmu_names=()),
        records=[],
        samples=window.samples if window.samples.empty else Samples.none(),  # (no sample kept: the checks read none)
        cache_ops=_ChainedOps.of(window.cache_ops),
        npu_jobs=window.npu_jobs,
        isrs=[],
        data_trace=[a for a in window.data_trace if a.write and a.address is not None],
        console=[],
        span_facts=None,
        tasks=[],
    )


def _range_bits(ops: Sequence[CacheOp]) -> int:
    """The bitwise or of every operation's address and length (its low bits say whether any range
    does not start or end on a cache line, when lines are a power of two bytes).
    """
    bits = 0
    for segment in _ChainedOps.of(ops).segments:
        if isinstance(segment, LazyRecords):  # (the decoder's columns: cycle, op, address, length, ...)
            bits |= int(np.bitwise_or.reduce(segment.column(2))) | int(np.bitwise_or.reduce(segment.column(3)))
        else:
            for op in segment:
                bits |= op.address | op.length
    return bits


def _joined(
    tail: InferenceTimeline | None, window: InferenceTimeline, after: InferenceTimeline | None
) -> InferenceTimeline:
    """``window`` with the last inference of the window before (``tail``) and ``after`` around it."""
    parts = [p for p in (tail, window, after) if p is not None]
    return dataclasses.replace(
        window,
        inferences=Inferences.concat([p.inferences for p in parts]),
        spans=LayerSpans.concat([p.spans for p in parts]),
        npu_buffers=[b for p in parts for b in p.npu_buffers],
        cpu_accesses=[c for p in parts for c in p.cpu_accesses],
        cache_ops=_ChainedOps([seg for p in parts for seg in _ChainedOps.of(p.cache_ops).segments]),
        npu_jobs=_joined_jobs([p.npu_jobs for p in parts]),
        data_trace=[a for p in parts for a in p.data_trace],
    )


def _move_after(window: InferenceTimeline, after: InferenceTimeline) -> tuple[InferenceTimeline, InferenceTimeline]:
    """``window`` and the window after it, with the NPU jobs, cache operations and data-trace
    accesses of ``window`` that came after its last layer execution (the inference that was still in
    progress when it was cut: the decoder hands those out as they come) moved into ``after``, where
    that inference's records are.
    """
    if not len(window.spans):
        return window, after
    cut = int(window.spans.end.max())
    jobs = _jobs_where(window.npu_jobs, lambda start, end, ended: start > cut)
    ops = _ChainedOps.of(window.cache_ops).between(cut + 1, 1 << 62)
    accesses = [a for a in window.data_trace if a.cycle > cut]
    if not jobs and not len(ops) and not accesses:
        return window, after
    return (
        dataclasses.replace(
            window,
            npu_jobs=_jobs_where(window.npu_jobs, lambda start, end, ended: start <= cut),
            cache_ops=_ChainedOps.of(window.cache_ops).between(-(1 << 62), cut),
            data_trace=[a for a in window.data_trace if a.cycle <= cut],
        ),
        dataclasses.replace(
            after,
            npu_jobs=_joined_jobs([jobs, after.npu_jobs]),
            cache_ops=_ChainedOps([*ops.segments, *_ChainedOps.of(after.cache_ops).segments]),
            data_trace=[*accesses, *after.data_trace],
        ),
    )


def _tail(window: InferenceTimeline) -> InferenceTimeline:
    """``window`` from the start of its last inference on (the inference before the next window's
    first jobs); unknown starts keep the whole window.
    """
    starts = window.inferences.start
    known = starts[starts >= 0]
    since = int(known.max()) if len(known) else -(1 << 62)
    return _part(window, window.inferences.start >= since, since, 1 << 62)


def _head(window: InferenceTimeline, inferences: int = 2) -> InferenceTimeline:
    """``window`` up to the end of its first ``inferences`` inferences (all of it when it has no
    more, or their end is unknown).
    """
    ends = window.inferences.end
    if len(ends) <= inferences or ends[inferences - 1] < 0:
        return window
    rows = np.zeros(len(ends), bool)
    rows[:inferences] = True
    return _part(window, rows, -(1 << 62), int(ends[inferences - 1]))


def _part(window: InferenceTimeline, rows: np.ndarray, since: int, until: int) -> InferenceTimeline:
    """The inferences ``rows`` of ``window`` and what happened from cycle ``since`` to ``until``."""
    inf = window.inferences
    picked = np.flatnonzero(rows)
    spans = window.spans
    return dataclasses.replace(
        window,
        inferences=Inferences(
            inf.number[picked],
            inf.start[picked],
            inf.end[picked],
            inf.complete[picked],
            inf.input_crc[picked],
            inf.output_crc[picked],
            problems=[inf.problems[i] for i in picked.tolist()],
        ),
        spans=spans.where((spans.start >= since) & (spans.start <= until)),
        npu_buffers=[b for b in window.npu_buffers if since <= b.cycle <= until],
        cpu_accesses=[c for c in window.cpu_accesses if since <= c.cycle <= until],
        cache_ops=_ChainedOps.of(window.cache_ops).between(since, until),
        data_trace=[a for a in window.data_trace if since <= a.cycle <= until],
        npu_jobs=_jobs_where(
            window.npu_jobs,
            lambda start, end, ended: ((since <= start) & (start <= until)) | (ended & (since <= end) & (end <= until)),
        ),
    )


def _outputs_unbounded(joined: InferenceTimeline, own: set[tuple[int, int | None]], until: int) -> int:
    """Outputs of ``own`` jobs that no later job of ``joined`` starting by cycle ``until`` writes
    again.

    ``until`` is where the next window's own records end (its last layer execution's end): the
    decoder hands a job out as it comes, so the next window may hold a job of the inference after
    it, whose writes bound nothing here, since the reads before that job are in the window after
    next, not in ``joined``.
    """
    declared = declared_buffers(joined)
    if not declared:  # (no job has an output)
        return 0
    jobs = sorted((j for j in joined.npu_jobs if j.end is not None), key=lambda j: j.start)
    buffers = _buffers_of_jobs(jobs, declared)
    count = 0
    for n, (job, bufs) in enumerate(zip(jobs, buffers)):
        if (job.job, job.inference) not in own:
            continue
        for buf in bufs:
            if buf.role != NPU_WRITES:
                continue
            again = any(
                b.role == NPU_WRITES and b.address < buf.end and b.end > buf.address
                for m in range(n + 1, len(jobs))
                if jobs[m].start <= until
                for b in buffers[m]
            )
            count += not again
    return count


_JobColumns = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _jobs_where(jobs: Sequence[NpuJob], keep: _JobColumns) -> Sequence[NpuJob]:
    """The jobs ``keep(start, end, ended)`` selects (vectorised; ``end`` means nothing where not
    ``ended``), as columns where they are columns: a window holds hundreds of thousands of jobs,
    and most windows declare no buffer, so their jobs are only counted.
    """
    if not len(jobs):
        return jobs
    if isinstance(jobs, LazyRecords):  # the decoder's jobs (start, end, inference, job): all ended
        start = jobs.column(0)
        return jobs.where(keep(start, jobs.column(1), np.ones(len(start), bool)))
    rows = list(jobs)
    start = np.array([j.start for j in rows], np.int64)
    end = np.array([0 if j.end is None else j.end for j in rows], np.int64)
    ended = np.array([j.end is not None for j in rows], bool)
    return [j for j, k in zip(rows, keep(start, end, ended).tolist()) if k]


def _joined_jobs(parts: Sequence[Sequence[NpuJob]]) -> Sequence[NpuJob]:
    """The jobs of ``parts`` one after another (columns if every part is columns)."""
    parts = [p for p in parts if len(p)]  # (an empty part may be a table without columns)
    lazy = [p for p in parts if isinstance(p, LazyRecords)]
    if lazy and len(lazy) == len(parts):
        return LazyRecords.concat(lazy)
    return [j for p in parts for j in p]


def _ended(jobs: Sequence[NpuJob]) -> int:
    """How many of ``jobs`` ended."""
    if isinstance(jobs, LazyRecords):
        return len(jobs)
    return sum(1 for j in jobs if j.end is not None)
