"""``LogReader``: firmware text, line by line, into an :class:`InferenceTimeline`.

Lines come from a file (``read_log``) or, later, from text the firmware writes to ITM port 0
(``feed_line(text, cycle)``). Each line goes to the recognisers (MLEK, TFLite Micro, ethos-u-core-
software, ExecuTorch, FVP); what they find is assembled into inferences:

* per-operator durations (TFLM ``Log()``/``LogCsv()``, ``cycle_cnt`` lines) arrive as runs of
  consecutive lines; a run holding several inferences (the profiler was not cleared between
  invokes) is split where the operator sequence repeats (the model's own operator list, when the
  log printed it, else the shortest repeating sequence); a run cut short is an incomplete inference;
* a PMU profile, ``Inference runtime``, CRCs and counters join the inference being assembled; a
  second value of the same kind starts the next one;
* lines that open an inference (ethos-u-core-software ``Running inference job: X``, MLEK
  ``Running inference on ...`` and ``Inference k/N``) start one even when no number follows; a job
  ends at its ``Finished running job: X``. An inference the log ends inside (a job never finished,
  a run with no results after its last ``Inference k/N``, a PMU block cut short) is incomplete,
  with the reason; ``Inference k/N`` lines missing from a run (k jumps) are counted as lost;
* a ``Profile for Inference`` block printed after a run of several ``Inference k/N`` holds MLEK's
  mean over those inferences: it becomes a summary (``pmu_stats``), never one inference's counters;
* a line naming the model (MLEK ``Running KWS inference on ...``) names the run that follows. When a
  log holds more than one model, every counter name is prefixed with its model (``KWS/NPU_ACTIVE``)
  so that no total or statistic ever adds two models together; ``extra["models"]`` lists them;
* a ``LogTicksPerTagCsv()`` block with no per-operator lines before it becomes one entry whose layers
  are the operator types with their summed ticks (labelled so in ``labels["layers"]``).

A text log has no timestamps: layer spans are laid end to end from their durations (labelled so
in ``labels``), and an inference has a start and end only when the log gave its runtime. Every
line is kept in ``console``; every number recognised is kept (``pmu_totals``, ``pmu_stats``,
``arena``, ``allocation_failures``, ``extra``). Nothing raises: a line in a known format that
cannot be used is counted in ``loss.damaged_records`` and listed in ``extra["warnings"]``.

``extra`` keys: ``cpu`` (clock_hz, id, name), ``npu`` (arch, driver, macs_per_cc, cmd_stream,
memory_mode, ...), ``npu_config_mismatch``, ``target``, ``model`` (operator_count, operators,
input/output tensor bytes), ``arena`` (total/head/tail bytes), ``arena_allocations``,
``arena_reports`` (every arena/pool use line), ``tflm_ticks_per_tag``, ``executorch``, ``fvp``,
``profiles`` (profile groups other than the inference), ``pmu_event_names``, ``per_inference``
(facts per inference number, with the line it starts at), ``reprinted_runs`` (operator blocks
printed twice, by ``Log()`` and ``LogCsv()``, counted once), ``inferences_reported``,
``exit_code``, ``errors``, ``warnings`` (each with its line), ``models``, ``lines``.

It is long because it is one state machine (the inference being assembled, the run of operator
lines, the mode a log is in): the recognisers of each log family live in their own modules
(``tflm``, ``mlek``, ``ethosu_sw``, ``executorch``, ``platform``); this one only assembles.
"""

from __future__ import annotations

import codecs
import dataclasses
import math
from collections.abc import Callable
from typing import Any

from tracer.base.timeline import (
    AllocationFailure,
    ArenaSample,
    ConsoleLine,
    CounterStat,
    Engine,
    Inference,
    InferenceTimeline,
    LayerInfo,
    LayerSpan,
    TimelineBuilder,
)
from tracer.telemetry.logs import ethosu_sw, executorch, mlek, platform, tflm
from tracer.telemetry.logs.counters import canonical_counter, default_unit, is_npu_counter
from tracer.telemetry.logs.lines import MAX_LINE_CHARS, LineSplitter, parse_view, strip_prefix
from tracer.telemetry.logs.log_facts import log_facts
from tracer.telemetry.logs.records import (
    Allocation,
    AllocFailure,
    ArenaPart,
    ArenaUsed,
    Boundary,
    Counter,
    CounterSummary,
    Crc,
    Damaged,
    EnterMode,
    ErrorLine,
    Fact,
    InferenceMark,
    Metrics,
    Mode,
    ModelName,
    Neutral,
    OpCounter,
    OpTicks,
    PmuEventNames,
    Record,
    Runtime,
    SampleCount,
    TagTicks,
    TagTotal,
)
from tracer.values import is_ascii_digits

