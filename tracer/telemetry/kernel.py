"""The telemetry decoder's hot loop (ITM packets -> records -> inferences and spans): the Python
reference of its C twin.

One call walks a :class:`~tracer.decode.packets.PacketBatch` (its ``kind``/``a``/``b``/``c``
columns), frames records from the header and data ports, checks them, and assembles inferences
and layer spans into column-major int64 tables. All state between calls lives in small arrays,
so feeding a stream in any split gives the same result. When an output table is full the call
returns early with the index of the next packet; the caller grows the tables and calls again.

Loss handling (the rules of the wire-format reference): a sequence gap, an ITM overflow, a
capture gap, a reserved (misread) ITM packet, or a record that fails its length/check/shape
marks the inference in progress incomplete with a reason bit; records of an inference whose
begin was lost open an "implicit" inference that is incomplete from the start; inference numbers
that are skipped become rows marked "lost entirely".

A target that starts again inside the stream (a watchdog, a reflash) is a new session, not loss.
It shows on the wire as a TARGET_INFO record out of sequence (the firmware sends one at boot), as
a record carrying the full time that is earlier than the time so far, or as the sequence starting
again at 0 with the time behind. The inference in progress ends there ("the target restarted"),
no records are counted lost for the jump in sequence, inference numbers go on from the last one,
and the session's times are moved to follow the previous session's on the one time line (the
target's clock started again; how long the restart took is not on the wire). Each restart
leaves an event row of type ``EV_RESTART`` (outside the 6-bit record types).

DWT hardware packets (exception trace, data trace) and the loss packets go into a small table of
their own (``DW_*`` rows), each with the time of the last record before it and, when the stream
carries ITM local timestamps, its own accumulated timestamp and that record's: the kernel adds up
local-timestamp deltas itself, and a packet waits for the next timestamp packet to learn its
stamp (rows from ``S_DWT_STAMP_FROM`` on may still change), so any split of the stream gives the
same rows. :mod:`tracer.telemetry.isr` turns the rows into interrupt slices and data accesses.

Over 400 lines: one loop, kept in one module the way its C twin is, so that the two read side by
side.

:func:`gather_events` gathers the per-layer records among new event rows into columns (cache
operations, NPU jobs, the rows of arena and stack reports), batch by batch.

:func:`decode_records`, :func:`finish_stream` and :func:`gather_events` are the C kernel of
``tracer._kernels`` when it is built (:mod:`tracer.native`), else this module's Python code,
which defines the behaviour; both give identical results. The C kernel takes the record types, minimum lengths and CRC table from
here (and so from :mod:`tracer.telemetry.wire`): a record type added there needs no C change.

It is long because it mirrors the C kernel function for function (``tracer/_native``): the
reference that ``tests/test_kernels_differential.py`` checks the C code against reads best whole.
"""

from __future__ import annotations

import numpy as np

from tracer.decode.packets import PacketKind
from tracer.native import compiled
from tracer.telemetry.wire import (
    CRC16_TABLE,
    LAYER_CALIBRATION,
    MIN_WORDS,
    PORT_DATA,
    PORT_HEADER,
    PORT_TEXT,
    RecordType,
)

# -- problem bits of an inference ------------------------------------------------------------------
P_LOST_RECORDS = 1
P_OVERFLOW = 2
P_GAP = 4
P_DAMAGED = 8
P_BEGIN_MISSING = 16
P_END_MISSING = 32
P_LAYER_MISMATCH = 64
P_STATUS = 128
P_LOST_ENTIRELY = 256
P_CAPTURE_ENDED = 512
P_DESYNC = 1024
P_RESTARTED = 2048

# -- span table rows (column-major: table[row_of_column, span]) ----------------------------------
SP_INFERENCE = 0
SP_LAYER = 1
SP_START = 2
SP_END = 3
SP_COMPLETE = 4
SP_ENGINE = 5
SP_PMU = 6  # 9 columns: PMU cycle counter, then event counters 0..7
PMU_COLUMNS = 9
SP_COLS = SP_PMU + PMU_COLUMNS

# -- inference table rows ------------------------------------------------------------------------
IN_NUMBER = 0
IN_START = 1
IN_END = 2
IN_COMPLETE = 3
IN_INPUT_CRC = 4
IN_OUTPUT_CRC = 5
IN_PROBLEMS = 6
IN_STATUS = 7
IN_LOST = 8
IN_FIRMWARE_NUMBER = 9
IN_SPAN_FIRST = 10  # its spans are rows IN_SPAN_FIRST..IN_SPAN_END-1 of the span table
IN_SPAN_END = 11
IN_COLS = 12

# -- event table rows (records kept as they are: memory, marks, descriptions ...) ---------------
EV_TYPE = 0
EV_TIME = 1
EV_INFERENCE = 2  # inference number, -1 outside any
EV_WORDS = 3  # offset of its payload (words 1..n-1) in the word table
EV_COUNT = 4  # payload words stored
EV_COLS = 5

