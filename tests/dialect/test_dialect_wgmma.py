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
    tail = f"{trans_a}, {trans_b}" if not a_regs else f"{trans_b}"
    a_op = "{{[{]%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+[}]}}" if a_regs else "{{%rd[0-9]+}}"
    return build, [f"CHECK: wgmma.mma_async.sync.aligned.m64n{n}k16.{d}.{ab}.{ab} {{{{.*}}}}, {a_op}, "
                   f"{{{{%rd[0-9]+}}}}, {{{{%p[0-9]+|p}}}}, 1, 1, {tail};"]


CASES = {
    "wgmma_fence": (_fence, ["CHECK: wgmma.fence.sync.aligned;"]),
    "wgmma_commit_group": (_commit, ["CHECK: wgmma.commit_group.sync.aligned;"]),
    "wgmma_wait_group_0": (_wait(0), ["CHECK: wgmma.wait_group.sync.aligned 0;"]),
    "wgmma_wait_group_3": (_wait(3), ["CHECK: wgmma.wait_group.sync.aligned 3;"]),
    "wgmma_mma_async_n64_bf16_f32": _mma(64, "bf16", "f32", 0, 0),
    "wgmma_mma_async_n8_f16_f16_mn": _mma(8, "f16", "f16", 1, 1),
    "wgmma_mma_async_n256_f16_f32_b_mn": _mma(256, "f16", "f32", 0, 1),
    "wgmma_mma_async_n128_bf16_f32_a_regs": _mma(128, "bf16", "f32", 0, 0, a_regs=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wgmma_op_verifies_lowers_and_assembles_for_sm_90a(case, op_case):
    build, ptx_checks = CASES[case]
    op_case(lambda k, const: build(k), [], ptx_checks)
