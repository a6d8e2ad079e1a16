"""What a compile assumes of its run-time extents, checked at every call: ``cute.assume`` divisibility promises made
on the host, and the width each run-time value is computed in inside the kernel (an expression of 32-bit extents
is a 32-bit value there). Laws over arbitrary extents: a call is refused exactly when a promise or a width is
broken (the expected answer computed here with Python integers), with a ``SpecMismatch`` naming the value."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py.compiler.specs.args import DeviceArraySpec
from cute_py.errors import SpecMismatch

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def _copy_vectors(gA, gB):
    """Thread ``t`` of block ``b`` copies elements ``8t .. 8t+7`` of row ``b`` with one 16-byte access each way."""
    t, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    s = cute.local_tile(gA, (1, 8), (b, t))
    r = cute.make_fragment_like(s)
    atom = cute.make_copy_atom(cute.CopyUniversalOp(), gA.element_type, num_bits_per_copy=128)
    cute.copy(atom, s, r)
    cute.copy(atom, r, cute.local_tile(gB, (1, 8), (b, t)))


@cute.kernel
def _vector_rows(gA, gB):
    _copy_vectors(gA, gB)


@cute.jit
def assumed_rows(a, b):
    n = cute.assume(a.shape[1], divby=8)  # the caller's promise: rows of a multiple of 8 elements
    la = cute.make_tensor(a.iterator, cute.make_layout((a.shape[0], n), stride=(n, 1)))
    lb = cute.make_tensor(b.iterator, cute.make_layout((a.shape[0], n), stride=(n, 1)))
    _vector_rows(la, lb).launch(grid=(a.shape[0], 1, 1), block=32)


@cute.jit
def folded_rows(a, b):
    """A 3-D tensor seen as (L * M, N): L * M is computed in the kernel, in the width of L and M."""
    la = cute.make_tensor(a.iterator, cute.make_layout((a.shape[0] * a.shape[1], a.shape[2]), stride=(a.shape[2], 1)))
    lb = cute.make_tensor(b.iterator, cute.make_layout((a.shape[0] * a.shape[1], a.shape[2]), stride=(a.shape[2], 1)))
    _vector_rows(la, lb).launch(grid=(a.shape[0], 1, 1), block=32)


@pytest.fixture(scope="module")
def assumed():
    m, n = cute.sym_int(), cute.sym_int()
    return cute.compile(assumed_rows, DeviceArraySpec(cute.Float16, (m, n)), DeviceArraySpec(cute.Float16, (m, n)))


def _folded(width):
    sym = cute.sym_int64 if width == 64 else cute.sym_int
    l, m, n = sym(), sym(), cute.sym_int(divisibility=8)
    return cute.compile(folded_rows, DeviceArraySpec(cute.Float16, (l, m, n)), DeviceArraySpec(cute.Float16, (l, m, n)))


@pytest.fixture(scope="module")
def folded32():
    return _folded(32)


@pytest.fixture(scope="module")
def folded64():
    return _folded(64)


def _bind(c, shape):
    strides = tuple(int(x) for x in _compact(shape))
    return c._binder.bind({0: (shape, strides), 1: (shape, strides)})


def _compact(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def test_the_assumption_is_what_the_kernel_relies_on(assumed):
    # the promise is used: 16-byte vector accesses, which a row of 260 fp16 elements would misalign
    assert any("ld.global.v4" in line for line in assumed.ptx.splitlines())


def test_a_call_breaking_a_host_assumption_is_refused(assumed):
    assert _bind(assumed, (64, 256)) == (64, 256)
    with pytest.raises(SpecMismatch, match=r"a\.shape\[1\] is 260 for this call, not a multiple of 8"):
        _bind(assumed, (64, 260))


@SETTINGS
@given(st.integers(1, 1 << 20), st.integers(1, 1 << 20))
def test_host_assumptions_hold_at_every_call(assumed, m, n):
    if n % 8:
        with pytest.raises(SpecMismatch, match="not a multiple of 8"):
            _bind(assumed, (m, n))
    else:
        assert _bind(assumed, (m, n)) == (m, n)


@SETTINGS
@given(st.integers(1, 1 << 24), st.integers(1, 1 << 24), st.sampled_from([8, 64, 65536]))
def test_32_bit_expressions_are_refused_past_their_width(folded32, folded64, l, m, n):
    if l * m >= 1 << 31:
        with pytest.raises(SpecMismatch, match=r"\(a\.shape\[0\] \* a\.shape\[1\]\) is \d+ for this call .*outside "
                                               r"the 32-bit range .*sym_int64\(\)"):
            _bind(folded32, (l, m, n))
    else:
        assert _bind(folded32, (l, m, n)) == (l, m, n)
    assert _bind(folded64, (l, m, n)) == (l, m, n)  # 64-bit extents: computed in 64 bits, never refused here


def test_the_public_call_checks_too(assumed, monkeypatch):
    """The check is in the binding every call path goes through (a fake driver records launches): a call breaking
    the promise launches nothing; a call keeping it launches."""
    import sys

    sys.path.insert(0, "tests/jit")
    from _fake_device import FakeCudaArray
    from test_jit_compiled_call import FakeDriver
    from cute_py.compiler.runtime import launch as L

    driver = FakeDriver()
    monkeypatch.setitem(L._STATE, "driver", driver)
    monkeypatch.setattr(L, "load_module", lambda cubin, kernels, *rest: (None, {n: f"F:{n}" for n in kernels}))
    arrays = [FakeCudaArray("float16", (4, n), address=k << 32) for n in (260, 256) for k in (1, 2)]
    with pytest.raises(SpecMismatch, match="not a multiple of 8"):
        assumed(cute.runtime.from_dlpack(arrays[0]), cute.runtime.from_dlpack(arrays[1]))
    assert not driver.calls
    assumed(cute.runtime.from_dlpack(arrays[2]), cute.runtime.from_dlpack(arrays[3]))
    assert len(driver.calls) == 1


@cute.kernel
def _assuming_rows(gA, gB):
    """The promise made in the kernel, of the extent as the kernel receives it."""
    n = cute.assume(gA.shape[1], divby=8)
    la = cute.make_tensor(gA.iterator, cute.make_layout((gA.shape[0], n), stride=(n, 1)))
    lb = cute.make_tensor(gB.iterator, cute.make_layout((gA.shape[0], n), stride=(n, 1)))
    _copy_vectors(la, lb)


@cute.jit
def kernel_assumed_rows(a, b):
    _assuming_rows(a, b).launch(grid=(a.shape[0], 1, 1), block=32)


def test_a_kernel_assumption_on_an_extent_is_checked_at_each_call_also_from_the_disk_cache(tmp_path, monkeypatch):
    from cute_py.compiler.cache import store as _cache

    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(tmp_path))
    for attempt in ("compiled", "from the disk cache"):
        monkeypatch.setattr(kernel_assumed_rows, "_compiled", {})
        before = _cache.stats["disk_hits"]
        m, n = cute.sym_int(), cute.sym_int()
        c = cute.compile(kernel_assumed_rows, DeviceArraySpec(cute.Float16, (m, n)),
                         DeviceArraySpec(cute.Float16, (m, n)))
        assert (_cache.stats["disk_hits"] > before) == (attempt != "compiled")
        assert any("ld.global.v4" in line for line in c.ptx.splitlines())
        assert _bind(c, (64, 256)) == (64, 256)
        with pytest.raises(SpecMismatch, match=r"a\.shape\[1\] is 260 for this call, not a multiple of 8"):
            _bind(c, (64, 260))


def test_a_recast_of_run_time_leaves_promises_whole_units_checked_at_each_call():
    """Moving Int8 elements as 64-bit units needs a contiguous extent (and other strides) of multiples of 8: with
    run-time leaves the recast is built on that promise (``assume_recastable``, as the TMA atoms of wider internal
    types use it), which the binding of each call checks; values known on the host are checked at once."""
    from cute_py.compiler.specs.args import ArraySpec
    from cute_py.compiler.specs.dyn_specs import Binder, kernel_values
    from cute_py.core.recast import assume_recastable, recast_exactness
    from cute_py.errors import CuteValueError
    from cute_py.testing import RuntimeInt

    m, n = cute.sym_int(), cute.sym_int()
    layout = cute.make_layout((m, n), stride=(1, m))
    assert recast_exactness(64, 8, layout) is not None  # nothing known of m
    promised = assume_recastable(64, 8, layout)
    assert recast_exactness(64, 8, promised) is None
    binder = Binder({0: ArraySpec(("Int8", (m, n), (1, m), 16))}, ["g"], kernel_values([promised]))
    assert binder.bind({0: ((128, 100), (1, 128))}) == (128, 100)
    with pytest.raises(SpecMismatch, match=r"is 100 for this call, not a multiple of 8"):
        binder.bind({0: ((100, 100), (1, 100))})
    with pytest.raises(CuteValueError, match="not divisible by 8"):
        assume_recastable(64, 8, cute.make_layout((RuntimeInt(100), 4), stride=(1, RuntimeInt(100))))
    assert recast_exactness(64, 8, assume_recastable(64, 8, cute.make_layout(
        (RuntimeInt(96), 4), stride=(1, RuntimeInt(96))))) is None