TIME_LABEL = "reconstructed: per-operator durations from a text log laid end to end (no timestamps)"
FVP_LABEL = "model estimate (FVP: not cycle-accurate for the CPU)"
MAX_WARNINGS = 1000  # beyond this only the count grows
# Largest number taken from a log: 2**53 cycles is 104 days at 1 GHz, and every value stays exact
# as a JSON number and far from overflowing the int64 columns when summed.
MAX_VALUE = 2**53
MAX_CURSOR = 2**62
# Inferences a jump in ``Inference k/N`` may stand for as placeholder rows; beyond, only counted.
MAX_MISSING_ROWS = 10_000
TAG_LABEL = "per operator type: LogTicksPerTagCsv totals (every event of a tag summed; one or more invokes)"
# Console lines kept as text (about 110 bytes each): a screenful of history for the screen and the
# exports, while a log of millions of short lines stays in bounded memory (docs/limits.md).
MAX_CONSOLE_LINES = 100_000


@dataclasses.dataclass
class _Op:
    op: str
    ticks: int
    line: int
    pmu: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Pending:
    """The inference being assembled."""

    layers: list[_Op] = dataclasses.field(default_factory=list)
    counters: dict[str, int] = dataclasses.field(default_factory=dict)
    runtime: int | None = None
    input_crc: int | None = None
    output_crc: int | None = None
    problems: list[str] = dataclasses.field(default_factory=list)
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)
    first_line: int | None = None
    opened: str = ""  # the line that opened it (a job, "Inference k/N"), if one did
    job: str = ""  # the ethos-u-core-software job it runs, until its "Finished running job"
    mark: tuple[int, int] | None = None  # MLEK "Inference k/N"
    model: str | None = None  # the model the log named for it

    @property
    def has_data(self) -> bool:
        return bool(self.layers or self.counters or self.runtime is not None or self.opened)


