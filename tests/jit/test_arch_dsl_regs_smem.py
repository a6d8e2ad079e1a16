"""Special registers, shared memory and cp.async by the DSL's ``cute.arch`` names: ``dynamic_smem_size``, ``smid``,
``clock64``..., ``alloc_smem``, ``get_dyn_smem``, ``get_dyn_smem_size``, ``store_async_dsmem``,
``cp_async_shared_global`` -- their PTX (FileCheck), assembly for sm_90a, and the argument rules."""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError


def compile_body(body, *, cluster=(1, 1, 1), grid=1, smem=None):
    @cute.kernel
    def k(inp, out):
        body(inp, out)

    def host(inp, out):
        launch = {"grid": grid, "block": 64, "cluster": cluster}
        if smem is not None:
            launch["smem"] = smem
        k(inp, out).launch(**launch)

    spec = cute.compiler.DeviceArraySpec("Int32", (2048,))
    return cute.compile(host, spec, spec)


def rejects(body, match, **kw):
    with pytest.raises(TraceError, match=match) as info:
        compile_body(body, **kw)
    return str(info.value)


def test_special_registers(filecheck, assemble):
    kinds = {}

    def body(i, o):
        t = arch.thread_idx()[0]
        words = (arch.dynamic_smem_size(), arch.total_smem_size(), arch.smid(), arch.nsmid(), arch.physical_warp_id(),
                 arch.nwarpid(), arch.warpsize(), arch.get_dyn_smem_size())
        wide = (arch.gridid(), arch.clock64(), arch.globaltimer())
        kinds.update({n: v.dtype.name for n, v in zip(("gridid", "clock64", "globaltimer"), wide)})
        kinds["clock"] = arch.clock().dtype.name
        arch.stg256(o.engine, words, index=t)
        arch.stg64(o.engine + 1024, (arch.clock(), arch.globaltimer_lo()), index=t)
        arch.stg64(o.engine + 1536, tuple(cute.Int32(w >> 16) for w in wide[1:]), index=t)

    c = compile_body(body, smem=4096)
    assert kinds == {"gridid": "Int64", "clock64": "Int64", "globaltimer": "Int64", "clock": "Int32"}
    filecheck(c.ptx, [
        "CHECK: mov.u32 {{%r[0-9]+}}, %dynamic_smem_size;",
        "CHECK: mov.u32 {{%r[0-9]+}}, %total_smem_size;",
        "CHECK-DAG: %smid;", "CHECK-DAG: %nsmid;", "CHECK-DAG: %warpid;", "CHECK-DAG: %nwarpid;",
        "CHECK-DAG: mov.u32 {{%r[0-9]+}}, WARP_SZ;",
        "CHECK-DAG: mov.u64 {{%rd[0-9]+}}, %gridid;", "CHECK-DAG: mov.u64 {{%rd[0-9]+}}, %clock64;",
        "CHECK-DAG: mov.u64 {{%rd[0-9]+}}, %globaltimer;", "CHECK-DAG: mov.u32 {{%r[0-9]+}}, %clock;",
        "CHECK-DAG: mov.u32 {{%r[0-9]+}}, %globaltimer_lo;",
    ])
    assert c.ptx.count("%dynamic_smem_size;") == 2  # get_dyn_smem_size reads the same register
    assemble(c.ptx)


def test_alloc_smem_takes_aligned_bytes_of_the_kernels_shared_memory():
    ptrs = []

    def body(i, o):
        a = arch.alloc_smem(cute.Float16, 3)                 # 6 bytes at 0
        b = arch.alloc_smem(cute.Float32, 10, alignment=128)  # the next 128-byte boundary
        bars = arch.alloc_smem(cute.Int64, 2)                  # mbarriers may live there
        ptrs.extend([a, b, bars])
        arch.mbarrier_init(bars + 1, 1)
        t = cute.make_tensor(b, cute.Layout(10))
        t[arch.thread_idx()[0] % 10] = 1.0

    c = compile_body(body)
    assert [(p.dtype.name, p.memspace.name, p.alignment, p.address) for p in ptrs] == [
        ("Float16", "smem", 2, 0), ("Float32", "smem", 128, 128), ("Int64", "smem", 8, 168)]
    assert re.search(r"mbarrier\.init\.shared\.b64\s+\[__cute_py_dyn_smem\+176\]", c.ptx)
    assert "smem=184" in repr(c)  # the launch gives the kernel what it allocated


