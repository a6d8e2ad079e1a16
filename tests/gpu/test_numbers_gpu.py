"""The law of the kernel language's numbers: random expressions over random numeric types, traced, compiled and run
on the device, equal bit for bit to an independent host model (``_numbers_reference``: the CuTe DSL's promotion,
wrapping integers, Python's floor division, IEEE round-to-nearest-even, saturating float-to-integer conversions) on
every element — inputs drawn from all bit patterns (NaN, infinities, subnormals, extreme integers) and from small
values. NaN results compare as NaN (the payload is not specified).

The host model is itself checked against numpy here (everywhere); every expression's PTX is built and assembled
(everywhere); the launch needs a Hopper GPU and torch and is skipped with the reason otherwise.
"""

import math
import os

import pytest

np = pytest.importorskip("numpy", reason="the model and the comparison use numpy")

import _numbers_reference as ref  # noqa: E402

TYPES = list(ref.INTS) + list(ref.FLOATS)
N = 1024
EXAMPLES = int(os.environ.get("CUTE_PY_LAW_EXAMPLES", "12"))


# -- the model, checked against numpy -------------------------------------------------------------


@pytest.mark.parametrize("t, np_type", [("Float16", "float16"), ("Float32", "float32")])
def test_the_models_rounding_is_numpys(t, np_type):
    rng = np.random.default_rng(1)
    wide = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-45, 40, 2000),
                           rng.integers(-(1 << 62), 1 << 62, 500).astype(np.float64)])
    with np.errstate(over="ignore"):
        want = wide.astype(np_type).astype(np.float64)
    got = np.array([ref.round_to(float(x), t) for x in wide])
    assert np.array_equal(got, want), wide[np.nonzero(got != want)[0][:3]]


def test_the_models_bfloat16_is_float32_with_the_16_low_bits_rounded_off():
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 1 << 32, 5000, dtype=np.uint64).astype(np.uint32)
    xs = bits.view(np.float32)
    for b, x in zip(bits, xs):
        if math.isnan(x):
            continue
        r = ref.round_to(float(x), "BFloat16")
        low, high = int(b) & 0xFFFF, int(b) >> 16
        up = low > 0x8000 or (low == 0x8000 and high & 1)
        want_bits = (high + up) << 16
        want = float(np.array([want_bits], dtype=np.uint32).view(np.float32)[0])
        assert r == want or (math.isinf(r) and math.isinf(want)), (hex(int(b)), r, want)


def test_the_models_integer_rules():
    assert ref.wrap(1 << 31, "Int32") == -(1 << 31) and ref.wrap(-1, "Uint8") == 255
    assert ref.binary("floordiv", ("Int32", [-7]), ("Int32", [2])) == ("Int32", [-4])
    assert ref.binary("mod", ("Int32", [-7]), ("Int32", [2])) == ("Int32", [1])
    assert ref.binary("lshift", ("Int8", [1]), ("Int8", [9])) == ("Int8", [0])
    assert ref.binary("rshift", ("Int16", [-5]), ("Int16", [40])) == ("Int16", [-1])
    assert ref.binary("add", ("Uint32", [5]), ("Int32", [-6])) == ("Uint32", [(1 << 32) - 1])
    assert ref.convert([300.7, -1e9, math.nan, math.inf], "Float32", "Int8") == [127, -128, 0, 127]
    assert ref.binary("truediv", ("Int32", [1]), ("Int32", [3]))[0] == "Float32"


# -- random expressions ---------------------------------------------------------------------------

INT_CONSTS = (0, 1, -1, 3, 7, -5, 100, 255)
FLOAT_CONSTS = (0.5, -1.25, 3.0, 1e-3, 65504.0)