# -- decoder state slots -------------------------------------------------------------------------
S_PEND_TYPE = 0  # -1: no record pending
S_PEND_SEQ = 1
S_PEND_COUNT = 2
S_PEND_GOT = 3
S_PEND_CHECK = 4
S_PEND_ACC = 5
S_TIME = 6  # last unwrapped time
S_HAVE_TIME = 7
S_SEQ_NEXT = 8  # -1: unknown
S_INF_OPEN = 9
S_INF_ROW = 10
S_INF_FIRST_SPAN = 11
S_LAYER_OPEN = 12  # -1: none
S_LAYER_START = 13
S_LAYER_ENGINE = 14
S_PMU_COUNT = 15
S_PMU_SINCE_RESET = 16
S_LAST_NUMBER = 17  # last firmware inference number, -1
S_NUMBER_OFFSET = 18  # added to firmware numbers after a restart
S_LAST_UNIQUE = 19  # last number given to a row, -1
S_N_SPANS = 20
S_N_INF = 21
S_N_EVENTS = 22
S_N_WORDS = 23
S_N_TEXT = 24
S_OVERFLOWS = 25
S_GAPS = 26
S_LOST_RECORDS = 27
S_DAMAGED = 28
S_ORPHANS = 29
S_DESYNCS = 30
S_CALIBRATION = 31  # calibration layer pairs seen
S_RECORDS = 32  # records accepted
S_LOST_UNROWED = 33  # inferences known lost beyond the rows made for them
S_TIME_JUMPS = 34  # anchors that corrected the unwrapped time (idle > 2^32 cycles, loss)
S_PMU_EVENT_COUNT = 35  # counters in the current layer's snapshots
S_TS_ACC = 36  # local-timestamp deltas added up since the stream began
S_TS_SEEN = 37  # 1 once a local timestamp arrived
S_HDR_TS = 38  # stamp of the last record header packet (-1: the next timestamp stamps it)
S_ANCHOR_TS = 39  # stamp of the last accepted record (-1: pending or no timestamps)
S_N_DWT = 40  # rows in the DWT table
S_DWT_STAMP_FROM = 41  # first DWT row whose stamp may still change
S_TS_FIRST_TIME = 42  # first record with a known stamp: its time ...
S_TS_FIRST_TS = 43  # ... and stamp (-1: none yet)
S_TS_LAST_TIME = 44  # last record with a known stamp
S_TS_LAST_TS = 45
S_TIME_OFFSET = 46  # added to the target's time on the time line (sessions after a restart)
S_SESSIONS = 47  # restarts seen
S_PEND_OFFSET = 48  # stream offset of the pending record's header packet
S_LOST_ROWS = 49  # rows made for inferences lost entirely, over the stream
STATE_SIZE = 50

# -- DWT table rows (hardware packets: exception trace, data trace, and the loss packets) ---------
DW_KIND = 0  # PacketKind value
DW_A = 1  # the packet's a column (exception number, address, value, PC)
DW_B = 2  # its b column (action, comparator)
DW_FLAGS = 3  # its c column | flags << 8 (size, write)
DW_TIME = 4  # time of the last record before it, -1 if none yet
DW_TS = 5  # its local-timestamp stamp, -1 if none (or not yet known)
DW_ANCHOR_TS = 6  # that record's stamp, -1 if none (or not yet known)
DW_OFFSET = 7  # byte offset of the packet in the ITM stream
DW_INFERENCE = 8  # inference in progress, -1 if none
DW_COLS = 9

EV_RESTART = 64  # an event row the kernel makes: the target restarted (words: RESTART_WORDS)
RESTART_TARGET_INFO = 1  # a TARGET_INFO record out of sequence
RESTART_TIME_BACK = 2  # a record carrying the full time, earlier than the time so far
RESTART_SEQUENCE = 3  # the sequence started again at 0, the time behind
RESTART_WORDS = 5  # reason, the target's time, stream offset of the record, session number, records before it
HALF_RANGE = 1 << 31

TS_PENDING = -1  # a stamp the next local timestamp gives
TS_UNKNOWN = -2  # a stamp nobody will give (no timestamps, or lost in a gap)

MAX_LOST_ROWS = 1000  # rows made for inferences lost entirely, per jump in numbering
MAX_LOST_ROWS_TOTAL = 100_000  # ... and per stream (12 MB of rows); beyond, they are counted only
NO_VALUE = -1
MASK32 = 0xFFFFFFFF
MASK48 = (1 << 48) - 1

K_SWIT = np.uint8(PacketKind.SWIT)
K_OVERFLOW = np.uint8(PacketKind.OVERFLOW)
K_GAP = np.uint8(PacketKind.GAP)
K_RESERVED = np.uint8(PacketKind.RESERVED)
K_LTS = np.uint8(PacketKind.LTS)
K_EXCEPTION = np.uint8(PacketKind.EXCEPTION)
K_DATA_FIRST = np.uint8(PacketKind.DATA_PC)  # DATA_PC, DATA_ADDR, DATA_VALUE, DATA_MATCH
K_DATA_LAST = np.uint8(PacketKind.DATA_MATCH)

