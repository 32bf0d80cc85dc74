/* Telemetry records -> inferences and layer spans: the port of tracer/telemetry/kernel.py (its
 * docstring has the loss rules). Record types, minimum lengths, the CRC table, the ports and the
 * packet kinds come from the Python modules; a record type added there needs no change here. */
#include "common.h"

enum { P_LOST_RECORDS = 1, P_OVERFLOW = 2, P_GAP = 4, P_DAMAGED = 8, P_BEGIN_MISSING = 16, P_END_MISSING = 32,
       P_LAYER_MISMATCH = 64, P_STATUS = 128, P_LOST_ENTIRELY = 256, P_CAPTURE_ENDED = 512, P_DESYNC = 1024,
       P_RESTARTED = 2048 };
enum { SP_INFERENCE = 0, SP_LAYER = 1, SP_START = 2, SP_END = 3, SP_COMPLETE = 4, SP_ENGINE = 5, SP_PMU = 6,
       PMU_COLUMNS = 9, SP_COLS = SP_PMU + PMU_COLUMNS };
enum { IN_NUMBER = 0, IN_START = 1, IN_END = 2, IN_COMPLETE = 3, IN_INPUT_CRC = 4, IN_OUTPUT_CRC = 5,
       IN_PROBLEMS = 6, IN_STATUS = 7, IN_LOST = 8, IN_FIRMWARE_NUMBER = 9, IN_SPAN_FIRST = 10, IN_SPAN_END = 11,
       IN_COLS = 12 };
enum { EV_TYPE = 0, EV_TIME = 1, EV_INFERENCE = 2, EV_WORDS = 3, EV_COUNT = 4, EV_COLS = 5 };
enum { S_PEND_TYPE = 0, S_PEND_SEQ = 1, S_PEND_COUNT = 2, S_PEND_GOT = 3, S_PEND_CHECK = 4, S_PEND_ACC = 5,
       S_TIME = 6, S_HAVE_TIME = 7, S_SEQ_NEXT = 8, S_INF_OPEN = 9, S_INF_ROW = 10, S_INF_FIRST_SPAN = 11,
       S_LAYER_OPEN = 12, S_LAYER_START = 13, S_LAYER_ENGINE = 14, S_PMU_COUNT = 15, S_PMU_SINCE_RESET = 16,
       S_LAST_NUMBER = 17, S_NUMBER_OFFSET = 18, S_LAST_UNIQUE = 19, S_N_SPANS = 20, S_N_INF = 21,
       S_N_EVENTS = 22, S_N_WORDS = 23, S_N_TEXT = 24, S_OVERFLOWS = 25, S_GAPS = 26, S_LOST_RECORDS = 27,
       S_DAMAGED = 28, S_ORPHANS = 29, S_DESYNCS = 30, S_CALIBRATION = 31, S_RECORDS = 32, S_LOST_UNROWED = 33,
       S_TIME_JUMPS = 34, S_PMU_EVENT_COUNT = 35, S_TS_ACC = 36, S_TS_SEEN = 37, S_HDR_TS = 38, S_ANCHOR_TS = 39,
       S_N_DWT = 40, S_DWT_STAMP_FROM = 41, S_TS_FIRST_TIME = 42, S_TS_FIRST_TS = 43, S_TS_LAST_TIME = 44,
       S_TS_LAST_TS = 45, S_TIME_OFFSET = 46, S_SESSIONS = 47, S_PEND_OFFSET = 48, S_LOST_ROWS = 49, STATE_SIZE = 50 };
enum { DW_KIND = 0, DW_A = 1, DW_B = 2, DW_FLAGS = 3, DW_TIME = 4, DW_TS = 5, DW_ANCHOR_TS = 6, DW_OFFSET = 7,
       DW_INFERENCE = 8, DW_COLS = 9 };
enum { EV_RESTART = 64, RESTART_TARGET_INFO = 1, RESTART_TIME_BACK = 2, RESTART_SEQUENCE = 3, RESTART_WORDS = 5 };
enum { TS_PENDING = -1, TS_UNKNOWN = -2, MAX_LOST_ROWS = 1000, MAX_LOST_ROWS_TOTAL = 100000, NO_VALUE = -1, NEED_INF = MAX_LOST_ROWS + 2,
       NEED_EVENTS = 2, NEED_WORDS = 64 + RESTART_WORDS, NEED_TEXT = 4, PEND_WORDS = 64, RECORD_TYPES = 64 };
#define HALF_RANGE (((int64_t)1) << 31)
#define MASK32 ((int64_t)0xFFFFFFFF)
#define MASK48 ((((int64_t)1) << 48) - 1)

#define L(name) {#name, name}
static const Layout layout[] = {
    L(P_LOST_RECORDS), L(P_OVERFLOW), L(P_GAP), L(P_DAMAGED), L(P_BEGIN_MISSING), L(P_END_MISSING),
    L(P_LAYER_MISMATCH), L(P_STATUS), L(P_LOST_ENTIRELY), L(P_CAPTURE_ENDED), L(P_DESYNC), L(P_RESTARTED),
    L(SP_INFERENCE), L(SP_LAYER), L(SP_START), L(SP_END), L(SP_COMPLETE), L(SP_ENGINE), L(SP_PMU),
    L(PMU_COLUMNS), L(SP_COLS),
    L(IN_NUMBER), L(IN_START), L(IN_END), L(IN_COMPLETE), L(IN_INPUT_CRC), L(IN_OUTPUT_CRC), L(IN_PROBLEMS),
    L(IN_STATUS), L(IN_LOST), L(IN_FIRMWARE_NUMBER), L(IN_SPAN_FIRST), L(IN_SPAN_END), L(IN_COLS),
    L(EV_TYPE), L(EV_TIME), L(EV_INFERENCE), L(EV_WORDS), L(EV_COUNT), L(EV_COLS),
    L(S_PEND_TYPE), L(S_PEND_SEQ), L(S_PEND_COUNT), L(S_PEND_GOT), L(S_PEND_CHECK), L(S_PEND_ACC), L(S_TIME),
    L(S_HAVE_TIME), L(S_SEQ_NEXT), L(S_INF_OPEN), L(S_INF_ROW), L(S_INF_FIRST_SPAN), L(S_LAYER_OPEN),
    L(S_LAYER_START), L(S_LAYER_ENGINE), L(S_PMU_COUNT), L(S_PMU_SINCE_RESET), L(S_LAST_NUMBER),
    L(S_NUMBER_OFFSET), L(S_LAST_UNIQUE), L(S_N_SPANS), L(S_N_INF), L(S_N_EVENTS), L(S_N_WORDS), L(S_N_TEXT),
    L(S_OVERFLOWS), L(S_GAPS), L(S_LOST_RECORDS), L(S_DAMAGED), L(S_ORPHANS), L(S_DESYNCS), L(S_CALIBRATION),
    L(S_RECORDS), L(S_LOST_UNROWED), L(S_TIME_JUMPS), L(S_PMU_EVENT_COUNT), L(S_TS_ACC), L(S_TS_SEEN),
    L(S_HDR_TS), L(S_ANCHOR_TS), L(S_N_DWT), L(S_DWT_STAMP_FROM), L(S_TS_FIRST_TIME), L(S_TS_FIRST_TS),
    L(S_TS_LAST_TIME), L(S_TS_LAST_TS), L(S_TIME_OFFSET), L(S_SESSIONS), L(S_PEND_OFFSET), L(S_LOST_ROWS), L(STATE_SIZE),
    L(DW_KIND), L(DW_A), L(DW_B), L(DW_FLAGS), L(DW_TIME), L(DW_TS), L(DW_ANCHOR_TS), L(DW_OFFSET),
    L(DW_INFERENCE), L(DW_COLS),
    L(EV_RESTART), L(RESTART_TARGET_INFO), L(RESTART_TIME_BACK), L(RESTART_SEQUENCE), L(RESTART_WORDS),
    L(TS_PENDING), L(TS_UNKNOWN), L(MAX_LOST_ROWS), L(MAX_LOST_ROWS_TOTAL), L(NO_VALUE), L(NEED_INF), L(NEED_EVENTS), L(NEED_WORDS),
    L(NEED_TEXT), {"MASK32", MASK32}, {"MASK48", MASK48}, {"HALF_RANGE", HALF_RANGE},
    {NULL, 0},
};
#undef L

