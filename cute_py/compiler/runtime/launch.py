"""Loading cubins and launching kernels through cuda-python's driver API.

Kernels with a cluster, or that sync their grid (cooperative), go through ``cuLaunchKernelEx`` (cluster
dimension and cooperative attributes); the others through ``cuLaunchKernel``. Before a cooperative launch its
grid is checked against the blocks that can be resident at once (occupancy x SMs): more is a ``LaunchError``
naming both, instead of the driver's refusal. A kernel using more than 48 KB of dynamic shared memory
gets ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` raised once, when it is loaded, and
one launched with a non-portable cluster (9 to 16 CTAs, ``launch(non_portable_cluster=True)``)
gets ``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED``.
Parameters are a ``void*[]`` of pointers to each parameter's bytes (a TMA descriptor's
128 bytes are copied by value, as a ``__grid_constant__`` parameter).
"""

from __future__ import annotations

import ctypes
from collections.abc import Container, Sequence
from types import ModuleType
from typing import Any

from ...errors import LaunchError

__all__ = ["driver", "check", "ensure_context", "sm_count", "load_module", "launch", "launch_config", "resident_blocks",
           "ParamBlock", "check_target"]

_STATE = {"driver": None, "ctx": None}


def driver() -> ModuleType:
    """cuda-python's driver module (``LaunchError`` without cuda-python)."""
    d = _STATE["driver"]
    if d is None:
        try:
            from cuda.bindings import driver as d
        except ImportError as e:
            raise LaunchError(f"launching a kernel needs cuda-python (pip install cuda-python): {e}") from None
        _STATE["driver"] = d
    return d


