"""``PipelineState`` arithmetic against a model: static states on the host, traced states by evaluating the
traced arith ops of a kernel (a small interpreter), and states carried through run-time loops and branches."""

import re

import pytest

import cute_py as cute
from cute_py import pipeline
from cute_py.compiler import TraceError
from cute_py.pipeline import PipelineState, PipelineUserType, make_pipeline_state


def model(stages, start_phase, k):
    """(index, phase, count) after ``k`` advances from index 0: written from the definition, not the code."""
    return k % stages, start_phase ^ ((k // stages) % 2), k


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("user, phase0", [(PipelineUserType.Producer, 1), (PipelineUserType.Consumer, 0),
                                          (PipelineUserType.ProducerConsumer, 1)])
def test_static_advances_follow_the_model(stages, user, phase0):
    s = make_pipeline_state(user, stages)
    assert (s.index, s.phase, s.count, s.stages) == (0, phase0, 0, stages)
    for k in range(1, 5 * stages + 3):
        s.advance()
        assert (s.index, s.phase, s.count) == model(stages, phase0, k), k
    # reverse walks back exactly
    for k in range(5 * stages + 1, -1, -1):
        s.reverse()
        assert (s.index, s.phase, s.count) == model(stages, phase0, k), k


def test_clone_is_independent_and_reset_count_keeps_the_stage():
    s = make_pipeline_state(PipelineUserType.Consumer, 3)
    for _ in range(4):
        s.advance()
    c = s.clone()
    c.advance()
    assert (s.index, s.phase, s.count) == (1, 1, 4)
    assert (c.index, c.phase, c.count) == (2, 1, 5)
    s.reset_count()
    assert (s.index, s.phase, s.count) == (1, 1, 0)


def test_static_count_wraps_like_an_int32():
    s = PipelineState(2, (1 << 31) - 1, 1, 0)
    s.advance()
    assert (s.index, s.phase, s.count) == (0, 1, -(1 << 31))


@pytest.mark.parametrize("args, fragment", [
    ((0, 0, 0, 0), "static positive number of stages"),
    ((3, 0, 3, 0), "index must lie in [0, 3)"),
    ((3, 0, -1, 0), "index must lie in [0, 3)"),
    ((3, 0, 0, 2), "phase must lie in [0, 2)"),
    ((3, 0.5, 0, 0), "count must be an int or a traced Int32"),
    ((3, 1 << 31, 0, 0), "does not fit"),
])
def test_bad_states_are_rejected(args, fragment):
    with pytest.raises(TraceError, match=re.escape(fragment)):
        PipelineState(*args)


def test_make_pipeline_state_rejects_bad_arguments():
    with pytest.raises(TraceError, match="PipelineUserType"):
        make_pipeline_state("Producer", 2)
    with pytest.raises(TraceError, match="static positive number of stages"):
        make_pipeline_state(PipelineUserType.Producer, 2.0)


# -- traced states: the kernel's MLIR, interpreted --------------------------------------------------------------

SENTINELS = {0x51D0: "index", 0x51D1: "phase", 0x51D2: "count"}
_LABEL = re.compile(r"^\s*(\^bb\d+)(?:\((.*?)\))?:")
_OP = re.compile(r"^\s*(%\S+) = arith\.(\w+) (.*?) : (i\d+)(?: to (i\d+))?$")
_CONST = re.compile(r"^\s*(%\S+) = arith\.constant (-?\d+|true|false)(?: : i\d+)?$")
_TARGET = re.compile(r"(\^bb\d+)(?:\(([^:)]*?)(?: : [^)]*)?\))?")


def _wrap(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if bits > 1 and v >> (bits - 1) else v


def _blocks(mlir):
    """``{label: (parameter names, lines)}`` of the kernel function (its entry block is ``^entry``)."""
    body = mlir[mlir.index("llvm.func @"):].splitlines()[1:]
    blocks, label, params, lines = {}, "^entry", [], []
    for line in body:
        m = _LABEL.match(line)
        if m:
            blocks[label] = (params, lines)
            label, lines = m[1], []
            params = [p.split(":")[0].strip() for p in m[2].split(",")] if m[2] else []
        else:
            lines.append(line)
    blocks[label] = (params, lines)
    return blocks


def _arith(env, m):
    op, rest, ty = m[2], m[3], m[4]
    bits = int(ty[1:])
    if op == "cmpi":
        pred, a, b = re.match(r"(\w+), (%\S+), (%\S+)", rest).groups()
        x, y = env[a], env[b]
        if pred.startswith("u"):
            x, y = x % (1 << bits), y % (1 << bits)
        return int({"eq": x == y, "ne": x != y, "slt": x < y, "sle": x <= y, "sgt": x > y, "sge": x >= y,
                    "ult": x < y, "ule": x <= y, "ugt": x > y, "uge": x >= y}[pred])
    ops = [env[v.strip()] for v in rest.split(",")]
    if op == "select":
        return ops[1] if ops[0] else ops[2]
    if op in ("extsi", "extui", "trunci"):
        dst = int(m[5][1:])
        return ops[0] % (1 << bits) if op == "extui" else _wrap(ops[0], dst)
    a, b = ops
    ua, ub = a % (1 << bits), b % (1 << bits)
    fns = {"addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b, "xori": lambda: a ^ b,
           "andi": lambda: a & b, "ori": lambda: a | b, "divsi": lambda: int(a / b),
           "remsi": lambda: a - int(a / b) * b,
           "divui": lambda: ua // ub, "remui": lambda: ua % ub, "shli": lambda: a << b, "shrui": lambda: ua >> b,
           "shrsi": lambda: a >> b}
    assert op in fns, f"the interpreter does not know arith.{op}"
    v = fns[op]()
    return _wrap(v, bits) if bits > 1 else v & 1


def evaluate(mlir, args, max_steps=100000):
    """Run the kernel's arith ops and LLVM branches with ``%argN = args[N]``: ``{"index", "phase", "count"}``, the
    values the kernel compares with the sentinels (every other op is skipped)."""
    blocks = _blocks(mlir)
    env = {f"%arg{i}": v for i, v in enumerate(args)}
    out, label, steps = {}, "^entry", 0
    while True:
        steps += 1
        assert steps < max_steps, "the kernel did not finish"
        for line in blocks[label][1]:
            m = _CONST.match(line)
            if m:
                env[m[1]] = {"true": 1, "false": 0}.get(m[2]) if m[2] in ("true", "false") else int(m[2])
                continue
            m = _OP.match(line)
            if m:
                env[m[1]] = _arith(env, m)
                if m[2] == "cmpi" and m[3].startswith("eq,"):
                    a, b = [v.strip() for v in m[3][3:].split(",")]
                    if env[b] in SENTINELS:
                        out[SENTINELS[env[b]]] = env[a]
                continue
            assert "arith." not in line, f"the interpreter does not know {line.strip()}"
            text = line.strip()
            if text.startswith("llvm.return"):
                return out
            if text.startswith("llvm.br ") or text.startswith("llvm.cond_br "):
                targets = _TARGET.findall(text)
                if text.startswith("llvm.cond_br "):
                    cond = env[text.split()[1].rstrip(",")]
                    target = targets[0] if cond else targets[1]
                else:
                    target = targets[0]
                values = [env[v.strip()] for v in target[1].split(",")] if target[1] else []
                params = blocks[target[0]][0]
                assert len(params) == len(values), text
                env.update(zip(params, values))
                label = target[0]
                break
        else:
            raise AssertionError(f"block {label} has no terminator")


def _compile(stages, advances, reverses=0, run_time=False):
    """The kernel's MLIR, and the values that stayed static (a 1-stage index is always 0): ``advances`` then
    ``reverses`` from a run-time start state (``n``), unrolled or (``run_time``) in run-time loops of ``m``
    and ``m2`` iterations."""
    statics = {}

    @cute.kernel
    def k(n, m, m2):
        # a run-time start: index n % stages, phase (n // stages) & 1, count n
        s = PipelineState(stages, n, n % stages, (n // stages) & 1)
        if cute.const_expr(run_time):
            for _ in range(m):
                s.advance()
            for _ in range(m2):
                s.reverse()
        else:
            for _ in cute.range_constexpr(advances):
                s.advance()
            for _ in cute.range_constexpr(reverses):
                s.reverse()
        for value, sentinel in ((s.index, 0x51D0), (s.phase, 0x51D1), (s.count, 0x51D2)):
            if cute.const_expr(type(value) is int):
                statics[SENTINELS[sentinel]] = value
            else:
                with cute.compiler.if_(value == sentinel):
                    cute.arch.sync_threads()

    def host(n, m, m2):
        k(n, m, m2).launch(grid=1, block=32)

    return cute.compile(host, cute.Int32(0), cute.Int32(0), cute.Int32(0)).mlir, statics


@pytest.mark.parametrize("stages, advances, reverses", [(1, 5, 0), (2, 7, 0), (3, 11, 4), (4, 17, 17), (5, 23, 9)])
def test_traced_advances_follow_the_model(stages, advances, reverses):
    mlir, statics = _compile(stages, advances, reverses)
    assert ("arith.select" in mlir) == (stages > 1)  # a run-time wrap is a select, not a branch
    assert set(statics) == ({"index"} if stages == 1 else set())
    for start in range(0, 4 * stages + 1):
        got = {**evaluate(mlir, [start, 0, 0]), **statics}
        index, phase, count = model(stages, 0, start + advances - reverses)
        assert got == {"index": index, "phase": phase, "count": count}, (start, got)


@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_a_state_carried_through_run_time_loops_follows_the_model(stages):
    # advanced in one run-time loop and reversed in another: the state is their carried value
    mlir, statics = _compile(stages, 0, 0, run_time=True)
    assert mlir.count("llvm.cond_br") >= 2
    assert set(statics) == ({"index"} if stages == 1 else set())
    for start in (0, 1, stages, 2 * stages + 1):
        for m in range(0, 3 * stages + 2):
            for m2 in (0, 1, stages + 1):
                got = {**evaluate(mlir, [start, m, m2]), **statics}
                index, phase, count = model(stages, 0, start + m - m2)
                assert got == {"index": index, "phase": phase, "count": count}, (start, m, m2, got)


def test_the_evaluator_can_fail():
    # a state that is off by one advance disagrees with the model
    mlir, _ = _compile(3, 4)
    got = evaluate(mlir, [0, 0, 0])
    assert got != dict(zip(("index", "phase", "count"), model(3, 0, 3)))


# -- carried through run-time loops and branches ------------------------------------------------------------


@cute.kernel
def carried_kernel(n, stages, case):
    state = make_pipeline_state(PipelineUserType.Producer, stages)
    if case == "loop":
        for _ in range(n):
            state.advance()
    elif case == "nested":
        for _ in range(n):
            for _ in range(3):
                state.advance()
    elif case == "branch":
        for i in range(n):
            if i % 3 == 1:
                state.advance()
    elif case == "branch_else":
        for i in range(n):
            if i % 2 == 0:
                state.advance()
            else:
                state.advance()
                state.advance()
    elif case == "while":
        i = 0
        while i < n:
            state.advance()
            i += 1
    elif case == "unrolled_round":
        # advancing a whole round per iteration keeps the stage index static
        for _ in range(n):
            for _ in cute.range_constexpr(stages):
                state.advance()
    elif case == "participant":
        p = pipeline.PipelineProducer(None, state)
        for _ in range(n):
            p.advance()
        state = p.current_handle()
    for value, sentinel in ((state.index, 0x51D0), (getattr(state, "phase", 0x51D1), 0x51D1),
                            (state.count, 0x51D2)):
        if cute.const_expr(not isinstance(value, int)):  # a static value is left out of the interpreted ones
            with cute.compiler.if_(value == sentinel):
                cute.arch.sync_threads()


@cute.jit
def carried_host(n: cute.Int32, stages, case):
    carried_kernel(n, stages, case).launch(grid=1, block=32)


def advances(case, n, stages):
    """How many times ``carried_kernel`` advances the state for ``n``."""
    return {"loop": n, "nested": 3 * n, "branch": sum(1 for i in range(n) if i % 3 == 1),
            "branch_else": sum(1 if i % 2 == 0 else 2 for i in range(n)), "while": n,
            "unrolled_round": n * stages, "participant": n}[case]


CASES = ["loop", "nested", "branch", "branch_else", "while", "unrolled_round", "participant"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("stages", [2, 3])
def test_a_state_is_carried_through_run_time_loops_and_branches(case, stages):
    mlir = cute.compile(carried_host, 0, stages, case).mlir
    for n in range(0, 4 * stages + 2):
        got = evaluate(mlir, [n])
        index, phase, count = model(stages, 1, advances(case, n, stages))
        want = {"index": index, "phase": phase, "count": count}
        if case == "unrolled_round":
            del want["index"]  # static 0
        if case == "participant":
            del want["phase"]  # a handle has no phase
        assert got == want, (n, got)


@cute.kernel
def mixed_kernel(n):
    state = make_pipeline_state(PipelineUserType.Consumer, 2)
    if n > 3:
        state = make_pipeline_state(PipelineUserType.Consumer, 3)
    state.advance()


@cute.jit
def mixed_host(n: cute.Int32):
    mixed_kernel(n).launch(grid=1, block=32)


def test_states_of_different_stage_counts_on_two_paths_are_an_error():
    with pytest.raises(TraceError, match="different stage counts on different paths"):
        cute.compile(mixed_host, 0)
