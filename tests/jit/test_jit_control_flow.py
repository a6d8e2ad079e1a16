"""Run-time control flow with values: loop-carried values of ``cute.range``, values out of ``if_`` (and its
``otherwise()``), and ``unroll=``.

Kernels make their results observable through ``arch.mbarrier_init(bar, count)``. The traced MLIR is
FileChecked for its block structure and, to check what it computes, run by a small interpreter of its
blocks, branches and ``arith`` ops (:func:`run_kernel`) against the same computation in Python.
"""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.jit import Float32, Int32, Int64, TraceError


def compile_kernel(kernel_fn, *kargs):
    """Compile a one-launch jit function for ``kernel_fn(*kargs)`` (no device arrays)."""

    def host():
        kernel_fn(*kargs).launch(grid=1, block=32)

    return cute.compile(host)


def kernel_body(mlir):
    return mlir.split("attributes {nvvm.kernel}", 1)[1]


def line_of(marker):
    """The line number of this file's line ending with ``# <marker>``."""
    with open(__file__) as f:
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
                       "remui": lambda: ua % ub, "divsi": lambda: int(a / b), "remsi": lambda: a - int(a / b) * b}
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


# -- loop-carried values -------------------------------------------------------------------------


@cute.kernel
def sum_kernel(n):
    bar = arch.SmemAllocator().allocate_mbarrier()
    loop = cute.range(n, carry=(0,))
    for i, (acc,) in loop:
        loop.next(acc + i)
    (acc,) = loop.result
    arch.mbarrier_init(bar, acc)


def test_a_sum_over_a_run_time_bound_is_carried_through_block_arguments(filecheck, assemble):
    c = compile_kernel(sum_kernel, Int32(10))
    filecheck(kernel_body(c.mlir), [
        "CHECK: %[[ZERO:.*]] = arith.constant 0 : i32",
        "CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}}, %[[ZERO]] : i32, i32)",
        "CHECK: ^[[HEAD]](%[[IV:.*]]: i32, %[[ACC:.*]]: i32):",
        "CHECK: %[[C:.*]] = arith.cmpi slt, %[[IV]], %arg0",
        "CHECK: llvm.cond_br %[[C]], ^[[BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]](%[[ACC]] : i32)",
        "CHECK: ^[[BODY]]:",
        "CHECK: %[[SUM:.*]] = arith.addi %[[ACC]], %[[IV]] : i32",
        "CHECK: %[[NEXT:.*]] = arith.addi %[[IV]], %{{.*}} : i32",
        "CHECK: llvm.br ^[[HEAD]](%[[NEXT]], %[[SUM]] : i32, i32)",
        "CHECK: ^[[EXIT]](%[[RES:.*]]: i32):",
        "CHECK: cute_nvgpu.mbarrier_init\"(%{{.*}}, %[[RES]])",
    ])
    for n in (-3, 0, 1, 2, 7, 100):
        assert run_kernel(c.mlir, [n]) == [sum(range(n))], n
    assemble(c.ptx)
    assert c.ptx.count("mbarrier.init") == 1  # after the loop, once


