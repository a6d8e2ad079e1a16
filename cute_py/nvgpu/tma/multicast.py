"""Multicast masks: ``make_layout_image_mask`` (the CuTe DSL's ``cute.make_layout_image_mask``) and
``create_tma_multicast_mask`` (``cpasync.create_tma_multicast_mask``; CuTe C++'s
``create_tma_multicast_mask<Mode>`` in ``copy_traits_sm90_tma.hpp``).

The mask of ``make_layout_image_mask(lay, coord, mode)`` has bit ``lay(x)`` set for every coordinate ``x`` of
``lay``'s domain that agrees with ``coord`` in every mode but ``mode`` (whose entry of ``coord`` does not select,
but must lie inside its mode like the others, or be ``None``, since ``coord`` names this CTA):
the image of mode ``mode`` through ``lay``, placed at the offset that ``coord``'s other modes select. With a
cluster layout (CTA coordinate -> rank in the cluster), it names the CTAs that share this CTA's coordinates
except along ``mode``: the receivers of a TMA multicast along that mode.

``lay`` must be static with a codomain of at most 16 positions (``cosize(lay) <= 16``: a cluster holds at most
16 CTAs). The entries of ``coord`` may be static ints, checked to lie inside their modes, or run-time integers
in a kernel (``block_in_cluster_idx()``, ``lay.get_flat_coord(rank)``...), which must lie inside their modes
too, as any coordinate evaluated at run time (they cannot be checked while tracing). With static entries the
mask is a Python int in ``[0, 2**16)``; with a run-time entry it is a traced ``Int16`` holding the same 16 bits.
"""

from __future__ import annotations

from typing import Any

from ...core.int_tuple import DynamicInt, flatten, fmt, is_static, product
from ...core.normalise import index_or_none
from ...core.layout import cosize, Layout
from ...core.modes import slice_and_offset
from ...core.typing import Coord
from ...errors import CuteTypeError, CuteValueError
from ...tensor.dtypes import Int16

__all__ = ["make_layout_image_mask", "create_tma_multicast_mask", "MAX_MASK_BITS"]

MAX_MASK_BITS = 16


def _entry(c: Any, what: str) -> Any:
    """A coordinate entry: an int, a run-time integer, or a tuple of them (``None`` where a mode is kept)."""
    if isinstance(c, (tuple, list)):
        return tuple(_entry(x, what) for x in c)
    if c is None or isinstance(c, DynamicInt) or type(c) is int:
        return c
    v = None if isinstance(c, bool) else index_or_none(c)   # an array is no entry (index_or_none refuses it)
    if v is None:
        raise CuteTypeError(f"{what} must hold ints or run-time integers, got {c!r}")
    return v


def _inside(c: Any, shape: Any) -> bool:
    """Whether the static entry ``c`` is a coordinate of a mode of ``shape`` (an index or a congruent tuple)."""
    if type(c) is tuple:
        return type(shape) is tuple and len(c) == len(shape) and all(_inside(x, s) for x, s in zip(c, shape))
    return 0 <= c < product(shape)


