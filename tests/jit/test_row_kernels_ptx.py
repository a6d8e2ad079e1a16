"""The row kernels (examples/softmax_rows.py, norms.py, cross_entropy.py, row_reduce.py) build PTX with the
instructions they are about — 128-bit loads and stores, warp butterflies, and for long rows the cluster barrier,
``mapa``, ``st.async`` and an mbarrier wait — without local-memory spills, and assemble; row plans cover every row;
hostile arguments are refused with errors that name the rule and the values."""

import math
import random
import re

import numpy as np

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
import examples as ex
from examples.row_chunks import whole_chunks
from examples.row_reduce import MAX_CLUSTER, RowPlan, chunk_index, chunk_inside, max_sum, plan_rows
from examples.row_stage import HALVES_WIDE, halves_plan, staged_halves, staged_rows, thread_slot
from _ptxas_report import ptxas_registers, ptxas_report
from _cubin_report import cubin_resources

F = cute.compiler.DeviceArraySpec


def _rows(dtype, m, n, pad=0):
    return F(dtype, (m, n), (n + pad, 1))


def _count(ptx, pattern):
    return len(re.findall(pattern, ptx))


CP_ASYNC_16 = r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16;"
CLUSTER_OPS = [r"barrier\.cluster\.arrive\.relaxed\.aligned", r"fence\.mbarrier_init\.release\.cluster",
               r"mapa\.shared::cluster", r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes",
               r"mbarrier\.try_wait\.parity", r"barrier\.cluster\.wait"]


def test_short_rows_move_128_bit_vectors_and_reduce_by_butterflies(assemble):
    # bf16 rows of 4096: 8-element vectors, 64 threads a row (two warps: a shared-memory step), 4 rows a CTA
    c = cute.compile(ex.softmax_forward, _rows("BFloat16", 64, 4096), _rows("BFloat16", 64, 4096))
    ptx = c.ptx
    assert _count(ptx, r"ld\.global\.v4\.b32") == 8 and _count(ptx, r"st\.global\.v4\.b32") == 8
    assert _count(ptx, r"shfl\.sync\.bfly\.b32") == 10  # 5 steps of a (max, sum) pair
    assert _count(ptx, r"bar\.sync") == 1 and ".local" not in ptx
    assert not any(re.search(p, ptx) for p in CLUSTER_OPS)
    (launch,) = c.launches
    assert launch.block == (256, 1, 1) and launch.grid == (16, 1, 1) and launch.cluster == (1, 1, 1)
    assert ".minnctapersm 2" in ptx  # one row input: two CTAs of 256 threads an SM (at most 128 registers each)
    assemble(ptx)


def test_long_rows_reduce_across_a_cluster_through_distributed_shared_memory(assemble):
    c = cute.compile(ex.softmax_forward, _rows("Float32", 4, 65536), _rows("Float32", 4, 65536))
    ptx = c.ptx
    for p in CLUSTER_OPS:
        assert _count(ptx, p) >= 1, p
    # softmax's forward keeps its row in registers (staged, it measured slower): 16 vector loads and stores
    assert _count(ptx, r"ld\.global\.v4\.b32") == 16 and _count(ptx, r"st\.global\.v4\.b32") == 16
    assert ".local" not in ptx and "cp.async" not in ptx
    (launch,) = c.launches
    # 16384 vectors a row: 8 CTAs of 128 threads, 16 vectors each
    assert launch.cluster == (8, 1, 1) and launch.grid == (32, 1, 1) and launch.block == (128, 1, 1)
    assert not launch.non_portable_cluster
    assemble(ptx)


