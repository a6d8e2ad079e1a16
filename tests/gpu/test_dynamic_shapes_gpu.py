"""Dynamic shapes on a Hopper GPU: one compile launched on 50 shapes (TMA copies with descriptors encoded per
call, the DSL's elementwise addition, vectorised row copies), every byte of poisoned output buffers checked
(inside: the result; around: untouched), marks that a call breaks refused before any launch, and compiled
kernels captured in a CUDA graph.

Each test builds its PTX first (everywhere); the launches need a CUDA device (sm_90) and torch."""

import random
import sys

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")
np = pytest.importorskip("numpy", reason="the comparison uses numpy")

import cute_py as cute  # noqa: E402
from cute_py.compiler.cache import store as _cache  # noqa: E402
from cute_py.demo.kernel import tma_copy  # noqa: E402
from cute_py.errors import SpecMismatch, TmaError  # noqa: E402
from cute_py.runtime import from_dlpack  # noqa: E402
from _tma_copy_check import POISON, check_outside as _check_outside, guarded as _guarded, hopper_torch  # noqa: E402

sys.path.insert(0, "tests")
sys.path.insert(0, "tests/jit")
from dsl_programs.elementwise_add import elementwise_add  # noqa: E402
from _fake_device import copy_rows as _copy_rows  # noqa: E402

pytestmark = pytest.mark.gpu


def _compiles():
    return _cache.stats["compiles"] + _cache.stats["disk_hits"]


def test_one_tma_copy_compile_serves_fifty_shapes(assemble_ptx):
    torch = hopper_torch()
    rng = random.Random(7)
    shapes = [(rng.randint(1, 700), 8 * rng.randint(1, 130)) for _ in range(50)]
    before = None
    for k, (m, n) in enumerate(shapes):
        src = torch.randn((m, n), device="cuda").to(torch.float16)
        pad = rng.choice([0, 8, 24])  # rows padded: strides differ from the extents, still multiples of 16 bytes
        buf, dst = _guarded(torch, (m, n), torch.float16, row_pad=pad)
        if k == 0:
            c = tma_copy.compile(from_dlpack(src, assumed_align=16).mark_layout_dynamic(),
                                 from_dlpack(dst, assumed_align=16).mark_layout_dynamic())
            assemble_ptx(c.ptx)
            before = _compiles()
        tma_copy(from_dlpack(src, assumed_align=16).mark_layout_dynamic(),
                 from_dlpack(dst, assumed_align=16).mark_layout_dynamic())
        torch.cuda.synchronize()
        assert torch.equal(dst.view(torch.int16), src.view(torch.int16)), (m, n, pad)
        _check_outside(torch, buf, dst)
    assert _compiles() == before, "a new shape compiled again"
    # the compiled function takes raw torch tensors too, binding their shapes per call
    src = torch.randn((333, 96), device="cuda").to(torch.float16)
    buf, dst = _guarded(torch, (333, 96), torch.float16)
    c(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)
    _check_outside(torch, buf, dst)


def test_a_call_that_breaks_a_rule_launches_nothing():
    torch = hopper_torch()
    src = torch.randn((64, 64), device="cuda").to(torch.float16)
    buf, dst = _guarded(torch, (64, 64), torch.float16)
    c = tma_copy.compile(from_dlpack(src, assumed_align=16).mark_layout_dynamic(),
                         from_dlpack(dst, assumed_align=16).mark_layout_dynamic())
    bad_src = torch.randn((64, 100), device="cuda").to(torch.float16)  # 200-byte rows: no TMA stride
    bad_buf, bad_dst = _guarded(torch, (64, 100), torch.float16)
    with pytest.raises(TmaError, match="global stride 1 is 200 bytes"):
        c(bad_src, bad_dst)
    torch.cuda.synchronize()
    assert bool((bad_buf == POISON).all())
    M, N = cute.sym_int(), cute.sym_int(divisibility=8)
    spec = cute.DeviceArraySpec(cute.Float16, (M, N))
    d = tma_copy.compile(spec, spec)
    with pytest.raises(SpecMismatch, match="not a multiple of 8"):
        d(torch.randn((64, 12), device="cuda").to(torch.float16), torch.empty((64, 12), device="cuda",
                                                                               dtype=torch.float16))
    with pytest.raises(SpecMismatch, match="bound before"):
        d(src, torch.empty((32, 64), device="cuda", dtype=torch.float16))
    torch.cuda.synchronize()
    assert bool((buf == POISON).all())


def test_the_dsl_elementwise_add_compiled_once_for_fifty_shapes():
    torch = hopper_torch()
    rng = random.Random(11)
    c = None
    for k in range(50):
        m, n = rng.randint(1, 300), rng.randint(1, 700)
        a = torch.randn((m, n), device="cuda").to(torch.float16)
        b = torch.randn((m, n), device="cuda").to(torch.float16)
        buf, out = _guarded(torch, (m, n), torch.float16, row_pad=rng.choice([0, 3]))
        args = [from_dlpack(x).mark_layout_dynamic() for x in (a, b, out)]
        if c is None:
            c = cute.compile(elementwise_add, *args)
            before = _compiles()
        c(*args)
        torch.cuda.synchronize()
        assert torch.equal(out, a + b), (m, n)
        _check_outside(torch, buf, out)
    assert _compiles() == before


def test_vectorised_rows_of_run_time_length():
    """Rows of 256 elements copied 16 bytes at a time (the mark proves the alignment), for many row counts."""
    torch = hopper_torch()
    c = None
    for m in (1, 2, 17, 64, 100, 255, 1000):
        a = torch.randn((m, 256), device="cuda").to(torch.float16)
        buf, out = _guarded(torch, (m, 256), torch.float16)
        args = [from_dlpack(x, assumed_align=16).mark_compact_shape_dynamic(0, divisibility=1) for x in (a, out)]
        if c is None:
            c = _copy_rows.compile(*args)
            assert "ld.global.v4.b32" in c.ptx
        c(*args)
        torch.cuda.synchronize()
        assert torch.equal(out, a)
        _check_outside(torch, buf, out)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_compiled_kernels_replay_in_a_cuda_graph(dynamic):
    torch = hopper_torch()
    src = torch.randn((256, 512), device="cuda").to(torch.float16)
    dst = torch.zeros_like(src)
    mk = (lambda x: from_dlpack(x, assumed_align=16).mark_layout_dynamic()) if dynamic else (lambda x: x)
    c = tma_copy.compile(mk(src), mk(dst))
    stream = torch.cuda.Stream()
    for _ in range(4):  # module loaded, parameters filled (not capturable), launch path made, native launcher armed
        c(src, dst, stream=stream.cuda_stream)
    torch.cuda.synchronize()
    dst.zero_()
    hits = c._native.hits if c._native is not None else None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        c(src, dst, stream=stream.cuda_stream)
    torch.cuda.synchronize()
    assert not bool((dst == src).all())  # captured, not run
    assert hits is None or c._native.hits == hits + 1, "not captured through the native launcher"
    for _ in range(3):
        src.copy_(torch.randn_like(src, dtype=torch.float32).to(torch.float16))
        dst.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(dst, src)
