/* TPIU (CoreSight formatter) deframing: the port of tracer/decode/tpiu_kernel.py (its docstring
 * says when the kernel stops early and why). */
#include "common.h"

enum { S_FILL = 0, S_ID = 1, S_FF = 2, S_FRAMES = 3, S_FULL_SYNCS = 4, S_HALF_SYNCS = 5, S_STRAY = 6,
       S_REDUNDANT = 7, S_LAST = 8, S_FRAME_START = 9, S_STOP = 10, S_STOP_AT = 11, S_STOP_FROM = 12,
       S_UNKNOWN = 13, STATE_SIZE = 14, ID_COUNT = 128, FRAME_BYTES = 16 };
enum { STOP_NONE = 0, STOP_BAD_FRAME = 1, STOP_UNEXPECTED_ID = 2, STOP_SYNC = 3 };
enum { FF_EVEN = 1, FF_ODD = 2 };

static const Layout layout[] = {
    {"S_FILL", S_FILL}, {"S_ID", S_ID}, {"S_FF", S_FF}, {"S_FRAMES", S_FRAMES}, {"S_FULL_SYNCS", S_FULL_SYNCS},
    {"S_HALF_SYNCS", S_HALF_SYNCS}, {"S_STRAY", S_STRAY}, {"S_REDUNDANT", S_REDUNDANT}, {"S_LAST", S_LAST},
    {"S_FRAME_START", S_FRAME_START}, {"S_STOP", S_STOP},
    {"S_STOP_AT", S_STOP_AT}, {"S_STOP_FROM", S_STOP_FROM}, {"S_UNKNOWN", S_UNKNOWN}, {"STATE_SIZE", STATE_SIZE},
    {"STOP_NONE", STOP_NONE}, {"STOP_BAD_FRAME", STOP_BAD_FRAME}, {"STOP_UNEXPECTED_ID", STOP_UNEXPECTED_ID},
    {"STOP_SYNC", STOP_SYNC}, {"FF_EVEN", FF_EVEN}, {"FF_ODD", FF_ODD}, {"ID_COUNT", ID_COUNT}, {NULL, 0},
};

typedef struct {
    PyObject_HEAD
    uint8_t reserved[ID_COUNT]; /* IDs no formatter emits (tpiu_kernel.RESERVED_ID) */
} TpiuKernel;

