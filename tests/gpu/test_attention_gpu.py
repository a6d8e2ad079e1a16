"""On a Hopper GPU: kernel 14, attention (``examples.attention``), against ``torch``'s attention in fp32 on the same
inputs, with FlashAttention's tolerance (the error at most twice that of the same attention computed by torch in
the input type, plus a small absolute term), into NaN-poisoned padded outputs whose padding must keep every bit;
head dimensions 64, 128, 256; causal and not; grouped-query heads; packed batches with empty and length-1
sequences; bit-identical reruns."""

import math

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

from examples import attention  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu

PAD = 8          # poisoned elements after each row of out's head dimension, and guard rows around lse


def reference(torch, q, k, v, causal, scale, dtype):
    """Attention of one sequence ``q (Sq, H, D)``, ``k, v (Sk, Hkv, D)`` computed by torch in ``dtype`` (the inputs
    rounded to it), the causal diagonal at the bottom right; rows that see no key give 0 and lse -inf."""
    sq, h, _ = q.shape
    sk, hk, _ = k.shape
    qf, kf, vf = (t.to(dtype).transpose(0, 1) for t in (q, k, v))          # (H, S, D)
    kf, vf = (t.repeat_interleave(h // hk, dim=0) for t in (kf, vf))
    s = torch.matmul(qf, kf.transpose(1, 2)).float() * scale
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + sk - sq, -math.inf)
    dead = torch.isinf(s).all(dim=-1, keepdim=True)                        # rows that see no key
    s = s.masked_fill(dead, 0.0)
    lse = torch.logsumexp(s, dim=-1).masked_fill(dead[..., 0], -math.inf)  # (H, Sq)
    p = torch.softmax(s, dim=-1).masked_fill(dead, 0.0)
    o = torch.matmul(p.to(dtype), vf).float()
    return o.transpose(0, 1), lse


def _poisoned(torch, shape, dtype, pad):
    """A NaN-filled buffer with ``pad`` extra elements in the last mode, and the view of ``shape`` into it."""
    buf = torch.full((*shape[:-1], shape[-1] + pad), math.nan, dtype=dtype, device="cuda")
    return buf, buf[..., :shape[-1]]


def _check_outside(torch, buf, view):
    """Every element of ``buf`` outside ``view`` is still the NaN it was filled with (bit for bit)."""
    mask = torch.ones(buf.shape, dtype=torch.bool, device=buf.device)
    mask[..., :view.shape[-1]] = False
    bits = buf.view(torch.int16 if buf.element_size() == 2 else torch.int32)[mask]
    nan = torch.full((1,), math.nan, dtype=buf.dtype, device=buf.device).view(bits.dtype)
    assert bool((bits == nan).all()), "a store wrote outside the output"


def _check_close(torch, got, ref32, ref_low, what):
    """FlashAttention's rule: |got - ref32| <= 2 |ref_low - ref32| + 1e-5 at the worst element."""
    err = (got.float() - ref32).abs().max().item()
    base = (ref_low.float() - ref32).abs().max().item()
    assert err <= 2 * base + 1e-5, f"{what}: max error {err}, torch in the input type {base}"


def _check_lse(got, ref, what):
    """``got`` within 1e-3 (absolute and relative) of ``ref``, and ``-inf`` exactly where ``ref`` is."""
    close = ((got - ref).abs() <= 1e-3 + 1e-3 * ref.abs()) | (got == ref)
    assert bool(close.all()), f"{what}: {(~close).sum().item()} values differ, e.g. {got[~close][:4]} vs {ref[~close][:4]}"


def _run(torch, b, sq, sk, h, hk, d, dtype, causal, scale=None, seed=0, **kw):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, sq, h, d, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(b, sk, hk, d, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(b, sk, hk, d, device="cuda", dtype=dtype, generator=g)
    return _run_on(torch, q, k, v, causal, scale, **kw)


def _run_on(torch, q, k, v, causal, scale=None, **kw):
    """``attention`` of ``q, k, v`` into poisoned buffers, checked against torch in fp32 sequence by sequence:
    ``(q, k, v, out, lse)``."""
    b, sq, h, d = q.shape
    dtype = q.dtype
    obuf, out = _poisoned(torch, (b, sq, h, d), dtype, PAD)
    lbuf, lse = _poisoned(torch, (b, h, sq), torch.float32, PAD)
    attention(q, k, v, out, lse, causal=causal, softmax_scale=scale, **kw)
    torch.cuda.synchronize()
    _check_outside(torch, obuf, out)
    _check_outside(torch, lbuf, lse)
    sc = 1 / math.sqrt(d) if scale is None else scale
    for i in range(b):
        o32, l32 = reference(torch, q[i], k[i], v[i], causal, sc, torch.float32)
        olow, _ = reference(torch, q[i], k[i], v[i], causal, sc, dtype)
        _check_close(torch, out[i], o32, olow, f"out of sequence {i}")
        _check_lse(lse[i], l32, f"lse of sequence {i}")
    return q, k, v, out, lse


CASES = [  # (batch, seqlen_q, seqlen_k, heads, kv_heads, head_dim, dtype, causal)
    (2, 256, 256, 2, 2, 128, "bfloat16", False),
    (2, 256, 256, 2, 2, 128, "bfloat16", True),
    (1, 300, 517, 4, 1, 128, "float16", True),       # edge blocks, MQA, seqlen_k > seqlen_q
    (1, 517, 300, 4, 2, 128, "bfloat16", True),      # seqlen_q > seqlen_k: the top rows see no key
    (2, 200, 333, 2, 2, 64, "bfloat16", False),
    (1, 1000, 1000, 3, 1, 64, "float16", True),
    (1, 190, 260, 2, 1, 256, "bfloat16", False),
    (2, 190, 512, 2, 1, 256, "float16", False),      # 512 keys: 64 a block (SHORT_TILES)
    (2, 257, 257, 2, 2, 256, "float16", True),
    (1, 1, 1, 1, 1, 128, "bfloat16", False),
    (1, 7, 3000, 2, 2, 128, "bfloat16", True),
    (2, 64, 200, 2, 1, 128, "float16", False),       # the second warpgroup's rows all past the sequence's end
    (3, 30, 100, 2, 2, 64, "bfloat16", True),
]


@pytest.mark.parametrize("b, sq, sk, h, hk, d, dt, causal", CASES)
def test_attention_matches_torch(b, sq, sk, h, hk, d, dt, causal):
    torch = hopper_torch()
    _run(torch, b, sq, sk, h, hk, d, getattr(torch, dt), causal)


def test_softmax_scale_and_bit_identical_reruns():
    torch = hopper_torch()
    q, k, v, out, lse = _run(torch, 2, 384, 640, 4, 2, 128, torch.bfloat16, True, scale=0.3)
    out2, lse2 = torch.empty_like(out), torch.empty_like(lse)
    attention(q, k, v, out2, lse2, causal=True, softmax_scale=0.3)
    torch.cuda.synchronize()
    assert torch.equal(out, out2) and torch.equal(lse.nan_to_num(), lse2.nan_to_num())


@pytest.mark.parametrize("d, dt, causal", [(128, "float16", False), (128, "bfloat16", True), (64, "float16", True),
                                         (64, "bfloat16", False), (256, "float16", False)])
def test_maxima_that_grow_from_block_to_block_match_torch(d, dt, causal):
    """Scores that grow from key block to key block in the order the kernel visits them (last to first): the first
    keys are 41x the last. Sequence 0's rows are scaled by 0.005-0.04, so that a row's maximum grows by less than
    ``2**RESCALE_LOG2`` after the scale and stays where the first block put it (probabilities above 1, up to 256,
    which fp16 holds); sequence 1's by 0.2-1.5, so that it grows past it by up to about 2**250 and must move (a
    kept maximum would give inf probabilities even in Float32). Against torch in fp32, into poisoned buffers."""
    torch = hopper_torch()
    g = torch.Generator(device="cuda").manual_seed(11)
    sq, sk, h, hk, dtype = 700, 1500, 4, 2, getattr(torch, dt)
    lo = torch.tensor([0.005, 0.2], device="cuda")[:, None, None, None]
    hi = torch.tensor([0.04, 1.5], device="cuda")[:, None, None, None]
    rows = lo + (hi - lo) * torch.rand(2, sq, h, 1, device="cuda", generator=g)
    q = (torch.randn(2, sq, h, d, device="cuda", generator=g) * rows).to(dtype)
    ramp = 1 + 40 * (1 - torch.arange(sk, device="cuda") / sk)
    k = (torch.randn(2, sk, hk, d, device="cuda", generator=g) * ramp[None, :, None, None]).to(dtype)
    v = torch.randn(2, sk, hk, d, device="cuda", generator=g).to(dtype)
    _run_on(torch, q, k, v, causal)


@pytest.mark.parametrize("d, causal, block_n, stages", [(128, False, 176, 2), (64, True, 16, 1), (256, False, 48, 3),
                                                        (128, True, 96, 4)])
def test_a_tile_of_the_callers_choice_matches_torch(d, causal, block_n, stages):
    """Tiles other than the table's, on lengths that leave partial key blocks, into poisoned buffers."""
    torch = hopper_torch()
    g = torch.Generator(device="cuda").manual_seed(5)
    b, sq, sk, h, hk, dtype = 2, 333, 517, 4, 2, torch.bfloat16
    q = torch.randn(b, sq, h, d, device="cuda", dtype=dtype, generator=g)
    k, v = (torch.randn(b, sk, hk, d, device="cuda", dtype=dtype, generator=g) for _ in range(2))
    obuf, out = _poisoned(torch, (b, sq, h, d), dtype, PAD)
    lbuf, lse = _poisoned(torch, (b, h, sq), torch.float32, PAD)
    attention(q, k, v, out, lse, causal=causal, block_n=block_n, stages=stages)
    torch.cuda.synchronize()
    _check_outside(torch, obuf, out)
    _check_outside(torch, lbuf, lse)
    for i in range(b):
        o32, l32 = reference(torch, q[i], k[i], v[i], causal, 1 / math.sqrt(d), torch.float32)
        olow, _ = reference(torch, q[i], k[i], v[i], causal, 1 / math.sqrt(d), dtype)
        _check_close(torch, out[i], o32, olow, f"out of sequence {i}")
        _check_lse(lse[i], l32, f"lse of sequence {i}")


def _bits_of_orders(packed, orders, d=128, causal=True, h=4, hk=2, sk=1000):
    """The outputs of ``attention`` with each of ``orders`` (keyword arguments) on the same inputs, into poisoned
    buffers whose padding must stay: ``(out, lse)`` pairs (lse's -inf as a finite number, to compare bits)."""
    torch = hopper_torch()
    g = torch.Generator(device="cuda").manual_seed(3)
    dtype = torch.bfloat16
    if packed:
        lens = [300, 0, 1, 700, 129]
        cu = torch.tensor([0] + lens, device="cuda").cumsum(0).to(torch.int32)
        shape_q, shape_k, lse_shape = (int(cu[-1]), h, d), (int(cu[-1]), hk, d), (h, int(cu[-1]))
        kw = dict(cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max(lens))
    else:
        shape_q, shape_k, lse_shape = (2, 1000, h, d), (2, sk, hk, d), (2, h, 1000)
        kw = {}
    q = torch.randn(shape_q, device="cuda", dtype=dtype, generator=g)
    k, v = (torch.randn(shape_k, device="cuda", dtype=dtype, generator=g) for _ in range(2))
    results = []
    for order in orders:
        obuf, out = _poisoned(torch, shape_q, dtype, PAD)
        lbuf, lse = _poisoned(torch, lse_shape, torch.float32, PAD)
        attention(q, k, v, out, lse, causal=causal, **order, **kw)
        torch.cuda.synchronize()
        _check_outside(torch, obuf, out)
        _check_outside(torch, lbuf, lse)
        results.append((out.clone(), lse.nan_to_num().clone()))
    return torch, results


@pytest.mark.parametrize("b, sq, sk, h, hk, dt, causal, kw", [
    (2, 333, 517, 4, 2, "bfloat16", False, dict(persistent=False)),
    (1, 1000, 1000, 3, 1, "float16", True, dict(persistent=False)),
    (1, 517, 300, 4, 2, "bfloat16", True, {}),                     # the top rows see no key; the default grid
    (2, 64, 200, 2, 1, "bfloat16", False, dict(persistent=False)),  # the second and third warpgroups' rows past the end
    (3, 30, 100, 2, 2, "bfloat16", True, dict(pingpong=False)),
    (2, 700, 900, 4, 4, "bfloat16", True, dict(persistent=3, block_n=64, stages=3))])
def test_three_consumer_warpgroups_match_torch(b, sq, sk, h, hk, dt, causal, kw):
    """``block_m=192`` at d=64 (three consumer warpgroups taking turns in a ring), against torch in fp32 into
    poisoned buffers: edge blocks, rows that see no key, tiles whose later warpgroups lie past the sequence, without
    turns, and a persistent grid of other tiles."""
    torch = hopper_torch()
    _run(torch, b, sq, sk, h, hk, 64, getattr(torch, dt), causal, block_m=192, **kw)


@pytest.mark.parametrize("causal, packed", [(True, False), (False, False), (True, True), (False, True)])
def test_three_consumer_warpgroups_give_the_bits_of_two(causal, packed):
    """A row's products and online softmax do not depend on which tile or warpgroup computes it: ``block_m=192``
    on a CTA per tile and on persistent grids gives the bits of ``block_m=128`` at the same keys per block (a
    causal tile of 192 rows sees a few key blocks more for its first rows; they are masked whole), packed batches
    with empty and length-1 sequences included."""
    orders = [dict(block_m=128, block_n=128, persistent=False), dict(block_m=192, persistent=False),
              dict(block_m=192, persistent=True), dict(block_m=192, persistent=2)]
    torch, results = _bits_of_orders(packed, orders, d=64, causal=causal, hk=1)
    for (out, lse), order in zip(results[1:], orders[1:]):
        assert torch.equal(results[0][0], out), f"out differs with {order}"
        assert torch.equal(results[0][1], lse), f"lse differs with {order}"


@pytest.mark.parametrize("packed", [False, True])
def test_heavy_first_gives_the_bits_of_the_default_order(packed):
    """The grid ordered by query block, last first, computes every tile as the default order does: the same bits,
    into poisoned buffers whose padding stays, unpacked and packed."""
    torch, (plain, heavy) = _bits_of_orders(packed, [dict(persistent=False), dict(heavy_first=True)])
    assert torch.equal(plain[0], heavy[0]) and torch.equal(plain[1], heavy[1])


@pytest.mark.parametrize("d, causal, packed, sk, hk", [
    (128, True, False, 1000, 2), (128, False, False, 700, 4), (128, True, True, None, 2), (64, True, False, 1300, 1),
    (64, False, True, None, 4), (256, True, False, 1000, 2), (256, False, True, None, 1), (128, True, False, 873, 2),
    (128, True, False, 872, 1)])
def test_a_persistent_grid_gives_the_bits_of_a_cta_per_tile(d, causal, packed, sk, hk):
    """A CTA per SM, and a few CTAs each walking many tiles (the Q buffer handed from tile to tile, the rings'
    phases carried on, tiles of a packed batch past their sequence skipped), compute every tile as a CTA per tile
    does: the same bits, the padding of the poisoned outputs kept; other lengths of keys than of queries, grouped
    and plain heads, and the head dimensions whose output has a buffer of its own (64, 128) and that sharing
    Q's (256); with the warpgroups taking turns (the turns carried from tile to tile) and without; with Q in two
    buffers and each tile's last turn issuing the next tile's first product (``overlap``, where the rule allows
    it: at 873 keys for 1000 causal queries the first block's row 127 alone sees one) and without (at 872 the
    first block sees no key: one Q buffer)."""
    orders = [dict(persistent=False), dict(persistent=True), dict(persistent=3), dict(persistent=1), {},
              dict(persistent=3, pingpong=False), dict(persistent=3, overlap=False)]
    torch, results = _bits_of_orders(packed, orders, d=d, causal=causal, hk=hk, sk=sk)
    for (out, lse), order in zip(results[1:], orders[1:]):
        assert torch.equal(results[0][0], out), f"out differs with {order}"
        assert torch.equal(results[0][1], lse), f"lse differs with {order}"


@pytest.mark.parametrize("d, causal", [(128, True), (64, False), (256, True), (256, False)])
def test_packed_batches_with_empty_and_short_sequences(d, causal):
    torch = hopper_torch()
    lens_q = [0, 1, 130, 7, 300, 1, 0, 64]
    lens_k = [5, 1, 200, 0, 300, 129, 0, 1]
    h, hk, dtype = 4, 2, torch.bfloat16
    cq = torch.tensor([0] + lens_q, device="cuda").cumsum(0).to(torch.int32)
    ck = torch.tensor([0] + lens_k, device="cuda").cumsum(0).to(torch.int32)
    tq, tk = int(cq[-1]), int(ck[-1])
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(tq, h, d, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(tk, hk, d, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(tk, hk, d, device="cuda", dtype=dtype, generator=g)
    obuf, out = _poisoned(torch, (tq, h, d), dtype, PAD)
    lbuf, lse = _poisoned(torch, (h, tq), torch.float32, PAD)
    attention(q, k, v, out, lse, causal=causal, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=max(lens_q))
    torch.cuda.synchronize()
    _check_outside(torch, obuf, out)
    _check_outside(torch, lbuf, lse)
    sc = 1 / math.sqrt(d)
    for i in range(len(lens_q)):
        a, e = int(cq[i]), int(cq[i + 1])
        ka, ke = int(ck[i]), int(ck[i + 1])
        if a == e:
            continue
        o32, l32 = reference(torch, q[a:e], k[ka:ke], v[ka:ke], causal, sc, torch.float32)
        olow, _ = reference(torch, q[a:e], k[ka:ke], v[ka:ke], causal, sc, dtype)
        _check_close(torch, out[a:e], o32, olow, f"out of sequence {i}")
        _check_lse(lse[:, a:e], l32, f"lse of sequence {i}")


@pytest.mark.parametrize("d, causal", [(128, True), (64, False)])
def test_a_packed_batch_compiled_once_runs_every_total(d, causal):
    """Compiled once for symbolic totals (``cute.sym_int()`` token extents, lse's row stride another), then run on
    batches of other totals and lengths (empty and length-1 sequences among them) into poisoned buffers: each
    against torch, and no recompile."""
    import cute_py as cute
    from cute_py.compiler.cache import store

    torch = hopper_torch()
    h, hk, dtype, max_q = 4, 2, torch.bfloat16, 700
    bf = cute.BFloat16
    t, tk, lrow = cute.sym_int(), cute.sym_int(), cute.sym_int()
    q_spec = cute.compiler.DeviceArraySpec(bf, (t, h, d), (h * d, d, 1))
    o_spec = cute.compiler.DeviceArraySpec(bf, (t, h, d), (h * (d + PAD), d + PAD, 1))
    k_spec = cute.compiler.DeviceArraySpec(bf, (tk, hk, d), (hk * d, d, 1))
    cu = cute.compiler.DeviceArraySpec(cute.Int32, (4,))
    compiled = cute.compile(attention, q_spec, k_spec, k_spec, o_spec,
                            cute.compiler.DeviceArraySpec(cute.Float32, (h, t), (lrow, 1)), causal, None, cu, cu, max_q)
    compiles = store.stats["compiles"]
    for seed, lens_q, lens_k in ((1, [300, 0, 1], [200, 5, 1]), (2, [700, 129, 64], [1, 640, 0]),
                                 (3, [1, 1, 1], [700, 700, 700])):
        g = torch.Generator(device="cuda").manual_seed(seed)
        cq = torch.tensor([0] + lens_q, device="cuda").cumsum(0).to(torch.int32)
        ck = torch.tensor([0] + lens_k, device="cuda").cumsum(0).to(torch.int32)
        tq, tkv = int(cq[-1]), max(int(ck[-1]), 1)
        q = torch.randn(tq, h, d, device="cuda", dtype=dtype, generator=g)
        k, v = (torch.randn(tkv, hk, d, device="cuda", dtype=dtype, generator=g) for _ in range(2))
        obuf, out = _poisoned(torch, (tq, h, d), dtype, PAD)
        lbuf, lse = _poisoned(torch, (h, tq), torch.float32, PAD)
        compiled(q, k, v, out, lse, causal, None, cq, ck, max_q)
        torch.cuda.synchronize()
        _check_outside(torch, obuf, out)
        _check_outside(torch, lbuf, lse)
        for i in range(len(lens_q)):
            a, e, ka, ke = int(cq[i]), int(cq[i + 1]), int(ck[i]), int(ck[i + 1])
            if a == e:
                continue
            o32, l32 = reference(torch, q[a:e], k[ka:ke], v[ka:ke], causal, 1 / math.sqrt(d), torch.float32)
            olow, _ = reference(torch, q[a:e], k[ka:ke], v[ka:ke], causal, 1 / math.sqrt(d), dtype)
            _check_close(torch, out[a:e], o32, olow, f"out of sequence {i} (seed {seed})")
            _check_lse(lse[:, a:e], l32, f"lse of sequence {i} (seed {seed})")
    assert store.stats["compiles"] == compiles


_BAD_PACKED = """
import sys, torch
sys.path.insert(0, {root!r})
from examples import attention
lens_q, lens_k, max_q = {lens_q}, {lens_k}, {max_q}
cq = torch.tensor([0] + lens_q, device="cuda").cumsum(0).to(torch.int32)
ck = torch.tensor([0] + lens_k, device="cuda").cumsum(0).to(torch.int32)
tq, tk = max(int(cq.max()), 1) + {short_q}, max(int(ck.max()), 1)
q = torch.randn(tq, 2, 64, device="cuda", dtype=torch.bfloat16)
k = torch.randn(tk, 2, 64, device="cuda", dtype=torch.bfloat16)
out, lse = torch.empty_like(q), torch.empty(2, tq, device="cuda")
attention(q, k, k, out, lse, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=max_q)
torch.cuda.synchronize()
print("no error")
"""


@pytest.mark.parametrize("lens_q, lens_k, max_q, short_q, rule", [
    ([100, 300, 5], [50, 50, 50], 128, 0, "query rows 100..400 of 405"),          # 300 rows, the grid covers 128
    ([100, -40, 5], [50, 50, 50], 128, 0, "query rows 100..60"),                  # cu_seqlens_q decreases
    ([10, 20], [50, -60], 32, 0, "keys 50..-10"),                                  # cu_seqlens_k decreases
    ([0, 20], [50, 50], 32, -15, "query rows 0..20 of 5"),                         # past the end of q
])
def test_packed_offsets_that_break_a_rule_fail_the_launch(lens_q, lens_k, max_q, short_q, rule, tmp_path):
    """Offsets the kernel reads on the device and that would leave rows unwritten or write outside ``out``: the
    device prints the rule with the values and traps, so the launch fails (in a child process: a trap loses the
    CUDA context)."""
    import os
    import subprocess
    import sys

    hopper_torch()          # (skips without a Hopper GPU and torch)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "bad.py"
    script.write_text(_BAD_PACKED.format(root=root, lens_q=lens_q, lens_k=lens_k, max_q=max_q, short_q=short_q))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "no error" not in r.stdout, r.stdout + r.stderr
    assert rule in r.stdout and "cu_seqlens_q and cu_seqlens_k must increase" in r.stdout, r.stdout + r.stderr


def _grads(torch, q, k, v, do, causal, scale, dtype):
    """torch's gradients of ``reference`` (one sequence) with respect to q, k, v, computed in ``dtype``."""
    leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    o, _ = reference(torch, *leaves, causal, scale, dtype)
    o.backward(do.to(o.dtype))
    return [t.grad.float() for t in leaves]


BWD_CASES = [  # (batch, seqlen_q, seqlen_k, heads, kv_heads, head_dim, dtype, causal)
    (2, 256, 256, 2, 2, 128, "bfloat16", False),
    (1, 300, 517, 4, 1, 128, "float16", True),       # grouped heads: dK, dV sum over 4 query heads
    (1, 517, 300, 2, 2, 64, "bfloat16", True),       # the top rows see no key
    (2, 200, 333, 2, 1, 64, "bfloat16", False),
    (1, 700, 650, 4, 2, 128, "bfloat16", True),      # per head: masked blocks, then unmasked; a partial key block
    (2, 384, 512, 2, 2, 128, "float16", False),      # whole blocks only: no step is masked
]


@pytest.mark.parametrize("b, sq, sk, h, hk, d, dt, causal", BWD_CASES)
def test_attention_backward_matches_torch(b, sq, sk, h, hk, d, dt, causal):
    """dq, dk, dv against torch's autograd in fp32, within twice the error of torch's in the input type, into
    NaN-poisoned padded outputs; dk and dv repeat bit for bit."""
    torch = hopper_torch()
    from examples import attention_backward

    dtype = getattr(torch, dt)
    q, k, v, out, lse = _run(torch, b, sq, sk, h, hk, d, dtype, causal, seed=3)
    g = torch.Generator(device="cuda").manual_seed(4)
    do = torch.randn(b, sq, h, d, device="cuda", dtype=dtype, generator=g)
    bufs = {}
    for name, like in (("dq", q), ("dk", k), ("dv", v)):
        bufs[name] = _poisoned(torch, tuple(like.shape), dtype, PAD)
    attention_backward(q, k, v, out, lse, do, bufs["dq"][1], bufs["dk"][1], bufs["dv"][1], causal=causal)
    torch.cuda.synchronize()
    for name in bufs:
        _check_outside(torch, *bufs[name])
    sc = 1 / math.sqrt(d)
    for i in range(b):
        ref = _grads(torch, q[i], k[i], v[i], do[i], causal, sc, torch.float32)
        low = _grads(torch, q[i], k[i], v[i], do[i], causal, sc, dtype)
        for name, r32, rlow in zip(("dq", "dk", "dv"), ref, low):
            got = bufs[name][1][i]
            err = (got.float() - r32).abs().max().item()
            base = (rlow - r32).abs().max().item()
            assert err <= 2 * base + 1e-4, f"{name} of sequence {i}: max error {err}, torch in the input type {base}"
    dk2, dv2 = torch.empty_like(k), torch.empty_like(v)
    attention_backward(q, k, v, out, lse, do, torch.empty_like(q), dk2, dv2, causal=causal)
    torch.cuda.synchronize()
    assert torch.equal(dk2, bufs["dk"][1]) and torch.equal(dv2, bufs["dv"][1])