def test_carried_kinds_keep_their_types_and_widths(filecheck, assemble):
    @cute.kernel
    def k(n, x, f):
        loop = cute.range(n, carry=(0, 1 << 40, Int64(x), True, x > 0, f, 1.5))
        for i, (a, big, wide, t, pos, g, h) in loop:
            loop.next(a + x, big + 1, wide * 2, ~t, pos ^ (i == 3), h, g)  # the floats swap places
        a, big, wide, t, pos, g, h = loop.result
        assert [type(v).__name__ for v in loop.result] == ["TracedInt"] * 3 + ["TracedBool"] * 2 + ["TracedFloat"] * 2
        assert (a.width, big.width, wide.width) == (32, 64, 64)
        bar = arch.SmemAllocator().allocate_mbarrier()
        for v in (a, Int32(big), Int32(wide), cute.jit.select(t, 1, 0), cute.jit.select(pos, 1, 0)):
            arch.mbarrier_init(bar, v)

    c = compile_kernel(k, Int32(5), Int32(3), Float32(2.0))
    filecheck(kernel_body(c.mlir), [
        "CHECK-DAG: %[[BIG:.*]] = arith.constant 1099511627776 : i64",
        "CHECK-DAG: %[[H:.*]] = arith.constant 1.500000e+00 : f32",
        "CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}} : i32, i32, i64, i64, i1, i1, f32, f32)",
        "CHECK: ^[[HEAD]](%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i1, %{{.*}}: i1, "
        "%[[G:.*]]: f32, %[[HH:.*]]: f32):",
        "CHECK: llvm.cond_br %{{.*}}, ^{{bb[0-9]+}}, ^[[EXIT:bb[0-9]+]](%{{.*}} : i32, i64, i64, i1, i1, f32, f32)",
        "CHECK: llvm.br ^[[HEAD]](%{{.*}}, %[[HH]], %[[G]] : i32, i32, i64, i64, i1, i1, f32, f32)",
        "CHECK: ^[[EXIT]](%{{.*}}: i32, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i1, %{{.*}}: i1, %{{.*}}: f32, "
        "%{{.*}}: f32):",
    ])
    for n, x in ((0, 3), (1, -2), (5, 3), (6, 7), (40, 1)):
        flags = [x > 0]
        for i in range(n):
            flags.append(flags[-1] ^ (i == 3))
        expect = [_wrap(n * x, 32), _wrap((1 << 40) + n, 32), _wrap(x << n, 32), int(n % 2 == 0), int(flags[-1])]
        assert run_kernel(c.mlir, [n, x, 2.0]) == expect, (n, x)
    assemble(c.ptx)


def test_a_python_int_that_does_not_fit_in_32_bits_starts_an_i64_carry():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(-(1 << 31), 1 << 31, -(1 << 31) - 1))
        for _, (a, b, c) in loop:
            loop.next(a, b, c)
        assert [v.width for v in loop.result] == [32, 64, 64]

    compile_kernel(k, Int32(2))


def test_nested_loops_and_branches_carry_values_out(filecheck):
    @cute.kernel
    def k(n, m):
        bar = arch.SmemAllocator().allocate_mbarrier()
        outer = cute.range(n, carry=(0, 0))
        for i, (total, hits) in outer:
            inner = cute.range(i, m, carry=(total,))
            for j, (t,) in inner:
                inner.next(t + i * j)
            (total,) = inner.result
            br = cute.jit.if_(i % 3 == 0, carry=(hits,))
            with br:
                br.set(hits + 1)
            (hits,) = br.result
            outer.next(total, hits)
        total, hits = outer.result
        arch.mbarrier_init(bar, total)
        arch.mbarrier_init(bar, hits)

    c = compile_kernel(k, Int32(4), Int32(6))
    body = kernel_body(c.mlir)
    assert body.count("llvm.cond_br") == 3  # two loop headers and the branch
    for n, m in ((0, 5), (1, 1), (4, 6), (7, 3), (9, 12)):
        total = sum(i * j for i in range(n) for j in range(i, m))
        assert run_kernel(c.mlir, [n, m]) == [total, len(range(0, n, 3))], (n, m)


def test_loops_without_carry_still_yield_the_index_and_negative_steps_carry_too():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for i in cute.range(n):
            assert isinstance(i, cute.jit.TracedInt)
            arch.mbarrier_init(bar, i)
        loop = cute.range(n, -1, -2, carry=(0,))
        for i, (acc,) in loop:
            loop.next(acc * 10 + i)
        arch.mbarrier_init(bar, loop.result[0])

    c = compile_kernel(k, Int32(3))
    for n in (-1, 0, 3, 6):
        acc = 0
        for i in range(n, -1, -2):
            acc = acc * 10 + i
        assert run_kernel(c.mlir, [n]) == list(range(n)) + [acc], n


# -- values out of branches ----------------------------------------------------------------------