def check(result: tuple[Any, ...] | Any, what: str) -> Any:
    """The value(s) of a driver call's result tuple; ``LaunchError`` naming ``what`` on failure."""
    d = driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != d.CUresult.CUDA_SUCCESS:
        name = d.cuGetErrorName(err)[1]
        raise LaunchError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def ensure_context() -> Any:
    """A current CUDA context: the calling thread's, or device 0's primary context made current."""
    d = driver()
    try:
        result = d.cuInit(0)
    except RuntimeError as e:  # cuda-python finds no driver library (DynamicLibNotFoundError)
        raise LaunchError(f"cuInit failed: no NVIDIA driver library could be loaded ({e})") from None
    check(result, "cuInit")
    ctx = check(d.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is None or int(ctx) == 0:
        dev = check(d.cuDeviceGet(0), "cuDeviceGet")
        ctx = check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def sm_count() -> int:
    """The multiprocessor count of the current context's device (``LaunchError`` without a driver or device)."""
    d = driver()
    ensure_context()
    dev = check(d.cuCtxGetDevice(), "cuCtxGetDevice")
    attr = d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    return int(check(d.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute"))


def load_module(cubin: bytes, kernels: dict[str, int],
                non_portable: Container[str] = ()) -> tuple[Any, dict[str, Any]]:
    """Load ``cubin`` in the current context; ``{name: CUfunction}`` for ``kernels`` ({name: smem bytes});
    the kernels named in ``non_portable`` may be launched with clusters of up to 16 CTAs."""
    d = driver()
    ensure_context()
    module = check(d.cuModuleLoadData(cubin), "cuModuleLoadData")
    funcs = {}
    for name, smem in kernels.items():
        f = check(d.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")
        if smem > 48 * 1024:
            attr = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(d.cuFuncSetAttribute(f, attr, smem), f"cuFuncSetAttribute(max dynamic smem = {smem})")
        if name in non_portable:
            attr = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
            check(d.cuFuncSetAttribute(f, attr, 1), f"cuFuncSetAttribute({name}: non-portable cluster size allowed)")
        funcs[name] = f
    return module, funcs


class ParamBlock:
    """The ``void*[]`` of a kernel's parameters and the storage each entry points to."""

    _CTYPES = {"ptr": ctypes.c_uint64, "Int32": ctypes.c_int32, "Int64": ctypes.c_int64, "Float32": ctypes.c_float}

    def __init__(self, kinds: Sequence[str]) -> None:
        self.slots = []
        for kind in kinds:
            self.slots.append((ctypes.c_char * 128)() if kind == "desc" else self._CTYPES[kind]())
        self.array = (ctypes.c_void_p * max(1, len(kinds)))(*[ctypes.addressof(s) for s in self.slots])
        self.address = ctypes.addressof(self.array)

    def set(self, i: int, value: bytes | bytearray | int | float) -> None:
        slot = self.slots[i]
        if isinstance(value, (bytes, bytearray)):
            ctypes.memmove(slot, value, 128)
        else:
            slot.value = value


def check_target(arch: str, what: str) -> None:
    """``LaunchError`` unless the current device runs cubins for ``arch`` (sm_90a: compute capability 9.0,
    sm_100a: 10.0)."""
    from ..specs.options import GPU_ARCHS

    d = driver()
    ensure_context()
    dev = check(d.cuCtxGetDevice(), "cuCtxGetDevice")
    attrs = d.CUdevice_attribute
    cc = tuple(int(check(d.cuDeviceGetAttribute(a, dev), "cuDeviceGetAttribute"))
               for a in (attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                         attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
    need = GPU_ARCHS[arch][1]
    if cc != need:
        raise LaunchError(f"{what} was compiled for {arch} (compute capability {need[0]}.{need[1]}); this device "
                          f"has compute capability {cc[0]}.{cc[1]}: compile it with --gpu-arch "
                          f"{next((a for a, (_, c) in GPU_ARCHS.items() if c == cc), 'for this device')}")


_RESIDENT: dict[tuple[Any, int, int], int] = {}  # (function, threads, smem) -> blocks resident at once


def resident_blocks(func: Any, threads: int, smem: int) -> int:
    """How many blocks of ``threads`` threads and ``smem`` bytes of dynamic shared memory of ``func`` the device
    holds at once (``cuOccupancyMaxActiveBlocksPerMultiprocessor`` x SMs)."""
    key = (int(func), threads, smem)
    n = _RESIDENT.get(key)
    if n is None:
        d = driver()
        per_sm = check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, threads, smem),
                       "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        n = _RESIDENT[key] = int(per_sm) * sm_count()
    return n


def launch_config(grid: tuple[int, int, int], block: tuple[int, int, int], cluster: tuple[int, int, int], smem: int,
                  cooperative: bool = False) -> Any:
    """The driver's ``CUlaunchConfig`` of a ``cuLaunchKernelEx`` launch, its stream not set (``hStream``): the
    cluster dimension unless ``cluster`` is (1, 1, 1), the cooperative attribute with ``cooperative``."""
    d = driver()
    cfg = d.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = smem
    attrs = []
    if cluster != (1, 1, 1):
        attr = d.CUlaunchAttribute()
        attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        attrs.append(attr)
    if cooperative:
        attr = d.CUlaunchAttribute()
        attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attr.value.cooperative = 1
        attrs.append(attr)
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    return cfg


def launch(func: Any, grid: tuple[int, int, int], block: tuple[int, int, int], cluster: tuple[int, int, int],
           smem: int, stream: int | Any, params: ParamBlock | Any, cooperative: bool = False) -> None:
    """Launch ``func`` with a ``ParamBlock``; ``cuLaunchKernelEx`` when ``cluster`` is not (1, 1, 1) or the launch
    is ``cooperative`` (its grid checked against the resident blocks first)."""
    d = driver()
    if cooperative:
        blocks, threads = grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2]
        most = resident_blocks(func, threads, smem)
        if blocks > most:
            raise LaunchError(f"a kernel that syncs its grid needs every block resident at once: grid={grid} is "
                              f"{blocks} blocks, and at most {most} blocks of {threads} threads and {smem} bytes of "
                              f"shared memory fit on this device")
    if cluster == (1, 1, 1) and not cooperative:
        err, = d.cuLaunchKernel(func, *grid, *block, smem, stream, params.address, 0)
    else:
        cfg = launch_config(grid, block, cluster, smem, cooperative)
        cfg.hStream = stream
        err, = d.cuLaunchKernelEx(cfg, func, params.address, 0)
    if err != d.CUresult.CUDA_SUCCESS:
        check((err,), f"launching grid={grid} block={block} cluster={cluster} smem={smem}")