static PyObject *tpiu_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"constants", NULL};
    PyObject *consts;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!:TpiuKernel", kwlist, &PyDict_Type, &consts)) return NULL;
    if (layout_check(consts, "tracer.decode.tpiu_kernel", layout) < 0) return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    TpiuKernel *self = (TpiuKernel *)alloc(type, 0);
    if (self == NULL) return NULL;
    Py_ssize_t shape[2];
    if (const_array(consts, "RESERVED_ID", A_U8, 1, self->reserved, ID_COUNT, 1, shape) < 0) goto fail;
    if (shape[0] != ID_COUNT) {
        PyErr_SetString(PyExc_ValueError, "RESERVED_ID must have 128 entries");
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

#define EMIT(source, byte)                                                                                            \
    do {                                                                                                              \
        if ((source) >= 0) {                                                                                          \
            id_bytes[(source)] += 1;                                                                                  \
            if ((source) == wanted) out[n++] = (uint8_t)(byte);                                                       \
        } else {                                                                                                      \
            unknown += 1;                                                                                             \
        }                                                                                                             \
    } while (0)

/* STOP_BAD_FRAME, STOP_UNEXPECTED_ID or STOP_NONE for a whole frame. */
static inline int verdict_of(const uint8_t *reserved, const uint8_t *frame, const uint8_t *expected) {
    int verdict = STOP_NONE;
    const uint8_t aux = frame[15];
    for (int j = 0; j < 8; j++) {
        const uint8_t b = frame[2 * j];
        if (b & 1) {
            const uint8_t new_id = b >> 1;
            if (reserved[new_id] || (j == 7 && (aux & 0x80))) return STOP_BAD_FRAME;
            if (!expected[new_id]) verdict = STOP_UNEXPECTED_ID;
        }
    }
    return verdict;
}

PyDoc_STRVAR(deframe_doc,
             "deframe(buf, base, state, frame, wanted, out, id_bytes, id_changes, expected) -> (written, consumed)\n\n"
             "Deframe buf (stream position base); bytes of source ``wanted`` go to out (see tpiu_kernel.deframe).");

static PyObject *tpiu_deframe(PyObject *self_, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"buf", "base", "state", "frame", "wanted", "out", "id_bytes", "id_changes", "expected",
                             NULL};
    PyObject *o_buf, *o_state, *o_frame, *o_out, *o_idb, *o_idc, *o_exp;
    long long base, wanted;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OLOOLOOOO:deframe", kwlist, &o_buf, &base, &o_state, &o_frame,
                                     &wanted, &o_out, &o_idb, &o_idc, &o_exp))
        return NULL;
    const TpiuKernel *K = (const TpiuKernel *)self_;
    Views vs = {.count = 0};
    Py_ssize_t sh_buf[2], sh_state[2], sh_frame[2], sh_out[2], sh_idb[2], sh_idc[2], sh_exp[2];
    const uint8_t *buf = views_get(&vs, o_buf, A_U8, 0, 1, "buf", sh_buf);
    int64_t *RESTRICT state = buf ? views_get(&vs, o_state, A_I64, 1, 1, "state", sh_state) : NULL;
    uint8_t *RESTRICT frame = state ? views_get(&vs, o_frame, A_U8, 1, 1, "frame", sh_frame) : NULL;
    uint8_t *RESTRICT out = frame ? views_get(&vs, o_out, A_U8, 1, 1, "out", sh_out) : NULL;
    int64_t *RESTRICT id_bytes = out ? views_get(&vs, o_idb, A_I64, 1, 1, "id_bytes", sh_idb) : NULL;
    int64_t *RESTRICT id_changes = id_bytes ? views_get(&vs, o_idc, A_I64, 1, 1, "id_changes", sh_idc) : NULL;
    const uint8_t *expected = id_changes ? views_get(&vs, o_exp, A_U8, 0, 1, "expected", sh_exp) : NULL;
    if (expected == NULL) goto fail;
    const int64_t length = sh_buf[0];
    if (sh_state[0] < STATE_SIZE || sh_frame[0] < FRAME_BYTES || sh_idb[0] < ID_COUNT || sh_idc[0] < ID_COUNT ||
        sh_exp[0] < ID_COUNT) {
        PyErr_SetString(PyExc_ValueError, "deframe: state, frame, id_bytes, id_changes or expected too short");
        goto fail;
    }
    int64_t fill = state[S_FILL], current = state[S_ID], ff = state[S_FF];
    if (fill < 0 || fill > FRAME_BYTES - 2 || (fill & 1) || current < -1 || current >= ID_COUNT || ff < 0 ||
        ff > FF_ODD) {
        PyErr_SetString(PyExc_ValueError, "deframe: the state is not a deframer's");
        goto fail;
    }
    if (sh_out[0] < 15 * ((fill + length) / FRAME_BYTES)) {
        PyErr_SetString(PyExc_ValueError, "deframe: out is too small");
        goto fail;
    }
    state[S_STOP] = STOP_NONE;
    int64_t n = 0, i = 0, frame_start = state[S_FRAME_START], unknown = 0;
    Py_BEGIN_ALLOW_THREADS
    while (i + 1 < length) {
        const uint8_t lo = buf[i], hi = buf[i + 1];
        i += 2;
        if (ff) {
            if (lo == 0x7F && ff == FF_ODD) {
                /* FF | FF FF | 7F: a full sync one byte off the halfword grid; frames start at hi. */
                state[S_FULL_SYNCS] += 1;
                state[S_STOP] = STOP_SYNC;
                state[S_STOP_AT] = base + i - 5;
                state[S_STOP_FROM] = fill ? frame_start : base + i - 5;
                fill = 0;
                ff = 0;
                i -= 1;
                break;
            }
            if (lo == 0xFF && hi == 0x7F) {
                ff = 0;
                state[S_FULL_SYNCS] += 1;
                if (fill) { /* part of a frame before it: the grid was off by a halfword or more */
                    state[S_STOP] = STOP_SYNC;
                    state[S_STOP_AT] = base + i - 4;
                    state[S_STOP_FROM] = frame_start;
                    fill = 0;
                    break;
                }
                continue;
            }
            if (lo == 0xFF && hi == 0xFF) {
                state[S_STRAY] += 1;
                ff = FF_ODD;
                continue;
            }
            state[S_STRAY] += 1;
            ff = 0;
        }
        if (lo == 0xFF && hi == 0xFF) {
            const int64_t before = i >= 3 ? buf[i - 3] : state[S_LAST]; /* the byte before this halfword */
            ff = before == 0xFF ? FF_ODD : FF_EVEN;
            continue;
        }
        if (lo == 0xFF && hi == 0x7F) {
            state[S_HALF_SYNCS] += 1;
            continue;
        }
        if (fill == 0) frame_start = base + i - 2;
        frame[fill] = lo;
        frame[fill + 1] = hi;
        fill += 2;
        if (fill < FRAME_BYTES) continue;
        fill = 0;
        const int verdict = verdict_of(K->reserved, frame, expected);
        if (verdict != STOP_NONE) {
            state[S_STOP] = verdict;
            state[S_STOP_AT] = frame_start;
            state[S_STOP_FROM] = frame_start;
            break;
        }
        state[S_FRAMES] += 1;
        const uint8_t aux = frame[15];
        for (int j = 0; j < 8; j++) {
            const uint8_t b = frame[2 * j];
            if (b & 1) {
                const int64_t new_id = b >> 1;
                id_changes[new_id] += 1;
                if (new_id == current) state[S_REDUNDANT] += 1;
                if (j == 7) {
                    current = new_id;
                } else if ((aux >> j) & 1) {
                    EMIT(current, frame[2 * j + 1]);
                    current = new_id;
                } else {
                    current = new_id;
                    EMIT(current, frame[2 * j + 1]);
                }
            } else {
                EMIT(current, (b & 0xFE) | ((aux >> j) & 1));
                if (j < 7) EMIT(current, frame[2 * j + 1]);
            }
        }
    }
    state[S_FILL] = fill;
    state[S_ID] = current;
    state[S_FF] = ff;
    if (i >= 1) state[S_LAST] = buf[i - 1];
    state[S_FRAME_START] = frame_start;
    state[S_UNKNOWN] += unknown;
    Py_END_ALLOW_THREADS
    views_release(&vs);
    return Py_BuildValue("(LL)", (long long)n, (long long)i);
fail:
    views_release(&vs);
    return NULL;
}

static PyMethodDef tpiu_methods[] = {
    {"deframe", (PyCFunction)(void (*)(void))tpiu_deframe, METH_VARARGS | METH_KEYWORDS, deframe_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot tpiu_slots[] = {
    {Py_tp_new, tpiu_new},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_methods, tpiu_methods},
    {Py_tp_doc, "TpiuKernel(constants): the TPIU deframer; constants are tracer.decode.tpiu_kernel's."},
    {0, NULL},
};

static PyType_Spec tpiu_spec = {
    .name = "tracer._kernels.TpiuKernel",
    .basicsize = sizeof(TpiuKernel),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = tpiu_slots,
};

PyObject *tpiu_type(PyObject *module) { return PyType_FromModuleAndSpec(module, &tpiu_spec, NULL); }