def test_a_branch_sets_a_value_where_it_runs_and_keeps_the_old_one_elsewhere(filecheck, assemble):
    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        with cute.jit.if_(x > 5, carry=(x, 7)) as br:
            br.set(x * 2, x + 1)
        y, z = br.result
        arch.mbarrier_init(bar, y)
        arch.mbarrier_init(bar, z)

    c = compile_kernel(k, Int32(1))
    filecheck(kernel_body(c.mlir), [
        "CHECK: %[[C:.*]] = arith.cmpi sgt, %arg0",
        "CHECK: %[[SEVEN:.*]] = arith.constant 7 : i32",
        "CHECK: llvm.cond_br %[[C]], ^[[THEN:bb[0-9]+]], ^[[MERGE:bb[0-9]+]](%arg0, %[[SEVEN]] : i32, i32)",
        "CHECK: ^[[THEN]]:",
        "CHECK: %[[Y:.*]] = arith.muli %arg0",
        "CHECK: %[[Z:.*]] = arith.addi %arg0",
        "CHECK: llvm.br ^[[MERGE]](%[[Y]], %[[Z]] : i32, i32)",
        "CHECK: ^[[MERGE]](%[[RY:.*]]: i32, %[[RZ:.*]]: i32):",
        "CHECK: mbarrier_init\"(%{{.*}}, %[[RY]])",
        "CHECK: mbarrier_init\"(%{{.*}}, %[[RZ]])",
    ])
    for x in (-4, 0, 5, 6, 40):
        assert run_kernel(c.mlir, [x]) == ([2 * x, x + 1] if x > 5 else [x, 7]), x
    assemble(c.ptx)


def test_otherwise_traces_the_else_branch(filecheck, assemble):
    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.jit.if_(x < 0, carry=(x, False))
        with br:
            arch.mbarrier_init(bar, 100)
            br.set(-x, True)
        with br.otherwise():
            arch.mbarrier_init(bar, 200)
            br.set(x, x == 0)
        mag, flag = br.result
        arch.mbarrier_init(bar, mag)
        arch.mbarrier_init(bar, cute.jit.select(flag, 1, 0))

    c = compile_kernel(k, Int32(1))
    filecheck(kernel_body(c.mlir), [
        "CHECK: llvm.cond_br %{{.*}}, ^[[THEN:bb[0-9]+]], ^[[ELSE:bb[0-9]+]]{{$}}",
        "CHECK: ^[[THEN]]:",
        "CHECK: llvm.br ^[[MERGE:bb[0-9]+]](%{{.*}}, %{{.*}} : i32, i1)",
        "CHECK: ^[[ELSE]]:",
        "CHECK: llvm.br ^[[MERGE]](%arg0, %{{.*}} : i32, i1)",
        "CHECK: ^[[MERGE]](%{{.*}}: i32, %{{.*}}: i1):  // 2 preds",
    ])
    for x in (-7, -1, 0, 3):
        assert run_kernel(c.mlir, [x]) == [100 if x < 0 else 200, abs(x), int(x <= 0)], x
    assemble(c.ptx)


def test_otherwise_without_carried_values():
    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.jit.if_(x == 3)
        with br:
            arch.mbarrier_init(bar, 1)
        with br.otherwise():
            arch.mbarrier_init(bar, 2)
        arch.mbarrier_init(bar, 3)

    c = compile_kernel(k, Int32(1))
    assert run_kernel(c.mlir, [3]) == [1, 3]
    assert run_kernel(c.mlir, [4]) == [2, 3]


def test_branches_carry_bools_floats_and_i64():
    @cute.kernel
    def k(x, f):
        bar = arch.SmemAllocator().allocate_mbarrier()
        with cute.jit.if_(x == 1, carry=(Int64(x), x > 9, f)) as br:
            br.set(1 << 33, True, 0.25)
        w, t, g = br.result
        assert (w.width, type(t).__name__, type(g).__name__) == (64, "TracedBool", "TracedFloat")
        arch.mbarrier_init(bar, Int32(w >> 32))
        arch.mbarrier_init(bar, cute.jit.select(t, 1, 0))

    c = compile_kernel(k, Int32(1), Float32(1.0))
    assert re.search(r"\^bb\d+\(%\d+: i64, %\d+: i1, %\d+: f32\):", c.mlir)
    assert run_kernel(c.mlir, [1, 1.0]) == [2, 1]
    assert run_kernel(c.mlir, [10, 1.0]) == [0, 1]
    assert run_kernel(c.mlir, [2, 1.0]) == [0, 0]


# -- unrolling -----------------------------------------------------------------------------------


