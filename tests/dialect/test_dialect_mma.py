"""The warp tensor-core ops (mlir_dialects.ops.mma): mma_sync, ldmatrix and stmatrix verify, lower, give their
PTX (FileCheck) and assemble for sm_90a; their verifier rules reject wrong shapes, types and register counts,
naming the rule."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects._backend import ir, llvm  # noqa: E402
from mlir_dialects.errors import OperandTypeError, VerificationError  # noqa: E402

R = "%r{{[0-9]+}}"


def _regs(n):
    return "{" + ", ".join([R] * n) + "}"


def _f32(k):
    return llvm.BitcastOp(ir.F32Type.get(), k.a["x"]).result


def _keep(k, values):
    for v in values:
        llvm.StoreOp(v, k.a["g"])


def _mma(shape, ab, acc):
    na, nb = {"m16n8k8": (2, 1), "m16n8k16": (4, 2)}[shape]
    nc = 4 if acc == "f32" else 2

    def build(k, c):
        cvals = [_f32(k)] * nc if acc == "f32" else [k.a["y"]] * nc
        _keep(k, md.mma_sync(shape, ab, acc, [k.a["x"]] * na, [k.a["y"]] * nb, cvals).d)

    return build, [f"CHECK: llvm.inline_asm has_side_effects \"mma.sync.aligned.{shape}.row.col.{acc}.{ab}.{ab}.{acc}"], [
        f"CHECK: mma.sync.aligned.{shape}.row.col.{acc}.{ab}.{ab}.{acc} {_regs(nc)}, {_regs(na)}, {_regs(nb)}, "
        f"{_regs(nc)};"]


def _ldsm(n, trans):
    t = ".trans" if trans else ""

    def build(k, c):
        _keep(k, md.ldmatrix(k.s["tile"], n, trans=trans).words)

    return build, ["CHECK: llvm.inline_asm has_side_effects \"ldmatrix"], [
        f"CHECK: ldmatrix.sync.aligned.m8n8.x{n}{t}.shared.b16 {_regs(n)}, [{R}];"]


def _stsm(n, trans):
    t = ".trans" if trans else ""

    def build(k, c):
        md.stmatrix(k.s["tile"], [k.a["x"]] * n, trans=trans)

    return build, ["CHECK: llvm.inline_asm has_side_effects \"stmatrix"], [
        f"CHECK: stmatrix.sync.aligned.m8n8.x{n}{t}.shared.b16 [{R}], {_regs(n)};"]


CASES = {f"mma_sync_{s}_{ab}_{acc}": _mma(s, ab, acc) for s in ("m16n8k8", "m16n8k16")
         for ab, acc in (("f16", "f32"), ("bf16", "f32"), ("f16", "f16"))}
CASES.update({f"ldmatrix_x{n}{'_trans' if t else ''}": _ldsm(n, t) for n in (1, 2, 4) for t in (False, True)})
CASES.update({f"stmatrix_x{n}{'_trans' if t else ''}": _stsm(n, t) for n in (1, 2, 4) for t in (False, True)})


@pytest.mark.parametrize("case", sorted(CASES))
def test_mma_op_verifies_lowers_and_assembles_for_sm_90a(case, op_case):
    op_case(*CASES[case], ptx_head=("CHECK: .version 8.0", "CHECK: .target sm_90a"))


def test_mma_sync_results_have_the_accumulators_types(kernel):
    with kernel as k:
        d = md.mma_sync("m16n8k16", "bf16", "f32", [k.a["x"]] * 4, [k.a["x"]] * 2, [_f32(k)] * 4).d
        assert [str(v.type) for v in d] == ["f32"] * 4
        d = md.mma_sync("m16n8k16", "f16", "f16", [k.a["x"]] * 4, [k.a["x"]] * 2, [k.a["y"]] * 2).d
        assert [str(v.type) for v in d] == ["i32"] * 2


# -- verifier rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,ab,acc,na,nb,nc,err,match", [
    ("m16n8k32", "f16", "f32", 4, 2, 4, VerificationError, r"\[mma-shape\].*m16n8k8, m16n8k16, m8n8k4, got 'm16n8k32'"),
    ("m16n8k16", "f32", "f32", 4, 2, 4, VerificationError, r"\[mma-ab-type\].*f16 or bf16, got 'f32'"),
    ("m16n8k16", "f16", "s32", 4, 2, 4, VerificationError, r"\[mma-acc-type\].*f32 or f16, got 's32'"),
    ("m16n8k16", "bf16", "f16", 4, 2, 2, VerificationError, r"\[mma-acc-type\].*f16 accumulators need f16 inputs"),
    ("m16n8k16", "f16", "f32", 2, 2, 4, VerificationError, r"\[mma-a-regs\].*m16n8k16 takes 4 i32 words of A per lane, got 2"),
    ("m16n8k8", "f16", "f32", 2, 2, 4, VerificationError, r"\[mma-b-regs\].*m16n8k8 takes 1 i32 words of B per lane, got 2"),
    ("m16n8k16", "f16", "f32", 4, 2, 3, VerificationError, r"\[mma-c-regs\].*f32 accumulators are 4 f32 values per lane, got 3"),
])
def test_mma_sync_rules(kernel, shape, ab, acc, na, nb, nc, err, match):
    with kernel as k, pytest.raises(err, match=match):
        cvals = [_f32(k)] * nc if acc in ("f32", "s32") else [k.a["y"]] * nc
        md.mma_sync(shape, ab, acc, [k.a["x"]] * na, [k.a["y"]] * nb, cvals)


def test_mma_sync_operand_types(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[mma-a-type\].*i32 \(two f16 each\), got i64"):
        md.mma_sync("m16n8k16", "f16", "f32", [k.a["hint"]] * 4, [k.a["x"]] * 2, [_f32(k)] * 4)
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[mma-c-type\].*f32 accumulators are f32 values, got i32"):
        md.mma_sync("m16n8k16", "f16", "f32", [k.a["x"]] * 4, [k.a["x"]] * 2, [k.a["y"]] * 4)
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[mma-c-type\].*f16 accumulators are i32 values, got f32"):
        md.mma_sync("m16n8k16", "f16", "f16", [k.a["x"]] * 4, [k.a["x"]] * 2, [_f32(k)] * 2)


def test_matrix_ops_rules(kernel):
    with kernel as k, pytest.raises(VerificationError, match=r"'cute_nvgpu.ldmatrix' breaks rule \[matrix-count\].*1, 2 or "
                                                             r"4 matrices.*got 3"):
        md.ldmatrix(k.s["tile"], 3)
    with kernel as k, pytest.raises(VerificationError, match=r"'cute_nvgpu.stmatrix' breaks rule \[matrix-count\].*got 8"):
        md.stmatrix(k.s["tile"], [k.a["x"]] * 8)
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[addr-address-space\].*got !llvm.ptr<1>"):
        md.ldmatrix(k.a["g"], 4)
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[matrix-word-type\].*i32 \(two b16 elements\), got i16"):
        md.stmatrix(k.s["tile"], [k.a["small"]] * 2)
