"""The ops that stand for an inline PTX statement of the kernel builtins: each lowers to exactly that
``llvm.inline_asm`` (its text, constraints, side effects and operands, written out here by hand in the order the
builtins build them), so its PTX is byte-identical to the statement's; FileCheck finds the instruction in the PTX,
which assembles for sm_90a (tcgen05 for sm_100a)."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects._backend import ir, llvm  # noqa: E402
from mlir_dialects.lowering import const_int, inline_ptx  # noqa: E402
from mlir_dialects.pipeline import lower_copy, to_ptx  # noqa: E402

R, RD, RS, F = "%r{{[0-9]+}}", "%rd{{[0-9]+}}", "%rs{{[0-9]+}}", "%r{{[0-9]+}}"
MEM = "~{memory}"


def _t(name):
    return ir.Type.parse(name)


def _asm(text, cons, operands, rtype=None):
    op = inline_ptx(text, cons, operands, rtype)
    return op.result if rtype is not None else None


def _u32(p):
    return llvm.PtrToIntOp(_t("i32"), p).result


def _cast(v, t):
    return llvm.BitcastOp(_t(t), v).result


def _keep(k, *values):
    for v in values:
        if str(v.type) == "i1":
            v = llvm.ZExtOp(_t("i32"), v).result
        llvm.StoreOp(v, k.a["g"])


def _flag(word, c):
    return llvm.ICmpOp(llvm.ICmpPredicate.ne, word, c(0)).result


def _case(build, ref, *checks, chip="sm_90a"):
    return build, ref, list(checks), chip


def _plain(builder_call, text, cons, operands, rtype, check):
    """A case of one statement on kernel arguments: ``builder_call(k, c)`` gives the op, ``operands(k, c)`` the
    statement's operands."""
    def build(k, c):
        op = builder_call(k, c)
        if op.operation.results:
            _keep(k, *op.operation.results)

    def ref(k, c):
        res = _asm(text, cons, operands(k, c), None if rtype is None else _t(rtype))
        if res is not None:
            _keep(k, res)

    return _case(build, ref, check)