def test_the_longest_rows_take_a_non_portable_cluster_of_16(assemble):
    y = _rows("BFloat16", 8, 262144)
    c = cute.compile(ex.softmax_backward, y, y, y)
    (launch,) = c.launches
    assert launch.cluster == (16, 1, 1) and launch.non_portable_cluster and launch.block == (512, 1, 1)
    assert ".minnctapersm" not in c.ptx
    assert _count(c.ptx, r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes\.b32") == 1
    assert ".local" not in c.ptx
    assemble(c.ptx)


def test_padded_rows_choose_the_vector_their_stride_allows():
    # a row stride of 4104 Float32 elements keeps 16-byte vectors; x and y of strides 4097 and 4098 (which differ
    # modulo a 16-byte chunk, so no window fits both) allow single elements only
    wide = cute.compile(ex.rmsnorm_forward, _rows("Float32", 33, 4097, 7), F("Float32", (4097,)),
                        _rows("Float32", 33, 4097, 7), F("Float32", (33,)), 1e-6).ptx
    narrow = cute.compile(ex.rmsnorm_forward, _rows("Float32", 33, 4097, 0), F("Float32", (4097,)),
                          _rows("Float32", 33, 4097, 1), F("Float32", (33,)), 1e-6).ptx
    assert _count(wide, r"ld\.global\.v4\.b32") > 0 and _count(wide, r"ld\.global\.b32") > 0  # and the tail
    assert _count(narrow, r"ld\.global\.v\d") == 0 and _count(narrow, r"st\.global\.v\d") == 0
    assert ".local" not in wide


def test_norms_and_cross_entropy_build_and_assemble(assemble):
    x, w, s = _rows("BFloat16", 16, 32000, 64), F("BFloat16", (32000,)), F("Float32", (16,))
    ln = cute.compile(ex.layernorm_forward, x, w, w, x, s, s, 1e-5)
    assert _count(ln.ptx, r"ld\.global\.v4\.b32") >= 4 and ".local" not in ln.ptx
    ce = cute.compile(ex.cross_entropy_forward, x, F("Int64", (16,)), s, s)
    # (a cluster of 4: the logits staged by cp.async, see the halves test below)
    assert ce.launches[0].cluster == (4, 1, 1) and _count(ce.ptx, CP_ASYNC_16) >= 4 and ".local" not in ce.ptx
    ceb = cute.compile(ex.cross_entropy_backward, x, F("Int32", (16,)), s, s, x)
    assert _count(ceb.ptx, r"st\.global\.v4\.b32") >= 4 and "shfl.sync" not in ceb.ptx  # no reduction
    for c in (ln, ce, ceb):
        assemble(c.ptx)


def test_rmsnorm_backward_loops_over_rows_and_sums_the_workspace_in_a_second_kernel(assemble):
    x, w, s = _rows("BFloat16", 64, 4096), F("BFloat16", (4096,)), F("Float32", (64,))
    c = cute.compile(ex.rmsnorm_backward, x, x, w, s, x, w, F("Float32", (5, 4096)))
    main, column = c.launches
    assert main.grid == (3, 1, 1) and column.grid == (16, 1, 1)  # 5 groups, 2 a CTA; 4096 / (32 lanes * 8)
    # w by vector loads (4 chunks); x and dy through shared memory: each group's first rows, then at every row the
    # rows after it, copied while the row is reduced (3 sites x 2 inputs x 4 chunks)
    body, column_sum = c.ptx.split(".entry column_sum_kernel")
    assert ".local" not in c.ptx and _count(body, r"ld\.global\.v4\.b32") == 4
    # the column sums read each workspace row's Float32 chunk of 8 in two 16-byte loads, no element by element
    assert _count(column_sum, r"ld\.global\.v4\.b32") == 2 and _count(column_sum, r"ld\.global\.b32") == 0
    assert _count(c.ptx, CP_ASYNC_16) == 24 and re.findall(r"cp\.async\.wait_group\s+(\d+)", c.ptx) == ["0", "0"]
    assemble(c.ptx)


def test_rmsnorm_backward_loads_float32_rows_of_512_threads_into_registers(assemble):
    # two Float32 row buffers do not fit beside w and the dw sums: no copies ahead
    x, w, s = _rows("Float32", 8, 262144), F("Float32", (262144,)), F("Float32", (8,))
    c = cute.compile(ex.rmsnorm_backward, x, x, w, s, x, w, F("Float32", (16, 262144)))
    assert c.launches[0].block == (512, 1, 1) and "cp.async" not in c.ptx and ".local" not in c.ptx
    assemble(c.ptx)


def test_rows_over_a_cluster_stage_their_inputs_through_shared_memory(assemble):
    # bf16 rows of 262144: 16 CTAs of 256 threads, 8 chunks of 8 a thread
    x, w, s = _rows("BFloat16", 8, 262144), F("BFloat16", (262144,)), F("Float32", (8,))
    rms = cute.compile(ex.rmsnorm_forward, x, w, x, s, 1e-6).ptx
    # x and w copied by cp.async (8 chunks each), x's group waited for before the reduction and w's after it
    assert _count(rms, CP_ASYNC_16) == 16 and _count(rms, r"ld\.global\.v4") == 0
    assert re.findall(r"cp\.async\.wait_group\s+(\d+)", rms) == ["1", "0"]
    ln = cute.compile(ex.layernorm_forward, x, w, w, x, s, s, 1e-5, False).ptx
    # 16-bit rows over CTAs of 256 threads: x copied (8 chunks), read back at each pass; w and b loaded chunk by chunk
    # at the store, after both exchanges
    assert _count(ln, CP_ASYNC_16) == 8 and _count(ln, r"ld\.global\.v4\.b32") == 16
    assert ln.index("ld.global.v4.b32") > ln.rindex("st.async")
    smb = cute.compile(ex.softmax_backward, x, x, x).ptx
    assert _count(smb, CP_ASYNC_16) == 2 * 4 and _count(smb, r"ld\.global\.v4") == 0  # y and dy, 4 chunks each
    for ptx in (rms, ln, smb):
        assert _count(ptx, r"st\.global\.v4\.b32") == ptx.count("st.global.v4") > 0 and ".local" not in ptx
        assemble(ptx)


def test_layernorm_stages_x_where_registers_would_hold_two_ctas_an_sm(assemble):
    """16-bit rows over a cluster of CTAs of 256 threads (262144) stage ``x`` and leave few registers a thread (three
    or more CTAs an SM); over CTAs of 128 threads (32768) and for Float32 rows ``w`` and ``b`` are staged or loaded
    and ``x`` is held in registers."""
    from examples.norms import layernorm_stages_x
    from examples.row_reduce import ONE_INPUT, plan_rows

    for dtype, n, staged in (("BFloat16", 262144, True), ("Float16", 262144, True), ("BFloat16", 32768, False),
                             ("Float32", 262144, False), ("BFloat16", 4096, False)):
        plan = plan_rows("t", n, 128 // (32 if dtype == "Float32" else 16), ONE_INPUT)
        assert layernorm_stages_x(plan, getattr(cute, dtype)) == staged, (dtype, n)
    x, w, s = _rows("BFloat16", 8, 262144), F("BFloat16", (262144,)), F("Float32", (8,))
    ptx = cute.compile(ex.layernorm_forward, x, w, w, x, s, s, 1e-5, False).ptx
    regs = ptxas_registers(ptx)
    if regs is not None:
        assert regs <= 80, f"{regs} registers a thread leave two CTAs of 256 threads an SM"
    x, w = _rows("BFloat16", 8, 32768), F("BFloat16", (32768,))
    ptx = cute.compile(ex.layernorm_forward, x, w, w, x, s, s, 1e-5, False).ptx
    assert _count(ptx, CP_ASYNC_16) == 2 * 8 and _count(ptx, r"ld\.global\.v4\.b32") == 8   # w and b; x
    assemble(ptx)


def test_float32_rmsnorm_rows_of_262144_stage_x_alone_and_load_w_while_x_is_reduced(assemble):
    # 64 KiB a CTA an input: x and w staged would leave one CTA an SM; x alone is copied, w loaded into registers
    x, w, s = _rows("Float32", 4, 262144), F("Float32", (262144,)), F("Float32", (4,))
    c = cute.compile(ex.rmsnorm_forward, x, w, x, s, 1e-6)
    ptx = c.ptx
    assert c.launches[0].cluster == (16, 1, 1) and ".local" not in ptx
    assert _count(ptx, CP_ASYNC_16) == 16 and _count(ptx, r"ld\.global\.v4\.b32") == 16
    assert re.findall(r"cp\.async\.wait_group\s+(\d+)", ptx) == ["0"]
    # w's loads are issued before the row's reduction: before the first cluster exchange
    assert ptx.index("ld.global.v4.b32") < ptx.index("st.async")
    assemble(ptx)


def test_short_rows_keep_their_inputs_in_registers():
    x, w, s = _rows("BFloat16", 64, 4096), F("BFloat16", (4096,)), F("Float32", (64,))
    for c in (cute.compile(ex.rmsnorm_forward, x, w, x, s, 1e-6), cute.compile(ex.layernorm_forward, x, w, w, x, s, s),
              cute.compile(ex.softmax_forward, x, x), cute.compile(ex.softmax_backward, x, x, x)):
        assert c.launches[0].cluster == (1, 1, 1) and "cp.async" not in c.ptx


def _row_kernels(n, m=16):
    x, w, s, t = _rows("BFloat16", m, n), F("BFloat16", (n,)), F("Float32", (m,)), F("Int64", (m,))
    return {"softmax_forward": (x, x), "softmax_backward": (x, x, x), "rmsnorm_forward": (x, w, x, s, 1e-6),
            "rmsnorm_backward": (x, x, w, s, x, w, F("Float32", (4, n))), "layernorm_forward": (x, w, w, x, s, s, 1e-5),
            "cross_entropy_forward": (x, t, s, s), "cross_entropy_backward": (x, t, s, s, x)}


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 262144), st.sampled_from([1, 2, 4, 8]), st.sampled_from([32, 64]))
def test_a_chunk_taken_as_inside_a_row_of_whole_chunks_lies_wholly_inside_it(n, vec, values):
    # RMSNorm's backward works on a chunk of the last round only where chunk_inside holds, and then, for rows of
    # whole chunks, stores it as one vector without a bound: every chunk it takes must lie wholly inside the row,
    # and every chunk holding an element must be taken
    plan = plan_rows("law", n, vec, values)
    whole = whole_chunks(n, vec)
    assert whole == (n % vec == 0) and not whole_chunks(float(n), vec) and not whole_chunks(np.int64(n), vec)
    for k in range(plan.chunks):
        for rank in range(plan.cluster):
            for t in {0, 1, plan.group // 2, plan.group - 1} & set(range(plan.group)):
                first = chunk_index(plan, k, t, rank) * vec
                assert bool(chunk_inside(plan, k, t, rank)) == (first < n), (n, vec, k, rank, t)
                if plan.full(k):
                    assert first + vec <= n, (n, vec, k, rank, t)
                elif whole and first < n:
                    assert first + vec <= n, (n, vec, k, rank, t)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30000), st.sampled_from([2, 4, 8]), st.sampled_from([32, 64, 128, 512]), st.integers(2, 16))
