"""Testing helpers: hypothesis strategies for property-testing layout algebra (they need ``hypothesis`` and load
on first use), the CuTe DSL's ``benchmark`` / ``JitArguments`` for timing kernels (:mod:`.bench`), and its
``autotune_jit`` (:mod:`.autotune`, with the winners kept on disk).

>>> from hypothesis import given
>>> from cute_py.testing import composable_pairs
>>> @given(composable_pairs())
... def test_composition(pair):
...     a, b = pair
...     r = cute_py.composition(a, b)
...     assert all(r(i) == a(b(i)) for i in range(cute_py.size(b)))
"""

from .autotune import autotune_jit
from .bench import JitArguments, Timing, benchmark
from .runtime_int import RuntimeBool, RuntimeInt, value_of

_STRATEGIES = ("arbitrary_layouts", "arbitrary_tilers", "compact_layouts", "composable_pairs", "composed_layouts",
               "divisors", "injective_layouts", "int_tuples", "layouts", "layouts_with_degenerate_modes", "profiles",
               "shapes", "strides", "swizzles", "tilers")


def __getattr__(name):
    if name not in _STRATEGIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from . import strategies
    except ImportError as e:  # hypothesis: the 'testing' extra
        from ..errors import CuteError, is_missing_dependency, missing_extra

        if isinstance(e, CuteError) or not is_missing_dependency(e):
            raise
        raise missing_extra(f"testing.{name}", e) from None
    return getattr(strategies, name)


def __dir__():
    return sorted(set(globals()) | set(_STRATEGIES))

__all__ = [
    "JitArguments",
    "Timing",
    "autotune_jit",
    "benchmark",
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