_PEER = "{\n\t.reg .b32 %ra;\n\tmapa.shared::cluster.u32 %ra, $1, $2;\n\t"
_PEER0 = "{\n\t.reg .b32 %ra;\n\tmapa.shared::cluster.u32 %ra, $0, $1;\n\t"
CASES = {
    # -- memory: atom, red, ld/st with qualifiers, createpolicy
    "atom_add_f32_global_relaxed_gpu": _plain(
        lambda k, c: md.atom("add", "f32", k.a["g"], [k.a["f"]], sem="relaxed", scope="gpu"),
        "atom.relaxed.gpu.global.add.f32 $0, [$1], $2;", f"=f,l,f,{MEM}", lambda k, c: [k.a["g"], k.a["f"]], "f32",
        "CHECK: atom.relaxed.gpu.global.add.f32"),
    "atom_add_f16_shared_noftz": _case(
        lambda k, c: _keep(k, md.atom("add", "f16", k.s["tile"], [_cast(k.a["small"], "f16")]).res),
        lambda k, c: _keep(k, (lambda h: _asm("atom.shared::cta.add.noftz.f16 $0, [$1], $2;", f"=h,r,h,{MEM}",
                                              [_u32(k.s["tile"]), h], _t("f16")))(_cast(k.a["small"], "f16"))),
        "CHECK: atom.shared::cta.add.noftz.f16"),
    "atom_cas_b32_peer": _plain(
        lambda k, c: md.atom("cas", "b32", k.s["tile"], [k.a["x"], k.a["y"]], peer=k.a["peer"]),
        _PEER + "atom.shared::cluster.cas.b32 $0, [%ra], $3, $4;\n\t}", f"=r,r,r,r,r,{MEM}",
        lambda k, c: [_u32(k.s["tile"]), k.a["peer"], k.a["x"], k.a["y"]], "i32",
        "CHECK: atom.shared::cluster.cas.b32"),
    "atom_cas_b16_global_acq_rel": _plain(
        lambda k, c: md.atom("cas", "b16", k.a["g"], [k.a["small"]] * 2, sem="acq_rel", scope="cluster"),
        "atom.acq_rel.cluster.global.cas.b16 $0, [$1], $2, $3;", f"=h,l,h,h,{MEM}",
        lambda k, c: [k.a["g"], k.a["small"], k.a["small"]], "i16", "CHECK: atom.acq_rel.cluster.global.cas.b16"),
    "atom_max_s64_global": _plain(
        lambda k, c: md.atom("max", "s64", k.a["g"], [k.a["hint"]]), "atom.global.max.s64 $0, [$1], $2;",
        f"=l,l,l,{MEM}", lambda k, c: [k.a["g"], k.a["hint"]], "i64", "CHECK: atom.global.max.s64"),
    "atom_exch_b32_f32_shared_release_sys": _plain(
        lambda k, c: md.atom("exch", "b32", k.s["tile"], [k.a["f"]], sem="release", scope="sys"),
        "atom.release.sys.shared::cta.exch.b32 $0, [$1], $2;", f"=f,r,f,{MEM}",
        lambda k, c: [_u32(k.s["tile"]), k.a["f"]], "f32", "CHECK: atom.release.sys.shared::cta.exch.b32"),
    "red_add_f32_global_release_gpu": _plain(
        lambda k, c: md.red("add", "f32", k.a["g"], k.a["f"], sem="release", scope="gpu"),
        "red.release.gpu.global.add.f32 [$0], $1;", f"l,f,{MEM}", lambda k, c: [k.a["g"], k.a["f"]], None,
        "CHECK: red.release.gpu.global.add.f32"),
    "red_add_bf16x2_shared": _plain(
        lambda k, c: md.red("add", "bf16x2", k.s["tile"], k.a["x"]), "red.shared::cta.add.noftz.bf16x2 [$0], $1;",
        f"r,r,{MEM}", lambda k, c: [_u32(k.s["tile"]), k.a["x"]], None, "CHECK: red.shared::cta.add.noftz.bf16x2"),
    "red_min_u64_peer_relaxed": _plain(
        lambda k, c: md.red("min", "u64", k.s["tile"], k.a["hint"], sem="relaxed", scope="cluster", peer=k.a["peer"]),
        _PEER0 + "red.relaxed.cluster.shared::cluster.min.u64 [%ra], $2;\n\t}", f"r,r,l,{MEM}",
        lambda k, c: [_u32(k.s["tile"]), k.a["peer"], k.a["hint"]], None, "CHECK: red.relaxed.cluster.shared::cluster"),
    "ld_scalar_u32_acquire_gpu": _plain(
        lambda k, c: md.ld_scalar("u32", k.a["g"], _t("i32"), sem="acquire", scope="gpu"),
        "ld.acquire.gpu.global.u32 $0, [$1];", f"=r,l,{MEM}", lambda k, c: [k.a["g"]], "i32",
        "CHECK: ld.acquire.gpu.global.u32"),
    "ld_scalar_u8_cg_prefetch": _plain(
        lambda k, c: md.ld_scalar("u8", k.a["g"], _t("i16"), cop="cg", prefetch="L2::128B"),
        "ld.global.cg.L2::128B.u8 $0, [$1];", f"=h,l,{MEM}", lambda k, c: [k.a["g"]], "i16",
        "CHECK: ld.global.cg.L2::128B.u8"),
    "ld_scalar_b16_bf16_shared": _plain(
        lambda k, c: md.ld_scalar("b16", k.s["tile"], _t("bf16")), "ld.shared::cta.b16 $0, [$1];", f"=h,r,{MEM}",
        lambda k, c: [_u32(k.s["tile"])], "bf16", "CHECK: ld.shared::cta.b16"),
    "ld_scalar_f64_evict_last": _plain(
        lambda k, c: md.ld_scalar("f64", k.a["g"], _t("f64"), eviction="L1::evict_last"),
        "ld.global.L1::evict_last.f64 $0, [$1];", f"=d,l,{MEM}", lambda k, c: [k.a["g"]], "f64",
        "CHECK: ld.global.L1::evict_last.f64"),
    "ld_scalar_s32_peer_relaxed": _plain(
        lambda k, c: md.ld_scalar("s32", k.s["tile"], _t("i32"), sem="relaxed", scope="cluster", peer=k.a["peer"]),
        _PEER + "ld.relaxed.cluster.shared::cluster.s32 $0, [%ra];\n\t}", f"=r,r,r,{MEM}",
        lambda k, c: [_u32(k.s["tile"]), k.a["peer"]], "i32", "CHECK: ld.relaxed.cluster.shared::cluster.s32"),
    "st_scalar_u32_shared_release_cta": _plain(
        lambda k, c: md.st_scalar("u32", k.s["tile"], k.a["x"], sem="release", scope="cta"),
        "st.release.cta.shared::cta.u32 [$0], $1;", f"r,r,{MEM}", lambda k, c: [_u32(k.s["tile"]), k.a["x"]], None,
        "CHECK: st.release.cta.shared::cta.u32"),
    "st_scalar_f32_wt": _plain(
        lambda k, c: md.st_scalar("f32", k.a["g"], k.a["f"], cop="wt"), "st.global.wt.f32 [$0], $1;", f"l,f,{MEM}",
        lambda k, c: [k.a["g"], k.a["f"]], None, "CHECK: st.global.wt.f32"),
    "st_scalar_s16_evict_first": _plain(
        lambda k, c: md.st_scalar("s16", k.a["g"], k.a["small"], eviction="L1::evict_first"),
        "st.global.L1::evict_first.s16 [$0], $1;", f"l,h,{MEM}", lambda k, c: [k.a["g"], k.a["small"]], None,
        "CHECK: st.global.L1::evict_first.s16"),
    "st_scalar_u64_peer": _plain(
        lambda k, c: md.st_scalar("u64", k.s["tile"], k.a["hint"], peer=k.a["peer"]),
        _PEER0 + "st.shared::cluster.u64 [%ra], $2;\n\t}", f"r,r,l,{MEM}",
        lambda k, c: [_u32(k.s["tile"]), k.a["peer"], k.a["hint"]], None, "CHECK: st.shared::cluster.u64"),
    "createpolicy_evict_first": _plain(
        lambda k, c: md.createpolicy("evict_first"), "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;", "=l",
        lambda k, c: [], "i64", "CHECK: createpolicy.fractional.L2::evict_first.b64 {{%rd[0-9]+}}, 1.0;"),
    # -- sync, warp, warpgroup
    "barrier_arrive_unaligned": _plain(
        lambda k, c: md.barrier_arrive(c(1), c(64), aligned=False), "barrier.cta.arrive $0, $1;", f"r,r,{MEM}",
        lambda k, c: [c(1), c(64)], None, f"CHECK: barrier.cta.arrive {R}, {R};"),
    "grid_sync": _plain(lambda k, c: md.grid_sync(), md.ops.sync._GRID_SYNC, MEM, lambda k, c: [], None,
                        "CHECK: atom.add.release.gpu.global.u32"),
    "match_sync_all_b64": _plain(
        lambda k, c: md.match_sync("all", k.a["hint"], c(-1)),
        "{\n\t.reg .pred %p;\n\tmatch.all.sync.b64 $0|%p, $1, $2;\n\t}", "=r,l,r", lambda k, c: [k.a["hint"], c(-1)],
        "i32", "CHECK: match.all.sync.b64"),
    "match_sync_any_b32": _plain(
        lambda k, c: md.match_sync("any", k.a["x"], k.a["y"]), "match.any.sync.b32 $0, $1, $2;", "=r,r,r",
        lambda k, c: [k.a["x"], k.a["y"]], "i32", "CHECK: match.any.sync.b32"),
    "read_sreg_volatile_warp_sz": _plain(
        lambda k, c: md.read_sreg_volatile("WARP_SZ"), "mov.u32 $0, WARP_SZ;", "=r", lambda k, c: [], "i32",
        "CHECK: mov.u32 {{%r[0-9]+}}, WARP_SZ;"),
    "wgmma_fence_operand_i32": _plain(
        lambda k, c: md.wgmma_fence_operand(k.a["x"]), "", "=r,0", lambda k, c: [k.a["x"]], "i32",
        "CHECK: // begin inline asm"),
    "wgmma_fence_operand_f32": _plain(
        lambda k, c: md.wgmma_fence_operand(k.a["f"]), "", "=f,0", lambda k, c: [k.a["f"]], "f32",
        "CHECK: // begin inline asm"),
    # -- numbers
    "float_minmax_max": _plain(
        lambda k, c: md.float_minmax("max", k.a["f"], k.a["f"]), "max.f32 $0, $1, $2;", "=f,f,f",
        lambda k, c: [k.a["f"], k.a["f"]], "f32", "CHECK: max.f32"),
    "float_minmax_min_all_modifiers": _plain(
        lambda k, c: md.float_minmax("min", k.a["f"], k.a["f"], ftz=True, nan=True, xorsign_abs=True),
        "min.ftz.NaN.xorsign.abs.f32 $0, $1, $2;", "=f,f,f", lambda k, c: [k.a["f"], k.a["f"]], "f32",
        "CHECK: min.ftz.NaN.xorsign.abs.f32"),
    "math_approx_rcp_volatile": _plain(
        lambda k, c: md.math_approx("rcp", k.a["f"], ftz=True, volatile=True), "rcp.approx.ftz.f32 $0, $1;", "=f,f",
        lambda k, c: [k.a["f"]], "f32", "CHECK: rcp.approx.ftz.f32"),
    "math_approx_ex2_volatile": _plain(
        lambda k, c: md.math_approx("ex2", k.a["f"], ftz=True, volatile=True), "ex2.approx.ftz.f32 $0, $1;", "=f,f",
        lambda k, c: [k.a["f"]], "f32", "CHECK: ex2.approx.ftz.f32"),
    "cvt_f32_tf32": _plain(
        lambda k, c: md.cvt_f32("tf32", k.a["f"]), "cvt.rna.tf32.f32 $0, $1;", "=r,f", lambda k, c: [k.a["f"]], "i32",
        "CHECK: cvt.rna.tf32.f32"),
    "cvt_f32_bf16": _plain(
        lambda k, c: md.cvt_f32("bf16", k.a["f"]), "cvt.rn.bf16.f32 $0, $1;", "=h,f", lambda k, c: [k.a["f"]],
        "bf16", "CHECK: cvt.rn.bf16.f32"),
    "cvt_f32_bf16x2_satfinite": _plain(
        lambda k, c: md.cvt_f32("bf16x2_satfinite", k.a["f"], k.a["f"]), md.ops.numeric._BF16X2_SATFINITE, "=r,f,f",
        lambda k, c: [k.a["f"], k.a["f"]], "i32", "CHECK: cvt.rn.bf16x2.f32"),
    # -- sm_100a
    "tcgen05_commit_pointer": _case(
        lambda k, c: md.tcgen05_commit(k.s["bar"]),
        lambda k, c: _asm("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [$0];",
                          f"r,{MEM}", [_u32(k.s["bar"])]),
        "CHECK: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64", chip="sm_100a"),
    "tcgen05_commit_address": _case(
        lambda k, c: md.tcgen05_commit(k.a["x"]),
        lambda k, c: _asm("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [$0];",
                          f"r,{MEM}", [k.a["x"]]),
        f"CHECK: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [{R}];", chip="sm_100a"),
}
for _kind in ("alias", "async"):
    CASES[f"fence_proxy_{_kind}"] = _plain(lambda k, c, kind=_kind: md.fence_proxy(kind), f"fence.proxy.{_kind};",
                                           MEM, lambda k, c: [], None, f"CHECK: fence.proxy.{_kind};")
