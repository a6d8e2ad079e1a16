"""A stand-in for a CUDA array on a machine without a GPU (an object whose ``__dlpack__`` exports a DLTensor on
device type kDLCUDA at a made-up address, never dereferenced: the CPU tests only compile and bind), and a row-copy
kernel the CPU and GPU tests of dynamic shapes share."""

import ctypes

import cute_py as cute

from cute_py.tensor.dlpack import _DLDataType, _DLDevice, _DLTensor, _row_major


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_CODES = {"float16": (2, 16), "float32": (2, 32), "bfloat16": (4, 16), "int32": (0, 32)}
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeCudaArray:
    """``dtype`` ('float16'...), ``shape``, ``strides`` (elements; row-major by default), ``address``."""

    def __init__(self, dtype, shape, strides=None, address=1 << 32):
        if strides is None:
            strides = _row_major(shape)
        self.dtype, self.shape, self.strides, self.address = dtype, tuple(shape), tuple(strides), address
        n = len(shape)
        self._shape = (ctypes.c_int64 * n)(*shape)
        self._strides = (ctypes.c_int64 * n)(*strides)
        code, bits = _CODES[dtype]
        self._managed = _DLManaged(_DLTensor(address, _DLDevice(2, 0), n, _DLDataType(code, bits, 1),
                                             self._shape, self._strides, 0), None, None)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        return _new_capsule(ctypes.addressof(self._managed), b"dltensor", None)


@cute.kernel
def _rows(gA, gB):
    """Thread ``t`` of block ``b`` copies elements ``8t .. 8t+7`` of row ``b`` through registers."""
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    s = cute.local_tile(gA, (1, 8), (b, t))
    r = cute.make_fragment_like(s)
    atom = cute.make_copy_atom(cute.CopyUniversalOp(), gA.element_type)
    cute.copy(atom, s, r)
    cute.copy(atom, r, cute.local_tile(gB, (1, 8), (b, t)))


@cute.jit
def copy_rows(a, b):
    """The first 256 elements of every row of ``a`` into ``b`` (rows of a run-time count)."""
    _rows(a, b).launch(grid=(a.shape[0], 1, 1), block=32)
