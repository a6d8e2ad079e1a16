"""Kernel builtins under the names of TileLang's ``language.builtin`` surface: aliases of the CuTe-named builtins
where one exists, and the behaviours only that surface names (logical warp sizes, ``loop_break``, the register
plan of warp-specialised kernels).

=================================================  ===========================================================
name                                               meaning
=================================================  ===========================================================
``get_lane_idx(warp_size=None)``                   the linear thread index modulo ``warp_size`` (default 32:
                                                   ``%laneid``)
``get_warp_idx(warp_size=None)``                   the linear thread index over ``warp_size``
``get_warp_idx_sync(warp_size=None)``              the same, broadcast from lane 0 (warp-uniform; every lane
                                                   of the warp executes it)
``get_warp_group_idx(ws=None, warps_per_group=None)``  the linear thread index over ``ws * warps_per_group``
                                                   (default 32 x 4), broadcast from lane 0
``shfl_xor / shfl_down / shfl_up(value, offset)``  ``shuffle_sync_bfly / _down / _up`` over the full warp
``shfl_sync(mask, value, srcLane, width=None)``    ``shuffle_sync(value, srcLane, mask, width=width)``
``mbarrier_wait_parity(mbar, parity)``             ``mbarrier_wait(mbar, parity)``; ``barrier_wait`` is the same
``ptx_arrive_cluster_barrier(mbar, cta_id)``       ``mbarrier_arrive(mbar, cta_id)`` (the peer CTA's mbarrier)
``cp_async_barrier_noinc(mbar)``                   ``cp_async_mbarrier_arrive_noinc(mbar)``
``fence_proxy_async()``                            ``fence_proxy("async.shared", space="cta")``
``set_max_nreg(n, is_inc)``, ``inc_max_nreg(n)``,  ``setmaxnreg.inc`` / ``.dec`` (``setmaxregister_increase`` /
``dec_max_nreg(n)``                                ``_decrease``)
``annotate_producer_reg_dealloc(n=24)``,           the kernel's register plan: the counts that
``annotate_consumer_reg_alloc(n=240)``             ``warpgroup_reg_dealloc()`` / ``warpgroup_reg_alloc()``
                                                   without a count use (these defaults otherwise)
``no_set_max_nreg()``,                             turn the plan off: those calls then emit nothing, so the
``disable_warp_group_reg_alloc()``                 kernel keeps one register budget for every warp group
``loop_break()``                                   as a statement in a loop of the kernel: ``break``
=================================================  ===========================================================

The linear thread index is ``x + y * bx + z * bx * by`` for the launch's (static) block extent, as
``warp_idx()`` computes it.
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...nvgpu.forms import tma_load  # (tma_desc, mbar, smem_ptr, crd): one TMA load, as the builtin issues it
from ..lang.builder import current
from .arch import WARP_SIZE, lane_idx, thread_idx, warp_idx
from .arch_mbar import cp_async_mbarrier_arrive_noinc, mbarrier_arrive, mbarrier_wait
from ..emit.operands import static_int
from .arch_sync import (fence_proxy, reg_count_value, register_plan, setmaxregister_decrease,
                        setmaxregister_increase)
from .arch_warp import shuffle_sync, shuffle_sync_bfly, shuffle_sync_down, shuffle_sync_up

__all__ = ["get_lane_idx", "get_warp_idx", "get_warp_idx_sync", "get_warp_group_idx", "shfl_xor", "shfl_down",
           "shfl_up", "shfl_sync", "mbarrier_wait_parity", "barrier_wait", "ptx_arrive_cluster_barrier",
           "cp_async_barrier_noinc", "fence_proxy_async", "set_max_nreg", "inc_max_nreg", "dec_max_nreg",
           "annotate_producer_reg_dealloc", "annotate_consumer_reg_alloc", "no_set_max_nreg",
           "disable_warp_group_reg_alloc", "loop_break", "access_ptr", "create_tma_descriptor", "tma_load"]

WARPS_PER_GROUP = 4


# -- indices under a logical warp size -------------------------------------------------------------


def _size(value, name, what, default):
    if value is None:
        return default
    n = static_int(value, f"{name}: {what}", "a positive int")
    if n < 1:
        raise TraceError(f"{name}: {what} must be a positive int, got {n}")
    return n


def _linear():
    """The thread's linear index in its block (static block extents from the launch)."""
    b = current()
    tx, ty, tz = thread_idx()
    if b.launch is None:
        from .arch import block_dim

        nx, ny, _ = block_dim()
        return tx + ty * nx + tz * (nx * ny)
    bx, by, bz = b.launch.block
    linear = tx
    if by > 1:
        linear = linear + ty * bx
    if bz > 1:
        linear = linear + tz * (bx * by)
    return linear