CASES["trap"] = _plain(lambda k, c: md.trap(), "trap;", MEM, lambda k, c: [], None, "CHECK: trap;")
for _kind in ("wait", "launch_dependents"):
    CASES[f"griddepcontrol_{_kind}"] = _plain(lambda k, c, kind=_kind: md.griddepcontrol(kind),
                                              f"griddepcontrol.{_kind};", MEM, lambda k, c: [], None,
                                              f"CHECK: griddepcontrol.{_kind};")
for _op, _ty in (("add", "u32"), ("min", "s32"), ("max", "u32"), ("xor", "b32")):
    CASES[f"redux_sync_{_op}_{_ty}"] = _plain(
        lambda k, c, op=_op, ty=_ty: md.redux_sync(op, ty, k.a["x"], c(-1)), f"redux.sync.{_op}.{_ty} $0, $1, $2;",
        "=r,r,r", lambda k, c: [k.a["x"], c(-1)], "i32", f"CHECK: redux.sync.{_op}.{_ty}")
for _name, _bits in (("dynamic_smem_size", 32), ("total_smem_size", 32), ("clock", 32), ("clock64", 64),
                     ("globaltimer", 64), ("globaltimer_lo", 32), ("gridid", 64)):
    CASES[f"read_sreg_volatile_{_name}"] = _plain(
        lambda k, c, name=_name: md.read_sreg_volatile(name), f"mov.u{_bits} $0, %{_name};",
        "=l" if _bits == 64 else "=r", lambda k, c: [], f"i{_bits}",
        f"CHECK: mov.u{_bits} {{{{%r[d]?[0-9]+}}}}, %{_name};")