def test_slabs_take_every_chunk_of_the_row_once_and_split_it_evenly_over_the_cluster(n, vec, group, cluster):
    """``RowPlan.slabs``: over every CTA, thread and chunk, the indices inside the row are each chunk of the row
    exactly once; a CTA takes a contiguous run of at most ``slab`` chunks (so no CTA takes more than one chunk of
    each thread round beyond the mean); a chunk ``full`` says is inside lies wholly inside for every thread and
    CTA; ``chunk_inside`` agrees with the index."""
    nv = -(-n // vec)
    chunks = -(-nv // (group * cluster))
    plan = RowPlan(n, vec, group, 1, cluster, chunks, True)
    seen = []
    for rank in range(cluster):
        mine = []
        for k in range(chunks):
            whole = plan.full(k)
            for t in range(group):
                at = int(chunk_index(plan, k, t, rank))
                assert bool(chunk_inside(plan, k, t, rank)) == (at * vec < n), (n, vec, k, rank, t)
                if whole:
                    assert (at + 1) * vec <= n, (n, vec, k, rank, t)
                if at < nv:
                    mine.append(at)
        if mine:
            assert sorted(mine) == list(range(min(mine), min(mine) + len(mine))) and len(mine) <= plan.slab
        seen += mine
    assert sorted(seen) == list(range(nv)), (n, vec, group, cluster)


def test_rows_of_whole_chunks_with_a_partial_last_round_take_no_element_accesses():
    # bf16 rows of 50304 (6288 chunks of 8) over clusters whose last round of chunks is partly past the row's end:
    # each chunk lies inside the row or wholly past it, so no kernel reads or writes a row element by element (a
    # chunk past the end is filled, or skipped); the row kernels' main loops only (the dw column sums store dw
    # element by element; cross-entropy reads the target's logit and stores its gradient alone)
    for name, args in _row_kernels(50304).items():
        c = cute.compile(getattr(ex, name), *args)
        main = c.ptx.split(".entry column_sum_kernel")[0]
        assert c.launches[0].cluster[0] > 1 or name == "cross_entropy_backward", name  # (no reduction)
        singles = _count(main, r"(ld|st)\.global(\.nc)?\.(b|u)16")
        assert singles <= 3 if name.startswith("cross_entropy") else singles == 0, (name, singles)
        assert _count(main, r"(ld\.global(\.nc)?|st\.global)\.v4\.b32|cp\.async\.cg") > 0, name


@pytest.mark.parametrize("dtype, n, stride, y_stride, copy", [
    ("BFloat16", 262143, 262144, 262144, "cg.shared.global [%r{{.*}}], [%rd{{.*}}], 16;"),  # a partial last chunk
    # strides of 6 and 4 (mod 8): no window fits both rows (no shifted rows), chunks of 2 elements: 4 bytes
    ("BFloat16", 65534, 65534, 65540, "ca.shared.global [%r{{.*}}], [%rd{{.*}}], 4;"),
    ("Float32", 65534, 65534, 65536, "ca.shared.global [%r{{.*}}], [%rd{{.*}}], 8;"),      # 8 bytes
    # equal strides of 6 (mod 8): shifted rows, 16-byte copies from the boundary before each row; w is read at
    # the row's positions (not staged: one group of copies)
    ("BFloat16", 65534, 65534, 65534, "cg.shared.global [%r{{.*}}], [%rd{{.*}}], 16;"),
])
def test_staged_chunks_take_the_copy_their_alignment_allows_and_the_row_end_is_predicated(dtype, n, stride, y_stride,
                                                                                          copy, filecheck, assemble):
    x, w, s = F(dtype, (4, n), (stride, 1)), F(dtype, (n,)), F("Float32", (4,))
    c = cute.compile(ex.rmsnorm_forward, x, w, F(dtype, (4, n), (y_stride, 1)), s, 1e-6)
    assert c.launches[0].cluster[0] > 1 and ".local" not in c.ptx
    shifted = stride == y_stride and stride % 8
    waits = ["CHECK: cp.async.wait_group 0"] if shifted else ["CHECK: cp.async.wait_group 1",
                                                              "CHECK: cp.async.wait_group 0"]
    filecheck(c.ptx, [f"CHECK: cp.async.{copy}", "CHECK: cp.async.commit_group"] + waits)
    if n % 2:  # the chunk holding the row's end: loaded element by element under a predicate, not copied
        assert _count(c.ptx, r"ld\.global\.b16") > 0
    assemble(c.ptx)


def test_chunks_narrower_than_32_bits_are_not_copied_by_cp_async(assemble):
    # an odd row stride from a base off the 16-byte boundary (no shifted rows) allows single bf16 elements only: 2
    # bytes, below cp.async's 4
    x = F("BFloat16", (2, 262143), (262143, 1), address=(1 << 24) + 2)
    w, s = F("BFloat16", (262143,)), F("Float32", (2,))
    c = cute.compile(ex.rmsnorm_forward, x, w, x, s, 1e-6)
    assert c.launches[0].cluster == (16, 1, 1)
    assert "cp.async.ca" not in c.ptx and "cp.async.cg" not in c.ptx and ".local" not in c.ptx
    assemble(c.ptx)


@pytest.mark.parametrize("values, wide", [(32, None), (64, None), (64, 128), (32, 64)])
def test_row_plans_cover_every_row_within_the_hardware(values, wide):
    edges = sorted({(1 << e) + d for e in range(7, 19) for d in (-1, 0, 1)} - {262145})
    for vec in (1, 2, 4, 8):
        for n in list(range(1, 70)) + edges:
            p = plan_rows("t", n, vec, values, wide=wide)
            assert p.chunks * p.cluster * p.group * p.vec >= n > (p.chunks - 1) * p.cluster * p.group * p.vec
            assert p.threads <= 1024 and p.cluster <= MAX_CLUSTER and p.chunks * vec <= max(values, wide or 0, vec)
            assert p.cluster == 1 or p.rows == 1
            # more values a thread only where the row needs the widest cluster of small CTAs
            if p.chunks * vec > max(values, vec):
                held = 16 * 128 * max(1, values // vec)        # chunks 16 CTAs of 128 threads hold at ``values``
                assert (p.group, p.cluster) == (128, 16) and -(-n // vec) > held, (n, vec, p)
            if wide is None:
                assert plan_rows("t", n, vec, values) == p
            if p.cluster > 1 and p.chunks * vec <= max(values, vec):  # the smallest cluster, of any size
                assert -(-n // (vec * p.group * (p.cluster - 1))) > max(1, values // vec), (n, vec, p)


@pytest.mark.parametrize("n, vec, values", [(1, 1, 64), (7, 2, 32), (4097, 8, 64), (65534, 2, 32), (262144, 8, 64),
                                            (262143, 4, 32), (32768, 8, 64)])
def test_each_thread_stages_its_chunks_into_slots_of_its_own_that_tile_the_buffer(n, vec, values):
    """``row_stage.thread_slot``: slot ``(k, tx)`` is ``vec`` contiguous elements at ``(k * threads + tx) * vec``; the
    slots of all chunks of all threads tile the staging buffer exactly, so no two threads share an element."""
    p = plan_rows("t", n, vec, values)
    size = p.chunks * p.threads * p.vec
    buf = cute.make_tensor(np.zeros(size, dtype=np.float32), cute.Layout(size))
    seen = np.zeros(size, dtype=np.int64)
    for k in range(p.chunks):
        for tx in range(p.threads):
            slot = thread_slot(buf, p, k, tx)
            first = slot.iterator.offset
            assert cute.size(slot) == p.vec and first == (k * p.threads + tx) * p.vec
            assert [slot.layout(j) for j in range(p.vec)] == list(range(p.vec))
            seen[first:first + p.vec] += 1
    assert (seen == 1).all()
    assert staged_rows(p) == (p.cluster > 1)


def test_rows_just_past_a_power_of_two_take_the_smallest_cluster_of_any_size():
    """A row of 70000 bf16 elements: 8750 chunks of 8. At 8 chunks a thread, 9 CTAs of 128 threads hold it (a
    cluster of 16 at 5 chunks before: measured 0.68-0.75 of the copy ceiling against 0.88, benchmarks/RESULTS.md);
    with two row inputs at 4 chunks, 5 CTAs of 512."""
    assert plan_rows("t", 70000, 8, 64) == RowPlan(70000, 8, 128, 1, 9, 8)
    assert plan_rows("t", 70000, 8, 32) == RowPlan(70000, 8, 512, 1, 5, 4)
    assert plan_rows("t", 65536 + 8, 8, 64) == RowPlan(65544, 8, 128, 1, 9, 8)
    sizes = {plan_rows("t", n, 8, 64).cluster for n in range(16385, 131073, 1024)}
    assert sizes == set(range(3, 17))  # (a cluster only past one CTA of 256 threads: 2 of 128 hold no more)
    rows = _rows("BFloat16", 4, 70000)
    c = cute.compile(ex.rmsnorm_forward, rows, F("BFloat16", (70000,)), rows, F("Float32", (4,)), 1e-6)
    (launch,) = c.launches
    assert launch.cluster == (9, 1, 1) and launch.grid == (36, 1, 1) and launch.non_portable_cluster
    c = cute.compile(ex.softmax_forward, rows, rows)
    (launch,) = c.launches   # staged by halves at 10 chunks a thread: 7 CTAs
    assert launch.cluster == (7, 1, 1) and launch.grid == (28, 1, 1)


@pytest.mark.parametrize("n", [40000, 65536, 70000, 120000])
def test_layernorm_on_clusters_of_128_thread_ctas_asks_for_five_an_sm_without_spilling(n):
    """nvJitLink left free took 102-122 registers a thread for LayerNorm's 16-bit rows with a partial end (four
    CTAs an SM); bounded to five CTAs it takes at most 96 and spills nothing, and so does ptxas. Softmax stages
    these rows by halves and asks for six (see the test of its halves); Float32 rows (three CTAs an SM by their
    shared memory) are left free."""
    rows, vec = _rows("BFloat16", 4, n), F("BFloat16", (n,))
    c = cute.compile(ex.layernorm_forward, rows, vec, vec, rows, F("Float32", (4,)), F("Float32", (4,)), 1e-5, False)
    assert ".maxntid 128, 1, 1" in c.ptx and ".minnctapersm 5" in c.ptx and c.launches[0].cluster[0] > 1
    regs, report = ptxas_registers(c.ptx), ptxas_report(c.ptx)
    assert regs is None or regs <= 96
    assert report is None or all(spill == (0, 0) for spill in report[1])
    (launch,) = c.launches   # and as the compile's own assembler (nvJitLink) made it: no stack frame, no spills
    assert cubin_resources(c.cubin)[launch.name][0] <= 96 and cubin_resources(c.cubin)[launch.name][1] == 0
    soft = cute.compile(ex.softmax_forward, rows, rows)   # staged by halves: six CTAs an SM (below)
    assert ".maxntid 128, 1, 1" in soft.ptx and ".minnctapersm 6" in soft.ptx
    rows32, vec32 = _rows("Float32", 4, n), F("Float32", (n,))
    f32 = cute.compile(ex.layernorm_forward, rows32, vec32, vec32, rows32, F("Float32", (4,)), F("Float32", (4,)),
                       1e-5, False)
    assert ".maxntid 128, 1, 1" in f32.ptx and ".minnctapersm" not in f32.ptx   # (bounded, it spilled)


def test_softmax_and_cross_entropy_rows_of_262144_bf16_take_16_ctas_of_128_threads_at_128_values():
    """The plan measured fastest for the longest rows of the softmax and cross-entropy forwards
    (benchmarks/RESULTS.md), and the others unchanged."""
    assert plan_rows("t", 262144, 8, 64, wide=128) == RowPlan(262144, 8, 128, 1, 16, 16)
    assert plan_rows("t", 262144, 8, 64) == RowPlan(262144, 8, 256, 1, 16, 8)
    assert plan_rows("t", 32768, 8, 64, wide=128) == plan_rows("t", 32768, 8, 64) == RowPlan(32768, 8, 128, 1, 4, 8)
    c = cute.compile(ex.softmax_forward, _rows("BFloat16", 4, 262144), _rows("BFloat16", 4, 262144))
    assert ".maxntid 128, 1, 1" in c.ptx and ".local" not in c.ptx and c.launches[0].grid == (64, 1, 1)
    rows = _rows("BFloat16", 4, 262144)
    ce = cute.compile(ex.cross_entropy_forward, rows, F("Int64", (4,)), F("Float32", (4,)), F("Float32", (4,)))
    assert ".maxntid 128, 1, 1" in ce.ptx and ".local" not in ce.ptx and ce.launches[0].cluster == (16, 1, 1)
    norm = cute.compile(ex.rmsnorm_forward, rows, F("BFloat16", (262144,)), rows, F("Float32", (4,)), 1e-6)
    assert ".maxntid 256, 1, 1" in norm.ptx     # measured slower at 128 values a thread


@pytest.mark.parametrize("dtype, n, stride, cluster, chunks, ctas", [
    ("BFloat16", 151936, 151936, 15, 10, 6),   # 10 chunks a thread (8 in registers: 0.89 of the copy ceiling)
    ("Float16", 262144, 262144, 16, 16, 6),
    ("BFloat16", 32768, 32768, 4, 8, 6),
    ("BFloat16", 262143, 262143, 16, 17, 5),   # shifted: 17 chunks over 16 CTAs of 128 threads (HALVES_WIDE)
    ("BFloat16", 24576, 24576, 3, 0, None),    # 3 CTAs: in registers
    ("Float32", 262144, 262144, 16, 0, None),  # Float32: in registers
])
def test_softmax_forward_stages_16_bit_rows_by_halves_and_reads_them_again_for_its_stores(
        dtype, n, stride, cluster, chunks, ctas, assemble):
    """16-bit rows over 4 or more CTAs: each thread copies its chunks into shared memory, takes each half's ``(max,
    sum)`` pair from there, and after the row's reduction reads each chunk again just before its store (two
    exponentials an element, about 80 registers a thread: six CTAs an SM; five past 16 chunks, where six spill).
    Rows that are not staged keep their row in registers, one exponential an element, with the CTAs left free."""
    c = cute.compile(ex.softmax_forward, F(dtype, (4, n), (stride, 1)), F(dtype, (4, n), (stride, 1)))
    (launch,) = c.launches
    assert launch.cluster == (cluster, 1, 1) and ".local" not in c.ptx
    ex2 = _count(c.ptx, r"ex2\.approx")
    if chunks:
        vec = 8
        plan = halves_plan("t", n, vec, getattr(cute, dtype), 8 if n % vec else 0, HALVES_WIDE)
        assert staged_halves(plan, getattr(cute, dtype)) and (plan.cluster, plan.chunks) == (cluster, chunks)
        assert _count(c.ptx, r"ld\.global\.v4") == 0 and _count(c.ptx, r"cp\.async\.wait_group\s+0;") == 1
        full = sum(plan.full(k) for k in range(plan.chunks))
        assert _count(c.ptx, CP_ASYNC_16) >= full and _count(c.ptx, r"st\.global\.v4") >= full
        assert f".minnctapersm {ctas}" in c.ptx and ex2 >= 2 * chunks * vec
    else:
        assert "cp.async" not in c.ptx and ".minnctapersm" not in c.ptx
    regs, report = ptxas_registers(c.ptx), ptxas_report(c.ptx)
    assert report is None or all(spill == (0, 0) for spill in report[1])
    assert cubin_resources(c.cubin)[launch.name][1] == 0     # nvJitLink's: no stack frame
    assemble(c.ptx)


@pytest.mark.parametrize("dtype, n, stride, halves, copies", [
    ("BFloat16", 262144, 262144, True, 16),   # 16 CTAs of 128 threads, 16 chunks a thread
    ("Float16", 131072, 131080, True, 10),    # 13 CTAs at 10 chunks (16 at 8 without staging), the last round partial
    ("BFloat16", 65536, 65536, True, 10),     # 7 CTAs at 10 chunks (8 at 8)
    ("BFloat16", 32768, 32768, True, 8),      # 4 CTAs at 8 chunks either way
    ("BFloat16", 40000, 40008, True, 10),     # 4 CTAs at 10 chunks (5 at 8), the last round partial
    ("BFloat16", 24576, 24576, False, 0),     # 3 CTAs: not measured staged
    ("Float32", 262144, 262144, False, 0),    # 64 KiB a CTA staged: measured slower
])
def test_cross_entropy_stages_16_bit_rows_over_4_or_more_ctas_and_reduces_each_half_apart(dtype, n, stride, halves,
                                                                                           copies, assemble):
    rows, s = F(dtype, (4, n), (stride, 1)), F("Float32", (4,))
    c = cute.compile(ex.cross_entropy_forward, rows, F("Int64", (4,)), s, s)
    (launch,) = c.launches
    vec = 8 if stride % 8 == 0 else 1
    first = plan_rows("t", n, vec, 64, wide=128)
    plan = halves_plan("t", n, vec, getattr(cute, dtype))
    assert staged_halves(first, getattr(cute, dtype)) == halves
    assert staged_halves(plan, getattr(cute, dtype)) == halves
    assert plan == (plan_rows("t", n, vec, 80, wide=128) if halves else first)
    assert launch.cluster == (plan.cluster, 1, 1) and ".local" not in c.ptx
    if halves:  # every chunk copied, none loaded into registers
        assert plan.cluster >= 4 and _count(c.ptx, CP_ASYNC_16) == copies == plan.chunks
        assert _count(c.ptx, r"ld\.global\.v4") == 0 and _count(c.ptx, r"cp\.async\.wait_group\s+0;") == 1
        # each element's exponential in a fast and a plain form (a branch per half); the combines' are fast too
        assert _count(c.ptx, r"ex2\.approx\.f32") == plan.chunks * plan.vec
        assert _count(c.ptx, r"ex2\.approx\.ftz\.f32") > plan.chunks * plan.vec
    else:
        assert "cp.async" not in c.ptx
    assemble(c.ptx)


def test_rows_longer_than_a_cluster_holds_are_refused():
    with pytest.raises(cute.CuteValueError, match=r"at most 16 CTAs .* at most 262144 elements per row here, got "
                                                  r"262145"):
        cute.compile(ex.softmax_forward, _rows("Float32", 2, 262145), _rows("Float32", 2, 262145))


def _rms(x, w=None, y=None, rstd=None, eps=1e-6):
    m, n = x.shape[0], x.shape[-1]
    return cute.compile(ex.rmsnorm_forward, x, w or F(x.dtype, (n,)), y or F(x.dtype, (m, n)),
                        rstd or F("Float32", (m,)), eps)


@pytest.mark.parametrize("build,match", [
    (lambda: _rms(F("Float32", (4, 8, 2))), r"x must be a 2-D \(rows, n\) tensor"),
    (lambda: _rms(F("Int32", (4, 8))), r"x must be of type Float32 or BFloat16 or Float16, got Int32"),
    (lambda: _rms(F("Float32", (4, 8), (1, 4))), r"rows of x must be contiguous \(last stride 1\), got the strides "
                                                 r"\(1, 4\)"),
    (lambda: _rms(F("Float32", (4, 8), (4, 1))), r"must not overlap \(row stride >= 8\), got the row stride 4"),
    (lambda: _rms(F("Float32", (0, 8))), r"at least one row"),
    (lambda: _rms(F("Float32", (4, 8)), y=F("Float32", (4, 9))), r"y must have the shape \(4, 8\), got \(4, 9\)"),
    (lambda: _rms(F("Float32", (4, 8)), w=F("Float32", (7,))), r"w must have the shape \(8,\), got"),
    (lambda: _rms(F("Float32", (4, 8)), w=F("Float32", (8,), (2,))), r"w must be contiguous \(stride 1\), got the "
                                                                     r"stride 2"),
    (lambda: _rms(F("Float32", (4, 8)), rstd=F("BFloat16", (4,))), r"rstd must be of type Float32, got BFloat16"),
    (lambda: _rms(F("Float32", (4, 8)), eps=-1e-5), r"rmsnorm_forward: eps must be a finite number >= 0, got -1e-05"),
    (lambda: _rms(F("Float32", (4, 8)), eps=float("nan")), r"eps must be a finite number >= 0, got nan"),
    (lambda: cute.compile(ex.softmax_backward, F("Float32", (4, 8)), F("Float32", (4, 8)), F("Float32", (8, 4))),
     r"softmax_backward: dx must have the shape \(4, 8\), got \(8, 4\)"),
    (lambda: cute.compile(ex.cross_entropy_forward, F("Float32", (4, 8)), F("Float32", (4,)), F("Float32", (4,)),
                          F("Float32", (4,))), r"target must be of type Int32 or Int64, got Float32"),
    (lambda: cute.compile(ex.cross_entropy_forward, F("Float32", (4, 8)), F("Int64", (5,)), F("Float32", (4,)),
                          F("Float32", (4,))), r"target must have the shape \(4,\), got"),
    (lambda: cute.compile(ex.cross_entropy_forward, F("Float32", (4, 8)), F("Int64", (4,)), F("Float32", (4,)),
                          F("Float32", (4,)), 1.5), r"ignore_index must be an int in \[-2\*\*31, 2\*\*31\), got 1.5"),
    (lambda: cute.compile(ex.rmsnorm_backward, *[F("Float32", (4, 8))] * 2, F("Float32", (8,)), F("Float32", (4,)),
                          F("Float32", (4, 8)), F("Float32", (8,)), F("Float32", (2, 9))),
     r"workspace must have 8 columns \(P, 8\), got the shape \(2, 9\)"),
])
def test_hostile_arguments_are_refused_naming_the_rule(build, match):
    with pytest.raises(cute.CuteError, match=match):
        build()


def _pair(part):
    m = max(part, default=-math.inf)
    return m, sum(math.exp(v - m) for v in part) if m > -math.inf else 0.0


def test_the_softmax_combine_of_partial_pairs_is_the_pair_of_the_whole_row():
    rng = random.Random(5)
    for trial in range(200):
        row = [rng.gauss(0, 4) for _ in range(rng.randint(1, 40))]
        row += [-math.inf] * rng.randint(0, 3)  # parts past a row's end hold -inf
        rng.shuffle(row)
        cuts = sorted(rng.sample(range(len(row) + 1), min(len(row) + 1, rng.randint(1, 6))))
        parts = [_pair(row[a:b]) for a, b in zip([0] + cuts, cuts + [len(row)])]
        while len(parts) > 1:  # any tree of combines (the butterflies, the warps, the cluster)
            i = rng.randrange(len(parts) - 1)
            parts[i:i + 2] = [max_sum(parts[i], parts[i + 1])]
        m, s = _pair(row)
        assert parts[0][0] == m and math.isclose(parts[0][1], s, rel_tol=1e-6), (trial, parts[0], (m, s))
    assert max_sum((-math.inf, 0.0), (-math.inf, 0.0)) == (-math.inf, 0.0)  # empty parts stay empty, not NaN
    assert all(math.isnan(v) for v in max_sum((math.nan, 1.0), (3.0, 1.0)))


def _lse_reference(row):
    """torch's ``logsumexp`` of a row, in double precision: NaN if any NaN, +inf if any +inf, -inf for a row of
    -inf (or an empty one), else ``m + log(sum(exp(v - m)))``."""
    if any(math.isnan(v) for v in row):
        return math.nan
    if math.inf in row:
        return math.inf
    m = max(row, default=-math.inf)
    if m == -math.inf:
        return -math.inf
    return m + math.log(sum(math.exp(v - m) for v in row))


def _shifted_pair(part):
    """A thread's pair as the cross-entropy kernel makes it: the max ignoring NaN (PTX ``max.f32``), and the sum
    of ``exp(v - shift)``, ``shift`` the max or 0 where it is infinite."""
    m = max((v for v in part if not math.isnan(v)), default=-math.inf)
    shift = 0.0 if abs(m) == math.inf else m
    return m, sum(math.exp(v - shift) if v != -math.inf else 0.0 for v in part)


def test_the_cross_entropy_combine_gives_torchs_logsumexp_for_special_values():
    rng = random.Random(11)
    specials = [[], [math.inf], [math.nan], [math.inf, math.nan], [-math.inf] * 3, [math.inf, math.inf]]
    for trial in range(400):
        row = [rng.gauss(0, 4) for _ in range(rng.randint(0, 30))]
        row += rng.choice(specials) + [-math.inf] * rng.randint(0, 3)
        if not row:
            row = [-math.inf]
        rng.shuffle(row)
        cuts = sorted(rng.sample(range(len(row) + 1), min(len(row) + 1, rng.randint(1, 6))))
        parts = [_shifted_pair(row[a:b]) for a, b in zip([0] + cuts, cuts + [len(row)])]
        while len(parts) > 1:  # any tree of combines (the butterflies, the warps, the cluster)
            i = rng.randrange(len(parts) - 1)
            parts[i:i + 2] = [ex.cross_entropy._max_sum_shifted(parts[i], parts[i + 1])]
        big, total = parts[0]
        got = ex.cross_entropy._shift(big) + (math.log(total) if total > 0 else -math.inf if total == 0 else total)
        want = _lse_reference(row)
        if math.isnan(want) or math.isinf(want):
            assert got == want or (math.isnan(got) and math.isnan(want)), (trial, row, got, want)
        else:
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9), (trial, row, got, want)
    combine = ex.cross_entropy._max_sum_shifted
    # a part of -inf only adds nothing, even where its rescaling overflows (0 * inf would be NaN)
    assert combine((-math.inf, 0.0), (-1000.0, 1.0)) == (-1000.0, 1.0)
    assert combine((-math.inf, 0.0), (-math.inf, 0.0)) == (-math.inf, 0.0)


@pytest.mark.parametrize("kernel, n, ctas", [
    ("softmax_forward", 4097, 6), ("softmax_forward", 6001, 6), ("softmax_forward", 12289, 2),   # 5, 6, 7 chunks
    ("cross_entropy_forward", 4097, 6), ("cross_entropy_forward", 12289, 6),
    ("cross_entropy_forward", 16001, 2),                                                        # 5, 7, 8 chunks
    ("cross_entropy_backward", 4097, 4), ("cross_entropy_backward", 12289, 4),
    ("cross_entropy_backward", 16001, 2),
])
def test_shifted_rows_of_one_cta_ask_for_more_ctas_an_sm_up_to_a_kernels_chunks(kernel, n, ctas, assemble):
    """Contiguous 16-bit rows of odd length in CTAs of 256 threads (shifted, several rows a CTA): the forwards stage
    them by halves (``cp.async`` into shared memory, 40 registers a thread) and ask for six CTAs an SM
    (``row_stage.halves_ctas``) where the softmax's threads keep at most 6 chunks, the cross-entropy's at most 7;
    the backward keeps them in registers and asks for four at most 7 (``row_shift.short_shifted_ctas``); past that
    the free default (two), as measured. ptxas spills nothing but for the cross-entropy at 7 chunks (the forward 32
    bytes, a 24-byte stack frame in the cubin; the backward 24, an 8-byte frame); measured faster all the same
    (1.02x and 1.20x)."""
    rows = _rows("BFloat16", 4, n)
    args = (rows, rows) if kernel == "softmax_forward" else (rows, F("Int64", (4,)), F("Float32", (4,)),
                                                             F("Float32", (4,)))
    if kernel == "cross_entropy_backward":
        args = (rows, F("Int64", (4,)), F("Float32", (4,)), F("Float32", (4,)), _rows("BFloat16", 4, n))
    c = cute.compile(getattr(ex, kernel), *args)
    (launch,) = c.launches
    assert launch.block == (256, 1, 1) and launch.cluster == (1, 1, 1)
    assert f".minnctapersm {ctas}" in c.ptx and ".local" not in c.ptx
    assert ("cp.async.cg" in c.ptx) == (kernel != "cross_entropy_backward")  # the forwards' rows staged
    report = ptxas_report(c.ptx)
    spills = {("cross_entropy_backward", 12289): (24, 28), ("cross_entropy_forward", 12289): (32, 32)}
    assert report is None or all(spill == spills.get((kernel, n), (0, 0)) for spill in report[1])
    assert cubin_resources(c.cubin)[launch.name][1] <= 24
    assemble(c.ptx)


@pytest.mark.parametrize("kernel, n, staged, ctas", [
    ("softmax_forward", 257, False, 4), ("softmax_forward", 1031, False, 4), ("softmax_forward", 2049, True, 6),
    ("softmax_forward", 16001, True, 2), ("cross_entropy_forward", 257, True, 6),
    ("cross_entropy_forward", 1031, True, 6)])
def test_the_forwards_stage_16_bit_rows_of_odd_stride_that_one_cta_holds(kernel, n, staged, ctas, assemble):
    """Shifted 16-bit rows of one CTA are copied into shared memory by ``cp.async`` and reduced by halves, at six
    CTAs an SM up to the kernel's chunks (``row_stage.halves_ctas``; 8 chunks a thread at 16001: the free two): the
    cross-entropy forward's at any length, the softmax forward's where a row takes 64 threads or more
    (``softmax_rows.forward_staged``: slower with 8 and 32, measured); the rows kept in registers load no chunk
    through ``cp.async``."""
    rows = _rows("BFloat16", 4, n)
    args = (rows, rows) if kernel == "softmax_forward" else (rows, F("Int64", (4,)), F("Float32", (4,)),
                                                             F("Float32", (4,)))
    c = cute.compile(getattr(ex, kernel), *args)
    assert ("cp.async.cg" in c.ptx) == staged and ("ld.global.v4" in c.ptx) != staged
    assert f".minnctapersm {ctas}" in c.ptx
    assemble(c.ptx)
