"""Kernel 13 on 8-bit floats without a GPU: A and B Float8E4M3FN or Float8E5M2 (mixed), 128-byte k-tiles of 128
elements, ``wgmma ... k32`` instructions, each k-tile promoted into fp32 unless ``fast_accum``, per-tensor scales
read on the device; its PTX checked and assembled, no spills, and its rules."""

import re

import pytest

import cute_py as cute
from examples import gemm
from _ptxas_report import ptxas_report

spec = cute.compiler.DeviceArraySpec
NAMES = {"Float8E4M3FN": "e4m3", "Float8E5M2": "e5m2"}


def _compile(m, n, k, a="Float8E4M3FN", b="Float8E4M3FN", out="BFloat16", kp=None, **kw):
    kp = kp or k
    return cute.compile(gemm, spec(a, (m, k), (kp, 1)), spec(b, (n, k), (kp, 1)), spec(out, (m, n)), **kw)


def _ptxas_notes(ptx):
    """ptxas's C75xx notes and each function's spill-store bytes, or ``None`` without a ptxas."""
    report = ptxas_report(ptx)
    return None if report is None else (report[0], [stores for stores, _ in report[1]])


@pytest.mark.parametrize("a, b, out, kwargs", [
    ("Float8E4M3FN", "Float8E4M3FN", "BFloat16", dict(fast_accum=True)),
    ("Float8E5M2", "Float8E4M3FN", "Float32", dict(tile_n=128, cluster_m=1, persistent=False, split_k=1,
                                                   fast_accum=True)),
    ("Float8E4M3FN", "Float8E5M2", "BFloat16", dict(split_k=2, tile_n=128, fast_accum=True)),
])
def test_fp8_gemm_ptx(a, b, out, kwargs, filecheck, assemble):
    """Each k-tile is 128 bytes of K (128 elements: one TMA box of A and of B per stage) and four
    ``m64nNk32`` WGMMAs of the two 8-bit types (with ``fast_accum``, all into the tile's accumulators)."""
    c = _compile(1024, 1024, 1024, a, b, out, **kwargs)
    n = kwargs.get("tile_n", 256)
    mma = f"wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{NAMES[a]}.{NAMES[b]}"
    operands = "{{%rd[0-9]+}}, {{%rd[0-9]+}}, {{p|%p[0-9]+}}, 1, 1;"
    filecheck(c.ptx, ["CHECK: cp.async.bulk.tensor.2d.shared::cluster.global",
                      f"CHECK: {mma} {{{{[{{].*[}}]}}}}, {operands}"])
    assert c.ptx.count(mma) == 8, "four k-blocks of 32 in a 128-element k-tile, a prologue and the main loop"
    assemble(c.ptx)
    notes = _ptxas_notes(c.ptx)
    if notes is not None:
        assert notes == ([], [0]), f"ptxas: {notes}"


@pytest.mark.parametrize("a, b, out, kwargs", [
    ("Float8E4M3FN", "Float8E4M3FN", "BFloat16", {}),
    ("Float8E5M2", "Float8E4M3FN", "Float32", dict(scale_a=spec("Float32", (1,)), scale_b=spec("Float32", (1,)))),
    ("Float8E4M3FN", "Float8E5M2", "BFloat16", dict(split_k=2, cluster_m=1, persistent=False)),
])
def test_fp8_products_are_promoted_into_fp32_each_k_tile_by_default(a, b, out, kwargs, filecheck, assemble):
    """Without ``fast_accum`` (per-tensor scales or none) each 128-element k-tile's WGMMAs go into fresh partials
    in 128 x 128 tiles, in pairs as block scales do (``setmaxnreg`` to 232), and each partial is added to the fp32
    accumulators (64 ``add.rn.f32`` a partial); no scale is read in the loop, the per-tensor ones multiply in the
    epilogue. No spills. ``fast_accum=True`` gives the kernel of all of K in the tensor cores."""
    c = _compile(1024, 1024, 1024, a, b, out, **kwargs)
    mma = f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{NAMES[a]}.{NAMES[b]}"
    wait = "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}"
    filecheck(c.ptx, ["CHECK: setmaxnreg.inc.sync.aligned.u32 {{[ \t]*}}232;", f"CHECK-COUNT-8: {mma}",
                      wait + "1;", "CHECK-COUNT-64: add.rn.f32", wait + "0;"])
    assert c.ptx.count(mma) == 8 and "fma.rn.f32" not in c.ptx[:c.ptx.index("wgmma.wait_group")]
    assert c.ptx != _compile(1024, 1024, 1024, a, b, out, fast_accum=True, **kwargs).ptx
    assemble(c.ptx)
    notes = _ptxas_notes(c.ptx)
    if notes is not None:
        assert notes == ([], [0]), f"ptxas: {notes}"


