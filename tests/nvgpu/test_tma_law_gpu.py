"""The TMA law on a Hopper GPU: the random configurations of test_tma_law.py, launched.

For every accepted configuration a kernel copies each CTA tile: a load (multicast across a cluster of 1, 2 or
4 CTAs) into shared memory, whose bytes every CTA then dumps to global memory; for store and reduce
configurations, a store or reduce-add of the tile into a destination. Buffers are poisoned everywhere,
padding and the bytes around the tensor included, and every byte is compared: the dumped tile holds each
element of the tensor (zeros outside it), the destination holds the copy (or the sum) at the tensor's
elements and the poison everywhere else. Without a GPU the kernels are still compiled and their PTX
assembled, then the launch is skipped with the reason.

``CUTE_PY_LAW_COUNTS=path`` writes the counts (accepted and exact, rejected by a rule, anything else).
"""

import collections
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")

import cute_py as cute  # noqa: E402
from cute_py import Layout, arch  # noqa: E402
from cute_py.compiler.lang.smem import MAX_SMEM_BYTES  # noqa: E402
from cute_py.nvgpu import cpasync  # noqa: E402

from _tma_law import POISON, build, gmem_bytes, grid, smem_positions, tile_elements, tma_cases  # noqa: E402

pytestmark = pytest.mark.gpu

THREADS = 32  # one warp: elect_one elects one thread per warp
LEAD = 128  # bytes of poison before the tensor
COUNTS = collections.Counter()


