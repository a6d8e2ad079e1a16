"""The exceptions cute_py raises for user errors.

Every rejection names the rule that was broken and the values involved.  The
classes also derive from the matching builtin (``ValueError``/``TypeError``) so
generic handlers keep working.
"""

__all__ = [
    "CuteError",
    "CuteValueError",
    "CuteTypeError",
    "RankError",
    "DivisibilityError",
    "NotInjectiveError",
    "StaticValueRequired",
    "CuteIndexError",
]


class CuteError(Exception):
    """Base class of every error raised by cute_py for bad input."""


class CuteValueError(CuteError, ValueError):
    """A value breaks a rule of the algebra."""


class CuteTypeError(CuteError, TypeError):
    """An argument has a type the operation does not accept."""


class RankError(CuteValueError):
    """Ranks or profiles of two arguments do not match (or a tiler has too many modes)."""


class DivisibilityError(CuteValueError):
    """A shape or stride divisibility condition of the algebra is violated."""


class NotInjectiveError(CuteValueError):
    """An operation that needs an injective layout (e.g. complement) got a non-injective one."""


class StaticValueRequired(CuteValueError, TypeError):
    """A value known only at run time was used where the algebra needs a static int.

    Also a ``TypeError``: a run-time integer is the wrong kind of value there.
    """


class CuteIndexError(CuteError, IndexError):
    """A coordinate, tile or thread index outside a tensor (or an element offset outside its array)."""
