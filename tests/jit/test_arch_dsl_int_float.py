"""Integer and float instructions by the DSL's ``cute.arch`` names (``popc``, ``clz``, ``bfind``, ``bfe``, ``lop3``,
``prmt``, carry chains, ``fmax``, ``rcp_approx``, ``cvt_*``...): the PTX of each (FileCheck), the result types,
assembly for sm_90a, and the argument rules."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError

I32, U32, I64, U64 = cute.Int32, cute.Uint32, cute.Int64, cute.Uint64


def compile_body(body):
    @cute.kernel
    def k(inp, out, f):
        body(inp, out, f)

    def host(inp, out, f):
        k(inp, out, f).launch(grid=1, block=32)

    spec = cute.compiler.DeviceArraySpec("Int32", (1024,))
    return cute.compile(host, spec, spec, cute.Float32(0.5))


def rejects(body, match):
    with pytest.raises(TraceError, match=match) as info:
        compile_body(body)
    return str(info.value)


def _x(i):
    (x,) = arch.ldg32(i.engine, index=arch.thread_idx()[0])
    return x


def _store(o, values):
    t = arch.thread_idx()[0]
    words = [I32(v) if v.width != 32 else v for v in values]
    for k in range(0, len(words), 8):
        chunk = tuple(words[k:k + 8]) + (0,) * (8 - len(words[k:k + 8]))
        arch.stg256(o.engine + 256 * (k // 8), chunk, index=t)


# (call, PTX, the result type's name)
UNARY = [
    (lambda x: arch.popc(x), "popc.b32", "Int32"), (lambda x: arch.popc(U64(x)), "popc.b64", "Uint64"),
    (lambda x: arch.clz(x), "clz.b32 ", "Uint32"), (lambda x: arch.clz(I64(x)), "clz.b64", "Uint32"),
    (lambda x: arch.bfind(x), "bfind.s32", "Uint32"), (lambda x: arch.bfind(U32(x)), "bfind.u32", "Uint32"),
    (lambda x: arch.bfind(U64(x)), "bfind.u64", "Uint32"), (lambda x: arch.brev(x), "brev.b32", "Int32"),
    (lambda x: arch.brev(U64(x)), "brev.b64", "Uint64"),
    (lambda x: arch.bfe(x, 4, 8), "bfe.s32", "Int32"), (lambda x: arch.bfe(U32(x), x & 7, 3), "bfe.u32", "Uint32"),
    (lambda x: arch.bfe(I64(x), 40, 20), "bfe.s64", "Int64"),
    (lambda x: arch.bfi(x, 0, 8, 4), "bfi.b32", "Int32"), (lambda x: arch.bfi(U64(x), U64(x), 1, 2), "bfi.b64", "Uint64"),
    (lambda x: arch.mul_hi(x, 3), "mul.hi.s32", "Int32"), (lambda x: arch.mul_hi(U64(x), 3), "mul.hi.u64", "Uint64"),
    (lambda x: arch.mul_wide(x, x), "mul.wide.s32", "Int64"), (lambda x: arch.mul_wide(U32(x), 5), "mul.wide.u32", "Uint64"),
    (lambda x: arch.mul_wide(cute.Int16(x), cute.Int16(x)), "mul.wide.s16", "Int32"),
    (lambda x: arch.mul24(x, 7), "mul24.lo.s32", "Int32"), (lambda x: arch.mul24(U32(x), 7, hi=True), "mul24.hi.u32", "Uint32"),
    (lambda x: arch.mad24(x, 7, 1), "mad24.lo.s32", "Int32"),
    (lambda x: arch.add_sat_int(x, 2**31 - 1), "add.sat.s32", "Int32"), (lambda x: arch.sub_sat_int(x, 5), "sub.sat.s32", "Int32"),
    (lambda x: arch.lop3(x, x >> 1, 0x0F0F0F0F, 0xE8), "lop3.b32", "Int32"),
    (lambda x: arch.shf(x, x, 5), "shf.l.wrap.b32", "Int32"), (lambda x: arch.shf(U32(x), 7, 40, "clamp_right"), "shf.r.clamp.b32", "Uint32"),
    (lambda x: arch.shf(x, 1, x, "r"), "shf.r.wrap.b32", "Int32"), (lambda x: arch.shf(x, 1, 3, "clamp_left"), "shf.l.clamp.b32", "Int32"),
    (lambda x: arch.prmt(x, 0x7654, 0x3210), "prmt.b32", "Int32"),
]


@pytest.mark.parametrize("call, ptx, dtype", UNARY, ids=[f"{p.strip()}-{d}" for _, p, d in UNARY])
def test_integer_instructions(call, ptx, dtype, filecheck):
    kinds = []

    def body(i, o, f):
        r = call(_x(i))
        kinds.append(r.dtype.name)
        _store(o, [r])

    c = compile_body(body)
    assert kinds == [dtype]
    filecheck(c.ptx, [f"CHECK: {ptx}"])


def test_all_integer_instructions_assemble_and_carry_chains_stay_in_order(filecheck, assemble):
    def body(i, o, f):
        x = _x(i)
        lo = arch.add_cc(x, 0x7FFFFFFF)
        hi = arch.addc(x >> 31, 0)
        d0 = arch.sub_cc(U64(x), 5)
        d1 = arch.subc(U64(x), 0)
        m0 = arch.mad_cc(x, 3, 1)
        m1 = arch.madc(x, 3, 0)
        _store(o, [call(x) for call, _, _ in UNARY] + [lo, hi, d0, d1, m0, m1])

    c = compile_body(body)
    filecheck(c.ptx, ["CHECK: add.cc.u32", "CHECK-NEXT: // end inline asm", "CHECK: addc.u32", "CHECK: sub.cc.u64",
                      "CHECK: subc.u64", "CHECK: mad.lo.cc.s32", "CHECK: madc.lo.s32"])
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda x, f: arch.popc(f), r"popc takes integers .*, got a traced Float32"),
    (lambda x, f: arch.clz(cute.Int16(x)), r"clz takes Int32, Uint32, Int64, Uint64 operands, got a Int16"),
    (lambda x, f: arch.mul_hi(x, U32(x)), "mul_hi needs operands of one integer type, got Int32, Uint32"),
    (lambda x, f: arch.mul_hi(x, 2**40), r"mul_hi: operand 1 \(1099511627776\) does not fit in a Int32"),
    (lambda x, f: arch.mul_wide(I64(x), 2), "mul_wide takes Int16, Uint16, Int32, Uint32 operands, got a Int64"),
    (lambda x, f: arch.bfe(x, 256, 1), r"bfe: start must lie in \[0, 255\] \(PTX reads 8 bits of it\), got 256"),
    (lambda x, f: arch.bfi(x, x, 0, -1), r"bfi: length must lie in \[0, 255\]"),
    (lambda x, f: arch.lop3(x, x, x, 256), "lop3: lut must be a truth table 0..255, got 256"),
    (lambda x, f: arch.lop3(x, x, x, x), r"lop3: lut must be a static Python int \(a truth table 0..255\)"),
    (lambda x, f: arch.shf(x, x, 1, "left"), "shf: kind must be one of l, r, clamp_left, clamp_right, got 'left'"),
    (lambda x, f: arch.mul24(x, x, hi=1), "mul24: hi must be True or False, got 1"),
    (lambda x, f: arch.add_sat_int(U32(x), 1), "add_sat_int takes Int32 operands, got a Uint32"),
    (lambda x, f: arch.add_cc(x, 1.5), r"add_cc takes integers .*, got 1.5"),
])
def test_integer_rules(call, match):
    rejects(lambda i, o, f: call(_x(i), f), match)


# -- floats -----------------------------------------------------------------------------------------------


def test_float_instructions(filecheck, assemble):
    kinds = {}

    def body(i, o, f):
        g = cute.Float32(_x(i))
        r = (arch.fmax(f, g), arch.fmin(f, g, nan=True), arch.fmax(f, -1.0, abs=True, ftz=True), arch.rcp_approx(g),
             arch.exp2(f), arch.fmin(2, f))
        tf32 = arch.cvt_f32_tf32(g)
        b = arch.cvt_f32_bf16(g)
        pair = arch.cvt_f32x2_bf16x2((g, 3.0e38 * f))
        kinds.update(fmax=r[0].dtype.name, tf32=tf32.dtype.name, bf16=b.dtype.name, pair=pair.dtype.name)
        _store(o, [I32(v) for v in r] + [tf32, I32(b), I32(pair[0]), I32(pair[1])])

    c = compile_body(body)
    assert kinds == {"fmax": "Float32", "tf32": "Int32", "bf16": "BFloat16", "pair": "BFloat16"}
    filecheck(c.ptx, [
        "CHECK: max.f32 ", "CHECK: min.NaN.f32", "CHECK: max.ftz.xorsign.abs.f32", "CHECK: rcp.approx.ftz.f32",
        "CHECK: ex2.approx.ftz.f32", "CHECK: min.f32", "CHECK: cvt.rna.tf32.f32", "CHECK: cvt.rn.bf16.f32",
        # satfinite (PTX ISA 8.1) as a clamp to the largest finite BFloat16, NaN kept, then a plain cvt
        "CHECK: max.NaN.f32 %hi, {{%r[0-9]+}}, 0fFF7F0000;", "CHECK-NEXT: min.NaN.f32 %hi, %hi, 0f7F7F0000;",
        "CHECK: cvt.rn.bf16x2.f32 {{%r[0-9]+}}, %hi, %lo;",
    ])
    assemble(c.ptx)


def test_int8_conversions_are_exact_conversions_of_each_element(filecheck, assemble):
    got = {}

    def body(i, o, f):
        x = _x(i)
        v4 = tuple(cute.Int8(x + k) for k in range(4))
        a = arch.cvt_i8x4_to_f32x4(v4)
        b = arch.cvt_i8x2_to_bf16x2(v4[:2])
        c = arch.cvt_i8_bf16(v4[3])
        d = arch.cvt_i8_bf16_intrinsic(v4 + v4, 8)
        e = arch.cvt_i8x2_to_f32x2((v4[0], -128))
        got.update(a=(a.dtype.name, len(a)), b=(b.dtype.name, len(b)), c=c.dtype.name, d=(d.dtype.name, len(d)),
                   e=(e.dtype.name, len(e)))
        _store(o, [I32(v) for v in (*a.elements, *b.elements, c, *d.elements[:2], *e.elements)])

    c = compile_body(body)
    assert got == {"a": ("Float32", 4), "b": ("BFloat16", 2), "c": "BFloat16", "d": ("BFloat16", 8),
                   "e": ("Float32", 2)}
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda x, f: arch.fmax(x, f), "fmax: a must be a Float32 or a Python number, got a traced Int32"),
    (lambda x, f: arch.fmin(cute.Float16(f), f), "fmin: a must be a Float32, got a traced Float16"),
    (lambda x, f: arch.fmax(f, f, nan=1), "fmax: nan must be True or False, got 1"),
    (lambda x, f: arch.cvt_f32x2_bf16x2((f,)), "cvt_f32x2_bf16x2 takes a TensorSSA or a tuple of 2 Float32 values"),
    (lambda x, f: arch.cvt_i8x4_to_f32x4((x, x, x, x)), "element 0 must be a Int8, got a traced Int32"),
    (lambda x, f: arch.cvt_i8x2_to_f32x2((1, 300)), r"element 1 \(300\) does not fit in a Int8"),
    (lambda x, f: arch.cvt_i8_bf16_intrinsic((1, 2), 0), "length must be a positive static int, got 0"),
])
def test_float_rules(call, match):
    rejects(lambda i, o, f: call(_x(i), f), match)