def _type_of(tree, ta, tb):
    """The result type of ``tree`` (the model's promotion), or raise ValueError when it is not well typed."""
    kind = tree[0]
    if kind == "a":
        return ta
    if kind == "b":
        return tb
    if kind == "const":
        return ref.python_type(tree[1])
    if kind == "to":
        _type_of(tree[2], ta, tb)
        return tree[1]
    if kind == "un":
        return _type_of(tree[2], ta, tb)
    if kind == "pow":
        return ref.promote(_type_of(tree[1], ta, tb), "Int32")
    l, r = _type_of(tree[2], ta, tb), _type_of(tree[3], ta, tb)
    op = tree[1]
    if kind == "cmp":
        ref.promote(l, r, arithmetic=False)
        return "Boolean"
    if kind in ("idiv", "shift"):  # integer operations with a safe right operand built from r
        if ref.is_float(l) or ref.is_float(r):
            raise ValueError("integers only")
        # the right operand is masked into range by `& 15 | 1` or `& 63` (Int32 constants) first
        return ref.promote(l, ref.promote(r, "Int32", arithmetic=False), arithmetic=kind == "idiv")
    if op in ("and", "or", "xor") and (ref.is_float(l) or ref.is_float(r)):
        raise ValueError("integers only")
    if op == "floordiv" and not ref.is_float(ref.promote(l, r)):
        raise ValueError("integer floor division goes through idiv")
    t = ref.promote(l, r, arithmetic=op not in ("and", "or", "xor"))
    return "Float32" if op == "truediv" and not ref.is_float(t) else t


def _draw_tree(draw, st, depth):
    leaves = st.one_of(st.just(("a",)), st.just(("b",)),
                       st.sampled_from(INT_CONSTS + FLOAT_CONSTS).map(lambda c: ("const", c)))
    if depth == 0:
        return draw(leaves)
    kind = draw(st.sampled_from(["leaf", "bin", "bin", "un", "to", "idiv", "shift", "pow"]))
    if kind == "leaf":
        return draw(leaves)
    sub = lambda: _draw_tree(draw, st, depth - 1)  # noqa: E731
    if kind == "bin":
        return ("bin", draw(st.sampled_from(["add", "sub", "mul", "truediv", "floordiv", "and", "or", "xor"])),
                sub(), sub())
    if kind == "un":
        return ("un", draw(st.sampled_from(["neg", "abs"])), sub())
    if kind == "to":
        return ("to", draw(st.sampled_from(TYPES)), sub())
    if kind == "idiv":
        return ("idiv", draw(st.sampled_from(["floordiv", "mod"])), sub(), sub())
    if kind == "shift":
        return ("shift", draw(st.sampled_from(["lshift", "rshift"])), sub(), sub())
    return ("pow", sub(), draw(st.integers(0, 3)))


def evaluate(tree, x, y, to, binop, unop, const):
    """``tree`` over the operands ``x``, ``y``: in a kernel (traced values) or in the model (``to``, ``binop``...
    say how)."""
    kind = tree[0]
    if kind == "a":
        return x
    if kind == "b":
        return y
    if kind == "const":
        return const(tree[1])
    if kind == "to":
        return to(evaluate(tree[2], x, y, to, binop, unop, const), tree[1])
    if kind == "un":
        return unop(tree[1], evaluate(tree[2], x, y, to, binop, unop, const))
    if kind == "pow":
        base = evaluate(tree[1], x, y, to, binop, unop, const)
        return binop("pow", base, tree[2])
    left = evaluate(tree[2], x, y, to, binop, unop, const)
    right = evaluate(tree[3], x, y, to, binop, unop, const)
    if kind == "idiv":  # a divisor in 1..15, whatever the right operand
        right = binop("or", binop("and", right, const(15)), const(1))
    if kind == "shift":  # a shift amount in 0..63: at or beyond the width of narrow types
        right = binop("and", right, const(63))
    return binop(tree[1], left, right)


def _has_operand(tree):
    return tree[0] in ("a", "b") or any(isinstance(t, tuple) and _has_operand(t) for t in tree[1:])


