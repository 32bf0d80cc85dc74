/* Shared helpers of tracer's compiled kernels (the extension module tracer._kernels).
 *
 * Each kernel is a port of a Python reference module (tracer/decode/tpiu_kernel.py,
 * tracer/decode/itm_kernel.py, tracer/telemetry/kernel.py, tracer/export/packets_text.py) and
 * must give bit-identical results. Arrays come in through the buffer protocol, so the build needs
 * no numpy headers. Every table that the Python side defines (packet kinds, record types, the
 * CRC table, minimum record lengths, header classes, names) is handed over by the Python module
 * when it builds its kernel object, so one definition serves both; the layout constants (state
 * slots, table rows) are compiled in and checked against the Python module at that moment.
 */
#ifndef TRACER_KERNELS_COMMON_H
#define TRACER_KERNELS_COMMON_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Distinct buffers: a write through one never changes what another points at (so the compiler
 * keeps state in registers). MSVC spells it __restrict. */
#if defined(_MSC_VER)
#define RESTRICT __restrict
#else
#define RESTRICT restrict
#endif

/* Element types of array arguments. */
enum { A_U8, A_I64, A_U64, A_BOOL };

/* Buffers held for the duration of one kernel call. */
#define MAX_VIEWS 24
typedef struct {
    Py_buffer views[MAX_VIEWS];
    int count;
} Views;

/* Get a C-contiguous buffer of ``ndim`` dimensions and element type ``type`` from ``obj``.
 * Returns its data, or NULL with an exception set. ``shape`` receives up to two extents. */
void *views_get(Views *vs, PyObject *obj, int type, int writable, int ndim, const char *name, Py_ssize_t shape[2]);
void views_release(Views *vs);

/* A layout constant: compiled-in value, checked against the Python module's. */
typedef struct {
    const char *name;
    int64_t value;
} Layout;

/* Check every entry of ``layout`` against ``consts`` (a dict); 0 on success, -1 with ValueError. */
int layout_check(PyObject *consts, const char *module, const Layout *layout);

/* Read the integer ``name`` from ``consts``; 0 on success, -1 with an exception. */
int const_int(PyObject *consts, const char *name, int64_t *out);

/* Copy the array ``name`` of ``consts`` (type ``type``, 1 or 2 dimensions) into ``dest``, which
 * holds ``max_rows`` x ``max_cols`` elements (``max_cols`` 1 for 1-D arrays). The array may be
 * smaller; its extents go to ``shape``. 0 on success, -1 with an exception. */
int const_array(PyObject *consts, const char *name, int type, int ndim, void *dest, Py_ssize_t max_rows,
                Py_ssize_t max_cols, Py_ssize_t shape[2]);

/* Wrapping arithmetic on int64 (the reference's numpy integers wrap). */
static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wrap_shl(int64_t a, int s) { return (int64_t)((uint64_t)a << s); }

/* Deallocation of a kernel object (a heap type: it holds a reference to its type). */
void kernel_dealloc(PyObject *self);

/* Kernel types, created by the module. */
PyObject *tpiu_type(PyObject *module);
PyObject *itm_type(PyObject *module);
PyObject *telemetry_type(PyObject *module);
PyObject *formatter_type(PyObject *module);

#endif
