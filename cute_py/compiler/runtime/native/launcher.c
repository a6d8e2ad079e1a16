/* _cute_py_launch: the native launcher of compiled kernels (built by build.py; the Python side is __init__.py).

   A Launcher replays one armed launch. Called with a compiled object's arguments, it launches the armed plan only
   when every one of these holds, and otherwise passes the call, untouched, to its fallback (the generated Python
   path, which checks, refills, launches and arms again):

   - it is armed (arm(guard, addresses, plan, refill=None), see arm.c; disarm() undoes it);
   - the call has between min_args and max_args positional arguments, and no keyword but stream, given as None or
     a non-negative int (the handle; None, or none given, is the legacy default stream);
   - guard(*tensors) returns True (the arguments at the armed positions, in order);
   - each of those arguments' data_ptr() (an int in [0, 2**64)) equals the armed address at its place, or it was
     armed with a refill and every new address is non-null and a multiple of its tensor's alignment: then, before
     the launch, each of the refill's attributes of its owner is set to None (the Python path's record of what the
     parameters hold), each write stores its tensor's new address + offset at its slot (a pointer parameter, or
     the address field of a TMA descriptor: its first 8 bytes), and the new addresses become the armed ones.

   Constructed with a lock (a Lock of this module, which the compiled object's Python paths take around their
   refills and launches), it holds that lock from the check that it is still armed (after the guard and the
   addresses were read) until its launches were enqueued: a refill by another thread cannot change the parameters
   between the check and the driver's copy of them. The plan's launches go to the driver's cuLaunchKernel one
   after the other, without the GIL; a failed one stops the rest and the result is on_error(code, index). An
   exception raised by the guard or by data_ptr() propagates. hits counts the calls launched here.

   The caller's contract: armed only with addresses whose parameters are filled in the plan's parameter arrays,
   disarmed before those arrays or the plan change, and armed with a refill only where those writes are all that
   new addresses change in them (the owner keeps the slots alive). */

#include "launcher.h"

#ifndef CUTE_PY_LAUNCH_KEY
#define CUTE_PY_LAUNCH_KEY ""
#endif

#define CUDA_ERROR_INVALID_CONTEXT 201

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
        cute_lock_release(lock);
        Py_DECREF(lock);
    }
}

/* the stream keyword of a call (args[n]) into *stream: 1 when it is one this launcher takes, else 0 */
static int
read_stream(PyObject *const *args, Py_ssize_t n, PyObject *kwnames, void **stream)
{
    PyObject *s;
    unsigned long long v;

    *stream = NULL;
    if (kwnames == NULL || !PyTuple_GET_SIZE(kwnames))
        return 1;
    if (PyTuple_GET_SIZE(kwnames) != 1 ||
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "stream") != 0)
        return 0;
    s = args[n];
    if (s == Py_None)
        return 1;
    if (!PyLong_CheckExact(s))
        return 0;
    v = PyLong_AsUnsignedLongLong(s);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *stream = (void *)(uintptr_t)v;
    return 1;
}

