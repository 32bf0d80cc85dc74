/* Packet listings (ndjson, text): the port of tracer/export/packets_text.py's format_packets. */
#include "common.h"

#define MAX_KEYS 32
#define MAX_TYPES 64
#define MAX_ACTIONS 8
#define NAME_WIDTH 16
#define PREFIX_WIDTH 32 /* >= NAME_WIDTH + 4: ',"' key '":' */
#define HEAD_WIDTH 48   /* >= NAME_WIDTH + 16: ',"type":"' name '","ts":' */
#define PAD_ROOM 16     /* >= the widest padded column (12) */
#define LINE_ROOM 512   /* a line's buffer: the longest line (under 170 bytes) and a copy past it */

/* The packet kinds with fields, as the formatter's own codes (the Python values map to them). */
enum { KD_OTHER, KD_LTS, KD_GTS1, KD_GTS2, KD_EXTENSION, KD_SWIT, KD_DWT_EVENT, KD_PMU_OVERFLOW, KD_EXCEPTION,
       KD_PC_SAMPLE, KD_PC_SLEEP, KD_DATA_PC, KD_DATA_ADDR, KD_DATA_VALUE, KD_DATA_MATCH, KD_RESERVED, KD_GAP };
static const struct {
    const char *name;
    int code;
} kind_names[] = {
    {"KIND_LTS", KD_LTS}, {"KIND_GTS1", KD_GTS1}, {"KIND_GTS2", KD_GTS2}, {"KIND_EXTENSION", KD_EXTENSION},
    {"KIND_SWIT", KD_SWIT}, {"KIND_DWT_EVENT", KD_DWT_EVENT}, {"KIND_PMU_OVERFLOW", KD_PMU_OVERFLOW},
    {"KIND_EXCEPTION", KD_EXCEPTION}, {"KIND_PC_SAMPLE", KD_PC_SAMPLE}, {"KIND_PC_SLEEP", KD_PC_SLEEP},
    {"KIND_DATA_PC", KD_DATA_PC}, {"KIND_DATA_ADDR", KD_DATA_ADDR}, {"KIND_DATA_VALUE", KD_DATA_VALUE},
    {"KIND_DATA_MATCH", KD_DATA_MATCH}, {"KIND_RESERVED", KD_RESERVED}, {"KIND_GAP", KD_GAP},
};

/* The fields, as the formatter's own codes (the Python module's K_* give their key indices). */
enum { F_DELTA, F_TC, F_VALUE, F_WRAP, F_CLKCH, F_GLOBAL, F_SH, F_EX, F_PAGE, F_PORT, F_SIZE, F_COUNTERS, F_NUMBER,
       F_ACTION, F_PC, F_PROHIBITED, F_COMPARATOR, F_ADDRESS, F_WRITE, F_HEADER, F_MALFORMED, F_LOST, F_COUNT };
static const char *field_names[F_COUNT] = {
    "K_DELTA", "K_TC", "K_VALUE", "K_WRAP", "K_CLKCH", "K_GLOBAL", "K_SH", "K_EX", "K_PAGE", "K_PORT", "K_SIZE",
    "K_COUNTERS", "K_NUMBER", "K_ACTION", "K_PC", "K_PROHIBITED", "K_COMPARATOR", "K_ADDRESS", "K_WRITE",
    "K_HEADER", "K_MALFORMED", "K_LOST",
};

