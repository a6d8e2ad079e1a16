/* A Launcher's construction and arming: the data of one compiled object, read and checked.

   Launcher(launch, positions, max_args, lock=None): the address of the driver's cuLaunchKernel, the positions of
   the call's tensor arguments (at most MAX_TENSORS), the most positional arguments a call may pass, and the
   compiled object's Lock (or None).

   arm(guard, addresses, plan, refill=None): launch the plan for calls whose tensors pass guard(*tensors) at these
   addresses. plan: per launch (function, grid x, y, z, block x, y, z, smem, parameter array address).
   refill: (owner, resets, alignments, writes): for calls at new addresses, each alignment divides its tensor's
   address, each attribute named in resets is set to None on owner, and each write (slot address, tensor,
   offset) stores that tensor's address + offset at the slot. Every value is read and checked before any is
   kept: an arm that raises leaves the launcher disarmed. */

#include "launcher.h"

static int
as_address(PyObject *o, unsigned long long *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "Launcher: %R is not an int", o);
        return -1;
    }
    *out = PyLong_AsUnsignedLongLong(o);
    return *out == (unsigned long long)-1 && PyErr_Occurred() ? -1 : 0;
}

static int
as_unsigned(PyObject *o, unsigned *out)
{
    unsigned long long v;
    if (as_address(o, &v) < 0)
        return -1;
    if (v > 0xffffffffULL) {
        PyErr_Format(PyExc_OverflowError, "Launcher: %R does not fit 32 bits", o);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

int
cute_launcher_init(PyObject *obj, PyObject *args, PyObject *kwds)
{
    Launcher *self = (Launcher *)obj;
    static char *names[] = {"launch", "positions", "max_args", "lock", NULL};
    PyObject *launch, *positions, *lock = Py_None;
    Py_ssize_t max_args, k, n;
    unsigned long long address;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!n|O", names, &launch, &PyTuple_Type, &positions, &max_args,
                                     &lock))
        return -1;
    if (lock != Py_None && !PyObject_TypeCheck(lock, &cute_LockType)) {
        PyErr_SetString(PyExc_TypeError, "Launcher: the lock is a _cute_py_launch.Lock or None");
        return -1;
    }
    if (as_address(launch, &address) < 0)
        return -1;
    if (address == 0) {
        PyErr_SetString(PyExc_ValueError, "Launcher: the launch function's address is 0");
        return -1;
    }
    n = PyTuple_GET_SIZE(positions);
    if (n < 1 || n > MAX_TENSORS) {
        PyErr_Format(PyExc_ValueError, "Launcher: 1 to %d tensor positions, got %zd", MAX_TENSORS, n);
        return -1;
    }
    self->min_args = 0;
    for (k = 0; k < n; k++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, k));
        if (p == -1 && PyErr_Occurred())
            return -1;
        if (p < 0 || p >= max_args) {
            PyErr_Format(PyExc_ValueError, "Launcher: tensor position %zd outside 0..%zd", p, max_args - 1);
            return -1;
        }
        self->positions[k] = p;
        if (p + 1 > self->min_args)
            self->min_args = p + 1;
    }
    self->ntensors = n;
    self->max_args = max_args;
    self->launch = (launch_fn)(uintptr_t)address;
    Py_CLEAR(self->guard);
    Py_XINCREF(lock == Py_None ? NULL : lock);
    Py_XSETREF(self->lock, lock == Py_None ? NULL : lock);
    return 0;
}

/* the launches of plan into out[], their count into *m */
static int
read_plan(PyObject *plan, Launch *out, Py_ssize_t *m)
{
    Py_ssize_t j, k;
    *m = PyTuple_GET_SIZE(plan);
    if (*m < 1 || *m > MAX_LAUNCHES) {
        PyErr_Format(PyExc_ValueError, "Launcher.arm: 1 to %d launches, got %zd", MAX_LAUNCHES, *m);
        return -1;
    }
    for (j = 0; j < *m; j++) {
        PyObject *e = PyTuple_GET_ITEM(plan, j);
        unsigned long long a;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 9) {
            PyErr_SetString(PyExc_ValueError,
                            "Launcher.arm: a launch is (function, grid x, y, z, block x, y, z, smem, parameters)");
            return -1;
        }
        if (as_address(PyTuple_GET_ITEM(e, 0), &a) < 0)
            return -1;
        out[j].func = (void *)(uintptr_t)a;
        for (k = 0; k < 7; k++)
            if (as_unsigned(PyTuple_GET_ITEM(e, k + 1), &out[j].dims[k]) < 0)
                return -1;
        if (as_address(PyTuple_GET_ITEM(e, 8), &a) < 0)
            return -1;
        out[j].params = (void **)(uintptr_t)a;
    }
    return 0;
}

/* a refill, read and checked: its owner (borrowed), resets (borrowed tuple), alignments and writes */
typedef struct {
    PyObject *owner, *resets;
    unsigned long long aligns[MAX_TENSORS];
    Write writes[MAX_WRITES];
    Py_ssize_t nresets, nwrites;
} Refill;

