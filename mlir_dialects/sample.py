"""Sample kernels written with the dialect: one that uses every op, and a TMA tile copy.

Both are ``builtin.module``s holding one ``gpu.module`` of ``llvm.func`` kernels, the form
``to_ptx`` compiles. Shared buffers are ``llvm.mlir.global``s in address space 3; a TMA
descriptor is a 128-byte, 64-byte aligned ``__grid_constant__`` kernel parameter.
"""

import mlir_dialects as md

from ._backend import ir, llvm, nvvm
from .ops.common import const_int

__all__ = ["DESC_PARAM", "kernel_module", "build_sample_module", "build_tma_copy_module"]

# a TMA descriptor passed by value: 128 bytes, 64-byte aligned, read in place (__grid_constant__)
DESC_PARAM = "!llvm.ptr {llvm.byval = !llvm.array<16 x i64>, llvm.align = 64 : i64, nvvm.grid_constant}"


def kernel_module(name, params, shared):
    """A module with one ``gpu.module`` and one empty kernel ``name``.

    ``params`` is a list of (arg name, type text); ``shared`` a list of (global name, bytes,
    alignment). Returns (module, insertion point before the return, {arg name: value},
    {global name: its !llvm.ptr<3> address}).
    """
    globals_ = "\n".join(
        f"llvm.mlir.global internal @{g}() {{addr_space = 3 : i32, alignment = {a} : i64}} : !llvm.array<{n} x i8>"
        for g, n, a in shared
    )
    args = ", ".join(f"%{a}: {t}" for a, t in params)
    addrs = "\n".join(f"%{g} = llvm.mlir.addressof @{g} : !llvm.ptr<3>" for g, _, _ in shared)
    module = ir.Module.parse(f"""
module attributes {{gpu.container_module}} {{
  gpu.module @{name}_module {{
    {globals_}
    llvm.func @{name}({args}) attributes {{nvvm.kernel}} {{
      {addrs}
      llvm.return
    }}
  }}
}}""")
    func = module.body.operations[0].regions[0].blocks[0].operations[len(shared)]
    block = func.regions[0].blocks[0]
    ops = list(block.operations)
    values = {a: block.arguments[i] for i, (a, _) in enumerate(params)}
    smem = {g: ops[i].result for i, (g, _, _) in enumerate(shared)}
    return module, ir.InsertionPoint(ops[-1]), values, smem


def _offset(ptr, nbytes):
    i8 = ir.IntegerType.get_signless(8)
    return llvm.GEPOp(ptr.type, ptr, [], [nbytes], i8, 0).result


