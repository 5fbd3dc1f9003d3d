/* The step model's replay: the longest path through a step graph, in topological order (Kahn's).
 *
 * longest_path(indptr, pred, delay, from_start, release, dur, start, end, binding) -> int
 *
 * Node v's predecessors are pred[indptr[v]:indptr[v+1]]: it starts no earlier than each one's end
 * (its start, where from_start) plus the edge's delay, and no earlier than release[v]; it ends
 * dur[v] later. start, end (float64) and binding (int64: the binding edge, -1 the release) are
 * filled in. Nodes on a cycle start when the edges done so far allow, the earliest release first.
 * Returns the number of nodes that had to be released from a cycle. The pure-Python twin in
 * replay.py computes the same; tests compare them.
 *
 * walk(...) (below) follows the binding edges back from a node: the critical path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer b;
    int held;
} Buf;

static int get(PyObject *o, Buf *out, Py_ssize_t itemsize, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, &out->b, flags) < 0) return -1;
    out->held = 1;
    if (out->b.itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes expected, got %zd", name, itemsize, out->b.itemsize);
        return -1;
    }
    return 0;
}

static void release_all(Buf *bufs, int n) {
    for (int i = 0; i < n; i++)
        if (bufs[i].held) PyBuffer_Release(&bufs[i].b);
}

static PyObject *longest_path(PyObject *self, PyObject *args) {
    PyObject *o[9];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8])) return NULL;
    Buf b[9];
    memset(b, 0, sizeof(b));
    static const Py_ssize_t size[9] = {8, 8, 8, 1, 8, 8, 8, 8, 8};
    static const char *names[9] = {"indptr", "pred", "delay", "from_start", "release", "dur", "start", "end", "binding"};
    for (int i = 0; i < 9; i++) {
        if (get(o[i], &b[i], size[i], i >= 6, names[i]) < 0) {
            release_all(b, 9);
            return NULL;
        }
    }
    Py_ssize_t n = b[5].b.len / 8;
    Py_ssize_t m = b[1].b.len / 8;
    if (b[0].b.len / 8 != n + 1 || b[4].b.len / 8 != n || b[6].b.len / 8 != n || b[7].b.len / 8 != n ||
        b[8].b.len / 8 != n || b[2].b.len / 8 != m || b[3].b.len != m) {
        release_all(b, 9);
        PyErr_SetString(PyExc_ValueError, "longest_path: array lengths do not match");
        return NULL;
    }
    const int64_t *indptr = (const int64_t *)b[0].b.buf;
    const int64_t *pred = (const int64_t *)b[1].b.buf;
    const double *delay = (const double *)b[2].b.buf;
    const uint8_t *from_start = (const uint8_t *)b[3].b.buf;
    const double *release = (const double *)b[4].b.buf;
    const double *dur = (const double *)b[5].b.buf;
    double *start = (double *)b[6].b.buf;
    double *end = (double *)b[7].b.buf;
    int64_t *bind = (int64_t *)b[8].b.buf;

    int64_t *indeg = NULL, *sptr = NULL, *succ = NULL, *stack = NULL, *fill = NULL;
    long cycles = 0;
    if (indptr[n] != m) {
        release_all(b, 9);
        PyErr_SetString(PyExc_ValueError, "longest_path: indptr does not end at the edge count");
        return NULL;
    }
    for (Py_ssize_t e = 0; e < m; e++) {
        if (pred[e] < 0 || pred[e] >= n) {
            release_all(b, 9);
            PyErr_SetString(PyExc_ValueError, "longest_path: a predecessor out of range");
            return NULL;
        }
    }
    indeg = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    sptr = (int64_t *)calloc((size_t)(n + 1), sizeof(int64_t));
    succ = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    stack = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    fill = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!indeg || !sptr || !succ || !stack || !fill) {
        free(indeg), free(sptr), free(succ), free(stack), free(fill);
        release_all(b, 9);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t v = 0; v < n; v++) {
        indeg[v] = indptr[v + 1] - indptr[v];
        start[v] = end[v] = 0.0;
    }
    /* Successors: edges grouped by their predecessor, in edge order (as a stable sort gives). */
    for (Py_ssize_t e = 0; e < m; e++) sptr[pred[e] + 1]++;
    for (Py_ssize_t v = 0; v < n; v++) sptr[v + 1] += sptr[v];
    memcpy(fill, sptr, sizeof(int64_t) * (size_t)n);
    for (Py_ssize_t v = 0; v < n; v++)
        for (int64_t e = indptr[v]; e < indptr[v + 1]; e++) succ[fill[pred[e]]++] = v;
    Py_ssize_t top = 0, done = 0;
    for (Py_ssize_t v = 0; v < n; v++)
        if (indeg[v] == 0) stack[top++] = v;
    for (;;) {
        while (top > 0) {
            int64_t v = stack[--top];
            done++;
            double s = release[v];
            int64_t bv = -1;
            for (int64_t e = indptr[v]; e < indptr[v + 1]; e++) {
                int64_t p = pred[e];
                double t = (from_start[e] ? start[p] : end[p]) + delay[e];
                if (t > s) {
                    s = t;
                    bv = e;
                }
            }
            start[v] = s;
            end[v] = s + dur[v];
            bind[v] = bv;
            for (int64_t k = sptr[v]; k < sptr[v + 1]; k++) {
                int64_t w = succ[k];
                if (--indeg[w] == 0) stack[top++] = w;
            }
        }
        if (done >= n) break;
        /* A cycle: release the waiting node with the earliest release time. */
        int64_t best = -1;
        for (Py_ssize_t w = 0; w < n; w++)
            if (indeg[w] > 0 && (best < 0 || release[w] < release[best])) best = w;
        indeg[best] = 0;
        stack[top++] = best;
        cycles++;
    }
    Py_END_ALLOW_THREADS
    free(indeg), free(sptr), free(succ), free(stack), free(fill);
    release_all(b, 9);
    return PyLong_FromLong(cycles);
}