class LogReader:
    """Assembles a timeline from log lines fed one at a time.

    Args:
        source: Where the text comes from (kept in ``InferenceTimeline.source``).
    """

    def __init__(self, source: str = "") -> None:
        self.source = source
        self.line_no = 0
        self._splitter = LineSplitter()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._mode = Mode.NONE
        self._mode_label = ""
        self._run: list[_Op] = []
        self._run_damage: list[int] = []  # lines of unusable operator lines in or before the run
        self._last_run: tuple[str, list[tuple[str, int]]] | None = None
        self._run_style = ""
        self._cur = _Pending()
        self._done: list[_Pending] = []
        self._samples: int | None = None  # MLEK "Number of samples" of the open profile
        self._profile_group = ""
        self._cntr_names: tuple[str, ...] = ()
        self._known_ops: list[str] | None = None
        self._fvp = False
        self._tag_block: dict[str, int] | None = None
        self.console: list[ConsoleLine] = []
        self.extra: dict[str, Any] = {}
        self.arena: list[ArenaSample] = []
        self.failures: list[AllocationFailure] = []
        self.units: dict[str, str] = {}
        self.stats: dict[str, CounterStat] = {}
        self.pmu_events: list[str] = []
        self.damaged = 0
        self.clock_hz: int | None = None
        self._last_cycle: int | None = None
        self.lost = 0  # inferences a run announced whose lines are not in the log
        self._next_model: str | None = None  # named by a line, for the run that follows
        self._run_model: str | None = None  # the model of the inferences being read
        self._run_open = False  # "Inference k/N" seen and no profile printed after it yet
        self._run_marks = 0  # inferences opened by "Inference k/N" since the last profile
        self._mark_run: tuple[int, int] | None = None  # (N, last k) of the current run
        self._mean_over = 0  # the profile block being read is MLEK's mean over this many
        self._block_counters: list[str] = []  # counters of the profile block being read
        self._last_block: list[str] = []  # counters of the previous complete profile block
        self._stats_models: dict[str, str | None] = {}
        self._ops_since_tags = 0  # operator lines since the last LogTicksPerTagCsv block

    # -- input ------------------------------------------------------------------------------

    def feed_bytes(self, data: bytes, cycle: int | None = None) -> None:
        """Feed raw bytes (ITM port 0 payloads, UART reads): UTF-8 split anywhere, bad bytes replaced."""
        self.feed_text(self._decoder.decode(data), cycle)

    def feed_text(self, text: str, cycle: int | None = None) -> None:
        """Feed a piece of text (any split); complete lines are processed."""
        for line in self._splitter.feed(text):
            self.feed_line(line, cycle)

    def feed_line(self, text: str, cycle: int | None = None) -> None:
        """Feed one line (without its line break). ``cycle``: when it arrived, if known (ITM)."""
        self.line_no += 1
        self._last_cycle = cycle
        if len(self.console) < MAX_CONSOLE_LINES:
            self.console.append(ConsoleLine(cycle, text))
        level, body = strip_prefix(text[:MAX_LINE_CHARS])
        if not body:
            return  # blank lines neither end a block nor a run of operator lines
        records = self._recognise(parse_view(body))
        if records is None:
            self._end_blocks()
            if level == "error":
                self._error(body)
            return
        if not any(isinstance(r, (OpTicks, OpCounter)) or (isinstance(r, Damaged) and r.operator) for r in records):
            self._flush_run()
        keep_mode = False
        for record in records:
            keep_mode |= self._apply(record, body)
        if not keep_mode:
            self._leave_mode()
        if level == "error" and not any(isinstance(r, ErrorLine) for r in records):
            self._error(body)

    def finish(self) -> InferenceTimeline:
        """Everything fed so far as a timeline (call once, at the end)."""
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self.feed_text(tail, self._last_cycle)
        for line in self._splitter.finish():
            self.feed_line(line, self._last_cycle)
        if self.line_no > MAX_CONSOLE_LINES:
            self._warn(
                f"only the first {MAX_CONSOLE_LINES:,} of {self.line_no:,} lines kept as console text "
                "(every line was read)"
            )
        if self._splitter.cut_lines:
            self._warn(
                f"{self._splitter.cut_lines} line(s) longer than {MAX_LINE_CHARS:,} characters cut there "
                f"({self._splitter.dropped_chars:,} characters dropped)"
            )
        self._flush_run()
        self._check_cut_block()
        self._leave_mode()
        self._check_cut_inference()
        self._close()
        return self._build()

    # -- recognising ------------------------------------------------------------------------

    def _recognise(self, body: str) -> list[Record] | None:
        mode = self._mode
        for recognise in _RECOGNISERS:
            found = recognise(body, mode)
            if found:
                return found
        return None

    # -- applying records ---------------------------------------------------------------------

    def _apply(self, record: Record, body: str) -> bool:
        """Use one record; True if it keeps the current block open."""
        if _out_of_range(record):
            # A number no counter can reach (garbled digits): not a measurement.
            is_op = isinstance(record, (OpTicks, OpCounter))
            record = Damaged(f"number out of range in {type(record).__name__}", operator=is_op)
        if isinstance(record, OpTicks):
            self._op(record)
            return record.style == "csv" and self._mode is Mode.TFLM_CSV
        if isinstance(record, OpCounter):
            self._op_counter(record)
        elif isinstance(record, EnterMode):
            return self._enter(record)
        elif isinstance(record, (Counter, CounterSummary, SampleCount)):
            self._counter(record)
            return self._mode is Mode.MLEK_PROFILE
        elif isinstance(record, Metrics):
            self._metrics(record)
        elif isinstance(record, PmuEventNames):
            self._event_names(record.names)
        elif isinstance(record, TagTicks):
            if self._tag_block is not None:
                self._tag_block[record.tag] = record.ticks
            return True
        elif isinstance(record, TagTotal):
            self._tag_total(record.ticks)
        elif isinstance(record, ArenaPart):
            self._arena_part(record)
            return self._mode is Mode.ARENA_TABLE
        elif isinstance(record, Allocation):
            self._allocation(record)
            return self._mode is Mode.ALLOC_TABLE
        elif isinstance(record, AllocFailure):
            self.failures.append(
                AllocationFailure(
                    record.kind, record.requested, record.available, record.missing, self._last_cycle, self.line_no
                )
            )
        elif isinstance(record, ArenaUsed):
            self.arena.append(ArenaSample(self._last_cycle, record.used, record.size, None))
            report = {"what": record.what, "used": record.used, "size": record.size, "line": self.line_no}
            self.extra.setdefault("arena_reports", []).append(report)
            if self._cur.opened:
                self._cur.facts["arena_used_bytes"] = record.used
        elif isinstance(record, Runtime):
            if self._cur.runtime is not None:
                self._close()
            self._cur.runtime = record.cycles
            self._mark_start()
        elif isinstance(record, Boundary):
            self._boundary(record)
        elif isinstance(record, InferenceMark):
            self._inference_mark(record)
        elif isinstance(record, ModelName):
            self._next_model = record.name
        elif isinstance(record, Crc):
            self._crc(record)
        elif isinstance(record, Fact):
            self._fact(record)
        elif isinstance(record, ErrorLine):
            self._error(record.text)
        elif isinstance(record, Damaged):
            self._damaged(record.reason)
            if record.operator:
                self._run_damage.append(self.line_no)
                return self._mode is Mode.TFLM_CSV
        elif isinstance(record, Neutral):
            return True
        return False

    def _enter(self, record: EnterMode) -> bool:
        if record.mode is self._mode and not record.label:
            return True  # a line inside the block says "still here"
        self._leave_mode()
        self._mode = record.mode
        self._mode_label = record.label
        if record.mode is Mode.MLEK_PROFILE:
            self._profile_group = record.label
            self._samples = None
            self._block_counters = []
            if self._is_inference_profile():
                # After several "Inference k/N", MLEK prints the mean over them (Profiler.cc).
                self._mean_over = self._run_marks if self._run_marks > 1 else 0
                self._run_marks = 0
                self._run_open = False
                if self._cur.counters or self._mean_over:
                    self._close()
        elif record.mode is Mode.TFLM_TAGS:
            self._tag_block = {}
        return True

    def _leave_mode(self) -> None:
        if self._mode is Mode.TFLM_TAGS and self._tag_block:
            self._tag_total(None)
        if self._mode is Mode.MLEK_PROFILE and self._block_counters:
            self._last_block = self._block_counters
            self._block_counters = []
        self._mode = Mode.NONE
        self._mode_label = ""

    def _end_blocks(self) -> None:
        self._flush_run()
        self._leave_mode()

    # operators ------------------------------------------------------------------------------

    def _op(self, record: OpTicks) -> None:
        if self._run and (record.style != self._run_style or (record.style == "csv" and record.event == 0)):
            self._flush_run()  # another format, or LogCsv numbering restarted: a new Log call
        self._run_style = record.style
        self._run.append(_Op(record.op, record.ticks, self.line_no))
        self._ops_since_tags += 1

    def _op_counter(self, record: OpCounter) -> None:
        if self._run and self._run[-1].op == record.op:
            name = self._cntr_name(record.counter)
            self._run[-1].pmu[name] = record.value
            self.units.setdefault(name, default_unit(name))
        else:
            self._warn(f"PMU counter line for {record.op!r} without an operator line before it")

    def _flush_run(self) -> None:
        if not self._run:
            if self._run_damage:
                self._warn(f"{len(self._run_damage)} damaged operator line(s) outside any inference")
                self._run_damage = []
            return
        run, self._run = self._run, []
        damage, self._run_damage = self._run_damage, []
        signature = [(o.op, o.ticks) for o in run]
        if self._last_run is not None and self._last_run[0] != self._run_style and self._last_run[1] == signature:
            # The same events printed again in another format (Log() then LogCsv()): not new inferences.
            self.extra.setdefault("reprinted_runs", []).append({"line": run[0].line, "style": self._run_style})
            return
        self._last_run = (self._run_style, signature)
        ops = [o.op for o in run]
        chunks = split_inferences(ops, self._known_ops)
        for k, (start, end, complete) in enumerate(chunks):
            if self._cur.layers:
                self._close()
            self._cur.layers = run[start:end]
            self._mark_start(run[start].line)
            # A damaged line belongs to the inference whose lines it sits among (or precedes).
            upto = run[chunks[k + 1][0]].line if k + 1 < len(chunks) else None
            lost = [d for d in damage if (k == 0 or d >= run[start].line) and (upto is None or d < upto)]
            if lost:
                self._cur.problems.append(f"damaged operator line(s) {', '.join(map(str, lost))}: a layer is missing")
            if not complete:
                expected = len(self._known_ops) if self._known_ops else None
                what = f"{end - start} of {expected}" if expected else f"{end - start}"
                self._cur.problems.append(f"only {what} layers logged (lines {run[start].line}-{run[end - 1].line})")
            elif self._known_ops is None and not lost:
                self._known_ops = ops[start:end]

    # counters ---------------------------------------------------------------------------------

    def _is_inference_profile(self) -> bool:
        return self._profile_group.strip().lower() in ("inference", "")

    def _counter(self, record: Counter | CounterSummary | SampleCount) -> None:
        if isinstance(record, SampleCount):
            self._samples = record.samples
            return
        unit = record.unit or default_unit(record.name)
        name = self._cntr_name_from(record.name)
        self.units.setdefault(name, unit)
        if is_npu_counter(name) and name not in self.pmu_events:
            self.pmu_events.append(name)
        in_profile = self._mode is Mode.MLEK_PROFILE
        if in_profile and not self._is_inference_profile():
            group = self.extra.setdefault("profiles", {}).setdefault(self._profile_group, {})
            group[name] = record.total if isinstance(record, CounterSummary) else record.value
            return
        if in_profile:
            self._block_counters.append(name)
        if isinstance(record, CounterSummary):
            if self._samples not in (None, 1):
                self.stats[name] = CounterStat(
                    name, unit, self._samples, record.total, record.mean, record.min, record.max
                )
                self._stats_models[name] = self._run_model
                return
            value = record.total
        else:
            value = record.value
            if in_profile and self._mean_over:
                self.stats[name] = CounterStat(name, unit, self._mean_over, None, float(value))
                self._stats_models[name] = self._run_model
                return
        if name in self._cur.counters:
            self._close()
        self._cur.counters[name] = value
        self._mark_start()

    def _cntr_name(self, index: int) -> str:
        if index < len(self._cntr_names):
            return self._cntr_names[index]
        return f"PMU_CNTR{index}"

    def _cntr_name_from(self, name: str) -> str:
        if name.startswith("PMU_CNTR") and is_ascii_digits(name[8:]) and len(name) <= 12:
            return self._cntr_name(int(name[8:]))
        return name

    def _event_names(self, names: tuple[str, ...]) -> None:
        """ExecuTorch prints the events after the values: rename what was read as PMU_CNTR<n>."""
        self._cntr_names = names
        renames = {f"PMU_CNTR{i}": n for i, n in enumerate(names)}
        for pending in [self._cur, *self._done]:
            pending.counters = {renames.get(k, k): v for k, v in pending.counters.items()}
            for op in pending.layers:
                op.pmu = {renames.get(k, k): v for k, v in op.pmu.items()}
        for old, new in renames.items():
            if old in self.units:
                self.units.pop(old)
                self.units[new] = default_unit(new)
        self.pmu_events = [renames.get(n, n) for n in self.pmu_events]
        for name in names:
            if name not in self.pmu_events:
                self.pmu_events.append(name)
        self.extra["pmu_event_names"] = list(names)

    def _metrics(self, record: Metrics) -> None:
        for group in record.groups:
            name = str(group.get("profiling_group", ""))
            samples = group.get("samples")
            if not isinstance(samples, list):
                self._damaged(f"<metrics> group {name!r} has no samples list")
                continue
            columns: dict[str, list[int]] = {}
            for sample in samples:
                values = sample.get("value") if isinstance(sample, dict) else None
                if not isinstance(values, list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
                ):
                    self._damaged(f"<metrics> sample {repr(sample)[:80]} has no list of numbers")
                    continue
                counter = self._cntr_name_from(canonical_counter(str(sample.get("name", ""))))
                if any(not 0 <= v <= MAX_VALUE for v in values):
                    self._damaged(f"<metrics> sample {counter} has a value out of range")
                    continue
                columns[counter] = [int(v) for v in values]
                self.units.setdefault(counter, default_unit(counter))
                if is_npu_counter(counter) and counter not in self.pmu_events:
                    self.pmu_events.append(counter)
            if name.lower() != "inference":
                self.extra.setdefault("profiles", {})[name] = dict(columns)
                continue
            count = max((len(v) for v in columns.values()), default=0)
            for k in range(count):
                if self._cur.counters:
                    self._close()
                self._cur.counters = {c: v[k] for c, v in columns.items() if k < len(v)}
                self._mark_start()

    # memory -----------------------------------------------------------------------------------

    def _arena_part(self, record: ArenaPart) -> None:
        arena = self.extra.setdefault("arena", {})
        arena[f"{record.part}_bytes"] = record.bytes
        if record.part == "total":
            self.arena.append(ArenaSample(self._last_cycle, record.bytes, None, None))

    def _allocation(self, record: Allocation) -> None:
        self.extra.setdefault("arena_allocations", {})[record.category] = {
            "used_bytes": record.used,
            "requested_bytes": record.requested,
            "count": record.count,
            **({"unit": record.unit} if record.unit else {}),
        }

    def _tag_total(self, total: int | None) -> None:
        block = self._tag_block or {}
        self.extra.setdefault("tflm_ticks_per_tag", []).append({"tags": block, "total": total, "line": self.line_no})
        self._tag_block = None
        if self._mode is Mode.TFLM_TAGS:
            self._mode = Mode.NONE
        # Setup phases are tagged with their C++ scope ("tflite::MicroInterpreter::AllocateTensors");
        # operators with their TFLite name. Totals of operators logged one by one just before are
        # a summary of those lines; without such lines the totals are the only per-layer numbers.
        ops = {tag: ticks for tag, ticks in block.items() if "::" not in tag}
        if ops and not self._ops_since_tags:
            self._close()
            self._cur.layers = [_Op(tag, ticks, self.line_no) for tag, ticks in ops.items()]
            self._cur.opened = "LogTicksPerTagCsv"
            self._cur.facts["per_tag_totals"] = True
            self._mark_start()
            self._close()
        self._ops_since_tags = 0

    # other ------------------------------------------------------------------------------------

    def _crc(self, record: Crc) -> None:
        if record.which == "input":
            if self._cur.has_data:
                self._close()
            self._cur.input_crc = record.value
            self._mark_start()
        else:
            if self._cur.output_crc is not None:
                self._close()
            self._cur.output_crc = record.value

    def _fact(self, record: Fact) -> None:
        if isinstance(record.value, float) and not math.isfinite(record.value):
            self._damaged(f"{record.key}: {record.value} is not a number")
            return
        if record.section == "cpu" and record.key == "clock_hz":
            if not isinstance(record.value, int) or not 0 < record.value <= MAX_VALUE:
                self._damaged(f"core clock {record.value!r} Hz is not a clock")
                return
            self.clock_hz = record.value
        if record.section == "fvp":
            self._fvp = True
        if record.section == "model" and record.key == "tensor_bytes":
            key = f"{self._mode_label or 'tensor'}_tensor_bytes"
            self.extra.setdefault("model", {}).setdefault(key, []).append(record.value)
            return
        if record.section == "model" and record.key == "operator" and isinstance(record.value, tuple):
            index, op = record.value
            ops = self.extra.setdefault("model", {}).setdefault("operators", {})
            ops[index] = op
            self._update_known_ops()
            return
        if record.section == "" and record.key == "npu_config_mismatch" and isinstance(record.value, dict):
            self.extra.setdefault("npu_config_mismatch", []).append({**record.value, "line": self.line_no})
            return
        target = self.extra if not record.section else self.extra.setdefault(record.section, {})
        if record.key == "stopped":
            target.setdefault(record.key, record.value)  # the first stop message says why
        else:
            target[record.key] = record.value
        if record.section == "model" and record.key == "operator_count":
            self._update_known_ops()
        if record.per_inference:
            self._cur.facts[record.key] = record.value

    def _update_known_ops(self) -> None:
        model = self.extra.get("model", {})
        ops = model.get("operators", {})
        count = model.get("operator_count")
        if count and len(ops) == count and sorted(ops) == list(range(count)):
            self._known_ops = [ops[i] for i in range(count)]

    def _error(self, text: str) -> None:
        errors = self.extra.setdefault("errors", [])
        if len(errors) < MAX_WARNINGS:
            errors.append({"line": self.line_no, "text": text})

    def _damaged(self, reason: str) -> None:
        self.damaged += 1
        self._warn(reason)

    def _warn(self, message: str) -> None:
        warnings = self.extra.setdefault("warnings", [])
        if len(warnings) < MAX_WARNINGS:
            warnings.append({"line": self.line_no, "text": message})

    def _mark_start(self, line: int | None = None) -> None:
        if self._cur.first_line is None:
            self._cur.first_line = line or self.line_no

    def _close(self) -> None:
        """Finish the inference being assembled (if it has data)."""
        if self._cur.has_data:
            if self._cur.model is None:
                self._cur.model = self._run_model
            self._done.append(self._cur)
        elif self._cur.input_crc is not None or self._cur.output_crc is not None:
            self._warn("a CRC line with no inference data around it")
        self._cur = _Pending()

    def _open(self, label: str) -> None:
        """Start an inference at a line that says one starts."""
        self._close()
        self._cur.opened = label
        self._cur.model = self._run_model
        self._mark_start()

    # boundaries -------------------------------------------------------------------------------

    def _boundary(self, record: Boundary) -> None:
        if record.start:
            if self._cur.job:
                self._cur.problems.append(
                    f"job {self._cur.job!r} did not finish (no 'Finished running job' line before line {self.line_no})"
                )
            if self._next_model is not None:
                self._run_model, self._next_model = self._next_model, None
            self._open(record.label)
            if record.name:
                self._cur.job = record.name
                self._cur.facts["job"] = record.name
            return
        if not self._cur.job:
            # The log starts inside the job (or its start line was lost): what came before is it.
            self._cur.problems.append(
                f"no 'Running inference job' line for job {record.name!r} before line {self.line_no}"
            )
            self._cur.opened = self._cur.opened or record.label
            self._cur.facts["job"] = record.name
            self._mark_start()
        elif self._cur.job != record.name:
            self._cur.problems.append(
                f"job {self._cur.job!r} ends with 'Finished running job: {record.name}' at line {self.line_no}"
            )
        self._cur.job = ""
        self._close()

    def _inference_mark(self, record: InferenceMark) -> None:
        k, n = record.k, record.n
        if not 1 <= k <= n:
            self._damaged(f"'Inference {k}/{n}': not a position in a run")
            return
        run = self._mark_run
        if run is None or k == 1 or n != run[0] or k <= run[1]:
            self._run_model, self._next_model = self._next_model, None
            last = 0
        else:
            last = run[1]
        if self._cur.opened and not self._cur.job and self._cur.mark is None and not _has_numbers(self._cur):
            self._cur = _Pending()  # "Running inference on <clip>" announced this run, not one more inference
        missing = k - last - 1
        if missing:
            self.lost += missing
            self._warn(f"inference(s) {last + 1}-{k - 1} of {n}: their 'Inference k/{n}' lines are not in the log")
            if missing <= MAX_MISSING_ROWS:
                for j in range(last + 1, k):
                    self._open(f"Inference {j}/{n}")
                    self._cur.mark = (j, n)
                    self._cur.facts["inference_of_run"] = f"{j}/{n}"
                    self._cur.problems.append(f"its 'Inference {j}/{n}' line is not in the log")
                self._run_marks += missing
        self._open(f"Inference {k}/{n}")
        self._cur.mark = (k, n)
        self._cur.facts["inference_of_run"] = f"{k}/{n}"
        self._mark_run = (n, k)
        self._run_marks += 1
        self._run_open = True

    def _check_cut_inference(self) -> None:
        """At the end of the log: is the inference being assembled cut short?"""
        cur = self._cur
        if cur.job:
            cur.problems.append(f"the log ends inside job {cur.job!r} (no 'Finished running job' line)")
        elif self._run_open and cur.mark is not None:
            k, n = cur.mark
            cur.problems.append(f"the log ends during inference {k} of {n} (no results or profile after it)")
        elif cur.opened and not _has_numbers(cur):
            cur.problems.append(f"the log ends before any result of the inference opened at line {cur.first_line}")

    def _check_cut_block(self) -> None:
        """At the end of the log: was the last PMU profile block cut short?"""
        if self._mode is not Mode.MLEK_PROFILE or not self._block_counters or not self._is_inference_profile():
            return
        expected = self._last_block or ["CYCLE"]  # MLEK ends each block with "NPU TOTAL"
        missing = [name for name in expected if name not in self._block_counters]
        if not missing:
            return
        reason = f"the log ends inside a PMU profile block (no {', '.join(missing)})"
        if self._mean_over:
            self._warn(reason)
            for name in self._block_counters:
                self.stats.pop(name, None)
        else:
            self._cur.problems.append(reason)

    # -- output ----------------------------------------------------------------------------------

    def _build(self) -> InferenceTimeline:
        labels: dict[str, str] = {}
        if any(p.layers for p in self._done):
            labels["time"] = TIME_LABEL
        if self._fvp:
            labels["cpu_cycles"] = FVP_LABEL
        if any(p.facts.get("per_tag_totals") for p in self._done):
            labels["layers"] = TAG_LABEL
        models = _model_labels([p.model for p in self._done] + list(self._stats_models.values()))
        builder = TimelineBuilder(
            clock_hz=self.clock_hz,
            clock_source="log" if self.clock_hz else "unknown",
            labels=labels,
            source=self.source,
        )
        model_ops = self.extra.get("model", {}).get("operators", {})
        for index, op in sorted(model_ops.items()):
            builder.add_layer(LayerInfo(index, "", op, _engine(op)))
        cursor = 0
        first_ops: dict[int, str] = {}
        per_inference: dict[int, dict[str, Any]] = {}
        for number, pending in enumerate(self._done):
            base = cursor
            if cursor + sum(op.ticks for op in pending.layers) + (pending.runtime or 0) > MAX_CURSOR:
                pending.problems.append("the log's cycle counts add up beyond 2**62: layers not laid out")
                pending.layers = []
                pending.runtime = None
            for k, op in enumerate(pending.layers):
                builder.add_span(LayerSpan(number, k, cursor, cursor + op.ticks, not pending.problems, 0, dict(op.pmu)))
                cursor += op.ticks
                if k not in first_ops:
                    first_ops[k] = op.op
                    builder.add_layer(LayerInfo(k, "", op.op, _engine(op.op)))
                elif first_ops[k] != op.op:
                    pending.problems.append(f"layer {k} is {op.op} here but {first_ops[k]} in an earlier inference")
            start = end = None
            if pending.runtime is not None:
                start, end = base, base + pending.runtime
                cursor = max(cursor, end)
            builder.add_inference(
                Inference(
                    number,
                    start,
                    end,
                    not pending.problems,
                    tuple(pending.problems),
                    (),
                    pending.input_crc,
                    pending.output_crc,
                    dict(pending.counters),
                )
            )
            if pending.counters:
                builder.timeline.pmu_totals[number] = _qualified(pending.counters, models.get(pending.model))
            facts = dict(pending.facts)
            if models:
                facts["model"] = models[pending.model]
                self.extra.setdefault("models", {}).setdefault(models[pending.model], []).append(number)
            if pending.first_line is not None:
                facts["line"] = pending.first_line
            per_inference[number] = facts
        timeline = builder.build()
        timeline.console = self.console
        timeline.arena = self.arena
        timeline.allocation_failures = self.failures
        timeline.pmu_units = dict(self.units)
        timeline.pmu_stats = self.stats
        timeline.pmu_events = tuple(self.pmu_events)
        if models:
            # Every counter named per model: no consumer can add two models' numbers together.
            timeline.pmu_units = {f"{label}/{k}": v for label in models.values() for k, v in self.units.items()}
            timeline.pmu_stats = {}
            for name, stat in self.stats.items():
                qualified = f"{models[self._stats_models.get(name)]}/{name}"
                timeline.pmu_stats[qualified] = dataclasses.replace(stat, name=qualified)
            timeline.pmu_events = tuple(f"{label}/{k}" for label in models.values() for k in self.pmu_events)
        timeline.loss.damaged_records = self.damaged
        timeline.loss.lost_records = self.lost
        extra = dict(self.extra)
        if "model" in extra and "operators" in extra["model"]:
            ops = extra["model"]["operators"]
            extra["model"] = {**extra["model"], "operators": [ops[i] for i in sorted(ops)]}
        if per_inference:
            extra["per_inference"] = per_inference
        extra["lines"] = self.line_no
        timeline.log = extra
        timeline.log_facts = log_facts(extra)
        return timeline


