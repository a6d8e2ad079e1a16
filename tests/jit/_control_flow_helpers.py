"""Shared by the control-flow tests: compiling a one-launch kernel, markers, PTX loops, and a small
interpreter of the traced MLIR (blocks, branches, ``arith`` ops) to check what a kernel computes."""

import re

import pytest

import cute_py as cute
from cute_py import Int32
from cute_py.compiler import TraceError


def compile_kernel(kernel_fn, *kargs):
    """Compile a one-launch jit function for ``kernel_fn(*kargs)`` (no device arrays)."""

    def host():
        kernel_fn(*kargs).launch(grid=1, block=32)

    return cute.compile(host)


def kernel_body(mlir):
    return re.split(r"attributes \{nvvm\.kernel[^}]*\}", mlir, maxsplit=1)[1]


def line_of(marker, path):
    """The line number of the line of ``path`` ending with ``# <marker>``."""
    with open(path) as f:
        hits = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def ptx_loops(ptx):
    """The bodies of the PTX's loops (from a label to the branch back to it), in order."""
    loops = []
    for m in re.finditer(r"^(\$L__BB\d+_\d+):$", ptx, re.M):
        back = re.search(rf"^\s*@%p\d+ bra \s*{re.escape(m[1])};$", ptx[m.end():], re.M)
        if back:
            loops.append(ptx[m.end():m.end() + back.start()])
    return loops


# -- an interpreter of the traced kernel body ---------------------------------------------------

_BLOCK = re.compile(r"^(\^bb\d+)(?:\((.*)\))?:")
_TARGET = r"(\^bb\d+)(?:\(([^)]*)\))?"
_BR = re.compile(rf"^llvm\.br {_TARGET}")
_COND_BR = re.compile(rf"^llvm\.cond_br (%\S+), {_TARGET}, {_TARGET}")
_CONST = re.compile(r"^(%\S+) = arith\.constant (\S+)(?: : (\w+))?$")
_CAST = re.compile(r"^(%\S+) = arith\.(extsi|extui|trunci) (%\S+) : i(\d+) to i(\d+)$")
_CMP = re.compile(r"^(%\S+) = arith\.cmpi (\w+), (%\S+), (%\S+) : i(\d+)$")
_SELECT = re.compile(r"^(%\S+) = arith\.select (%\S+), (%\S+), (%\S+) : (\w+)$")
_BIN = re.compile(r"^(%\S+) = arith\.(\w+) (%\S+), (%\S+) : i(\d+)$")
_MBAR_INIT = re.compile(r'^"cute_nvgpu\.mbarrier_init"\((%\S+), (%\S+)\)')


def _wrap(v, bits):
    if bits == 1:
        return v & 1
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _operands(text):
    """The value names of a branch target's operand list ``%a, %b : i32, i1``."""
    if not text:
        return []
    return [v.strip() for v in text.split(":")[0].split(",")]


def _blocks(body):
    """{block name: (argument names, op lines)} of a kernel body, the entry block named ``^bb0``."""
    blocks, name, args, ops = {}, "^bb0", [], []
    for raw in body.splitlines()[1:]:
        line = raw.split("//")[0].strip()
        if not line:
            continue
        m = _BLOCK.match(line)
        if m:
            blocks[name] = (args, ops)
            name, ops = m[1], []
            args = [a.split(":")[0].strip() for a in m[2].split(",")] if m[2] else []
            continue
        if line == "}":
            break
        ops.append(line)
    blocks[name] = (args, ops)
    return blocks


def run_kernel(mlir, params, max_steps=200_000):
    """Run the kernel body of ``mlir`` with ``%argN = params[N]``; the list of its ``mbarrier_init`` counts."""
    blocks = _blocks(kernel_body(mlir))
    env = {f"%arg{i}": v for i, v in enumerate(params)}
    events = []
    name, incoming = "^bb0", []
    for _ in range(max_steps):
        args, ops = blocks[name]
        assert len(args) == len(incoming), (name, args, incoming)
        env.update(zip(args, incoming))
        for op in ops:
            if m := _CONST.match(op):
                text, ty = m[2], m[3]
                if text in ("true", "false"):
                    env[m[1]] = int(text == "true")
                elif ty == "f32":
                    env[m[1]] = float(text)
                else:
                    env[m[1]] = int(text)
            elif m := _CAST.match(op):
                src, frm, to = env[m[3]], int(m[4]), int(m[5])
                env[m[1]] = _wrap(src & ((1 << frm) - 1) if m[2] == "extui" else src, to)
            elif m := _CMP.match(op):
                x, y, w = env[m[3]], env[m[4]], int(m[5])
                if m[2].startswith("u"):
                    x, y = x & ((1 << w) - 1), y & ((1 << w) - 1)
                env[m[1]] = int({"eq": x == y, "ne": x != y, "slt": x < y, "sle": x <= y, "sgt": x > y,
                                 "sge": x >= y, "ult": x < y, "ule": x <= y, "ugt": x > y, "uge": x >= y}[m[2]])
            elif m := _SELECT.match(op):
                env[m[1]] = env[m[3]] if env[m[2]] else env[m[4]]
            elif m := _BIN.match(op):
                a, b, w = env[m[3]], env[m[4]], int(m[5])
                ua, ub = a & ((1 << w) - 1), b & ((1 << w) - 1)
                fns = {"addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
                       "andi": lambda: a & b, "ori": lambda: a | b, "xori": lambda: a ^ b, "shli": lambda: a << b,
                       "shrui": lambda: ua >> b, "shrsi": lambda: a >> b, "divui": lambda: ua // ub,
                       "remui": lambda: ua % ub, "divsi": lambda: int(a / b), "remsi": lambda: a - int(a / b) * b,
                       "maxsi": lambda: max(a, b), "minsi": lambda: min(a, b)}
                assert m[2] in fns, f"the interpreter does not know arith.{m[2]}"
                env[m[1]] = _wrap(fns[m[2]](), w)
            elif m := _MBAR_INIT.match(op):
                events.append(env[m[2]])
            elif m := _BR.match(op):
                name, incoming = m[1], [env[v] for v in _operands(m[2])]
                break
            elif m := _COND_BR.match(op):
                taken = (m[2], m[3]) if env[m[1]] else (m[4], m[5])
                name, incoming = taken[0], [env[v] for v in _operands(taken[1])]
                break
            elif op.startswith("llvm.return"):
                return events
            else:
                ignored = re.match(r"^(%\S+ = )?(llvm\.mlir\.addressof|nvvm\.)", op)
                assert ignored, f"the interpreter does not know: {op}"
        else:
            raise AssertionError(f"block {name} has no terminator")
    raise AssertionError("the kernel did not return")


def _trace_error(kernel_fn, match, *kargs):
    with pytest.raises(TraceError, match=match) as info:
        compile_kernel(kernel_fn, *(kargs or (Int32(4),)))
    return str(info.value)