/* walk(binding, pred, from_start, start, end, lo, v0, out, seen) -> int
 *
 * The critical path back from node v0: v0, then the predecessor of its binding edge, and so on;
 * it stops after a node that starts at or before lo, has no binding edge (its release), or whose
 * binding edge counts from a time at or before lo, and before a node already marked in seen
 * (uint8 per node, marked as it goes: several walks share their common part once). The nodes go
 * into out (int64, one slot per node at least); returns how many. */
static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *o[5], *out_o, *seen_o;
    double lo;
    long long v0;
    if (!PyArg_ParseTuple(args, "OOOOOdLOO", &o[0], &o[1], &o[2], &o[3], &o[4], &lo, &v0, &out_o, &seen_o)) return NULL;
    static const char *names[5] = {"binding", "pred", "from_start", "start", "end"};
    static const Py_ssize_t sizes[5] = {8, 8, 1, 8, 8};
    Buf b[7];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 5; i++)
        if (get(o[i], &b[i], sizes[i], 0, names[i]) < 0) { release_all(b, 7); return NULL; }
    if (get(out_o, &b[5], 8, 1, "out") < 0 || get(seen_o, &b[6], 1, 1, "seen") < 0) { release_all(b, 7); return NULL; }
    Py_ssize_t n = b[0].b.len / 8, m = b[1].b.len / 8, cap = b[5].b.len / 8, k = 0;
    if (b[2].b.len != m || b[3].b.len / 8 != n || b[4].b.len / 8 != n || b[6].b.len != n) {
        release_all(b, 7);
        PyErr_SetString(PyExc_ValueError, "walk: array lengths do not match");
        return NULL;
    }
    const int64_t *binding = (const int64_t *)b[0].b.buf, *pred = (const int64_t *)b[1].b.buf;
    const uint8_t *from_start = (const uint8_t *)b[2].b.buf;
    const double *start = (const double *)b[3].b.buf, *end = (const double *)b[4].b.buf;
    int64_t *out = (int64_t *)b[5].b.buf;
    uint8_t *seen = (uint8_t *)b[6].b.buf;
    int64_t v = v0;
    while (v >= 0 && v < n && k < cap && !seen[v]) {
        seen[v] = 1;
        out[k++] = v;
        if (start[v] <= lo) break;
        int64_t e = binding[v];
        if (e < 0 || e >= m) break;
        int64_t p = pred[e];
        if (p < 0 || p >= n || (from_start[e] ? start[p] : end[p]) <= lo) break;
        v = p;
    }
    release_all(b, 7);
    return PyLong_FromSsize_t(k);
}

static PyMethodDef methods[] = {
    {"longest_path", longest_path, METH_VARARGS, "Longest path through a step graph in topological order."},
    {"walk", walk, METH_VARARGS, "The critical path back from a node, as node indices."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_replay", "The step model's replay, in C.", -1, methods};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
