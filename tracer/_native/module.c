/* The extension module tracer._kernels: buffer and constant helpers, and the module itself. */
#include "common.h"

static const char *type_names[] = {"uint8", "int64", "uint64", "bool"};
static const Py_ssize_t type_sizes[] = {1, 8, 8, 1};

static int format_matches(const char *format, int type) {
    const char *f = format ? format : "B";
    if (*f == '@' || *f == '=') {
        f++;
    } else if (*f == '<') {
        const uint16_t probe = 1;
        if (*(const uint8_t *)&probe != 1) return 0; /* little-endian data on a big-endian host */
        f++;
    }
    if (f[0] == 0 || f[1] != 0) return 0;
    switch (type) {
    case A_U8:
        return f[0] == 'B';
    case A_I64:
        return f[0] == 'q' || (f[0] == 'l' && sizeof(long) == 8);
    case A_U64:
        return f[0] == 'Q' || (f[0] == 'L' && sizeof(long) == 8);
    case A_BOOL:
        return f[0] == '?';
    }
    return 0;
}

void *views_get(Views *vs, PyObject *obj, int type, int writable, int ndim, const char *name, Py_ssize_t shape[2]) {
    if (vs->count >= MAX_VIEWS) {
        PyErr_SetString(PyExc_RuntimeError, "tracer._kernels: too many array arguments");
        return NULL;
    }
    Py_buffer *view = &vs->views[vs->count];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous%s %s array", name, writable ? " writable" : "",
                     type_names[type]);
        return NULL;
    }
    vs->count++;
    if (view->itemsize != type_sizes[type] || !format_matches(view->format, type)) {
        PyErr_Format(PyExc_TypeError, "%s must be a %s array, not format '%s'", name, type_names[type],
                     view->format ? view->format : "B");
        return NULL;
    }
    if (view->ndim != ndim) {
        PyErr_Format(PyExc_TypeError, "%s must have %d dimension(s), not %d", name, ndim, view->ndim);
        return NULL;
    }
    shape[0] = ndim >= 1 ? view->shape[0] : 1;
    shape[1] = ndim >= 2 ? view->shape[1] : 1;
    return view->buf;
}

void views_release(Views *vs) {
    for (int i = 0; i < vs->count; i++) PyBuffer_Release(&vs->views[i]);
    vs->count = 0;
}

int const_int(PyObject *consts, const char *name, int64_t *out) {
    PyObject *value = PyDict_GetItemString(consts, name); /* borrowed */
    if (value == NULL) {
        PyErr_Format(PyExc_KeyError, "kernel constant %s is missing", name);
        return -1;
    }
    PyObject *index = PyNumber_Index(value);
    if (index == NULL) return -1;
    long long v = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = (int64_t)v;
    return 0;
}

int layout_check(PyObject *consts, const char *module, const Layout *layout) {
    for (const Layout *l = layout; l->name != NULL; l++) {
        int64_t value;
        if (const_int(consts, l->name, &value) < 0) return -1;
        if (value != l->value) {
            PyErr_Format(PyExc_ValueError,
                         "tracer._kernels was built from another version of %s (%s is %lld there, %lld in "
                         "Python): rebuild it (pip install .)",
                         module, l->name, (long long)l->value, (long long)value);
            return -1;
        }
    }
    return 0;
}

int const_array(PyObject *consts, const char *name, int type, int ndim, void *dest, Py_ssize_t max_rows,
                Py_ssize_t max_cols, Py_ssize_t shape[2]) {
    PyObject *value = PyDict_GetItemString(consts, name);
    if (value == NULL) {
        PyErr_Format(PyExc_KeyError, "kernel table %s is missing", name);
        return -1;
    }
    Views vs = {.count = 0};
    const uint8_t *data = views_get(&vs, value, type, 0, ndim, name, shape);
    if (data == NULL) {
        views_release(&vs);
        return -1;
    }
    if (shape[0] > max_rows || shape[1] > max_cols) {
        PyErr_Format(PyExc_ValueError, "kernel table %s is larger than %zd x %zd", name, max_rows, max_cols);
        views_release(&vs);
        return -1;
    }
    Py_ssize_t size = type_sizes[type];
    memset(dest, 0, (size_t)(max_rows * max_cols * size));
    for (Py_ssize_t r = 0; r < shape[0]; r++) {
        memcpy((uint8_t *)dest + r * max_cols * size, data + r * shape[1] * size, (size_t)(shape[1] * size));
    }
    views_release(&vs);
    return 0;
}

void kernel_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    freefunc free_ = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_(self);
    Py_DECREF(type);
}

static int add_type(PyObject *module, const char *name, PyObject *type) {
    if (type == NULL) return -1;
    int rc = PyModule_AddObjectRef(module, name, type);
    Py_DECREF(type);
    return rc;
}

static int kernels_exec(PyObject *module) {
    if (add_type(module, "TpiuKernel", tpiu_type(module)) < 0) return -1;
    if (add_type(module, "ItmKernel", itm_type(module)) < 0) return -1;
    if (add_type(module, "TelemetryKernel", telemetry_type(module)) < 0) return -1;
    if (add_type(module, "PacketFormatter", formatter_type(module)) < 0) return -1;
    return 0;
}

static PyModuleDef_Slot kernels_slots[] = {
    {Py_mod_exec, kernels_exec},
    {0, NULL},
};

static struct PyModuleDef kernels_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tracer._kernels",
    .m_doc = "tracer's compiled kernels: TPIU deframing, ITM/DWT decoding, telemetry records, packet "
             "listings. Each kernel object is built by its Python module with that module's tables.",
    .m_size = 0,
    .m_slots = kernels_slots,
};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModuleDef_Init(&kernels_module); }
