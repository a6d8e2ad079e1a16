"""The device context of a kernel being traced (:mod:`cute_py.device`): what the algebra and the atoms reach when
they run inside a kernel -- instructions to the emission layer, element loads and stores and register fragments to
the kernel language's memory, a memory tensor's ``load``/``store`` through the widest vector copy, and
``print_tensor``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...device import DeviceContext
from ...core.typing import Int
from ...tensor.pointer import Pointer
from ..emit import emit
from ..emit.memory import address_bits
from ..lang.builder import current
from ..lang.memory import load_element, pointer_value, store_element
from ..lang.registers import make_fragment_like
from ..lang.tensor_ssa import TensorSSA, load_tensor, store_tensor
from ..lang.traced_int import TracedInt
from ..lang.values import convert
from .printing import print_tensor
from .thread_copy import tensor_copy

if TYPE_CHECKING:
    from ...core.composed import ComposedLayout
    from ...core.layout import Layout
    from ...tensor.dtypes import DType, Scalar
    from ...tensor.tensor import Tensor
    from ..lang.values import TracedFloat

__all__ = ["KernelContext"]


class KernelContext(DeviceContext):
    """The device context of a kernel being traced (:mod:`cute_py.device`): instructions go to the emission
    table, element loads and stores to :mod:`~cute_py.compiler.lang.memory`, register fragments to
    :mod:`~cute_py.compiler.lang.registers`."""

    def emit(self, op: object, **operands: Any) -> Any:
        return emit(op, **operands)

    def load(self, pointer: Pointer, offset: Int) -> TracedInt | TracedFloat:
        return load_element(pointer + offset)

    def store(self, pointer: Pointer, offset: Int, value: TracedInt | TracedFloat | int | float) -> None:
        store_element(pointer + offset, value)

    def make_fragment_like(self, src: Tensor | Layout | ComposedLayout,
                           dtype: DType | str | Any | None = None) -> Tensor:
        return make_fragment_like(src, dtype)

    def scalar(self, dtype: DType, value: Any) -> TracedInt | Scalar:
        return convert(dtype, value)

    def pointer_address(self, pointer: Pointer) -> TracedInt:
        return TracedInt(address_bits(pointer_value(pointer, "align")), 64, True)

    def load_tensor(self, tensor: Tensor) -> TensorSSA:
        return load_tensor(tensor, tensor_copy)

    def store_tensor(self, tensor: Tensor, value: Any) -> None:
        store_tensor(tensor, value, tensor_copy)

    def print_tensor(self, tensor: Tensor, verbose: bool = False) -> None:
        print_tensor(tensor, verbose)

    def run_time_scope(self) -> Any:
        scope = current().scope
        return None if scope.parent is None else scope

    def on_abandon(self, undo: Any) -> None:
        current().undo_log.append(undo)