/* Record types the kernel treats specially, as its own codes (the Python values map to them). */
enum { R_OTHER, R_TARGET_INFO, R_TIME_SYNC, R_INF_BEGIN, R_INF_END, R_LAYER_BEGIN, R_LAYER_END, R_LAYER_INFO,
       R_PMU_CONFIG, R_PMU_SNAPSHOT, R_STACK, R_BUFFER_CRC, R_ISR_INFO };
static const struct {
    const char *name;
    int code;
} record_names[] = {
    {"T_TARGET_INFO", R_TARGET_INFO}, {"T_TIME_SYNC", R_TIME_SYNC}, {"T_INF_BEGIN", R_INF_BEGIN},
    {"T_INF_END", R_INF_END}, {"T_LAYER_BEGIN", R_LAYER_BEGIN}, {"T_LAYER_END", R_LAYER_END},
    {"T_LAYER_INFO", R_LAYER_INFO}, {"T_PMU_CONFIG", R_PMU_CONFIG}, {"T_PMU_SNAPSHOT", R_PMU_SNAPSHOT},
    {"T_STACK", R_STACK}, {"T_BUFFER_CRC", R_BUFFER_CRC}, {"T_ISR_INFO", R_ISR_INFO},
};

typedef struct {
    PyObject_HEAD
    uint8_t record_code[RECORD_TYPES];
    int64_t min_words[RECORD_TYPES];
    int64_t crc16[256];
    /* The check as four independent lookups, one per byte of the accumulator (see fold). */
    uint16_t fold_bytes[4][256];
    int64_t fold_base;
    int fold_linear; /* the CRC table is linear: the lookups give what the chain gives */
    int64_t port_text, port_header, port_data, layer_calibration;
    int64_t k_swit, k_overflow, k_gap, k_reserved, k_lts, k_exception, k_data_first, k_data_last;
    int64_t t_arena, t_stack, t_cache_op, t_job_begin, t_job_end; /* gather_events */
} TelemetryKernel;

/* The 12-bit check from the accumulator: CRC-16/CCITT over its four little-endian bytes, byte by
 * byte (16 bits kept: fold_tables builds on it). */
static inline int64_t fold_chain(const int64_t *crc16, int64_t acc) {
    int64_t crc = 0xFFFF;
    for (int i = 0; i < 4; i++) crc = ((crc << 8) ^ crc16[((crc >> 8) ^ (acc >> (8 * i))) & 0xFF]) & 0xFFFF;
    return crc;
}

/* A CRC over a fixed number of bytes is linear in them when its table is (entry a ^ b is entry a ^
 * entry b): the check of the accumulator is then the check of 0 xor one looked-up value per byte,
 * four independent lookups instead of a chain of four. Where the table is not linear the chain
 * stays (fold_linear 0). */
static void fold_tables(TelemetryKernel *self) {
    int linear = self->crc16[0] == 0;
    for (int v = 1; v < 256 && linear; v++) {
        int64_t sum = 0;
        for (int bit = 0; bit < 8; bit++)
            if (v & (1 << bit)) sum ^= self->crc16[1 << bit];
        linear = self->crc16[v] == sum && self->crc16[v] >= 0 && self->crc16[v] <= 0xFFFF;
    }
    self->fold_linear = linear;
    self->fold_base = fold_chain(self->crc16, 0);
    for (int i = 0; i < 4; i++)
        for (int v = 0; v < 256; v++)
            self->fold_bytes[i][v] = (uint16_t)(fold_chain(self->crc16, (int64_t)v << (8 * i)) ^ self->fold_base);
}

