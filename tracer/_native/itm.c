/* ITM/DWT packet decoding: the port of tracer/decode/itm_kernel.py (its docstring has the rules). */
#include "common.h"

enum { S_PAGE = 0, S_TS = 1, S_ZEROS = 2, S_ZERO_AT = 3, S_GTS_LO = 4, S_GTS_HI = 5, S_GTS_HI_VALID = 6,
       S_PADDING = 7, S_GTS_LO_BITS = 8, S_DAMAGED = 9, S_RESYNCS = 10, STATE_SIZE = 11 };
enum { C_SOURCE = 0, C_LTS1 = 1, C_LTS2 = 2, C_ZERO = 3, C_OVERFLOW = 4, C_GTS1 = 5, C_GTS2 = 6, C_EXTENSION = 7,
       C_RESERVED = 8 };
enum { SP_NONE = 0, SP_PC_SLEEP = 1, SP_DATA_PC1 = 2, SP_RESERVED = 3 };
enum { T_CLASS = 0, T_SIZE = 1, T_KIND = 2, T_B = 3, T_FLAGS = 4, T_SPECIAL = 5, T_PAGED = 6, T_A_MASK = 7,
       T_EXC = 8, T_COLS = 9 };

static const Layout layout[] = {
    {"S_PAGE", S_PAGE}, {"S_TS", S_TS}, {"S_ZEROS", S_ZEROS}, {"S_ZERO_AT", S_ZERO_AT}, {"S_GTS_LO", S_GTS_LO},
    {"S_GTS_HI", S_GTS_HI}, {"S_GTS_HI_VALID", S_GTS_HI_VALID}, {"S_PADDING", S_PADDING},
    {"S_GTS_LO_BITS", S_GTS_LO_BITS}, {"S_DAMAGED", S_DAMAGED}, {"S_RESYNCS", S_RESYNCS},
    {"STATE_SIZE", STATE_SIZE}, {"C_SOURCE", C_SOURCE}, {"C_LTS1", C_LTS1}, {"C_LTS2", C_LTS2},
    {"C_ZERO", C_ZERO}, {"C_OVERFLOW", C_OVERFLOW}, {"C_GTS1", C_GTS1}, {"C_GTS2", C_GTS2},
    {"C_EXTENSION", C_EXTENSION}, {"C_RESERVED", C_RESERVED}, {"SP_NONE", SP_NONE},
    {"SP_PC_SLEEP", SP_PC_SLEEP}, {"SP_DATA_PC1", SP_DATA_PC1}, {"SP_RESERVED", SP_RESERVED},
    {"T_CLASS", T_CLASS}, {"T_SIZE", T_SIZE}, {"T_KIND", T_KIND}, {"T_B", T_B}, {"T_FLAGS", T_FLAGS},
    {"T_SPECIAL", T_SPECIAL}, {"T_PAGED", T_PAGED}, {"T_A_MASK", T_A_MASK}, {"T_EXC", T_EXC},
    {NULL, 0},
};

/* One header byte's row of the Python module's HEADERS table. */
typedef struct {
    int64_t cls, size, kind, b, flags, special, paged, a_mask, exc;
} Header;

typedef struct {
    PyObject_HEAD
    Header headers[256];
    int64_t size_mask[5];
    int64_t max_kind;
    int64_t k_sync, k_overflow, k_lts, k_gts1, k_gts2, k_extension, k_reserved, k_data_match;
    int64_t f_clkch, f_global_valid, f_malformed, f_page, f_prohibited, f_wrap;
    int64_t no_ts;
} ItmKernel;

