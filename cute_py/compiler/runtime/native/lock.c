/* Lock: a mutex for the launches of one compiled object, taken by its Python paths (with lock: ...) around their
   refills, launches and arming and, in C, by its launcher (from its check that it is still armed to the end of
   its launches). Waiting for it releases the GIL; it is not reentrant. */

#include "launcher.h"

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
} Lock;

void
cute_lock_take(PyObject *obj)
{
    Lock *self = (Lock *)obj;
    if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK))
        return;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
}

void
cute_lock_release(PyObject *obj)
{
    PyThread_release_lock(((Lock *)obj)->lock);
}

static PyObject *
lock_enter(PyObject *obj, PyObject *unused)
{
    cute_lock_take(obj);
    Py_INCREF(obj);
    return obj;
}

static PyObject *
lock_exit(PyObject *obj, PyObject *args)
{
    cute_lock_release(obj);
    Py_RETURN_FALSE;
}

static PyObject *
lock_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Lock *self;
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return NULL;
    }
    self = (Lock *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "Lock: no lock could be allocated");
        return NULL;
    }
    return (PyObject *)self;
}

static void
lock_dealloc(PyObject *obj)
{
    Lock *self = (Lock *)obj;
    if (self->lock != NULL)
        PyThread_free_lock(self->lock);
    Py_TYPE(obj)->tp_free(obj);
}

static PyMethodDef lock_methods[] = {
    {"__enter__", lock_enter, METH_NOARGS, "take the lock (waiting without the GIL)"},
    {"__exit__", lock_exit, METH_VARARGS, "release the lock"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject cute_LockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_cute_py_launch.Lock",
    .tp_basicsize = sizeof(Lock),
    .tp_dealloc = lock_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lock(): the lock of one compiled object's launches (with lock: ...)",
    .tp_methods = lock_methods,
    .tp_new = lock_new,
};