@pytest.mark.parametrize("shape, kwargs, sites", [
    ((1024, 1024, 1024), dict(tile_n=192), 1),
    # the registers raised for the turns too; the last k-tile peeled (a second copy of its MMAs and promotion)
    ((300, 520, 1008), dict(tile_n=192, pingpong=True), 2),
])
def test_fp8_products_are_promoted_one_k_tile_at_a_time_in_128x192_tiles(shape, kwargs, sites, filecheck,
                                                                          assemble):
    """128 x 192 tiles promote each k-tile's ``m64n192k32`` WGMMAs alone: 96 accumulators and 96 partials a thread
    (``setmaxnreg`` to 232) leave no room for a second partial, so no ``wait_group 1`` and 96 ``add.rn.f32`` a
    k-tile; no spills."""
    c = _compile(*shape, **kwargs)
    mma = "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3"
    filecheck(c.ptx, ["CHECK: setmaxnreg.inc.sync.aligned.u32 {{[ \t]*}}232;", f"CHECK-COUNT-4: {mma}"])
    # (the loop is rotated: a k-tile's promotion may come before the next one's MMAs in the text)
    assert c.ptx.count(mma) == 4 * sites and c.ptx.count("add.rn.f32") == 96 * sites and "m64n128k32" not in c.ptx
    assert re.findall(r"wgmma.wait_group.sync.aligned\s+(\d);", c.ptx) == ["0"] * sites
    assemble(c.ptx)
    notes = _ptxas_notes(c.ptx)
    if notes is not None:
        assert notes == ([], [0]), f"ptxas: {notes}"


@pytest.mark.parametrize("kwargs, match", [
    (dict(fast_accum=1), "fast_accum is a bool"),
    (dict(fast_accum=True, a="BFloat16", b="BFloat16"), "True only with 8-bit inputs .* with BFloat16 inputs"),
    (dict(fast_accum=True, scale_a=spec("Float32", (300, 2)), scale_b=spec("Float32", (3, 2))), "with block scales"),
    (dict(tile_n=256), "promoted into fp32 \\(fast_accum=False\\) take tile_n=128 or 192 .* got 256"),
    (dict(tile_n=192, reg_realloc=False), "promoted into fp32 in 128 x 192 tiles take reg_realloc=True"),
    (dict(tile_n=192, pingpong=True, reg_realloc=False), "in 128 x 192 tiles take reg_realloc=True .* got False"),
    (dict(tile_n=192, scale_a=spec("Float32", (300, 2)), scale_b=spec("Float32", (3, 2))),
     "block scales take tile_n=128"),
    (dict(fast_accum=True, pingpong=True), "pingpong is a bool, True only with 8-bit inputs promoted"),
])
def test_fast_accum_rules(kwargs, match):
    with pytest.raises(cute.CuteValueError, match=match):
        _compile(300, 260, 224, **kwargs)


def test_per_tensor_scales_are_read_on_the_device_and_multiply_the_product():
    plain = _compile(300, 260, 224).ptx
    scaled = _compile(300, 260, 224, scale_a=spec("Float32", (1,)), scale_b=spec("Float32", (1,))).ptx
    assert scaled != plain
    body = scaled[scaled.index(".entry"):]
    assert len(re.findall(r"ld\.global(\.nc)?\.(f32|b32)", body)) >= 2, "the two scales"
    assert _compile(300, 260, 224, scale_a=spec("Float32", (1,)), scale_b=spec("Float32", (1,)),
                    alpha=0.5).ptx != scaled


