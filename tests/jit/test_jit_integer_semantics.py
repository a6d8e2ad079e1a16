"""Traced integer arithmetic computes what Python computes: the emitted arith ops are evaluated here by a
small interpreter (i32, two's complement) and compared with Python's ``//``, ``%``, min/max, shifts."""

import re

import pytest

import cute_py as cute
from cute_py.core.leaves import imax, imin

_OP = re.compile(r"^\s*(%\S+) = arith\.(\w+) (.*?) : (i\d+)")
_CONST = re.compile(r"^\s*(%\S+) = arith\.constant (-?\d+) : (i\d+)")
_CAST = re.compile(r"^\s*(%\S+) = arith\.(extsi|extui|trunci) (%\S+) : (i\d+) to (i\d+)")


def _wrap(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _unsigned(v, bits):
    return v & ((1 << bits) - 1)


def evaluate(mlir, args):
    """The value compared with 0 by the kernel's last ``arith.cmpi eq``, with ``%argN = args[N]``."""
    env = {f"%arg{i}": v for i, v in enumerate(args)}
    last = None
    for line in mlir.splitlines():
        m = _CONST.match(line)
        if m:
            env[m[1]] = int(m[2])
            continue
        m = re.match(r"^\s*(%\S+) = arith\.constant (true|false)$", line)
        if m:
            env[m[1]] = int(m[2] == "true")
            continue
        m = _CAST.match(line)
        if m:
            src, bits_from, bits_to = env[m[3]], int(m[4][1:]), int(m[5][1:])
            env[m[1]] = (_unsigned(src, bits_from) if m[2] == "extui" else _wrap(src, bits_to))
            continue
        m = _OP.match(line)
        if not m:
            continue
        name, op, rest, ty = m[1], m[2], m[3], m[4]
        bits = 1 if ty == "i1" else int(ty[1:])
        if op == "cmpi":
            pred, a, b = re.match(r"(\w+), (%\S+), (%\S+)", rest).groups()
            x, y = env[a], env[b]
            w = int(ty[1:])
            if pred.startswith("u"):
                x, y = _unsigned(x, w), _unsigned(y, w)
            env[name] = int({"eq": x == y, "ne": x != y, "slt": x < y, "sle": x <= y, "sgt": x > y, "sge": x >= y,
                             "ult": x < y, "ule": x <= y, "ugt": x > y, "uge": x >= y}[pred])
            if pred == "eq":
                last = a
            continue
        if op == "select":
            c, a, b = [env[v.strip()] for v in rest.split(",")]
            env[name] = a if c else b
            continue
        a, b = [env[v.strip()] for v in rest.split(",")]
        ua, ub = _unsigned(a, bits), _unsigned(b, bits)
        fns = {
            "addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
            "divsi": lambda: int(a / b), "remsi": lambda: a - int(a / b) * b,
            "divui": lambda: ua // ub, "remui": lambda: ua % ub, "andi": lambda: a & b, "ori": lambda: a | b,
            "xori": lambda: a ^ b, "shli": lambda: a << b, "shrui": lambda: ua >> b, "shrsi": lambda: a >> b,
            "minsi": lambda: min(a, b), "maxsi": lambda: max(a, b), "minui": lambda: min(ua, ub),
            "maxui": lambda: max(ua, ub),
        }
        env[name] = _wrap(fns[op](), bits) if bits > 1 else fns[op]() & 1
    return env[last]


def _compile_expr(expr):
    @cute.kernel
    def k(n, m):
        with cute.compiler.if_(expr(n, m) == 0):
            cute.arch.sync_threads()

    def host(n, m):
        k(n, m).launch(grid=1, block=32)

    c = cute.compile(host, cute.Int32(1), cute.Int32(1))
    return c.mlir


EXPRS = {
    "n // 3": (lambda n, m: n // 3, lambda n, m: n // 3),
    "n % 3": (lambda n, m: n % 3, lambda n, m: n % 3),
    "n // -4": (lambda n, m: n // -4, lambda n, m: n // -4),
    "n % -4": (lambda n, m: n % -4, lambda n, m: n % -4),
    "n // m": (lambda n, m: n // m, lambda n, m: n // m),
    "n % m": (lambda n, m: n % m, lambda n, m: n % m),
    "7 // m": (lambda n, m: 7 // m, lambda n, m: 7 // m),
    "-7 % m": (lambda n, m: -7 % m, lambda n, m: -7 % m),
    "min(n, m)": (lambda n, m: imin(n, m), min),
    "max(n, 2)": (lambda n, m: imax(n, 2), lambda n, m: max(n, 2)),
    "signum(n)": (lambda n, m: n.signum_(), lambda n, m: (n > 0) - (n < 0)),
    "(n * 5 - m) ^ 6": (lambda n, m: (n * 5 - m) ^ 6, lambda n, m: (n * 5 - m) ^ 6),
    "n >> 1": (lambda n, m: n >> 1, lambda n, m: n >> 1),
}


@pytest.mark.parametrize("name", sorted(EXPRS))
def test_traced_arithmetic_matches_python(name):
    traced, python = EXPRS[name]
    mlir = _compile_expr(traced)
    for n in range(-13, 14):
        for m in (-5, -3, -1, 1, 2, 3, 7):
            assert evaluate(mlir, [n, m]) == python(n, m), (name, n, m)
