"""A stand-in driver whose ``cuLaunchKernel`` records what each launch would give the kernel: the bytes of every
parameter as they are when the driver reads them (after it yielded the interpreter, as cuda-python's binding
releases the GIL around the call), and a ``_descriptor`` that encodes a TMA descriptor as its address repeated,
so that a recorded parameter block names the addresses it was filled for. Shared by the CPU tests of the call
path (``test_call_state``, ``test_call_args``, ``test_call_threads``)."""

import threading
import time
import types

import pytest

from cute_py.compiler.runtime import launch as L
from cute_py.compiler.runtime.compiled import Compiled


class _Result:
    CUDA_SUCCESS = 0


class RecordingDriver:
    CUresult = _Result
    CUstream = int

    def __init__(self):
        self.calls, self.blocks, self.yield_first = [], {}, False
        self.local = threading.local()
        # with contexts_per_thread, a thread other than the first has no current context until it sets one, and
        # its launches fail with CUDA_ERROR_INVALID_CONTEXT (201) as the driver's do
        self.contexts_per_thread, self.main = False, threading.get_ident()
        self.context_sets = 0

    def cuCtxGetCurrent(self):
        default = 7 if threading.get_ident() == self.main or not self.contexts_per_thread else 0
        return (0, getattr(self.local, "ctx", default))

    def cuCtxSetCurrent(self, ctx):
        self.local.ctx = ctx
        self.context_sets += 1
        return (0,)

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        if not self.cuCtxGetCurrent()[1]:
            return (201,)
        if self.yield_first:
            time.sleep(0)  # another thread may run here, as during the real binding's call
        block = self.blocks.get(params)
        values = None if block is None else tuple(bytes(s) for s in block.slots)
        self.calls.append({"func": func, "grid": (gx, gy, gz), "stream": stream, "params": values,
                           "cluster": (1, 1, 1), "smem": smem, "block": (bx, by, bz),
                           "expect": getattr(self.local, "expect", None)})
        return (0,)

    # cluster and cooperative launches: the config the launch path fills, recorded as cuLaunchKernel's are
    class CUlaunchConfig:
        pass

    class CUlaunchAttribute:
        def __init__(self):
            self.value = types.SimpleNamespace(clusterDim=types.SimpleNamespace())

    CUlaunchAttributeID = types.SimpleNamespace(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION=4,
                                                CU_LAUNCH_ATTRIBUTE_COOPERATIVE=2)

    def cuLaunchKernelEx(self, cfg, func, params, extra):
        block = self.blocks.get(params)
        values = None if block is None else tuple(bytes(s) for s in block.slots)
        cluster = next(((a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z) for a in cfg.attrs
                        if a.id == 4), (1, 1, 1))
        self.calls.append({"func": func, "grid": (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ), "stream": cfg.hStream,
                           "params": values, "cluster": cluster, "smem": cfg.sharedMemBytes,
                           "block": (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ),
                           "expect": getattr(self.local, "expect", None)})
        return (0,)

    def cuGetErrorName(self, err):
        return (0, b"CUDA_ERROR_INVALID_VALUE")


def fake_encode(self, desc, address, env=None):
    """A descriptor's 128 bytes: its address, 16 times (``OverflowError`` past 64 bits, as the driver's)."""
    return address.to_bytes(8, "little") * 16


@pytest.fixture
def driver(monkeypatch):
    d = RecordingDriver()
    monkeypatch.setitem(L._STATE, "driver", d)
    def load_module(cubin, kernels, *rest):
        if not d.cuCtxGetCurrent()[1]:  # as the driver's loader: the device's primary context made current first
            d.cuCtxSetCurrent(7)
        return None, {n: f"F:{n}" for n in kernels}

    monkeypatch.setattr(L, "load_module", load_module)
    monkeypatch.setattr(Compiled, "_descriptor", fake_encode)
    made = L.ParamBlock.__init__

    def registered(block, kinds):
        made(block, kinds)
        d.blocks[block.address] = block

    monkeypatch.setattr(L.ParamBlock, "__init__", registered)
    return d


def fresh(c):
    """A new ``Compiled`` of the same kernels as ``c`` (nothing filled, nothing recorded)."""
    return Compiled(c.jit_function, c.launches, c.smem, c.sources, c.cubin, c._ptx, c._mlir, c.key,
                    build=c._build, cooperative=c.cooperative, arch=c.arch)


def launched_with(d, c, *args, **kwargs):
    """The recorded launches of ``c(*args, **kwargs)`` (``c`` watched by ``d``)."""
    n = len(d.calls)
    c(*args, **kwargs)
    return d.calls[n:]
