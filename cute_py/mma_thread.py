"""One thread's view of a tiled MMA (CuTe's ``ThrMMA``): ``tiled_mma.get_slice(t)``, whose ``partition_A/B/C`` give
thread ``t``'s part of a tile and whose ``make_fragment_A/B/C`` its register fragments (see :mod:`cute_py.mma`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.layout import Layout
from .core.typing import Int
from .errors import CuteValueError

if TYPE_CHECKING:
    from .tensor.tensor import Tensor

__all__ = ["ThrMma"]


def _hier_coord(layout, idx):
    """The flat coordinate of ``layout`` whose image is ``idx`` (CuTe's ``get_flat_coord``)."""
    from .core.int_tuple import flatten

    shapes, strides = flatten(layout.shape), flatten(layout.stride)
    shapes = shapes if type(shapes) is tuple else (shapes,)
    strides = strides if type(strides) is tuple else (strides,)
    return tuple(0 if d == 0 else (idx // d) % s for s, d in zip(shapes, strides))


class ThrMma:
    """One thread's view of a :class:`~cute_py.mma.TiledMma` (``tiled_mma``, which makes it: ``get_slice``)."""

    __slots__ = ("tiled_mma", "thr_idx", "thr_vmnk")

    def __init__(self, tiled_mma: Any, thr_idx: Int) -> None:
        n = tiled_mma.size
        if type(thr_idx) is int and not 0 <= thr_idx < n:
            raise CuteValueError(f"thread index {thr_idx} is out of range for a tiled MMA of {n} threads")
        v = tiled_mma.thr_layout_vmnk
        coord = _hier_coord(v, thr_idx)
        if type(thr_idx) is int and v(coord) != thr_idx:
            raise CuteValueError(f"the thread layout {v} does not reach thread {thr_idx} (it is not a bijection "
                                 "onto the threads)")
        self.tiled_mma = tiled_mma
        self.thr_idx = thr_idx
        self.thr_vmnk = coord

    def _partition(self, tensor, frg, i, j):
        from .core.modes import slice_
        from .tensor.tensor import Tensor

        layout = tensor.layout if isinstance(tensor, Tensor) else tensor
        if type(layout) is Layout:
            thr = frg(layout)
        else:  # a composed (swizzled shared-memory) layout: partition its outer layout, keep the swizzle
            thr = layout.__cute_map_outer__(frg)
        rest = len(layout)
        c = self.thr_vmnk
        coord = ((c[0], (c[i], c[j])), (None, (None,) * rest))
        if isinstance(tensor, Tensor):
            return Tensor(tensor.engine, thr)[coord]
        return slice_(thr, coord)

    def partition_A(self, tensor: Tensor | Layout) -> Tensor | Layout:
        """This thread's ``(MMA_V, MMA_M, MMA_K, ...)`` view of an ``(M, K, ...)`` tensor (or layout)."""
        return self._partition(tensor, self.tiled_mma.thrfrg_A, 1, 3)

    def partition_B(self, tensor: Tensor | Layout) -> Tensor | Layout:
        """This thread's ``(MMA_V, MMA_N, MMA_K, ...)`` view of an ``(N, K, ...)`` tensor (or layout)."""
        return self._partition(tensor, self.tiled_mma.thrfrg_B, 2, 3)

    def partition_C(self, tensor: Tensor | Layout) -> Tensor | Layout:
        """This thread's ``(MMA_V, MMA_M, MMA_N, ...)`` view of an ``(M, N, ...)`` tensor (or layout)."""
        return self._partition(tensor, self.tiled_mma.thrfrg_C, 1, 2)

    def partition_fragment_A(self, tensor: Tensor | Layout) -> Tensor:
        """The A fragment of this thread's partition of ``tensor``."""
        return self.tiled_mma.make_fragment_A(self.partition_A(tensor))

    def partition_fragment_B(self, tensor: Tensor | Layout) -> Tensor:
        """The B fragment of this thread's partition of ``tensor``."""
        return self.tiled_mma.make_fragment_B(self.partition_B(tensor))

    def partition_fragment_C(self, tensor: Tensor | Layout) -> Tensor:
        """The accumulator fragment of this thread's partition of ``tensor``."""
        return self.tiled_mma.make_fragment_C(self.partition_C(tensor))

    def make_fragment_A(self, tensor: Tensor | Layout) -> Tensor:
        """The A fragment of an A partition (``partition_A``'s result), as the tiled MMA's: a thread slice is a
        tiled MMA in the DSL (``ThrMma`` derives from ``TiledMma``), so it does not partition again."""
        return self.tiled_mma.make_fragment_A(tensor)

    def make_fragment_B(self, tensor: Tensor | Layout) -> Tensor:
        """The B fragment of a B partition (see :meth:`make_fragment_A`)."""
        return self.tiled_mma.make_fragment_B(tensor)

    def make_fragment_C(self, tensor: Tensor | Layout) -> Tensor:
        """The accumulator fragment of a C partition (see :meth:`make_fragment_A`)."""
        return self.tiled_mma.make_fragment_C(tensor)

    def __getattr__(self, name: str) -> Any:
        # the rest of the tiled MMA's interface (size, shape_mnk, tv_layout_A...), as the DSL's ThrMma inherits it
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.tiled_mma, name)

    def partition_shape_C(self, shape_mn: tuple) -> tuple:
        """The shape of this thread's C partition of an ``(M, N, ...)`` tile."""
        return self.partition_C(Layout(shape_mn)).shape