def build_sample_module():
    """A kernel that uses every op of ``cute_nvgpu`` once or more (built in the current context)."""
    params = [("desc", DESC_PARAM), ("gsrc", "!llvm.ptr<1>"), ("gdesc", "!llvm.ptr<1>"), ("x", "i32"), ("y", "i32"),
              ("z", "i32"), ("hint", "i64"), ("gaddr", "i64"), ("peer", "i32"), ("val", "i32")]
    shared = [("tile", 16384, 1024), ("bars", 16, 8), ("tmap", 128, 128)]
    module, ip, a, s = kernel_module("cute_nvgpu_sample", params, shared)
    with ip:
        tile, bar, tmap = s["tile"], s["bars"], s["tmap"]
        bar2 = _offset(bar, 8)
        one, zero, tx = const_int(1), const_int(0), const_int(8192)
        mask = const_int(0b11, 16)
        # mbarriers and fences
        md.mbarrier_init(bar, one)
        md.mbarrier_init(bar2, one)
        md.fence_mbarrier_init()
        md.fence_proxy_async("shared::cta")
        md.cluster_arrive(relaxed=True)
        md.cluster_wait()
        leader = md.elect_sync().is_leader
        # descriptors
        md.prefetch_tensormap(a["desc"])
        md.tensormap_copy(tmap, a["gdesc"])
        md.tensormap_replace(tmap, "global_address", a["gaddr"])
        md.tensormap_replace(tmap, "global_dim", a["x"], 1)
        md.tensormap_replace(tmap, "global_stride", a["gaddr"], 0)
        md.fence_tensormap_release()
        md.cp_fence_tensormap_release(a["gdesc"], tmap)
        md.fence_tensormap_acquire(a["desc"])
        md.tensormap_copy(a["gdesc"], tmap)
        # TMA loads, stores, reductions, prefetches
        md.mbarrier_arrive_expect_tx(bar, tx)
        md.tma_load(tile, a["desc"], bar, [a["x"], a["y"]])
        md.tma_load(tile, a["desc"], bar, [a["x"], a["y"]], multicast_mask=mask, cache_hint=a["hint"])
        md.tma_load(tile, a["desc"], bar, [a["x"]])
        md.tma_load(tile, a["desc"], bar, [a["x"], a["y"], a["z"], a["x"], a["y"]])
        md.tma_load_im2col(tile, a["desc"], bar, [a["x"], a["y"], a["z"], a["x"]], [mask, mask])
        md.tma_prefetch_tile(a["desc"], [a["x"], a["y"]])
        md.tma_prefetch_tile(a["desc"], [a["x"], a["y"], a["z"]], cache_hint=a["hint"])
        md.mbarrier_expect_tx(bar2, tx)
        md.mbarrier_wait_parity(bar, zero)
        ready = md.mbarrier_try_wait_parity(bar2, one).done
        md.fence_proxy_async("shared::cluster")
        md.tma_store(a["desc"], tile, [a["x"], a["y"]])
        md.tma_store(a["desc"], tile, [a["x"], a["y"], a["z"]], cache_hint=a["hint"])
        for kind in ("add", "min", "max", "inc", "dec", "and", "or", "xor"):
            md.tma_reduce(a["desc"], tile, [a["x"], a["y"]], kind)
        md.tma_store_arrive()
        md.tma_store_wait(1, read=True)
        md.tma_store_wait(0)
        md.fence_proxy_async("global")
        # cp.async
        md.cp_async(tile, a["gsrc"], 4)
        md.cp_async(tile, a["gsrc"], 8, modifier="ca", cache_hint=a["hint"])
        md.cp_async(tile, a["gsrc"], 16, modifier="cg", src_size=a["z"])
        md.cp_async(tile, a["gsrc"], 16, modifier="cg", src_size=a["z"], cache_hint=a["hint"])
        md.cp_async_commit_group()
        md.cp_async_mbarrier_arrive(bar2)
        md.cp_async_wait_group(0)
        # cluster: remote arrive and a store into a peer CTA's shared memory
        md.mbarrier_arrive_cluster(bar, a["peer"])
        md.dsmem_store(tile, a["val"], bar, a["peer"])
        md.dsmem_store(tile, a["hint"], bar, a["peer"])
        md.mbarrier_arrive(bar)
        _warp_ops(a["gsrc"], a["x"], a["y"], leader)
        _numeric_ops(a["gsrc"], a["val"])
        _mma_ops(a["gsrc"], s["tile"], a["val"])
        _wgmma_ops(a["hint"], a["val"])
        _memory_ops(a["gsrc"], tile, a["peer"], a["val"])
        _integer_ops(a["gsrc"], a["val"], a["hint"])
        _instruction_ops(a["gsrc"], bar, a["peer"], a["val"], a["hint"], ready)
        del ready
    return module


def _memory_ops(gmem, tile, peer, word):
    """Atomics, reductions, ordered loads and stores of global, shared and a peer's shared memory, and an L2
    policy; the results are stored."""
    i32, i16, f32 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(16), ir.F32Type.get()
    x = llvm.BitcastOp(f32, word).result
    olds = [md.atom("add", "u32", gmem, [word], sem="relaxed", scope="gpu").res,
            md.atom("cas", "b32", tile, [word, word], peer=peer).res,
            md.atom("max", "s32", tile, [word], sem="acq_rel", scope="cta").res,
            md.ld_scalar("u32", gmem, i32, sem="acquire", scope="gpu").res,
            llvm.ZExtOp(i32, md.ld_scalar("u8", gmem, i16, cop="cg", prefetch="L2::128B").res).result]
    floats = [md.atom_float_minmax("max", gmem, x).res, md.atom_float_minmax("min", tile, x, sign="negative").res,
              md.atom("add", "f32", tile, [x], peer=peer).res]
    md.red("add", "f32", gmem, x, sem="release", scope="gpu")
    md.red("xor", "b32", tile, word, peer=peer)
    md.st_scalar("u32", tile, olds[0], sem="release", scope="cluster")
    md.st_scalar("s32", gmem, olds[1], eviction="L1::evict_first")
    _store_words(gmem, olds + [llvm.BitcastOp(i32, v).result for v in floats])
    hint = md.createpolicy("evict_last").policy
    md.st_scalar("u64", gmem, hint, cop="cs")


def _store_words(gmem, words):
    """``st_global`` of the i32 ``words``, four at a time (the last repeated to fill the last four)."""
    words = words + words[-1:] * (-len(words) % 4)
    for k in range(0, len(words), 4):
        md.st_global(gmem, words[k:k + 4])


