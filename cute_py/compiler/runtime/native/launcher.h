/* The native launcher's shared declarations (the extension _cute_py_launch: lock.c, arm.c, launcher.c).

   Nothing here depends on a kernel: what a compiled object launches (its tensors' positions, the plan of its
   launches, the parameter slots a refill rewrites) is data that arm() and the constructor take from Python. */

#ifndef CUTE_PY_LAUNCHER_H
#define CUTE_PY_LAUNCHER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL _Py_TPFLAGS_HAVE_VECTORCALL
#endif

/* the limits of one launcher (native/__init__.py states the same: a compile beyond them keeps the Python path) */
#define MAX_TENSORS 16
#define MAX_LAUNCHES 8
#define MAX_WRITES 32
#define MAX_RESETS 8

/* the driver's cuLaunchKernel */
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);

/* one launch of the plan */
typedef struct {
    void *func;
    unsigned dims[7]; /* grid x, y, z, block x, y, z, dynamic shared memory bytes */
    void **params;
} Launch;

/* one write of a refill: the 64-bit address[k] + offset stored at slot */
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

/* lock.c: the Lock type (one mutex per compiled object; waiting for it releases the GIL; not reentrant) */
extern PyTypeObject cute_LockType;
void cute_lock_take(PyObject *lock);
void cute_lock_release(PyObject *lock);

/* arm.c: construction, arming and disarming (every value checked before anything is kept) */
int cute_launcher_init(PyObject *obj, PyObject *args, PyObject *kwds);
PyObject *cute_launcher_arm(PyObject *obj, PyObject *args);
PyObject *cute_launcher_disarm(PyObject *obj, PyObject *unused);
void cute_launcher_forget_refill(Launcher *self);

#endif