static PyObject *telemetry_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"constants", NULL};
    PyObject *consts;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!:TelemetryKernel", kwlist, &PyDict_Type, &consts)) return NULL;
    if (layout_check(consts, "tracer.telemetry.kernel", layout) < 0) return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    TelemetryKernel *self = (TelemetryKernel *)alloc(type, 0);
    if (self == NULL) return NULL;
    Py_ssize_t shape[2];
    if (const_array(consts, "MIN_WORDS_TABLE", A_I64, 1, self->min_words, RECORD_TYPES, 1, shape) < 0) goto fail;
    if (shape[0] != RECORD_TYPES) {
        PyErr_SetString(PyExc_ValueError, "MIN_WORDS_TABLE must have 64 entries (6-bit record types)");
        goto fail;
    }
    if (const_array(consts, "CRC16", A_I64, 1, self->crc16, 256, 1, shape) < 0) goto fail;
    if (shape[0] != 256) {
        PyErr_SetString(PyExc_ValueError, "CRC16 must have 256 entries");
        goto fail;
    }
    fold_tables(self);
    memset(self->record_code, R_OTHER, sizeof(self->record_code));
    for (size_t r = 0; r < sizeof(record_names) / sizeof(record_names[0]); r++) {
        int64_t value;
        if (const_int(consts, record_names[r].name, &value) < 0) goto fail;
        if (value < 0 || value >= RECORD_TYPES) {
            PyErr_Format(PyExc_ValueError, "%s must be a 6-bit record type", record_names[r].name);
            goto fail;
        }
        self->record_code[value] = (uint8_t)record_names[r].code;
    }
    struct {
        const char *name;
        int64_t *dest;
    } scalars[] = {
        {"PORT_TEXT", &self->port_text}, {"PORT_HEADER", &self->port_header}, {"PORT_DATA", &self->port_data},
        {"LAYER_CALIBRATION", &self->layer_calibration}, {"K_SWIT", &self->k_swit},
        {"K_OVERFLOW", &self->k_overflow}, {"K_GAP", &self->k_gap}, {"K_RESERVED", &self->k_reserved},
        {"K_LTS", &self->k_lts}, {"K_EXCEPTION", &self->k_exception}, {"K_DATA_FIRST", &self->k_data_first},
        {"K_DATA_LAST", &self->k_data_last}, {"T_ARENA", &self->t_arena}, {"T_STACK", &self->t_stack},
        {"T_CACHE_OP", &self->t_cache_op}, {"T_NPU_JOB_BEGIN", &self->t_job_begin},
        {"T_NPU_JOB_END", &self->t_job_end},
    };
    for (size_t s = 0; s < sizeof(scalars) / sizeof(scalars[0]); s++) {
        if (const_int(consts, scalars[s].name, scalars[s].dest) < 0) goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* The tables of one call. Tables are column-major: row ``col`` of a table holds one column. */
/* The arrays are distinct buffers (RESTRICT: a write to a table never changes the state). */
typedef struct {
    const TelemetryKernel *K;
    int64_t *RESTRICT st, *RESTRICT pend, *RESTRICT pmu;
    int64_t *RESTRICT spans, *RESTRICT infs, *RESTRICT events, *RESTRICT words, *RESTRICT text_time, *RESTRICT dwt;
    uint8_t *RESTRICT text;
    int64_t cap_spans, cap_inf, cap_events, cap_words, cap_text, cap_dwt;
} Tables;

#define ST(slot) (x->st[(slot)])
#define SPAN(col, s) (x->spans[(int64_t)(col)*x->cap_spans + (s)])
#define INF(col, r) (x->infs[(int64_t)(col)*x->cap_inf + (r)])
#define EV(col, e) (x->events[(int64_t)(col)*x->cap_events + (e)])
#define DW(col, r) (x->dwt[(int64_t)(col)*x->cap_dwt + (r)])
#define PMU(slot, k) (x->pmu[(slot)*PMU_COLUMNS + (k)])

/* Mark the inference in progress incomplete for ``bit``. */
static inline void mark(Tables *x, int64_t bit) {
    if (ST(S_INF_OPEN)) INF(IN_PROBLEMS, ST(S_INF_ROW)) |= bit;
}

static void open_inference(Tables *x, int64_t number, int64_t firmware_number, int64_t start, int64_t problems) {
    const int64_t row = ST(S_N_INF);
    INF(IN_NUMBER, row) = number;
    INF(IN_START, row) = start;
    INF(IN_END, row) = NO_VALUE;
    INF(IN_COMPLETE, row) = 0;
    INF(IN_INPUT_CRC, row) = NO_VALUE;
    INF(IN_OUTPUT_CRC, row) = NO_VALUE;
    INF(IN_PROBLEMS, row) = problems;
    INF(IN_STATUS, row) = 0;
    INF(IN_LOST, row) = 0;
    INF(IN_FIRMWARE_NUMBER, row) = firmware_number;
    INF(IN_SPAN_FIRST, row) = ST(S_N_SPANS);
    INF(IN_SPAN_END, row) = ST(S_N_SPANS);
    ST(S_N_INF) = row + 1;
    ST(S_INF_OPEN) = 1;
    ST(S_INF_ROW) = row;
    ST(S_INF_FIRST_SPAN) = ST(S_N_SPANS);
    ST(S_LAYER_OPEN) = -1;
    if (number > ST(S_LAST_UNIQUE)) ST(S_LAST_UNIQUE) = number;
}

static void close_inference(Tables *x, int64_t end) {
    const int64_t row = ST(S_INF_ROW);
    if (ST(S_LAYER_OPEN) >= 0) INF(IN_PROBLEMS, row) |= P_LAYER_MISMATCH;
    INF(IN_END, row) = end;
    const int64_t complete = INF(IN_PROBLEMS, row) == 0 ? 1 : 0;
    INF(IN_COMPLETE, row) = complete;
    for (int64_t s = ST(S_INF_FIRST_SPAN); s < ST(S_N_SPANS); s++) SPAN(SP_COMPLETE, s) = complete;
    INF(IN_SPAN_END, row) = ST(S_N_SPANS);
    ST(S_INF_OPEN) = 0;
    ST(S_LAYER_OPEN) = -1;
}

/* How many rows to make for ``missing`` inferences lost entirely: at most MAX_LOST_ROWS per jump in
   numbering and MAX_LOST_ROWS_TOTAL per stream (numbers that jump by 2^20 again and again would
   otherwise make rows without end); the rest are counted only. */
static inline int64_t lost_rows(Tables *x, int64_t missing) {
    int64_t rows = missing < MAX_LOST_ROWS ? missing : MAX_LOST_ROWS;
    const int64_t left = MAX_LOST_ROWS_TOTAL - ST(S_LOST_ROWS);
    if (rows > left) rows = left > 0 ? left : 0;
    ST(S_LOST_ROWS) += rows;
    return rows;
}

/* Rows for inferences lost entirely, placed before the open row ``row``; returns its new index. */
static int64_t insert_lost_rows(Tables *x, int64_t row, int64_t first, int64_t missing) {
    const int64_t rows = lost_rows(x, missing);
    const int64_t moved = row + rows;
    for (int col = 0; col < IN_COLS; col++) INF(col, moved) = INF(col, row);
    for (int64_t k = 0; k < rows; k++) {
        const int64_t r = row + k;
        INF(IN_NUMBER, r) = first + k;
        INF(IN_START, r) = NO_VALUE;
        INF(IN_END, r) = NO_VALUE;
        INF(IN_COMPLETE, r) = 0;
        INF(IN_INPUT_CRC, r) = NO_VALUE;
        INF(IN_OUTPUT_CRC, r) = NO_VALUE;
        INF(IN_PROBLEMS, r) = P_LOST_ENTIRELY;
        INF(IN_STATUS, r) = 0;
        INF(IN_LOST, r) = 0;
        INF(IN_FIRMWARE_NUMBER, r) = first + k - ST(S_NUMBER_OFFSET);
        INF(IN_SPAN_FIRST, r) = INF(IN_SPAN_FIRST, moved);
        INF(IN_SPAN_END, r) = INF(IN_SPAN_FIRST, moved);
    }
    ST(S_INF_ROW) = moved;
    ST(S_N_INF) = moved + 1;
    ST(S_LOST_UNROWED) += missing - rows;
    return moved;
}

/* Records of an inference arrived with none open: its begin was lost (or never sent). */
static inline void ensure_inference(Tables *x) {
    if (!ST(S_INF_OPEN)) open_inference(x, ST(S_LAST_UNIQUE) + 1, NO_VALUE, NO_VALUE, P_BEGIN_MISSING);
}

static void store_event(Tables *x, int64_t rtype, int64_t t, int64_t count) {
    const int64_t e = ST(S_N_EVENTS);
    EV(EV_TYPE, e) = rtype;
    EV(EV_TIME, e) = t;
    EV(EV_INFERENCE, e) = ST(S_INF_OPEN) ? INF(IN_NUMBER, ST(S_INF_ROW)) : NO_VALUE;
    const int64_t w = ST(S_N_WORDS);
    EV(EV_WORDS, e) = w;
    EV(EV_COUNT, e) = count - 1;
    for (int64_t k = 1; k < count; k++) x->words[w + k - 1] = x->pend[k];
    ST(S_N_WORDS) = w + count - 1;
    ST(S_N_EVENTS) = e + 1;
}

/* Check that a record has the words its type needs. */
static int shape_ok(const Tables *x, int64_t rtype, int64_t count) {
    const int64_t *pend = x->pend;
    if (count < x->K->min_words[rtype]) return 0;
    switch (x->K->record_code[rtype]) {
    case R_LAYER_INFO: {
        const int64_t op_len = pend[2] & 0xFF, name_len = (pend[2] >> 8) & 0xFF;
        return count >= 3 + (op_len + 3) / 4 + (name_len + 3) / 4;
    }
    case R_STACK:
        return count >= 4 + (((pend[1] >> 16) & 0xFF) + 3) / 4;
    case R_PMU_SNAPSHOT: {
        const int64_t n = pend[1] & 0xFF;
        return n <= 8 && count >= 4 + n;
    }
    case R_PMU_CONFIG: {
        const int64_t n = (pend[1] >> 8) & 0xFF;
        return n <= 8 && count >= 2 + (n + 1) / 2;
    }
    case R_ISR_INFO:
        return count >= 2 + (((pend[1] >> 16) & 0xFF) + 3) / 4;
    }
    return 1;
}

/* Apply one complete, checked record. */
static void apply_record(Tables *x, int64_t rtype, int64_t count) {
    const int64_t *pend = x->pend;
    const int code = x->K->record_code[rtype];
    const int64_t lo = pend[0];
    int64_t t;
    if (code == R_TARGET_INFO || code == R_TIME_SYNC || code == R_INF_BEGIN) {
        const int64_t anchor = (int64_t)(((uint64_t)pend[1] << 32) | (uint64_t)lo);
        if (ST(S_HAVE_TIME) && anchor != ST(S_TIME)) {
            const int64_t delta = wrap_sub(lo, ST(S_TIME) & MASK32) & MASK32;
            if (wrap_add(ST(S_TIME), delta) != anchor) ST(S_TIME_JUMPS) += 1;
        }
        t = anchor;
    } else if (ST(S_HAVE_TIME)) {
        t = wrap_add(ST(S_TIME), wrap_sub(lo, ST(S_TIME) & MASK32) & MASK32);
    } else {
        t = lo;
    }
    ST(S_TIME) = t;
    ST(S_HAVE_TIME) = 1;
    t = wrap_add(t, ST(S_TIME_OFFSET)); /* on the time line */

    if (code == R_INF_BEGIN) {
        if (ST(S_INF_OPEN)) {
            INF(IN_PROBLEMS, ST(S_INF_ROW)) |= P_END_MISSING;
            close_inference(x, NO_VALUE);
        }
        const int64_t number = pend[2];
        if (ST(S_LAST_NUMBER) >= 0 && number + ST(S_NUMBER_OFFSET) <= ST(S_LAST_UNIQUE)) {
            /* Numbers went back: the firmware restarted. Keep row numbers unique. */
            ST(S_NUMBER_OFFSET) = ST(S_LAST_UNIQUE) + 1 - number;
        }
        const int64_t unique = number + ST(S_NUMBER_OFFSET);
        if (ST(S_LAST_UNIQUE) >= 0 && unique > ST(S_LAST_UNIQUE) + 1) {
            const int64_t missing = unique - ST(S_LAST_UNIQUE) - 1;
            const int64_t rows = lost_rows(x, missing);
            const int64_t first = ST(S_LAST_UNIQUE) + 1;
            for (int64_t k = 0; k < rows; k++) {
                open_inference(x, first + k, first + k - ST(S_NUMBER_OFFSET), NO_VALUE, P_LOST_ENTIRELY);
                close_inference(x, NO_VALUE);
            }
            ST(S_LOST_UNROWED) += missing - rows;
        }
        open_inference(x, unique, number, t, 0);
        ST(S_LAST_NUMBER) = number;
        return;
    }
    if (code == R_INF_END) {
        ensure_inference(x);
        int64_t row = ST(S_INF_ROW);
        const int64_t number = pend[1];
        if (INF(IN_FIRMWARE_NUMBER, row) == NO_VALUE) {
            /* An inference whose begin was lost learns its number here. */
            const int64_t unique = number + ST(S_NUMBER_OFFSET);
            const int64_t previous = row > 0 ? INF(IN_NUMBER, row - 1) : NO_VALUE;
            if (unique > previous) {
                if (previous >= 0 && unique > previous + 1)
                    row = insert_lost_rows(x, row, previous + 1, unique - previous - 1);
                INF(IN_NUMBER, row) = unique;
                for (int64_t s = ST(S_INF_FIRST_SPAN); s < ST(S_N_SPANS); s++) SPAN(SP_INFERENCE, s) = unique;
                if (unique > ST(S_LAST_UNIQUE)) ST(S_LAST_UNIQUE) = unique;
            }
            INF(IN_FIRMWARE_NUMBER, row) = number;
            ST(S_LAST_NUMBER) = number;
        } else if (INF(IN_FIRMWARE_NUMBER, row) != number) {
            INF(IN_PROBLEMS, row) |= P_DAMAGED;
        }
        if (pend[2] != 0) {
            INF(IN_PROBLEMS, row) |= P_STATUS;
            INF(IN_STATUS, row) = pend[2];
        }
        close_inference(x, t);
        return;
    }
    if (code == R_LAYER_BEGIN) {
        const int64_t index = pend[1] & 0xFFFF;
        if (index == x->K->layer_calibration) return;
        ensure_inference(x);
        if (ST(S_LAYER_OPEN) >= 0) INF(IN_PROBLEMS, ST(S_INF_ROW)) |= P_LAYER_MISMATCH;
        ST(S_LAYER_OPEN) = index;
        ST(S_LAYER_START) = t;
        ST(S_LAYER_ENGINE) = (pend[1] >> 16) & 0xF;
        ST(S_PMU_COUNT) = 0;
        return;
    }
    if (code == R_LAYER_END) {
        const int64_t index = pend[1] & 0xFFFF;
        if (index == x->K->layer_calibration) {
            ST(S_CALIBRATION) += 1;
            return;
        }
        ensure_inference(x);
        if (ST(S_LAYER_OPEN) != index) {
            INF(IN_PROBLEMS, ST(S_INF_ROW)) |= P_LAYER_MISMATCH;
            ST(S_LAYER_OPEN) = -1;
            return;
        }
        const int64_t s = ST(S_N_SPANS);
        SPAN(SP_INFERENCE, s) = INF(IN_NUMBER, ST(S_INF_ROW));
        SPAN(SP_LAYER, s) = index;
        SPAN(SP_START, s) = ST(S_LAYER_START);
        SPAN(SP_END, s) = t;
        SPAN(SP_COMPLETE, s) = 0; /* decided when the inference ends */
        SPAN(SP_ENGINE, s) = ST(S_LAYER_ENGINE);
        const int64_t n_pmu = ST(S_PMU_COUNT), events_n = ST(S_PMU_EVENT_COUNT);
        for (int k = 0; k < PMU_COLUMNS; k++) {
            int64_t value = NO_VALUE;
            if (k <= events_n && n_pmu > 0) {
                if (ST(S_PMU_SINCE_RESET)) {
                    value = PMU(1, k);
                } else if (n_pmu >= 2) {
                    const int64_t width = k == 0 ? MASK48 : MASK32;
                    value = wrap_sub(PMU(1, k), PMU(0, k)) & width;
                }
            }
            SPAN(SP_PMU + k, s) = value;
        }
        ST(S_N_SPANS) = s + 1;
        ST(S_LAYER_OPEN) = -1;
        return;
    }
    if (code == R_PMU_SNAPSHOT) {
        if (ST(S_LAYER_OPEN) < 0) return;
        const int64_t n = pend[1] & 0xFF;
        const int slot = ST(S_PMU_COUNT) == 0 ? 0 : 1;
        PMU(slot, 0) = pend[2] | ((pend[3] & 0xFFFF) << 32);
        for (int k = 0; k < 8; k++) PMU(slot, 1 + k) = k < n ? pend[4 + k] : NO_VALUE;
        if (slot == 0) {
            for (int k = 0; k < PMU_COLUMNS; k++) PMU(1, k) = PMU(0, k);
        }
        ST(S_PMU_COUNT) += 1;
        ST(S_PMU_SINCE_RESET) = ((pend[1] >> 8) & 1) ? 1 : 0;
        ST(S_PMU_EVENT_COUNT) = n;
        return;
    }
    if (code == R_BUFFER_CRC && ST(S_INF_OPEN) && pend[1] <= 1) {
        INF(IN_INPUT_CRC + pend[1], ST(S_INF_ROW)) = pend[2];
        return;
    }
    if (code == R_TIME_SYNC) return;
    store_event(x, rtype, t, count);
}

static inline int anchored(const Tables *x, int64_t rtype) {
    const int code = x->K->record_code[rtype];
    return code == R_TARGET_INFO || code == R_TIME_SYNC || code == R_INF_BEGIN;
}

static inline int64_t anchor_of(const int64_t *pend) {
    return (int64_t)(((uint64_t)pend[1] << 32) | (uint64_t)pend[0]);
}

/* Why the checked record in pend shows the target started again, or 0. */
static int restart_reason(const Tables *x, int64_t rtype, int64_t seq) {
    if (ST(S_RECORDS) == 0 || !ST(S_HAVE_TIME)) return 0;
    const int unexpected = ST(S_SEQ_NEXT) >= 0 && seq != ST(S_SEQ_NEXT);
    if (anchored(x, rtype)) {
        if (x->K->record_code[rtype] == R_TARGET_INFO && unexpected) return RESTART_TARGET_INFO;
        if (anchor_of(x->pend) < ST(S_TIME)) return RESTART_TIME_BACK;
        return 0;
    }
    if (unexpected && seq == 0 && (wrap_sub(x->pend[0], ST(S_TIME) & MASK32) & MASK32) >= HALF_RANGE)
        return RESTART_SEQUENCE;
    return 0;
}

/* The target started again with the record in pend: a new session. */
static void restart(Tables *x, int64_t rtype, int64_t reason) {
    ST(S_LAYER_OPEN) = -1; /* a layer cut by the restart is not a begin/end mismatch */
    if (ST(S_INF_OPEN)) {
        INF(IN_PROBLEMS, ST(S_INF_ROW)) |= P_RESTARTED;
        close_inference(x, NO_VALUE);
    }
    const int64_t target_time = anchored(x, rtype) ? anchor_of(x->pend) : x->pend[0];
    const int64_t last = wrap_add(ST(S_TIME), ST(S_TIME_OFFSET));
    if (wrap_add(target_time, ST(S_TIME_OFFSET)) <= last) ST(S_TIME_OFFSET) = wrap_sub(wrap_add(last, 1), target_time);
    ST(S_HAVE_TIME) = 0; /* the record's own time, not unwrapped from the last session's */
    ST(S_NUMBER_OFFSET) = ST(S_LAST_UNIQUE) + 1;
    ST(S_LAST_NUMBER) = -1;
    ST(S_TS_FIRST_TS) = -1; /* cycles per timestamp tick: from this session's records on */
    ST(S_TS_LAST_TS) = -1;
    ST(S_SESSIONS) += 1;
    const int64_t e = ST(S_N_EVENTS);
    EV(EV_TYPE, e) = EV_RESTART;
    EV(EV_TIME, e) = wrap_add(target_time, ST(S_TIME_OFFSET));
    EV(EV_INFERENCE, e) = NO_VALUE;
    const int64_t w = ST(S_N_WORDS);
    EV(EV_WORDS, e) = w;
    EV(EV_COUNT, e) = RESTART_WORDS;
    x->words[w] = reason;
    x->words[w + 1] = target_time;
    x->words[w + 2] = ST(S_PEND_OFFSET);
    x->words[w + 3] = ST(S_SESSIONS);
    x->words[w + 4] = ST(S_RECORDS);
    ST(S_N_WORDS) = w + RESTART_WORDS;
    ST(S_N_EVENTS) = e + 1;
}

/* The 12-bit check from the (32-bit) accumulator: CRC-16/CCITT over its four little-endian bytes. */
static inline int64_t fold(const TelemetryKernel *K, int64_t acc) {
    if (!K->fold_linear) return fold_chain(K->crc16, acc) & 0xFFF;
    const int64_t crc = K->fold_base ^ K->fold_bytes[0][acc & 0xFF] ^ K->fold_bytes[1][(acc >> 8) & 0xFF] ^
                        K->fold_bytes[2][(acc >> 16) & 0xFF] ^ K->fold_bytes[3][(acc >> 24) & 0xFF];
    return crc & 0xFFF;
}

static inline void loss(Tables *x, int64_t bit, int drop_pending) {
    mark(x, bit);
    if (drop_pending && ST(S_PEND_TYPE) >= 0) {
        ST(S_PEND_TYPE) = -1;
        ST(S_DAMAGED) += 1;
    }
}

/* Keep a hardware packet with the time and stamp of the record before it. */
static inline void store_dwt(Tables *x, int64_t kind, int64_t a, int64_t b, int64_t c, int64_t flags,
                             int64_t offset) {
    const int64_t r = ST(S_N_DWT);
    DW(DW_KIND, r) = kind;
    DW(DW_A, r) = a;
    DW(DW_B, r) = b;
    DW(DW_FLAGS, r) = c | (flags << 8);
    DW(DW_TIME, r) = ST(S_HAVE_TIME) ? wrap_add(ST(S_TIME), ST(S_TIME_OFFSET)) : NO_VALUE;
    DW(DW_TS, r) = TS_PENDING;
    DW(DW_ANCHOR_TS, r) = ST(S_HAVE_TIME) ? ST(S_ANCHOR_TS) : TS_UNKNOWN;
    DW(DW_OFFSET, r) = offset;
    DW(DW_INFERENCE, r) = ST(S_INF_OPEN) ? INF(IN_NUMBER, ST(S_INF_ROW)) : NO_VALUE;
    ST(S_N_DWT) = r + 1;
}

/* Remember (record time, stamp) pairs: the first and the last give cycles per timestamp tick. */
static inline void calibrate(Tables *x, int64_t t, int64_t ts) {
    if (ST(S_TS_FIRST_TS) < 0) {
        ST(S_TS_FIRST_TIME) = t;
        ST(S_TS_FIRST_TS) = ts;
    }
    ST(S_TS_LAST_TIME) = t;
    ST(S_TS_LAST_TS) = ts;
}

/* A local timestamp: it stamps every packet since the previous one. */
static void stamp(Tables *x, int64_t delta) {
    const int64_t ts = wrap_add(ST(S_TS_ACC), delta);
    ST(S_TS_ACC) = ts;
    ST(S_TS_SEEN) = 1;
    if (ST(S_HDR_TS) == TS_PENDING) ST(S_HDR_TS) = ts;
    if (ST(S_ANCHOR_TS) == TS_PENDING && ST(S_HAVE_TIME)) {
        ST(S_ANCHOR_TS) = ts;
        calibrate(x, wrap_add(ST(S_TIME), ST(S_TIME_OFFSET)), ts);
    }
    for (int64_t r = ST(S_DWT_STAMP_FROM); r < ST(S_N_DWT); r++) {
        if (DW(DW_TS, r) == TS_PENDING) DW(DW_TS, r) = ts;
        if (DW(DW_ANCHOR_TS, r) == TS_PENDING) DW(DW_ANCHOR_TS, r) = ts;
    }
    ST(S_DWT_STAMP_FROM) = ST(S_N_DWT);
}

/* Bytes were lost: stamps still pending would come from after the loss; nobody gives them. */
static void unstamp(Tables *x) {
    for (int64_t r = ST(S_DWT_STAMP_FROM); r < ST(S_N_DWT); r++) {
        if (DW(DW_TS, r) == TS_PENDING) DW(DW_TS, r) = TS_UNKNOWN;
        if (DW(DW_ANCHOR_TS, r) == TS_PENDING) DW(DW_ANCHOR_TS, r) = TS_UNKNOWN;
    }
    ST(S_DWT_STAMP_FROM) = ST(S_N_DWT);
    ST(S_HDR_TS) = TS_UNKNOWN;
    ST(S_ANCHOR_TS) = TS_UNKNOWN;
}

/* Check that the state's row counts fit the tables, so no write lands outside them. */
static int state_fits(const Tables *x) {
    const int64_t *st = x->st;
    return st[S_N_SPANS] >= 0 && st[S_N_SPANS] <= x->cap_spans && st[S_N_INF] >= 0 && st[S_N_INF] <= x->cap_inf &&
           st[S_N_EVENTS] >= 0 && st[S_N_EVENTS] <= x->cap_events && st[S_N_WORDS] >= 0 &&
           st[S_N_WORDS] <= x->cap_words && st[S_N_TEXT] >= 0 && st[S_N_TEXT] <= x->cap_text && st[S_N_DWT] >= 0 &&
           st[S_N_DWT] <= x->cap_dwt && st[S_DWT_STAMP_FROM] >= 0 && st[S_DWT_STAMP_FROM] <= st[S_N_DWT] &&
           st[S_INF_FIRST_SPAN] >= 0 && st[S_INF_FIRST_SPAN] <= st[S_N_SPANS] && st[S_PEND_GOT] >= 0 &&
           st[S_PEND_GOT] < PEND_WORDS && st[S_PEND_COUNT] < PEND_WORDS && st[S_PEND_TYPE] < RECORD_TYPES &&
           (st[S_PEND_TYPE] < 0 || st[S_PEND_GOT] < st[S_PEND_COUNT]) &&
           (!st[S_INF_OPEN] || (st[S_INF_ROW] >= 0 && st[S_INF_ROW] < st[S_N_INF]));
}

/* Get the state and tables shared by decode_records and finish_stream. */
static int get_tables(Views *vs, Tables *x, PyObject *state, PyObject *infs, PyObject *spans) {
    Py_ssize_t sh[2];
    x->st = views_get(vs, state, A_I64, 1, 1, "state", sh);
    if (x->st == NULL) return -1;
    if (sh[0] < STATE_SIZE) {
        PyErr_SetString(PyExc_ValueError, "state too short");
        return -1;
    }
    x->infs = views_get(vs, infs, A_I64, 1, 2, "infs", sh);
    if (x->infs == NULL) return -1;
    x->cap_inf = sh[1];
    if (sh[0] < IN_COLS) {
        PyErr_SetString(PyExc_ValueError, "infs needs IN_COLS rows");
        return -1;
    }
    x->spans = views_get(vs, spans, A_I64, 1, 2, "spans", sh);
    if (x->spans == NULL) return -1;
    x->cap_spans = sh[1];
    if (sh[0] < SP_COLS) {
        PyErr_SetString(PyExc_ValueError, "spans needs SP_COLS rows");
        return -1;
    }
    return 0;
}

/* Whether a table has fewer rows left than one packet may add to it (see NEED_INF ...). */
static inline int table_full(const Tables *x) {
    return ST(S_N_SPANS) + 1 > x->cap_spans || ST(S_N_INF) + NEED_INF > x->cap_inf ||
           ST(S_N_EVENTS) + NEED_EVENTS > x->cap_events || ST(S_N_WORDS) + NEED_WORDS > x->cap_words ||
           ST(S_N_TEXT) + NEED_TEXT > x->cap_text;
}

/* The loop of decode_records over packets i..n-1; returns the index of the first packet not
 * processed (a table is full). The pending record's type, length, words so far, check and
 * accumulator live in locals while it runs (every packet reads them), and are put back in the state
 * on the way out. */
static int64_t run(Tables *x, const uint8_t *RESTRICT kind, const uint64_t *RESTRICT a, const uint64_t *RESTRICT b,
                   const uint8_t *RESTRICT c, const uint8_t *RESTRICT flags, const int64_t *RESTRICT offset, int64_t i,
                   int64_t n) {
    const TelemetryKernel *K = x->K;
    const int64_t k_swit = K->k_swit, port_data = K->port_data, port_header = K->port_header,
                  port_text = K->port_text;
    int64_t pend_type = ST(S_PEND_TYPE), pend_count = ST(S_PEND_COUNT), pend_got = ST(S_PEND_GOT),
            pend_check = ST(S_PEND_CHECK), pend_acc = ST(S_PEND_ACC);
    /* Whether a table has fewer rows left than one packet may need (a record, a restart; a hardware
     * packet needs a DWT row, checked on its own below): then the caller grows it. Only a record or
     * text adds such rows, so it is worked out again after them, not before every packet. */
    int full = table_full(x);
    for (; i < n; i++) {
        if (full) break;
        const int64_t k = kind[i];
        if (k == k_swit) {
            const uint64_t port = b[i];
            const int64_t value = (int64_t)(a[i] & (uint64_t)MASK32);
            if (port == (uint64_t)port_data) {
                if (c[i] != 4 || pend_type < 0) {
                    ST(S_ORPHANS) += 1;
                    mark(x, P_DAMAGED);
                    continue;
                }
                x->pend[pend_got] = value;
                pend_acc = (((pend_acc << 5) | (pend_acc >> 27)) & MASK32) ^ value;
                pend_got += 1;
                if (pend_got != pend_count) continue;
                const int64_t rtype = pend_type;
                pend_type = -1;
                if (fold(K, pend_acc) != pend_check || !shape_ok(x, rtype, pend_got)) {
                    ST(S_DAMAGED) += 1;
                    mark(x, P_DAMAGED);
                    continue;
                }
                const int64_t seq = ST(S_PEND_SEQ);
                const int64_t reason = restart_reason(x, rtype, seq);
                if (reason) {
                    restart(x, rtype, reason);
                } else if (ST(S_SEQ_NEXT) >= 0 && seq != ST(S_SEQ_NEXT)) {
                    const int64_t lost = (seq - ST(S_SEQ_NEXT)) & 0xFF;
                    ST(S_LOST_RECORDS) += lost;
                    if (ST(S_INF_OPEN)) {
                        INF(IN_PROBLEMS, ST(S_INF_ROW)) |= P_LOST_RECORDS;
                        INF(IN_LOST, ST(S_INF_ROW)) += lost;
                    }
                }
                ST(S_SEQ_NEXT) = (seq + 1) & 0xFF;
                ST(S_RECORDS) += 1;
                apply_record(x, rtype, pend_got);
                full = table_full(x);
                if (ST(S_TS_SEEN)) {
                    /* Its header's stamp: hardware packets after it are timed from it (before
                     * any timestamp, the anchor stays pending: the first one stamps the latest
                     * record). */
                    ST(S_ANCHOR_TS) = ST(S_HDR_TS);
                    if (ST(S_HDR_TS) >= 0) calibrate(x, wrap_add(ST(S_TIME), ST(S_TIME_OFFSET)), ST(S_HDR_TS));
                }
            } else if (port == (uint64_t)port_header) {
                if (pend_type >= 0) { /* the previous record was cut short */
                    pend_type = -1;
                    ST(S_DAMAGED) += 1;
                    mark(x, P_DAMAGED);
                }
                const int64_t rtype = value & 0x3F, count = (value >> 6) & 0x3F;
                if (c[i] != 4 || rtype == 0 || count == 0) {
                    ST(S_DAMAGED) += 1;
                    mark(x, P_DAMAGED);
                } else {
                    pend_type = rtype;
                    ST(S_PEND_SEQ) = (value >> 12) & 0xFF;
                    pend_count = count;
                    pend_got = 0;
                    pend_check = (value >> 20) & 0xFFF;
                    pend_acc = value & 0xFFFFF;
                    ST(S_PEND_OFFSET) = offset[i];
                    if (ST(S_TS_SEEN)) ST(S_HDR_TS) = TS_PENDING; /* the next local timestamp stamps this header */
                }
            } else if (port == (uint64_t)port_text) {
                const int64_t t = ST(S_HAVE_TIME) ? wrap_add(ST(S_TIME), ST(S_TIME_OFFSET)) : NO_VALUE;
                const int64_t bytes = c[i] < NEED_TEXT ? c[i] : NEED_TEXT;
                for (int64_t j = 0; j < bytes; j++) {
                    x->text[ST(S_N_TEXT)] = (uint8_t)((value >> (8 * j)) & 0xFF);
                    x->text_time[ST(S_N_TEXT)] = t;
                    ST(S_N_TEXT) += 1;
                }
                full = table_full(x);
            }
            continue;
        }
        if (ST(S_N_DWT) + 1 > x->cap_dwt) break; /* hardware packets need a DWT row */
        if (k == K->k_lts) {
            stamp(x, (int64_t)a[i]);
        } else if (k == K->k_exception || (K->k_data_first <= k && k <= K->k_data_last)) {
            store_dwt(x, k, (int64_t)(a[i] & (uint64_t)MASK32), (int64_t)b[i], c[i], flags[i], offset[i]);
        } else if (k == K->k_overflow) {
            ST(S_OVERFLOWS) += 1;
            loss(x, P_OVERFLOW, 0);
            store_dwt(x, k, 0, 0, 0, 0, offset[i]);
        } else if (k == K->k_gap || k == K->k_reserved) {
            ST(k == K->k_gap ? S_GAPS : S_DESYNCS) += 1;
            ST(S_PEND_TYPE) = pend_type; /* (loss drops the pending record: it reads the state) */
            loss(x, k == K->k_gap ? P_GAP : P_DESYNC, 1);
            pend_type = ST(S_PEND_TYPE);
            unstamp(x);
            store_dwt(x, k, 0, 0, 0, 0, offset[i]);
        }
    }
    ST(S_PEND_TYPE) = pend_type;
    ST(S_PEND_COUNT) = pend_count;
    ST(S_PEND_GOT) = pend_got;
    ST(S_PEND_CHECK) = pend_check;
    ST(S_PEND_ACC) = pend_acc;
    return i;
}

PyDoc_STRVAR(decode_doc,
             "decode_records(kind, a, b, c, flags, ts_col, offset, start, state, pend, pmu, spans, infs, events, "
             "words_out, text, text_time, dwt) -> index of the first packet not processed\n\n"
             "Process packets start: of a batch (see kernel.decode_records).");

static PyObject *decode_records(PyObject *self_, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"kind", "a", "b", "c", "flags", "ts_col", "offset", "start", "state", "pend", "pmu",
                             "spans", "infs", "events", "words_out", "text", "text_time", "dwt", NULL};
    PyObject *p_kind, *p_a, *p_b, *p_c, *p_flags, *p_ts, *p_offset, *p_state, *p_pend, *p_pmu, *p_spans, *p_infs,
        *p_events, *p_words, *p_text, *p_text_time, *p_dwt;
    long long start;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOOLOOOOOOOOOO:decode_records", kwlist, &p_kind, &p_a, &p_b,
                                     &p_c, &p_flags, &p_ts, &p_offset, &start, &p_state, &p_pend, &p_pmu, &p_spans,
                                     &p_infs, &p_events, &p_words, &p_text, &p_text_time, &p_dwt))
        return NULL;
    Tables tables = {.K = (const TelemetryKernel *)self_};
    Tables *x = &tables;
    Views vs = {.count = 0};
    Py_ssize_t sh[7][2], s[2];
    const uint8_t *kind = views_get(&vs, p_kind, A_U8, 0, 1, "kind", sh[0]);
    const uint64_t *a = kind ? views_get(&vs, p_a, A_U64, 0, 1, "a", sh[1]) : NULL;
    const uint64_t *b = a ? views_get(&vs, p_b, A_U64, 0, 1, "b", sh[2]) : NULL;
    const uint8_t *c = b ? views_get(&vs, p_c, A_U8, 0, 1, "c", sh[3]) : NULL;
    const uint8_t *flags = c ? views_get(&vs, p_flags, A_U8, 0, 1, "flags", sh[4]) : NULL;
    const int64_t *ts_col = flags ? views_get(&vs, p_ts, A_I64, 0, 1, "ts_col", sh[5]) : NULL;
    const int64_t *offset = ts_col ? views_get(&vs, p_offset, A_I64, 0, 1, "offset", sh[6]) : NULL;
    if (offset == NULL || get_tables(&vs, x, p_state, p_infs, p_spans) < 0) goto fail;
    if ((x->pend = views_get(&vs, p_pend, A_I64, 1, 1, "pend", s)) == NULL) goto fail;
    if (s[0] < PEND_WORDS) {
        PyErr_SetString(PyExc_ValueError, "pend needs 64 words");
        goto fail;
    }
    if ((x->pmu = views_get(&vs, p_pmu, A_I64, 1, 2, "pmu", s)) == NULL) goto fail;
    if (s[0] != 2 || s[1] != PMU_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "pmu must be 2 x PMU_COLUMNS");
        goto fail;
    }
    if ((x->events = views_get(&vs, p_events, A_I64, 1, 2, "events", s)) == NULL) goto fail;
    x->cap_events = s[1];
    if (s[0] < EV_COLS) {
        PyErr_SetString(PyExc_ValueError, "events needs EV_COLS rows");
        goto fail;
    }
    if ((x->words = views_get(&vs, p_words, A_I64, 1, 1, "words_out", s)) == NULL) goto fail;
    x->cap_words = s[0];
    if ((x->text = views_get(&vs, p_text, A_U8, 1, 1, "text", s)) == NULL) goto fail;
    x->cap_text = s[0];
    if ((x->text_time = views_get(&vs, p_text_time, A_I64, 1, 1, "text_time", s)) == NULL) goto fail;
    if (s[0] < x->cap_text) x->cap_text = s[0];
    if ((x->dwt = views_get(&vs, p_dwt, A_I64, 1, 2, "dwt", s)) == NULL) goto fail;
    x->cap_dwt = s[1];
    if (s[0] < DW_COLS) {
        PyErr_SetString(PyExc_ValueError, "dwt needs DW_COLS rows");
        goto fail;
    }
    const int64_t n = sh[0][0];
    for (int col = 1; col < 7; col++) {
        if (sh[col][0] < n) {
            PyErr_SetString(PyExc_ValueError, "decode_records: the packet columns differ in length");
            goto fail;
        }
    }
    if (!state_fits(x)) {
        PyErr_SetString(PyExc_ValueError, "decode_records: the state does not fit the tables");
        goto fail;
    }
    (void)ts_col; /* accepted so a batch's columns pass through unchanged; timing adds up local timestamps */
    int64_t i = start < 0 ? 0 : start;
    Py_BEGIN_ALLOW_THREADS
    i = run(x, kind, a, b, c, flags, offset, i, n);
    Py_END_ALLOW_THREADS
    views_release(&vs);
    return PyLong_FromLongLong((long long)i);
