"""The C source of the native launcher (``native_launch`` builds it): one extension type, ``Launcher``.

A ``Launcher`` replays one armed launch: called with a compiled object's arguments, it launches the armed plan
only when every one of these holds, and otherwise passes the call, untouched, to its ``fallback`` (the generated
Python path, which checks, refills, launches and arms again):

- it is armed (``arm(guard, addresses, plan)``; ``disarm()`` undoes it);
- the call has between ``min_args`` and ``max_args`` positional arguments, and no keyword but ``stream``,
  given as ``None`` or a non-negative int (the handle; ``None``, or none given, is the legacy default stream);
- ``guard(*tensors)`` returns ``True`` (the arguments at ``positions``, in order);
- each of those arguments' ``data_ptr()`` (an int in ``[0, 2**64)``) equals the armed address at its place, or it
  was armed with a refill and every new address is non-null and a multiple of its tensor's alignment: then, before the launch, each of the refill's
  attributes of its owner is set to ``None`` (the Python path's record of what the parameters hold), each write
  ``(slot, k, offset)`` stores the 64-bit ``address[k] + offset`` at ``slot`` (a pointer parameter, or the
  address field of a TMA descriptor: its first 8 bytes), and the new addresses become the armed ones.

Constructed with a ``lock`` (a ``Lock`` of this module, which the compiled object's Python paths take with
``with lock:`` around their refills and launches), it holds that lock from the check that it is still armed
(after the guard and the addresses were read) until its launches were enqueued: a refill by another thread
cannot change the parameters between the check and the driver's copy of them. The plan's launches go to the
driver's ``cuLaunchKernel`` (its address is given at construction) one after the other, without the GIL; a failed one stops the rest and the result is ``on_error(code, index)``. An exception
raised by the guard or by ``data_ptr()`` propagates. ``hits`` counts the calls launched here.

The caller's contract (``launch_paths``): armed only with addresses whose parameters are filled in the plan's
parameter arrays, disarmed before those arrays or the plan change, and armed with a refill only where those
writes are all that new addresses change in them (the owner keeps the slots alive).
"""

from .native_lock_source import LOCK_SOURCE
from .native_type_source import TYPE_SOURCE

__all__ = ["SOURCE"]


SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL _Py_TPFLAGS_HAVE_VECTORCALL
#endif

#define MAX_TENSORS 16
#define MAX_LAUNCHES 8
#define MAX_WRITES 32
#define MAX_RESETS 8

#ifndef CUTE_PY_LAUNCH_KEY
#define CUTE_PY_LAUNCH_KEY ""
#endif

""" + LOCK_SOURCE + r"""
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);

typedef struct {
    void *func;
    unsigned dims[7]; /* grid x, y, z, block x, y, z, dynamic shared memory bytes */
    void **params;
} Launch;

typedef struct {
    uint64_t *slot;
    Py_ssize_t k;
    unsigned long long offset;
} Write;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    launch_fn launch;
    PyObject *fallback;
    PyObject *on_error;
    PyObject *guard; /* NULL: disarmed */
    PyObject *lock;  /* a Lock held from the armed-state check to the end of the launches, or NULL */
    Py_ssize_t min_args, max_args, ntensors, nlaunches;
    Py_ssize_t positions[MAX_TENSORS];
    unsigned long long addresses[MAX_TENSORS];
    Launch launches[MAX_LAUNCHES];
    unsigned long long hits, refills;
    PyObject *owner; /* NULL: no refill */
    PyObject *resets[MAX_RESETS];
    Py_ssize_t nresets, nwrites;
    unsigned long long aligns[MAX_TENSORS];
    Write writes[MAX_WRITES];
} Launcher;

static PyObject *data_ptr_name;

static PyObject *
pass_on(Launcher *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Launcher: no fallback set");
        return NULL;
    }
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static void
unlock(PyObject *lock)
{
    if (lock != NULL) {
        PyThread_release_lock(((Lock *)lock)->lock);
        Py_DECREF(lock);
    }
}