def _integer_ops(gmem, word, wide):
    """Integer instructions, a carry chain among them, and 64-bit words built from halves; the results are stored."""
    ints = [md.int_op("clz", [wide]).res, md.int_op("bfind", [word], signed=True).res,
            md.int_op("bfe", [word, const_int(4), const_int(8)]).res,
            md.int_op("mul24", [word, word], mode="hi").res, md.int_op("lop3", [word, word, word], lut=0x96).res,
            md.int_op("shf", [word, word, word], mode="r.clamp").res, md.int_op("prmt", [word, word, word]).res,
            md.int_op("add_sat", [word, word], signed=True).res]
    carry = md.int_op("add_cc", [word, word]).res
    _store_words(gmem, ints + [carry, md.int_op("addc", [carry, word]).res])
    for v in (md.int_op("pack_b64", [word, word]).res, md.int_op("mul_wide", [word, word], signed=True).res,
              md.int_op("add_lo32", [wide, word]).res):
        md.st_scalar("u64", gmem, v)


def _instruction_ops(gmem, bar, peer, word, wide, ready):
    """Special registers, matches, reductions, float instructions and conversions, scoped mbarrier operations,
    fences and barriers; the results are stored."""
    i32, f32 = ir.IntegerType.get_signless(32), ir.F32Type.get()
    x = llvm.BitcastOp(f32, word).result
    full = const_int(-1)
    words = [md.read_sreg_volatile(name).value for name in ("dynamic_smem_size", "WARP_SZ")]
    words += [md.match_sync("any", wide, full).res, md.redux_sync("add", "u32", word, full).res]
    floats = [md.float_minmax("max", x, x, nan=True).res, md.math_approx("rcp", x, ftz=True, volatile=True).res,
              md.cvt_f32("tf32", x).res, md.cvt_f32("bf16x2_satfinite", x, x).res,
              md.wgmma_fence_operand(x).res, llvm.FPExtOp(f32, md.cvt_f32("bf16", x).res).result]
    _store_words(gmem, words + [llvm.BitcastOp(i32, v).result if v.type == f32 else v for v in floats])
    md.st_scalar("u64", gmem, md.read_sreg_volatile("clock64").value)
    # mbarriers: arrivals with a count and a scope, on this CTA's and a peer's, and the tests of a phase
    md.mbarrier_scoped("arrive", bar, const_int(2), scope="cluster")
    md.mbarrier_scoped("arrive_expect_tx", bar, const_int(64), scope="cluster", peer=peer)
    md.mbarrier_scoped("expect_tx", bar, const_int(64), scope="cluster")
    tested = md.mbarrier_test_wait_parity(bar, const_int(0)).done
    waited = md.mbarrier_try_wait_parity_if(ready, bar, const_int(1)).done
    md.st_global(gmem, [llvm.ZExtOp(i32, v).result for v in (tested, waited)])
    md.barrier_arrive(const_int(4), const_int(64), aligned=False)
    md.fence_proxy("alias")
    md.griddepcontrol("launch_dependents")
    md.griddepcontrol("wait")
    md.grid_sync()
    md.trap()


def _wgmma_ops(desc, reg):
    """A warpgroup MMA with descriptors and one with A in registers, between its fence, commit and wait."""
    acc = llvm.UndefOp(md.wgmma_acc_type(8, "f32")).result
    on = const_int(1, 1)
    md.wgmma_fence()
    acc = md.wgmma_mma_async(acc, [desc], desc, on, n=8, type_ab="bf16", trans_b=1).res
    md.wgmma_mma_async(acc, [reg] * 4, desc, on, n=8, type_ab="f16")
    md.wgmma_commit_group()
    md.wgmma_wait_group(0)


def _mma_ops(gmem, tile, word):
    """A warp's mma.sync (bf16 into f32, f16 into f16, Volta's m8n8k4), ldmatrix and stmatrix; the accumulators
    are stored."""
    f32 = llvm.BitcastOp(ir.F32Type.get(), word).result
    for v in md.mma_sync("m16n8k16", "bf16", "f32", [word] * 4, [word] * 2, [f32] * 4).d:
        llvm.StoreOp(v, gmem)
    for v in md.mma_sync("m16n8k8", "f16", "f16", [word] * 2, [word], [word] * 2).d:
        llvm.StoreOp(v, gmem)
    for v in md.mma_sync("m8n8k4", "f16", "f32", [word] * 2, [word] * 2, [f32] * 8, layout_a="col").d:
        llvm.StoreOp(v, gmem)
    words = md.ldmatrix(tile, 4, trans=True).words
    md.stmatrix(tile, list(words))