def _float_minmax_case(kind, sign, where, sem=None, scope=None):
    neg, pos = ("min.u32", "max.s32") if kind == "max" else ("max.u32", "min.s32")
    q = (f".{sem}" if sem else "") + (f".{scope}" if scope else "")
    space, first = {"global": ("global", "$1"), "shared": ("shared::cta", "$1"), "peer": ("shared::cluster", "[%ra]")}[
        where]
    addr = first if where == "peer" else f"[{first}]"
    v = "$3" if where == "peer" else "$2"
    if sign == "any":
        body = (f"{{\n\t.reg .pred %neg;\n\tsetp.lt.s32 %neg, {v}, 0;\n\t@%neg atom{q}.{space}.{neg} $0, {addr}, {v};"
                f"\n\t@!%neg atom{q}.{space}.{pos} $0, {addr}, {v};\n\t}}")
    else:
        body = f"atom{q}.{space}.{neg if sign == 'negative' else pos} $0, {addr}, {v};"
    text = _PEER + body + "\n\t}" if where == "peer" else body

    def ptr(k):
        return k.a["g"] if where == "global" else k.s["tile"]

    def build(k, c):
        _keep(k, md.atom_float_minmax(kind, ptr(k), k.a["f"], sign=sign, sem=sem, scope=scope,
                                      peer=k.a["peer"] if where == "peer" else None).res)

    def ref(k, c):
        bits = _cast(k.a["f"], "i32")
        ops = [k.a["g"]] if where == "global" else [_u32(k.s["tile"])] + ([k.a["peer"]] if where == "peer" else [])
        cons = ["=r", "l" if where == "global" else "r"] + (["r"] if where == "peer" else []) + ["r", MEM]
        _keep(k, _cast(_asm(text, ",".join(cons), ops + [bits], _t("i32")), "f32"))

    return _case(build, ref, f"CHECK: atom{q}.{space}.{neg if sign != 'non_negative' else pos}")