static int
read_refill(PyObject *refill, Py_ssize_t ntensors, Refill *out)
{
    PyObject *aligns, *writes;
    Py_ssize_t k, j;

    if (!PyTuple_Check(refill)) {
        PyErr_SetString(PyExc_TypeError, "Launcher.arm: a refill is a tuple (owner, resets, alignments, writes)");
        return -1;
    }
    if (!PyArg_ParseTuple(refill, "OO!O!O!;Launcher.arm: a refill is (owner, resets, alignments, writes)",
                          &out->owner, &PyTuple_Type, &out->resets, &PyTuple_Type, &aligns, &PyTuple_Type, &writes))
        return -1;
    out->nresets = PyTuple_GET_SIZE(out->resets);
    out->nwrites = PyTuple_GET_SIZE(writes);
    if (out->nresets > MAX_RESETS || out->nwrites > MAX_WRITES || PyTuple_GET_SIZE(aligns) != ntensors) {
        PyErr_Format(PyExc_ValueError, "Launcher.arm: up to %d resets and %d writes, and one alignment per "
                     "tensor, got %zd, %zd and %zd", MAX_RESETS, MAX_WRITES, out->nresets, out->nwrites,
                     PyTuple_GET_SIZE(aligns));
        return -1;
    }
    for (k = 0; k < out->nresets; k++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(out->resets, k))) {
            PyErr_SetString(PyExc_TypeError, "Launcher.arm: the resets are attribute names");
            return -1;
        }
    for (k = 0; k < ntensors; k++) {
        if (as_address(PyTuple_GET_ITEM(aligns, k), &out->aligns[k]) < 0)
            return -1;
        if (out->aligns[k] == 0) {
            PyErr_SetString(PyExc_ValueError, "Launcher.arm: an alignment is 0");
            return -1;
        }
    }
    for (j = 0; j < out->nwrites; j++) {
        PyObject *e = PyTuple_GET_ITEM(writes, j);
        unsigned long long a, t;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 3) {
            PyErr_SetString(PyExc_ValueError, "Launcher.arm: a write is (slot address, tensor, offset)");
            return -1;
        }
        if (as_address(PyTuple_GET_ITEM(e, 0), &a) < 0 || as_address(PyTuple_GET_ITEM(e, 1), &t) < 0 ||
            as_address(PyTuple_GET_ITEM(e, 2), &out->writes[j].offset) < 0)
            return -1;
        if (a == 0 || a % 8 || t >= (unsigned long long)ntensors) {
            PyErr_Format(PyExc_ValueError, "Launcher.arm: write %zd: a slot must be 8-byte aligned and not 0, "
                         "the tensor one of %zd", j, ntensors);
            return -1;
        }
        out->writes[j].slot = (uint64_t *)(uintptr_t)a;
        out->writes[j].k = (Py_ssize_t)t;
    }
    return 0;
}

void
cute_launcher_forget_refill(Launcher *self)
{
    Py_ssize_t k;
    Py_CLEAR(self->owner);
    for (k = 0; k < self->nresets; k++)
        Py_CLEAR(self->resets[k]);
    self->nresets = self->nwrites = 0;
}

PyObject *
cute_launcher_arm(PyObject *obj, PyObject *args)
{
    Launcher *self = (Launcher *)obj;
    PyObject *guard, *addresses, *plan, *refill = Py_None;
    unsigned long long got[MAX_TENSORS];
    Launch launches[MAX_LAUNCHES];
    Refill r;
    Py_ssize_t k, m;

    r.owner = NULL;
    if (!PyArg_ParseTuple(args, "OO!O!|O", &guard, &PyTuple_Type, &addresses, &PyTuple_Type, &plan, &refill))
        return NULL;
    Py_CLEAR(self->guard); /* disarmed until every value is read */
    if (self->launch == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Launcher.arm: the launcher was not initialised");
        return NULL;
    }
    if (!PyCallable_Check(guard)) {
        PyErr_SetString(PyExc_TypeError, "Launcher.arm: the guard must be callable");
        return NULL;
    }
    if (PyTuple_GET_SIZE(addresses) != self->ntensors) {
        PyErr_Format(PyExc_ValueError, "Launcher.arm: %zd addresses for %zd tensors", PyTuple_GET_SIZE(addresses),
                     self->ntensors);
        return NULL;
    }
    for (k = 0; k < self->ntensors; k++)
        if (as_address(PyTuple_GET_ITEM(addresses, k), &got[k]) < 0)
            return NULL;
    if (read_plan(plan, launches, &m) < 0)
        return NULL;
    if (refill != Py_None && read_refill(refill, self->ntensors, &r) < 0)
        return NULL;
    cute_launcher_forget_refill(self);
    if (r.owner != NULL) {
        for (k = 0; k < r.nresets; k++) {
            self->resets[k] = PyTuple_GET_ITEM(r.resets, k);
            Py_INCREF(self->resets[k]);
        }
        self->nresets = r.nresets;
        memcpy(self->aligns, r.aligns, (size_t)self->ntensors * sizeof(r.aligns[0]));
        memcpy(self->writes, r.writes, (size_t)r.nwrites * sizeof(Write));
        self->nwrites = r.nwrites;
        Py_INCREF(r.owner);
        self->owner = r.owner;
    }
    memcpy(self->addresses, got, sizeof(got));
    memcpy(self->launches, launches, (size_t)m * sizeof(Launch));
    self->nlaunches = m;
    Py_INCREF(guard);
    self->guard = guard;
    Py_RETURN_NONE;
}

PyObject *
cute_launcher_disarm(PyObject *obj, PyObject *unused)
{
    Launcher *self = (Launcher *)obj;
    Py_CLEAR(self->guard);
    cute_launcher_forget_refill(self);
    Py_RETURN_NONE;
}
