"""Each verifier rule of the ops that stand for the kernel builtins' inline PTX rejects what PTX, ptxas or the
hardware would, naming the rule, when the op is built (and, for an op made without its builder, when the module
is verified)."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects._backend import ir, llvm  # noqa: E402
from mlir_dialects.dialect import bool_attr, i32_attr, str_attr  # noqa: E402
from mlir_dialects.errors import OperandTypeError, VerificationError  # noqa: E402


def _t(name):
    return ir.Type.parse(name)


def _f16(k):
    return llvm.BitcastOp(_t("f16"), k.a["small"]).result


# name -> (build(k, c), the error class, a pattern of its message)
RULES = {
    # atom, atom_float_minmax, red, ld_scalar, st_scalar, createpolicy
    "atom-op": (lambda k, c: md.atom("sub", "u32", k.a["g"], [k.a["x"]]), VerificationError, r"\[atom-op\].*'sub'"),
    "atom-type": (lambda k, c: md.atom("and", "u32", k.a["g"], [k.a["x"]]), VerificationError,
                  r"\[atom-type\].*atom\.and.*b32, b64.*'u32'"),
    "atom-type-add-s64": (lambda k, c: md.atom("add", "s64", k.a["g"], [k.a["hint"]]), VerificationError,
                          r"\[atom-type\]"),
    "memory-sem": (lambda k, c: md.atom("add", "u32", k.a["g"], [k.a["x"]], sem="weak"), VerificationError,
                   r"\[memory-sem\].*'weak'"),
    "memory-scope": (lambda k, c: md.atom("add", "u32", k.a["g"], [k.a["x"]], scope="grid"), VerificationError,
                     r"\[memory-scope\].*'grid'"),
    "addr-address-space": (lambda k, c: md.atom("add", "u32", k.a["desc"], [k.a["x"]]), OperandTypeError,
                           r"\[addr-address-space\].*got !llvm.ptr$"),
    "peer-address-space": (lambda k, c: md.atom("add", "u32", k.a["g"], [k.a["x"]], peer=k.a["peer"]),
                           VerificationError, r"\[peer-address-space\]"),
    "peer-rank": (lambda k, c: md.atom("add", "u32", k.s["tile"], [k.a["x"]], peer=c(16)), VerificationError,
                  r"\[peer-rank\].*\[0, 16\).*got 16"),
    "atom-operands": (lambda k, c: md.atom("cas", "b32", k.a["g"], [k.a["x"]]), VerificationError,
                      r"\[atom-operands\].*atom\.cas takes 2 value\(s\), got 1"),
    "atom-value-type": (lambda k, c: md.atom("add", "f32", k.a["g"], [k.a["x"]]), OperandTypeError,
                        r"\[atom-value-type\].*\.f32 access is f32, got i32"),
    "atom-value-type-8-bit": (lambda k, c: md.atom("cas", "b16", k.a["g"], [k.a["val"], k.a["val"]]),
                              OperandTypeError, r"\[atom-value-type\].*i16 or f16 or bf16"),
    "atom-result-type": (lambda k, c: md.AtomOp.build(str_attr("add"), str_attr("u32"), str_attr(""), str_attr(""),
                                                      k.a["g"], [k.a["x"]], _t("i64")), VerificationError,
                         r"\[atom-result-type\].*i32, got i64"),
    "minmax-kind": (lambda k, c: md.atom_float_minmax("avg", k.a["g"], k.a["f"]), VerificationError,
                    r"\[minmax-kind\].*'avg'"),
    "minmax-sign": (lambda k, c: md.atom_float_minmax("max", k.a["g"], k.a["f"], sign="positive"), VerificationError,
                    r"\[minmax-sign\].*any, negative, non_negative"),
    "minmax-value-type": (lambda k, c: md.atom_float_minmax("max", k.a["g"], k.a["x"]), OperandTypeError,
                          r"\[minmax-value-type\].*f32, got i32"),
    "minmax-sem": (lambda k, c: md.atom_float_minmax("max", k.a["g"], k.a["f"], sem="consume"), VerificationError,
                   r"\[memory-sem\]"),
    "red-op": (lambda k, c: md.red("exch", "b32", k.a["g"], k.a["x"]), VerificationError, r"\[red-op\].*'exch'"),
    "red-type": (lambda k, c: md.red("min", "b32", k.a["g"], k.a["x"]), VerificationError,
                 r"\[red-type\].*red\.min"),
    "red-sem": (lambda k, c: md.red("add", "u32", k.a["g"], k.a["x"], sem="acquire"), VerificationError,
                r"\[memory-sem\].*relaxed, release.*'acquire'"),
    "red-value-type": (lambda k, c: md.red("add", "f16x2", k.a["g"], _f16(k)), OperandTypeError,
                       r"\[red-value-type\].*\.f16x2 access is i32, got f16"),
    "ld-type": (lambda k, c: md.ld_scalar("f16", k.a["g"], _t("f16")), VerificationError, r"\[ld-type\].*'f16'"),
    "memory-sem-scope": (lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), sem="acquire"), VerificationError,
                         r"\[memory-sem-scope\].*give both or neither"),
    "ld-sem": (lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), sem="release", scope="gpu"),
               VerificationError, r"\[memory-sem\].*relaxed, acquire"),
    "ld-cop": (lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), cop="wb"), VerificationError,
               r"\[ld-cop\].*'wb'"),
    "ld-eviction": (lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), eviction="evict_first"),
                    VerificationError, r"\[ld-eviction\].*L1::evict_first.*'evict_first'"),
    "ld-prefetch": (lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), prefetch="L2::512B"), VerificationError,
                    r"\[ld-prefetch\].*'L2::512B'"),
    "ld-cop-weak": (lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), sem="relaxed", scope="gpu", cop="cg"),
                    VerificationError, r"\[ld-cop-weak\].*\.cg.*\.relaxed"),
    "ld-cop-eviction": (lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), cop="cg",
                                                  eviction="L1::evict_last"), VerificationError,
                        r"\[ld-cop-eviction\]"),
    "ld-hint-space": (lambda k, c: md.ld_scalar("u32", k.s["tile"], _t("i32"), prefetch="L2::64B"),
                      VerificationError, r"\[ld-hint-space\].*global memory only"),
    "ld-result-type": (lambda k, c: md.ld_scalar("u8", k.a["g"], _t("i32")), OperandTypeError,
                       r"\[ld-result-type\].*\.u8 access is i16, got i32"),
    "st-type": (lambda k, c: md.st_scalar("b32", k.a["g"], k.a["x"]), VerificationError, r"\[st-type\].*'b32'"),
    "st-sem": (lambda k, c: md.st_scalar("u32", k.a["g"], k.a["x"], sem="acquire", scope="gpu"), VerificationError,
               r"\[memory-sem\].*relaxed, release"),
    "st-cop": (lambda k, c: md.st_scalar("u32", k.a["g"], k.a["x"], cop="ca"), VerificationError, r"\[st-cop\]"),
    "st-eviction": (lambda k, c: md.st_scalar("u32", k.a["g"], k.a["x"], eviction="L1::keep"), VerificationError,
                    r"\[st-eviction\]"),
    "st-cop-weak": (lambda k, c: md.st_scalar("u32", k.a["g"], k.a["x"], sem="release", scope="cta", cop="wt"),
                    VerificationError, r"\[st-cop-weak\]"),
    "st-cop-eviction": (lambda k, c: md.st_scalar("u32", k.a["g"], k.a["x"], cop="cs", eviction="L1::evict_first"),
                        VerificationError, r"\[st-cop-eviction\]"),
    "st-hint-space": (lambda k, c: md.st_scalar("u32", k.s["tile"], k.a["x"], eviction="L1::evict_first"),
                      VerificationError, r"\[st-hint-space\]"),
    "st-value-type": (lambda k, c: md.st_scalar("u64", k.a["g"], k.a["x"]), OperandTypeError,
                      r"\[st-value-type\].*i64, got i32"),
    "createpolicy-priority": (lambda k, c: md.createpolicy("evict_soon"), VerificationError,
                              r"\[createpolicy-priority\].*'evict_soon'"),
    "createpolicy-fraction": (lambda k, c: md.createpolicy("evict_last", 1.5), VerificationError,
                              r"\[createpolicy-fraction\].*\(0, 1\], got 1.5"),
    # int_op
    "int-instr": (lambda k, c: md.int_op("popc", [k.a["x"]]), VerificationError, r"\[int-instr\].*'popc'"),
    "int-arity": (lambda k, c: md.int_op("bfe", [k.a["x"], k.a["y"]]), VerificationError,
                  r"\[int-arity\].*bfe takes 3 operands, got 2"),
    "int-operand-type": (lambda k, c: md.int_op("mul24", [k.a["hint"], k.a["hint"]]), OperandTypeError,
                         r"\[int-operand-type\].*mul24 takes i32 values, got i64"),
    "int-operand-type-field": (lambda k, c: md.int_op("bfe", [k.a["hint"], k.a["hint"], k.a["y"]]),
                               OperandTypeError, r"\[int-operand-type\].*operand 1 of bfe is an i32, got i64"),
    "int-operand-type-mixed": (lambda k, c: md.int_op("mul_hi", [k.a["x"], k.a["hint"]]), OperandTypeError,
                               r"\[int-operand-type\].*operand 1 of mul_hi is an i32, got i64"),
    "int-result-type": (lambda k, c: md.IntOp.build(str_attr("clz"), bool_attr(False), str_attr(""), i32_attr(0),
                                                    k.a["hint"], _t("i64")), VerificationError,
                        r"\[int-result-type\].*clz of i64 values gives i32, got i64"),
    "int-signedness": (lambda k, c: md.int_op("brev", [k.a["x"]], signed=True), VerificationError,
                       r"\[int-signedness\].*brev has no signed"),
    "int-signedness-sat": (lambda k, c: md.int_op("add_sat", [k.a["x"], k.a["y"]]), VerificationError,
                           r"\[int-signedness\].*signed=True"),
    "int-mode": (lambda k, c: md.int_op("shf", [k.a["x"], k.a["y"], k.a["z"]], mode="l"), VerificationError,
                 r"\[int-mode\].*l\.wrap.*'l'"),
    "int-mode-none": (lambda k, c: md.int_op("prmt", [k.a["x"], k.a["y"], k.a["z"]], mode="hi"), VerificationError,
                      r"\[int-mode\].*''.*'hi'"),
    "lop3-lut": (lambda k, c: md.int_op("lop3", [k.a["x"], k.a["y"], k.a["z"]], lut=256), VerificationError,
                 r"\[lop3-lut\].*0\.\.255, got 256"),
    "lop3-lut-elsewhere": (lambda k, c: md.int_op("prmt", [k.a["x"], k.a["y"], k.a["z"]], lut=3), VerificationError,
                           r"\[lop3-lut\].*lop3 only"),
    "signed-flag": (lambda k, c: md.IntOp.build(str_attr("clz"), i32_attr(1), str_attr(""), i32_attr(0), k.a["x"],
                                                _t("i32")), VerificationError, r"\[signed-flag\]"),
    # float_minmax, cvt_f32, math_approx
    "float-minmax-kind": (lambda k, c: md.float_minmax("mid", k.a["f"], k.a["f"]), VerificationError,
                          r"\[minmax-kind\].*'mid'"),
    "float-minmax-operand": (lambda k, c: md.float_minmax("max", k.a["f"], k.a["x"]), OperandTypeError,
                             r"\[b-type\].*f32, got i32"),
    "float-minmax-flag": (lambda k, c: md.FloatMinMaxOp.build(str_attr("max"), i32_attr(1), bool_attr(False),
                                                              bool_attr(False), k.a["f"], k.a["f"], _t("f32")),
                          VerificationError, r"\[ftz-flag\]"),
    "minmax-result-type": (lambda k, c: md.FloatMinMaxOp.build(str_attr("max"), bool_attr(False), bool_attr(False),
                                                               bool_attr(False), k.a["f"], k.a["f"], _t("f64")),
                           VerificationError, r"\[minmax-result-type\].*got f64"),
    "cvt-kind": (lambda k, c: md.cvt_f32("f16", k.a["f"]), VerificationError, r"\[cvt-kind\].*'f16'"),
    "cvt-operands": (lambda k, c: md.cvt_f32("bf16x2_satfinite", k.a["f"]), VerificationError,
                     r"\[cvt-operands\].*takes 2 f32 value\(s\), got 1"),
    "cvt-value-type": (lambda k, c: md.cvt_f32("tf32", k.a["x"]), OperandTypeError, r"\[value-type\].*got i32"),
    "cvt-result-type": (lambda k, c: md.CvtF32Op.build(str_attr("bf16"), [k.a["f"]], _t("f16")), VerificationError,
                        r"\[cvt-result-type\].*gives bf16, got f16"),
    "volatile-flag": (lambda k, c: md.MathApproxOp.build(str_attr("rcp"), str_attr("ftz"), i32_attr(2), k.a["f"],
                                                         _t("f32")), VerificationError, r"\[volatile-flag\]"),
    # mbarriers
    "mbarrier-scoped-kind": (lambda k, c: md.mbarrier_scoped("wait", k.s["bar"], c(1)), VerificationError,
                             r"\[mbarrier-scoped-kind\].*'wait'"),
    "mbarrier-scope": (lambda k, c: md.mbarrier_scoped("arrive", k.s["bar"], c(1), scope="gpu"), VerificationError,
                       r"\[mbarrier-scope\].*cta, cluster.*'gpu'"),
    "mbarrier-scoped-space": (lambda k, c: md.mbarrier_scoped("arrive", k.a["g"], c(1)), OperandTypeError,
                              r"\[mbar-address-space\]"),
    "mbarrier-count-range": (lambda k, c: md.mbarrier_scoped("arrive", k.s["bar"], c(0)), VerificationError,
                             r"\[mbarrier-count-range\].*\[1, 1048575\], got 0"),
    "mbarrier-tx-range": (lambda k, c: md.mbarrier_scoped("expect_tx", k.s["bar"], c(1 << 20)), VerificationError,
                          r"\[mbarrier-tx-range\].*got 1048576"),
    "mbarrier-peer-rank": (lambda k, c: md.mbarrier_scoped("arrive", k.s["bar"], c(1), peer=c(-1)),
                           VerificationError, r"\[mbarrier-peer-rank\].*\[0, 15\], got -1"),
    "mbarrier-test-wait-parity": (lambda k, c: md.mbarrier_test_wait_parity(k.s["bar"], c(2)), VerificationError,
                                  r"\[mbarrier-parity\].*got 2"),
    "mbarrier-test-wait-space": (lambda k, c: md.mbarrier_test_wait_parity(k.a["g"], c(0)), OperandTypeError,
                                 r"\[mbar-address-space\]"),
    "mbarrier-try-wait-if-parity": (lambda k, c: md.mbarrier_try_wait_parity_if(c(1, 1), k.s["bar"], c(3)),
                                    VerificationError, r"\[mbarrier-parity\].*got 3"),
    "mbarrier-try-wait-if-space": (lambda k, c: md.mbarrier_try_wait_parity_if(c(1, 1), k.a["g"], c(0)),
                                   OperandTypeError, r"\[mbar-address-space\]"),
    # sync, warp, warpgroup, tcgen05
    "fence-proxy-kind": (lambda k, c: md.fence_proxy("tensormap"), VerificationError,
                         r"\[fence-proxy-kind\].*alias, async.*'tensormap'"),
    "griddepcontrol-kind": (lambda k, c: md.griddepcontrol("launch"), VerificationError,
                            r"\[griddepcontrol-kind\].*'launch'"),
    "aligned-flag": (lambda k, c: md.BarrierArriveOp.build(c(1), c(64), i32_attr(1)), VerificationError,
                     r"\[aligned-flag\]"),
    "match-kind": (lambda k, c: md.match_sync("some", k.a["x"], c(-1)), VerificationError, r"\[match-kind\]"),
    "match-value-type": (lambda k, c: md.match_sync("any", k.a["small"], c(-1)), OperandTypeError,
                         r"\[value-type\].*i32 or i64, got i16"),
    "match-lane-mask-empty": (lambda k, c: md.match_sync("any", k.a["x"], c(0)), VerificationError,
                              r"\[lane-mask-empty\]"),
    "redux-op": (lambda k, c: md.redux_sync("mul", "u32", k.a["x"], c(-1)), VerificationError, r"\[redux-op\]"),
    "redux-type": (lambda k, c: md.redux_sync("and", "u32", k.a["x"], c(-1)), VerificationError,
                   r"\[redux-type\].*b32.*'u32'"),
    "redux-lane-mask-empty": (lambda k, c: md.redux_sync("add", "s32", k.a["x"], c(0)), VerificationError,
                              r"\[lane-mask-empty\]"),
    "sreg-name": (lambda k, c: md.read_sreg_volatile("clock32"), VerificationError, r"\[sreg-name\].*%clock32"),
    "sreg-result-type": (lambda k, c: md.ReadSregVolatileOp.build(str_attr("clock64"), _t("i32")),
                         VerificationError, r"\[sreg-result-type\].*%clock64 is an i64, got i32"),
    "fence-operand-type": (lambda k, c: md.wgmma_fence_operand(k.a["hint"]), VerificationError,
                           r"\[fence-operand-type\].*got i64"),
    "fence-operand-result-type": (lambda k, c: md.WgmmaFenceOperandOp.build(k.a["x"], _t("f32")), VerificationError,
                                  r"\[fence-operand-result-type\]"),
    "mbar-type": (lambda k, c: md.tcgen05_commit(k.a["hint"]), OperandTypeError, r"\[mbar-type\].*got i64"),
    "mbar-address-space": (lambda k, c: md.tcgen05_commit(k.a["g"]), OperandTypeError, r"\[mbar-address-space\]"),
    "mbar-alignment": (lambda k, c: md.tcgen05_commit(c(12)), VerificationError, r"\[mbar-alignment\].*0xc"),
    "elect-lane-mask-empty": (lambda k, c: md.elect_sync(c(0)), VerificationError, r"\[lane-mask-empty\]"),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_the_rule_rejects_its_case_naming_it(rule, kernel, const):
    build, error, pattern = RULES[rule]
    with kernel as k, pytest.raises(error, match=pattern):
        build(k, const)


def test_a_rule_broken_by_an_op_made_without_its_builder_is_a_module_diagnostic(kernel, const):
    """An op created directly (no check at once) fails the module's verification, naming the rule."""
    with kernel as k:
        md.IntOp(str_attr("lop3"), bool_attr(False), str_attr(""), i32_attr(999), k.a["x"], _t("i32"), b=k.a["y"],
                 c=k.a["z"])
    with pytest.raises(VerificationError, match=r"\[lop3-lut\].*got 999"):
        md.verify(k.module)