def test_get_dyn_smem_is_the_start_of_dynamic_shared_memory(filecheck, assemble):
    def body(i, o):
        p = arch.get_dyn_smem(cute.Int32, alignment=16)
        assert (p.address, p.alignment, p.dtype) == (0, 16, cute.Int32)
        t = cute.make_tensor(p, cute.Layout(64))
        t[arch.thread_idx()[0]] = arch.get_dyn_smem_size()

    c = compile_body(body, smem=256)
    filecheck(c.ptx, ["CHECK: mov.u32 [[N:%r[0-9]+]], %dynamic_smem_size;", "CHECK: st.shared.b32 [{{%rd[0-9]+}}], [[N]];"])
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda: arch.alloc_smem("Float32", 4), r"alloc_smem: element_type must be a numeric type .*, got 'Float32'"),
    (lambda: arch.alloc_smem(cute.Float32, 0), "alloc_smem: size_in_elems must be a positive static int, got 0"),
    (lambda: arch.alloc_smem(cute.Float32, arch.lane_idx()), "size_in_elems must be a positive static int"),
    (lambda: arch.alloc_smem(cute.Float32, 4, alignment=3), "alignment must be a power of two up to 1024 bytes"),
    (lambda: arch.alloc_smem(cute.Float32, 4, alignment=2), "alignment 2 is below the 4 bytes of a Float32"),
    (lambda: arch.alloc_smem(cute.Float32, 60000), "shared memory overflow"),
    (lambda: (arch.alloc_smem(cute.Int8, 4), arch.get_dyn_smem(cute.Int8)),
     r"get_dyn_smem: the kernel already allocated 4 bytes of shared memory"),
])
def test_shared_memory_rules(call, match):
    rejects(lambda i, o: call(), match)


def test_store_async_dsmem(filecheck, assemble):
    def body(i, o):
        smem = arch.SmemAllocator()
        buf = smem.allocate_tensor(cute.Int32, cute.Layout(64))
        bar = smem.allocate_mbarrier()
        peer = arch.block_idx_in_cluster() ^ 1
        arch.store_async_dsmem(buf.iterator, arch.thread_idx()[0], bar, peer)
        arch.store_async_dsmem(buf.iterator + 4, (1, 2, 3, 4), bar, 1)
        arch.store_async_dsmem(buf.iterator + 2, (arch.lane_idx(), 7), bar, peer)

    c = compile_body(body, cluster=(2, 1, 1), grid=2)
    filecheck(c.ptx, [
        "CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.b32",
        "CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32",
        "CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32",
    ])
    assert c.ptx.count("mapa.shared::cluster") >= 6  # the address and the mbarrier of each store
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda b, m: arch.store_async_dsmem(b + 1, (1, 2), m, 1), "storing 8 bytes needs a 8-byte aligned smem_ptr"),
    (lambda b, m: arch.store_async_dsmem(b, (1, 2, 3), m, 1), "a tuple of 2 or 4 of them, got 3 values"),
    (lambda b, m: arch.store_async_dsmem(b, 1.5, m, 1), "value 0 must be a 32-bit integer"),
    (lambda b, m: arch.store_async_dsmem(b, cute.Int64(arch.lane_idx()), m, 1), "at most 32 bits"),
    (lambda b, m: arch.store_async_dsmem(b, 1, m, 16), r"peer_cta_rank must lie in \[0, 16\)"),
    (lambda b, m: arch.store_async_dsmem(b, 1, b, 1), "lies in the data of a shared-memory tensor"),
])
def test_store_async_dsmem_rules(call, match):
    def body(i, o):
        smem = arch.SmemAllocator()
        call(smem.allocate_tensor(cute.Int32, cute.Layout(64)).iterator, smem.allocate_mbarrier())

    rejects(body, match, cluster=(2, 1, 1), grid=2)


def test_cp_async_shared_global_by_the_dsls_arguments(filecheck, assemble):
    def body(i, o):
        s = arch.SmemAllocator().allocate_tensor(cute.Int32, cute.Layout(256))
        t = arch.thread_idx()[0]
        arch.cp_async_shared_global(s.iterator + 4 * t, i.iterator + 4 * t, 16, "cg")
        arch.cp_async_shared_global(s.iterator + 4 * t, i.iterator + 4 * t, 8, "ca", cp_size=t % 9)
        arch.cp_async_commit_group()
        arch.cp_async_wait_group(0)

    c = compile_body(body)
    filecheck(c.ptx, ["CHECK: cp.async.cg.shared.global [{{%r[d]?[0-9]+}}], [{{%rd[0-9]+}}], 16;",
                      "CHECK: cp.async.ca.shared.global [{{%r[d]?[0-9]+}}], [{{%rd[0-9]+}}], 8, {{%r[0-9]+}};",
                      "CHECK: cp.async.commit_group;", "CHECK: cp.async.wait_group 0;"])
    assemble(c.ptx)


@pytest.mark.parametrize("args, kw, match", [
    ((12, "ca"), {}, r"size must be 4, 8 or 16 bytes \(a static int\), got 12"),
    ((8, "cg"), {}, "the 'cg' modifier copies 16 bytes, got size=8"),
    ((16, "cs"), {}, "modifier must be 'ca' or 'cg'"),
    ((16, "cg"), {"cp_size": 17}, r"cp_size \(the bytes read\) must lie in \[0, 16\], got 17"),
])
def test_cp_async_shared_global_rules(args, kw, match):
    def body(i, o):
        s = arch.SmemAllocator().allocate_tensor(cute.Int32, cute.Layout(256))
        arch.cp_async_shared_global(s.iterator, i.iterator, *args, **kw)

    rejects(body, match)


def test_make_warp_uniform_and_the_constants():
    assert (arch.WARP_SIZE, arch.WARPS_PER_WARPGROUP, arch.THREADS_PER_WARPGROUP) == (32, 4, 128)
    seen = []

    def body(i, o):
        w = arch.warp_idx()
        seen.append((w, arch.make_warp_uniform(w), arch.make_warp_uniform(3)))

    compile_body(body)
    assert seen[0][0] is seen[0][1] and seen[0][2] == 3