for _args in (("max", "any", "global"), ("min", "any", "peer", "acquire", "cluster"), ("max", "negative", "shared"),
              ("min", "non_negative", "global", "release", "gpu")):
    CASES["atom_float_minmax_" + "_".join(_args)] = _float_minmax_case(*_args)

# -- integers: (name, instr, kernel arguments, keywords, PTX, constraints, result type)
_INT = [
    ("clz_b32", "clz", "x", {}, "clz.b32 $0, $1;", "=r,r", "i32"),
    ("clz_b64", "clz", "hint", {}, "clz.b64 $0, $1;", "=r,l", "i32"),
    ("bfind_s32", "bfind", "x", {"signed": True}, "bfind.s32 $0, $1;", "=r,r", "i32"),
    ("bfind_u64", "bfind", "hint", {}, "bfind.u64 $0, $1;", "=r,l", "i32"),
    ("brev_b64", "brev", "hint", {}, "brev.b64 $0, $1;", "=l,l", "i64"),
    ("bfe_u32", "bfe", "x y z", {}, "bfe.u32 $0, $1, $2, $3;", "=r,r,r,r", "i32"),
    ("bfe_s64", "bfe", "hint y z", {"signed": True}, "bfe.s64 $0, $1, $2, $3;", "=l,l,r,r", "i64"),
    ("bfi_b32", "bfi", "x y z val", {}, "bfi.b32 $0, $1, $2, $3, $4;", "=r,r,r,r,r", "i32"),
    ("bfi_b64", "bfi", "hint addr z val", {}, "bfi.b64 $0, $1, $2, $3, $4;", "=l,l,l,r,r", "i64"),
    ("mul_hi_s32", "mul_hi", "x y", {"signed": True}, "mul.hi.s32 $0, $1, $2;", "=r,r,r", "i32"),
    ("mul_hi_u64", "mul_hi", "hint addr", {}, "mul.hi.u64 $0, $1, $2;", "=l,l,l", "i64"),
    ("mul_wide_s16", "mul_wide", "small small", {"signed": True}, "mul.wide.s16 $0, $1, $2;", "=r,h,h", "i32"),
    ("mul_wide_u32", "mul_wide", "x y", {}, "mul.wide.u32 $0, $1, $2;", "=l,r,r", "i64"),
    ("mul24_hi_s32", "mul24", "x y", {"signed": True, "mode": "hi"}, "mul24.hi.s32 $0, $1, $2;", "=r,r,r", "i32"),
    ("mad24_lo_u32", "mad24", "x y z", {"mode": "lo"}, "mad24.lo.u32 $0, $1, $2, $3;", "=r,r,r,r", "i32"),
    ("add_cc_u32", "add_cc", "x y", {}, "add.cc.u32 $0, $1, $2;", "=r,r,r", "i32"),
    ("addc_u64", "addc", "hint addr", {}, "addc.u64 $0, $1, $2;", "=l,l,l", "i64"),
    ("sub_cc_u64", "sub_cc", "hint addr", {}, "sub.cc.u64 $0, $1, $2;", "=l,l,l", "i64"),
    ("subc_u32", "subc", "x y", {}, "subc.u32 $0, $1, $2;", "=r,r,r", "i32"),
    ("mad_cc_s32", "mad_cc", "x y z", {"signed": True}, "mad.lo.cc.s32 $0, $1, $2, $3;", "=r,r,r,r", "i32"),
    ("madc_u64", "madc", "hint addr hint", {}, "madc.lo.u64 $0, $1, $2, $3;", "=l,l,l,l", "i64"),
    ("add_sat", "add_sat", "x y", {"signed": True}, "add.sat.s32 $0, $1, $2;", "=r,r,r", "i32"),
    ("sub_sat", "sub_sat", "x y", {"signed": True}, "sub.sat.s32 $0, $1, $2;", "=r,r,r", "i32"),
    ("lop3", "lop3", "x y z", {"lut": 0x96}, "lop3.b32 $0, $1, $2, $3, 150;", "=r,r,r,r", "i32"),
    ("shf_l_wrap", "shf", "x y z", {"mode": "l.wrap"}, "shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r", "i32"),
    ("shf_r_clamp", "shf", "x y z", {"mode": "r.clamp"}, "shf.r.clamp.b32 $0, $1, $2, $3;", "=r,r,r,r", "i32"),
    ("prmt", "prmt", "x y z", {}, "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", "i32"),
    ("pack_b64", "pack_b64", "x y", {}, "mov.b64 $0, {$1, $2};", "=l,r,r", "i64"),
    ("add_lo32", "add_lo32", "hint x", {},
     "{\n\t.reg .b32 lo, hi;\n\tmov.b64 {lo, hi}, $1;\n\tadd.u32 lo, lo, $2;\n\tmov.b64 $0, {lo, hi};\n\t}", "=l,l,r",
     "i64"),
]
for _name, _instr, _args, _kw, _text, _cons, _rt in _INT:
    CASES[f"int_op_{_name}"] = _plain(
        lambda k, c, instr=_instr, args=_args, kw=_kw: md.int_op(instr, [k.a[a] for a in args.split()], **kw),
        _text, _cons, lambda k, c, args=_args: [k.a[a] for a in args.split()], _rt,
        "CHECK: " + _text.split(" $")[0].replace("{\n\t", "").split("\n")[0])