def _traced_everywhere(tree):
    """True when every operation of ``tree`` has a traced operand (constants alone are Python's arithmetic)."""
    kind = tree[0]
    if kind in ("a", "b", "const"):
        return True
    children = [t for t in tree[1:] if isinstance(t, tuple)]
    if not _has_operand(tree):
        return False
    return all(_traced_everywhere(c) for c in children if c[0] != "const")


def _model(tree, a, b):
    def binop(op, p, q):
        if op == "pow":  # as traced: the base in its promoted type, then repeated squaring
            t = ref.promote(p[0], "Int32")
            p = (t, ref.convert(p[1], p[0], t))
            if q == 0:
                return t, ref.convert([1] * N, "Int32", t)
            if q == 1:
                return p
            square = ref.binary("mul", p, p)
            return square if q == 2 else ref.binary("mul", p, square)
        return ref.binary(op, p, q)

    return evaluate(tree, a, b, lambda v, t: (t, ref.convert(v[1], v[0], t)), binop, ref.unary,
                    lambda c: ref.constant(c, N))


def _traced(tree, x, y):
    import cute_py as cute

    ops = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
           "truediv": lambda p, q: p / q, "floordiv": lambda p, q: p // q, "mod": lambda p, q: p % q,
           "and": lambda p, q: p & q, "or": lambda p, q: p | q, "xor": lambda p, q: p ^ q,
           "lshift": lambda p, q: p << q, "rshift": lambda p, q: p >> q, "pow": lambda p, q: p ** q,
           "lt": lambda p, q: p < q, "le": lambda p, q: p <= q, "gt": lambda p, q: p > q,
           "ge": lambda p, q: p >= q, "eq": lambda p, q: p == q, "ne": lambda p, q: p != q}
    return evaluate(tree, x, y, lambda v, t: v.to(getattr(cute, t)), lambda op, p, q: ops[op](p, q),
                    lambda op, p: -p if op == "neg" else abs(p), lambda c: c)


# -- host data ------------------------------------------------------------------------------------

STORAGE = {"Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64", "Uint8": "uint8",
           "Uint16": "uint16", "Uint32": "uint32", "Uint64": "uint64", "Float16": "float16",
           "BFloat16": "uint16", "Float32": "float32", "Float64": "float64", "Boolean": "bool"}