T_TARGET_INFO = int(RecordType.TARGET_INFO)
T_TIME_SYNC = int(RecordType.TIME_SYNC)
T_INF_BEGIN = int(RecordType.INFERENCE_BEGIN)
T_INF_END = int(RecordType.INFERENCE_END)
T_LAYER_BEGIN = int(RecordType.LAYER_BEGIN)
T_LAYER_END = int(RecordType.LAYER_END)
T_LAYER_INFO = int(RecordType.LAYER_INFO)
T_PMU_CONFIG = int(RecordType.PMU_CONFIG)
T_PMU_SNAPSHOT = int(RecordType.PMU_SNAPSHOT)
T_STACK = int(RecordType.STACK)
T_BUFFER_CRC = int(RecordType.BUFFER_CRC)
T_ISR_INFO = int(RecordType.ISR_INFO)
# The per-layer records gather_events gathers into columns.
T_ARENA = int(RecordType.ARENA)
T_CACHE_OP = int(RecordType.CACHE_OP)
T_NPU_JOB_BEGIN = int(RecordType.NPU_JOB_BEGIN)
T_NPU_JOB_END = int(RecordType.NPU_JOB_END)

CRC16 = np.array(CRC16_TABLE, np.int64)

# Minimum payload words per type (0: unknown type, accepted with any length >= 1).
MIN_WORDS_TABLE = np.zeros(64, np.int64)
for _type, _words in MIN_WORDS.items():
    MIN_WORDS_TABLE[int(_type)] = _words

# Worst-case table growth of one packet, checked before each packet (a record and a restart).
NEED_INF = MAX_LOST_ROWS + 2
NEED_EVENTS = 2
NEED_WORDS = 64 + RESTART_WORDS
NEED_TEXT = 4


def on_time_line(state: np.ndarray) -> int:
    """The last record's time on the time line (the target's time plus the sessions' offset),
    wrapping at 64 bits as every time the kernel computes does (a hostile stream can push either
    near the limit; no warning, no error, the same number the C twin gives).
    """
    total = int(state[S_TIME]) + int(state[S_TIME_OFFSET])
    return (total + (1 << 63)) % (1 << 64) - (1 << 63)