fail:
    views_release(&vs);
    return NULL;
}

PyDoc_STRVAR(finish_doc, "finish_stream(state, infs, spans)\n\n"
                         "End of stream: a pending record is cut, an open inference never ended.");

static PyObject *finish_stream(PyObject *self_, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"state", "infs", "spans", NULL};
    PyObject *p_state, *p_infs, *p_spans;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:finish_stream", kwlist, &p_state, &p_infs, &p_spans))
        return NULL;
    Tables tables = {.K = (const TelemetryKernel *)self_};
    Tables *x = &tables;
    Views vs = {.count = 0};
    if (get_tables(&vs, x, p_state, p_infs, p_spans) < 0) {
        views_release(&vs);
        return NULL;
    }
    const int64_t *st = x->st;
    if (st[S_N_SPANS] < 0 || st[S_N_SPANS] > x->cap_spans || st[S_INF_FIRST_SPAN] < 0 ||
        (st[S_INF_OPEN] && (st[S_INF_ROW] < 0 || st[S_INF_ROW] >= x->cap_inf))) {
        views_release(&vs);
        PyErr_SetString(PyExc_ValueError, "finish_stream: the state does not fit the tables");
        return NULL;
    }
    if (ST(S_PEND_TYPE) >= 0) {
        ST(S_PEND_TYPE) = -1;
        ST(S_DAMAGED) += 1;
        mark(x, P_DAMAGED);
    }
    if (ST(S_INF_OPEN)) {
        INF(IN_PROBLEMS, ST(S_INF_ROW)) |= P_CAPTURE_ENDED;
        close_inference(x, NO_VALUE);
    }
    views_release(&vs);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(gather_doc,
             "gather_events(events, words, lo, hi, last_job, arena, n_arena, stacks, n_stacks, cache_ops, n_cache, "
             "jobs, n_jobs) -> (n_arena, n_stacks, n_cache, n_jobs, last_job)\n\n"
             "Append the per-layer records of event rows lo:hi to their columns (see kernel.gather_events).");

