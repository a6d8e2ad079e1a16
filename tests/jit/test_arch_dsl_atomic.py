"""Atomics, reductions and qualified loads and stores by the DSL's ``cute.arch`` names: the PTX each call becomes
(state space from the pointer, ``sem``/``scope`` qualifiers, cache operators), assembly for sm_90a, and the
argument rules."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError


def compile_body(body, dtype="Int32", cluster=(1, 1, 1), grid=1):
    @cute.kernel
    def k(g, f):
        body(g, f)

    def host(g, f):
        k(g, f).launch(grid=grid, block=32, cluster=cluster)

    return cute.compile(host, cute.compiler.DeviceArraySpec(dtype, (256,)), cute.compiler.DeviceArraySpec("Float32",
                                                                                                           (256,)))


def rejects(body, match, **kw):
    with pytest.raises(TraceError, match=match) as info:
        compile_body(body, **kw)
    return str(info.value)


def test_integer_atomics_on_global_memory(filecheck, assemble):
    def body(g, f):
        t = arch.thread_idx()[0]
        p = g.iterator + t
        olds = (arch.atomic_add(p, 1), arch.atomic_add(p, t, sem="relaxed", scope="gpu"), arch.atomic_and(p, 0xF0),
                arch.atomic_or(p, 1, sem="release", scope="cta"), arch.atomic_xor(p, t, scope="sys"),
                arch.atomic_max(p, t, sem="acq_rel", scope="cluster"), arch.atomic_min(p, -5),
                arch.atomic_exch(p, 7, sem="acquire", scope="gpu"))
        assert all(o.dtype is cute.Int32 for o in olds)
        g[t] = arch.atomic_cas(p, cmp=olds[0], val=olds[1] + olds[2] + olds[3] + olds[4] + olds[5] + olds[6] + olds[7])

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: atom.global.add.s32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: atom.relaxed.gpu.global.add.s32",
        "CHECK: atom.global.and.b32",
        "CHECK: atom.release.cta.global.or.b32",
        "CHECK: atom.sys.global.xor.b32",
        "CHECK: atom.acq_rel.cluster.global.max.s32",
        "CHECK: atom.global.min.s32",
        "CHECK: atom.acquire.gpu.global.exch.b32",
        "CHECK: atom.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], {{%r[0-9]+}}, {{%r[0-9]+}};",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("dtype, call, ptx", [
    ("Uint32", lambda p, t: arch.atomic_max(p, 3), "atom.global.max.u32"),
    ("Uint64", lambda p, t: arch.atomic_add(p, 3), "atom.global.add.u64"),
    ("Int64", lambda p, t: arch.atomic_add(p, -3), "atom.global.add.u64"),
    ("Int64", lambda p, t: arch.atomic_min(p, -3), "atom.global.min.s64"),
    ("Float32", lambda p, t: arch.atomic_add(p, 0.5), "atom.global.add.f32"),
    ("Float64", lambda p, t: arch.atomic_add(p, 0.5), "atom.global.add.f64"),
    ("Float16", lambda p, t: arch.atomic_add(p, 1.0), "atom.global.add.noftz.f16"),
    ("BFloat16", lambda p, t: arch.atomic_add(p, 1.0), "atom.global.add.noftz.bf16"),
    ("Int16", lambda p, t: arch.atomic_cas(p, cmp=0, val=1), "atom.global.cas.b16"),
    ("Uint64", lambda p, t: arch.atomic_exch(p, 2**63), "atom.global.exch.b64"),
])
def test_atomics_follow_the_element_type(dtype, call, ptx, filecheck, assemble):
    def body(g, f):
        t = arch.thread_idx()[0]
        old = call(g.iterator + t, t)
        assert old.dtype.name == dtype
        g[t] = old

    c = compile_body(body, dtype=dtype)
    filecheck(c.ptx, [f"CHECK: {ptx}"])
    assemble(c.ptx)


def test_atomics_on_shared_memory_and_a_peers(filecheck, assemble):
    def body(g, f):
        s = arch.SmemAllocator().allocate_tensor(cute.Int32, cute.Layout(32))
        t = arch.thread_idx()[0]
        a = arch.atomic_add(s.iterator + t, 1)
        b = arch.atomic_add(arch.map_dsmem_ptr(s.iterator, arch.block_idx_in_cluster() ^ 1) + t, 1, scope="cluster")
        arch.red(s.iterator, a + b, op="add", dtype="s32")
        g[t] = b

    c = compile_body(body, cluster=(2, 1, 1), grid=2)
    filecheck(c.ptx, [
        "CHECK: atom.shared::cta.add.s32 {{%r[0-9]+}}, [{{%r[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: mapa.shared::cluster.u32 %ra, {{%r[0-9]+}}, {{%r[0-9]+}};",
        "CHECK-NEXT: atom.cluster.shared::cluster.add.s32 {{%r[0-9]+}}, [%ra], {{%r[0-9]+}};",
        "CHECK: red.shared::cta.add.s32 [{{%r[0-9]+}}], {{%r[0-9]+}};",
    ])
    assemble(c.ptx)


def test_float_max_and_min_by_integer_atomics_on_the_bits(filecheck, assemble):
    def body(g, f):
        t = arch.thread_idx()[0]
        v = f[t]
        a = arch.atomic_fmax(f.iterator + 1, v)
        b = arch.atomic_fmin(f.iterator + 2, v, sign_bit=True, sem="relaxed", scope="gpu")
        c_ = arch.atomic_max_float32(f.iterator + 3, v)
        assert a.dtype is b.dtype is c_.dtype is cute.Float32
        f[t] = a + b + c_

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: setp.lt.s32 %neg, [[V:%r[0-9]+]], 0;",
        "CHECK-NEXT: @%neg atom.global.min.u32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], [[V]];",
        "CHECK-NEXT: @!%neg atom.global.max.s32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], [[V]];",
        "CHECK: atom.relaxed.gpu.global.max.u32",  # fmin of a negative value: the largest bits win
        "CHECK: atom.global.max.s32",  # atomic_max_float32(positive_only=True): sign_bit=False
    ])
    assemble(c.ptx)


def test_reductions(filecheck, assemble):
    def body(g, f):
        t = arch.thread_idx()[0]
        arch.red(g.iterator + t, t, op="add", dtype="u32", sem="release", scope="gpu")
        arch.red(g.iterator + t, 3, op="umax", dtype=cute.Int32)
        arch.red(g.iterator + t, 3, op="xor", dtype="b32")
        arch.red(f.iterator + t, 0.25, op="add", dtype="f32", scope="cta")
        arch.red(g.iterator + t, t, op="add", dtype="f16x2")  # two halves packed in a 32-bit word

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: red.release.gpu.global.add.u32 [{{%rd[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: red.global.max.u32",
        "CHECK: red.global.xor.b32",
        "CHECK: red.cta.global.add.f32",
        "CHECK: red.global.add.noftz.f16x2",
    ])
    assemble(c.ptx)


def test_loads_and_stores_with_qualifiers(filecheck, assemble):
    def body(g, f):
        t = arch.thread_idx()[0]
        p = g.iterator + t
        a = arch.load(p, cute.Int32)
        b = arch.load(p, cute.Int32, sem="acquire", scope="gpu")
        c_ = arch.load(p, cute.Int32, cop="cg")
        d = arch.load(p, cute.Int32, level1_eviction_priority="evict_last", level_prefetch_size="size_128b")
        e = arch.load(f.iterator + t, cute.Float32, sem="relaxed", scope="cluster")
        arch.store(p, a + b + c_ + d, sem="release", scope="sys")
        arch.store(p, 1, cop="cs")
        arch.store(p, 2, level1_eviction_priority="evict_no_allocate")
        arch.store(f.iterator + t, e)
        s = arch.SmemAllocator().allocate_tensor(cute.Int8, cute.Layout(64))
        arch.store(s.iterator + t, cute.Int8(t), ss="cta")
        g[t] = cute.Int32(arch.load(s.iterator + t + 1, cute.Int8, ss="cta", sem="relaxed", scope="cta"))

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: ld.global.s32 {{%r[0-9]+}}, [{{%rd[0-9]+}}];",
        "CHECK: ld.acquire.gpu.global.s32",
        "CHECK: ld.global.cg.s32",
        "CHECK: ld.global.L1::evict_last.L2::128B.s32",
        "CHECK: ld.relaxed.cluster.global.f32",
        "CHECK: st.release.sys.global.s32",
        "CHECK: st.global.cs.s32",
        "CHECK: st.global.L1::no_allocate.s32",
        "CHECK: st.global.f32",
        "CHECK: st.shared::cta.s8 [{{%r[0-9]+}}], {{%rs[0-9]+}};",
        "CHECK: ld.relaxed.cta.shared::cta.s8 {{%rs[0-9]+}}, [{{%r[0-9]+}}];",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda g, f, t: arch.atomic_add(g.iterator, 1.5), "atomic_add: val must be a Int32 .*, got the float 1.5"),
    (lambda g, f, t: arch.atomic_add(g.iterator, cute.Int64(t)), "val must be a Int32 .*, got a traced Int64"),
    (lambda g, f, t: arch.atomic_add(g.iterator, 2**31), "atomic_add: val: 2147483648 does not fit in a Int32"),
    (lambda g, f, t: arch.atomic_and(f.iterator, 1.0), "atomic_and: atom.and does not take a Float32"),
    (lambda g, f, t: arch.atomic_max(f.iterator, 1.0), "atomic_max: atom.max does not take a Float32"),
    (lambda g, f, t: arch.atomic_add(g.iterator, 1, sem="seq_cst"), "sem must be one of relaxed, acquire, release, "
                                                                   "acq_rel"),
    (lambda g, f, t: arch.atomic_add(g.iterator, 1, scope="device"), "scope must be one of cta, cluster, gpu, sys"),
    (lambda g, f, t: arch.atomic_add(g, 1), r"atomic_add: ptr must be a pointer into global or shared memory"),
    (lambda g, f, t: arch.atomic_fmax(g.iterator, 1.0), "atomic_fmax works on Float32 elements, got a pointer to Int32"),
    (lambda g, f, t: arch.atomic_fmax(f.iterator, 1.0, sign_bit=1), "sign_bit must be None, True or False"),
    (lambda g, f, t: arch.atomic_cas(g.iterator, cmp=0, val=f[0]), "atomic_cas: val must be a Int32"),
    (lambda g, f, t: arch.red(g.iterator, 1, op="mul", dtype="u32"), "red: op must be one of add, min, max"),
    (lambda g, f, t: arch.red(g.iterator, 1, op="add", dtype="u8"), "red: dtype must be a numeric type"),
    (lambda g, f, t: arch.red(g.iterator, 1, op="and", dtype="f32"), r"red: red.and does not take .f32"),
    (lambda g, f, t: arch.red(g.iterator, 1, op="add", dtype="u64"), "red: .u64 reduces 64-bit integers, but ptr "
                                                                      "points to Int32 elements"),
    (lambda g, f, t: arch.red(g.iterator, 1, op="add", dtype="f32"), "red: .f32 reduces 32-bit floats"),
    (lambda g, f, t: arch.red(g.iterator, 1, op="add", dtype="f16x2"), "takes val as a traced 32-bit integer"),
    (lambda g, f, t: arch.red(g.iterator, 1, op="add", dtype="u32", sem="acquire"), "sem must be one of relaxed, "
                                                                                   "release"),
    (lambda g, f, t: arch.load(g.iterator, cute.Float32), "load: dtype must be the pointer's element type Int32"),
    (lambda g, f, t: arch.load(g.iterator, cute.Int32, sem="acquire"), "sem and scope go together"),
    (lambda g, f, t: arch.load(g.iterator, cute.Int32, scope="gpu"), "sem and scope go together"),
    (lambda g, f, t: arch.load(g.iterator, cute.Int32, sem="release", scope="gpu"), "sem must be one of relaxed, "
                                                                                    "acquire"),
    (lambda g, f, t: arch.load(g.iterator, cute.Int32, cop="cg", sem="relaxed", scope="gpu"),
     "a cache operator .* goes with weak accesses only"),
    (lambda g, f, t: arch.load(g.iterator, cute.Int32, cop="wb"), "cop must be one of ca, cg, cs, lu, cv"),
    (lambda g, f, t: arch.store(g.iterator, 1, cop="ca"), "cop must be one of wb, cg, cs, wt"),
    (lambda g, f, t: arch.store(g.iterator, 1, cop="cs", level1_eviction_priority="evict_first"), "not both"),
    (lambda g, f, t: arch.store(g.iterator, 1, ss="cta"), r"ss='cta' names .shared::cta, but ptr is a"),
    (lambda g, f, t: arch.load(arch.SmemAllocator().allocate_tensor(cute.Int32, cute.Layout(4)).iterator, cute.Int32,
                               level_prefetch_size="size_64b"), "apply to global memory only"),
    (lambda g, f, t: arch.store(g.iterator, 1, level1_eviction_priority="evict_sometimes"),
     "level1_eviction_priority must be one of"),
])
def test_memory_rules(call, match):
    rejects(lambda g, f: call(g, f, arch.thread_idx()[0]), match)
