"""Random kernels of plain Python control flow over integers, and their meaning as ordinary Python.

``program(rng)`` writes the source of a module holding ``kernel(n)``: integer variables (``a``, ``b``, ``c`` start
from the run-time ``n``; ``s`` starts static), a two-element register fragment ``f``, and random statements:
assignments, ``if``/``elif``/``else`` on comparisons joined by ``and``/``or``/``not`` (chained ones too), ``for``
over ``range`` (static or run-time bounds) and ``cute.range_constexpr``, ``while`` loops with a counter, ``break``,
``continue`` and ``return`` under conditions, and ``x if c else y``. Each value it reports goes through
``arch.mbarrier_init(bar, (x & 1023) + 1)``: the interpreter of the traced MLIR (``run_kernel``) lists them, and
so does :func:`run_python`, which runs the same source with ``cute``/``arch`` standing for Python's own meaning.
Every assignment keeps values in 12 bits, so 32-bit arithmetic and Python's agree.
"""

import importlib.util
import random
import sys
import types

VARS = ("a", "b", "c", "s")


class _Gen:
    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.loop_vars = []
        self.depth = 0
        self.budget = 26  # statements in all

    def emit(self, text, indent):
        self.lines.append("    " * indent + text)

    def atom(self):
        r = self.rng
        choices = list(VARS) + self.loop_vars + ["f[0]", "f[1]"]
        return r.choice(choices) if r.random() < 0.8 else str(r.randint(0, 7))

    def expr(self, depth=0):
        r = self.rng
        if depth >= 2 or r.random() < 0.3:
            return self.atom()
        op = r.choice(["+", "-", "^", "&", "|", "*"])
        if op == "*":
            return f"({self.expr(depth + 1)} * {r.randint(0, 3)})"
        if r.random() < 0.15:
            return f"({self.expr(depth + 1)} if {self.cond(2)} else {self.expr(depth + 1)})"
        return f"({self.expr(depth + 1)} {op} {self.expr(depth + 1)})"

    def cond(self, depth=0):
        r = self.rng
        k = r.random()
        if depth < 2 and k < 0.15:
            return f"({self.cond(depth + 1)} and {self.cond(depth + 1)})"
        if depth < 2 and k < 0.3:
            return f"({self.cond(depth + 1)} or {self.cond(depth + 1)})"
        if depth < 2 and k < 0.38:
            return f"(not {self.cond(depth + 1)})"
        if k < 0.45:
            return f"({r.randint(0, 3)} <= {self.atom()} < {self.atom()})"
        if k < 0.55:
            return f"(({r.choice(VARS)} & 1) == {r.randint(0, 1)})"
        op = r.choice(["<", "<=", ">", ">=", "==", "!="])
        return f"({self.expr(1)} {op} {self.expr(1)})"

    def block(self, indent, in_loop, static_loop=False):
        n = self.rng.randint(1, 3)
        for _ in range(n):
            self.stmt(indent, in_loop, static_loop)

    def stmt(self, indent, in_loop, static_loop):
        r = self.rng
        self.budget -= 1
        k = r.random()
        if self.budget <= 0 or self.depth >= 3 or k < 0.35:
            target = r.choice(list(VARS) + ["f[0]", "f[1]"])
            if r.random() < 0.3 and target in VARS:
                self.emit(f"{target} += {self.expr(1)}", indent)
                self.emit(f"{target} = {target} & 4095", indent)
            else:
                self.emit(f"{target} = {self.expr()} & 4095", indent)
            return
        self.depth += 1
        try:
            if k < 0.55:
                self.emit(f"if {self.cond()}:", indent)
                self.block(indent + 1, in_loop, static_loop)
                if r.random() < 0.3:
                    self.emit(f"elif {self.cond()}:", indent)
                    self.block(indent + 1, in_loop, static_loop)
                if r.random() < 0.5:
                    self.emit("else:", indent)
                    self.block(indent + 1, in_loop, static_loop)
            elif k < 0.7 and in_loop and not static_loop:
                self.emit(f"if {self.cond()}:", indent)
                self.emit(r.choice(["break", "continue"]), indent + 1)
            elif k < 0.74:
                self.emit(f"if {self.cond()}:", indent)
                self.emit(f"arch.mbarrier_init(bar, ({self.atom()} & 1023) + 1)", indent + 1)
                self.emit("return", indent + 1)
            elif k < 0.8:
                self.emit(f"arch.mbarrier_init(bar, ({self.expr()} & 1023) + 1)", indent)
            elif k < 0.93:
                var = f"i{len(self.loop_vars)}"
                kind = r.random()
                if kind < 0.3:
                    self.emit(f"for {var} in cute.range_constexpr({r.randint(0, 3)}):", indent)
                    static = True
                elif kind < 0.6:
                    self.emit(f"for {var} in range({r.choice(['n & 3', '(a & 1) + 1', str(r.randint(0, 3))])}):",
                              indent)
                    static = False
                else:
                    self.emit(f"for {var} in range({r.randint(0, 2)}, {r.choice(['n & 3', 'b & 3', '4'])}):", indent)
                    static = False
                self.loop_vars.append(var)
                self.block(indent + 1, True, static)
                self.loop_vars.pop()
            else:
                w = f"w{self.depth}"
                self.emit(f"{w} = 0", indent)
                self.emit(f"while {w} < {r.randint(1, 3)} and {self.cond(1)}:", indent)
                self.emit(f"{w} = {w} + 1", indent + 1)
                self.block(indent + 1, True, False)
        finally:
            self.depth -= 1


def program(rng):
    """The source of a module defining ``kernel(n)`` (a ``@cute.kernel``)."""
    g = _Gen(rng)
    g.emit("import cute_py as cute", 0)
    g.emit("from cute_py import arch", 0)
    g.emit("", 0)
    g.emit("", 0)
    g.emit("@cute.kernel", 0)
    g.emit("def kernel(n):", 0)
    g.emit("bar = arch.SmemAllocator().allocate_mbarrier()", 1)
    g.emit("f = cute.make_rmem_tensor((2,), cute.Int32)", 1)
    g.emit("a = n & 4095", 1)
    g.emit("b = (n + 3) & 4095", 1)
    g.emit("c = 1", 1)
    g.emit("s = 3", 1)
    g.block(1, False)
    while g.budget > 0:
        g.stmt(1, False, False)
    for v in list(VARS) + ["f[0]", "f[1]"]:
        g.emit(f"arch.mbarrier_init(bar, ({v} & 1023) + 1)", 1)
    return "\n".join(g.lines) + "\n"


class _Arch:
    def __init__(self, out):
        self.out = out

    def SmemAllocator(self):  # noqa: N802 - the name of the real one
        return types.SimpleNamespace(allocate_mbarrier=lambda: None)

    def mbarrier_init(self, bar, count):
        self.out.append(count)


_PY_CUTE = types.SimpleNamespace(kernel=lambda fn: fn, range_constexpr=range, Int32="Int32",
                                 make_rmem_tensor=lambda shape, dtype: [0] * shape[0])


def run_python(source, n):
    """The counts ``kernel(n)`` reports when its source runs as ordinary Python."""
    out = []
    ns = {}
    code = compile(source.replace("import cute_py as cute\nfrom cute_py import arch\n", ""), "<reference>", "exec")
    ns.update(cute=_PY_CUTE, arch=_Arch(out))
    exec(code, ns)
    ns["kernel"](n)
    return out


def make(seed):
    return program(random.Random(seed))


def load_module(path, source, name):
    """The module ``name`` made of ``source``, written to ``path`` first (kernels need their source in a file)."""
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module