def _image_mask(lay: Any, coord: Any, modes: tuple[int, ...], name: str) -> Any:
    if not isinstance(lay, Layout) or not is_static(lay.shape) or not is_static(lay.stride):
        raise CuteTypeError(f"{name} needs a static Layout, got {lay!r}")
    flat = zip(*((flatten(lay.shape), flatten(lay.stride)) if type(lay.shape) is tuple else ((lay.shape,), (lay.stride,))))
    negative = [d for s, d in flat if d < 0 and s > 1]   # a mode of extent 1 adds nothing
    if negative:
        raise CuteValueError(f"{name}: the layout {lay} has the negative stride {negative[0]}; a mask bit is a "
                             f"position 0..{MAX_MASK_BITS - 1} (a CTA's rank in the cluster), so the strides must be "
                             f">= 0")
    n = cosize(lay)
    if n > MAX_MASK_BITS:
        raise CuteValueError(f"{name}: the layout {lay} reaches position {n - 1}; a {MAX_MASK_BITS}-bit mask holds "
                             f"positions 0..{MAX_MASK_BITS - 1} (cosize <= {MAX_MASK_BITS}: a cluster holds at most "
                             f"{MAX_MASK_BITS} CTAs)")
    shape = lay.shape if type(lay.shape) is tuple else (lay.shape,)
    try:
        coord = _entry(coord, f"{name}: the coordinate")
    except RecursionError:
        raise CuteValueError(f"{name}: the coordinate is nested too deeply") from None
    if type(lay.shape) is not tuple and type(coord) is not tuple:
        coord = (coord,)
    if type(coord) is not tuple or len(coord) != len(shape):
        raise CuteValueError(f"{name}: the coordinate {coord!r} must have one entry per mode of {lay} "
                             f"(rank {len(shape)})")
    for m in modes:
        if type(m) is not int:
            raise CuteTypeError(f"{name}: the mode must be a static int (0..{len(shape) - 1}), got {m!r}")
        if not 0 <= m < len(shape):
            raise CuteValueError(f"{name}: mode {m!r} is not a mode of {lay} (0..{len(shape) - 1})")
    entries = list(coord)
    for i, (c, s) in enumerate(zip(entries, shape)):
        if c is None:
            if i not in modes:
                raise CuteValueError(f"{name}: entry {i} of the coordinate is None, but only mode(s) {modes} vary")
        elif is_static(c) and not _inside(c, s):
            raise CuteValueError(f"{name}: entry {i} ({fmt(c)}) of the coordinate {fmt(tuple(coord))} is outside "
                                 f"mode {i} (shape {fmt(s)}) of {lay}")
        if i in modes:
            entries[i] = None
    sub, offset = slice_and_offset(tuple(entries) if type(lay.shape) is tuple else entries[0], lay)
    mask = 0
    for i in range(product(sub.shape)):
        mask |= 1 << sub(i)
    if type(offset) is int:
        return mask << offset
    return Int16(mask << offset)


def make_layout_image_mask(lay: Layout, coord: Coord, mode: int) -> Any:
    """The 16-bit mask of the positions ``lay`` maps to when mode ``mode`` of the coordinate varies and its other
    modes are ``coord``'s (see the module): a Python int for a static ``coord``, a traced Int16 otherwise.

    @post bit ``p`` is set iff ``p == lay(x)`` for some ``x`` in ``lay``'s domain with ``x[j] == coord[j]`` for
    every ``j != mode``.
    """
    return _image_mask(lay, coord, (mode,), "make_layout_image_mask")


def create_tma_multicast_mask(cta_layout_vmnk: Layout, cta_coord_vmnk: Coord,
                              mcast_mode: int | tuple[int, ...] | list[int]) -> Any:
    """The 16-bit mask of the CTAs that receive this CTA's TMA multicast along mode ``mcast_mode`` of the
    rank-4 (V, M, N, K) cluster layout ``cta_layout_vmnk`` (CTA coordinate -> rank in the cluster):
    ``make_layout_image_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode)``. ``cta_coord_vmnk`` may hold
    run-time integers (the mask is then a traced Int16). As CuTe C++ allows, ``mcast_mode`` may also be a
    tuple of modes that all vary.
    """
    name = "create_tma_multicast_mask"
    if isinstance(cta_layout_vmnk, Layout) and (type(cta_layout_vmnk.shape) is not tuple
                                                or len(cta_layout_vmnk.shape) != 4):
        raise CuteValueError(f"{name}: cta_layout_vmnk must be a rank-4 (V, M, N, K) layout, got {cta_layout_vmnk}")
    if isinstance(mcast_mode, (tuple, list)):
        modes = tuple(mcast_mode)
    else:
        modes = (mcast_mode,)
    if not modes or not all(type(m) is int for m in modes):
        raise CuteTypeError(f"{name}: mcast_mode must be a mode index or a tuple of them, got {mcast_mode!r}")
    return _image_mask(cta_layout_vmnk, cta_coord_vmnk, modes, name)