def test_full_unroll_traces_the_body_once_per_iteration_with_python_ints(filecheck):
    seen = []

    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(2, 11, 3, carry=(x,), unroll=True)
        for i, (acc,) in loop:
            seen.append(i)
            arch.mbarrier_init(bar, i)
            loop.next(acc * i)
        arch.mbarrier_init(bar, loop.result[0])
        for i in cute.range(3, unroll="full"):
            arch.mbarrier_init(bar, i + 20)

    c = compile_kernel(k, Int32(3))
    assert seen == [2, 5, 8]
    body = kernel_body(c.mlir)
    assert "llvm.cond_br" not in body and body.count("mbarrier_init") == 7
    filecheck(body, [
        "CHECK: arith.muli %arg0",
        "CHECK: arith.muli",
        "CHECK: %[[R:.*]] = arith.muli",
        "CHECK: mbarrier_init\"(%{{.*}}, %[[R]])",
    ])
    assert run_kernel(c.mlir, [3]) == [2, 5, 8, 3 * 2 * 5 * 8, 20, 21, 22]


def test_full_unroll_of_an_empty_range_gives_the_initial_values():
    @cute.kernel
    def k(x):
        loop = cute.range(5, 5, carry=(x,), unroll=True)
        for _ in loop:
            raise AssertionError("no iteration")
        assert loop.result[0].ir == x.ir

    compile_kernel(k, Int32(3))


def _unroll_kernel(k_unroll, static_trips=None):
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(n if static_trips is None else static_trips, carry=(0,), unroll=k_unroll)
        for i, (acc,) in loop:
            arch.mbarrier_init(bar, i * 7 + 3)  # one mbarrier.init per copy of the body
            loop.next(acc + i)
        arch.mbarrier_init(bar, loop.result[0] + 1000)

    return k


@pytest.mark.parametrize("k", [2, 3, 4])
def test_unroll_k_with_a_run_time_bound_unrolls_by_k_in_ptx(k, filecheck, assemble):
    c = compile_kernel(_unroll_kernel(k), Int32(10))
    filecheck(c.mlir, [
        f"CHECK: #[[UNROLL:loop_unroll[0-9]*]] = #llvm.loop_unroll<count = {k} : i32>",
        "CHECK: #[[ANN:loop_annotation[0-9]*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>",
        "CHECK: llvm.br ^[[HEAD:bb[0-9]+]](",
        "CHECK: ^[[HEAD]](",
        "CHECK: llvm.br ^[[HEAD]](%{{.*}}) {loop_annotation = #[[ANN]]}",
    ])
    # LLVM's runtime unrolling: k copies in the main loop, one in the remainder (a loop for k > 2), one after
    loops = ptx_loops(c.ptx)
    assert [body.count("mbarrier.init") for body in loops] == [k] + [1] * (k > 2)
    assert c.ptx.count("mbarrier.init") == k + 2
    assemble(c.ptx)
    for n in (0, 1, k - 1, k, k + 1, 3 * k + 2, 25):
        assert run_kernel(c.mlir, [n]) == [i * 7 + 3 for i in range(n)] + [sum(range(n)) + 1000], n


def test_unroll_1_forbids_unrolling():
    c = compile_kernel(_unroll_kernel(1), Int32(10))
    assert "#loop_unroll = #llvm.loop_unroll<disable = true>" in c.mlir
    assert "#loop_annotation = #llvm.loop_annotation<unroll = #loop_unroll>" in c.mlir
    assert kernel_body(c.mlir).count("{loop_annotation = #loop_annotation}") == 1
    assert c.ptx.count("mbarrier.init") == 2
    d = compile_kernel(_unroll_kernel(None), Int32(10))
    assert "loop_annotation" not in d.mlir
    assert d.ptx.count("mbarrier.init") > 2  # left to LLVM, which unrolls such a loop