MMA_RULES = {
    "mma-layout": (lambda k, c, f: md.mma_sync("m8n8k4", "f16", "f32", [k.a["x"]] * 2, [k.a["x"]] * 2, [f] * 8,
                                               layout_a="diag"), r"\[mma-layout\].*row, col.*'diag'"),
    "mma-layout-row-col-only": (lambda k, c, f: md.mma_sync("m16n8k16", "f16", "f32", [k.a["x"]] * 4,
                                                            [k.a["x"]] * 2, [f] * 4, layout_b="row"),
                                r"\[mma-layout\].*m16n8k16 takes A row-major and B column-major.*row\.row"),
    "mma-ab-type-m8n8k4": (lambda k, c, f: md.mma_sync("m8n8k4", "bf16", "f32", [k.a["x"]] * 2, [k.a["x"]] * 2,
                                                       [f] * 8), r"\[mma-ab-type\].*m8n8k4 multiplies f16"),
    "mma-c-regs-m8n8k4": (lambda k, c, f: md.mma_sync("m8n8k4", "f16", "f32", [k.a["x"]] * 2, [k.a["x"]] * 2,
                                                      [f] * 4), r"\[mma-c-regs\].*8 f32 values per lane, got 4"),
    "mma-b-regs-m8n8k4": (lambda k, c, f: md.mma_sync("m8n8k4", "f16", "f16", [k.a["x"]] * 2, [k.a["x"]],
                                                      [k.a["y"]] * 4), r"\[mma-b-regs\].*takes 2 i32 words"),
}


@pytest.mark.parametrize("rule", sorted(MMA_RULES))
def test_the_m8n8k4_and_layout_rules_of_mma_sync(rule, kernel, const):
    build, pattern = MMA_RULES[rule]
    with kernel as k, pytest.raises(VerificationError, match=pattern):
        build(k, const, k.a["f"])
