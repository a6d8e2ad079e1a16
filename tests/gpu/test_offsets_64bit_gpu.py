"""Tensors of more than 2**32 elements on a Hopper GPU: copies whose element offsets pass 2**31 and 2**32, compiled
for static specs, ``sym_int`` extents, 64-bit and 32-bit run-time strides, compact marks and column-major layouts,
through element indexing and through ``local_tile`` slices, into a poisoned buffer: every byte of the result and of
the guard after it is checked.

A (69888, 65536) uint8 tensor has 4,580,179,968 elements; row 32768 is the first past 2**31, row 65536 the first
past 2**32. Each test builds and assembles its PTX first (everywhere); the launches need a CUDA device with about
10 GB free and torch."""

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")

import cute_py as cute  # noqa: E402
from cute_py.compiler.specs.args import DeviceArraySpec  # noqa: E402
from cute_py.runtime import from_dlpack  # noqa: E402

pytestmark = pytest.mark.gpu

M, N = 273 * 256, 65536
GUARD = 1 << 20
POISON = 0x5A


@cute.kernel
def _rows_by_index(gA, gB):
    """Block (r, j) copies elements 256j .. 256j+255 of row r, one per thread, by element coordinates."""
    t, _, _ = cute.arch.thread_idx()
    r, j, _ = cute.arch.block_idx()
    c = j * 256 + t
    gB[r, c] = gA[r, c]


@cute.kernel
def _rows_by_tile(gA, gB):
    """The same copy through the library's slicing: the (1, 256) tile (r, j) of each tensor."""
    t, _, _ = cute.arch.thread_idx()
    r, j, _ = cute.arch.block_idx()
    sB = cute.local_tile(gB, (1, 256), (r, j))
    sB[0, t] = cute.local_tile(gA, (1, 256), (r, j))[0, t]


@cute.kernel
def _cols_by_index(gA, gB):
    """Block (c, i) copies elements 256i .. 256i+255 of column c (a column-major tensor: coalesced)."""
    t, _, _ = cute.arch.thread_idx()
    c, i, _ = cute.arch.block_idx()
    r = i * 256 + t
    gB[r, c] = gA[r, c]


@cute.jit
def copy_by_index(a, b):
    _rows_by_index(a, b).launch(grid=(a.shape[0], a.shape[1] // 256, 1), block=256)


@cute.jit
def copy_by_tile(a, b):
    _rows_by_tile(a, b).launch(grid=(a.shape[0], a.shape[1] // 256, 1), block=256)


@cute.jit
def copy_columns(a, b):
    _cols_by_index(a, b).launch(grid=(a.shape[1], a.shape[0] // 256, 1), block=256)


def _specs(kind):
    """The compile's argument specs for ``kind`` (host-side: no GPU needed)."""
    if kind == "static":
        return DeviceArraySpec("Uint8", (M, N)), DeviceArraySpec("Uint8", (M, N))
    if kind == "sym_int":
        m, n = cute.sym_int(), cute.sym_int(divisibility=256)
        return DeviceArraySpec("Uint8", (m, n)), DeviceArraySpec("Uint8", (m, n))
    if kind == "columns":
        return DeviceArraySpec("Uint8", (M, N), (1, M)), DeviceArraySpec("Uint8", (M, N), (1, M))
    raise AssertionError(kind)


CASES = [("static", copy_by_index), ("static", copy_by_tile), ("sym_int", copy_by_index),
         ("sym_int", copy_by_tile), ("columns", copy_columns)]


@pytest.fixture(scope="module")
def big():
    """(torch, source, destination buffer): a random (M, N) uint8 source and a destination with a guard."""
    torch = pytest.importorskip("torch", reason="the launch uses torch tensors")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the PTX was built and assembled, the launch needs a GPU")
    free, _ = torch.cuda.mem_get_info()
    if free < 2 * M * N + (1 << 30):
        pytest.skip(f"needs {2 * M * N >> 30} GiB of free GPU memory, {free >> 30} GiB free")
    g = torch.Generator(device="cuda").manual_seed(11)
    src = torch.randint(0, 256, (M * N,), dtype=torch.uint8, device="cuda", generator=g)
    buf = torch.empty(M * N + GUARD, dtype=torch.uint8, device="cuda")
    yield torch, src, buf
    del src, buf
    torch.cuda.empty_cache()


def _check(torch, src, buf, what):
    torch.cuda.synchronize()
    dst = buf[:M * N]
    if not torch.equal(dst, src):
        bad = (dst != src).view(M, N).any(dim=1).nonzero().flatten()
        pytest.fail(f"{what}: {bad.numel()} rows wrong, the first {bad[:4].tolist()}")
    assert bool((buf[M * N:] == POISON).all()), f"{what}: the guard after the tensor was written"


@pytest.mark.parametrize("kind,fn", CASES, ids=[f"{k}-{f.fn.__name__}" for k, f in CASES])
def test_copy_past_2_32_elements(kind, fn, big, assemble_ptx):
    c = cute.compile(fn, *_specs(kind))
    assemble_ptx(c.ptx)
    torch, src, buf = big
    buf.fill_(POISON)
    if kind == "columns":
        a = src.view(N, M).t()
        b = buf[:M * N].view(N, M).t()
    else:
        a, b = src.view(M, N), buf[:M * N].view(M, N)
    c(a, b)
    _check(torch, src, buf, f"{kind} {fn.fn.__name__}")


@pytest.mark.parametrize("mark", ["layout_dynamic", "32bit_strides", "compact_shape"])
def test_copy_past_2_32_elements_marked(mark, big):
    torch, src, buf = big
    buf.fill_(POISON)
    a, b = src.view(M, N), buf[:M * N].view(M, N)
    if mark == "layout_dynamic":
        ta, tb = (from_dlpack(x).mark_layout_dynamic() for x in (a, b))
    elif mark == "32bit_strides":
        ta, tb = (from_dlpack(x, use_32bit_stride=True).mark_layout_dynamic() for x in (a, b))
    else:
        ta, tb = (from_dlpack(x).mark_compact_shape_dynamic(0) for x in (a, b))
    copy_by_index(ta, tb)
    _check(torch, src, buf, mark)