@pytest.mark.parametrize("trips", [64, 66, 3])
def test_unroll_k_with_static_bounds_gives_k_copies(trips, filecheck, assemble):
    k = 4
    c = compile_kernel(_unroll_kernel(k, trips), Int32(0))
    body = kernel_body(c.mlir)
    if trips % k == 0 or trips < k:
        assert body.count("{loop_annotation = ") == 1
    else:
        # a main loop over a multiple of k iterations and a remainder loop that is not unrolled
        assert body.count("{loop_annotation = ") == 2
        filecheck(c.mlir, [
            "CHECK-DAG: #[[COUNT:loop_unroll[0-9]*]] = #llvm.loop_unroll<count = 4 : i32>",
            "CHECK-DAG: #[[NONE:loop_unroll[0-9]*]] = #llvm.loop_unroll<disable = true>",
            "CHECK-DAG: #[[MAIN:loop_annotation[0-9]*]] = #llvm.loop_annotation<unroll = #[[COUNT]]>",
            "CHECK-DAG: #[[REST:loop_annotation[0-9]*]] = #llvm.loop_annotation<unroll = #[[NONE]]>",
            "CHECK: %[[MID:.*]] = arith.constant 64 : i32",
            "CHECK: arith.cmpi {{[su]}}lt, %{{.*}}, %[[MID]]",
            "CHECK: {loop_annotation = #[[MAIN]]}",
            "CHECK: ^[[EXIT:bb[0-9]+]](%[[ACC:.*]]: i32):",
            "CHECK: %[[MID2:.*]] = arith.constant 64 : i32",
            "CHECK: %[[STOP:.*]] = arith.constant 66 : i32",
            "CHECK: llvm.br ^{{bb[0-9]+}}(%[[MID2]], %[[ACC]] : i32, i32)",
            "CHECK: arith.cmpi {{[su]}}lt, %{{.*}}, %[[STOP]]",
            "CHECK: {loop_annotation = #[[REST]]}",
        ])
    copies = c.ptx.count("mbarrier.init") - 1
    assert copies == (trips if trips < k else k + (1 if trips % k else 0))
    assemble(c.ptx)
    assert run_kernel(c.mlir, [0]) == [i * 7 + 3 for i in range(trips)] + [sum(range(trips)) + 1000]


@pytest.mark.parametrize("bounds", [(0, 13, 1), (5, 30, 3), (20, -3, -2), (7, 7, 1), (0, 5, 1), (-9, -1, 1)])
def test_unrolled_loops_compute_what_python_computes(bounds):
    start, stop, step = bounds

    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for unroll in (None, 1, 4, True):
            loop = cute.range(start, stop, step, carry=(x, 1), unroll=unroll)
            for i, (acc, h) in loop:
                loop.next(acc * 3 + i, h ^ (acc + i))
            acc, h = loop.result
            arch.mbarrier_init(bar, acc)
            arch.mbarrier_init(bar, h)

    c = compile_kernel(k, Int32(1))
    for x in (0, 5):
        acc, h = x, 1
        for i in range(start, stop, step):
            acc, h = _wrap(acc * 3 + i, 32), h ^ _wrap(acc + i, 32)
        assert run_kernel(c.mlir, [x]) == [acc, h] * 4, (bounds, x)


def test_static_bounds_split_for_unrolling_visit_every_index_once_in_order():
    cases = [(start, start + span, step, k) for start in (-7, 0, 3) for span in (0, 5, 11, -9, 23)
             for step in (1, 2, -1, -4) for k in (2, 3, 5) if span * step >= 0]

    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for start, stop, step, unroll in cases:
            loop = cute.range(start, stop, step, carry=(x, 0), unroll=unroll)
            for i, (h, count) in loop:
                loop.next(h * 31 + i, count + 1)  # an order-sensitive hash of the indices
            h, count = loop.result
            arch.mbarrier_init(bar, h)
            arch.mbarrier_init(bar, count)

    c = compile_kernel(k, Int32(1))
    expect = []
    for start, stop, step, _ in cases:
        h = 1
        for i in range(start, stop, step):
            h = _wrap(h * 31 + i, 32)
        expect += [h, len(range(start, stop, step))]
    assert run_kernel(c.mlir, [1]) == expect
    split = sum(1 for s, e, st, u in cases if len(range(s, e, st)) > u and len(range(s, e, st)) % u)
    assert split > 10 and kernel_body(c.mlir).count("{loop_annotation = ") == len(cases) + split


def test_unroll_with_carried_values_and_a_run_time_start(assemble):
    @cute.kernel
    def k(lo, hi):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(lo, hi, 2, carry=(0, False), unroll=3)
        for i, (acc, odd) in loop:
            loop.next(acc + i, ~odd)
        acc, odd = loop.result
        arch.mbarrier_init(bar, acc)
        arch.mbarrier_init(bar, cute.jit.select(odd, 1, 0))

    c = compile_kernel(k, Int32(0), Int32(0))
    assemble(c.ptx)
    for lo, hi in ((0, 0), (3, 4), (-5, 20), (1, 100)):
        r = range(lo, hi, 2)
        assert run_kernel(c.mlir, [lo, hi]) == [sum(r), len(r) % 2], (lo, hi)


# -- errors --------------------------------------------------------------------------------------


