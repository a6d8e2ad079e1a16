"""Parse CuTe notation: layouts ``(4,(2,8)):(2,(1,8))``, IntTuples ``(2,(3,4))``, basis strides
``(1@1,1@0)``, swizzles ``S<3,4,3>`` and composed layouts ``S<3,4,3> o 0 o (8,64):(64,1)``.

``(4)`` is the rank-1 tuple ``(4,)`` (CuTe prints 1-tuples that way), so
``parse_layout(str(layout)) == layout`` for every layout of static values.  CuTe
C++'s static-int underscores (``_4``) and its ``Sw<...>`` spelling are accepted.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import CuteTypeError, CuteValueError
from .normalise import MAX_DEPTH  # the IntTuple limits, as the layout module uses them
from .notation import short_repr
from .typing import IntTuple, Stride

if TYPE_CHECKING:
    from .composed import ComposedLayout
    from .layout import Layout
    from .swizzle import Swizzle

__all__ = ["parse_int_tuple", "parse_layout", "parse_swizzle"]

_TOKEN = re.compile(r"\s*(?:(-?_?\d+)|([A-Za-z]+)|(\S))")


def _tokens(text):
    if not isinstance(text, str):
        raise CuteTypeError(f"CuTe notation is parsed from a str, got {short_repr(text)} ({type(text).__name__})")
    out = []
    for m in _TOKEN.finditer(text):
        num, word, ch = m.groups()
        if num is not None:
            digits = num.replace("_", "")
            if len(digits) > 40:  # beyond any 128-bit value; Python refuses to parse very long ones
                raise CuteValueError(f"cannot parse {short_repr(text)}: the integer {digits[:20]}... is too long")
            out.append(("int", int(digits)))
        elif word is not None:
            out.append(("word", word))
        elif ch is not None:
            out.append(("sym", ch))
    return out


class _Parser:
    def __init__(self, text):
        self.toks = _tokens(text)
        self.text = text
        self.pos = 0
        self.depth = 0

    def fail(self, what):
        raise CuteValueError(f"cannot parse {short_repr(self.text)}: {what}")

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else ("end", None)

    def take(self, kind, val=None):
        k, v = self.peek()
        if k != kind or (val is not None and v != val):
            self.fail(f"expected {val or kind!r} at token {self.pos}, found {v!r}")
        self.pos += 1
        return v

    def leaf(self):
        value = self.take("int")
        modes = []
        while self.peek() == ("sym", "@"):
            self.pos += 1
            modes.append(self.take("int"))
        if not modes:
            return value
        from .basis import ScaledBasis

        return ScaledBasis(value, tuple(reversed(modes)))

    def int_tuple(self):
        kind, val = self.peek()
        if kind == "int":
            return self.leaf()
        if (kind, val) != ("sym", "("):
            self.fail(f"expected an int or '(' at token {self.pos}")
        self.pos += 1
        if self.depth >= MAX_DEPTH:
            self.fail(f"tuples are nested more than {MAX_DEPTH} levels deep (the limit of cute_py)")
        self.depth += 1
        items = []
        if self.peek() == ("sym", ")"):
            self.pos += 1
            self.depth -= 1
            return ()
        while True:
            items.append(self.int_tuple())
            if self.peek() == ("sym", ","):
                self.pos += 1
                if self.peek() == ("sym", ")"):
                    self.pos += 1
                    self.depth -= 1
                    return tuple(items)
                continue
            self.take("sym", ")")
            self.depth -= 1
            return tuple(items)

    def swizzle(self):
        word = self.take("word")
        if word not in ("S", "Sw"):
            self.fail(f"expected a swizzle S<b,m,s>, found {word!r}")
        self.take("sym", "<")
        b = self.take("int")
        self.take("sym", ",")
        m = self.take("int")
        self.take("sym", ",")
        s = self.take("int")
        self.take("sym", ">")
        from .swizzle import Swizzle

        return Swizzle(b, m, s)

    def plain_layout(self):
        from .layout import Layout

        shape = self.int_tuple()
        stride = None
        if self.peek() == ("sym", ":"):
            self.pos += 1
            stride = self.int_tuple()
        return Layout(shape, stride)

    def layout(self):
        if self.peek()[0] != "word":
            return self.plain_layout()
        if self.depth >= MAX_DEPTH:
            self.fail(f"composed layouts are nested more than {MAX_DEPTH} levels deep")
        self.depth += 1
        inner = self.swizzle()
        self.take("word", "o")
        offset = self.leaf()
        self.take("word", "o")
        outer = self.layout()
        from .composed import ComposedLayout

        return ComposedLayout(inner, offset, outer)

    def end(self):
        if self.pos != len(self.toks):
            self.fail(f"unexpected trailing text at token {self.pos}")


def parse_int_tuple(text: str) -> IntTuple | Stride:
    """Parse an IntTuple: ``"(2,(3,4))" -> (2, (3, 4))``, ``"(4)" -> (4,)``, ``"6" -> 6``."""
    p = _Parser(text)
    t = p.int_tuple()
    p.end()
    return t


def parse_layout(text: str) -> Layout | ComposedLayout:
    """Parse ``"shape:stride"`` (or ``"shape"``, compact column-major) or a composed layout
    ``"S<b,m,s> o offset o shape:stride"``."""
    p = _Parser(text)
    layout = p.layout()
    p.end()
    return layout


def parse_swizzle(text: str) -> Swizzle:
    """Parse ``"S<3,4,3>"`` into a :class:`~cute_py.core.swizzle.Swizzle`."""
    p = _Parser(text)
    sw = p.swizzle()
    p.end()
    return sw