typedef struct {
    PyObject_HEAD
    uint8_t key_names[MAX_KEYS][NAME_WIDTH];
    int64_t key_lens[MAX_KEYS];
    uint8_t key_hex[MAX_KEYS];
    uint8_t type_names[MAX_TYPES][NAME_WIDTH];
    int64_t type_lens[MAX_TYPES];
    int64_t n_types;
    uint8_t action_names[MAX_ACTIONS][NAME_WIDTH];
    int64_t action_lens[MAX_ACTIONS];
    int64_t n_actions;
    uint8_t digits[16];
    int64_t field_key[F_COUNT];
    uint8_t kind_code[256];
    int64_t ndjson, text, max_line, no_ts;
    int64_t f_clkch, f_global_valid, f_malformed, f_page, f_prohibited, f_wrap, f_write;
    /* Built once from the tables above, so a field or a line head is one fixed-size copy:
     * ndjson ',"key":', text ' key=' (the first field of a line skips the space), ndjson
     * ',"type":"name","ts":', text 'name' padded to 12 columns and a space. */
    uint8_t json_key[F_COUNT][PREFIX_WIDTH];
    uint8_t json_key_len[F_COUNT];
    uint8_t text_key[F_COUNT][PREFIX_WIDTH];
    uint8_t text_key_len[F_COUNT];
    uint8_t json_head[MAX_TYPES][HEAD_WIDTH];
    uint8_t json_head_len[MAX_TYPES];
    uint8_t text_head[MAX_TYPES][HEAD_WIDTH];
    uint8_t text_head_len[MAX_TYPES];
} Formatter;

static int copy_names(PyObject *consts, const char *table, const char *lens, uint8_t *names, int64_t *lengths,
                      Py_ssize_t max_rows, int64_t *count) {
    Py_ssize_t shape[2], lens_shape[2];
    if (const_array(consts, table, A_U8, 2, names, max_rows, NAME_WIDTH, shape) < 0) return -1;
    if (const_array(consts, lens, A_I64, 1, lengths, max_rows, 1, lens_shape) < 0) return -1;
    if (lens_shape[0] != shape[0]) {
        PyErr_Format(PyExc_ValueError, "%s and %s differ in length", table, lens);
        return -1;
    }
    for (Py_ssize_t i = 0; i < shape[0]; i++) {
        if (lengths[i] < 0 || lengths[i] > shape[1]) {
            PyErr_Format(PyExc_ValueError, "%s: bad length", lens);
            return -1;
        }
    }
    if (count) *count = shape[0];
    return 0;
}

