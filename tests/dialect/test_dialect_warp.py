"""The warp ops (mlir_dialects.ops.warp; the vector global accesses of mlir_dialects.ops.memory): each one
verifies, lowers and gives its PTX (FileCheck), which assembles for sm_90a; and each of their verifier rules
rejects what ptxas or the hardware would, naming the rule."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects._backend import ir, llvm  # noqa: E402
from mlir_dialects.dialect import i32_attr, str_attr  # noqa: E402
from mlir_dialects.errors import OperandTypeError, VerificationError  # noqa: E402
from mlir_dialects.ops.memory import LdGlobalOp  # noqa: E402
from mlir_dialects.ops.warp import ShflSyncOp, VoteSyncOp  # noqa: E402

R, P, RD = "{{%r[0-9]+}}", "{{%p[0-9]+}}", "{{%rd[0-9]+}}"


def _keep(k, value):
    """Store ``value`` to global memory, so that a pure result is not folded away before the PTX."""
    if isinstance(value.type, ir.IntegerType) and value.type.width == 1:
        value = llvm.ZExtOp(ir.IntegerType.get_signless(32), value).result
    llvm.StoreOp(value, k.a["g"])


def _pred(k, c):
    return llvm.ICmpOp(llvm.ICmpPredicate.slt, k.a["x"], c(0)).result


def _shfl(kind, lane, clamp, checks_value=R):
    def build(k, c):
        _keep(k, md.shfl_sync(kind, k.a["x"], c(lane), c(clamp), c(-1)).res)

    return (build, [f"CHECK: nvvm.shfl.sync {kind}"],
            [f"CHECK: shfl.sync.{kind}.b32 {R}, {checks_value}, {lane}, {clamp}, -1;"])


def _vote(kind):
    def build(k, c):
        _keep(k, md.vote_sync(kind, _pred(k, c), c(0xFF)).res)

    res, suffix = (R, "b32") if kind == "ballot" else (P, "pred")
    return build, [f"CHECK: nvvm.vote.sync {kind}"], [f"CHECK: vote.sync.{kind}.{suffix} {res}, {P}, 255;"]


def _sreg(name):
    def build(k, c):
        _keep(k, md.read_sreg(name).value)

    return build, [f"CHECK: nvvm.read.ptx.sreg.{name.replace('_', '.')}"], [f"CHECK: mov.u32 {R}, %{name};"]


def _regs(n):
    """A FileCheck pattern of a PTX vector of ``n`` 32-bit registers, ``{%r1, %r2}``."""
    return "{{[{]%r[0-9]+(, %r[0-9]+){" + str(n - 1) + "}[}]}}"


def _ldg(bits, cache):
    cop, n = f".{cache}" if cache else "", bits // 32
    if n == 1:
        ptx = [f"CHECK: ld.global{cop}.b32 {R}, [{RD}];"]
    elif n == 8:
        ptx = [f"CHECK: ld.global{cop}.v4.b32 {{{{{{.*}}}}}}, [[[A:%rd[0-9]+]]];",
               f"CHECK-NEXT: ld.global{cop}.v4.b32 {{{{{{.*}}}}}}, [[[A]]+16];"]
    else:
        ptx = [f"CHECK: ld.global{cop}.v{n}.b32 {_regs(n)}, [{RD}];"]
    return lambda k, c: md.ld_global(k.a["g"], bits, cache), ["CHECK: llvm.inline_asm has_side_effects"], ptx


def _stg(n, cache):
    cop = f".{cache}" if cache else ""
    if n == 1:
        ptx = [f"CHECK: st.global{cop}.b32 [{RD}], {R};"]
    elif n == 8:
        ptx = [f"CHECK: st.global{cop}.v4.b32 [[[A:%rd[0-9]+]]], {{{{{{.*}}}}}};",
               f"CHECK-NEXT: st.global{cop}.v4.b32 [[[A]]+16], {{{{{{.*}}}}}};"]
    else:
        ptx = [f"CHECK: st.global{cop}.v{n}.b32 [{RD}], {_regs(n)};"]
    words = ("x", "y", "z", "val")
    return (lambda k, c: md.st_global(k.a["g"], [k.a[words[i % 4]] for i in range(n)], cache),
            ["CHECK: llvm.inline_asm has_side_effects"], ptx)


# name -> (build(k, c), lowered-IR checks, PTX checks); k: kernel (k.a args, k.s shared), c: const_int
CASES = {
    "bar_warp_sync_full": (lambda k, c: md.bar_warp_sync(c(-1)), ["CHECK: nvvm.bar.warp.sync"],
                           ["CHECK: bar.warp.sync -1;"]),
    "bar_warp_sync_run_time_mask": (lambda k, c: md.bar_warp_sync(k.a["x"]), ["CHECK: nvvm.bar.warp.sync"],
                                    [f"CHECK: bar.warp.sync {R};"]),
    "barrier_sync_count": (lambda k, c: md.barrier_sync(c(1), c(64)), ["CHECK: nvvm.barrier id = "],
                           ["CHECK: bar.sync 1, 64;"]),
    "barrier_sync_all_threads": (lambda k, c: md.barrier_sync(c(3)), ["CHECK: nvvm.barrier id = "],
                                 ["CHECK: bar.sync 3;"]),
    "barrier_sync_run_time_id": (lambda k, c: md.barrier_sync(k.a["x"], c(32)), ["CHECK: nvvm.barrier id = "],
                                 [f"CHECK: bar.sync {R}, 32;"]),
    "barrier_arrive": (lambda k, c: md.barrier_arrive(c(2), c(128)), ["CHECK: nvvm.barrier.arrive id = "],
                       ["CHECK: bar.arrive 2, 128;"]),
    "shfl_sync_idx": _shfl("idx", 5, 31),
    "shfl_sync_idx_width_8": _shfl("idx", 3, (24 << 8) | 31),
    "shfl_sync_up": _shfl("up", 1, 0),
    "shfl_sync_up_width_16": _shfl("up", 2, 16 << 8),
    "shfl_sync_down": _shfl("down", 2, 31),
    "shfl_sync_bfly": _shfl("bfly", 16, 31),
    "shfl_sync_run_time_lane_and_mask": (
        lambda k, c: _keep(k, md.shfl_sync("idx", k.a["x"], k.a["y"], c(31), k.a["z"]).res),
        ["CHECK: nvvm.shfl.sync idx"],
        [f"CHECK: shfl.sync.idx.b32 {R}, {R}, {R}, 31, {R};"],
    ),
    "shfl_sync_f32_with_pred": (
        lambda k, c: [_keep(k, v) for v in md.shfl_sync("bfly", k.a["f"], c(1), c(31), c(-1), with_pred=True).results],
        ["CHECK: nvvm.shfl.sync bfly {{.*}} {return_value_and_is_valid} : f32 -> !llvm.struct<(f32, i1)>"],
        [f"CHECK: shfl.sync.bfly.b32 {{{{%(r|f)[0-9]+}}}}|{P}, {{{{%(r|f)[0-9]+}}}}, 1, 31, -1;"],
    ),
    "vote_sync_any": _vote("any"),
    "vote_sync_all": _vote("all"),
    "vote_sync_uni": _vote("uni"),
    "vote_sync_ballot": _vote("ballot"),
    "activemask": (lambda k, c: md.activemask(), ['CHECK: llvm.inline_asm has_side_effects "activemask.b32 $0;", "=r"'],
                   [f"CHECK: activemask.b32 {R};"]),
    "setmaxnreg_inc": (lambda k, c: md.setmaxnreg("inc", 240), ["CHECK: nvvm.setmaxregister increase 240"],
                       ["CHECK: setmaxnreg.inc.sync.aligned.u32 240;"]),
    "setmaxnreg_dec": (lambda k, c: md.setmaxnreg("dec", 24), ["CHECK: nvvm.setmaxregister decrease 24"],
                       ["CHECK: setmaxnreg.dec.sync.aligned.u32 24;"]),
    "read_sreg_tid_x": _sreg("tid.x"),
    "read_sreg_laneid": _sreg("laneid"),
    "read_sreg_cluster_ctarank": _sreg("cluster_ctarank"),
}
for _bits in (32, 64, 128, 256):
    for _cache in (None, "ca", "cg", "cs", "lu", "cv", "nc"):
        CASES[f"ld_global_{_bits}_{_cache or 'default'}"] = _ldg(_bits, _cache)
for _n in (1, 2, 4, 8):
    for _cache in (None, "wb", "cg", "cs", "wt"):
        CASES[f"st_global_{_n}_words_{_cache or 'default'}"] = _stg(_n, _cache)


@pytest.mark.parametrize("case", sorted(CASES))
def test_warp_op_verifies_lowers_and_assembles_for_sm_90a(case, op_case):
    op_case(*CASES[case], ptx_head=("CHECK: .version 8.0", "CHECK: .target sm_90a"))


def test_ld_global_gives_one_i32_result_per_word(kernel):
    with kernel as k:
        for bits in (32, 64, 128, 256):
            words = md.ld_global(k.a["g"], bits).words
            assert len(words) == bits // 32 and all(str(w.type) == "i32" for w in words)


# -- verifier rules --------------------------------------------------------------------------


def test_a_constant_empty_lane_mask_is_rejected(kernel, const):
    with kernel, pytest.raises(VerificationError, match=r"\[lane-mask-empty\].*names no lane"):
        md.bar_warp_sync(const(0))
    with kernel as k, pytest.raises(VerificationError, match=r"'cute_nvgpu.vote_sync' breaks rule \[lane-mask-empty\]"):
        md.vote_sync("any", _pred(k, const), const(0))


def test_a_lane_mask_is_an_i32(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[mask-type\].*i32, got i16"):
        md.bar_warp_sync(k.a["small"])


@pytest.mark.parametrize("bid", [16, -1])
def test_named_barrier_ids_lie_in_0_to_15(kernel, const, bid):
    with kernel, pytest.raises(VerificationError, match=rf"\[barrier-id-range\].*\[0, 16\).*got {bid}"):
        md.barrier_sync(const(bid))
    with kernel, pytest.raises(VerificationError, match=rf"\[barrier-id-range\].*got {bid}"):
        md.barrier_arrive(const(bid), const(64))


@pytest.mark.parametrize("count", [48, 0, 1056])
def test_named_barrier_counts_are_whole_warps_of_a_block(kernel, const, count):
    with kernel, pytest.raises(VerificationError, match=rf"\[barrier-count\].*multiple of the warp size \(32\) of at "
                                                        rf"most 1024, got {count}"):
        md.barrier_sync(const(1), const(count))
    with kernel, pytest.raises(VerificationError, match=rf"\[barrier-count\].*got {count}"):
        md.barrier_arrive(const(1), const(count))


def test_named_barrier_operands_are_i32(kernel, const):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[id-type\].*got i64"):
        md.barrier_sync(k.a["hint"])
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[count-type\].*got i16"):
        md.barrier_arrive(const(1), k.a["small"])


def test_shfl_sync_with_an_unknown_mode_is_rejected(kernel, const):
    with kernel as k, pytest.raises(VerificationError, match=r"\[shfl-kind\].*idx, up, down, bfly, got 'rotate'"):
        md.shfl_sync("rotate", k.a["x"], const(1), const(31), const(-1))


def test_shfl_sync_of_a_64_bit_value_is_rejected(kernel, const):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[shfl-value-type\].*\(i32 or f32\), got i64"):
        md.shfl_sync("idx", k.a["hint"], const(1), const(31), const(-1))


def test_shfl_sync_result_has_the_value_type(kernel, const):
    with kernel as k, pytest.raises(VerificationError, match=r"\[shfl-result-type\].*i32, got f32"):
        ShflSyncOp.build(str_attr("idx"), k.a["x"], const(1), const(31), const(-1), ir.F32Type.get())


def test_shfl_sync_lane_is_an_i32_in_0_to_31(kernel, const):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[lane-type\].*got i16"):
        md.shfl_sync("idx", k.a["x"], k.a["small"], const(31), const(-1))
    with kernel as k, pytest.raises(VerificationError, match=r"\[shfl-lane-range\].*\[0, 32\), got 32"):
        md.shfl_sync("down", k.a["x"], const(32), const(31), const(-1))


@pytest.mark.parametrize("c", [0x20, 0x2000, -1])
def test_shfl_sync_c_packs_only_the_segment_mask_and_clamp(kernel, const, c):
    with kernel as k, pytest.raises(VerificationError, match=r"\[shfl-clamp\].*bits 8..12.*bits 0..4"):
        md.shfl_sync("idx", k.a["x"], const(1), const(c), const(-1))


def test_vote_sync_with_an_unknown_mode_is_rejected(kernel, const):
    with kernel as k, pytest.raises(VerificationError, match=r"\[vote-kind\].*any, all, uni, ballot, got 'none'"):
        md.vote_sync("none", _pred(k, const), const(-1))


def test_vote_sync_predicate_is_an_i1(kernel, const):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[pred-type\].*i1, got i32"):
        md.vote_sync("any", k.a["x"], const(-1))


@pytest.mark.parametrize("kind,width", [("ballot", 1), ("any", 32)])
def test_vote_sync_result_type_follows_the_mode(kernel, const, kind, width):
    with kernel as k, pytest.raises(VerificationError, match=rf"\[vote-result-type\].*vote.sync.{kind} gives an "
                                                             rf"i{32 if kind == 'ballot' else 1}, got i{width}"):
        VoteSyncOp.build(str_attr(kind), _pred(k, const), const(-1), ir.IntegerType.get_signless(width))


def test_setmaxnreg_action_is_inc_or_dec(kernel):
    with kernel, pytest.raises(VerificationError, match=r"\[setmaxnreg-action\].*'inc' or 'dec', got 'increase'"):
        md.setmaxnreg("increase", 240)


@pytest.mark.parametrize("n", [16, 20, 244, 264])
def test_setmaxnreg_count_is_a_multiple_of_8_in_24_to_256(kernel, n):
    with kernel, pytest.raises(VerificationError, match=rf"\[setmaxnreg-count\].*multiple of 8 in 24..256, got {n}"):
        md.setmaxnreg("dec", n)


def test_read_sreg_of_an_unknown_register_is_rejected(kernel):
    with kernel, pytest.raises(VerificationError, match=r"\[sreg-name\].*%tid.w"):
        md.read_sreg("tid.w")


def test_global_accesses_of_shared_memory_are_rejected(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[addr-address-space\].*global.*got !llvm.ptr<3>"):
        md.ld_global(k.s["tile"], 32)
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[addr-address-space\].*got !llvm.ptr<3>"):
        md.st_global(k.s["tile"], [k.a["x"]])


@pytest.mark.parametrize("bits", [48, 512, 16])
def test_ld_global_width_is_32_64_128_or_256_bits(kernel, bits):
    with kernel as k, pytest.raises(VerificationError, match=rf"\[ld-global-bits\].*\(32, 64, 128, 256\).*got {bits}"):
        md.ld_global(k.a["g"], bits)


def test_ld_global_gives_one_result_per_32_bit_word(kernel):
    i32 = ir.IntegerType.get_signless(32)
    with kernel as k, pytest.raises(VerificationError, match=r"\[ld-global-words\].*128-bit load gives 4 .*got 2"):
        LdGlobalOp.build(k.a["g"], i32_attr(128), str_attr(""), [i32] * 2)


@pytest.mark.parametrize("cache", ["wb", "wt", ".cg"])
def test_ld_global_cache_modifiers(kernel, cache):
    match = rf"\[ld-global-cache\].*ca, cg, cs, lu, cv, nc .*'{cache}'"
    with kernel as k, pytest.raises(VerificationError, match=match):
        md.ld_global(k.a["g"], 64, cache)


@pytest.mark.parametrize("n", [0, 3, 16])
def test_st_global_stores_1_2_4_or_8_words(kernel, n):
    match = rf"\[st-global-words\].*1, 2, 4 or 8 words.*got {n} words"
    with kernel as k, pytest.raises(VerificationError, match=match):
        md.st_global(k.a["g"], [k.a["x"]] * n)


def test_st_global_words_are_i32(kernel):
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[word-type\].*i32, got f32"):
        md.st_global(k.a["g"], [k.a["x"], k.a["f"]])


@pytest.mark.parametrize("cache", ["nc", "ca", "lu"])
def test_st_global_cache_modifiers(kernel, cache):
    with kernel as k, pytest.raises(VerificationError, match=rf"\[st-global-cache\].*wb, cg, cs, wt .*'{cache}'"):
        md.st_global(k.a["g"], [k.a["x"]], cache)


def test_a_rejected_warp_op_is_not_left_in_the_module(kernel):
    with kernel as k, pytest.raises(VerificationError):
        md.setmaxnreg("inc", 20)
    assert "cute_nvgpu.setmaxnreg" not in str(k.module)


def test_parsing_a_setmaxnreg_of_20_registers_fails_on_the_rule(ctx):
    text = """
      llvm.func @f() {
        "cute_nvgpu.setmaxnreg"() {action = "inc", count = 20 : i32} : () -> ()
        llvm.return
      }"""
    with pytest.raises(ir.MLIRError, match=r"\[setmaxnreg-count\].*got 20"):
        ir.Module.parse(text)


def test_parsing_a_shfl_sync_with_a_bad_mode_fails_on_the_rule(ctx):
    text = """
      llvm.func @f(%v: i32, %m: i32) {
        %r = "cute_nvgpu.shfl_sync"(%v, %m, %m, %m) {kind = "xor", resultSegmentSizes = array<i32: 1, 0>}
            : (i32, i32, i32, i32) -> i32
        llvm.return
      }"""
    with pytest.raises(ir.MLIRError, match=r"\[shfl-kind\].*got 'xor'"):
        ir.Module.parse(text)
