"""An independent host model of the kernel language's numbers, written from the documented rules (the CuTe DSL's
promotion, C/PTX wrapping, Python's floor division, IEEE round-to-nearest-even), for the GPU law test.

A value is ``(type name, list of elements)``: Python ints for the integer types and Boolean, Python floats for the
float types (each exactly a value of its type: rounding is done by :func:`round_to`).
"""

import math
from fractions import Fraction

INTS = {"Int8": (8, True), "Int16": (16, True), "Int32": (32, True), "Int64": (64, True),
        "Uint8": (8, False), "Uint16": (16, False), "Uint32": (32, False), "Uint64": (64, False)}
# name -> (mantissa bits, least normal exponent, greatest exponent)
FLOATS = {"Float16": (10, -14, 15), "BFloat16": (7, -126, 127), "Float32": (23, -126, 127),
          "Float64": (52, -1022, 1023)}
FLOAT_WIDTH = {"Float16": 16, "BFloat16": 16, "Float32": 32, "Float64": 64}


def is_float(t):
    return t in FLOATS


def width(t):
    return FLOAT_WIDTH[t] if is_float(t) else (1 if t == "Boolean" else INTS[t][0])


def promote(a, b, arithmetic=True):
    """The CuTe DSL's promotion (cutlass.base_dsl.typing._binary_op_type_promote), for the types above."""
    if a == b:
        return "Int32" if arithmetic and a == "Boolean" else a
    if is_float(a) or is_float(b):
        if not (is_float(a) and is_float(b)):
            return a if is_float(a) else b
        if width(a) != width(b):
            return a if width(a) > width(b) else b
        for t in ("Float64", "Float32", "Float16"):
            if t in (a, b):
                return t
        raise ValueError(f"no promotion of {a} and {b}")
    if a == "Boolean" or b == "Boolean":
        return b if a == "Boolean" else a
    (wa, sa), (wb, sb) = INTS[a], INTS[b]
    if sa == sb:
        return a if wa >= wb else b
    (u, wu), (s, ws) = ((a, wa), (b, wb)) if not sa else ((b, wb), (a, wa))
    return u if wu >= ws else s


def python_type(x):
    if type(x) is bool:
        return "Boolean"
    if type(x) is int:
        return "Int32" if -(1 << 31) <= x < (1 << 31) else "Int64"
    return "Float32"


def wrap(v, t):
    """The integer ``v`` held in the integer type ``t`` (two's complement)."""
    if t == "Boolean":
        return 1 if v else 0
    w, signed = INTS[t]
    v &= (1 << w) - 1
    return v - (1 << w) if signed and v >= 1 << (w - 1) else v


def round_to(x, t):
    """The exact value ``x`` (an int, Fraction or float; inf and NaN pass) rounded to the float type ``t``, to nearest
    even, overflowing to infinity, with subnormals; the sign of zero is kept."""
    return round_to_format(x, *FLOATS[t])