def get_lane_idx(warp_size: int | None = None) -> Any:
    """This thread's lane in its logical warp of ``warp_size`` threads (default 32: ``%laneid``)."""
    ws = _size(warp_size, "get_lane_idx", "warp_size", WARP_SIZE)
    return lane_idx() if ws == WARP_SIZE else _linear() % ws


def get_warp_idx(warp_size: int | None = None) -> Any:
    """The index of this thread's logical warp of ``warp_size`` threads (default 32) in the block."""
    ws = _size(warp_size, "get_warp_idx", "warp_size", WARP_SIZE)
    return warp_idx() if ws == WARP_SIZE else _linear() // ws


def _uniform(value):
    """``value`` as lane 0 of the warp has it (``shfl.sync.idx`` from lane 0): warp-uniform for the compiler."""
    return shuffle_sync(value, 0)


def get_warp_idx_sync(warp_size: int | None = None) -> Any:
    """:func:`get_warp_idx`, broadcast from lane 0 of the warp (every lane of the warp must execute it)."""
    return _uniform(get_warp_idx(warp_size))


def get_warp_group_idx(warp_size: int | None = None, warps_per_group: int | None = None) -> Any:
    """The index of this thread's group of ``warps_per_group`` (default 4) logical warps of ``warp_size``
    (default 32) threads, broadcast from lane 0 of the warp."""
    ws = _size(warp_size, "get_warp_group_idx", "warp_size", WARP_SIZE)
    wpg = _size(warps_per_group, "get_warp_group_idx", "warps_per_group", WARPS_PER_GROUP)
    return _uniform(_linear() // (ws * wpg))


# -- shuffles -------------------------------------------------------------------------------------------


def shfl_xor(value: Any, offset: Any) -> Any:
    """``value`` of lane ``lane ^ offset`` (``shfl.sync.bfly`` over the full warp)."""
    return shuffle_sync_bfly(value, offset)


def shfl_down(value: Any, offset: Any) -> Any:
    """``value`` of lane ``lane + offset``; lanes whose source lies past the warp keep their own."""
    return shuffle_sync_down(value, offset)


def shfl_up(value: Any, offset: Any) -> Any:
    """``value`` of lane ``lane - offset``; lanes whose source lies before the warp keep their own."""
    return shuffle_sync_up(value, offset)


def shfl_sync(mask: Any, value: Any, srcLane: Any, width: int | None = None) -> Any:  # noqa: N803 - its name
    """``value`` of lane ``srcLane`` of this lane's segment of ``width`` lanes (default: the warp), among the
    lanes of ``mask``."""
    return shuffle_sync(value, srcLane, mask, width=width)


# -- mbarriers, fences ------------------------------------------------------------------------------


def mbarrier_wait_parity(mbarrier: Any, parity: Any) -> None:
    """Wait until the phase of parity ``parity`` (0 or 1) of ``mbarrier`` completed (``mbarrier_wait``)."""
    mbarrier_wait(mbarrier, parity)


def barrier_wait(mbarrier: Any, parity: Any) -> None:
    """:func:`mbarrier_wait_parity` (an mbarrier's wait, under its other name)."""
    mbarrier_wait(mbarrier, parity)


def ptx_arrive_cluster_barrier(mbarrier: Any, cta_id: Any) -> None:
    """Arrive on the mbarrier at ``mbarrier``'s offset in CTA ``cta_id`` of the cluster."""
    mbarrier_arrive(mbarrier, cta_id)


def cp_async_barrier_noinc(barrier: Any) -> None:
    """``cp.async.mbarrier.arrive.noinc``: the mbarrier ``barrier`` gets this thread's arrival once its earlier
    cp.async copies complete (its pending count not incremented)."""
    cp_async_mbarrier_arrive_noinc(barrier)


def fence_proxy_async() -> None:
    """``fence.proxy.async.shared::cta``: shared-memory writes of the generic proxy made visible to later reads of
    the async proxy (TMA stores, WGMMA) and the other way round."""
    fence_proxy("async.shared", space="cta")


# -- register reallocation --------------------------------------------------------------------------


def set_max_nreg(reg_count: int, is_inc: int) -> None:
    """``setmaxnreg.inc`` (``is_inc`` 1) or ``.dec`` (0) to ``reg_count`` registers per thread."""
    if type(is_inc) not in (int, bool) or is_inc not in (0, 1):
        raise TraceError(f"set_max_nreg: is_inc must be 1 (increase) or 0 (decrease), got {is_inc!r}")
    (setmaxregister_increase if is_inc else setmaxregister_decrease)(reg_count)


def inc_max_nreg(reg_count: int) -> None:
    """``setmaxnreg.inc`` to ``reg_count`` registers per thread (``setmaxregister_increase``)."""
    setmaxregister_increase(reg_count)


def dec_max_nreg(reg_count: int) -> None:
    """``setmaxnreg.dec`` to ``reg_count`` registers per thread (``setmaxregister_decrease``)."""
    setmaxregister_decrease(reg_count)


def annotate_producer_reg_dealloc(reg_count: int = 24) -> None:
    """The count ``warpgroup_reg_dealloc()`` (no count given) lowers the producers' warp groups to."""
    register_plan().dealloc = reg_count_value(reg_count, "annotate_producer_reg_dealloc")


def annotate_consumer_reg_alloc(reg_count: int = 240) -> None:
    """The count ``warpgroup_reg_alloc()`` (no count given) raises the consumers' warp groups to."""
    register_plan().alloc = reg_count_value(reg_count, "annotate_consumer_reg_alloc")


def no_set_max_nreg() -> None:
    """No register reallocation in this kernel: ``warpgroup_reg_alloc()`` / ``warpgroup_reg_dealloc()`` emit
    nothing (an explicit ``setmaxregister_*`` still does)."""
    register_plan().enabled = False


def disable_warp_group_reg_alloc() -> None:
    """:func:`no_set_max_nreg`: every warp group keeps the kernel's register budget."""
    register_plan().enabled = False


# -- loops ------------------------------------------------------------------------------------------------


def loop_break() -> None:
    """Leave the innermost loop. Written as a statement inside a ``for`` or ``while`` loop of a kernel, it is
    compiled as ``break`` (a run-time loop's too); called anywhere else it is an error."""
    raise TraceError("loop_break() leaves the innermost loop: write it as a statement directly inside a for or "
                     "while loop of the kernel (it is compiled as `break`)")



# -- pointers -------------------------------------------------------------------------------------------

_ACCESS = {"r": 1, "w": 2, "rw": 3, 1: 1, 2: 2, 3: 3}


def access_ptr(base: Any, access_type: str | int = "r", *extents: Any, offset: Any = 0, extent: Any = None,
               ignore_last_ndim: int = 0) -> Any:
    """A pointer to an element of a tensor, for ``extent`` elements of access (TileLang's ``access_ptr``).

    ``base``: a tensor (its element at coordinate 0), ``(tensor, coord)`` (the element at ``coord``; with
    ``ignore_last_ndim=k`` the last ``k`` modes of the coordinate count as 0) or a pointer. ``offset`` elements
    are added. ``access_type`` (``"r"``, ``"w"``, ``"rw"`` or 1, 2, 3) states the intent; ``extent`` (default: the
    product of ``extents``, else 1) the elements accessed from the pointer: with a tensor and static values,
    ``offset + extent`` must stay inside the tensor's span from the element (``cosize``), else a TraceError.
    """
    from ...tensor.offsets import element_offset
    from ...core.int_tuple import product
    from ...core.layout import cosize
    from ...tensor.pointer import Pointer
    from ...tensor.tensor import Tensor

    if isinstance(access_type, bool) or access_type not in _ACCESS:
        raise TraceError(f"access_ptr: access_type must be 'r', 'w', 'rw' or 1, 2, 3, got {access_type!r}")
    k = _size(ignore_last_ndim, "access_ptr", "ignore_last_ndim", 0) if ignore_last_ndim else 0
    count = extent if extent is not None else (product(tuple(extents)) if extents else 1)
    if isinstance(base, Pointer):
        return base + offset
    tensor, coord = base if isinstance(base, tuple) and len(base) == 2 else (base, None)
    if not isinstance(tensor, Tensor) or not isinstance(tensor.iterator, Pointer):
        raise TraceError(f"access_ptr: base must be a tensor in memory, (tensor, coord) or a pointer, got {base!r}")
    index = 0
    if coord is not None:
        crd = tuple(coord) if isinstance(coord, (tuple, list)) else (coord,)
        if k:
            if k > len(crd):
                raise TraceError(f"access_ptr: ignore_last_ndim={k} exceeds the coordinate's {len(crd)} modes")
            crd = crd[:len(crd) - k] + (0,) * k
        index = element_offset(tensor, crd if len(crd) > 1 else crd[0])
    span = cosize(tensor.layout)
    if all(type(v) is int for v in (index, offset, count, span)):
        if count < 0 or not 0 <= index + offset <= span or index + offset + count > span:
            raise TraceError(f"access_ptr: elements {index + offset}..{index + offset + count - 1} lie outside the "
                             f"tensor's {span} elements (element index {index}, offset {offset}, extent {count})")
    return tensor.iterator + (index + offset)


def create_tma_descriptor(op: Any, gmem_tensor: Any, smem_layout: Any, cta_tiler: Any, *args: Any,
                          **kwargs: Any) -> Any:
    """A TMA copy atom and its coordinate tensor for ``gmem_tensor`` (the descriptor is encoded at launch):
    ``cpasync.make_tiled_tma_atom`` under its other name. Host side: call it in the ``@jit`` function."""
    from ...nvgpu.tma.atom import make_tiled_tma_atom

    return make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler, *args, **kwargs)
