"""The types the public API is annotated with, named as in the CuTe DSL's ``cute.typing``.

``Int`` is a leaf: a static ``int`` or a run-time :class:`~cute_py.core.leaves.DynamicInt` (a traced
value in a kernel, a valued int on the host). An ``IntTuple`` is an ``Int`` or a tuple of ``IntTuple``;
``Shape``, ``Stride``, ``Coord`` and ``Tile`` are the IntTuples of those roles (a stride may hold basis
elements, a coordinate ``None`` for a slice, a tile layouts and ``None``). ``Tiler`` is what the
divides and products take: a shape, a layout or a tile; an ``XTuple`` is any nested tuple.

The aliases name the classes they contain by string (forward references), so that this module imports
nothing and every module can import it; ``typing.get_type_hints`` resolves them given the namespace of the
package (``vars(cute_py)``) as ``localns``.
"""

from typing import Any, Tuple, Union

__all__ = ["Int", "IntTuple", "Shape", "Stride", "Coord", "Tile", "Tiler", "XTuple"]

Int = Union[int, "DynamicInt"]  # noqa: F821 (forward references, resolved by the reader)
IntTuple = Union[Int, Tuple["IntTuple", ...]]
Shape = Union[Int, Tuple["Shape", ...]]
Stride = Union[Int, "ScaledBasis", Tuple["Stride", ...]]  # noqa: F821
Coord = Union[Int, None, Tuple["Coord", ...]]
Tile = Union[Int, None, "Layout", Tuple["Tile", ...]]  # noqa: F821
Tiler = Union[Shape, "Layout", Tile]  # noqa: F821
XTuple = Union[Any, Tuple["XTuple", ...]]