@pytest.mark.parametrize("kwargs, match", [
    (dict(b="BFloat16"), "A and B are both BFloat16, both Float16, or 8-bit floats .* got Float8E4M3FN and BFloat16"),
    (dict(a="Float16", b="Float8E5M2"), "got Float16 and Float8E5M2"),
    (dict(k=200), "a's rows must start on 16-byte boundaries .* a row stride of a multiple of 16 elements .* got 200"),
    (dict(scale_a=spec("Float32", (1,))), "scale_a and scale_b come together"),
    (dict(scale_a=spec("Float32", (2,)), scale_b=spec("Float32", (1,))), "scale_a is a Float32 tensor of one element"),
    (dict(scale_a=spec("Float32", (1,)), scale_b=spec("BFloat16", (1,))), "scale_b is a Float32 tensor of one"),
])
def test_fp8_rules(kwargs, match):
    args = dict(m=300, n=260, k=224)
    for key in ("k",):
        if key in kwargs:
            args[key] = kwargs.pop(key)
    with pytest.raises(cute.CuteValueError, match=match):
        _compile(args["m"], args["n"], args["k"], **kwargs)
    _compile(300, 260, 200, kp=208)          # padded rows of a multiple of 16 bytes: fine


def _block(m, n, k, **kw):
    kt = -(-k // 128)
    return _compile(m, n, k, scale_a=spec("Float32", (m, kt)), scale_b=spec("Float32", (-(-n // 128), kt)), **kw)


@pytest.mark.parametrize("m, n, kwargs, cluster", [
    (512, 8192, {}, 1), (8192, 512, {}, 1), (1024, 4096, {}, 1),      # promoted, M or N below 4096: one CTA
    (4096, 4096, {}, 2), (8192, 8192, {}, 2),                           # 4096 or more on both sides: 2x1
    (512, 8192, dict(cluster_m=2), 2),                                  # the caller's choice
    (512, 8192, dict(fast_accum=True), 2),                              # the tensor cores' own sums
    (512, 8192, dict(block=True), 2),                                   # block scales
])
def test_the_default_cluster_of_promoted_per_tensor_fp8(m, n, kwargs, cluster):
    """Promoted 8-bit inputs with per-tensor scales (or none) take one CTA a cluster by default where M or N is
    below 4096 (``gemm_plan.cluster_m_one``, measured), 2x1 clusters elsewhere, with ``fast_accum`` and with block
    scales; persistent either way, K of 1024 unsplit."""
    kwargs = dict(kwargs)
    c = _block(m, n, 1024) if kwargs.pop("block", False) else _compile(m, n, 1024, **kwargs)
    (launch,) = c.launches
    assert launch.cluster == (cluster, 1, 1)
    assert launch.grid[0] <= 132 and launch.grid[0] % cluster == 0


def test_block_scaled_gemm_promotes_each_k_tile_in_fp32(filecheck, assemble):
    """DeepSeek-V3's block scaling, one k-tile at a time (``reg_realloc=False``): each 128-element k-tile's four
    WGMMAs go into fresh accumulators, waited for, then added to the tile's with one FMA per accumulator by the A
    row's and the B block's scales (three loads: two rows of A's scales, one of B's)."""
    c = _block(4096, 7168, 2048, reg_realloc=False)
    mma = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"
    filecheck(c.ptx, [f"CHECK-COUNT-4: {mma}", "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;"])
    # (the loop is rotated: the promotion of one k-tile may come before the next one's MMAs in the text)
    assert c.ptx.count(mma) == 4 and c.ptx.count("fma.rn.f32") == 64 and c.ptx.count("wgmma.wait_group") == 1
    assert c.ptx.count("ld.global.b32") >= 3 and "setmaxnreg" not in c.ptx
    assemble(c.ptx)
    notes = _ptxas_notes(c.ptx)
    if notes is not None:
        assert notes == ([], [0]), f"ptxas: {notes}"


@pytest.mark.parametrize("shape, kwargs, odd", [
    ((4096, 7168, 2048), {}, False),                          # 16 k-tiles: pairs only (the count is static)
    ((300, 260, 640), {}, True),                              # 5: two pairs and the last alone
    ((256, 384, 896), dict(split_k=2, cluster_m=1, persistent=False), True),   # 3 and 4 k-tiles a split
])
def test_block_scaled_k_tiles_go_in_pairs_by_default(shape, kwargs, odd, filecheck, assemble):
    """By default (``reg_realloc`` with block scales) the k-tiles go in pairs: both k-tiles' WGMMAs issued into
    two partials, ``wait_group 1``, the first promoted (64 FMAs) while the second's run, ``wait_group 0``, the
    second promoted; an odd last k-tile alone. The consumers take 232 registers (``setmaxnreg``), and the
    assembler keeps the WGMMAs asynchronous and spills nothing."""
    c = _block(*shape, **kwargs)
    mma = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"
    wait = "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}"
    # (the loop is rotated: the second promotion comes before the pair's MMAs in the text)
    filecheck(c.ptx, ["CHECK: setmaxnreg.inc.sync.aligned.u32 {{[ \t]*}}232;", f"CHECK-COUNT-8: {mma}",
                      wait + "1;", "CHECK-COUNT-64: fma.rn.f32", wait + "0;"])
    singles = 1 if odd else 0
    assert c.ptx.count(mma) == 8 + 4 * singles and c.ptx.count("fma.rn.f32") == 128 + 64 * singles
    assert c.ptx.count("wgmma.wait_group") == 2 + singles
    assemble(c.ptx)
    notes = _ptxas_notes(c.ptx)
    if notes is not None:
        assert notes == ([], [0]), f"ptxas: {notes}"


@pytest.mark.parametrize("shape", [(4096, 7168, 2048), (64, 2112, 7168), (300, 260, 224)])
def test_block_scaled_pingpong_takes_turns_around_each_k_tile(shape, assemble):
    """``pingpong``: each warpgroup waits for its turn (``bar.sync`` on barrier 3 or 4 of 256 threads) before its
    k-tile's four WGMMAs and passes it on (``bar.arrive``) before waiting for them; the last k-tile is peeled
    (four more WGMMAs), its pass after the wait. The assembler keeps the WGMMAs asynchronous and spills nothing;
    without ``pingpong`` no such barrier appears."""
    c = _block(*shape, pingpong=True)
    mma = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"
    assert c.ptx.count(mma) == 8 and c.ptx.count("fma.rn.f32") == 128
    assert len(re.findall(r"bar\.sync\s+%r\d+, 256;", c.ptx)) == 2
    assert len(re.findall(r"bar\.arrive\s+(3|4|%r\d+), 256;", c.ptx)) == 3
    plain = _block(*shape).ptx
    assert not re.search(r"bar\.(sync|arrive)\s+(3|4|%r\d+), 256;", plain)
    assemble(c.ptx)
    notes = _ptxas_notes(c.ptx)
    if notes is not None:
        assert notes == ([], [0]), f"ptxas: {notes}"


@pytest.mark.parametrize("build, match", [
    (lambda: _block(300, 260, 224, tile_n=256), "block scales take tile_n=128"),
    (lambda: _compile(300, 260, 224, pingpong=True, fast_accum=True), "True only with 8-bit inputs promoted"),
    (lambda: _block(300, 260, 224, pingpong=1), "pingpong is a bool"),
    (lambda: _compile(300, 260, 224, scale_a=spec("Float32", (300, 1)), scale_b=spec("Float32", (3, 2))),
     r"scale_a is Float32 of the shape \(300, 2\)"),
    (lambda: _compile(300, 260, 224, scale_a=spec("Float32", (300, 2)), scale_b=spec("Float32", (2, 2))),
     r"scale_b is Float32 of the shape \(3, 2\)"),
    (lambda: _compile(300, 260, 224, scale_a=spec("Float32", (300, 2)), scale_b=spec("BFloat16", (3, 2))),
     r"scale_b is Float32 of the shape \(3, 2\)"),
    (lambda: _compile(300, 260, 224, "BFloat16", "BFloat16", scale_a=spec("Float32", (300, 2)),
                      scale_b=spec("Float32", (3, 2))), "block scales .* take 8-bit A and B, got BFloat16"),
])
def test_block_scale_rules(build, match):
    with pytest.raises(cute.CuteValueError, match=match):
        build()