def _trace_error(kernel_fn, match, *kargs):
    with pytest.raises(TraceError, match=match) as info:
        compile_kernel(kernel_fn, *(kargs or (Int32(4),)))
    return str(info.value)


def test_next_not_called_names_the_loop():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:  # @no-next
            pass

    line = line_of("@no-next")
    _trace_error(k, rf"test_jit_control_flow.py:{line}: cute_py.range loop: the loop body must call loop.next\(...\) "
                    r"with the 1 carried value\(s\) \(i32\)")


def test_next_not_called_in_a_fully_unrolled_iteration():
    @cute.kernel
    def k(n):
        loop = cute.range(3, carry=(n,), unroll=True)
        for i, (acc,) in loop:
            if i < 2:
                loop.next(acc + 1)

    _trace_error(k, r"the loop body must call loop.next")


def test_next_called_twice():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            loop.next(acc + 1)
            loop.next(acc + 2)  # @next-twice

    _trace_error(k, rf":{line_of('@next-twice')}: cute_py.range loop: next\(\) was already called in this iteration")


def test_next_with_the_wrong_number_of_values():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0, n))
        for i, (acc, m) in loop:
            loop.next(acc + 1)  # @next-count

    _trace_error(k, rf":{line_of('@next-count')}: cute_py.range loop: next\(\) takes one value per carried value: "
                    r"2 expected \(i32, i32\), got 1")


@pytest.mark.parametrize("case", ["i64 for i32", "i32 for i64", "bool for i32", "int for bool", "float for i32",
                                  "i32 for f32", "too big", "string"])
def test_next_with_a_value_of_another_kind_or_width(case):
    initial, new, message = {
        "i64 for i32": (lambda n, f: n, lambda n, f: Int64(n), r"must keep the kind of its initial value, an i32 "
                        r"integer, got TracedInt\(i64\) \(cute_py.jit.Int32\(x\) converts an integer\)"),
        "i32 for i64": (lambda n, f: Int64(n), lambda n, f: n, r"an i64 integer, got TracedInt\(i32\)"),
        "bool for i32": (lambda n, f: 0, lambda n, f: n > 1, r"an i32 integer, got TracedBool"),
        "int for bool": (lambda n, f: n > 1, lambda n, f: 1, r"a bool, got int 1"),
        "float for i32": (lambda n, f: n, lambda n, f: f, r"an i32 integer, got TracedFloat"),
        "i32 for f32": (lambda n, f: f, lambda n, f: n, r"an f32 float, got TracedInt\(i32\)"),
        "too big": (lambda n, f: n, lambda n, f: 1 << 31, r"is an i32 integer, and 2147483648 does not fit in 32 bits"),
        "string": (lambda n, f: n, lambda n, f: "x", r"an i32 integer, got str 'x'$"),
    }[case]

    @cute.kernel
    def k(n, f):
        loop = cute.range(n, carry=(initial(n, f),))
        for i, _ in loop:
            loop.next(new(n, f))  # @next-kind

    _trace_error(k, rf":{line_of('@next-kind')}: cute_py.range loop next\(\): carried value 0 .*{message}", Int32(4),
                 Float32(1.0))


def test_a_python_scalar_of_the_carried_kind_is_converted():
    @cute.kernel
    def k(n, f):
        loop = cute.range(n, carry=(Int64(n), n > 0, f))
        for i, _ in loop:
            loop.next(1 << 40, False, 2)
        assert loop.result[0].width == 64

    c = compile_kernel(k, Int32(4), Float32(1.0))
    assert "arith.constant 1099511627776 : i64" in c.mlir and "arith.constant 2.000000e+00 : f32" in c.mlir


