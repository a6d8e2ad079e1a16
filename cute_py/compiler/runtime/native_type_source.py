"""The C source of the native launcher's construction, arming and type (part of ``native_source``'s extension,
after its call): ``Launcher(launch, positions, max_args, lock=None)``, ``arm``/``disarm``, the attributes
(``armed``, ``hits``, ``refills``, ``fallback``, ``on_error``), garbage collection, and the module (``Launcher``,
``Lock``, ``KEY``: the key of the build, compiled in)."""

__all__ = ["TYPE_SOURCE"]

TYPE_SOURCE = r"""
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

static int
launcher_init(PyObject *obj, PyObject *args, PyObject *kwds)
{
    Launcher *self = (Launcher *)obj;
    static char *names[] = {"launch", "positions", "max_args", "lock", NULL};
    PyObject *launch, *positions, *lock = Py_None;
    Py_ssize_t max_args, k, n;
    unsigned long long address;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!n|O", names, &launch, &PyTuple_Type, &positions, &max_args,
                                     &lock))
        return -1;
    if (lock != Py_None && !PyObject_TypeCheck(lock, &LockType)) {
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

static PyObject *
launcher_arm(PyObject *obj, PyObject *args)
{
    Launcher *self = (Launcher *)obj;
    PyObject *guard, *addresses, *plan;
    unsigned long long got[MAX_TENSORS];
    Launch launches[MAX_LAUNCHES];
    Py_ssize_t k, j, m;

    PyObject *refill = Py_None, *owner = NULL, *resets = NULL, *aligns = NULL, *writes = NULL;
    unsigned long long align[MAX_TENSORS];
    Write wr[MAX_WRITES];
    Py_ssize_t nw = 0, nr = 0;

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
    m = PyTuple_GET_SIZE(plan);
    if (m < 1 || m > MAX_LAUNCHES) {
        PyErr_Format(PyExc_ValueError, "Launcher.arm: 1 to %d launches, got %zd", MAX_LAUNCHES, m);
        return NULL;
    }
    for (j = 0; j < m; j++) {
        PyObject *e = PyTuple_GET_ITEM(plan, j);
        unsigned long long a;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 9) {
            PyErr_SetString(PyExc_ValueError,
                            "Launcher.arm: a launch is (function, grid x, y, z, block x, y, z, smem, parameters)");
            return NULL;
        }
        if (as_address(PyTuple_GET_ITEM(e, 0), &a) < 0)
            return NULL;
        launches[j].func = (void *)(uintptr_t)a;
        for (k = 0; k < 7; k++)
            if (as_unsigned(PyTuple_GET_ITEM(e, k + 1), &launches[j].dims[k]) < 0)
                return NULL;
        if (as_address(PyTuple_GET_ITEM(e, 8), &a) < 0)
            return NULL;
        launches[j].params = (void **)(uintptr_t)a;
    }
    if (refill != Py_None) {
        if (!PyTuple_Check(refill)) {
            PyErr_SetString(PyExc_TypeError, "Launcher.arm: a refill is a tuple (owner, resets, alignments, writes)");
            return NULL;
        }
        if (!PyArg_ParseTuple(refill, "OO!O!O!;Launcher.arm: a refill is (owner, resets, alignments, writes)", &owner,
                              &PyTuple_Type, &resets, &PyTuple_Type, &aligns, &PyTuple_Type, &writes))
            return NULL;
        nr = PyTuple_GET_SIZE(resets);
        nw = PyTuple_GET_SIZE(writes);
        if (nr > MAX_RESETS || nw > MAX_WRITES || PyTuple_GET_SIZE(aligns) != self->ntensors) {
            PyErr_Format(PyExc_ValueError, "Launcher.arm: up to %d resets and %d writes, and one alignment per "
                         "tensor, got %zd, %zd and %zd", MAX_RESETS, MAX_WRITES, nr, nw, PyTuple_GET_SIZE(aligns));
            return NULL;
        }
        for (k = 0; k < nr; k++)
            if (!PyUnicode_Check(PyTuple_GET_ITEM(resets, k))) {
                PyErr_SetString(PyExc_TypeError, "Launcher.arm: the resets are attribute names");
                return NULL;
            }
        for (k = 0; k < self->ntensors; k++) {
            if (as_address(PyTuple_GET_ITEM(aligns, k), &align[k]) < 0)
                return NULL;
            if (align[k] == 0) {
                PyErr_SetString(PyExc_ValueError, "Launcher.arm: an alignment is 0");
                return NULL;
            }
        }
        for (j = 0; j < nw; j++) {
            PyObject *e = PyTuple_GET_ITEM(writes, j);
            unsigned long long a, t;
            if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 3) {
                PyErr_SetString(PyExc_ValueError, "Launcher.arm: a write is (slot address, tensor, offset)");
                return NULL;
            }
            if (as_address(PyTuple_GET_ITEM(e, 0), &a) < 0 || as_address(PyTuple_GET_ITEM(e, 1), &t) < 0 ||
                as_address(PyTuple_GET_ITEM(e, 2), &wr[j].offset) < 0)
                return NULL;
            if (a == 0 || a % 8 || t >= (unsigned long long)self->ntensors) {
                PyErr_Format(PyExc_ValueError, "Launcher.arm: write %zd: a slot must be 8-byte aligned and not 0, "
                             "the tensor one of %zd", j, self->ntensors);
                return NULL;
            }
            wr[j].slot = (uint64_t *)(uintptr_t)a;
            wr[j].k = (Py_ssize_t)t;
        }
    }
    for (k = 0; k < self->nresets; k++)
        Py_CLEAR(self->resets[k]);
    Py_CLEAR(self->owner);
    self->nresets = self->nwrites = 0;
    if (owner != NULL) {
        for (k = 0; k < nr; k++) {
            self->resets[k] = PyTuple_GET_ITEM(resets, k);
            Py_INCREF(self->resets[k]);
        }
        self->nresets = nr;
        memcpy(self->aligns, align, (size_t)self->ntensors * sizeof(align[0]));
        memcpy(self->writes, wr, (size_t)nw * sizeof(Write));
        self->nwrites = nw;
        Py_INCREF(owner);
        self->owner = owner;
    }
    memcpy(self->addresses, got, sizeof(got));
    memcpy(self->launches, launches, (size_t)m * sizeof(Launch));
    self->nlaunches = m;
    Py_INCREF(guard);
    self->guard = guard;
    Py_RETURN_NONE;
}

static PyObject *
launcher_disarm(PyObject *obj, PyObject *unused)
{
    Launcher *self = (Launcher *)obj;
    Py_ssize_t k;
    Py_CLEAR(self->guard);
    Py_CLEAR(self->owner);
    for (k = 0; k < self->nresets; k++)
        Py_CLEAR(self->resets[k]);
    self->nresets = self->nwrites = 0;
    Py_RETURN_NONE;
}

static PyObject *
launcher_get_armed(PyObject *obj, void *closure)
{
    return PyBool_FromLong(((Launcher *)obj)->guard != NULL);
}

static PyObject *
launcher_get_hits(PyObject *obj, void *closure)
{
    return PyLong_FromUnsignedLongLong(((Launcher *)obj)->hits);
}

static PyObject *
launcher_get_refills(PyObject *obj, void *closure)
{
    return PyLong_FromUnsignedLongLong(((Launcher *)obj)->refills);
}

static PyObject *
launcher_get_object(PyObject **slot)
{
    PyObject *v = *slot ? *slot : Py_None;
    Py_INCREF(v);
    return v;
}

static int
launcher_set_object(PyObject **slot, PyObject *v)
{
    if (v != NULL && v != Py_None && !PyCallable_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "Launcher: fallback and on_error must be callable or None");
        return -1;
    }
    Py_XINCREF(v == Py_None ? NULL : v);
    Py_XSETREF(*slot, v == Py_None ? NULL : v);
    return 0;
}

static PyObject *get_fallback(PyObject *o, void *c) { return launcher_get_object(&((Launcher *)o)->fallback); }
static int set_fallback(PyObject *o, PyObject *v, void *c) { return launcher_set_object(&((Launcher *)o)->fallback, v); }
static PyObject *get_on_error(PyObject *o, void *c) { return launcher_get_object(&((Launcher *)o)->on_error); }
static int set_on_error(PyObject *o, PyObject *v, void *c) { return launcher_set_object(&((Launcher *)o)->on_error, v); }

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
    Py_ssize_t k;
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->guard);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->lock);
    for (k = 0; k < self->nresets; k++)
        Py_CLEAR(self->resets[k]);
    self->nresets = self->nwrites = 0;
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
    {"arm", launcher_arm, METH_VARARGS,
     "arm(guard, addresses, plan, refill=None): launch the plan for calls that pass"},
    {"disarm", launcher_disarm, METH_NOARGS, "disarm(): pass every call to the fallback"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef launcher_getset[] = {
    {"armed", launcher_get_armed, NULL, "whether a plan is armed", NULL},
    {"hits", launcher_get_hits, NULL, "calls launched by the launcher itself", NULL},
    {"refills", launcher_get_refills, NULL, "of those, the calls it refilled for new addresses", NULL},
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
    .tp_init = launcher_init,
    .tp_new = launcher_new,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cute_py_launch", NULL, -1, NULL};

PyMODINIT_FUNC
PyInit__cute_py_launch(void)
{
    PyObject *m;
    if (PyType_Ready(&LauncherType) < 0 || PyType_Ready(&LockType) < 0)
        return NULL;
    data_ptr_name = PyUnicode_InternFromString("data_ptr");
    if (data_ptr_name == NULL)
        return NULL;
    m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
        Py_DECREF(&LauncherType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&LockType);
    if (PyModule_AddObject(m, "Lock", (PyObject *)&LockType) < 0) {
        Py_DECREF(&LockType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "KEY", CUTE_PY_LAUNCH_KEY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
"""
