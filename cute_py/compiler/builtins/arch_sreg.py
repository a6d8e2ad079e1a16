"""Kernel builtins that read special registers other than the thread/block/cluster indices: shared-memory
sizes, SM and warp-slot ids, clocks and timers, and the lane masks (the CuTe DSL's ``cute.arch`` names).

Each returns a traced value read when the kernel runs; outside a kernel it raises
:class:`~cute_py.errors.TraceError`.

=========================  =========================================================  ======================
name                       value                                                      PTX
=========================  =========================================================  ======================
``dynamic_smem_size()``    bytes of dynamic shared memory of the launch (Int32)       ``%dynamic_smem_size``
``total_smem_size()``      the block's static + dynamic shared memory, in units of    ``%total_smem_size``
                           the SM's allocation granule (Int32)
``smid()``                 the SM running this thread (Int32)                         ``%smid``
``nsmid()``                an upper bound of ``smid() + 1`` (Int32)                   ``%nsmid``
``physical_warp_id()``     the warp's hardware slot (Int32; may change while the      ``%warpid``
                           warp runs: ``warp_idx()`` is the stable index)
``nwarpid()``              the number of warp slots per SM (Int32)                    ``%nwarpid``
``warpsize()``             32, read from the register (Int32)                         ``WARP_SZ``
``gridid()``               the launch's grid identifier (Int64, see below)            ``%gridid``
``clock()``                the SM's cycle counter, low 32 bits (Int32)                ``%clock``
``clock64()``              the SM's 64-bit cycle counter (Int64)                      ``%clock64``
``globaltimer()``          the global nanosecond timer (Int64)                        ``%globaltimer``
``globaltimer_lo()``       its low 32 bits (Int32)                                    ``%globaltimer_lo``
``lanemask_lt()``...       lanes below (``lt``), at or below (``le``), equal to       ``%lanemask_*``
                           (``eq``), at or above (``ge``), above (``gt``) this lane
                           (Uint32)
=========================  =========================================================  ======================

``gridid()`` returns the whole 64-bit ``%gridid`` (the CuTe DSL declares an Int32; truncating an identifier
would let two grids share one). The DSL's ``aggr_smem_size`` (``%aggr_smem_size``) needs PTX ISA 8.1, above the
8.0 that kernels are emitted for, and is not offered.
"""

from __future__ import annotations

from ...tensor.dtypes import DType, Int32, Int64, Uint32
from ..lang.values import wrap
from ..lang.traced_int import TracedInt
from ..emit import warp

__all__ = ["dynamic_smem_size", "total_smem_size", "smid", "nsmid", "physical_warp_id",
           "nwarpid", "warpsize", "gridid", "clock", "clock64", "globaltimer", "globaltimer_lo", "lanemask_lt",
           "lanemask_le", "lanemask_eq", "lanemask_ge", "lanemask_gt"]


def _dialect_sreg(name: str, dtype: DType = Int32) -> TracedInt:
    return wrap(warp.read_sreg_value(name), dtype)


def _ptx_sreg(name: str, dtype: DType = Int32) -> TracedInt:
    return warp.read_ptx_sreg(name, dtype)


def dynamic_smem_size() -> TracedInt:
    """``%dynamic_smem_size``: the bytes of dynamic shared memory this launch gave the block (Int32)."""
    return _ptx_sreg("dynamic_smem_size")


def total_smem_size() -> TracedInt:
    """``%total_smem_size``: the block's static and dynamic shared memory (without the system-reserved region),
    in units of the SM's shared-memory allocation granule (Int32)."""
    return _ptx_sreg("total_smem_size")


def smid() -> TracedInt:
    """``%smid``: the index of the SM running this thread (Int32)."""
    return _dialect_sreg("smid")


def nsmid() -> TracedInt:
    """``%nsmid``: an upper bound of ``smid() + 1`` on this device (SM ids need not be contiguous) (Int32)."""
    return _dialect_sreg("nsmid")


def physical_warp_id() -> TracedInt:
    """``%warpid``: the hardware warp slot of this warp (Int32). It may change while the warp runs (after a
    preemption); :func:`~cute_py.compiler.builtins.arch.warp_idx` is the stable index of the warp in its block."""
    return _dialect_sreg("warpid")


def nwarpid() -> TracedInt:
    """``%nwarpid``: the number of warp slots of an SM (Int32)."""
    return _dialect_sreg("nwarpid")


def warpsize() -> TracedInt:
    """``WARP_SZ``: the warp size in threads (32), read at run time (Int32); ``WARP_SIZE`` is the static constant."""
    return warp.read_warp_size()


def gridid() -> TracedInt:
    """``%gridid``: the identifier of this grid launch, all 64 bits of it (Int64)."""
    return _ptx_sreg("gridid", Int64)


def clock() -> TracedInt:
    """``%clock``: the low 32 bits of the SM's cycle counter (Int32; it wraps around)."""
    return _ptx_sreg("clock")


def clock64() -> TracedInt:
    """``%clock64``: the SM's 64-bit cycle counter (Int64)."""
    return _ptx_sreg("clock64", Int64)


def globaltimer() -> TracedInt:
    """``%globaltimer``: the global timer, in nanoseconds (Int64)."""
    return _ptx_sreg("globaltimer", Int64)


def globaltimer_lo() -> TracedInt:
    """``%globaltimer_lo``: the low 32 bits of the global nanosecond timer (Int32)."""
    return _ptx_sreg("globaltimer_lo")


def lanemask_lt() -> TracedInt:
    """``%lanemask_lt``: a Uint32 with the bits of the lanes below this one."""
    return _dialect_sreg("lanemask_lt", Uint32)


def lanemask_le() -> TracedInt:
    """``%lanemask_le``: a Uint32 with the bits of this lane and those below it."""
    return _dialect_sreg("lanemask_le", Uint32)


def lanemask_eq() -> TracedInt:
    """``%lanemask_eq``: a Uint32 with only this lane's bit."""
    return _dialect_sreg("lanemask_eq", Uint32)


def lanemask_ge() -> TracedInt:
    """``%lanemask_ge``: a Uint32 with the bits of this lane and those above it."""
    return _dialect_sreg("lanemask_ge", Uint32)


def lanemask_gt() -> TracedInt:
    """``%lanemask_gt``: a Uint32 with the bits of the lanes above this one."""
    return _dialect_sreg("lanemask_gt", Uint32)
