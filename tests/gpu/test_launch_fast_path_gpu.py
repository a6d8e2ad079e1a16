"""The generated launch path of a compiled TMA copy on a Hopper GPU, for a static and a run-time-shaped compile:
once generated (torch's one-call guard in front of the Python checks where this torch has it), every hostile or
unusual tensor is either refused with a CuteError before any launch (destination still all poison) or copied
exactly (every byte of the result checked, every byte around it still poison). Tensors changed in place after
the path was made (``resize_``, ``set_``, ``.data =``) included. Where the native launcher is built (see
``native``) it takes the repeated call, and random call sequences check that it never replays a launch
made for other tensors.

The PTX is built and assembled everywhere; the launches need a CUDA device (sm_90) and torch."""

import random

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")
pytest.importorskip("numpy", reason="the GPU helpers use numpy")

import cute_py as cute  # noqa: E402
from cute_py.demo.kernel import tma_copy  # noqa: E402
from cute_py.errors import CuteError  # noqa: E402
from cute_py.compiler.runtime import native  # noqa: E402
from cute_py.compiler.runtime.compiled import CallState  # noqa: E402
from cute_py.runtime import from_dlpack  # noqa: E402
from _tma_copy_check import POISON, check_outside, guarded, hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
SHAPE = (256, 128)