@cute.kernel
def law_kernel(load_atom, load_t, out_atom, out_t, dump, smem_layout, tile, tiles, mc, nwords):
    bx, _, _ = arch.block_idx()
    tid, _, _ = arch.thread_idx()
    rank = len(tile)
    coord = cute.idx2crd(bx // mc, tiles) if len(tiles) > 1 else (bx // mc,)
    alloc = arch.SmemAllocator()
    buf = alloc.allocate(nwords * 4, 1024)
    s = cute.make_tensor(cute.make_ptr(load_atom.dtype, buf.address, cute.AddressSpace.smem, 1024), smem_layout)
    words = cute.make_tensor(cute.make_ptr(cute.Int32, buf.address, cute.AddressSpace.smem, 1024), Layout(nwords))
    bar = alloc.allocate_mbarrier()
    s_tile = cute.group_modes(s, 0, rank)
    tAsA, tAgA = cpasync.tma_partition(load_atom, bx % mc, Layout(mc), s_tile,
                                       cute.group_modes(cute.local_tile(load_t, tile, coord), 0, rank))
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
    if mc > 1:
        arch.cluster_sync()  # every CTA's mbarrier is ready before a peer's multicast lands on it
    else:
        arch.sync_threads()
    with arch.elect_one():
        if mc > 1:
            cute.tma_copy(tAgA, tAsA, barrier=bar, mcast_mask=(1 << mc) - 1)
        else:
            cute.tma_copy(tAgA, tAsA, barrier=bar)
    arch.mbarrier_wait(bar, 0)
    for c in cute.range(nwords // THREADS):  # a run-time loop: tiles can be large
        i = c * THREADS + tid
        dump[bx * nwords + i] = words[i]
    if out_atom is not None:
        tBsB, tBgB = cpasync.tma_partition(out_atom, 0, Layout(1), s_tile,
                                           cute.group_modes(cute.local_tile(out_t, tile, coord), 0, rank))
        with arch.elect_one():
            cute.copy(out_atom, tBsB, tBgB)
            arch.tma_store_arrive()
            arch.tma_store_wait(0, read=True)
    if mc > 1:
        arch.cluster_sync()  # no CTA leaves while a peer may still multicast into it


@cute.jit
def law_copy(src, dst, dump, smem_layout, tile, op, mc, nwords):
    load_op = cpasync.CopyBulkTensorTileG2SMulticastOp() if mc > 1 else cpasync.CopyBulkTensorTileG2SOp()
    load_atom, load_t = cpasync.make_tiled_tma_atom(load_op, src, smem_layout, tile, mc)
    out_atom = out_t = None
    if op == "store":
        out_atom, out_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, smem_layout, tile)
    elif op == "reduce":
        out_atom, out_t = cpasync.make_tiled_tma_atom(cpasync.CopyReduceBulkTensorTileS2GOp(), dst, smem_layout,
                                                      tile)
    tiles = tuple(-(-s // t) for s, t in zip(cute.product_each(src.shape), tile))
    law_kernel(load_atom, load_t, out_atom, out_t, dump, smem_layout, tile, tiles, mc, nwords).launch(
        grid=int(np.prod(tiles)) * mc, block=THREADS, cluster=(mc, 1, 1))


def _nwords(cfg):
    nbytes = int(smem_positions(cfg).max()) + cfg["dtype"].width // 8
    return -(-nbytes // (4 * THREADS)) * THREADS


def _spec(cfg, nbytes_lead=LEAD):
    return cute.compiler.DeviceArraySpec(cfg["dtype"], cfg["shape"], cfg["stride"], address=(1 << 24) + nbytes_lead)


def _torch_dtype(torch, dtype):
    return {"Int8": torch.int8, "Uint8": torch.uint8, "Float16": torch.float16, "BFloat16": torch.bfloat16,
            "Int32": torch.int32, "Float32": torch.float32, "Float64": torch.float64}[dtype.name]


def _device():
    """torch on a Hopper GPU, or None (the kernels are then compiled, not launched)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        return None
    return torch


_COMPILED_WITHOUT_GPU = []


@settings(max_examples=int(os.environ.get("CUTE_PY_LAW_EXAMPLES", "300")), derandomize=True, database=None,
          deadline=None, suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
@given(cfg=tma_cases())
def test_accepted_tma_copies_write_exactly_their_tiles_on_the_gpu(assemble_ptx, cfg):
    try:
        build(cfg)
        if cfg["op"] != "load":
            build(dict(cfg, op="load"))  # the tile is loaded into smem first
    except cute.CuteError:
        COUNTS["rejected by a rule"] += 1
        return
    torch = _device()
    nwords = _nwords(cfg)
    mc = cfg["mc"]
    n_ctas = int(np.prod(grid(cfg))) * mc
    if nwords * 4 + 8 > MAX_SMEM_BYTES:
        # an accepted atom whose tile does not fit in a CTA's shared memory: the kernel is refused at its
        # allocation, never launched
        with pytest.raises(cute.compiler.TraceError, match="shared memory overflow"):
            cute.compile(law_copy, _spec(cfg), _spec(cfg), cute.DeviceArraySpec("Int32", (n_ctas * nwords,)),
                         cfg["smem"], cfg["tile"], cfg["op"], mc, nwords)
        COUNTS["rejected: the tile overflows shared memory"] += 1
        return
    if torch is None:
        # no GPU: compile and assemble a few of them, so that the kernel itself is checked everywhere
        if len(_COMPILED_WITHOUT_GPU) < 3:
            c = cute.compile(law_copy, _spec(cfg), _spec(cfg), cute.compiler.DeviceArraySpec("Int32", (n_ctas * nwords,)),
                             cfg["smem"], cfg["tile"], cfg["op"], mc, nwords)
            assert "cp.async.bulk.tensor" in c.ptx and assemble_ptx(c.ptx)[:4] == b"\x7fELF"
            _COMPILED_WITHOUT_GPU.append(cfg)
        COUNTS["accepted, compiled only (no GPU)"] += 1
        return
    eb = cfg["dtype"].width // 8
    size = LEAD + gmem_bytes(cfg) + 128
    size = -(-size // 16) * 16
    gen = np.random.default_rng(len(COUNTS) + sum(COUNTS.values()))
    src_host = gen.integers(1, 255, size, dtype=np.uint8)
    if cfg["op"] == "reduce":  # small integers (exact in fp32) in the destination, poison around it
        dst_host = np.full(size, POISON, dtype=np.uint8)
        src_host[LEAD:LEAD + gmem_bytes(cfg)] = _small_values(cfg, gen, gmem_bytes(cfg))
        dst_host[LEAD:LEAD + gmem_bytes(cfg)] = _small_values(cfg, gen, gmem_bytes(cfg))
    else:
        dst_host = np.full(size, POISON, dtype=np.uint8)
    tdt = _torch_dtype(torch, cfg["dtype"])
    src_buf = torch.from_numpy(src_host).cuda()
    dst_buf = torch.from_numpy(dst_host).cuda()
    src = src_buf[LEAD:LEAD + (size - LEAD) // eb * eb].view(tdt).as_strided(cfg["shape"], cfg["stride"])
    dst = dst_buf[LEAD:LEAD + (size - LEAD) // eb * eb].view(tdt).as_strided(cfg["shape"], cfg["stride"])
    dump = torch.zeros(n_ctas * nwords, dtype=torch.int32, device="cuda")
    if os.environ.get("CUTE_PY_LAW_VERBOSE"):
        print("launching", cfg, flush=True)
    law_copy(src, dst, dump, cfg["smem"], cfg["tile"], cfg["op"], mc, nwords)
    torch.cuda.synchronize()
    got_dst = dst_buf.cpu().numpy()
    got_dump = dump.cpu().numpy().view(np.uint8).reshape(n_ctas, nwords * 4)
    breach = _check(cfg, src_host, dst_host, got_dst, got_dump)
    if breach:
        COUNTS["accepted, NOT exact"] += 1
        _write_counts()
    assert breach is None, f"{cfg}: {breach}"
    COUNTS["accepted and exact"] += 1
    _write_counts()


def _small_values(cfg, gen, nbytes):
    store = cfg["dtype"].numpy_dtype
    n = nbytes // np.dtype(store).itemsize
    return gen.integers(0, 100, n).astype(store).view(np.uint8)[:nbytes]


def _check(cfg, src, dst0, dst, dump):
    eb = cfg["dtype"].width // 8
    pos = smem_positions(cfg)
    mc = cfg["mc"]
    tiles = grid(cfg)
    inside_any = np.zeros(src.size, dtype=bool)
    for t in range(int(np.prod(tiles))):
        coord = tuple(int(x) for x in np.unravel_index(t, tiles, order="F"))
        _, inside, offsets = tile_elements(cfg, coord)
        for cta in range(mc):
            row = dump[t * mc + cta]
            for e in range(pos.size):
                want = src[LEAD + offsets[e] * eb:LEAD + (offsets[e] + 1) * eb] if inside[e] else np.zeros(eb, np.uint8)
                got = row[pos[e]:pos[e] + eb]
                if not np.array_equal(got, want):
                    return (f"tile {coord}, CTA {cta}: smem of tile element {e} ({'inside' if inside[e] else 'outside'}) "
                            f"holds {got.tolist()}, expected {want.tolist()}")
        for o in offsets[inside]:
            inside_any[LEAD + o * eb:LEAD + (o + 1) * eb] = True
    if cfg["op"] == "load":
        expect = dst0
    elif cfg["op"] == "store":
        expect = np.where(inside_any, src, dst0)
    else:
        store = cfg["dtype"].numpy_dtype
        expect = dst0.copy()
        body = slice(LEAD, LEAD + gmem_bytes(cfg) // eb * eb)
        summed = (dst0[body].view(store) + src[body].view(store) * _multiplicity(cfg)).astype(store).view(np.uint8)
        expect[body] = np.where(inside_any[body], summed, dst0[body])
    if not np.array_equal(dst, expect):
        bad = np.nonzero(dst != expect)[0]
        where = ["poison before" if b < LEAD else ("tensor" if inside_any[b] else "padding/after") for b in bad[:5]]
        return f"destination bytes {bad[:5].tolist()} ({where}; {bad.size} in all) differ: got {dst[bad[:5]].tolist()}, expected {expect[bad[:5]].tolist()}"
    return None


def _multiplicity(cfg):
    # how many tile elements land on each gmem element (more than one along stride-0 modes): a reduce adds each
    eb = cfg["dtype"].width // 8
    count = np.zeros(gmem_bytes(cfg) // eb, dtype=np.int64)
    tiles = grid(cfg)
    for t in range(int(np.prod(tiles))):
        _, inside, offsets = tile_elements(cfg, tuple(int(x) for x in np.unravel_index(t, tiles, order="F")))
        np.add.at(count, offsets[inside], 1)
    return count.astype(cfg["dtype"].numpy_dtype)


def _write_counts():
    path = os.environ.get("CUTE_PY_LAW_COUNTS")
    if path:
        with open(path, "w") as f:
            json.dump(dict(COUNTS), f, indent=1, sort_keys=True)


def test_the_law_ran_on_accepted_configurations():
    """Runs after the random test (file order): some configurations were accepted and checked."""
    _write_counts()
    if not COUNTS:  # a parallel run gave the random test to another worker: its counts are not in this process
        pytest.skip("the random configurations ran in another worker process (run this file in one process)")
    if _device() is None:
        pytest.skip(f"no Hopper GPU: {COUNTS['accepted, compiled only (no GPU)']} accepted configurations "
                    f"(3 of them compiled and assembled), {COUNTS['rejected by a rule']} rejected, "
                    f"{COUNTS['rejected: the tile overflows shared memory']} too large for shared memory; none launched")
    accepted = COUNTS["accepted and exact"] + COUNTS["accepted, compiled only (no GPU)"]
    assert accepted >= 10, dict(COUNTS)
    assert COUNTS["accepted, NOT exact"] == 0, dict(COUNTS)