/* One output table of gather_events: ``width`` rows of int64, room for ``need`` more columns after ``n``. */
static int64_t *gather_table(Views *vs, PyObject *obj, const char *name, Py_ssize_t width, Py_ssize_t n,
                             Py_ssize_t need, Py_ssize_t *cap) {
    Py_ssize_t sh[2];
    int64_t *table = views_get(vs, obj, A_I64, 1, 2, name, sh);
    if (table == NULL) return NULL;
    if (sh[0] != width || n < 0 || n + need > sh[1]) {
        PyErr_Format(PyExc_ValueError, "gather_events: %s must have %zd rows and room for %zd more columns", name,
                     width, need);
        return NULL;
    }
    *cap = sh[1];
    return table;
}

static PyObject *gather_events(PyObject *self_, PyObject *args) {
    const TelemetryKernel *K = (const TelemetryKernel *)self_;
    PyObject *p_events, *p_words, *p_arena, *p_stacks, *p_cache, *p_jobs;
    Py_ssize_t lo, hi, last, na, ns, nc, nj;
    if (!PyArg_ParseTuple(args, "OOnnnOnOnOnOn:gather_events", &p_events, &p_words, &lo, &hi, &last, &p_arena, &na,
                          &p_stacks, &ns, &p_cache, &nc, &p_jobs, &nj))
        return NULL;
    Views vs = {.count = 0};
    Py_ssize_t sh[2], n_words, ca, cs, cc, cj;
    const int64_t *ev = views_get(&vs, p_events, A_I64, 0, 2, "events", sh);
    if (ev == NULL) goto fail;
    const Py_ssize_t cap_events = sh[1];
    if (sh[0] < EV_COLS || lo < 0 || lo > hi || hi > cap_events || last < -1 || last >= hi) {
        PyErr_SetString(PyExc_ValueError, "gather_events: rows out of the events table");
        goto fail;
    }
    const int64_t *words = views_get(&vs, p_words, A_I64, 0, 1, "words", sh);
    if (words == NULL) goto fail;
    n_words = sh[0];
    const Py_ssize_t need = hi - lo;
    int64_t *arena = gather_table(&vs, p_arena, "arena", 1, na, need, &ca);
    int64_t *stacks = arena ? gather_table(&vs, p_stacks, "stacks", 1, ns, need, &cs) : NULL;
    int64_t *cache = stacks ? gather_table(&vs, p_cache, "cache_ops", 5, nc, need, &cc) : NULL;
    int64_t *jobs = cache ? gather_table(&vs, p_jobs, "jobs", 5, nj, need, &cj) : NULL;
    if (jobs == NULL) goto fail;
#define E(col, e) (ev[(int64_t)(col)*cap_events + (e)])
    Py_ssize_t bad = -1; /* an event row whose payload words lie outside the word table */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t e = lo; e < hi; e++) {
        const int64_t t = E(EV_TYPE, e);
        if (t == K->t_arena) {
            arena[na++] = e;
        } else if (t == K->t_stack) {
            stacks[ns++] = e;
        } else if (t == K->t_cache_op) {
            const int64_t w = E(EV_WORDS, e);
            if (w < 0 || w + 3 > n_words) {
                bad = e;
                break;
            }
            cache[0 * cc + nc] = E(EV_TIME, e);
            cache[1 * cc + nc] = words[w];
            cache[2 * cc + nc] = words[w + 1];
            cache[3 * cc + nc] = words[w + 2];
            cache[4 * cc + nc] = E(EV_INFERENCE, e);
            nc++;
        } else if (t == K->t_job_begin || t == K->t_job_end) {
            const int64_t w = E(EV_WORDS, e);
            if (w < 0 || w + 1 > n_words) {
                bad = e;
                break;
            }
            /* Jobs do not nest: an end pairs with the job row just before it, a begin of the same job. */
            if (t == K->t_job_end && last >= 0 && E(EV_TYPE, last) == K->t_job_begin &&
                words[E(EV_WORDS, last)] == words[w]) {
                jobs[0 * cj + nj] = E(EV_TIME, last);
                jobs[1 * cj + nj] = E(EV_TIME, e);
                jobs[2 * cj + nj] = E(EV_INFERENCE, last);
                jobs[3 * cj + nj] = words[w];
                jobs[4 * cj + nj] = e;
                nj++;
            }
            last = e;
        }
    }
    Py_END_ALLOW_THREADS