static PyObject *formatter_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"constants", NULL};
    PyObject *consts;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!:PacketFormatter", kwlist, &PyDict_Type, &consts)) return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    Formatter *self = (Formatter *)alloc(type, 0);
    if (self == NULL) return NULL;
    int64_t n_keys;
    Py_ssize_t shape[2];
    if (copy_names(consts, "KEY_NAMES", "KEY_LENS", &self->key_names[0][0], self->key_lens, MAX_KEYS, &n_keys) < 0 ||
        copy_names(consts, "TYPE_NAMES", "TYPE_LENS", &self->type_names[0][0], self->type_lens, MAX_TYPES,
                   &self->n_types) < 0 ||
        copy_names(consts, "ACTION_NAMES", "ACTION_LENS", &self->action_names[0][0], self->action_lens, MAX_ACTIONS,
                   &self->n_actions) < 0 ||
        const_array(consts, "KEY_HEX", A_BOOL, 1, self->key_hex, MAX_KEYS, 1, shape) < 0)
        goto fail;
    {
        uint8_t raw[16];
        if (const_array(consts, "DIGITS", A_U8, 1, raw, 16, 1, shape) < 0) goto fail;
        if (shape[0] != 16) {
            PyErr_SetString(PyExc_ValueError, "DIGITS must hold 16 digits");
            goto fail;
        }
        memcpy(self->digits, raw, 16);
    }
    for (int f = 0; f < F_COUNT; f++) {
        if (const_int(consts, field_names[f], &self->field_key[f]) < 0) goto fail;
        if (self->field_key[f] < 0 || self->field_key[f] >= n_keys) {
            PyErr_Format(PyExc_ValueError, "%s is not a key index", field_names[f]);
            goto fail;
        }
    }
    memset(self->kind_code, KD_OTHER, sizeof(self->kind_code));
    for (size_t k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++) {
        int64_t value;
        if (const_int(consts, kind_names[k].name, &value) < 0) goto fail;
        if (value < 0 || value > 255) {
            PyErr_Format(PyExc_ValueError, "%s must be a uint8 packet kind", kind_names[k].name);
            goto fail;
        }
        self->kind_code[value] = (uint8_t)kind_names[k].code;
    }
    struct {
        const char *name;
        int64_t *dest;
    } scalars[] = {
        {"NDJSON", &self->ndjson}, {"TEXT", &self->text}, {"MAX_LINE", &self->max_line}, {"NO_TS", &self->no_ts},
        {"FLAG_CLKCH", &self->f_clkch}, {"FLAG_GLOBAL_VALID", &self->f_global_valid},
        {"FLAG_MALFORMED", &self->f_malformed}, {"FLAG_PAGE", &self->f_page},
        {"FLAG_PROHIBITED", &self->f_prohibited}, {"FLAG_WRAP", &self->f_wrap}, {"FLAG_WRITE", &self->f_write},
    };
    for (size_t s = 0; s < sizeof(scalars) / sizeof(scalars[0]); s++) {
        if (const_int(consts, scalars[s].name, scalars[s].dest) < 0) goto fail;
    }
    if (self->max_line < 256) {
        PyErr_SetString(PyExc_ValueError, "MAX_LINE must be at least 256");
        goto fail;
    }
    if (memcmp(self->digits, "0123456789", 10) != 0) {
        PyErr_SetString(PyExc_ValueError, "DIGITS must start with 0123456789");
        goto fail;
    }
    for (int f = 0; f < F_COUNT; f++) {
        const int64_t key = self->field_key[f];
        const int64_t len = self->key_lens[key];
        uint8_t *j = self->json_key[f], *t = self->text_key[f];
        memset(j, 0, PREFIX_WIDTH);
        memset(t, 0, PREFIX_WIDTH);
        j[0] = ',';
        j[1] = '"';
        memcpy(j + 2, self->key_names[key], (size_t)len);
        j[2 + len] = '"';
        j[3 + len] = ':';
        self->json_key_len[f] = (uint8_t)(len + 4);
        t[0] = ' ';
        memcpy(t + 1, self->key_names[key], (size_t)len);
        t[1 + len] = '=';
        self->text_key_len[f] = (uint8_t)(len + 2);
    }
    for (int64_t k = 0; k < self->n_types; k++) {
        const int64_t len = self->type_lens[k];
        uint8_t *j = self->json_head[k], *t = self->text_head[k];
        memset(j, 0, HEAD_WIDTH);
        memset(t, ' ', HEAD_WIDTH);
        memcpy(j, ",\"type\":\"", 9);
        memcpy(j + 9, self->type_names[k], (size_t)len);
        memcpy(j + 9 + len, "\",\"ts\":", 7);
        self->json_head_len[k] = (uint8_t)(len + 16);
        memcpy(t, self->type_names[k], (size_t)len);
        self->text_head_len[k] = (uint8_t)((len > 12 ? len : 12) + 1);
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static inline int64_t put_bytes(uint8_t *out, int64_t pos, const uint8_t *src, int64_t len) {
    memcpy(out + pos, src, (size_t)len);
    return pos + len;
}

#define LIT(s) (pos = put_bytes(out, pos, (const uint8_t *)(s), (int64_t)sizeof(s) - 1))

/* "00" "01" ... "99": decimals are written two digits per division. */
static const char DIGIT_PAIRS[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

/* How many decimal digits v has. */
static inline int decimal_digits(uint64_t v) {
    int n = 1;
    while (v >= 10000) {
        v /= 10000;
        n += 4;
    }
    return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

/* The n decimal digits of v, ending just before end. */
static inline void put_digits(uint8_t *end, uint64_t v) {
    while (v >= 100) {
        const unsigned r = (unsigned)(v % 100);
        v /= 100;
        end -= 2;
        memcpy(end, DIGIT_PAIRS + 2 * r, 2);
    }
    if (v >= 10) {
        memcpy(end - 2, DIGIT_PAIRS + 2 * v, 2);
    } else {
        end[-1] = (uint8_t)('0' + v);
    }
}

/* An unsigned integer in base 10 or, as 0x..., base 16 (the reference's _uint). */
static inline int64_t put_uint(const Formatter *F, uint8_t *out, int64_t pos, uint64_t v, int hex) {
    if (!hex) {
        const int n = decimal_digits(v);
        put_digits(out + pos + n, v);
        return pos + n;
    }
    int n = 1;
    for (uint64_t rest = v >> 4; rest; rest >>= 4) n++;
    out[pos] = '0';
    out[pos + 1] = 'x';
    uint8_t *end = out + pos + 2 + n;
    do {
        *--end = F->digits[v & 15];
        v >>= 4;
    } while (v);
    return pos + 2 + n;
}

/* A signed decimal right-aligned in width (the reference's _int_padded, left=False). */
static inline int64_t put_int_padded(uint8_t *out, int64_t pos, int64_t value, int64_t width) {
    const int neg = value < 0;
    const uint64_t v = neg ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    const int n = decimal_digits(v);
    const int64_t size = neg ? n + 1 : n;
    const int64_t pad = width > size ? width - size : 0;
    memset(out + pos, ' ', PAD_ROOM); /* fixed size, into the line buffer: at least any width */
    pos += pad;
    if (neg) out[pos++] = '-';
    put_digits(out + pos + n, v);
    return pos + n;
}

/* A field's key: one fixed-size copy of its prefix into the line buffer (the bytes past the
 * prefix are overwritten next or never copied out). */
static inline int64_t put_key(const Formatter *F, uint8_t *out, int64_t pos, int ndjson, int field, int first) {
    if (ndjson) {
        memcpy(out + pos, F->json_key[field], PREFIX_WIDTH);
        return pos + F->json_key_len[field];
    }
    memcpy(out + pos, F->text_key[field] + first, PREFIX_WIDTH - 1);
    return pos + F->text_key_len[field] - first;
}

static inline int64_t int_field(const Formatter *F, uint8_t *out, int64_t pos, int ndjson, int field, uint64_t value,
                                int first) {
    pos = put_key(F, out, pos, ndjson, field, first);
    return put_uint(F, out, pos, value, !ndjson && F->key_hex[F->field_key[field]]);
}

static inline int64_t bool_field(const Formatter *F, uint8_t *out, int64_t pos, int ndjson, int field, int value,
                                 int first) {
    pos = put_key(F, out, pos, ndjson, field, first);
    if (value) return LIT("true");
    return LIT("false");
}

static inline int64_t null_field(const Formatter *F, uint8_t *out, int64_t pos, int ndjson, int field, int first) {
    pos = put_key(F, out, pos, ndjson, field, first);
    if (ndjson) return LIT("null");
    return LIT("none");
}

PyDoc_STRVAR(format_doc, "format_packets(offset, kind, a, b, c, flags, ts, mode, out) -> bytes written\n\n"
                         "Write packets as ndjson or text lines into out (see packets_text.format_packets).");

static PyObject *format_packets(PyObject *self_, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"offset", "kind", "a", "b", "c", "flags", "ts", "mode", "out", NULL};
    const Formatter *F = (const Formatter *)self_;
    PyObject *p_offset, *p_kind, *p_a, *p_b, *p_c, *p_flags, *p_ts, *p_out;
    long long mode;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOOLO:format_packets", kwlist, &p_offset, &p_kind, &p_a, &p_b,
                                     &p_c, &p_flags, &p_ts, &mode, &p_out))
        return NULL;
    Views vs = {.count = 0};
    Py_ssize_t sh[8][2];
    const int64_t *offset = views_get(&vs, p_offset, A_I64, 0, 1, "offset", sh[0]);
    const uint8_t *kind = offset ? views_get(&vs, p_kind, A_U8, 0, 1, "kind", sh[1]) : NULL;
    const uint64_t *a = kind ? views_get(&vs, p_a, A_U64, 0, 1, "a", sh[2]) : NULL;
    const uint64_t *b = a ? views_get(&vs, p_b, A_U64, 0, 1, "b", sh[3]) : NULL;
    const uint8_t *c = b ? views_get(&vs, p_c, A_U8, 0, 1, "c", sh[4]) : NULL;
    const uint8_t *flags = c ? views_get(&vs, p_flags, A_U8, 0, 1, "flags", sh[5]) : NULL;
    const int64_t *ts = flags ? views_get(&vs, p_ts, A_I64, 0, 1, "ts", sh[6]) : NULL;
    uint8_t *RESTRICT dest = ts ? views_get(&vs, p_out, A_U8, 1, 1, "out", sh[7]) : NULL;
    if (dest == NULL) {
        views_release(&vs);
        return NULL;
    }
    const int64_t count = sh[1][0];
    for (int col = 0; col < 7; col++) {
        if (sh[col][0] < count) {
            views_release(&vs);
            PyErr_SetString(PyExc_ValueError, "format_packets: the columns differ in length");
            return NULL;
        }
    }
    const int64_t out_len = sh[7][0];
    const int ndjson = mode == F->ndjson;
    int64_t written = 0;
    int error = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < count; i++) {
        /* Lines are made with fixed-size copies that may run up to HEAD_WIDTH bytes past their
         * end (inside the MAX_LINE checked for): the next line overwrites those bytes. The last
         * line is made in a buffer of its own and copied out, so nothing past the listing
         * changes. */
        uint8_t line[LINE_ROOM];
        if (written + F->max_line > out_len) {
            error = 1;
            break;
        }
        const int last = i == count - 1;
        uint8_t *out = last ? line : dest + written;
        int64_t pos = 0;
        const uint8_t k = kind[i];
        const int64_t f = flags[i];
        if (k >= F->n_types) {
            error = 2;
            break;
        }
        if (ndjson) {
            LIT("{\"offset\":");
            pos = put_uint(F, out, pos, (uint64_t)offset[i], 0);
            memcpy(out + pos, F->json_head[k], HEAD_WIDTH);
            pos += F->json_head_len[k];
            if (ts[i] == F->no_ts) {
                LIT("null");
            } else {
                pos = put_uint(F, out, pos, (uint64_t)ts[i], 0);
            }
        } else {
            pos = put_int_padded(out, pos, offset[i], 10);
            out[pos++] = ' ';
            if (ts[i] == F->no_ts) {
                LIT("           -");
            } else {
                pos = put_int_padded(out, pos, ts[i], 12);
            }
            LIT("  ");
            memcpy(out + pos, F->text_head[k], HEAD_WIDTH);
            pos += F->text_head_len[k];
        }
        switch (F->kind_code[k]) {
        case KD_LTS:
            pos = int_field(F, out, pos, ndjson, F_DELTA, a[i], 1);
            pos = int_field(F, out, pos, ndjson, F_TC, b[i], 0);
            break;
        case KD_GTS1:
        case KD_GTS2:
            pos = int_field(F, out, pos, ndjson, F_VALUE, a[i], 1);
            if (F->kind_code[k] == KD_GTS1) {
                pos = bool_field(F, out, pos, ndjson, F_WRAP, (f & F->f_wrap) != 0, 0);
                pos = bool_field(F, out, pos, ndjson, F_CLKCH, (f & F->f_clkch) != 0, 0);
            }
            if (f & F->f_global_valid) {
                pos = int_field(F, out, pos, ndjson, F_GLOBAL, b[i], 0);
            } else {
                pos = null_field(F, out, pos, ndjson, F_GLOBAL, 0);
            }
            break;
        case KD_EXTENSION:
            pos = int_field(F, out, pos, ndjson, F_SH, b[i], 1);
            pos = int_field(F, out, pos, ndjson, F_EX, a[i], 0);
            if (f & F->f_page) pos = int_field(F, out, pos, ndjson, F_PAGE, a[i], 0);
            break;
        case KD_SWIT:
            pos = int_field(F, out, pos, ndjson, F_PORT, b[i], 1);
            pos = int_field(F, out, pos, ndjson, F_SIZE, c[i], 0);
            pos = int_field(F, out, pos, ndjson, F_VALUE, a[i], 0);
            break;
        case KD_DWT_EVENT:
        case KD_PMU_OVERFLOW:
            pos = int_field(F, out, pos, ndjson, F_COUNTERS, a[i], 1);
            break;
        case KD_EXCEPTION:
            pos = int_field(F, out, pos, ndjson, F_NUMBER, a[i], 1);
            if (b[i] >= (uint64_t)F->n_actions) {
                error = 3;
                break;
            }
            pos = put_key(F, out, pos, ndjson, F_ACTION, 0);
            if (ndjson) out[pos++] = '"';
            pos = put_bytes(out, pos, F->action_names[b[i]], F->action_lens[b[i]]);
            if (ndjson) out[pos++] = '"';
            break;
        case KD_PC_SAMPLE:
            pos = int_field(F, out, pos, ndjson, F_PC, a[i], 1);
            break;
        case KD_PC_SLEEP:
            pos = bool_field(F, out, pos, ndjson, F_PROHIBITED, (f & F->f_prohibited) != 0, 1);
            break;
        case KD_DATA_PC:
        case KD_DATA_ADDR:
        case KD_DATA_VALUE:
            pos = int_field(F, out, pos, ndjson, F_COMPARATOR, b[i], 1);
            if (F->kind_code[k] == KD_DATA_PC) {
                pos = int_field(F, out, pos, ndjson, F_PC, a[i], 0);
            } else if (F->kind_code[k] == KD_DATA_ADDR) {
                pos = int_field(F, out, pos, ndjson, F_ADDRESS, a[i], 0);
            } else {
                pos = int_field(F, out, pos, ndjson, F_VALUE, a[i], 0);
                pos = bool_field(F, out, pos, ndjson, F_WRITE, (f & F->f_write) != 0, 0);
            }
            pos = int_field(F, out, pos, ndjson, F_SIZE, c[i], 0);
            break;
        case KD_DATA_MATCH:
            pos = int_field(F, out, pos, ndjson, F_COMPARATOR, b[i], 1);
            break;
        case KD_RESERVED:
            pos = int_field(F, out, pos, ndjson, F_HEADER, a[i], 1);
            if (f & F->f_malformed) pos = bool_field(F, out, pos, ndjson, F_MALFORMED, 1, 0);
            break;
        case KD_GAP:
            pos = int_field(F, out, pos, ndjson, F_LOST, a[i], 1);
            break;
        default:
            break;
        }
        if (error) break;
        if (ndjson) out[pos++] = '}';
        out[pos++] = '\n';
        if (last) memcpy(dest + written, line, (size_t)pos);
        written += pos;
    }
    Py_END_ALLOW_THREADS
    views_release(&vs);
    if (error == 1) {
        PyErr_SetString(PyExc_ValueError, "format_packets: out needs room for MAX_LINE bytes per packet");
        return NULL;
    }
    if (error == 2) {
        PyErr_SetString(PyExc_ValueError, "format_packets: unknown packet kind");
        return NULL;
    }
    if (error == 3) {
        PyErr_SetString(PyExc_ValueError, "format_packets: unknown exception action");
        return NULL;
    }
    return PyLong_FromLongLong((long long)written);
}

static PyMethodDef formatter_methods[] = {
    {"format_packets", (PyCFunction)(void (*)(void))format_packets, METH_VARARGS | METH_KEYWORDS, format_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot formatter_slots[] = {
    {Py_tp_new, formatter_new},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_methods, formatter_methods},
    {Py_tp_doc, "PacketFormatter(constants): packet listings; constants are tracer.export.packets_text's."},
    {0, NULL},
};

static PyType_Spec formatter_spec = {
    .name = "tracer._kernels.PacketFormatter",
    .basicsize = sizeof(Formatter),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = formatter_slots,
};

PyObject *formatter_type(PyObject *module) { return PyType_FromModuleAndSpec(module, &formatter_spec, NULL); }