def _warp_ops(gmem, x, y, leader):
    """Warp barriers, shuffles, votes, register reallocation and vector global accesses; the results are stored."""
    full, lanes = const_int(-1), md.activemask().mask
    md.bar_warp_sync(full)
    md.barrier_sync(const_int(1), const_int(64))
    md.barrier_sync(const_int(2))
    md.barrier_arrive(const_int(3), const_int(128))
    md.setmaxnreg("dec", 40)
    md.setmaxnreg("inc", 232)
    tid, lane = md.read_sreg("tid.x").value, md.read_sreg("laneid").value
    words = md.ld_global(gmem, 256, "nc").words
    pair = md.ld_global(gmem, 64, "cg").words
    word = md.ld_global(gmem, 32).words[0]
    md.st_global(gmem, words, "cs")
    md.st_global(gmem, md.ld_global(gmem, 128).words, "wt")
    shifted = [md.shfl_sync(kind, w, const_int(1), const_int(clamp), lanes).res
               for kind, w, clamp in (("idx", x, 31), ("up", y, 0), ("down", tid, 31), ("bfly", word, 0x181F))]
    moved = md.shfl_sync("down", lane, const_int(2), const_int(31), full, with_pred=True)
    votes = [md.vote_sync(kind, moved.in_range, full).res for kind in ("any", "all", "uni")]
    ballot = md.vote_sync("ballot", leader, full).res
    md.st_global(gmem, shifted)
    md.st_global(gmem, [moved.res, ballot])
    md.st_global(gmem, [llvm.ZExtOp(ir.IntegerType.get_signless(32), v).result for v in votes] + [pair[0]], "wb")
    md.st_global(gmem, [pair[1]])


def _numeric_ops(gmem, word):
    """8-bit float and TF32 conversions and every approximate function, of the float whose bits are ``word``;
    the results are stored, and the word printed."""
    i32, f32 = ir.IntegerType.get_signless(32), ir.F32Type.get()
    x = llvm.BitcastOp(f32, word).result
    results = [md.math_approx(fn, x, ftz=fn != "tanh").res for fn in md.APPROX_FUNCTIONS]
    results.append(md.cvt_f32_to_narrow("tf32", x).res)
    for kind in ("e4m3", "e5m2"):
        bits = md.cvt_f32_to_narrow(kind, x).res
        results.append(llvm.FPExtOp(f32, md.cvt_f8_to_f16(kind, bits).res).result)
    md.st_global(gmem, [llvm.BitcastOp(i32, r).result for r in results[:4]])
    md.st_global(gmem, [llvm.BitcastOp(i32, r).result for r in results[4:8]])
    md.st_global(gmem, [llvm.BitcastOp(i32, r).result for r in results[8:]] + [word])
    i64 = ir.IntegerType.get_signless(64)
    wide = llvm.BitcastOp(i64, llvm.FPExtOp(ir.F64Type.get(), x).result).result
    md.printf("word %lld is %.9g\n", [llvm.SExtOp(i64, word).result, wide])


def build_tma_copy_module(rows, cols, elem_bytes=4):
    """``tma_copy(desc_in, desc_out)``: CTA (bx, by) copies the tile at (bx*cols, by*rows) through shared memory.

    One thread per CTA: init an mbarrier, expect ``rows*cols*elem_bytes`` bytes, TMA-load the
    tile, wait on phase 0, fence, TMA-store it, and wait for the store group.
    """
    nbytes = rows * cols * elem_bytes
    module, ip, a, s = kernel_module("tma_copy", [("desc_in", DESC_PARAM), ("desc_out", DESC_PARAM)],
                                     [("tile", nbytes, 1024), ("bar", 8, 8)])
    with ip:
        tile, bar = s["tile"], s["bar"]
        i32 = ir.IntegerType.get_signless(32)
        bx, by = nvvm.read_ptx_sreg_ctaid_x(results=[i32]), nvvm.read_ptx_sreg_ctaid_y(results=[i32])
        x = llvm.MulOp(bx, const_int(cols), 0).result
        y = llvm.MulOp(by, const_int(rows), 0).result
        md.prefetch_tensormap(a["desc_in"])
        md.mbarrier_init(bar, const_int(1))
        md.fence_proxy_async("shared::cta")
        md.mbarrier_arrive_expect_tx(bar, const_int(nbytes))
        md.tma_load(tile, a["desc_in"], bar, [x, y])
        md.mbarrier_wait_parity(bar, const_int(0))
        md.tma_store(a["desc_out"], tile, [x, y])
        md.tma_store_arrive()
        md.tma_store_wait(0)
    return module


def sample_context():
    """A fresh context with the dialect loaded, and a location, for building the samples."""
    ctx = md.make_context()
    return ctx, ir.Location.unknown(ctx)
