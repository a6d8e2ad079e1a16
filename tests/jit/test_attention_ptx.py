"""Kernel 14 (examples.attention) without a GPU: its PTX (the producer's TMA loads and register hand-back, the
consumers' WGMMAs from shared memory and with P in registers, the online softmax's exp2 and shuffles, the
ping-pong barriers) FileChecked and assembled for sm_90a for each head dimension, causal and packed; the
assembler keeping the WGMMAs asynchronous (no serialisation warning); and the argument rules."""

import re

import numpy as np
import pytest

import cute_py as cute
from examples import attention
from _ptxas_report import ptxas_notes, ptxas_report
from _launches import launches_of

spec = cute.compiler.DeviceArraySpec


def _compile(d=128, causal=False, dt="BFloat16", b=2, s=1024, sk=None, h=4, hk=2, **kw):
    sk = sk or s
    return cute.compile(attention, spec(dt, (b, s, h, d)), spec(dt, (b, sk, hk, d)), spec(dt, (b, sk, hk, d)),
                        spec(dt, (b, s, h, d)), spec("Float32", (b, h, s)), causal, **kw)


def _compile_packed(d=128, causal=True, total=3000, total_k=2500, h=8, hk=2, batch=5, **kw):
    dt = "BFloat16"
    return cute.compile(attention, spec(dt, (total, h, d)), spec(dt, (total_k, hk, d)), spec(dt, (total_k, hk, d)),
                        spec(dt, (total, h, d)), spec("Float32", (h, total)), causal, None,
                        spec("Int32", (batch + 1,)), spec("Int32", (batch + 1,)), 1000, **kw)


def _launch(d=128, causal=False, dt="BFloat16", b=2, s=1024, sk=None, h=4, hk=2, **kw):
    """The launch of :func:`_compile`'s arguments, from the host trace alone (the grid and block rules)."""
    sk = sk or s
    (launch,) = launches_of(attention, spec(dt, (b, s, h, d)), spec(dt, (b, sk, hk, d)), spec(dt, (b, sk, hk, d)),
                            spec(dt, (b, s, h, d)), spec("Float32", (b, h, s)), causal, **kw)
    return launch


def _packed_launch(d=128, causal=True, total=3000, total_k=2500, h=8, hk=2, batch=5, **kw):
    """The attention launch of :func:`_compile_packed`'s arguments (the last), from the host trace alone."""
    dt = "BFloat16"
    return launches_of(attention, spec(dt, (total, h, d)), spec(dt, (total_k, hk, d)), spec(dt, (total_k, hk, d)),
                       spec(dt, (total, h, d)), spec("Float32", (h, total)), causal, None,
                       spec("Int32", (batch + 1,)), spec("Int32", (batch + 1,)), 1000, **kw)[-1]


# keys per block by (head dimension, causal): the kernel's tile table
BLOCK_N = {(64, False): 192, (64, True): 128, (128, False): 128, (128, True): 128, (256, False): 80, (256, True): 64}


