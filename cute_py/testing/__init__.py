"""Hypothesis strategies for property-testing layout algebra (needs ``hypothesis``).

>>> from hypothesis import given
>>> from cute_py.testing import composable_pairs
>>> @given(composable_pairs())
... def test_composition(pair):
...     a, b = pair
...     r = cute_py.composition(a, b)
...     assert all(r(i) == a(b(i)) for i in range(cute_py.size(b)))
"""

from .runtime_int import RuntimeBool, RuntimeInt, value_of
from .strategies import (arbitrary_layouts, arbitrary_tilers, compact_layouts, composable_pairs, composed_layouts,
                         divisors, injective_layouts, int_tuples, layouts, layouts_with_degenerate_modes, profiles,
                         shapes, strides, swizzles, tilers)

__all__ = [
    "RuntimeInt",
    "RuntimeBool",
    "value_of",
    "arbitrary_layouts",
    "arbitrary_tilers",
    "compact_layouts",
    "composable_pairs",
    "composed_layouts",
    "divisors",
    "injective_layouts",
    "int_tuples",
    "layouts",
    "layouts_with_degenerate_modes",
    "profiles",
    "shapes",
    "strides",
    "swizzles",
    "tilers",
]
