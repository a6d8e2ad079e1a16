"""Shifted rows (examples/row_chunks.py ``ShiftedRow``, row_reduce.py ``shifted_vector`` and ``RowPlan.shifted``):
rows whose stride is not a whole number of 16-byte chunks count their chunks from the boundary at or before their
start, so that softmax and cross-entropy move them in 128-bit accesses. The laws of the plans over every start a row
may have, the rule that chooses them, and the PTX of the four kernels that take them."""

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py.runtime import make_fake_tensor
import examples as ex
from _ptxas_report import ptxas_registers, ptxas_report
from examples.row_chunks import _positions
from examples.row_reduce import chunk_index, plan_rows, row_vector
from examples.row_shift import over_cluster, plan_for, shift_chunks, shifted_ctas_per_sm, shifted_vector

F = cute.compiler.DeviceArraySpec
ALIGNED = 1 << 24


def _rows(dtype, m, n, stride, address=ALIGNED):
    return F(dtype, (m, n), (stride, 1), address=address)


def _threads(p):
    return [(k, t, rank) for k in range(p.chunks) for t in range(p.group) for rank in range(p.cluster)]


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 40000), vec=st.sampled_from([2, 4, 8]), values=st.sampled_from([32, 64]),
       shift=st.sampled_from([1, 2, 4, 8]), slabs=st.booleans(), data=st.data())
def test_a_shifted_plan_takes_every_element_of_the_row_once_whatever_its_start(n, vec, values, shift, slabs, data):
    """For every start ``lo`` in ``[0, window)`` (windows of 1-8 chunks): the chunks of all threads hold each element
    of ``[lo, lo + n)`` exactly once; a chunk the plan calls ``full`` lies inside the row whatever ``lo`` is; every
    chunk index lies inside the window (``_positions``)."""
    p = plan_rows("t", n, vec, values, shifted=shift)
    assert p.window == shift * vec
    if slabs and p.cluster > 1:
        p = replace(p, slabs=True)
    assert p.span == n + p.window - 1 and p.chunks * p.cluster * p.group * vec >= p.span
    lo = data.draw(st.integers(0, p.window - 1))
    seen = {}
    for k, t, rank in _threads(p):
        c = chunk_index(p, k, t, rank)
        assert 0 <= c < _positions(p)
        for i in range(c * vec, c * vec + vec):
            if lo <= i < lo + n:
                seen[i] = seen.get(i, 0) + 1
        if p.full(k):
            assert lo <= c * vec and c * vec + vec <= lo + n, (k, t, rank, lo, p)
    assert sorted(seen) == list(range(lo, lo + n)) and set(seen.values()) == {1}


def test_full_is_false_for_the_first_chunk_of_a_shifted_plan_and_honest_beyond():
    p = plan_rows("t", 50257, 8, 64, shifted=True)
    assert not p.full(0) and plan_rows("t", 50257, 8, 64).full(0)
    # the whole rounds after the first: inside the row for any start
    assert all(p.full(k) == ((k + 1) * p.cluster * p.group * 8 <= 50257) for k in range(1, p.chunks))


@pytest.mark.parametrize("dtypes, strides, aligns, expect, shift", [
    (("BFloat16", "BFloat16"), (50257, 50257), (16, 256), 8, 8),     # odd strides: shifted 16-byte chunks, 128-byte
    (("BFloat16", "Float32"), (50257, 50265), (16, 16), 8, 1),       # congruent modulo 8 only: 16-byte windows
    (("BFloat16", "BFloat16"), (50257, 50289), (16, 16), 8, 4),      # modulo 32: 64-byte windows
    (("Float32", "Float32"), (4097, 4097), (16, 16), 4, 8),
    (("BFloat16", "BFloat16"), (50258, 50258), (16, 16), 8, 8),      # 4-byte rows: shifted too
    (("BFloat16", "BFloat16"), (4096, 4096), (16, 16), None, 0),     # aligned rows: chunks of 8 already
    (("BFloat16", "BFloat16"), (50257, 50263), (16, 16), None, 0),   # rows start at different offsets
    (("BFloat16", "BFloat16"), (50257, 50257), (16, 2), None, 0),    # a base off the 16-byte boundary
])
def test_rows_are_shifted_where_only_their_strides_keep_the_chunks_narrow(dtypes, strides, aligns, expect, shift):
    ts = [make_fake_tensor(d, (4, 50000), (s, 1), assumed_align=a) for d, s, a in zip(dtypes, strides, aligns)]
    assert expect is None or row_vector(ts) < expect
    assert shifted_vector(ts) == expect
    assert expect is None or shift_chunks(ts, expect) == shift
    got = plan_for(ts, lambda vec, shifted: plan_rows("t", 50000, vec, 64, shifted=shifted))
    assert got.shifted == shift and got.vec == (expect or row_vector(ts))
    assert shifted_vector(ts[:1] + [make_fake_tensor(dtypes[0], (50000,), assumed_align=16)]) is None  # 1-D