def test_result_before_the_loop_ran_and_during_it():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        loop.result  # @early-result

    _trace_error(k, rf":{line_of('@early-result')}: cute_py.range loop: result is only known after the loop has "
                    r"been traced \(the loop is not iterated yet\)")

    @cute.kernel
    def k2(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            loop.result  # @inner-result

    _trace_error(k2, rf":{line_of('@inner-result')}: .*the loop is still being traced")


def test_next_outside_the_body_and_without_carry():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            loop.next(acc)
        loop.next(1)  # @late-next

    _trace_error(k, rf":{line_of('@late-next')}: cute_py.range loop: next\(\) must be called inside the loop body "
                    r"\(the loop is already finished\)")

    @cute.kernel
    def k2(n):
        loop = cute.range(n)
        for i in loop:
            loop.next(i)  # @no-carry-next
        loop.result

    _trace_error(k2, rf":{line_of('@no-carry-next')}: cute_py.range loop: next\(\) needs carried values")

    @cute.kernel
    def k3(n):
        cute.range(n).result  # @no-carry-result

    _trace_error(k3, rf":{line_of('@no-carry-result')}: cute_py.range loop: result needs carried values")


def test_next_inside_a_nested_branch_is_rejected():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            with cute.jit.if_(i == 2):
                loop.next(acc + 1)  # @nested-next

    _trace_error(k, rf":{line_of('@nested-next')}: cute_py.range loop: next\(\) must be called directly in the loop "
                    r"body, not inside the nested if_ branch of .*test_jit_control_flow.py:\d+")


def test_a_loop_object_is_iterated_once():
    @cute.kernel
    def k(n):
        loop = cute.range(n)
        for i in loop:
            pass
        for i in loop:  # @second-iteration
            pass

    _trace_error(k, rf":{line_of('@second-iteration')}: a cute_py.range loop is traced once")


@pytest.mark.parametrize("unroll, message", [
    (0, r"unroll must be None, an int >= 1, True or \"full\", got 0"),
    (-2, r"unroll must be .*, got -2"),
    (2.0, r"unroll must be .*, got 2.0"),
    (False, r"unroll must be .*, got False"),
    ("all", r"unroll must be .*, got 'all'"),
])
def test_invalid_unroll_values(unroll, message):
    @cute.kernel
    def k(n):
        for i in cute.range(n, unroll=unroll):  # @bad-unroll
            pass

    _trace_error(k, rf":{line_of('@bad-unroll')}: cute_py.range: {message}")


def test_full_unroll_needs_static_bounds():
    @cute.kernel
    def k(n):
        for i in cute.range(n, unroll=True):
            pass

    _trace_error(k, r"cute_py.range\(unroll=True\) unrolls at trace time and needs static int bounds, got start=0, "
                    r"stop=TracedInt\(i32\)")


@pytest.mark.parametrize("carry, message", [
    ("x", r"carry= takes a tuple of initial values, got 'x'"),
    (("x",), r"carried value 0 must be a traced Int32/Int64, bool or Float32 \(or a Python int, bool or float\), "
             r"got str 'x'"),
    ((1, 1 << 64), r"carried value 1 must be .*got int 18446744073709551616"),
    ((None,), r"carried value 0 must be .*, got NoneType None"),
])
def test_invalid_initial_carried_values(carry, message):
    @cute.kernel
    def k(n):
        for _ in cute.range(n, carry=carry):
            pass

    _trace_error(k, rf"cute_py.range: {message}")


def test_break_out_of_a_fully_unrolled_loop_leaves_it_unfinished():
    @cute.kernel
    def k(n):
        for i in cute.range(4, unroll=True):
            break

    _trace_error(k, r"this cute_py.range loop was left without finishing its body")


def test_set_not_called():
    @cute.kernel
    def k(n):
        with cute.jit.if_(n == 1, carry=(n,)):  # @no-set
            pass

    _trace_error(k, rf":{line_of('@no-set')}: if_ branch: the branch body must call br.set\(...\) with the 1 carried "
                    r"value\(s\) \(i32\); it was not called")


def test_set_twice_with_the_wrong_count_or_kind():
    @cute.kernel
    def twice(n):
        with cute.jit.if_(n == 1, carry=(n,)) as br:
            br.set(1)
            br.set(2)  # @set-twice

    _trace_error(twice, rf":{line_of('@set-twice')}: if_ branch: set\(\) was already called in this branch body")

    @cute.kernel
    def count(n):
        with cute.jit.if_(n == 1, carry=(n,)) as br:
            br.set(1, 2)  # @set-count

    _trace_error(count, rf":{line_of('@set-count')}: if_ branch: set\(\) takes one value per carried value: 1 expected "
                        r"\(i32\), got 2")

    @cute.kernel
    def kind(n):
        with cute.jit.if_(n == 1, carry=(n,)) as br:
            br.set(Int64(n))  # @set-kind

    _trace_error(kind, rf":{line_of('@set-kind')}: if_ branch set\(\): carried value 0 must keep the kind of its "
                       r"initial value, an i32 integer, got TracedInt\(i64\)")


def test_set_in_the_wrong_place():
    @cute.kernel
    def nested(n):
        with cute.jit.if_(n == 1, carry=(n,)) as br:
            for i in cute.range(n):
                br.set(i)  # @nested-set

    _trace_error(nested, rf":{line_of('@nested-set')}: if_ branch: set\(\) must be called directly in the branch body, "
                         r"not inside the nested cute_py.range loop")

    @cute.kernel
    def late(n):
        with cute.jit.if_(n == 1, carry=(n,)) as br:
            br.set(n + 1)
        br.set(n)  # @late-set

    _trace_error(late, rf":{line_of('@late-set')}: if_ branch: set\(\) must be called inside the branch's `with` body "
                       r"\(the branch is already closed\)")

    @cute.kernel
    def uncarried(n):
        with cute.jit.if_(n == 1) as br:
            br.set(n)  # @uncarried-set

    _trace_error(uncarried, rf":{line_of('@uncarried-set')}: if_ branch: set\(\) needs carried values")


def test_branch_result_before_the_with_block_ends():
    @cute.kernel
    def early(n):
        br = cute.jit.if_(n == 1, carry=(n,))
        br.result  # @branch-early

    _trace_error(early, rf":{line_of('@branch-early')}: if_ branch: result is only known after the branch's `with` "
                        r"block \(the branch is not entered yet\)")

    @cute.kernel
    def inside(n):
        with cute.jit.if_(n == 1, carry=(n,)) as br:
            br.set(n)
            br.result  # @branch-inside

    _trace_error(inside, rf":{line_of('@branch-inside')}: .*the branch is still being traced")


def test_otherwise_must_follow_the_branch_directly_and_once():
    @cute.kernel
    def gap(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.jit.if_(n == 1)
        with br:
            pass
        arch.mbarrier_init(bar, 1)
        with br.otherwise():  # @otherwise-gap
            pass

    _trace_error(gap, rf":{line_of('@otherwise-gap')}: if_ branch: otherwise\(\) must come right after the "
                      r"`with if_\(...\)` block, with no operation traced in between")

    @cute.kernel
    def twice(n):
        br = cute.jit.if_(n == 1)
        with br:
            pass
        with br.otherwise():
            pass
        with br.otherwise():  # @otherwise-twice
            pass

    _trace_error(twice, rf":{line_of('@otherwise-twice')}: if_ branch: otherwise\(\) follows the branch's closed "
                        r"`with` block, once \(the branch is done\)")

    @cute.kernel
    def first(n):
        br = cute.jit.if_(n == 1)
        with br.otherwise():  # @otherwise-first
            pass

    _trace_error(first, rf":{line_of('@otherwise-first')}: .*\(the branch is new\)")

    @cute.kernel
    def no_set(n):
        br = cute.jit.if_(n == 1, carry=(n,))
        with br:
            br.set(n + 1)
        with br.otherwise():  # @otherwise-no-set
            pass

    _trace_error(no_set, rf":{line_of('@otherwise-no-set')}: if_ branch: the branch body must call br.set")


def test_a_branch_object_is_entered_once():
    @cute.kernel
    def k(n):
        br = cute.jit.if_(n == 1)
        with br:
            pass
        with br:  # @branch-twice
            pass

    _trace_error(k, rf":{line_of('@branch-twice')}: an if_ branch is traced once")


def test_invalid_branch_carry():
    @cute.kernel
    def k(n):
        with cute.jit.if_(n == 1, carry=(n, [1])):
            pass

    _trace_error(k, r"if_: carried value 1 must be a traced Int32/Int64, bool or Float32 .*got list \[1\]")


def test_a_value_defined_in_a_branch_cannot_be_carried_out_of_an_enclosing_loop():
    # values must be defined in the body or before the loop: one from a nested branch does not dominate the back edge
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            with cute.jit.if_(i == 1):
                inner = acc + 5
            loop.next(inner)

    with pytest.raises(cute.jit.CompileError, match="dominate"):
        compile_kernel(k, Int32(3))


def test_the_interpreter_on_a_loop_free_kernel():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_init(bar, (n * 12 + 5) // 5 % 7)

    c = compile_kernel(k, Int32(1))
    for n in (-9, 0, 9):
        assert run_kernel(c.mlir, [n]) == [(n * 12 + 5) // 5 % 7], n
