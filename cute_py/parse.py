"""Parse CuTe notation: ``(4,(2,8)):(2,(1,8))`` into a Layout, ``(2,(3,4))`` into an IntTuple.

``(4)`` is the rank-1 tuple ``(4,)`` (CuTe prints 1-tuples that way), so
``parse_layout(str(layout)) == layout`` for every layout of static ints.  CuTe
C++'s static-int underscores (``_4``) are accepted and ignored.
"""

import re

from .errors import CuteValueError

__all__ = ["parse_int_tuple", "parse_layout"]

_TOKEN = re.compile(r"\s*(?:(-?_?\d+)|(.))")


def _tokens(text):
    out = []
    for m in _TOKEN.finditer(text):
        num, ch = m.groups()
        if num is not None:
            out.append(("int", int(num.replace("_", ""))))
        elif ch is not None and not ch.isspace():
            out.append(("sym", ch))
    return out


class _Parser:
    def __init__(self, text):
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0

    def fail(self, what):
        raise CuteValueError(f"cannot parse {self.text!r}: {what}")

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else ("end", None)

    def take(self, sym):
        if self.peek() != ("sym", sym):
            self.fail(f"expected {sym!r} at token {self.pos}")
        self.pos += 1

    def int_tuple(self):
        kind, val = self.peek()
        if kind == "int":
            self.pos += 1
            return val
        if (kind, val) != ("sym", "("):
            self.fail(f"expected an int or '(' at token {self.pos}")
        self.pos += 1
        items = []
        if self.peek() == ("sym", ")"):
            self.pos += 1
            return ()
        while True:
            items.append(self.int_tuple())
            kind, val = self.peek()
            if (kind, val) == ("sym", ","):
                self.pos += 1
                if self.peek() == ("sym", ")"):
                    self.pos += 1
                    return tuple(items)
                continue
            self.take(")")
            return tuple(items)

    def end(self):
        if self.pos != len(self.toks):
            self.fail(f"unexpected trailing text at token {self.pos}")


def parse_int_tuple(text):
    """Parse an IntTuple: ``"(2,(3,4))" -> (2, (3, 4))``, ``"(4)" -> (4,)``, ``"6" -> 6``."""
    p = _Parser(text)
    t = p.int_tuple()
    p.end()
    return t


def parse_layout(text):
    """Parse ``"shape:stride"`` (or just ``"shape"``, compact column-major) into a Layout."""
    from .layout import Layout

    p = _Parser(text)
    shape = p.int_tuple()
    stride = None
    if p.peek() == ("sym", ":"):
        p.pos += 1
        stride = p.int_tuple()
    p.end()
    return Layout(shape, stride)