def _check_ptx(ptx, d, filecheck, rank=4, causal=True, n=None, groups=2):
    n = n or BLOCK_N[d, causal]
    filecheck(ptx, [
        "CHECK: .target sm_90a",
        f"CHECK: .maxntid {128 * (groups + 1)}, 1, 1",
        "CHECK: mbarrier.init.shared",
        "CHECK: bar.sync {{[ \t]*}}0;",
        # the consumers: S = Q K^T from shared memory, the softmax, then P V with P from registers
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK: wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{{.*}}}}}}, %rd{{{{[0-9]+}}}}, %rd",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK: shfl.sync.bfly.b32",
        "CHECK: ex2.approx.ftz.f32",
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK: wgmma.mma_async.sync.aligned.m64n{d}k16.f32.bf16.bf16 {{{{.*}}}}}}, {{%r{{{{[0-9]+}}}}, %r",
        "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}1;",
        "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;",
        # the output through shared memory: a TMA store of each warpgroup's rows (a packed batch: 16-byte chunks)
        "CHECK: fence.proxy.async.shared::cta;" if rank == 4 else "CHECK: st.global.v4.b32",
        "CHECK: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group" if rank == 4 else "CHECK: ret;",
    ])
    if rank == 4:
        assert "st.global.v4" not in ptx and re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)
    # the output into its 128B-swizzled staging rows by stmatrix, not by 4-byte stores (eight-way conflicts)
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") >= d // 16 and "st.shared.b32" not in ptx
    # the producer: Q once, then a K and a V tile per key block (one box per 64 elements of 128-byte rows)
    # (the producer's and the consumers' code may come in either order): registers handed back and taken
    boxes = max(1, d // 64)
    # (tokens, D, heads, batch) boxes; a packed batch's mode of 1 is dropped
    load = f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    assert ptx.count(load) == 3 * boxes
    assert re.search(r"setmaxnreg.dec.sync.aligned.u32\s+24;", ptx) and re.search(
        rf"setmaxnreg.inc.sync.aligned.u32\s+{240 if groups == 2 else 160};", ptx)
    # per key block: D/16 instructions of S and block_n/16 of P V; the loop over the masked blocks and the loop
    # over the others are traced apart, and the first block's S and the last P V are peeled (a persistent grid
    # with Q in two buffers issues a tile's first S before its loop and the next tile's with the last P V)
    qk = len(re.findall(rf"m64n{n}k16\.f32\.bf16\.bf16 \{{[^}}]*\}}, %rd", ptx))
    pv = len(re.findall(rf"m64n{d}k16\.f32\.bf16\.bf16 \{{[^}}]*\}}, \{{%r", ptx))
    overlapped = _q_barriers(ptx)[:2] == [1, 1]
    # where the first warpgroup computes half of each tile's first key block, it has a copy of the consumer of its
    # own: its first products are 64 keys wide (one before the tiles' loop, one in each last turn if overlapped)
    halves = len(re.findall(rf"m64n{n // 2}k16\.f32\.bf16\.bf16 \{{[^}}]*\}}, %rd", ptx))
    if halves:
        firsts = 2 if overlapped else 1
        # 2 copies of 2 loops, or of 1 where LLVM proves the masked loop empty (every tile's
        # first block the only one on the diagonal: the order's query block known to stay below m_blocks)
        loops = (qk // (d // 16) - firsts) // 2
        assert halves == firsts * (d // 16) and qk == (2 * loops + firsts) * (d // 16) and loops in (1, 2), (halves, qk)
        assert pv == 2 * (loops + 1) * (n // 16), pv
    else:
        assert qk % (d // 16) == 0 and 2 * (d // 16) <= qk <= (4 if overlapped else 3) * (d // 16), qk
        assert pv % (n // 16) == 0 and 2 * (n // 16) <= pv <= 3 * (n // 16), pv
    # the output's rescale in each loop over key blocks, left out where every factor of the warp is 1: one warp
    # vote a loop (a consumer's two loops, one where no block needs the mask or every block does)
    copies = 2 if halves else 1
    assert copies <= len(re.findall(r"vote\.sync\.any\.pred", ptx)) <= 2 * copies


@pytest.mark.parametrize("d, causal, s", [(128, False, 1024), (128, True, 1024), (64, False, 1024), (64, True, 1040),
                                     (64, False, 512), (64, True, 1024), (256, False, 1024), (256, True, 1024)])
def test_attention_ptx(d, causal, s, filecheck, assemble):
    """The default tiles: at d=64 three consumer warpgroups of 128 keys a block for sequences longer than 256 rows
    (causal: 1024), two and the 128-row table's keys up to there."""
    c = _compile(d, causal, s=s)
    wide = d == 64 and s > (1024 if causal else 256)
    _check_ptx(c.ptx, d, filecheck, causal=causal, n=128 if wide else None, groups=3 if wide else 2)
    assemble(c.ptx)


def test_packed_attention_ptx(filecheck, assemble):
    c = _compile_packed()
    _check_ptx(c.ptx, 128, filecheck, rank=3)
    assert c.ptx.count("ld.global.b32") >= 4, "the sequences' offsets are read on the device"
    # ... and checked there, by a kernel of their own that prints a broken rule and traps (a printf call in the
    # attention kernel would make the assembler serialise its WGMMAs: C7510); the unpacked form has no offsets
    check = c.ptx[c.ptx.index(".entry check_offsets"):c.ptx.index(".entry attention_kernel")]
    main = c.ptx[c.ptx.index(".entry attention_kernel"):]
    assert "vprintf" in check and check.count("trap;") == 1
    assert "vprintf" not in main and "trap;" not in main
    assert "trap;" not in _compile().ptx
    assert ptxas_notes(c.ptx) in ([], None)
    assemble(c.ptx)


@pytest.mark.parametrize("kw", [{}, dict(persistent=True, causal=False)])
def test_a_packed_batch_compiles_once_for_symbolic_totals(kw, assemble):
    """Token extents of ``cute.sym_int()`` (q, out and lse sharing one, k and v another): one compile for every total
    of the batch size and ``max_seqlen_q``; the grid from those alone, the totals reaching the kernels as run-time
    values (the offsets' check bounds them), the WGMMAs asynchronous."""
    t, tk, dt = cute.sym_int(), cute.sym_int(), "BFloat16"
    q, k = spec(dt, (t, 8, 128)), spec(dt, (tk, 2, 128))
    causal = kw.pop("causal", True)
    c = cute.compile(attention, q, k, k, q, spec("Float32", (8, t)), causal, None, spec("Int32", (6,)),
                     spec("Int32", (6,)), 1000, **kw)
    check, main = c.launches
    assert check.grid == (5, 1, 1)
    assert main.grid == (8, 8, 5) if not kw else (main.grid[1:] == (1, 1) and 1 <= main.grid[0] <= 8 * 8 * 5)
    assert ptxas_notes(c.ptx) in ([], None)
    assemble(c.ptx)


def test_heavy_first_orders_the_grid_by_query_block_last_first(assemble):
    """The same kernel but for the block coordinates: query block ``nctaid.z - 1 - ctaid.z``, head ``ctaid.x``."""
    plain, heavy = _compile(causal=True, persistent=False), _compile(causal=True, heavy_first=True)
    assert "%nctaid.z" in heavy.ptx and "%nctaid.z" not in plain.ptx
    wgmma = "wgmma.mma_async"
    assert heavy.ptx.count(wgmma) == plain.ptx.count(wgmma) and heavy.ptx.count(wgmma) > 0
    assert ptxas_notes(heavy.ptx) in ([], None)
    assemble(heavy.ptx)
    with pytest.raises(cute.CuteValueError, match="heavy_first must be a bool"):
        _compile(heavy_first=1)
    with pytest.raises(cute.CuteValueError, match="at most 65535"):
        _compile(b=1, s=65536 * 128, h=1, hk=1, heavy_first=True)


@pytest.mark.parametrize("d, causal, block_n, stages", [(128, False, 176, 2), (64, True, 16, 1), (256, False, 48, 3)])
def test_a_tile_of_the_callers_choice(d, causal, block_n, stages, filecheck, assemble):
    """``block_n`` and ``stages`` replace the table's: S's WGMMAs are m64n{block_n}, P V's have block_n / 16
    k-steps, the rings have ``stages`` slots (two mbarriers each, per ring)."""
    c = _compile(d, causal, block_n=block_n, stages=stages)
    _check_ptx(c.ptx, d, filecheck, causal=causal, n=block_n, groups=3 if d == 64 and not causal else 2)
    assert len(re.findall(r"mbarrier\.init\.shared", c.ptx)) >= 1
    assert ptxas_notes(c.ptx) in ([], None)
    assemble(c.ptx)


@pytest.mark.parametrize("kw, match", [
    (dict(block_n=100), "multiple of 16 from 16 to 256"),
    (dict(block_n=272), "multiple of 16 from 16 to 256"),
    (dict(block_n=0), "multiple of 16 from 16 to 256"),
    (dict(block_n=128.0), "multiple of 16 from 16 to 256"),
    (dict(block_n=True), "multiple of 16 from 16 to 256"),
    (dict(stages=0), "stages"),
    (dict(stages=2.0), "stages"),
    (dict(block_n=192, stages=3), "more than the 232448"),
    (dict(d=256, block_n=96, stages=2), "more than the 232448"),
    (dict(d=64, block_m=256), "128 or 192"),
    (dict(d=64, block_m=64), "128 or 192"),
    (dict(d=64, block_m=192.0), "128 or 192"),
    (dict(d=64, block_m=True), "128 or 192"),
    (dict(d=64, block_m=np.int64(192)), "128 or 192"),
    (dict(d=128, block_m=192), "d=64 and at most 128 keys a block; got d=128"),
    (dict(d=64, block_m=192, block_n=192), "at most 128 keys a block; got d=64, block_n=192"),
])
def test_tiles_that_do_not_fit_are_refused_with_the_rule(kw, match):
    with pytest.raises(cute.CuteValueError, match=match):
        _compile(**kw)


@pytest.mark.parametrize("causal, kw", [(False, dict(persistent=False)), (True, dict(persistent=False)),
                                        (False, dict(pingpong=False, persistent=False))])
def test_three_consumer_warpgroups(causal, kw, filecheck, assemble):
    """``block_m=192``: 512 threads, three consumer warpgroups of 64 rows at 160 registers a thread (the producer at
    24), one tiled MMA over all three; with turns, warpgroup ``g`` waits on named barrier ``1 + g`` (two warpgroups)
    and passes to ``1 + (g + 1) % 3``, the last warpgroup giving the first turn; the output's named barriers clear of
    those; the WGMMAs asynchronous and no spills."""
    c = _compile(64, causal, block_m=192, **kw)
    (launch,) = c.launches
    assert launch.block == (512, 1, 1) and launch.grid == (6, 4, 2)         # 1024 rows in tiles of 192
    ptx = c.ptx
    _check_ptx(ptx, 64, filecheck, causal=causal, n=128, groups=3)      # 512 threads, 160 and 24 registers
    turns = re.findall(r"bar\.(?:sync|arrive)\s+[^;]*, 256;", ptx)
    assert bool(turns) == kw.get("pingpong", True)
    if turns:
        assert "bar.arrive 1, 256;" in ptx                                     # the first turn, given once
    assert re.search(r"bar\.sync\s+8, 384;", ptx) and not re.search(r"bar\.sync\s+5, ", ptx)
    assert ptxas_notes(ptx) in ([], None)
    notes = ptxas_report(ptx)
    if notes is not None:
        assert notes[1] == [(0, 0)], notes
    assemble(ptx)


@pytest.mark.parametrize("kw", [dict(d=128, causal=True), dict(d=128, pingpong=False), dict(d=256),
                                dict(d=256, causal=False), dict(d=64, causal=False)])
def test_the_assembler_keeps_the_wgmmas_asynchronous(kw):
    """No accumulator or P register on a branch while an MMA is in flight, no P packed after the fence: ptxas
    would serialise every WGMMA of the kernel (C7520) or add fences (C7519); nor too few registers for the
    pipeline (C7512), as a persistent grid of one tile a CTA gave ptxas when its tiles overlapped (d=128 here: 64
    tiles on 64 CTAs, one each, so no overlap; overlapped grids are checked the same way by
    :func:`test_a_persistent_consumer_issues_its_next_tiles_first_product_before_storing_its_output`)."""
    warnings = ptxas_notes(_compile(**kw).ptx)
    if warnings is None:
        pytest.skip("no ptxas (a CUDA toolkit's, or pip nvidia-cuda-nvcc) to report on the assembly")
    assert warnings == [], f"ptxas: {warnings}"


@pytest.mark.parametrize("change, match", [
    (dict(dt="Float32"), "all BFloat16 or all Float16"),
    (dict(d=96), "head dimension is one of"),
    (dict(hk=3), "multiple of the key/value heads"),
    (dict(causal=1), "causal must be a bool"),
    (dict(softmax_scale=float("nan")), "softmax_scale"),
    (dict(softmax_scale=-0.1), "softmax_scale"),
])
def test_argument_rules(change, match):
    kw = dict(change)
    with pytest.raises(cute.CuteValueError, match=match):
        _compile(**kw)


def test_shape_rules():
    bf = "BFloat16"
    q = spec(bf, (2, 64, 4, 128))
    kv = spec(bf, (2, 64, 2, 128))
    lse = spec("Float32", (2, 4, 64))
    with pytest.raises(cute.CuteValueError, match="out must have q's shape"):
        cute.compile(attention, q, kv, kv, spec(bf, (2, 32, 4, 128)), lse)
    with pytest.raises(cute.CuteValueError, match="lse is Float32 of the shape"):
        cute.compile(attention, q, kv, kv, q, spec("Float32", (2, 64, 4)))
    with pytest.raises(cute.CuteValueError, match="one batch size"):
        cute.compile(attention, q, spec(bf, (3, 64, 2, 128)), spec(bf, (3, 64, 2, 128)), q, lse)
    with pytest.raises(cute.CuteValueError, match="head dimension must be contiguous"):
        cute.compile(attention, spec(bf, (2, 64, 4, 128), (64 * 4 * 128, 1, 64, 64 * 4)), kv, kv, q, lse)
    with pytest.raises(cute.CuteValueError, match="come together"):
        cute.compile(attention, q, kv, kv, q, lse, False, None, spec("Int32", (3,)))
    packed_q, packed_kv = spec(bf, (100, 4, 128)), spec(bf, (90, 2, 128))
    with pytest.raises(cute.CuteValueError, match="needs max_seqlen_q"):
        cute.compile(attention, packed_q, packed_kv, packed_kv, packed_q, spec("Float32", (4, 100)), False, None,
                     spec("Int32", (3,)), spec("Int32", (3,)))
    with pytest.raises(cute.CuteValueError, match="1-D Int32 tensor"):
        cute.compile(attention, packed_q, packed_kv, packed_kv, packed_q, spec("Float32", (4, 100)), False, None,
                     spec("Int64", (3,)), spec("Int32", (3,)), 50)


def test_hostile_shapes_strides_and_scalars():
    """Empty modes, output rows the 16-byte stores cannot reach, and packed batches of no rows are refused with the
    rule; numpy scalars are numbers like Python's (keyed by value: two scales give two kernels)."""
    import numpy as np

    bf = "BFloat16"
    ok = spec(bf, (1, 64, 2, 64))
    lse = spec("Float32", (1, 2, 64))
    for shape in ((1, 0, 2, 64), (0, 64, 2, 64)):
        empty = spec(bf, shape)
        with pytest.raises(cute.CuteValueError, match="empty mode"):
            cute.compile(attention, empty, ok, ok, empty, spec("Float32", (shape[0], 2, shape[1])))
        with pytest.raises(cute.CuteValueError, match="empty mode"):
            cute.compile(attention, ok, empty, empty, ok, lse)
    for strides, address in [((64 * 2 * 65, 2 * 65, 65, 1), 1 << 24),     # odd head stride
                              ((64 * 2 * 64, 2 * 64 + 4, 64, 1), 1 << 24),  # token stride off 16 bytes
                              (None, (1 << 24) + 2)]:                      # the pointer 2 bytes past 16
        out = spec(bf, (1, 64, 2, 64), strides, address=address)
        with pytest.raises(cute.CuteValueError, match="16-byte chunks"):
            cute.compile(attention, ok, ok, ok, out, lse)
    packed, packed_lse, cu = spec(bf, (100, 2, 64)), spec("Float32", (2, 100)), spec("Int32", (3,))
    with pytest.raises(cute.CuteValueError, match="max_seqlen_q, an int >= 1"):
        cute.compile(attention, packed, packed, packed, packed, packed_lse, False, None, cu, cu, 0)
    a = cute.compile(attention, ok, ok, ok, ok, lse, softmax_scale=np.float32(0.25))
    b = cute.compile(attention, ok, ok, ok, ok, lse, softmax_scale=0.25)
    c = cute.compile(attention, ok, ok, ok, ok, lse, softmax_scale=np.float64(0.5))
    assert a.ptx == b.ptx != c.ptx
    with pytest.raises(cute.CuteValueError, match="softmax_scale"):
        cute.compile(attention, ok, ok, ok, ok, lse, softmax_scale=True)


@pytest.mark.parametrize("alternate", [False, True])
def test_the_persistent_order_visits_every_tile_once_heaviest_first_within_a_section(alternate):
    """``tile_at`` over every ``t < m_blocks * pairs`` for shapes of every size class: each ``(m_block, head,
    batch)`` exactly once; the sections (``section`` consecutive pairs, the last one narrower) one after another,
    and within a section the query blocks from the last to the first (with ``alternate``, from the first to the
    last in odd sections), each block's pairs consecutive."""
    from examples.attention_schedule import section_pairs, tile_at

    for m_blocks in (1, 2, 5, 17):
        for heads, batch in ((1, 1), (3, 1), (4, 5), (16, 2)):
            pairs = heads * batch
            for section in sorted({1, 2, 3, pairs, max(1, pairs - 1)}):
                seen = [tile_at(t, m_blocks, pairs, section, heads, alternate) for t in range(m_blocks * pairs)]
                assert sorted(seen) == sorted((m, h, b) for m in range(m_blocks) for h in range(heads)
                                              for b in range(batch)), (m_blocks, pairs, section)
                for t, (m, h, b) in enumerate(seen):
                    s = (b * heads + h) // section            # the pair's section
                    first = s * section
                    width = min(section, pairs - first)
                    within = t - first * m_blocks
                    step = within // width
                    assert 0 <= within < width * m_blocks, (t, m, h, b)
                    assert m == (step if alternate and s % 2 == 1 else m_blocks - 1 - step), (t, m, h, b)
    # the section: whole groups of query heads whose keys and values fit the L2 share, at least one group
    assert section_pairs(64, 1, 8 << 20) == 3 and section_pairs(64, 4, 8 << 20) == 12
    assert section_pairs(64, 2, 1 << 40) == 2 and section_pairs(5, 1, 1) == 5
    with pytest.raises(cute.CuteValueError, match="pairs >= 1"):
        section_pairs(0, 1, 1)


def test_the_deal_gives_every_tile_once_in_the_round_of_its_loop_index():
    """``dealt`` over every CTA's loop ``range(cta, tiles, grid)``, for tile counts below, at and above the grid
    and not multiples of it: every tile once; a tile in its loop index's round; whole odd rounds reversed, the
    others (and a partial last round) as they are."""
    from examples.attention_schedule import dealt

    for grid in (1, 2, 3, 7, 132):
        for tiles in sorted({1, 2, grid - 1, grid, grid + 1, 2 * grid, 3 * grid - 1, 4 * grid + 3, 9 * grid} - {0}):
            taken = {}
            for cta in range(min(grid, tiles)):
                for t in range(cta, tiles, grid):
                    taken[t] = dealt(t, grid, tiles)
            assert sorted(taken.values()) == list(range(tiles)), (grid, tiles)
            for t, got in taken.items():
                r, c = divmod(t, grid)
                whole_odd = r % 2 == 1 and (r + 1) * grid <= tiles
                assert got == (r * grid + grid - 1 - c if whole_odd else t), (grid, tiles, t, got)


@pytest.mark.parametrize("d, seqlen", [(64, 2048), (64, 16384), (128, 4096), (128, 16384), (256, 8192),
                                       (256, 16384)])
def test_a_causal_persistent_schedule_loads_its_ctas_evenly(d, seqlen):
    """The causal schedule on 132 CTAs at the benchmark's shapes (16k tokens, heads x d = 2048): a tile weighs the
    key blocks its query block sees (``m_block + 1`` at equal lengths), and the CTA carrying the most carries at
    most 1.04 times the mean (the order of sections dealt in one direction gave up to 1.82)."""
    from examples.attention_schedule import dealt, persistent_schedule, tile_at

    heads, batch, block_m = 2048 // d, 16384 // seqlen, 128
    m_blocks = seqlen // block_m
    (m_b, pairs, section, hs, grid, alt), _ = persistent_schedule(132, False, m_blocks, heads, batch, 1,
                                                                  4 * seqlen * d, d, True, block_m, False)
    assert (m_b, pairs, section, hs, grid, alt) == (m_blocks, heads * batch, heads * batch, heads, 132, False)
    tiles = m_blocks * pairs
    load = [sum(tile_at(dealt(t, grid, tiles), m_blocks, pairs, section, heads)[0] + 1
                for t in range(cta, tiles, grid)) for cta in range(grid)]
    assert max(load) <= 1.04 * sum(load) / grid, (max(load), sum(load) / grid)


@pytest.mark.parametrize("d, seqlen, section", [(128, 512, 16), (128, 1024, 8), (128, 2048, 4), (64, 512, 4),
                                              (64, 1024, 4)])
def test_a_short_causal_schedule_keeps_a_pairs_tiles_together_and_loads_its_ctas_within_4_percent(d, seqlen, section):
    """Up to 16 query blocks with the mask (``CAUSAL_SECTIONS``), at the benchmark's shapes on 132 CTAs: sections of
    the size ``causal_section`` chooses (those measured fastest), odd ones lightest first; every pair's tiles are
    dealt within one section's span of the order (so that the keys and values they share are still in L2), and
    the CTA carrying the most key blocks carries at most 1.04 times the mean (1.13-1.15 with sections of the L2
    share, each heaviest first)."""
    from examples.attention_schedule import L2_SHARE, deal_load, persistent_schedule, tile_at

    heads, batch, block_m = 2048 // d, 16384 // seqlen, 128
    m_blocks, kv = seqlen // block_m, 4 * seqlen * d
    (m_b, pairs, got, hs, grid, alt), _ = persistent_schedule(132, False, m_blocks, heads, batch, 1, kv, d, True,
                                                              block_m, False)
    assert alt is True and got == section and section * kv <= L2_SHARE
    tiles = m_blocks * pairs
    at = {}
    for t in range(tiles):
        _, h, b = tile_at(t, m_blocks, pairs, section, heads, True)
        at.setdefault((b, h), []).append(t)
    assert all(max(ts) - min(ts) < section * m_blocks for ts in at.values())
    # the whole deal (deal_load is checked against tile_at and dealt below)
    assert deal_load(m_blocks, pairs, section, grid, True, rounds=tiles) <= 1.04
    # one section of every pair (a sequence of 32 query blocks) keeps its weights even
    assert persistent_schedule(132, False, 32, heads, 4, 1, 4 * 4096 * d, d, True, block_m, False)[0][5] is False


def test_the_deal_load_is_the_load_of_the_order_as_dealt():
    """``deal_load`` against ``tile_at`` and ``dealt`` themselves (a tile weighs ``m_block + 1``), over grids below,
    at and above the tiles, narrow last sections, both directions of the odd sections and a cut after some rounds;
    ``causal_section`` takes whole groups of query heads."""
    from examples.attention_schedule import causal_section, deal_load, dealt, tile_at

    for m_blocks, pairs, section, grid, alternate, rounds, most in [
            (4, 10, 3, 7, True, 64, None), (5, 9, 2, 13, False, 64, None), (3, 7, 7, 100, True, 64, None),
            (8, 12, 5, 11, True, 2, None), (1, 6, 4, 3, True, 64, None), (16, 20, 6, 17, False, 3, None),
            (4, 33, 8, 16, True, 64, None), (4, 33, 8, 16, True, 64, 50), (6, 9, 2, 40, True, 64, 23)]:
        tiles = m_blocks * pairs
        g = min(grid, tiles)
        end = min(tiles, rounds * g, tiles if most is None else most)
        load = [sum(tile_at(dealt(t, g, tiles), m_blocks, pairs, section, 1, alternate)[0] + 1
                    for t in range(cta, end, g)) for cta in range(g)]
        want = max(load) * g / sum(load)
        got = deal_load(m_blocks, pairs, section, grid, alternate, rounds, most)
        assert got == pytest.approx(want, rel=1e-12), (m_blocks, pairs, section, grid, alternate, rounds, most)
    assert causal_section(4, 96, 4, 1 << 20, 132) % 4 == 0 and causal_section(8, 7, 1, 1 << 30, 132) == 1


@pytest.mark.parametrize("d, causal, own_o, block_m", [(128, False, True, 128), (128, True, True, 128),
                                                       (64, True, True, 128), (64, False, True, 192),
                                                       (256, False, False, 128)])
def test_a_persistent_grid_walks_its_tiles(d, causal, own_o, block_m, assemble):
    """``persistent``: a grid of the CTAs asked for (never more than the tiles), each looping over its tiles; the
    Q tile handed from the consumers back to the producer through an mbarrier of an arrival per consumer thread
    (its phase carried from tile to tile), the output through a buffer of its own where shared memory has room;
    the WGMMAs kept asynchronous."""
    c = _compile(d, causal, persistent=5, block_m=block_m)
    (launch,) = c.launches
    assert launch.grid == (5, 1, 1) and launch.block == (2 * block_m + 128, 1, 1)
    assert _launch(d, causal, b=1, s=128, h=2, hk=1, persistent=True, block_m=block_m).grid == (2, 1, 1)
    ptx = c.ptx
    assert re.search(rf"mov\.b32\s+(%r\d+), {2 * block_m};\s+mbarrier\.init\.shared\.b64\s+\[[^]]+\], \1;", ptx)
    assert "%ctaid.x" in ptx and "%ctaid.y" not in ptx
    plain = _compile(d, causal, persistent=False, block_m=block_m).ptx
    smem = int(re.search(r"__cute_py_dyn_smem\+(\d+)\]", ptx).group(1)) if own_o else None
    if own_o:      # the barriers lie past a buffer of block_m x d 16-bit elements more than a CTA per tile's, and
        # with two consumer warpgroups a second Q buffer (examples.attention_consumer.consume_overlapped)
        extra = 2 if block_m == 128 else 1
        assert smem == int(re.search(r"__cute_py_dyn_smem\+(\d+)\]", plain).group(1)) + extra * block_m * d * 2
    # with a buffer of its own a consumer warpgroup stores its rows without waiting for the others (the barrier
    # of all of them, 5 or 8, guards only rows that lie over Q's), once its last store has read the buffer
    everyone = rf"bar\.sync\s+{5 if block_m == 128 else 8}, {2 * block_m};"
    assert bool(re.search(everyone, ptx)) != own_o and re.search(everyone, plain)
    if own_o:
        assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;(?:(?!cp\.async\.bulk\.tensor).)*stmatrix", ptx,
                         re.S)
    # ping-pong on a persistent grid: the turns run on from tile to tile, so warpgroup 0 takes the one left over
    # after its last tile (a CTA per tile leaves the last warpgroup's last pass out instead); where warpgroup 0 has
    # a copy of the consumer of its own (half of each tile's first key block), its turns wait on barrier 1 by name
    left_over = r"bar\.sync\s+1, 256;"
    assert len(re.findall(left_over, ptx)) == len(re.findall(left_over, plain)) + 1
    assert ptxas_notes(ptx) in ([], None)
    assemble(ptx)


@pytest.mark.parametrize("d, sk, halves", [(64, 512, True), (64, 600, False), (128, 512, False)])
def test_the_first_warpgroup_computes_half_of_each_tiles_diagonal_block_where_the_rule_holds(d, sk, halves):
    """Causal, lengths whose difference is a multiple of 128, d=64 (``attention_consumer.halves_diagonal``): the
    first warpgroup's first product of each tile is 64 keys wide (before the tiles' loop and in each last turn: a
    persistent grid whose tiles overlap), in a copy of the consumer of its own; the WGMMAs stay asynchronous.
    Elsewhere no product is narrower than the key block."""
    ptx = _compile(d, True, b=8, s=512, sk=sk, h=16, hk=16).ptx
    narrow = len(re.findall(r"m64n64k16\.f32\.bf16\.bf16 \{[^}]*\}, %rd", ptx))
    assert _q_barriers(ptx)[:2] == [1, 1] and narrow == (2 * d // 16 if halves else 0), narrow
    assert ptxas_notes(ptx) in ([], None)


def _q_barriers(ptx):
    """The arrival counts of the mbarriers initialised first (Q's, before the K and V rings' fence), in the order
    of their shared-memory offsets."""
    head = ptx[:ptx.index("fence.mbarrier_init")]
    counts = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", head))
    inits = re.findall(r"mbarrier\.init\.shared\.b64\s+\[__cute_py_dyn_smem\+(\d+)\], (%r\d+);", head)
    return [int(counts[r]) for _, r in sorted(inits, key=lambda i: int(i[0]))]


@pytest.mark.parametrize("d, causal, sk, overlap", [(128, False, None, True), (128, True, None, True),
                                                    (64, True, None, True), (128, True, 873, True),
                                                    (128, True, 872, False), (64, False, None, False)])
def test_a_persistent_consumer_issues_its_next_tiles_first_product_before_storing_its_output(d, causal, sk, overlap,
                                                                                           assemble):
    """With two consumer warpgroups, an output buffer of its own and every query block seeing a key (1000 causal
    query rows: row 127 sees keys up to 127 + seqlen_k - 1000, so the first block sees key 0 at 873 keys and none
    at 872), Q has two buffers, each with a loaded and a free mbarrier, and a warpgroup's last turn of a tile issues
    ``P V`` and then the next tile's ``S = Q K^T`` before it waits for ``P V`` alone and stores the output
    (``stmatrix``) while that ``S`` runs; the WGMMAs stay asynchronous and nothing spills. Else (three consumer
    warpgroups at d=64 past 256 rows, or a first block that sees no key) one Q buffer as before."""
    c = _compile(d, causal, s=1000, sk=sk, persistent=5)
    ptx = c.ptx
    pv = rf"wgmma\.mma_async\.sync\.aligned\.m64n{d}k16[^;]*\{{%r"
    s_next = r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16[^;]*\}, %rd\d+, %rd"
    last_turn = (rf"{pv}(?:(?!wgmma\.wait_group).)*wgmma\.commit_group\.sync\.aligned;\s+(?:(?!wgmma\.wait).)*"
                 rf"{s_next}(?:(?!wgmma\.wait).)*wgmma\.commit_group\.sync\.aligned;(?:(?!wgmma\.wait).)*"
                 r"wgmma\.wait_group\.sync\.aligned\s+1;(?:(?!wgmma\.).)*stmatrix")
    assert bool(re.search(last_turn, ptx, re.S)) == overlap
    block_m = 128 if d == 128 or causal else 192
    # Q's loaded mbarriers (one arrival and the bytes), then its free ones (every consumer thread): two of each
    # where Q has two buffers
    assert _q_barriers(ptx) == ([1, 1, 256, 256] if overlap else [1, 2 * block_m])
    report = ptxas_report(ptx)
    if report is not None:      # (the 192-row tiles' 8 bytes of spills at 1000 rows are not this test's)
        assert report[0] == [] and (report[1] == [(0, 0)] or not overlap), report
    assemble(ptx)


@pytest.mark.parametrize("kw, match", [
    (dict(overlap=1), "overlap is None"),
    (dict(overlap="yes", persistent=5), "overlap is None"),
    (dict(overlap=True, persistent=False), "overlap=True needs a persistent grid with more tiles than CTAs"),
    (dict(overlap=True, persistent=5, d=64, block_m=192), r"two consumer warpgroups \(block_m 128, got 192\)"),
    (dict(overlap=True, persistent=5, causal=True, s=1000, sk=872), "every query block seeing a key .seqlen_q 1000, "
                                                                    "seqlen_k 872, causal True, 128 rows"),
    (dict(overlap=True, persistent=5, block_n=128, stages=3), r"shared memory for two Q tiles .*\(296960 bytes"),
])
def test_overlap_refuses_what_it_cannot_be(kw, match):
    with pytest.raises(cute.CuteValueError, match=match):
        _launch(**kw)


def test_overlap_is_taken_where_the_rule_allows_it_and_never_when_refused():
    """``overlap=None`` takes two Q buffers where ``overlap=True`` is accepted; ``False`` keeps one (the barriers
    of Q: :func:`_q_barriers`); a packed batch never overlaps and refuses ``True``."""
    _launch(128, True, s=1000, persistent=5, overlap=True)           # accepted (the host trace alone)
    assert _q_barriers(_compile(128, True, s=1000, persistent=5).ptx) == [1, 1, 256, 256]
    assert _q_barriers(_compile(128, True, s=1000, persistent=5, overlap=False).ptx) == [1, 256]
    with pytest.raises(cute.CuteValueError, match="not a packed batch"):
        _packed_launch(persistent=True, overlap=True)


def test_the_default_grid_follows_the_measured_table():
    """``persistent=None``: a persistent grid (one dimension, at most the SMs) where ``PERSISTENT`` names the head
    dimension, the mask and the tile's rows and the sequence has few enough query blocks, else a CTA per tile (three
    dimensions)."""
    from examples.attention_schedule import PERSISTENT

    assert PERSISTENT[64, True, 128] is PERSISTENT[128, True, 128] is PERSISTENT[128, False, 128] is None
    assert not any(key[0] == 256 for key in PERSISTENT)

    def grid(d, causal, s, **kw):
        return _launch(d, causal, b=2, s=s, h=4, hk=2, **kw).grid

    sms, *rest = grid(64, True, 16384, block_m=128)
    assert sms >= 1 and rest == [1, 1]
    assert grid(128, False, 512) == (min(sms, 4 * 8), 1, 1) == grid(128, True, 512) == grid(64, True, 512)
    assert grid(64, True, 1024) == (min(sms, 8 * 8), 1, 1)
    assert grid(128, False, 16384) == (sms, 1, 1) == grid(128, True, 16384)
    assert grid(64, False, 256) == (min(sms, 2 * 8), 1, 1) and grid(64, False, 1280, block_m=128) == (10, 4, 2)
    assert grid(128, False, 640, persistent=False) == (5, 4, 2) and grid(256, False, 512) == (4, 4, 2)
    assert grid(64, True, 512, heavy_first=True) == (4, 2, 4)


def test_the_default_tiles_of_192_rows_are_persistent_where_measured_faster():
    """At d=64 past 256 rows (causal: 1024) the default tiles have 192 rows (``WIDE_TILES``): on a persistent grid up
    to 6 query blocks (1152 rows) without the mask and 22 (4224 rows) with it, a CTA per tile past that; a packed
    batch (not measured persistent) a CTA per tile unless asked."""
    def grid(d, causal, s, **kw):
        return _launch(d, causal, b=2, s=s, h=4, hk=2, **kw).grid

    def threads(causal, s):
        return _launch(64, causal, b=2, s=s, h=4, hk=2).block[0]

    assert (threads(False, 256), threads(False, 257), threads(True, 1024), threads(True, 1025)) == (384, 512, 384, 512)
    sms = grid(64, True, 16384, block_m=128)[0]
    assert grid(64, False, 1024) == (min(sms, 6 * 8), 1, 1) and grid(64, False, 1152)[1:] == (1, 1)
    assert grid(64, False, 1153) == (7, 4, 2) and grid(64, False, 2048) == (11, 4, 2)
    assert grid(64, True, 2048) == (min(sms, 11 * 8), 1, 1) and grid(64, True, 4224)[1:] == (1, 1)
    assert grid(64, True, 4225) == (23, 4, 2) and grid(64, True, 16384) == (86, 4, 2)
    assert grid(64, True, 16384, persistent=True)[1:] == (1, 1)                  # persistent when asked
    assert grid(64, False, 512, persistent=False) == (3, 4, 2)                   # a CTA per tile when asked
    assert _packed_launch(d=64).grid == (8, 8, 5)                    # causal, 1000 rows: 128 a tile
    assert _packed_launch(d=64, causal=False).grid == (6, 8, 5)      # 192 a tile
    assert _packed_launch(d=64, persistent=True).grid[1:] == (1, 1)


@pytest.mark.parametrize("kw, match", [
    (dict(persistent=0), "persistent is a bool or a number of CTAs"),
    (dict(persistent=2.0), "persistent is a bool or a number of CTAs"),
    (dict(persistent=2 ** 31), "persistent is a bool or a number of CTAs"),
    (dict(persistent="yes"), "persistent is a bool or a number of CTAs"),
    (dict(persistent=True, heavy_first=True), "ask for one of them"),
])
def test_a_persistent_grid_refuses_what_it_cannot_be(kw, match):
    with pytest.raises(cute.CuteValueError, match=match):
        _compile(**kw)


def test_short_keys_take_the_tile_that_pads_them_least():
    """``SHORT_TILES``: at d=256 without the mask the default takes 64 keys a block where the table's 80 would pad
    more than 1/16 of the keys and 64 pad fewer (512 keys: 80's last block holds 48 past them); the caller's
    ``block_n``, the mask, keys the compile does not know and other lengths keep the table's."""
    from examples.attention_args import TILES, check_tile, padding

    for keys in range(1, 1000):
        for n in (16, 64, 80, 192):
            p = padding(keys, n)
            assert 0 <= p < n and (keys + p) % n == 0
    assert check_tile(256, False, None, None, None, 512, 512) == (64, 2, 128)
    for keys in (1024, 2048, 300, 480, None, 0):    # 300: both pad 20; 480: 80 pads none
        assert check_tile(256, False, None, None, None, 512, keys) == (80, 2, 128)
    assert check_tile(256, True, None, None, None, 512, 512) == TILES[256, True] + (128,)
    assert check_tile(256, False, 80, None, None, 512, 512) == (80, 2, 128)
    assert check_tile(128, False, None, None, None, 512, 520) == TILES[128, False] + (128,)
    ptx = _compile(d=256, s=512).ptx
    assert "m64n64k16" in ptx and "m64n80k16" not in ptx
    assert "m64n80k16" in _compile(d=256, s=512, sk=1024).ptx