static PyObject *itm_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"constants", NULL};
    PyObject *consts;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!:ItmKernel", kwlist, &PyDict_Type, &consts)) return NULL;
    if (layout_check(consts, "tracer.decode.itm_kernel", layout) < 0) return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    ItmKernel *self = (ItmKernel *)alloc(type, 0);
    if (self == NULL) return NULL;
    int64_t table[256][T_COLS];
    Py_ssize_t shape[2];
    if (const_array(consts, "HEADERS", A_I64, 2, table, 256, T_COLS, shape) < 0) goto fail;
    if (shape[0] != 256 || shape[1] != T_COLS) {
        PyErr_SetString(PyExc_ValueError, "HEADERS must be 256 x 9");
        goto fail;
    }
    if (const_array(consts, "SIZE_MASK", A_I64, 1, self->size_mask, 5, 1, shape) < 0) goto fail;
    struct {
        const char *name;
        int64_t *dest;
    } scalars[] = {
        {"K_SYNC", &self->k_sync}, {"K_OVERFLOW", &self->k_overflow}, {"K_LTS", &self->k_lts},
        {"K_GTS1", &self->k_gts1}, {"K_GTS2", &self->k_gts2}, {"K_EXTENSION", &self->k_extension},
        {"K_RESERVED", &self->k_reserved}, {"K_DATA_MATCH", &self->k_data_match},
        {"FLAG_CLKCH", &self->f_clkch}, {"FLAG_GLOBAL_VALID", &self->f_global_valid},
        {"FLAG_MALFORMED", &self->f_malformed}, {"FLAG_PAGE", &self->f_page},
        {"FLAG_PROHIBITED", &self->f_prohibited}, {"FLAG_WRAP", &self->f_wrap}, {"NO_TS", &self->no_ts},
    };
    self->max_kind = 0;
    for (size_t s = 0; s < sizeof(scalars) / sizeof(scalars[0]); s++) {
        if (const_int(consts, scalars[s].name, scalars[s].dest) < 0) goto fail;
        if (s < 8 && (*scalars[s].dest < 0 || *scalars[s].dest > 255)) {
            PyErr_Format(PyExc_ValueError, "%s must be a uint8 packet kind", scalars[s].name);
            goto fail;
        }
        if (s < 8 && *scalars[s].dest > self->max_kind) self->max_kind = *scalars[s].dest;
    }
    for (int h = 0; h < 256; h++) {
        Header *r = &self->headers[h];
        r->cls = table[h][T_CLASS];
        r->size = table[h][T_SIZE];
        r->kind = table[h][T_KIND];
        r->b = table[h][T_B];
        r->flags = table[h][T_FLAGS];
        r->special = table[h][T_SPECIAL];
        r->paged = table[h][T_PAGED];
        r->a_mask = table[h][T_A_MASK];
        r->exc = table[h][T_EXC];
        if (r->cls < C_SOURCE || r->cls > C_RESERVED || r->size < 0 || r->size > 4 || r->kind < 0 || r->kind > 255) {
            PyErr_Format(PyExc_ValueError, "HEADERS row %d is not a header class", h);
            goto fail;
        }
        if (r->kind > self->max_kind) self->max_kind = r->kind;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* Whether the zeros ending the packet buf[start:end] begin a sync packet: the position of the
 * first of those zeros if so, -1 if the buffer ends too early to tell (never when final), -2 if not. */
static inline int64_t hidden_sync(const uint8_t *buf, int64_t start, int64_t end, int64_t length, int final) {
    int64_t p = end - 1;
    while (p > start + 1 && buf[p - 1] == 0) p--;
    int64_t j = end;
    while (j < length && buf[j] == 0 && j - end < 5) j++;
    if (j - end >= 5) return -2;
    if (j >= length) return final ? -2 : -1;
    if (buf[j] == 0x80 && (end - p) + (j - end) >= 5) return p;
    return -2;
}

#define PUT(OFFSET, KIND, A, B, C, FLAGS)                                                                             \
    do {                                                                                                              \
        counts[(KIND)] += 1;                                                                                          \
        o_offset[n] = (OFFSET);                                                                                       \
        o_kind[n] = (uint8_t)(KIND);                                                                                  \
        o_a[n] = (uint64_t)(A);                                                                                       \
        o_b[n] = (uint64_t)(B);                                                                                       \
        o_c[n] = (uint8_t)(C);                                                                                        \
        o_flags[n] = (uint8_t)(FLAGS);                                                                                \
        o_ts[n] = no_ts;                                                                                              \
        n++;                                                                                                          \
    } while (0)

#define SYNC_SEEN()                                                                                                   \
    do {                                                                                                              \
        page = 0;                                                                                                     \
        state[S_GTS_HI_VALID] = 0;                                                                                    \
        state[S_GTS_LO_BITS] = 0;                                                                                     \
        if (damaged) {                                                                                                \
            state[S_RESYNCS] += 1;                                                                                    \
            damaged = 0;                                                                                              \
        }                                                                                                             \
    } while (0)

/* A packet ending in a zero byte: if a sync packet hides there, emit the packet as malformed and
 * go on at its zeros; if the buffer ends too early to tell, stop. */
#define CHECK_HIDDEN_SYNC(END)                                                                                        \
    if (buf[(END)-1] == 0) {                                                                                          \
        int64_t p_ = hidden_sync(buf, i, (END), length, final);                                                       \
        if (p_ == -1) break;                                                                                          \
        if (p_ >= 0) {                                                                                                \
            PUT(at, K->k_reserved, h, 0, 0, K->f_malformed);                                                          \
            damaged = 1;                                                                                              \
            i = p_;                                                                                                   \
            continue;                                                                                                 \
        }                                                                                                             \
    }

#define STAMP()                                                                                                       \
    do {                                                                                                              \
        for (int64_t j_ = unstamped; j_ < n; j_++) o_ts[j_] = ts;                                                     \
        unstamped = n;                                                                                                \
        if (first_stamp < 0) first_stamp = ts;                                                                        \
    } while (0)

PyDoc_STRVAR(decode_doc,
             "decode_itm(buf, base, state, counts, final, out_offset, out_kind, out_a, out_b, out_c, out_flags, "
             "out_ts) -> (written, consumed, unstamped, first_stamp)\n\n"
             "Decode whole packets of buf (see itm_kernel.decode_itm).");

static PyObject *itm_decode(PyObject *self_, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"buf", "base", "state", "counts", "final", "out_offset", "out_kind", "out_a",
                             "out_b", "out_c", "out_flags", "out_ts", NULL};
    const ItmKernel *K = (const ItmKernel *)self_;
    PyObject *p_buf, *p_state, *p_counts, *p_offset, *p_kind, *p_a, *p_b, *p_c, *p_flags, *p_ts;
    long long base_;
    int final;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OLOOpOOOOOOO:decode_itm", kwlist, &p_buf, &base_, &p_state,
                                     &p_counts, &final, &p_offset, &p_kind, &p_a, &p_b, &p_c, &p_flags, &p_ts))
        return NULL;
    Views vs = {.count = 0};
    Py_ssize_t sh[10][2];
    const uint8_t *buf = views_get(&vs, p_buf, A_U8, 0, 1, "buf", sh[0]);
    int64_t *RESTRICT state = buf ? views_get(&vs, p_state, A_I64, 1, 1, "state", sh[1]) : NULL;
    int64_t *RESTRICT counts = state ? views_get(&vs, p_counts, A_I64, 1, 1, "counts", sh[2]) : NULL;
    int64_t *RESTRICT o_offset = counts ? views_get(&vs, p_offset, A_I64, 1, 1, "out_offset", sh[3]) : NULL;
    uint8_t *RESTRICT o_kind = o_offset ? views_get(&vs, p_kind, A_U8, 1, 1, "out_kind", sh[4]) : NULL;
    uint64_t *RESTRICT o_a = o_kind ? views_get(&vs, p_a, A_U64, 1, 1, "out_a", sh[5]) : NULL;
    uint64_t *RESTRICT o_b = o_a ? views_get(&vs, p_b, A_U64, 1, 1, "out_b", sh[6]) : NULL;
    uint8_t *RESTRICT o_c = o_b ? views_get(&vs, p_c, A_U8, 1, 1, "out_c", sh[7]) : NULL;
    uint8_t *RESTRICT o_flags = o_c ? views_get(&vs, p_flags, A_U8, 1, 1, "out_flags", sh[8]) : NULL;
    int64_t *RESTRICT o_ts = o_flags ? views_get(&vs, p_ts, A_I64, 1, 1, "out_ts", sh[9]) : NULL;
    if (o_ts == NULL) {
        views_release(&vs);
        return NULL;
    }
    const int64_t length = sh[0][0];
    if (sh[1][0] < STATE_SIZE || sh[2][0] <= K->max_kind) {
        views_release(&vs);
        PyErr_SetString(PyExc_ValueError, "decode_itm: state or counts too short");
        return NULL;
    }
    for (int c = 3; c < 10; c++) {
        if (sh[c][0] < length) {
            views_release(&vs);
            PyErr_SetString(PyExc_ValueError, "decode_itm: the out_* arrays need room for len(buf) packets");
            return NULL;
        }
    }
    const int64_t base = base_;
    const int64_t no_ts = K->no_ts;
    int64_t page, ts, zeros, zero_at, padding, damaged;
    int64_t n = 0, i = 0, unstamped = 0, first_stamp = -1;

    Py_BEGIN_ALLOW_THREADS
    page = state[S_PAGE];
    ts = state[S_TS];
    zeros = state[S_ZEROS];
    zero_at = state[S_ZERO_AT];
    padding = state[S_PADDING];
    damaged = state[S_DAMAGED];
    if (zeros > 0 && length > 0 && buf[0] != 0) { /* a run of zeros ended the previous buffer */
        if (buf[0] == 0x80 && zeros >= 5) {
            PUT(zero_at, K->k_sync, 0, 0, 0, 0);
            SYNC_SEEN();
            i = 1;
        } else {
            padding += zeros;
        }
        zeros = 0;
    }
    while (i < length) {
        const uint8_t h = buf[i];
        const Header *H = &K->headers[h];
        const int64_t cls = H->cls;
        const int64_t at = base + i;
        if (cls == C_SOURCE) {
            const int64_t size = H->size;
            const int64_t end = i + 1 + size;
            if (end > length) break;
            int64_t value;
            if (i + 4 < length) {
                value = ((int64_t)buf[i + 1] | ((int64_t)buf[i + 2] << 8) | ((int64_t)buf[i + 3] << 16) |
                         ((int64_t)buf[i + 4] << 24)) &
                        K->size_mask[size];
            } else {
                value = 0;
                for (int64_t j = 0; j < size; j++) value |= (int64_t)buf[i + 1 + j] << (8 * j);
            }
            CHECK_HIDDEN_SYNC(end)
            int64_t kind = H->kind;
            const int64_t fn = (value >> 12) & 3;
            const int64_t exc = H->exc;
            int64_t a = value & H->a_mask;
            int64_t b = H->b + page * 32 * H->paged + fn * exc;
            int64_t flags = H->flags;
            int64_t c = size;
            const int64_t special = H->special;
            if (special + exc * (fn == 0) != 0) {
                if (exc) { /* exception function 0 is reserved */
                    kind = K->k_reserved;
                    a = h;
                    b = 0;
                    c = 0;
                    flags = K->f_malformed;
                } else if (special == SP_PC_SLEEP) {
                    a = 0;
                    if (value == 0xFF) {
                        flags = K->f_prohibited;
                    } else if (value != 0) {
                        kind = K->k_reserved;
                        a = h;
                        c = 0;
                        flags = K->f_malformed;
                    }
                } else if (special == SP_DATA_PC1) {
                    if (value & 1) { /* PC values are halfword aligned: bit 0 marks a match packet */
                        kind = K->k_data_match;
                        a = 0;
                    }
                } else { /* reserved discriminator */
                    a = h;
                    b = 0;
                    c = 0;
                }
                if (kind == K->k_reserved) damaged = 1;
            }
            PUT(at, kind, a, b, c, flags);
            i = end;
            continue;
        }
        if (cls == C_LTS1 || cls == C_GTS1) {
            int64_t b1, b2, b3, b4, k, over;
            if (i + 4 < length) {
                b1 = buf[i + 1];
                b2 = buf[i + 2];
                b3 = buf[i + 3];
                b4 = buf[i + 4];
                const int64_t c1 = b1 >> 7;
                const int64_t c2 = c1 & (b2 >> 7);
                const int64_t c3 = c2 & (b3 >> 7);
                over = c3 & (b4 >> 7);
                k = 1 + c1 + c2 + c3;
                b2 &= -c1; /* bytes past the end of the packet count as zero */
                b3 &= -c2;
                b4 &= -c3;
            } else {
                k = 0;
                over = 0;
                for (;;) {
                    if (i + 1 + k >= length) {
                        k = -1;
                        break;
                    }
                    const uint8_t byte = buf[i + 1 + k];
                    k++;
                    if ((byte & 0x80) == 0) break;
                    if (k == 4) {
                        over = 1;
                        break;
                    }
                }
                if (k < 0) break;
                b1 = buf[i + 1];
                b2 = k > 1 ? buf[i + 2] : 0;
                b3 = k > 2 ? buf[i + 3] : 0;
                b4 = k > 3 ? buf[i + 4] : 0;
            }
            if (over) {
                PUT(at, K->k_reserved, h, 0, 0, K->f_malformed);
                damaged = 1;
                i += 5;
                continue;
            }
            const int64_t end = i + 1 + k;
            CHECK_HIDDEN_SYNC(end)
            const int64_t lo = (b1 & 0x7F) | ((b2 & 0x7F) << 7) | ((b3 & 0x7F) << 14);
            i = end;
            if (cls == C_LTS1) {
                const int64_t value = lo | ((b4 & 0x7F) << 21);
                PUT(at, K->k_lts, value, (h >> 4) & 3, k, 0);
                ts = wrap_add(ts, value);
                STAMP();
                continue;
            }
            /* Global timestamp 1: bits [6:0], [13:0], [20:0] or, with all four bytes, [25:0]
             * plus Wrap (the high bits changed: a GTS2 follows) and ClkCh. */
            int64_t flags = 0, value = lo, bits = 7 * k;
            if (k == 4) {
                value |= (b4 & 0x1F) << 21;
                bits = 26;
                if (b4 & 0x40) flags |= K->f_wrap;
                if (b4 & 0x20) flags |= K->f_clkch;
            }
            const int64_t mask = ((int64_t)1 << bits) - 1;
            const int64_t gts_lo = (state[S_GTS_LO] & ~mask) | value;
            state[S_GTS_LO] = gts_lo;
            if (state[S_GTS_LO_BITS] < bits) state[S_GTS_LO_BITS] = bits;
            if (flags & K->f_wrap) state[S_GTS_HI_VALID] = 0;
            uint64_t merged = 0;
            if (state[S_GTS_HI_VALID] && state[S_GTS_LO_BITS] == 26) {
                flags |= K->f_global_valid;
                merged = ((uint64_t)state[S_GTS_HI] << 26) | (uint64_t)gts_lo;
            }
            PUT(at, K->k_gts1, value, merged, k, flags);
            continue;
        }
        if (cls == C_LTS2) {
            const int64_t value = h >> 4;
            PUT(at, K->k_lts, value, 0, 0, 0);
            i += 1;
            ts = wrap_add(ts, value);
            STAMP();
            continue;
        }
        if (cls == C_ZERO) {
            /* A run of zeros is a sync packet if 0x80 ends it after five or more, else padding. */
            if (zeros == 0) zero_at = at;
            int64_t j = i;
            while (j < length && buf[j] == 0) j++;
            zeros += j - i;
            i = j;
            if (i == length) break; /* the run may go on in the next buffer */
            if (buf[i] == 0x80 && zeros >= 5) {
                PUT(zero_at, K->k_sync, 0, 0, 0, 0);
                SYNC_SEEN();
                i += 1;
            } else {
                padding += zeros;
            }
            zeros = 0;
            continue;
        }
        if (cls == C_OVERFLOW) {
            PUT(at, K->k_overflow, 0, 0, 0, 0);
            i += 1;
            continue;
        }
        if (cls == C_GTS2) { /* global timestamp 2: bits [47:26] (4 bytes) or [63:26] (6 bytes) */
            int64_t k = 0;
            while (k < 6) {
                if (i + 1 + k >= length) {
                    k = -1;
                    break;
                }
                k++;
                if ((buf[i + k] & 0x80) == 0) break;
            }
            if (k < 0) break;
            const int64_t end = i + 1 + k;
            if (buf[end - 1] & 0x80) { /* six continuation bytes: over-long */
                PUT(at, K->k_reserved, h, 0, 0, K->f_malformed);
                damaged = 1;
                i = end;
                continue;
            }
            CHECK_HIDDEN_SYNC(end)
            i = end;
            if (k != 4 && k != 6) {
                PUT(at, K->k_reserved, h, 0, 0, K->f_malformed);
                damaged = 1;
                continue;
            }
            int64_t value = 0;
            for (int64_t j = 0; j < k; j++) value |= (int64_t)(buf[i - k + j] & 0x7F) << (7 * j);
            state[S_GTS_HI] = value;
            state[S_GTS_HI_VALID] = 1;
            int64_t flags = 0;
            uint64_t merged = 0;
            if (state[S_GTS_LO_BITS] == 26) {
                flags = K->f_global_valid;
                merged = ((uint64_t)value << 26) | (uint64_t)state[S_GTS_LO];
            }
            PUT(at, K->k_gts2, value, merged, k, flags);
            continue;
        }
        if (cls == C_EXTENSION) {
            const int64_t sh_ = (h >> 2) & 1;
            int64_t ex = (h >> 4) & 7;
            if ((h & 0x80) == 0) {
                const int64_t flags = sh_ == 0 ? K->f_page : 0;
                if (sh_ == 0) page = ex;
                PUT(at, K->k_extension, ex, sh_, 0, flags);
                i += 1;
                continue;
            }
            /* Up to three 7-bit continuation bytes, then a final byte with all 8 bits. */
            int64_t k = 0;
            int done = 0;
            while (k < 4) {
                if (i + 1 + k >= length) break;
                const uint8_t byte = buf[i + 1 + k];
                if (k == 3) {
                    ex |= (int64_t)byte << 24;
                    k++;
                    done = 1;
                    break;
                }
                ex |= (int64_t)(byte & 0x7F) << (3 + 7 * k);
                k++;
                if ((byte & 0x80) == 0) {
                    done = 1;
                    break;
                }
            }
            if (!done) break;
            const int64_t end = i + 1 + k;
            CHECK_HIDDEN_SYNC(end)
            PUT(at, K->k_extension, ex, sh_, k, 0);
            i = end;
            continue;
        }
        /* A one-byte reserved header. */
        PUT(at, K->k_reserved, h, 0, 0, 0);
        damaged = 1;
        i += 1;
    }
    state[S_PAGE] = page;
    state[S_TS] = ts;
    state[S_ZEROS] = zeros;
    state[S_ZERO_AT] = zero_at;
    state[S_PADDING] = padding;
    state[S_DAMAGED] = damaged;
    Py_END_ALLOW_THREADS
    views_release(&vs);
    return Py_BuildValue("(LLLL)", (long long)n, (long long)i, (long long)unstamped, (long long)first_stamp);
}

static PyMethodDef itm_methods[] = {
    {"decode_itm", (PyCFunction)(void (*)(void))itm_decode, METH_VARARGS | METH_KEYWORDS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot itm_slots[] = {
    {Py_tp_new, itm_new},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_methods, itm_methods},
    {Py_tp_doc, "ItmKernel(constants): the ITM/DWT decoder; constants are tracer.decode.itm_kernel's."},
    {0, NULL},
};

static PyType_Spec itm_spec = {
    .name = "tracer._kernels.ItmKernel",
    .basicsize = sizeof(ItmKernel),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = itm_slots,
};

PyObject *itm_type(PyObject *module) { return PyType_FromModuleAndSpec(module, &itm_spec, NULL); }
