"""The exported C's binding of run-time extents and strides (``export``), as ``dyn_specs.Binder`` binds them.

A compile with run-time extents or strides takes, per such array, its device pointer, its extents and its strides
(``int64_t`` arrays, in elements). The C checks them with the Binder's rules, in its order: a static entry equal
(a stride of an extent-1 mode unchecked), a leaf bound at its first entry (in ``[0, 2**(width-1))``, a multiple
of its divisibility), an expression equal to its value, every value the kernels get in its width and a multiple
of its known divisor. Expressions are computed as Python computes them (floor division and modulo, min, max), in
64-bit arithmetic whose overflow is an error (``__builtin_*_overflow``: GCC and Clang); an integer scalar
argument ``argN`` is a leaf too. A broken rule returns 1 (``CUDA_ERROR_INVALID_VALUE``) before anything is
launched.
"""

from __future__ import annotations

from typing import Any

from ...core.symbolic import SymInt

__all__ = ["C_HELPERS", "CBinder"]

C_HELPERS = """\
/* 64-bit arithmetic as Python's on the run-time extents: an overflow or a division by 0 sets *bad */
static inline int64_t x_add(int *bad, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) *bad = 1;
    return r;
}
static inline int64_t x_sub(int *bad, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) *bad = 1;
    return r;
}
static inline int64_t x_mul(int *bad, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) *bad = 1;
    return r;
}
static inline int64_t x_div(int *bad, int64_t a, int64_t b) {
    if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t x_mod(int *bad, int64_t a, int64_t b) {
    if (b == 0) { *bad = 1; return 0; }
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t x_min(int *bad, int64_t a, int64_t b) { (void)bad; return a < b ? a : b; }
static inline int64_t x_max(int *bad, int64_t a, int64_t b) { (void)bad; return a > b ? a : b; }
"""

_FUNCS = {"+": "x_add", "-": "x_sub", "*": "x_mul", "//": "x_div", "%": "x_mod", "min": "x_min", "max": "x_max"}


class CBinder:
    """The C of one compile's binding: ``arrays`` ``{argument index: (pointer, extents, strides) C names}``,
    ``scalars`` ``{argument index: C name}`` of its integer scalars."""

    def __init__(self, binder: Any, arrays: dict[int, tuple[str, str, str]], scalars: dict[int, str]) -> None:
        self.binder, self.arrays = binder, arrays
        self.vars = {f"arg{i}": f"(int64_t){name}" for i, name in scalars.items()}  # leaf name -> C expression
        self.lines = ["    int bad = 0;"]
        for k, leaf in enumerate(binder.leaves if binder is not None else ()):
            self.lines.append(f"    int64_t l{k} = 0;   /* {leaf.name} */")
        if binder is not None:
            self._bind()

    def expr(self, v: Any) -> str:
        """The C expression of ``v`` (an int or a SymInt of bound leaves)."""
        if type(v) is int:
            return f"INT64_C({v})"
        if v.is_leaf:
            return self.vars[v.name]
        a, b = (self.expr(x) for x in v.args)
        return f"{_FUNCS[v.op]}(&bad, {a}, {b})"

    def _bind(self):
        leaf_var = {leaf.name: f"l{k}" for k, leaf in enumerate(self.binder.leaves)}
        out = self.lines
        for i, rank, entries in self.binder.plan:
            _, ext, st = self.arrays[i]
            for kind, j, e in entries:
                got = f"{ext if kind == 'shape' else st}[{j}]"
                body = self._entry(e, got, leaf_var)
                if kind == "stride":     # the stride of an extent-1 mode: a leaf takes it, nothing is checked
                    unbound = isinstance(e, SymInt) and e.is_leaf and e.name not in self.vars
                    one = f"{leaf_var[e.name]} = {got};" if unbound else ""
                    out.append(f"    if ({ext}[{j}] == 1) {{ {one} }} else {{ {body} }}")
                else:
                    out.append(f"    {body}")
                if isinstance(e, SymInt) and e.is_leaf and e.name not in self.vars:
                    self.vars[e.name] = leaf_var[e.name]
        for s in self.binder.checked:
            if not all(leaf.name in self.vars for leaf in s.leaves()):
                continue    # a value of no array of this compile (as the Binder skips it)
            lim = 1 << (s.width - 1)
            v = self.expr(s)
            out.append(f"    {{ int64_t v = {v}; if (v < -INT64_C({lim}) || v >= INT64_C({lim}) || "
                       f"v % {s.known_divisor}) return 1; }}")
        out.append("    if (bad) return 1;")

    def _entry(self, e, got, leaf_var):
        if type(e) is int:
            return f"if ({got} != INT64_C({e})) return 1;"
        if e.is_leaf and e.name not in self.vars:
            lim = 1 << (e.width - 1)
            return (f"{{ if ({got} < 0 || {got} >= INT64_C({lim}) || {got} % {e.known_divisor}) return 1; "
                    f"{leaf_var[e.name]} = {got}; }}")
        return f"if ({got} != {self.expr(e)}) return 1;"

    def bound(self, v: Any) -> bool:
        """Whether ``v`` (an int or SymInt) names only leaves this binding gives values to."""
        return type(v) is int or all(leaf.name in self.vars for leaf in v.leaves())