def new_state() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (state, pending payload words, PMU snapshots [first, last]) for a fresh stream."""
    state = np.zeros(STATE_SIZE, np.int64)
    state[S_PEND_TYPE] = -1
    state[S_SEQ_NEXT] = -1
    state[S_LAYER_OPEN] = -1
    state[S_LAST_NUMBER] = -1
    state[S_LAST_UNIQUE] = -1
    state[S_HDR_TS] = TS_PENDING
    state[S_ANCHOR_TS] = TS_PENDING
    state[S_TS_FIRST_TS] = -1
    state[S_TS_LAST_TS] = -1
    return state, np.zeros(64, np.int64), np.zeros((2, PMU_COLUMNS), np.int64)


def new_dwt_table(capacity: int = 256) -> np.ndarray:
    """An empty DWT table (``DW_*`` rows)."""
    return np.zeros((DW_COLS, capacity), np.int64)


def _mark(state, infs, bit):
    """Mark the inference in progress incomplete for ``bit``."""
    if state[S_INF_OPEN]:
        row = state[S_INF_ROW]
        infs[IN_PROBLEMS, row] |= bit


def _open_inference(state, infs, spans, number, firmware_number, start, problems):
    row = state[S_N_INF]
    infs[IN_NUMBER, row] = number
    infs[IN_START, row] = start
    infs[IN_END, row] = NO_VALUE
    infs[IN_COMPLETE, row] = 0
    infs[IN_INPUT_CRC, row] = NO_VALUE
    infs[IN_OUTPUT_CRC, row] = NO_VALUE
    infs[IN_PROBLEMS, row] = problems
    infs[IN_STATUS, row] = 0
    infs[IN_LOST, row] = 0
    infs[IN_FIRMWARE_NUMBER, row] = firmware_number
    infs[IN_SPAN_FIRST, row] = state[S_N_SPANS]
    infs[IN_SPAN_END, row] = state[S_N_SPANS]
    state[S_N_INF] = row + 1
    state[S_INF_OPEN] = 1
    state[S_INF_ROW] = row
    state[S_INF_FIRST_SPAN] = state[S_N_SPANS]
    state[S_LAYER_OPEN] = -1
    if number > state[S_LAST_UNIQUE]:
        state[S_LAST_UNIQUE] = number


def _close_inference(state, infs, spans, end):
    row = state[S_INF_ROW]
    if state[S_LAYER_OPEN] >= 0:
        infs[IN_PROBLEMS, row] |= P_LAYER_MISMATCH
    infs[IN_END, row] = end
    complete = 1 if infs[IN_PROBLEMS, row] == 0 else 0
    infs[IN_COMPLETE, row] = complete
    for s in range(state[S_INF_FIRST_SPAN], state[S_N_SPANS]):
        spans[SP_COMPLETE, s] = complete
    infs[IN_SPAN_END, row] = state[S_N_SPANS]
    state[S_INF_OPEN] = 0
    state[S_LAYER_OPEN] = -1


def _lost_rows(state, missing):
    """How many rows to make for ``missing`` inferences lost entirely (numbers that jump by 2^20
    again and again would otherwise make rows without end); the rest are counted only.
    """
    rows = missing if missing < MAX_LOST_ROWS else MAX_LOST_ROWS
    left = MAX_LOST_ROWS_TOTAL - state[S_LOST_ROWS]
    if rows > left:
        rows = left if left > 0 else 0
    state[S_LOST_ROWS] += rows
    return rows


def _insert_lost_rows(state, infs, row, first, missing):
    """Rows for inferences lost entirely, placed before the open row ``row``; returns its new index."""
    rows = _lost_rows(state, missing)
    moved = row + rows
    for col in range(IN_COLS):
        infs[col, moved] = infs[col, row]
    for k in range(rows):
        r = row + k
        infs[IN_NUMBER, r] = first + k
        infs[IN_START, r] = NO_VALUE
        infs[IN_END, r] = NO_VALUE
        infs[IN_COMPLETE, r] = 0
        infs[IN_INPUT_CRC, r] = NO_VALUE
        infs[IN_OUTPUT_CRC, r] = NO_VALUE
        infs[IN_PROBLEMS, r] = P_LOST_ENTIRELY
        infs[IN_STATUS, r] = 0
        infs[IN_LOST, r] = 0
        infs[IN_FIRMWARE_NUMBER, r] = first + k - state[S_NUMBER_OFFSET]
        infs[IN_SPAN_FIRST, r] = infs[IN_SPAN_FIRST, moved]
        infs[IN_SPAN_END, r] = infs[IN_SPAN_FIRST, moved]
    state[S_INF_ROW] = moved
    state[S_N_INF] = moved + 1
    state[S_LOST_UNROWED] += missing - rows
    return moved


def _ensure_inference(state, infs, spans):
    """Records of an inference arrived with none open: its begin was lost (or never sent)."""
    if not state[S_INF_OPEN]:
        _open_inference(state, infs, spans, state[S_LAST_UNIQUE] + 1, NO_VALUE, NO_VALUE, P_BEGIN_MISSING)


def _store_event(state, infs, events, words_out, rtype, t, pend, count):
    e = state[S_N_EVENTS]
    events[EV_TYPE, e] = rtype
    events[EV_TIME, e] = t
    events[EV_INFERENCE, e] = infs[IN_NUMBER, state[S_INF_ROW]] if state[S_INF_OPEN] else NO_VALUE
    w = state[S_N_WORDS]
    events[EV_WORDS, e] = w
    events[EV_COUNT, e] = count - 1
    for k in range(1, count):
        words_out[w + k - 1] = pend[k]
    state[S_N_WORDS] = w + count - 1
    state[S_N_EVENTS] = e + 1


def _shape_ok(rtype, pend, count):
    """Check that a record has the words its type needs."""
    if count < MIN_WORDS_TABLE[rtype]:
        return False
    if rtype == T_LAYER_INFO:
        op_len = pend[2] & 0xFF
        name_len = (pend[2] >> 8) & 0xFF
        return count >= 3 + (op_len + 3) // 4 + (name_len + 3) // 4
    if rtype == T_STACK:
        return count >= 4 + (((pend[1] >> 16) & 0xFF) + 3) // 4
    if rtype == T_PMU_SNAPSHOT:
        n = pend[1] & 0xFF
        return n <= 8 and count >= 4 + n
    if rtype == T_PMU_CONFIG:
        n = (pend[1] >> 8) & 0xFF
        return n <= 8 and count >= 2 + (n + 1) // 2
    if rtype == T_ISR_INFO:
        return count >= 2 + (((pend[1] >> 16) & 0xFF) + 3) // 4
    return True


def _record(state, pend, pmu, rtype, count, spans, infs, events, words_out):
    """Apply one complete, checked record."""
    lo = pend[0]
    if rtype in (T_TARGET_INFO, T_TIME_SYNC, T_INF_BEGIN):
        anchor = (pend[1] << 32) | lo
        if state[S_HAVE_TIME] and anchor != state[S_TIME]:
            delta = (lo - (state[S_TIME] & MASK32)) & MASK32
            if state[S_TIME] + delta != anchor:
                state[S_TIME_JUMPS] += 1
        t = anchor
    elif state[S_HAVE_TIME]:
        t = state[S_TIME] + ((lo - (state[S_TIME] & MASK32)) & MASK32)
    else:
        t = lo
    state[S_TIME] = t
    state[S_HAVE_TIME] = 1
    t = t + state[S_TIME_OFFSET]  # on the time line

    if rtype == T_INF_BEGIN:
        if state[S_INF_OPEN]:
            infs[IN_PROBLEMS, state[S_INF_ROW]] |= P_END_MISSING
            _close_inference(state, infs, spans, NO_VALUE)
        number = pend[2]
        if state[S_LAST_NUMBER] >= 0 and number + state[S_NUMBER_OFFSET] <= state[S_LAST_UNIQUE]:
            # Numbers went back: the firmware restarted. Keep row numbers unique.
            state[S_NUMBER_OFFSET] = state[S_LAST_UNIQUE] + 1 - number
        unique = number + state[S_NUMBER_OFFSET]
        if state[S_LAST_UNIQUE] >= 0 and unique > state[S_LAST_UNIQUE] + 1:
            missing = unique - state[S_LAST_UNIQUE] - 1
            rows = _lost_rows(state, missing)
            first = state[S_LAST_UNIQUE] + 1
            for k in range(rows):
                _open_inference(
                    state, infs, spans, first + k, first + k - state[S_NUMBER_OFFSET], NO_VALUE, P_LOST_ENTIRELY
                )
                _close_inference(state, infs, spans, NO_VALUE)
            state[S_LOST_UNROWED] += missing - rows
        _open_inference(state, infs, spans, unique, number, t, 0)
        state[S_LAST_NUMBER] = number
        return
    if rtype == T_INF_END:
        _ensure_inference(state, infs, spans)
        row = state[S_INF_ROW]
        number = pend[1]
        if infs[IN_FIRMWARE_NUMBER, row] == NO_VALUE:
            # An inference whose begin was lost learns its number here.
            unique = number + state[S_NUMBER_OFFSET]
            previous = infs[IN_NUMBER, row - 1] if row > 0 else NO_VALUE
            if unique > previous:
                if previous >= 0 and unique > previous + 1:
                    row = _insert_lost_rows(state, infs, row, previous + 1, unique - previous - 1)
                infs[IN_NUMBER, row] = unique
                for s in range(state[S_INF_FIRST_SPAN], state[S_N_SPANS]):
                    spans[SP_INFERENCE, s] = unique
                if unique > state[S_LAST_UNIQUE]:
                    state[S_LAST_UNIQUE] = unique
            infs[IN_FIRMWARE_NUMBER, row] = number
            state[S_LAST_NUMBER] = number
        elif infs[IN_FIRMWARE_NUMBER, row] != number:
            infs[IN_PROBLEMS, row] |= P_DAMAGED
        if pend[2] != 0:
            infs[IN_PROBLEMS, row] |= P_STATUS
            infs[IN_STATUS, row] = pend[2]
        _close_inference(state, infs, spans, t)
        return
    if rtype == T_LAYER_BEGIN:
        index = pend[1] & 0xFFFF
        if index == LAYER_CALIBRATION:
            return
        _ensure_inference(state, infs, spans)
        if state[S_LAYER_OPEN] >= 0:
            infs[IN_PROBLEMS, state[S_INF_ROW]] |= P_LAYER_MISMATCH
        state[S_LAYER_OPEN] = index
        state[S_LAYER_START] = t
        state[S_LAYER_ENGINE] = (pend[1] >> 16) & 0xF
        state[S_PMU_COUNT] = 0
        return
    if rtype == T_LAYER_END:
        index = pend[1] & 0xFFFF
        if index == LAYER_CALIBRATION:
            state[S_CALIBRATION] += 1
            return
        _ensure_inference(state, infs, spans)
        if state[S_LAYER_OPEN] != index:
            infs[IN_PROBLEMS, state[S_INF_ROW]] |= P_LAYER_MISMATCH
            state[S_LAYER_OPEN] = -1
            return
        s = state[S_N_SPANS]
        spans[SP_INFERENCE, s] = infs[IN_NUMBER, state[S_INF_ROW]]
        spans[SP_LAYER, s] = index
        spans[SP_START, s] = state[S_LAYER_START]
        spans[SP_END, s] = t
        spans[SP_COMPLETE, s] = 0  # decided when the inference ends
        spans[SP_ENGINE, s] = state[S_LAYER_ENGINE]
        n_pmu = state[S_PMU_COUNT]
        events_n = state[S_PMU_EVENT_COUNT]
        for k in range(PMU_COLUMNS):
            value = NO_VALUE
            if k <= events_n and n_pmu > 0:
                if state[S_PMU_SINCE_RESET]:
                    value = pmu[1, k]
                elif n_pmu >= 2:
                    width = MASK48 if k == 0 else MASK32
                    value = (pmu[1, k] - pmu[0, k]) & width
            spans[SP_PMU + k, s] = value
        state[S_N_SPANS] = s + 1
        state[S_LAYER_OPEN] = -1
        return
    if rtype == T_PMU_SNAPSHOT:
        if state[S_LAYER_OPEN] < 0:
            return
        n = pend[1] & 0xFF
        slot = 0 if state[S_PMU_COUNT] == 0 else 1
        pmu[slot, 0] = pend[2] | ((pend[3] & 0xFFFF) << 32)
        for k in range(8):
            pmu[slot, 1 + k] = pend[4 + k] if k < n else NO_VALUE
        if slot == 0:
            for k in range(PMU_COLUMNS):
                pmu[1, k] = pmu[0, k]
        state[S_PMU_COUNT] += 1
        state[S_PMU_SINCE_RESET] = 1 if (pend[1] >> 8) & 1 else 0
        state[S_PMU_EVENT_COUNT] = n
        return
    if rtype == T_BUFFER_CRC and state[S_INF_OPEN] and pend[1] <= 1:
        infs[IN_INPUT_CRC + pend[1], state[S_INF_ROW]] = pend[2]
        return
    if rtype == T_TIME_SYNC:
        return
    _store_event(state, infs, events, words_out, rtype, t, pend, count)


def _restart_reason(state, pend, rtype, seq):
    """Why the checked record in ``pend`` shows the target started again, or 0."""
    if state[S_RECORDS] == 0 or not state[S_HAVE_TIME]:
        return 0
    unexpected = state[S_SEQ_NEXT] >= 0 and seq != state[S_SEQ_NEXT]
    if rtype in (T_TARGET_INFO, T_TIME_SYNC, T_INF_BEGIN):
        if rtype == T_TARGET_INFO and unexpected:
            return RESTART_TARGET_INFO
        if ((pend[1] << 32) | pend[0]) < state[S_TIME]:
            return RESTART_TIME_BACK
        return 0
    if unexpected and seq == 0 and ((pend[0] - (state[S_TIME] & MASK32)) & MASK32) >= HALF_RANGE:
        return RESTART_SEQUENCE
    return 0


def _restart(state, pend, rtype, reason, spans, infs, events, words_out):
    """The target started again with the record in ``pend``: a new session."""
    state[S_LAYER_OPEN] = -1  # a layer cut by the restart is not a begin/end mismatch
    if state[S_INF_OPEN]:
        infs[IN_PROBLEMS, state[S_INF_ROW]] |= P_RESTARTED
        _close_inference(state, infs, spans, NO_VALUE)
    anchored = rtype in (T_TARGET_INFO, T_TIME_SYNC, T_INF_BEGIN)
    target_time = (pend[1] << 32) | pend[0] if anchored else pend[0]
    last = state[S_TIME] + state[S_TIME_OFFSET]
    if target_time + state[S_TIME_OFFSET] <= last:
        state[S_TIME_OFFSET] = last + 1 - target_time
    state[S_HAVE_TIME] = 0  # the record's own time, not unwrapped from the last session's
    state[S_NUMBER_OFFSET] = state[S_LAST_UNIQUE] + 1
    state[S_LAST_NUMBER] = -1
    state[S_TS_FIRST_TS] = -1  # cycles per timestamp tick: from this session's records on
    state[S_TS_LAST_TS] = -1
    state[S_SESSIONS] += 1
    e = state[S_N_EVENTS]
    events[EV_TYPE, e] = EV_RESTART
    events[EV_TIME, e] = target_time + state[S_TIME_OFFSET]
    events[EV_INFERENCE, e] = NO_VALUE
    w = state[S_N_WORDS]
    events[EV_WORDS, e] = w
    events[EV_COUNT, e] = RESTART_WORDS
    words_out[w] = reason
    words_out[w + 1] = target_time
    words_out[w + 2] = state[S_PEND_OFFSET]
    words_out[w + 3] = state[S_SESSIONS]
    words_out[w + 4] = state[S_RECORDS]
    state[S_N_WORDS] = w + RESTART_WORDS
    state[S_N_EVENTS] = e + 1


def _fold(acc):
    """The 12-bit check from the accumulator: CRC-16/CCITT over its four little-endian bytes."""
    crc = 0xFFFF
    for i in range(4):
        crc = ((crc << 8) ^ CRC16[((crc >> 8) ^ (acc >> (8 * i))) & 0xFF]) & 0xFFFF
    return crc & 0xFFF


def _loss(state, infs, bit, drop_pending):
    _mark(state, infs, bit)
    if drop_pending and state[S_PEND_TYPE] >= 0:
        state[S_PEND_TYPE] = -1
        state[S_DAMAGED] += 1


def _store_dwt(state, infs, dwt, kind, a, b, c, flags, offset):
    """Keep a hardware packet with the time and stamp of the record before it."""
    r = state[S_N_DWT]
    dwt[DW_KIND, r] = kind
    dwt[DW_A, r] = a
    dwt[DW_B, r] = b
    dwt[DW_FLAGS, r] = c | (flags << 8)
    dwt[DW_TIME, r] = state[S_TIME] + state[S_TIME_OFFSET] if state[S_HAVE_TIME] else NO_VALUE
    dwt[DW_TS, r] = TS_PENDING
    dwt[DW_ANCHOR_TS, r] = state[S_ANCHOR_TS] if state[S_HAVE_TIME] else TS_UNKNOWN
    dwt[DW_OFFSET, r] = offset
    dwt[DW_INFERENCE, r] = infs[IN_NUMBER, state[S_INF_ROW]] if state[S_INF_OPEN] else NO_VALUE
    state[S_N_DWT] = r + 1


def _stamp(state, dwt, delta):
    """A local timestamp: it stamps every packet since the previous one."""
    ts = state[S_TS_ACC] + delta
    state[S_TS_ACC] = ts
    state[S_TS_SEEN] = 1
    if state[S_HDR_TS] == TS_PENDING:
        state[S_HDR_TS] = ts
    if state[S_ANCHOR_TS] == TS_PENDING and state[S_HAVE_TIME]:
        state[S_ANCHOR_TS] = ts
        _calibrate(state, state[S_TIME] + state[S_TIME_OFFSET], ts)
    for r in range(state[S_DWT_STAMP_FROM], state[S_N_DWT]):
        if dwt[DW_TS, r] == TS_PENDING:
            dwt[DW_TS, r] = ts
        if dwt[DW_ANCHOR_TS, r] == TS_PENDING:
            dwt[DW_ANCHOR_TS, r] = ts
    state[S_DWT_STAMP_FROM] = state[S_N_DWT]


def _unstamp(state, dwt):
    """Bytes were lost: stamps still pending would come from after the loss; nobody gives them."""
    for r in range(state[S_DWT_STAMP_FROM], state[S_N_DWT]):
        if dwt[DW_TS, r] == TS_PENDING:
            dwt[DW_TS, r] = TS_UNKNOWN
        if dwt[DW_ANCHOR_TS, r] == TS_PENDING:
            dwt[DW_ANCHOR_TS, r] = TS_UNKNOWN
    state[S_DWT_STAMP_FROM] = state[S_N_DWT]
    state[S_HDR_TS] = TS_UNKNOWN
    state[S_ANCHOR_TS] = TS_UNKNOWN


def _calibrate(state, t, ts):
    """Remember (record time, stamp) pairs: the first and the last give cycles per timestamp tick."""
    if state[S_TS_FIRST_TS] < 0:
        state[S_TS_FIRST_TIME] = t
        state[S_TS_FIRST_TS] = ts
    state[S_TS_LAST_TIME] = t
    state[S_TS_LAST_TS] = ts


def decode_records(
    kind,
    a,
    b,
    c,
    flags,
    ts_col,
    offset,
    start,
    state,
    pend,
    pmu,
    spans,
    infs,
    events,
    words_out,
    text,
    text_time,
    dwt,
):
    """Process packets ``start:`` of a batch.

    ``ts_col`` is not used for timing (the kernel adds up local timestamps itself, whatever the
    ITM decoder held back); it is accepted so the batch's columns pass through unchanged.

    Returns:
        The index of the first packet not processed: ``len(kind)`` when done, less when a table
        (spans, inferences, events, words, text, DWT rows) is too small; grow it and call again
        from there.
    """
    n = kind.shape[0]
    cap_spans = spans.shape[1]
    cap_inf = infs.shape[1]
    cap_events = events.shape[1]
    cap_words = words_out.shape[0]
    cap_text = text.shape[0]
    cap_dwt = dwt.shape[1]
    i = start
    while i < n:
        if (
            state[S_N_SPANS] + 1 > cap_spans
            or state[S_N_INF] + NEED_INF > cap_inf
            or state[S_N_EVENTS] + NEED_EVENTS > cap_events
            or state[S_N_WORDS] + NEED_WORDS > cap_words
            or state[S_N_TEXT] + NEED_TEXT > cap_text
        ):
            return i
        k = kind[i]
        if k != K_SWIT and state[S_N_DWT] + 1 > cap_dwt:  # hardware packets need a DWT row
            return i
        if k == K_SWIT:
            port = b[i]
            value = np.int64(a[i] & MASK32)
            if port == PORT_DATA:
                if c[i] != 4 or state[S_PEND_TYPE] < 0:
                    state[S_ORPHANS] += 1
                    _mark(state, infs, P_DAMAGED)
                else:
                    got = state[S_PEND_GOT]
                    pend[got] = value
                    acc = state[S_PEND_ACC]
                    acc = (((acc << 5) | (acc >> 27)) & MASK32) ^ value
                    state[S_PEND_ACC] = acc
                    got += 1
                    state[S_PEND_GOT] = got
                    if got == state[S_PEND_COUNT]:
                        rtype = state[S_PEND_TYPE]
                        state[S_PEND_TYPE] = -1
                        if _fold(acc) != state[S_PEND_CHECK] or not _shape_ok(rtype, pend, got):
                            state[S_DAMAGED] += 1
                            _mark(state, infs, P_DAMAGED)
                        else:
                            seq = state[S_PEND_SEQ]
                            reason = _restart_reason(state, pend, rtype, seq)
                            if reason:
                                _restart(state, pend, rtype, reason, spans, infs, events, words_out)
                            elif state[S_SEQ_NEXT] >= 0 and seq != state[S_SEQ_NEXT]:
                                lost = (seq - state[S_SEQ_NEXT]) & 0xFF
                                state[S_LOST_RECORDS] += lost
                                if state[S_INF_OPEN]:
                                    infs[IN_PROBLEMS, state[S_INF_ROW]] |= P_LOST_RECORDS
                                    infs[IN_LOST, state[S_INF_ROW]] += lost
                            state[S_SEQ_NEXT] = (seq + 1) & 0xFF
                            state[S_RECORDS] += 1
                            _record(state, pend, pmu, rtype, got, spans, infs, events, words_out)
                            if state[S_TS_SEEN]:
                                # Its header's stamp: hardware packets after it are timed from it
                                # (before any timestamp, the anchor stays pending: the first one
                                # stamps the latest record).
                                state[S_ANCHOR_TS] = state[S_HDR_TS]
                                if state[S_HDR_TS] >= 0:
                                    _calibrate(state, state[S_TIME] + state[S_TIME_OFFSET], state[S_HDR_TS])
            elif port == PORT_HEADER:
                if state[S_PEND_TYPE] >= 0:  # the previous record was cut short
                    state[S_PEND_TYPE] = -1
                    state[S_DAMAGED] += 1
                    _mark(state, infs, P_DAMAGED)
                rtype = value & 0x3F
                count = (value >> 6) & 0x3F
                if c[i] != 4 or rtype == 0 or count == 0:
                    state[S_DAMAGED] += 1
                    _mark(state, infs, P_DAMAGED)
                else:
                    state[S_PEND_TYPE] = rtype
                    state[S_PEND_SEQ] = (value >> 12) & 0xFF
                    state[S_PEND_COUNT] = count
                    state[S_PEND_GOT] = 0
                    state[S_PEND_CHECK] = (value >> 20) & 0xFFF
                    state[S_PEND_ACC] = value & 0xFFFFF
                    state[S_PEND_OFFSET] = offset[i]
                    if state[S_TS_SEEN]:
                        state[S_HDR_TS] = TS_PENDING  # the next local timestamp stamps this header
            elif port == PORT_TEXT:
                t = state[S_TIME] + state[S_TIME_OFFSET] if state[S_HAVE_TIME] else NO_VALUE
                for j in range(min(np.int64(c[i]), NEED_TEXT)):
                    text[state[S_N_TEXT]] = (value >> (8 * j)) & 0xFF
                    text_time[state[S_N_TEXT]] = t
                    state[S_N_TEXT] += 1
        elif k == K_LTS:
            _stamp(state, dwt, np.int64(a[i]))
        elif k == K_EXCEPTION or (K_DATA_FIRST <= k <= K_DATA_LAST):
            _store_dwt(
                state,
                infs,
                dwt,
                k,
                np.int64(a[i] & MASK32),
                np.int64(b[i]),
                np.int64(c[i]),
                np.int64(flags[i]),
                offset[i],
            )
        elif k == K_OVERFLOW:
            state[S_OVERFLOWS] += 1
            _loss(state, infs, P_OVERFLOW, False)
            _store_dwt(state, infs, dwt, k, 0, 0, 0, 0, offset[i])
        elif k == K_GAP:
            state[S_GAPS] += 1
            _loss(state, infs, P_GAP, True)
            _unstamp(state, dwt)
            _store_dwt(state, infs, dwt, k, 0, 0, 0, 0, offset[i])
        elif k == K_RESERVED:
            state[S_DESYNCS] += 1
            _loss(state, infs, P_DESYNC, True)
            _unstamp(state, dwt)
            _store_dwt(state, infs, dwt, k, 0, 0, 0, 0, offset[i])
        i += 1
    return i


def finish_stream(state, infs, spans):
    """End of stream: a pending record is cut, an open inference never ended."""
    if state[S_PEND_TYPE] >= 0:
        state[S_PEND_TYPE] = -1
        state[S_DAMAGED] += 1
        _mark(state, infs, P_DAMAGED)
    if state[S_INF_OPEN]:
        infs[IN_PROBLEMS, state[S_INF_ROW]] |= P_CAPTURE_ENDED
        _close_inference(state, infs, spans, NO_VALUE)


def gather_events(
    events: np.ndarray,
    words: np.ndarray,
    lo: int,
    hi: int,
    last_job: int,
    arena: np.ndarray,
    n_arena: int,
    stacks: np.ndarray,
    n_stacks: int,
    cache_ops: np.ndarray,
    n_cache: int,
    jobs: np.ndarray,
    n_jobs: int,
) -> tuple[int, int, int, int, int]:
    """Append the per-layer records of event rows ``lo:hi`` to their column tables (column-major,
    with room for ``hi - lo`` more columns after their counts): the rows of arena and stack reports
    (1 row each), cache operations as (time, op, address, length, inference) and NPU jobs as
    (begin time, end time, inference, job, end row). Jobs do not nest: an end pairs with the job row just
    before it (``last_job`` carries the last one of earlier rows, -1: none), if it is a begin of
    the same job.

    Returns:
        The new counts (arena, stacks, cache operations, jobs) and the last job row.
    """
    types = events[EV_TYPE, lo:hi]
    rows = np.arange(lo, hi)
    counts: list[int] = []
    for table, n, rtype in ((arena, n_arena, T_ARENA), (stacks, n_stacks, T_STACK)):
        found = rows[types == rtype]
        table[0, n : n + len(found)] = found
        counts.append(n + len(found))
    found = rows[types == T_CACHE_OP]
    at = events[EV_WORDS, found]
    cache = (events[EV_TIME, found], words[at], words[at + 1], words[at + 2], events[EV_INFERENCE, found])
    for j, column in enumerate(cache):
        cache_ops[j, n_cache : n_cache + len(found)] = column
    counts.append(n_cache + len(found))
    found = rows[(types == T_NPU_JOB_BEGIN) | (types == T_NPU_JOB_END)]
    if len(found):
        with_last = found if last_job < 0 else np.concatenate((np.array([last_job]), found))
        is_end = events[EV_TYPE, with_last] == T_NPU_JOB_END
        job = words[events[EV_WORDS, with_last]]
        pair = np.flatnonzero(is_end[1:] & ~is_end[:-1] & (job[1:] == job[:-1]))
        begins, ends = with_last[pair], with_last[pair + 1]
        gathered = (events[EV_TIME, begins], events[EV_TIME, ends], events[EV_INFERENCE, begins], job[pair], ends)
        for j, column in enumerate(gathered):
            jobs[j, n_jobs : n_jobs + len(pair)] = column
        n_jobs += len(pair)
        last_job = int(found[-1])
    return counts[0], counts[1], counts[2], n_jobs, last_job


# The dispatch point: the C kernel when built, else the reference above.
decode_records_python = decode_records
finish_stream_python = finish_stream
gather_events_python = gather_events
_native = compiled("TelemetryKernel", globals())
decode_records_native = None if _native is None else _native.decode_records
finish_stream_native = None if _native is None else _native.finish_stream
gather_events_native = None if _native is None else _native.gather_events
decode_records = decode_records_native or decode_records_python
finish_stream = finish_stream_native or finish_stream_python
gather_events = gather_events_native or gather_events_python