BITS = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def _inputs(t, rng):
    """``(storage array, model elements)``: half of every bit pattern, half small values."""
    if ref.is_float(t):
        w = ref.width(t)
        raw = rng.integers(0, 1 << w, N, dtype=np.uint64).astype(BITS[w])
        small = [ref.round_to(float(v), t) for v in rng.standard_normal(N // 2) * 4]
        if t == "BFloat16":
            values = [float(v) for v in (raw.astype(np.uint32) << 16).view(np.float32)]
            small_bits = [int(np.array([v], np.float32).view(np.uint32)[0]) >> 16 for v in small]
            raw[: N // 2] = small_bits
            values[: N // 2] = small
            return raw, values
        data = raw.view(STORAGE[t])
        data[: N // 2] = small
        return data, [float(v) for v in data]
    w, signed = ref.INTS[t]
    raw = rng.integers(0, 1 << w, N, dtype=np.uint64) if w < 64 else \
        rng.integers(0, 1 << 63, N, dtype=np.uint64) * 2 + rng.integers(0, 2, N, dtype=np.uint64)
    values = [ref.wrap(int(v), t) for v in raw]
    values[: N // 2] = [ref.wrap(int(v), t) for v in rng.integers(-20, 21, N // 2)]
    return np.array(values, dtype=STORAGE[t]), values


def _bits(t, values):
    """Comparable host forms of elements of ``t``: ints as ints, floats as their bits (NaN as "nan")."""
    if not ref.is_float(t):
        return [int(v) for v in values]
    out = []
    for v in values:
        if math.isnan(v):
            out.append("nan")
        elif t == "BFloat16":
            out.append(int(np.array([v], np.float32).view(np.uint32)[0]) >> 16)
        else:
            out.append(int(np.array([v], STORAGE[t]).view(BITS[ref.width(t)])[0]))
    return out


def _got(t, tensor):
    host = tensor.cpu()
    if t == "BFloat16":
        import torch

        return [float(v) for v in host.float().numpy()]
    if t == "Boolean":
        return [int(v) for v in host.numpy()]
    return host.numpy().tolist()


def _hopper_torch():
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    if not torch.cuda.is_available():
        return None, "no CUDA device"
    if torch.cuda.get_device_capability()[0] != 9:
        return None, f"needs a Hopper (sm_90) GPU, found {torch.cuda.get_device_capability()}"
    return torch, None


def _to_device(torch, t, data):
    tensor = torch.from_numpy(np.ascontiguousarray(data)).cuda()
    return tensor.view(torch.bfloat16) if t == "BFloat16" else tensor


def _empty(torch, t):
    if t == "BFloat16":
        return torch.full((N,), -1, dtype=torch.int16, device="cuda").view(torch.bfloat16)
    if t == "Boolean":
        return torch.zeros((N,), dtype=torch.bool, device="cuda")
    return torch.from_numpy(np.zeros(N, dtype=STORAGE[t])).cuda()


def _host_fn(tree):
    import cute_py as cute

    @cute.kernel
    def expression_kernel(a, b, out):
        tx, _, _ = cute.arch.thread_idx()
        bx, _, _ = cute.arch.block_idx()
        i = bx * 128 + tx
        out[i] = _traced(tree, a[i], b[i])

    @cute.jit
    def expression(a, b, out):
        expression_kernel(a, b, out).launch(grid=N // 128, block=128)

    return expression


@pytest.mark.gpu
def test_random_expressions_equal_the_model_bit_for_bit(assemble_ptx):
    pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings")
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    import cute_py as cute
    from cute_py.compiler import DeviceArraySpec

    torch, why = _hopper_torch()
    counts = {"compiled": 0, "launched": 0, "elements": 0}

    @hypothesis.settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.data())
    def check(data):
        ta, tb = data.draw(st.sampled_from(TYPES)), data.draw(st.sampled_from(TYPES))
        tree = _draw_tree(data.draw, st, 3)
        if data.draw(st.booleans()):
            tree = ("cmp", data.draw(st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"])), tree,
                    _draw_tree(data.draw, st, 1))
        try:
            tout = _type_of(tree, ta, tb)
        except ValueError:
            hypothesis.assume(False)
        hypothesis.assume(_has_operand(tree) and _traced_everywhere(tree))
        host = _host_fn(tree)
        compiled = cute.compile(host, DeviceArraySpec(ta, (N,)), DeviceArraySpec(tb, (N,)),
                                DeviceArraySpec(tout, (N,)))
        assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"
        counts["compiled"] += 1
        if torch is None:
            return
        rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
        (da, va), (db, vb) = _inputs(ta, rng), _inputs(tb, rng)
        out = _empty(torch, tout)
        host(_to_device(torch, ta, da), _to_device(torch, tb, db), out)
        torch.cuda.synchronize()
        t_model, want = _model(tree, (ta, va), (tb, vb))
        assert t_model == tout
        got, want = _bits(tout, _got(tout, out)), _bits(tout, want)
        bad = [k for k in range(N) if got[k] != want[k]]
        assert not bad, (f"{tree} over a: {ta}, b: {tb} -> {tout}: {len(bad)} of {N} elements differ, first at "
                         f"{bad[0]}: a={va[bad[0]]!r} b={vb[bad[0]]!r} got {got[bad[0]]} want {want[bad[0]]}")
        counts["launched"] += 1
        counts["elements"] += N

    check()
    if torch is None:
        pytest.skip(f"{why}: {counts['compiled']} random expressions traced, compiled and assembled; none launched")
    print(f"{counts['launched']} expressions, {counts['elements']} elements equal to the model")
    assert counts["launched"] > 0