static PyObject *
launcher_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Launcher *self = (Launcher *)obj;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), k, j, m;
    PyObject *stack[MAX_TENSORS], *guard = self->guard, *r, *lock = NULL;
    unsigned long long got[MAX_TENSORS];
    Launch plan[MAX_LAUNCHES];
    void *stream = NULL;
    int ok, moved = 0, err = 0;

    if (guard == NULL || n < self->min_args || n > self->max_args)
        return pass_on(self, args, nargsf, kwnames);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        PyObject *s = args[n];
        if (PyTuple_GET_SIZE(kwnames) != 1 ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "stream") != 0)
            return pass_on(self, args, nargsf, kwnames);
        if (s != Py_None) {
            unsigned long long v;
            if (!PyLong_CheckExact(s))
                return pass_on(self, args, nargsf, kwnames);
            v = PyLong_AsUnsignedLongLong(s);
            if (v == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return pass_on(self, args, nargsf, kwnames);
            }
            stream = (void *)(uintptr_t)v;
        }
    }
    for (k = 0; k < self->ntensors; k++)
        stack[k] = args[self->positions[k]];
    Py_INCREF(guard); /* the guard may run Python code that disarms this launcher */
    r = PyObject_Vectorcall(guard, stack, self->ntensors, NULL);
    if (r == NULL) {
        Py_DECREF(guard);
        return NULL;
    }
    ok = r == Py_True;
    Py_DECREF(r);
    for (k = 0; ok && k < self->ntensors; k++) {
        PyObject *p = PyObject_CallMethodNoArgs(stack[k], data_ptr_name);
        if (p == NULL) {
            Py_DECREF(guard);
            return NULL;
        }
        if (!PyLong_Check(p)) {
            PyErr_Format(PyExc_TypeError, "Launcher: data_ptr() returned %R, not an int", p);
            Py_DECREF(p);
            Py_DECREF(guard);
            return NULL;
        }
        got[k] = PyLong_AsUnsignedLongLong(p);
        Py_DECREF(p);
        if (got[k] == (unsigned long long)-1 && PyErr_Occurred()) { /* negative or past 64 bits: not launched */
            PyErr_Clear();
            ok = 0;
        }
    }
    if (ok && self->lock != NULL) { /* lock: NULL unless taken here */
        lock = self->lock;
        Py_INCREF(lock);
        lock_take((Lock *)lock);
    }
    /* compared under the lock: another thread's refill may have changed the armed addresses meanwhile */
    for (k = 0; ok && k < self->ntensors; k++)
        moved |= got[k] != self->addresses[k];
    ok = ok && self->guard == guard; /* still armed as when the checks began */
    if (ok && moved) { /* new addresses: refilled here where the refill allows it */
        ok = self->owner != NULL;
        for (k = 0; ok && k < self->ntensors; k++)
            ok = got[k] != 0 && got[k] % self->aligns[k] == 0;
        if (ok) {
            PyObject *owner = self->owner;
            Py_INCREF(owner);
            for (k = 0; k < self->nresets; k++)
                if (PyObject_SetAttr(owner, self->resets[k], Py_None) < 0) {
                    Py_DECREF(owner);
                    Py_DECREF(guard);
                    unlock(lock);
                    return NULL;
                }
            Py_DECREF(owner);
            ok = self->guard == guard && self->owner == owner; /* the attributes' owner may run code */
        }
        if (ok) {
            for (k = 0; k < self->nwrites; k++)
                *self->writes[k].slot = (uint64_t)(got[self->writes[k].k] + self->writes[k].offset);
            memcpy(self->addresses, got, (size_t)self->ntensors * sizeof(got[0]));
            self->refills++;
        }
    }
    Py_DECREF(guard);
    if (!ok) {
        unlock(lock);
        return pass_on(self, args, nargsf, kwnames);
    }
    m = self->nlaunches;
    memcpy(plan, self->launches, (size_t)m * sizeof(Launch));
    Py_BEGIN_ALLOW_THREADS
    for (j = 0; j < m; j++) {
        Launch *L = &plan[j];
        err = self->launch(L->func, L->dims[0], L->dims[1], L->dims[2], L->dims[3], L->dims[4], L->dims[5],
                           L->dims[6], stream, L->params, NULL);
        if (err)
            break;
    }
    Py_END_ALLOW_THREADS
    unlock(lock);
    if (err == 201 && j == 0)  /* no context current in this thread: the Python path makes it current */
        return pass_on(self, args, nargsf, kwnames);
    if (err) {
        if (self->on_error == NULL) {
            PyErr_Format(PyExc_RuntimeError, "Launcher: launch %zd failed with code %d", j, err);
            return NULL;
        }
        return PyObject_CallFunction(self->on_error, "in", err, j);
    }
    self->hits++;
    Py_RETURN_NONE;
}

""" + TYPE_SOURCE
