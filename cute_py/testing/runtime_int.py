"""``RuntimeInt``: a stand-in for a traced run-time integer, for testing dynamic-aware code on the CPU.

It carries a concrete value (``.value``) but is a :class:`~cute_py.int_tuple.Dynamic`
leaf, so the algebra treats it exactly as it treats a value known only inside a
kernel: it computes with it through arithmetic and refuses decisions that need
a static int.
"""

from ..valued import ValuedInt, value_of

__all__ = ["RuntimeInt", "value_of"]


class RuntimeInt(ValuedInt):
    """A run-time integer with a known value; every operation returns another RuntimeInt."""

    __slots__ = ()
