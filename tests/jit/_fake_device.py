"""A stand-in for a CUDA array on a machine without a GPU: an object whose ``__dlpack__`` exports a DLTensor on
device type kDLCUDA at a made-up address (never dereferenced: the tests only compile and bind)."""

import ctypes


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


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
            strides, acc = [], 1
            for s in reversed(shape):
                strides.append(acc)
                acc *= s
            strides = tuple(reversed(strides))
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