def _carry_chain():
    def build(k, c):
        lo = md.int_op("add_cc", [k.a["x"], k.a["y"]]).res
        _keep(k, lo, md.int_op("addc", [k.a["z"], k.a["val"]]).res)

    def ref(k, c):
        lo = _asm("add.cc.u32 $0, $1, $2;", "=r,r,r", [k.a["x"], k.a["y"]], _t("i32"))
        _keep(k, lo, _asm("addc.u32 $0, $1, $2;", "=r,r,r", [k.a["z"], k.a["val"]], _t("i32")))

    return _case(build, ref, "CHECK: add.cc.u32", "CHECK: addc.u32")


CASES["int_op_carry_chain"] = _carry_chain()


# -- mbarriers
def _scoped(kind, scope, peer):
    sp = "shared::cluster" if peer else "shared::cta"
    m, v = ("%rb", "$2") if peer else ("$0", "$1")
    instr = {"arrive": f"mbarrier.arrive.release.{scope}.{sp}.b64 {'_' if peer else '%st'}, [{m}], {v};",
             "arrive_expect_tx": f"mbarrier.arrive.expect_tx.release.{scope}.{sp}.b64 _, [{m}], {v};",
             "expect_tx": f"mbarrier.expect_tx.relaxed.{scope}.{sp}.b64 [{m}], {v};"}[kind]
    if peer:
        text = "{\n\t.reg .b32 %rb;\n\tmapa.shared::cluster.u32 %rb, $0, $1;\n\t" + instr + "\n\t}"
        cons = f"r,r,r,{MEM}"
    else:
        text = "{\n\t.reg .b64 %st;\n\t" + instr + "\n\t}" if kind == "arrive" else instr
        cons = f"r,r,{MEM}"
    return _plain(lambda k, c: md.mbarrier_scoped(kind, k.s["bar"], c(64), scope=scope,
                                                  peer=k.a["peer"] if peer else None),
                  text, cons, lambda k, c: [_u32(k.s["bar"])] + ([k.a["peer"]] if peer else []) + [c(64)], None,
                  "CHECK: " + instr.split(" ")[0])


