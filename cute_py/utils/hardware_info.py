"""``cute_py.utils.HardwareInfo``: what a persistent kernel sizes its grid by, asked of the CUDA driver — the
multiprocessor count, the L2 size, and how many clusters of a given size can be resident at once (the driver's
occupancy calculator on an empty kernel of 128 threads holding all the shared memory a block may take, as the CuTe
DSL's ``HardwareInfo`` asks it)."""

from __future__ import annotations

from typing import Any

from ..errors import CuteValueError

__all__ = ["HardwareInfo"]

_EMPTY: dict[str, Any] = {}  # the compiled empty kernel (once per process)


class HardwareInfo:
    """The device ``device_id``'s limits (``CuteValueError`` for a device that is not there; ``LaunchError``
    without a driver)."""

    def __init__(self, device_id: int = 0) -> None:
        from ..compiler.runtime.launch import check, driver, ensure_context

        d = driver()
        ensure_context()
        count = check(d.cuDeviceGetCount(), "cuDeviceGetCount")
        if type(device_id) is not int or not 0 <= device_id < count:
            raise CuteValueError(f"HardwareInfo: device {device_id!r} is not one of the {count} devices")
        self.device_id = device_id
        self.device = check(d.cuDeviceGet(device_id), f"cuDeviceGet({device_id})")

    def _attribute(self, name: str) -> int:
        from ..compiler.runtime.launch import check, driver

        d = driver()
        return int(check(d.cuDeviceGetAttribute(getattr(d.CUdevice_attribute, name), self.device),
                         f"cuDeviceGetAttribute({name})"))

    def get_device_multiprocessor_count(self) -> int:
        """The number of streaming multiprocessors."""
        return self._attribute("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")

    def get_l2_cache_size_in_bytes(self) -> int:
        """The L2 cache size in bytes."""
        return self._attribute("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE")

    def get_max_active_clusters(self, cluster_size: int, stream: Any = None) -> int:
        """How many clusters of ``cluster_size`` CTAs (1 to 32; above 16 needs non-portable sizes) of a block
        that takes all the shared memory a block may use can be resident at once: the grid of a persistent
        kernel. ``stream``: the stream whose context (a green context's SM partition) counts."""
        from ..compiler.runtime.launch import check, driver

        if type(cluster_size) is not int or not 1 <= cluster_size <= 32:
            raise CuteValueError(f"get_max_active_clusters: cluster_size must be an int in [1, 32], got "
                                 f"{cluster_size!r}")
        d = driver()
        f = _empty_function()
        smem = self._attribute("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        fa = d.CUfunction_attribute
        check(d.cuFuncSetAttribute(f, fa.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
              "cuFuncSetAttribute(max dynamic shared memory)")
        dyn = int(check(d.cuOccupancyAvailableDynamicSMemPerBlock(f, 1, 1), "cuOccupancyAvailableDynamicSMemPerBlock"))
        blocks = int(check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(f, 1, dyn),
                           "cuOccupancyMaxActiveBlocksPerMultiprocessor"))
        check(d.cuFuncSetAttribute(f, fa.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
              "cuFuncSetAttribute(non-portable cluster size)")
        cfg = d.CUlaunchConfig()
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = 128, 1, 1
        cfg.sharedMemBytes = dyn
        if stream is not None:
            from ..compiler.specs.annotations import stream_handle

            h = stream_handle(stream)
            cfg.hStream = h if not isinstance(h, int) else d.CUstream(h)
        attr = d.CUlaunchAttribute()
        attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        value = d.CUlaunchAttributeValue()
        value.clusterDim.x, value.clusterDim.y, value.clusterDim.z = cluster_size, 1, 1
        attr.value = value
        cfg.numAttrs, cfg.attrs = 1, [attr]
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = cluster_size, max(blocks, 1), 1
        return int(check(d.cuOccupancyMaxActiveClusters(f, cfg), "cuOccupancyMaxActiveClusters"))


def _empty_function() -> Any:
    """The ``CUfunction`` of an empty kernel, compiled by cute_py and loaded once."""
    f = _EMPTY.get("f")
    if f is None:
        from .. import compiler

        @compiler.kernel
        def hardware_info_empty() -> None:
            pass

        @compiler.jit
        def launch_empty() -> None:
            hardware_info_empty().launch(grid=1, block=128)

        from ..compiler.runtime.launch import load_module

        c = compiler.compile(launch_empty)
        _, funcs = load_module(c.cubin, c.smem)
        f = _EMPTY["f"] = next(iter(funcs.values()))
    return f