def test_a_shifted_row_one_chunk_past_the_largest_cluster_takes_one_chunk_a_thread_more():
    """262143 bf16 elements shifted span up to 262206: more than 16 CTAs hold at the plan's chunks a thread. Since
    the largest cluster holds the unshifted row, the shifted plan takes one chunk a thread more (``extra``) instead
    of the plan of single elements; a row too long for the unshifted plan is refused with its error."""
    x = [make_fake_tensor("BFloat16", (4, 262143), (262143, 1), assumed_align=16)]
    p = plan_for(x, lambda vec, shifted: plan_rows("t", 262143, vec, 64, wide=128, shifted=shifted))
    assert p.shifted and p.extra and p.vec == 8 and (p.group, p.cluster, p.chunks) == (256, 15, 9)
    assert shifted_ctas_per_sm(p) is None          # registers left free: measured to spill at 3 CTAs of 512
    q = plan_for(x[:1], lambda vec, shifted: plan_rows("t", 200003, vec, 64, wide=128, shifted=shifted))
    assert q.shifted and not q.extra and q.vec == 8
    with pytest.raises(cute.CuteValueError, match="at most 16 CTAs"):
        plan_for(x, lambda vec, shifted: plan_rows("t", 300000, vec, 64, shifted=shifted))


@pytest.mark.parametrize("n, vec, values", [(262082, 8, 64), (262143, 8, 64), (262143, 8, 32), (262143, 4, 64),
                                            (262144, 8, 64), (262081, 8, 64), (262000, 2, 64), (131071, 8, 64)])
