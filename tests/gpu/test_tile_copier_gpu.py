"""GenericToSharedAsyncTileCopier on a Hopper GPU: a kernel copies a global tile into shared memory with the
copier, commits, waits, then writes the shared-memory bytes back in their physical order to a poisoned global
buffer; every byte is checked against torch: the source where the row is below the bound, zeros past it, each
element at its swizzled place (an independent XOR formula), and the guard bytes untouched.

Covers run-time row bounds (0, full and random), no swizzle and the 32/64/128-byte swizzles, each eviction
policy, fp16 and fp32, BLOCK and WARP scope, and threads beyond the thread layout. Each test builds and
assembles its PTX first (everywhere); the launches need a CUDA device (sm_90) and torch."""

import random

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")

import cute_py as cute  # noqa: E402
from cute_py import arch  # noqa: E402
from cute_py.nvgpu.cpasync import EvictionPolicy, GenericToSharedAsyncTileCopier, ThreadScope  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
POISON = 0x5A
GUARD = 1024  # bytes of poison on both sides of the output
ROWS, COLS = 32, 64  # the tile, in elements (fp16: 128-byte rows; fp32: 256-byte rows)
SWIZZLE_BYTES = (None, 32, 64, 128)


def _swizzle_args(nbytes, elem_bytes):
    """``(bits, base, shift)`` of the ``nbytes`` swizzle on element offsets: 16-byte units (base), XORed with
    the row of 128 bytes (shift 3 = 8 units), over 1 / 2 / 3 bits for 32 / 64 / 128 bytes."""
    if nbytes is None:
        return None
    return {32: 1, 64: 2, 128: 3}[nbytes], (16 // elem_bytes).bit_length() - 1, 3


def _swizzle(args):
    if args is None:
        return lambda o: o
    bits, base, shift = args
    return lambda o: o ^ ((o >> shift) & (((1 << bits) - 1) << base))


def _make(copier, tile, block, writers):
    rows, cols = tile

    @cute.kernel
    def k(src, out, n):
        s = arch.SmemAllocator().allocate_tensor(src.element_type, cute.Layout(tile, (cols, 1)), byte_alignment=1024)
        g = cute.local_tile(src, tile, (0, 0))
        copier.copy_bounded(s, g, n)
        arch.cp_async_commit_group()
        arch.cp_async_wait_group(0)
        arch.sync_threads()
        flat = cute.make_tensor(s.iterator, cute.Layout(rows * cols))
        t = arch.thread_idx()[0]
        for i in cute.range_constexpr(rows * cols // writers):
            if t < writers:
                out[t + writers * i] = flat[t + writers * i]

    @cute.jit
    def host(src, out, n: cute.Int32):
        k(src, out, n).launch(grid=1, block=block)

    return host


CASES = []
for dtype in ("Float16", "Float32"):
    for swz in SWIZZLE_BYTES:
        for policy in EvictionPolicy:
            CASES.append((dtype, swz, policy, ThreadScope.BLOCK, (8, 8), 64))
    CASES.append((dtype, 128, EvictionPolicy.NORMAL, ThreadScope.BLOCK, (8, 8), 96))      # 32 idle threads
    CASES.append((dtype, 64, EvictionPolicy.FIRST, ThreadScope.BLOCK, (16, 4), 64))       # 4 thread columns
    CASES.append((dtype, 128, EvictionPolicy.LAST, ThreadScope.WARP, (4, 8), 32))         # one warp
    CASES.append((dtype, None, EvictionPolicy.NORMAL, ThreadScope.WARP, (2, 8), 32))      # 16 idle lanes


@pytest.mark.parametrize("dtype, swz, policy, scope, tl, block", CASES)
def test_tile_copier_copies_zero_fills_and_swizzles_every_byte(dtype, swz, policy, scope, tl, block, assemble_ptx):
    eb = 2 if dtype == "Float16" else 4
    args = _swizzle_args(swz, eb)
    copier = GenericToSharedAsyncTileCopier(
        thread_layout=cute.Layout(tl, (tl[1], 1)), swizzle=cute.make_swizzle(*args) if args else None, masked=True,
        eviction_policy=policy, num_threads=block, thread_scope=scope)
    writers = 1 << (block.bit_length() - 1)  # threads that write the tile back: a power of two dividing it
    host = _make(copier, (ROWS, COLS), block, writers)
    spec = cute.compiler.DeviceArraySpec(dtype, (ROWS, COLS))
    assemble_ptx(cute.compile(host, spec, cute.compiler.DeviceArraySpec(dtype, (ROWS * COLS,)), 1).ptx)

    torch = hopper_torch()
    tdt = {"Float16": torch.float16, "Float32": torch.float32}[dtype]
    ity = {"Float16": torch.int16, "Float32": torch.int32}[dtype]
    rng = random.Random(f"{dtype}-{swz}-{policy.name}-{scope.name}-{tl}-{block}")
    gen = torch.Generator(device="cuda").manual_seed(rng.randint(0, 1 << 30))
    src = torch.randn((ROWS, COLS), generator=gen, device="cuda").to(tdt)
    f = _swizzle(args)
    perm = torch.tensor([f(o) for o in range(ROWS * COLS)], device="cuda")   # logical offset -> physical
    for n in sorted({0, ROWS, rng.randint(1, ROWS - 1), rng.randint(1, ROWS - 1)}):
        nbytes = ROWS * COLS * eb
        buf = torch.full((nbytes + 2 * GUARD,), POISON, dtype=torch.uint8, device="cuda")
        out = buf[GUARD:GUARD + nbytes].view(tdt)
        host(src, out, n)
        torch.cuda.synchronize()
        logical = src.clone()
        logical[n:] = 0
        expect = torch.empty(ROWS * COLS, dtype=tdt, device="cuda")
        expect[perm] = logical.reshape(-1)
        assert torch.equal(out.view(ity), expect.view(ity)), (n, int((out.view(ity) != expect.view(ity)).sum()))
        assert bool((buf[:GUARD] == POISON).all()) and bool((buf[GUARD + nbytes:] == POISON).all()), n


def test_the_swizzles_are_permutations_of_the_tile():
    # the test's own expectation: each swizzle permutes the tile's offsets and keeps 16-byte units whole
    for eb in (2, 4):
        for swz in SWIZZLE_BYTES:
            f = _swizzle(_swizzle_args(swz, eb))
            assert sorted(f(o) for o in range(ROWS * COLS)) == list(range(ROWS * COLS))
            unit = 16 // eb
            assert all(f(o) - f(o - o % unit) == o % unit for o in range(ROWS * COLS))
