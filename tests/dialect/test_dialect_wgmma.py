"""The warpgroup MMA ops (mlir_dialects.ops.warpgroup): wgmma_fence, wgmma_commit_group, wgmma_wait_group and
wgmma_mma_async verify, lower, give their PTX (FileCheck) and assemble for sm_90a."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects._backend import arith, ir, llvm  # noqa: E402
from mlir_dialects.ops.warpgroup import wgmma_acc_type  # noqa: E402


def _fence(k):
    md.wgmma_fence()


def _commit(k):
    md.wgmma_commit_group()


def _wait(count):
    def build(k):
        md.wgmma_wait_group(count)
    return build


def _mma(n, ab, d, trans_a, trans_b, a_regs=False):
    def build(k):
        acc = llvm.UndefOp(wgmma_acc_type(n, d)).result
        a = [k.a["x"]] * 4 if a_regs else [k.a["hint"]]
        scale = arith.TruncIOp(ir.IntegerType.get_signless(1), k.a["y"]).result
        res = md.wgmma_mma_async(acc, a, k.a["addr"], scale, n=n, type_ab=ab, type_d=d, trans_a=trans_a,
                                 trans_b=trans_b)
        value = llvm.ExtractValueOp(ir.F32Type.get() if d == "f32" else ir.IntegerType.get_signless(32), res.res,
                                    [0]).result
        llvm.StoreOp(value, k.a["g"])
    tail = f", {trans_a}, {trans_b}" if not a_regs else f", {trans_b}"
    a_op = "{{[{]%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+[}]}}" if a_regs else "{{%rd[0-9]+}}"
    ta, _, tb = ab.partition(".")
    k = 32 if ta in ("e4m3", "e5m2") else 16
    if k == 32:
        tail = ""           # 8-bit operands take no transpose bits
    return build, [f"CHECK: wgmma.mma_async.sync.aligned.m64n{n}k{k}.{d}.{ta}.{tb or ta} {{{{.*}}}}, {a_op}, "
                   f"{{{{%rd[0-9]+}}}}, {{{{%p[0-9]+|p}}}}, 1, 1{tail};"]


CASES = {
    "wgmma_fence": (_fence, ["CHECK: wgmma.fence.sync.aligned;"]),
    "wgmma_commit_group": (_commit, ["CHECK: wgmma.commit_group.sync.aligned;"]),
    "wgmma_wait_group_0": (_wait(0), ["CHECK: wgmma.wait_group.sync.aligned 0;"]),
    "wgmma_wait_group_3": (_wait(3), ["CHECK: wgmma.wait_group.sync.aligned 3;"]),
    "wgmma_mma_async_n64_bf16_f32": _mma(64, "bf16", "f32", 0, 0),
    "wgmma_mma_async_n8_f16_f16_mn": _mma(8, "f16", "f16", 1, 1),
    "wgmma_mma_async_n256_f16_f32_b_mn": _mma(256, "f16", "f32", 0, 1),
    "wgmma_mma_async_n128_bf16_f32_a_regs": _mma(128, "bf16", "f32", 0, 0, a_regs=True),
    # 8-bit floats: K 32, K-major, one type for both or two
    "wgmma_mma_async_n256_e4m3_f32": _mma(256, "e4m3", "f32", 0, 0),
    "wgmma_mma_async_n64_e5m2_f16": _mma(64, "e5m2", "f16", 0, 0),
    "wgmma_mma_async_n128_e4m3_e5m2_f32": _mma(128, "e4m3.e5m2", "f32", 0, 0),
    "wgmma_mma_async_n16_e5m2_e4m3_f32_a_regs": _mma(16, "e5m2.e4m3", "f32", 0, 0, a_regs=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wgmma_op_verifies_lowers_and_assembles_for_sm_90a(case, op_case):
    build, ptx_checks = CASES[case]
    op_case(lambda k, const: build(k), [], ptx_checks)


def _acc_mma(k, ab, trans_a=0, trans_b=0, n=64, d="f32", a_regs=False):
    from mlir_dialects._backend import arith, ir, llvm

    acc = llvm.UndefOp(wgmma_acc_type(n, d)).result
    a = [k.a["x"]] * 4 if a_regs else [k.a["hint"]]
    scale = arith.TruncIOp(ir.IntegerType.get_signless(1), k.a["y"]).result
    return md.wgmma_mma_async(acc, a, k.a["addr"], scale, n=n, type_ab=ab, type_d=d, trans_a=trans_a,
                              trans_b=trans_b)


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(ab="e4m3", trans_b=1), r"\[wgmma-transpose\].*8-bit operands \(e4m3\) are K-major: trans_b must be 0"),
    (dict(ab="e5m2.e4m3", trans_a=1), r"\[wgmma-transpose\].*trans_a must be 0"),
    (dict(ab="e4m3.e4m3.e5m2"), r"\[wgmma-ab-type\]"),
    (dict(ab="e3m4"), r"\[wgmma-ab-type\]"),
    (dict(ab="f16.bf16"), r"\[wgmma-ab-type\]"),
    (dict(ab="bf16", d="f16"), r"\[wgmma-d-type\].*bf16 inputs accumulate in f32"),
    (dict(ab="e4m3", n=12), r"\[wgmma-shape\].*got 12"),
])
def test_wgmma_rules_of_the_operand_types(kwargs, pattern, kernel):
    from mlir_dialects.errors import VerificationError

    with kernel as k, pytest.raises(VerificationError, match=pattern):
        _acc_mma(k, **kwargs)