def test_a_plan_of_one_chunk_more_takes_every_element_once_and_only_past_the_largest_cluster(n, vec, values):
    """The laws of :func:`test_a_shifted_plan_takes_every_element_of_the_row_once_whatever_its_start` for rows at
    the largest cluster's edge, at the first, second and last start in a window of 8 chunks: ``extra`` (one chunk a
    thread more than ``values``) exactly where the shifted span passes what 16 CTAs hold at ``values`` and ``n``
    does not; the unshifted plan never takes it."""
    p = plan_rows("t", n, vec, values, shifted=8)
    kmax = max(1, values // vec)
    most = max(256, min(1024, 16384 // values))
    held = most * kmax * 16
    assert p.extra == (-(-p.span // vec) > held >= -(-n // vec))
    assert p.chunks <= kmax + p.extra and p.chunks * p.cluster * p.group * vec >= p.span
    assert not plan_rows("t", n, vec, values).extra
    for lo in (0, 1, p.window - 1):
        seen = [0] * (lo + n)
        for k, t, rank in _threads(p):
            c = chunk_index(p, k, t, rank)
            assert 0 <= c < _positions(p)
            for i in range(max(c * vec, lo), min(c * vec + vec, lo + n)):
                seen[i] += 1
            if p.full(k):
                assert lo <= c * vec and c * vec + vec <= lo + n
        assert seen[lo:] == [1] * n


def _count(ptx, pattern):
    return len(re.findall(pattern, ptx))


CP_ASYNC_16 = r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16;"


def _build(kernel, x, m):
    s, target = F("Float32", (m,)), F("Int64", (m,))
    args = {"softmax_forward": (x, x), "softmax_backward": (x, x, x), "cross_entropy_forward": (x, target, s, s),
            "cross_entropy_backward": (x, target, s, s, x)}[kernel]
    return cute.compile(getattr(ex, kernel), *args)


@pytest.mark.parametrize("kernel", ["softmax_forward", "softmax_backward", "cross_entropy_forward",
                                    "cross_entropy_backward"])
@pytest.mark.parametrize("dtype, n", [("BFloat16", 50257), ("Float16", 32001), ("Float32", 4097),
                                      ("BFloat16", 1031)])
def test_rows_of_odd_stride_move_in_16_byte_accesses(kernel, dtype, n, assemble):
    """Contiguous rows of an odd length: every chunk but a row's first and last moves in 16 bytes (vector loads and
    stores, or 16-byte ``cp.async`` where the row is staged); the first and last go element by element under their
    predicates. The backward kernels keep single elements for rows one CTA holds (4097 Float32, 1031 bf16: measured
    slower shifted) but the cross-entropy backward's 16-bit rows, so does the cross-entropy forward for Float32
    logits, and every kernel does with its base off the 16-byte boundary."""
    m = 19
    c = _build(kernel, _rows(dtype, m, n, n), m)
    ptx = c.ptx
    wide = _count(ptx, r"ld\.global(\.nc)?\.v4") + _count(ptx, CP_ASYNC_16) + _count(ptx, r"st\.global\.v4")
    assert ".local" not in ptx
    ce16 = kernel == "cross_entropy_backward" and dtype != "Float32"
    if ("backward" in kernel and n < 20000 and not ce16) or (kernel == "cross_entropy_forward" and dtype == "Float32"):
        assert wide == 0
        return
    assert _count(ptx, r"ld\.global(\.nc)?\.v4") + _count(ptx, CP_ASYNC_16) >= 1
    if kernel != "cross_entropy_forward":
        assert _count(ptx, r"st\.global\.v4") >= 1
    width = {"BFloat16": "b16", "Float16": "b16", "Float32": "b32"}[dtype]
    assert _count(ptx, rf"ld\.global(\.nc)?\.{width}") >= 2  # the partial chunks, element by element
    # as many CTAs an SM as the unshifted kernels get (``shifted_ctas_per_sm``)
    assert c.launches[0].block[0] not in (128, 512) or ".minnctapersm" in ptx
    assemble(ptx)
    narrow = _build(kernel, _rows(dtype, m, n, n, ALIGNED + {"Float32": 4}.get(dtype, 2)), m).ptx
    assert _count(narrow, r"ld\.global(\.nc)?\.v4") + _count(narrow, r"st\.global\.v4") == 0
    assert _count(narrow, CP_ASYNC_16) == 0


def test_the_row_offset_of_a_shifted_row_is_taken_in_64_bits():
    """43000 rows of 50257: the last rows start past 2**31 elements; the window's start is a 64-bit product."""
    ptx = _build("cross_entropy_forward", _rows("BFloat16", 43000, 50257, 50257), 43000).ptx
    assert re.search(r"mul\.(lo|wide)\.[su]64", ptx) or re.search(r"mul\.wide\.[su]32", ptx)


def test_rows_of_one_cta_may_keep_the_narrow_chunks_and_shifted_kernels_ask_for_the_unshifted_occupancy():
    x = [make_fake_tensor("BFloat16", (4, 4097), (4097, 1), assumed_align=16)]

    def make(vec, shifted):
        return plan_rows("t", 4097, vec, 32, shifted=shifted)
    assert plan_for(x, make).shifted and plan_for(x, make).cluster == 1
    assert not plan_for(x, make, over_cluster).shifted and plan_for(x, make, over_cluster).vec == 1
    assert not plan_for(x, make, lambda p: False).shifted and plan_for(x, make, lambda p: True).shifted
    long = [make_fake_tensor("BFloat16", (4, 50257), (50257, 1), assumed_align=16)]
    assert plan_for(long, lambda vec, shifted: plan_rows("t", 50257, vec, 32, shifted=shifted), over_cluster).shifted
    small = plan_rows("t", 50257, 8, 64, shifted=True)
    assert small.threads == 128 and shifted_ctas_per_sm(small) == 5
    big = plan_rows("t", 50257, 8, 32, shifted=True)
    assert big.threads == 512 and shifted_ctas_per_sm(big) == 3
    assert shifted_ctas_per_sm(plan_rows("t", 50257, 8, 64)) is None


def _norm(kernel, dtype, x, m, n):
    w, s = F(dtype, (n,)), F("Float32", (m,))
    args = {"rmsnorm_forward": (x, w, x, s), "layernorm_forward": (x, w, w, x, s, s)}[kernel]
    return cute.compile(getattr(ex, kernel), *args)


@pytest.mark.parametrize("kernel, dtype, n, shifted", [
    ("rmsnorm_forward", "BFloat16", 50257, True), ("rmsnorm_forward", "Float16", 151937, True),
    ("rmsnorm_forward", "Float32", 32001, True),
    ("rmsnorm_forward", "Float32", 4097, True),          # Float32, one CTA a row: shifted too (measured faster)
    ("rmsnorm_forward", "Float32", 2049, False),         # ... but not several rows a CTA
    ("rmsnorm_forward", "BFloat16", 4097, False),        # 16-bit, one CTA a row: the narrow chunks (measured faster)
    ("layernorm_forward", "Float32", 32001, True), ("layernorm_forward", "BFloat16", 50257, True),
    ("layernorm_forward", "Float16", 100003, True),
    ("layernorm_forward", "Float32", 4097, False),       # one CTA a row: the narrow chunks (measured faster)
    ("layernorm_forward", "BFloat16", 4097, False)])
def test_norms_read_w_and_b_at_a_shifted_rows_positions(kernel, dtype, n, shifted, assemble):
    """Shifted rows where the norms take them (RMSNorm over a cluster, and Float32 RMSNorm where a CTA holds one row;
    LayerNorm over a cluster, its ``x`` staged): ``x`` and ``y`` move in 16 bytes from the boundary before each row.
    ``w`` (and ``b``), whose chunks would start anywhere past their own boundary, are read at the row's positions:
    16-bit ``w`` as the two 16-byte chunks that hold a chunk's positions, its pairs of elements then shifted in
    registers (``prmt``), in CTAs of 256 threads at 4 CTAs an SM; Float32 ``w`` and ``b`` element by element. The
    other rows keep the chunks their strides allow (single elements). (That ``w`` and ``b`` are read at the right
    positions is checked on a GPU: tests/gpu/test_shifted_rows_gpu.py, with ``w`` and ``b`` varying along the
    row.)"""
    m = 19
    c = _norm(kernel, dtype, _rows(dtype, m, n, n), m, n)
    ptx = c.ptx
    assert ".local" not in ptx
    wide = _count(ptx, r"ld\.global(\.nc)?\.v4") + _count(ptx, CP_ASYNC_16) + _count(ptx, r"st\.global\.v4")
    width = {"BFloat16": "b16", "Float16": "b16", "Float32": "b32"}[dtype]
    if not shifted:
        assert wide == 0
        return
    plan_threads, cluster = c.launches[0].block[0], c.launches[0].cluster[0]
    assert cluster > 1 or (dtype == "Float32" and kernel == "rmsnorm_forward")
    assert _count(ptx, r"ld\.global(\.nc)?\.v4") + _count(ptx, CP_ASYNC_16) >= 1 and _count(ptx, r"st\.global\.v4")
    assert _count(ptx, rf"ld\.global(\.nc)?\.{width}") >= 2   # element by element: x's partial chunks (w, b)
    if kernel == "layernorm_forward":
        assert _count(ptx, CP_ASYNC_16) >= 1 and ptxas_registers(ptx) in (None, *range(65))  # x staged
    if width == "b16":      # x staged by cp.async: the 16-byte loads are w's (and b's), two a chunk, a prmt a word
        chunks = _count(ptx, r"ld\.global(\.nc)?\.v4") // 2
        assert chunks >= 1 and _count(ptx, r"prmt\.b32") >= 4 * chunks
        assert (f".minnctapersm 4" in ptx) == (plan_threads == 256)
    assemble(ptx)


@pytest.mark.parametrize("kernel, dtype", [("softmax_forward", "BFloat16"), ("softmax_backward", "BFloat16"),
                                           ("cross_entropy_forward", "BFloat16"), ("cross_entropy_backward", "Float32"),
                                           ("rmsnorm_forward", "Float16"), ("layernorm_forward", "Float32")])
def test_rows_one_chunk_past_the_largest_cluster_move_in_16_byte_accesses(kernel, dtype, assemble):
    """Contiguous rows of 262143: shifted, on plans of one chunk a thread more (``RowPlan.extra``), every kernel
    moves them in 16-byte accesses, without spills (the element-by-element kernels these replace spilled 48-140
    bytes in cross-entropy backward and Float32 LayerNorm)."""
    m, n = 7, 262143
    x = _rows(dtype, m, n, n)
    c = _build(kernel, x, m) if "norm" not in kernel else _norm(kernel, dtype, x, m, n)
    ptx = c.ptx
    assert _count(ptx, r"ld\.global(\.nc)?\.v4") + _count(ptx, CP_ASYNC_16) >= 1 and ".local" not in ptx
    assemble(ptx)
    report = ptxas_report(ptx)
    if report is not None:
        assert all(stores == 0 for stores, _ in report[1]), report


def test_a_16_bit_w_beside_float32_rows_is_read_element_by_element():
    """Float32 rows of 32001 with a bf16 ``w`` (chunks of 4 elements, not the 128-bit 16-bit chunks the paired reads
    take): RMSNorm's shifted rows read ``w`` element by element, no ``prmt``; with bf16 rows, in pairs."""
    m, n = 19, 32001
    s = F("Float32", (m,))
    x32, x16, w = _rows("Float32", m, n, n), _rows("BFloat16", m, n, n), F("BFloat16", (n,))
    mixed = cute.compile(ex.rmsnorm_forward, x32, w, x32, s)
    same = cute.compile(ex.rmsnorm_forward, x16, w, x16, s)
    assert mixed.launches[0].cluster[0] > 1 and _count(mixed.ptx, r"prmt\.b32") == 0
    assert _count(mixed.ptx, r"ld\.global(\.nc)?\.b16") >= 4
    assert _count(same.ptx, r"prmt\.b32") >= 4