/* the tensors' data_ptr() into got[]: 1 when each is an address of 64 bits, 0 when one is not, -1 on an error */
static int
read_addresses(PyObject **tensors, Py_ssize_t n, unsigned long long *got)
{
    Py_ssize_t k;
    for (k = 0; k < n; k++) {
        PyObject *p = PyObject_CallMethodNoArgs(tensors[k], data_ptr_name);
        if (p == NULL)
            return -1;
        if (!PyLong_Check(p)) {
            PyErr_Format(PyExc_TypeError, "Launcher: data_ptr() returned %R, not an int", p);
            Py_DECREF(p);
            return -1;
        }
        got[k] = PyLong_AsUnsignedLongLong(p);
        Py_DECREF(p);
        if (got[k] == (unsigned long long)-1 && PyErr_Occurred()) { /* negative or past 64 bits: not launched */
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* the refill for the new addresses got[] (the lock held): 1 when done, 0 when it does not apply, -1 on an error */
static int
refill(Launcher *self, PyObject *guard, const unsigned long long *got)
{
    PyObject *owner = self->owner;
    Py_ssize_t k;

    if (owner == NULL)
        return 0;
    for (k = 0; k < self->ntensors; k++)
        if (got[k] == 0 || got[k] % self->aligns[k] != 0)
            return 0;
    Py_INCREF(owner);
    for (k = 0; k < self->nresets; k++)
        if (PyObject_SetAttr(owner, self->resets[k], Py_None) < 0) {
            Py_DECREF(owner);
            return -1;
        }
    Py_DECREF(owner);
    if (self->guard != guard || self->owner != owner) /* the attributes' owner may run code */
        return 0;
    for (k = 0; k < self->nwrites; k++)
        *self->writes[k].slot = (uint64_t)(got[self->writes[k].k] + self->writes[k].offset);
    memcpy(self->addresses, got, (size_t)self->ntensors * sizeof(got[0]));
    self->refills++;
    return 1;
}

static PyObject *
launcher_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Launcher *self = (Launcher *)obj;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), k, j, m;
    PyObject *tensors[MAX_TENSORS], *guard = self->guard, *r, *lock = NULL;
    unsigned long long got[MAX_TENSORS];
    Launch plan[MAX_LAUNCHES];
    void *stream;
    int ok, moved = 0, err = 0;

    if (guard == NULL || n < self->min_args || n > self->max_args || !read_stream(args, n, kwnames, &stream))
        return pass_on(self, args, nargsf, kwnames);
    for (k = 0; k < self->ntensors; k++)
        tensors[k] = args[self->positions[k]];
    Py_INCREF(guard); /* the guard may run Python code that disarms this launcher */
    r = PyObject_Vectorcall(guard, tensors, self->ntensors, NULL);
    if (r == NULL) {
        Py_DECREF(guard);
        return NULL;
    }
    ok = r == Py_True;
    Py_DECREF(r);
    if (ok) {
        ok = read_addresses(tensors, self->ntensors, got);
        if (ok < 0) {
            Py_DECREF(guard);
            return NULL;
        }
    }
    if (ok && self->lock != NULL) { /* lock: NULL unless taken here */
        lock = self->lock;
        Py_INCREF(lock);
        cute_lock_take(lock);
    }
    /* compared under the lock: another thread's refill may have changed the armed addresses meanwhile */
    for (k = 0; ok && k < self->ntensors; k++)
        moved |= got[k] != self->addresses[k];
    ok = ok && self->guard == guard; /* still armed as when the checks began */
    if (ok && moved) { /* new addresses: refilled here where the refill allows it */
        ok = refill(self, guard, got);
        if (ok < 0) {
            Py_DECREF(guard);
            unlock(lock);
            return NULL;
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
    /* no context current in this thread: the Python path makes the module's current and launches */
    if (err == CUDA_ERROR_INVALID_CONTEXT && j == 0)
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

/* -- attributes, garbage collection, the type and the module ----------------------------------------------- */

static PyObject *
get_armed(PyObject *obj, void *closure)
{
    return PyBool_FromLong(((Launcher *)obj)->guard != NULL);
}

static PyObject *
get_hits(PyObject *obj, void *closure)
{
    return PyLong_FromUnsignedLongLong(((Launcher *)obj)->hits);
}

static PyObject *
get_refills(PyObject *obj, void *closure)
{
    return PyLong_FromUnsignedLongLong(((Launcher *)obj)->refills);
}

static PyObject *
get_callable(PyObject **slot)
{
    PyObject *v = *slot ? *slot : Py_None;
    Py_INCREF(v);
    return v;
}

static int
set_callable(PyObject **slot, PyObject *v)
{
    if (v != NULL && v != Py_None && !PyCallable_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "Launcher: fallback and on_error must be callable or None");
        return -1;
    }
    Py_XINCREF(v == Py_None ? NULL : v);
    Py_XSETREF(*slot, v == Py_None ? NULL : v);
    return 0;
}

static PyObject *get_fallback(PyObject *o, void *c) { return get_callable(&((Launcher *)o)->fallback); }
static int set_fallback(PyObject *o, PyObject *v, void *c) { return set_callable(&((Launcher *)o)->fallback, v); }
static PyObject *get_on_error(PyObject *o, void *c) { return get_callable(&((Launcher *)o)->on_error); }
static int set_on_error(PyObject *o, PyObject *v, void *c) { return set_callable(&((Launcher *)o)->on_error, v); }

static int
launcher_traverse(PyObject *obj, visitproc visit, void *arg)
{
    Launcher *self = (Launcher *)obj;
    Py_VISIT(self->fallback);
    Py_VISIT(self->on_error);
    Py_VISIT(self->guard);
    Py_VISIT(self->owner);
    Py_VISIT(self->lock);
    return 0;
}

static int
launcher_clear(PyObject *obj)
{
    Launcher *self = (Launcher *)obj;
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->guard);
    Py_CLEAR(self->lock);
    cute_launcher_forget_refill(self);
    return 0;
}

static void
launcher_dealloc(PyObject *obj)
{
    PyObject_GC_UnTrack(obj);
    launcher_clear(obj);
    Py_TYPE(obj)->tp_free(obj);
}

static PyObject *
launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Launcher *self = (Launcher *)type->tp_alloc(type, 0);
    if (self != NULL)
        self->vectorcall = launcher_vectorcall;
    return (PyObject *)self;
}

static PyMethodDef launcher_methods[] = {
    {"arm", cute_launcher_arm, METH_VARARGS,
     "arm(guard, addresses, plan, refill=None): launch the plan for calls that pass"},
    {"disarm", cute_launcher_disarm, METH_NOARGS, "disarm(): pass every call to the fallback"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef launcher_getset[] = {
    {"armed", get_armed, NULL, "whether a plan is armed", NULL},
    {"hits", get_hits, NULL, "calls launched by the launcher itself", NULL},
    {"refills", get_refills, NULL, "of those, the calls it refilled for new addresses", NULL},
    {"fallback", get_fallback, set_fallback, "called with every call the armed plan does not take", NULL},
    {"on_error", get_on_error, set_on_error, "on_error(code, index) for a failed launch", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_cute_py_launch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_dealloc = launcher_dealloc,
    .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Launcher(launch, positions, max_args, lock=None): replays one armed launch plan",
    .tp_traverse = launcher_traverse,
    .tp_clear = launcher_clear,
    .tp_methods = launcher_methods,
    .tp_getset = launcher_getset,
    .tp_init = cute_launcher_init,
    .tp_new = launcher_new,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cute_py_launch", NULL, -1, NULL};

static int
add_type(PyObject *m, const char *name, PyTypeObject *type)
{
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC
PyInit__cute_py_launch(void)
{
    PyObject *m;
    if (PyType_Ready(&LauncherType) < 0 || PyType_Ready(&cute_LockType) < 0)
        return NULL;
    data_ptr_name = PyUnicode_InternFromString("data_ptr");
    if (data_ptr_name == NULL)
        return NULL;
    m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (add_type(m, "Launcher", &LauncherType) < 0 || add_type(m, "Lock", &cute_LockType) < 0 ||
        PyModule_AddStringConstant(m, "KEY", CUTE_PY_LAUNCH_KEY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