#undef E
    if (bad >= 0) {
        PyErr_Format(PyExc_IndexError, "gather_events: event row %zd has its words outside the word table", bad);
        goto fail;
    }
    views_release(&vs);
    return Py_BuildValue("nnnnn", na, ns, nc, nj, last);
fail:
    views_release(&vs);
    return NULL;
}

static PyMethodDef telemetry_methods[] = {
    {"gather_events", (PyCFunction)(void (*)(void))gather_events, METH_VARARGS, gather_doc},
    {"decode_records", (PyCFunction)(void (*)(void))decode_records, METH_VARARGS | METH_KEYWORDS, decode_doc},
    {"finish_stream", (PyCFunction)(void (*)(void))finish_stream, METH_VARARGS | METH_KEYWORDS, finish_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot telemetry_slots[] = {
    {Py_tp_new, telemetry_new},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_methods, telemetry_methods},
    {Py_tp_doc, "TelemetryKernel(constants): records -> inferences and spans; constants are "
                "tracer.telemetry.kernel's."},
    {0, NULL},
};

static PyType_Spec telemetry_spec = {
    .name = "tracer._kernels.TelemetryKernel",
    .basicsize = sizeof(TelemetryKernel),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = telemetry_slots,
};

PyObject *telemetry_type(PyObject *module) { return PyType_FromModuleAndSpec(module, &telemetry_spec, NULL); }