def _ptx_first(dynamic, assemble_ptx):
    """The kernel's PTX, built and assembled for sm_90a from specs (everywhere, GPU or not). torch is imported
    first where it is installed: the compiled object is cached in memory and the later compile from torch tensors
    gets this same one, whose lock (made when it is) is the native launcher's only once torch is loaded. The
    in-memory cache is emptied first: an object another test of this process called with tensors of
    ``from_dlpack`` never makes a generated path for run-time shapes (by design), and these tests need one."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    tma_copy._compiled.clear()
    shape = (cute.sym_int(), cute.sym_int(divisibility=8)) if dynamic else SHAPE
    spec = cute.DeviceArraySpec(cute.Float16, shape)
    assemble_ptx(tma_copy.compile(spec, spec).ptx)


def _compile(torch, dynamic, assemble_ptx):
    src = torch.randn(SHAPE, device="cuda").to(torch.float16)
    dst = torch.empty(SHAPE, device="cuda", dtype=torch.float16)
    mk = (lambda x: from_dlpack(x, assumed_align=16).mark_layout_dynamic()) if dynamic else (lambda x: x)
    c = tma_copy.compile(mk(src), mk(dst))
    assemble_ptx(c.ptx)
    c(src, dst)
    c(src, dst)  # the second call of the same kind generates the path
    torch.cuda.synchronize()
    assert torch.equal(dst, src)
    assert c._state is CallState.FAST, "no generated launch path"
    if native.launcher_class() is not None:  # the launcher in front of the generated Python path
        assert c._entry is c._native, f"no native launcher ({native.status()})"
        assert c._native.fallback.__func__ is c._fast_call
    return c, src, c._fast_call.__globals__


def _copies(torch, c, src, dst, buf):
    c(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(dst.view(torch.int16), src.view(torch.int16))
    check_outside(torch, buf, dst)


def _refused(torch, c, src, dst, buf):
    with pytest.raises(CuteError):
        c(src, dst)
    torch.cuda.synchronize()
    assert bool((buf == POISON).all()), "a refused call wrote"


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_every_hostile_tensor_is_refused_or_copied_exactly(dynamic, assemble_ptx):
    _ptx_first(dynamic, assemble_ptx)
    torch = hopper_torch()
    c, src, env = _compile(torch, dynamic, assemble_ptx)
    guard = env.get("guard")
    assert guard is not None, "torch's guard was not used for ordinary tensors"
    answers = []
    env["guard"] = lambda *a: answers.append(guard(*a)) or answers[-1]
    # the usual call: accepted by the guard alone (the Python path's, or the native launcher's, which refills new
    # addresses itself where it can)
    def by_guard(call):
        n, native = len(answers), c._native
        done = (native.hits, native.refills) if native is not None else None
        call()
        torch.cuda.synchronize()
        if len(answers) > n:
            return answers[-1] is True
        return native is not None and (native.hits, native.refills) != done

    plain = torch.empty(SHAPE, device="cuda", dtype=torch.float16)
    assert by_guard(lambda: c(src, plain)) and torch.equal(plain, src)
    plain.zero_()
    # None given (as the jit function passes it): the legacy default stream
    assert by_guard(lambda: c(src, plain, stream=None)) and torch.equal(plain, src)

    def fresh(shape=SHAPE, pad=0):
        return guarded(torch, shape, torch.float16, row_pad=pad)

    # another dtype of the same size, on either side: refused by both compiles
    buf, dst = fresh()
    _refused(torch, c, src.view(torch.int16), dst, buf)
    _refused(torch, c, src, dst.view(torch.bfloat16), buf)
    # one tensor as both arguments (a copy onto itself): torch's guard refuses aliases, the Python checks take it
    same = src.clone()
    c(same, same)
    torch.cuda.synchronize()
    assert torch.equal(same, src)
    # on the host, not the device
    _refused(torch, c, src.cpu(), dst, buf)
    # a misaligned view (2 bytes in): the compiled alignment is 16 bytes
    big = torch.randn((SHAPE[0], SHAPE[1] + 8), device="cuda").to(torch.float16)
    buf, dst = fresh()
    _refused(torch, c, big.flatten()[1:1 + SHAPE[0] * SHAPE[1]].view(SHAPE), dst, buf)
    # padded rows (strides differ from the compiled ones): the run-time-shaped compile copies them
    src_padded = big[:, :SHAPE[1]]
    buf, dst = fresh(pad=8)
    (_copies if dynamic else _refused)(torch, c, src_padded, dst, buf)
    # another shape: transposed extents
    other = torch.randn(SHAPE[::-1], device="cuda").to(torch.float16)
    buf, dst = fresh(SHAPE[::-1])
    (_copies if dynamic else _refused)(torch, c, other, dst, buf)
    # tensors that need autograd, parameters, inference tensors, calls under no_grad: all copied
    buf, dst = fresh()
    _copies(torch, c, src.clone().requires_grad_(), dst, buf)
    with torch.inference_mode():
        inf = src.clone()
        buf, dst = fresh()
        _copies(torch, c, inf, dst, buf)
    with torch.no_grad():
        buf, dst = fresh()
        _copies(torch, c, src, dst, buf)
    # changed in place after the path was generated: the same object, a new shape (same address) ...
    moving = src.clone()
    buf, dst = fresh()
    _copies(torch, c, moving, dst, buf)
    moving.resize_(SHAPE[::-1])
    buf, dst = fresh(SHAPE[::-1])
    (_copies if dynamic else _refused)(torch, c, moving, dst, buf)
    # ... new memory under the same object
    moving = src.clone()
    buf, dst = fresh()
    _copies(torch, c, moving, dst, buf)
    moving.set_(torch.randn(SHAPE, device="cuda").to(torch.float16))
    buf, dst = fresh()
    _copies(torch, c, moving, dst, buf)
    moving.data = torch.randn(SHAPE, device="cuda").to(torch.float16)
    buf, dst = fresh()
    _copies(torch, c, moving, dst, buf)
    moving.data = torch.randn(SHAPE, device="cuda")  # now float32 under the same object
    buf, dst = fresh()
    _refused(torch, c, moving, dst, buf)
    # after all of that the usual call is still accepted by the guard alone (a native launcher was disarmed by the
    # refused call's general path: it passes the call on without asking the guard)
    n = len(answers)
    c(src, plain)
    torch.cuda.synchronize()
    assert torch.equal(plain, src) and answers[n:] == [True]
    if c._native is not None:  # armed again by the path (the run-time-shaped one after a repeat)
        c(src, plain)
        torch.cuda.synchronize()
        assert c._native.armed and torch.equal(plain, src)
    assert False in answers, "no hostile call reached the guard"
    # a subclass (a parameter) is copied too (the static compile makes its path again for it)
    buf, dst = fresh()
    _copies(torch, c, torch.nn.Parameter(src.clone()), dst, buf)
    buf, dst = fresh()
    _copies(torch, c, torch.nn.Parameter(src.clone()), dst, buf)
    buf, dst = fresh()
    _copies(torch, c, src, dst, buf)


def test_a_repeated_dynamic_call_is_replayed_and_never_after_another_binding(assemble_ptx):
    _ptx_first(True, assemble_ptx)
    torch = hopper_torch()
    c, src, _ = _compile(torch, True, assemble_ptx)
    dst = torch.zeros(SHAPE, device="cuda", dtype=torch.float16)
    for _ in range(3):  # bound, repeated (its exact guard made), replayed
        c(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)
    assert c._exact is not None, "a repeated call made no exact guard"
    guard, ptrs = c._exact
    seen = []
    c._exact = (lambda *a: seen.append(guard(*a)) or seen[-1], ptrs)
    hits = c._native.hits if c._native is not None else None
    dst.zero_()
    c(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)
    if c._native is None:
        assert seen == [True]
    else:  # replayed by the native launcher, armed with the exact guard itself
        assert c._native.hits == hits + 1 and seen == []
    # another type and shape through the general path: the next call of the first tensors binds them again
    other = torch.nn.Parameter(torch.randn(SHAPE[::-1], device="cuda").to(torch.float16))
    buf, out = guarded(torch, SHAPE[::-1], torch.float16)
    _copies(torch, c, other, out, buf)
    dst.zero_()
    c(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(dst, src), "the launch bound for the other call was replayed"
    # the same addresses, one extent changed in place: not replayed either
    c(src, dst)
    c(src, dst)
    torch.cuda.synchronize()
    src2, dst2 = src.clone(), dst.clone().zero_()
    for _ in range(3):
        c(src2, dst2)
    torch.cuda.synchronize()
    tail = dst2[SHAPE[0] // 2:]  # the rows the resize cuts off: a replay of the old extents would write them
    tail.zero_()
    src2.resize_(SHAPE[0] // 2, SHAPE[1])
    dst2.resize_(SHAPE[0] // 2, SHAPE[1]).fill_(0)
    src2.fill_(1.5)
    c(src2, dst2)
    torch.cuda.synchronize()
    assert bool((dst2 == 1.5).all()) and bool((tail == 0).all())


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_random_call_sequences_never_replay_a_launch_made_for_other_tensors(dynamic, assemble_ptx):
    """60 calls drawn at random from a few sources and poisoned destinations (repeats, new addresses, streams
    given as ints, another shape for the run-time-shaped compile, an aliased pair): every result exact, every
    byte around it still poison; the native launcher took the repeats and refilled for new addresses (its
    rewritten TMA descriptors then copied every byte right)."""
    _ptx_first(dynamic, assemble_ptx)
    torch = hopper_torch()
    c, src, _ = _compile(torch, dynamic, assemble_ptx)
    rng = random.Random(1234 + dynamic)
    shapes = [SHAPE, SHAPE[::-1]] if dynamic else [SHAPE]
    sources = {shape: [torch.randn(shape, device="cuda").to(torch.float16) for _ in range(2)] for shape in shapes}
    dests = {shape: [guarded(torch, shape, torch.float16) for _ in range(2)] for shape in shapes}
    side = torch.cuda.Stream()
    for step in range(60):
        shape = rng.choice(shapes)
        x = rng.choice(sources[shape])
        buf, dst = rng.choice(dests[shape])
        buf.fill_(POISON)
        how = rng.random()
        if how < 0.2:  # on another stream, given by its handle
            side.wait_stream(torch.cuda.current_stream())
            c(x, dst, stream=side.cuda_stream)
            torch.cuda.current_stream().wait_stream(side)
        elif how < 0.25:  # a copy onto itself
            y = x.clone()
            c(y, y)
            torch.cuda.synchronize()
            assert torch.equal(y, x), f"step {step}: the aliased copy changed the tensor"
            c(x, dst)
        else:
            c(x, dst)
        torch.cuda.synchronize()
        assert torch.equal(dst.view(torch.int16), x.view(torch.int16)), f"step {step}: wrong bytes"
        check_outside(torch, buf, dst)
    if c._native is not None:
        assert c._native.hits > 0, "the native launcher launched none of the repeated calls"
        # new destinations were refilled by it (the driver's descriptors were seen to hold the address verbatim)
        assert c._native.refills > 0, "the native launcher refilled none of the calls at new addresses"


def test_an_object_compiled_before_torch_is_imported_still_gets_the_native_launcher():
    """A fresh process compiles the copy from specs before it imports torch, then compiles it again from torch
    tensors of the same kinds (the in-memory cache gives the same object) and calls it twice: the generated path,
    and the native launcher in front of it where one is built, take the repeated call, and the bytes are right."""
    import os
    import subprocess
    import sys

    hopper_torch()          # a CUDA device and torch, or skip
    script = f"""
import sys
import cute_py as cute
from cute_py.demo.kernel import tma_copy
from cute_py.compiler.runtime import native
from cute_py.compiler.runtime.compiled import CallState
spec = cute.DeviceArraySpec(cute.Float16, {SHAPE})
first = tma_copy.compile(spec, spec)
assert "torch" not in sys.modules
import torch
src = torch.randn({SHAPE}, device="cuda").to(torch.float16)
dst = torch.empty({SHAPE}, device="cuda", dtype=torch.float16)
c = tma_copy.compile(src, dst)
assert c is first, "the in-memory cache gave another object"
c(src, dst)
c(src, dst)
torch.cuda.synchronize()
assert torch.equal(dst, src)
assert c._state is CallState.FAST, "no generated launch path"
print(native.launcher_class() is not None, c._entry is c._native, native.status())
"""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=root)
    assert r.returncode == 0, r.stderr
    built, native_entry, status = r.stdout.split(maxsplit=2)
    assert native_entry == built, f"no native launcher for an object made before torch was imported: {status}"