for _kind in ("arrive", "arrive_expect_tx", "expect_tx"):
    for _scope in ("cta", "cluster"):
        for _peer in (False, True):
            CASES[f"mbarrier_scoped_{_kind}_{_scope}{'_peer' if _peer else ''}"] = _scoped(_kind, _scope, _peer)
CASES["mbarrier_test_wait_parity"] = _case(
    lambda k, c: _keep(k, md.mbarrier_test_wait_parity(k.s["bar"], k.a["x"]).done),
    lambda k, c: _keep(k, _flag(_asm("{\n\t.reg .pred %p;\n\tmbarrier.test_wait.parity.shared::cta.b64 %p, [$1], $2;"
                                     "\n\tselp.u32 $0, 1, 0, %p;\n\t}", f"=r,r,r,{MEM}", [_u32(k.s["bar"]), k.a["x"]],
                                     _t("i32")), c)),
    "CHECK: mbarrier.test_wait.parity.shared::cta.b64")


def _try_wait_if(k, c):
    cond = llvm.ICmpOp(llvm.ICmpPredicate.slt, k.a["y"], c(0)).result
    return cond, llvm.ZExtOp(_t("i32"), cond).result


CASES["mbarrier_try_wait_parity_if"] = _case(
    lambda k, c: _keep(k, md.mbarrier_try_wait_parity_if(_try_wait_if(k, c)[0], k.s["bar"], k.a["x"]).done),
    lambda k, c: _keep(k, _flag(_asm(
        "{\n\t.reg .pred %c, %p;\n\tsetp.ne.b32 %c, $1, 0;\n\tsetp.eq.b32 %p, 0, 0;\n\t"
        "@%c mbarrier.try_wait.parity.shared::cta.b64 %p, [$2], $3;\n\tselp.u32 $0, 1, 0, %p;\n\t}",
        f"=r,r,r,r,{MEM}", [_try_wait_if(k, c)[1], _u32(k.s["bar"]), k.a["x"]], _t("i32")), c)),
    "CHECK: @%c mbarrier.try_wait.parity.shared::cta.b64")