def split_inferences(ops: list[str], known: list[str] | None) -> list[tuple[int, int, bool]]:
    """Cut a run of operator tags into inferences: ``(start, end, complete)`` slices.

    The period is the known operator sequence when the run follows it, else the shortest sequence
    the run repeats (at least twice, the last repetition possibly cut short), else the whole run.
    """
    n = len(ops)
    period = 0
    if known:
        p = len(known)
        if all(ops[i] == known[i % p] for i in range(n)):
            period = p
    if not period:
        for p in range(1, n // 2 + 1):
            if all(ops[i] == ops[i % p] for i in range(p, n)):
                period = p
                break
    if not period:
        return [(0, n, True)]
    return [(s, min(s + period, n), s + period <= n) for s in range(0, n, period)]


def _has_numbers(pending: _Pending) -> bool:
    return bool(pending.layers or pending.counters or pending.runtime is not None)


def _model_labels(models: list[str | None]) -> dict[str | None, str]:
    """Labels of the models a log ran, in order of appearance; empty when it ran one model only."""
    distinct = list(dict.fromkeys(models))
    if len(distinct) < 2:
        return {}
    return {m: (m if m is not None else "unnamed") for m in distinct}


def _qualified(counters: dict[str, int], model: str | None) -> dict[str, int]:
    return {f"{model}/{k}" if model else k: v for k, v in counters.items()}


def _out_of_range(record: Record) -> bool:
    if isinstance(record, (Fact, Metrics, PmuEventNames, Damaged, EnterMode, Neutral, ErrorLine, Boundary, ModelName)):
        return False
    for value in (getattr(record, f.name) for f in dataclasses.fields(record)):
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_VALUE:
            return True
        if isinstance(value, float) and not 0 <= value <= MAX_VALUE:
            return True  # also NaN and infinity (a float of 400 digits)
    return False


def _engine(op: str) -> Engine:
    # TFLite Micro names Vela's NPU command stream operator "ethos-u"; everything else ran on the CPU.
    return Engine.NPU if "".join(ch for ch in op.lower() if ch.isalnum()) == "ethosu" else Engine.CPU


_RECOGNISERS: tuple[Callable[[str, Mode], list[Record] | None], ...] = (
    lambda text, mode: tflm.recognise(text, mode),
    lambda text, mode: mlek.recognise(text, mode),
    lambda text, mode: ethosu_sw.recognise(text),
    lambda text, mode: executorch.recognise(text),
    lambda text, mode: platform.recognise(text, mode),
)

__all__ = ["LogReader", "split_inferences"]
