"""The DSL's warp builtins (``cute_py.arch``): shuffles of every numeric type with the DSL's ``mask_and_clamp``, votes,
``activemask``, lane masks, ``match_sync`` and ``warp_redux_sync`` -- the PTX each becomes, assembled for sm_90a, the
types of the results, and the argument rules."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError

I32, I64 = cute.Int32, cute.Int64


def compile_body(body, *, block=64):
    @cute.kernel
    def k(inp, out, f):
        body(inp, out, f)

    def host(inp, out, f):
        k(inp, out, f).launch(grid=1, block=block)

    spec = cute.compiler.DeviceArraySpec("Int32", (1024,))
    return cute.compile(host, spec, spec, cute.Float32(1.5))


def rejects(body, match):
    with pytest.raises(TraceError, match=match) as info:
        compile_body(body)
    return str(info.value)


def _x(i):
    (x,) = arch.ldg32(i.engine, index=arch.thread_idx()[0])
    return x


# -- shuffles -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, mode, c", [
    (arch.shuffle_sync, "idx", 31), (arch.shuffle_sync_up, "up", 0), (arch.shuffle_sync_down, "down", 31),
    (arch.shuffle_sync_bfly, "bfly", 31)])
def test_the_dsls_default_segment_is_the_warp(fn, mode, c, filecheck):
    def body(i, o, f):
        arch.stg32(o.engine, fn(_x(i), 1), index=arch.thread_idx()[0])

    filecheck(compile_body(body).ptx, [f"CHECK: shfl.sync.{mode}.b32 {{{{%r[0-9]+}}}}, {{{{%r[0-9]+}}}}, 1, {c}, -1;"])


def test_mask_and_clamp_is_ptxs_c_operand(filecheck):
    # a segment of 8 lanes clamped at lane 5 of it, a run-time c, and the keyword width= (cute_py's)
    def body(i, o, f):
        x, t = _x(i), arch.thread_idx()[0]
        ys = (arch.shuffle_sync(x, 7, 0xFFFFFFFF, (24 << 8) | 5), arch.shuffle_sync_up(x, 2, mask_and_clamp=24 << 8),
              arch.shuffle_sync_down(x, 3, 0xFFFF, mask_and_clamp=x & 0x1F1F), arch.shuffle_sync_bfly(x, 1, width=4))
        arch.stg128(o.engine, ys, index=t)

    filecheck(compile_body(body).ptx, [
        "CHECK: shfl.sync.idx.b32 {{%r[0-9]+}}, [[X:%r[0-9]+]], 7, 6149, -1;",
        "CHECK: shfl.sync.up.b32 {{%r[0-9]+}}, [[X]], 2, 6144, -1;",
        "CHECK: and.b32 [[C:%r[0-9]+]], [[X]], 7967;",
        "CHECK: shfl.sync.down.b32 {{%r[0-9]+}}, [[X]], 3, [[C]], 65535;",
        "CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, [[X]], 1, 7199, -1;",
    ])


def test_every_numeric_type_shuffles_and_keeps_its_type(filecheck, assemble):
    seen = {}

    def body(i, o, f):
        x = _x(i)
        vals = {"Boolean": x > 3, "Int8": cute.Int8(x), "Uint16": cute.Uint16(x), "Uint32": cute.Uint32(x),
                "Int64": I64(x) << 20,
                "Uint64": cute.Uint64(x), "Float16": cute.Float16(f), "BFloat16": cute.BFloat16(f), "Float32": f,
                "Float64": cute.Float64(f)}
        out = []
        for name, v in vals.items():
            r = arch.shuffle_sync_bfly(v, 2)
            seen[name] = r.dtype
            out.append(I32(r))
        arch.stg256(o.engine, tuple(out[:8]), index=arch.thread_idx()[0])
        arch.stg64(o.engine + 512, tuple(out[8:]), index=arch.thread_idx()[0])

    c = compile_body(body)
    assert {k: v.name for k, v in seen.items()} == {k: k for k in seen}
    # 16-bit floats move as Float32 (exact); 64-bit values as two halves
    filecheck(c.ptx, ["CHECK-COUNT-8: shfl.sync.bfly.b32", "CHECK: cvt.f32.f16", "CHECK: shfl.sync.bfly.b32",
                      "CHECK: cvt.rn.f16.f32"])
    assert c.ptx.count("shfl.sync.bfly.b32") == 13
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda x: arch.shuffle_sync(x, 1, mask_and_clamp=0x2000), r"mask_and_clamp packs a segment mask in bits 8..12 "
                                                                r"and a clamp lane in bits 0..4 .* got 0x2000"),
    (lambda x: arch.shuffle_sync(x, 1, mask_and_clamp=-1), "got -0x1, which sets other bits"),
    (lambda x: arch.shuffle_sync(x, 32), r"shuffle_sync: src_lane must lie in \[0, 32\) \(less than the width 32\)"),
    (lambda x: arch.shuffle_sync(x, 32, mask_and_clamp=(20 << 8) | 31),  # segments that are no power of two wide
     r"shuffle_sync: src_lane must lie in \[0, 32\) \(a lane of the warp\), got 32"),
    (lambda x: arch.shuffle_sync(x, 9, mask_and_clamp=(24 << 8) | 31), r"src_lane must lie in \[0, 8\) \(less than "
                                                                         r"the width 8\), got 9"),
    (lambda x: arch.shuffle_sync_up(x, 1, mask_and_clamp=(24 << 8), width=8), "give width= or mask_and_clamp=, not both"),
    (lambda x: arch.shuffle_sync(x, I64(x)), "shuffle_sync: src_lane must be an integer of at most 32 bits"),
    (lambda x: arch.shuffle_sync(1.5, 0), r"shuffle_sync shuffles traced numbers .*, got float"),
    (lambda x: arch.shuffle_sync(x, 0, mask=0), r"shuffle_sync: mask names no lane \(0\)"),
])
def test_shuffle_rules(call, match):
    rejects(lambda i, o, f: call(_x(i)), match)


def test_the_dsls_shuffle_sync_op_full_mask_and_warp_reductions(filecheck, assemble):
    kinds = {}

    def body(i, o, f):
        x, t = _x(i), arch.thread_idx()[0]
        a = arch.shuffle_sync_op(x, 2, arch.FULL_MASK, 31, "down")
        b = arch.shuffle_sync(x, 1, mask=-1)  # the DSL's mask=-1: every lane
        s = arch.warp_reduction_sum(x)
        m = arch.warp_reduction_max(f, threads_in_group=8)
        n = arch.warp_reduction(x, lambda u, v: u ^ v, threads_in_group=4)
        kinds.update(s=s.dtype.name, m=m.dtype.name)
        arch.stg128(o.engine, (a, b, s, n), index=t)
        arch.stg32(o.engine + 512, m, index=t)
        arch.griddepcontrol_wait()
        arch.griddepcontrol_launch_dependents()

    c = compile_body(body)
    assert kinds == {"s": "Int32", "m": "Float32"} and arch.FULL_MASK == 0xFFFFFFFF
    filecheck(c.ptx, [
        "CHECK: shfl.sync.down.b32 {{%r[0-9]+}}, [[X:%r[0-9]+]], 2, 31, -1;",
        "CHECK: shfl.sync.idx.b32 {{%r[0-9]+}}, [[X]], 1, 31, -1;",
        # the sum: butterflies over 16, 8, 4, 2, 1 lanes
        "CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 16, 31, -1;",
        "CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 31, -1;",
        "CHECK: griddepcontrol.wait;",
        "CHECK: griddepcontrol.launch_dependents;",
    ])
    assert c.ptx.count("max.f32") == 3  # a group of 8 lanes: three butterfly steps, each an fmax
    assemble(c.ptx)


def test_trap_after_printing_the_broken_rule(filecheck, assemble):
    """``arch.trap()`` under a run-time condition: the rule printed (``vprintf``), then ``trap``, on its own
    path."""

    @cute.jit
    def check(x, t):
        if x < 0:
            cute.printf("row {} holds {}, below 0", t, x)
            arch.trap()

    def body(i, o, f):
        x, t = _x(i), arch.thread_idx()[0]
        check(x, t)
        arch.stg32(o.engine, x, index=t)

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: setp.{{[a-z]+}}.s32",
        "CHECK: @%p{{[0-9]+}} bra",
        "CHECK: vprintf",
        "CHECK: trap;",
        "CHECK: st.global",
    ])
    assemble(c.ptx)


# -- votes, masks -----------------------------------------------------------------------------------------


def test_votes_activemask_and_lane_masks(filecheck, assemble):
    kinds = {}

    def body(i, o, f):
        x = _x(i)
        ballot = arch.vote_ballot_sync(x > 3)
        flags = [cute.compiler.select(c, 1, 0) for c in (arch.vote_any_sync(x == 1, 0xFF), arch.vote_all_sync(x != 0),
                                                         arch.vote_uni_sync(x < 9))]
        masks = (arch.activemask(), arch.lanemask_lt(), arch.lanemask_le(), arch.lanemask_eq(), arch.lanemask_ge(),
                 arch.lanemask_gt())
        kinds.update(ballot=ballot.dtype, active=masks[0].dtype, lt=masks[1].dtype)
        arch.stg256(o.engine, (ballot, *flags, *masks[:4]), index=arch.thread_idx()[0])
        arch.stg64(o.engine + 512, masks[4:], index=arch.thread_idx()[0])

    c = compile_body(body)
    assert kinds == {"ballot": cute.Int32, "active": cute.Uint32, "lt": cute.Uint32}  # the DSL's types
    filecheck(c.ptx, [
        "CHECK-DAG: vote.sync.ballot.b32 {{%r[0-9]+}}, {{%p[0-9]+}}, -1;",
        "CHECK-DAG: vote.sync.any.pred {{%p[0-9]+}}, {{%p[0-9]+}}, 255;",
        "CHECK-DAG: vote.sync.all.pred", "CHECK-DAG: vote.sync.uni.pred", "CHECK-DAG: activemask.b32",
        "CHECK-DAG: %lanemask_lt;", "CHECK-DAG: %lanemask_le;", "CHECK-DAG: %lanemask_eq;", "CHECK-DAG: %lanemask_ge;",
        "CHECK-DAG: %lanemask_gt;",
    ])
    assemble(c.ptx)


def test_match_sync(filecheck, assemble):
    def body(i, o, f):
        x = _x(i)
        r = (arch.match_sync(0xFFFFFFFF, x), arch.match_sync(0xFFFF, I64(x), "all"), arch.match_sync(-1 & 0xFFFFFFFF, 7),
             arch.match_sync(0xFFFFFFFF, x, kind="any"))
        assert all(v.dtype is cute.Uint32 for v in r)
        arch.stg128(o.engine, r, index=arch.thread_idx()[0])

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: match.any.sync.b32 {{%r[0-9]+}}, [[X:%r[0-9]+]], {{%r[0-9]+}};",
        "CHECK: match.all.sync.b64 {{%r[0-9]+}}|%p, {{%rd[0-9]+}}, {{%r[0-9]+}};",
        "CHECK: match.any.sync.b32",
    ])
    assemble(c.ptx)


def test_warp_redux_sync(filecheck, assemble):
    def body(i, o, f):
        x, u = _x(i), cute.Uint32(_x(i))
        r = (arch.warp_redux_sync(x, "add"), arch.warp_redux_sync(u, "add"), arch.warp_redux_sync(x, "max"),
             arch.warp_redux_sync(u, "max"), arch.warp_redux_sync(x, "umin"), arch.warp_redux_sync(x, "and", 0xFF),
             arch.warp_redux_sync(x, "or"), arch.warp_redux_sync(x, "xor"))
        assert [v.dtype.name for v in r] == ["Int32", "Uint32", "Int32", "Uint32", "Int32", "Int32", "Int32", "Int32"]
        arch.stg256(o.engine, r, index=arch.thread_idx()[0])

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: redux.sync.add.s32", "CHECK: redux.sync.add.u32", "CHECK: redux.sync.max.s32",
        "CHECK: redux.sync.max.u32", "CHECK: redux.sync.min.u32", "CHECK: redux.sync.and.b32", "CHECK: redux.sync.or.b32",
        "CHECK: redux.sync.xor.b32",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda x, f: arch.warp_redux_sync(f, "fmax"), r"floating-point reductions .* need sm_100a"),
    (lambda x, f: arch.warp_redux_sync(x, "max", abs=True), "need sm_100a"),
    (lambda x, f: arch.warp_redux_sync(x, "mul"), "kind must be one of fmax, fmin, max, min, umax, umin, add, xor, "
                                                  "or, and, got 'mul'"),
    (lambda x, f: arch.warp_redux_sync(I64(x), "add"), "value must be an integer of 32 bits, got a traced Int64"),
    (lambda x, f: arch.match_sync(0xFFFFFFFF, x, "some"), "match_sync: kind must be 'any' or 'all', got 'some'"),
    (lambda x, f: arch.match_sync(0xFFFFFFFF, f), "match_sync: value must be an integer of 32 or 64 bits, got a "
                                                  "traced Float32"),
    (lambda x, f: arch.vote_all_sync(x), r"vote_all_sync: the predicate must be a run-time condition"),
    (lambda x, f: arch.vote_ballot_sync(x > 0, 1 << 32), r"mask must be a 32-bit lane mask in \[-2\^31, 0xFFFFFFFF\]"),
    (lambda x, f: arch.shuffle_sync_op(x, 1, kind="xor"), "shuffle_sync_op: kind must be one of idx, up, down, bfly"),
    (lambda x, f: arch.warp_reduction_sum(x, threads_in_group=12), "threads_in_group must be a power of two in 1..32"),
])
def test_warp_rules(call, match):
    rejects(lambda i, o, f: call(_x(i), f), match)