# -- Volta's mma.sync.m8n8k4
def _m8n8k4(la, lb, acc):
    n, reg, t = (8, "f", "f32") if acc == "f32" else (4, "r", "i32")

    def vec(first, count):
        return "{" + ", ".join(f"${first + i}" for i in range(count)) + "}"

    text = (f"mma.sync.aligned.m8n8k4.{la}.{lb}.{acc}.f16.f16.{acc} {vec(0, n)}, {vec(n, 2)}, {vec(n + 2, 2)}, "
            f"{vec(n + 4, n)};")

    def cvals(k):
        return [k.a["f"] if acc == "f32" else k.a["z"]] * n

    def build(k, c):
        _keep(k, *md.mma_sync("m8n8k4", "f16", acc, [k.a["x"]] * 2, [k.a["y"]] * 2, cvals(k), layout_a=la,
                              layout_b=lb).d)

    def ref(k, c):
        res = _asm(text, ",".join([f"={reg}"] * n + ["r"] * 4 + [reg] * n), [k.a["x"]] * 2 + [k.a["y"]] * 2 + cvals(k),
                   _t(f"!llvm.struct<({', '.join([t] * n)})>"))
        _keep(k, *[llvm.ExtractValueOp(_t(t), res, [i]).result for i in range(n)])

    return _case(build, ref, f"CHECK: mma.sync.aligned.m8n8k4.{la}.{lb}.{acc}.f16.f16.{acc}")


for _la, _lb, _acc in (("row", "col", "f32"), ("col", "row", "f16"), ("row", "row", "f32"), ("col", "col", "f16")):
    CASES[f"mma_sync_m8n8k4_{_la}_{_lb}_{_acc}"] = _m8n8k4(_la, _lb, _acc)


def _inline_asm_of(module):
    """``[(text, constraints, side effects, operand types, result types)]`` of the module's ``llvm.inline_asm``."""
    found = []

    def visit(op):
        if op.name == "llvm.inline_asm":
            a = op.attributes
            found.append((ir.StringAttr(a["asm_string"]).value, ir.StringAttr(a["constraints"]).value,
                          "has_side_effects" in a, [str(v.type) for v in op.operands],
                          [str(r.type) for r in op.results]))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_lowers_to_the_inline_ptx_it_stands_for_byte_for_byte(case, kernel, filecheck, assemble):
    build, ref, checks, chip = CASES[case]
    other = type(kernel)()
    with kernel as k:
        build(k, const_int)
    with other as k:
        ref(k, const_int)
    md.verify(kernel.module)
    mine, theirs = _inline_asm_of(lower_copy(kernel.module)), _inline_asm_of(other.module)
    assert mine and mine == theirs
    target = {"chip": chip, "features": "+ptx86" if chip == "sm_100a" else "+ptx80"}
    ptx = to_ptx(kernel.module, **target)
    assert ptx == to_ptx(other.module, **target)
    filecheck(ptx, [f"CHECK: .target {chip}"] + checks)
    assemble(ptx, chip)