def round_to_format(x, man, emin, emax):
    """``x`` rounded to nearest even in the binary format of ``man`` mantissa bits and normal exponents
    ``emin..emax`` (IEEE-like: subnormals below, infinity above)."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return x
    q = Fraction(x)
    if q == 0:
        return math.copysign(0.0, x) if isinstance(x, float) else 0.0
    sign = -1 if q < 0 else 1
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - man)
    n = q / quantum
    whole = n.numerator // n.denominator
    rest = n - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    r = whole * quantum
    if r > (2 - Fraction(2) ** -man) * Fraction(2) ** emax:
        return sign * math.inf
    return sign * float(r)


def convert(values, src, dst):
    """``x.to(dst)`` element by element."""
    if src == dst:
        return list(values)
    if dst == "Boolean":
        return [1 if (v != 0 or (isinstance(v, float) and math.isnan(v))) else 0 for v in values]
    if is_float(dst):
        return [round_to(v, dst) for v in values]
    if is_float(src):  # truncate toward zero, saturate, NaN gives 0
        w, signed = INTS[dst]
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
        out = []
        for v in values:
            if math.isnan(v):
                out.append(0)
            elif math.isinf(v):
                out.append(hi if v > 0 else lo)
            else:
                out.append(min(max(math.trunc(v), lo), hi))
        return out
    return [wrap(v, dst) for v in values]


def _float_op(op, x, y, t):
    """IEEE ``x op y`` in double precision (exact for + - * of these types' values, or rounded once to 53 bits, which
    a second rounding to 24 or fewer bits cannot tell apart), then rounded to ``t``."""
    try:
        if op == "add":
            r = x + y
        elif op == "sub":
            r = x - y
        elif op == "mul":
            r = x * y
        elif op in ("truediv", "floordiv"):
            if y == 0:
                r = math.nan if (x == 0 or math.isnan(x)) else math.copysign(math.inf, x) * math.copysign(1.0, y)
            else:
                r = x / y
        else:
            raise ValueError(op)
    except OverflowError:  # pragma: no cover - float arithmetic gives inf rather than raising
        r = math.inf
    if isinstance(r, float) and math.isinf(x) and math.isinf(y) and op in ("truediv", "floordiv"):
        r = math.nan
    if op in ("add", "sub", "mul") and t == "Float64":
        return r
    r = round_to(r, t) if t != "Float64" else r
    if op == "floordiv" and not (math.isnan(r) or math.isinf(r)):
        r = math.copysign(float(math.floor(r)), r) if r != 0 else r
    return r


def binary(op, a, b):
    """``a op b`` on two values (type, elements): promotion, then the operation in the common type."""
    (ta, xa), (tb, xb) = a, b
    compare = op in ("lt", "le", "gt", "ge", "eq", "ne")
    bitwise = op in ("and", "or", "xor", "lshift", "rshift")
    t = promote(ta, tb, arithmetic=not (compare or bitwise))
    if op == "truediv" and not is_float(t):
        t = "Float32"
    xa, xb = convert(xa, ta, t), convert(xb, tb, t)
    if compare:
        f = {"lt": lambda p, q: p < q, "le": lambda p, q: p <= q, "gt": lambda p, q: p > q,
             "ge": lambda p, q: p >= q, "eq": lambda p, q: p == q, "ne": lambda p, q: p != q}[op]
        return "Boolean", [1 if f(p, q) else 0 for p, q in zip(xa, xb)]
    if is_float(t):
        return t, [_float_op(op, p, q, t) for p, q in zip(xa, xb)]
    w = width(t)
    out = []
    for p, q in zip(xa, xb):
        if op == "add":
            r = p + q
        elif op == "sub":
            r = p - q
        elif op == "mul":
            r = p * q
        elif op == "floordiv":
            r = p // q
        elif op == "mod":
            r = p % q
        elif op == "and":
            r = p & q
        elif op == "or":
            r = p | q
        elif op == "xor":
            r = p ^ q
        elif op == "lshift":
            r = 0 if q >= w or q < 0 else p << q
        elif op == "rshift":
            r = (0 if p >= 0 else -1) if q >= w or q < 0 else p >> q
        else:
            raise ValueError(op)
        out.append(wrap(r, t))
    return t, out


def unary(op, a):
    t, xs = a
    if op == "neg":
        return t, [-x for x in xs] if is_float(t) else [wrap(-x, t) for x in xs]
    if op == "abs":
        return t, [abs(x) for x in xs] if is_float(t) else [wrap(abs(x), t) for x in xs]
    raise ValueError(op)


def constant(x, n):
    """A Python number as a traced operation sees it: a float is a Float32 constant (rounded to it), an int an Int32
    (or Int64) one."""
    t = python_type(x)
    return t, [round_to(float(x), "Float32") if t == "Float32" else int(x)] * n
