"""``Tensor.load()`` on the host: a TensorSSA computed by numpy, checked against numpy on the arrays themselves."""

import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
from cute_py.errors import CuteTypeError, CuteValueError
from cute_py.runtime import from_dlpack
from cute_py.tensor.host_ssa import HostTensorSSA

np = pytest.importorskip("numpy", reason="host tensors are numpy arrays")


def _t(a):
    return from_dlpack(np.ascontiguousarray(a))


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.sampled_from(["+", "-", "*", "/", ">", "==", "<="]),
       st.integers(0, 2**31 - 1))
def test_law_elementwise_ops_are_numpys_in_the_element_type(m, n, op, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)).astype(np.float32)
    b = (rng.standard_normal((m, n)) + 3).astype(np.float32)
    va, vb = _t(a).load(), _t(b).load()
    got = {"+": va + vb, "-": va - vb, "*": va * vb, "/": va / vb, ">": va > vb, "==": va == vb,
           "<=": va <= vb}[op]
    want = {"+": a + b, "-": a - b, "*": a * b, "/": a / b, ">": a > b, "==": a == b, "<=": a <= b}[op]
    out = np.zeros_like(want)
    from_dlpack(out).store(got)
    assert np.array_equal(out, want)
    assert got.dtype is (cute.Boolean if op in (">", "==", "<=") else cute.Float32)
    scaled = va * 2.0  # a Python float is weak: Float32 stays
    assert scaled.dtype is cute.Float32 and np.array_equal(_back(scaled, m, n), a * np.float32(2.0))


def _back(v, m, n):
    out = np.zeros((m, n), dtype=np.float32)
    from_dlpack(out).store(v)
    return out


def test_reduce_slice_broadcast_and_conversion():
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    v = _t(a).load()
    assert str(v) == "vector<6xf32> o (2,3)"
    assert v.reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=0) == 21.0
    rows = v.reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=(None, 1))
    assert [rows[i] for i in range(2)] == [6.0, 15.0]
    cols = v.reduce(cute.ReductionOp.ADD, 1.0, reduction_profile=(1, None))
    assert [cols[i] for i in range(3)] == [6.0, 8.0, 10.0]
    assert v.reduce(cute.ReductionOp.MAX, -1e9) == 6.0
    assert v.reduce(None, 0, reduction_profile=None) is v
    col = v[(None, 1)]
    assert isinstance(col, HostTensorSSA) and [col[i] for i in range(2)] == [2.0, 5.0]
    assert v[(1, 2)] == 6.0 and v[3] == 5.0  # flat index: column-major
    b = _t(np.array([[0, 1, 2]], dtype=np.float32)).load().broadcast_to((4, 3))
    assert _back(b, 4, 3).tolist() == [[0, 1, 2]] * 4
    with pytest.raises(CuteValueError, match="does not broadcast"):
        _t(np.zeros((2, 3), np.float32)).load().broadcast_to((4, 3))
    assert v.to(cute.Int32).dtype is cute.Int32 and v.to(cute.Int32)[5] == 6
    with pytest.raises(CuteTypeError, match="numpy, which has no such type"):
        v.to(cute.BFloat16)
    with pytest.raises(CuteTypeError, match="no truth value"):
        bool(v)


def test_host_ssa_is_a_tensor_ssa_for_isinstance_and_math_applies():
    pytest.importorskip("numba_cuda_mlir", reason="cute.TensorSSA and cute.math load the compiler")
    v = _t(np.array([4.0, 9.0], dtype=np.float32)).load()
    assert isinstance(v, cute.TensorSSA)
    r = cute.math.sqrt(v)
    assert [r[0], r[1]] == [2.0, 3.0] and r.dtype is cute.Float32
    w = cute.where(v > 5.0, v, 0.0)
    assert [w[0], w[1]] == [0.0, 9.0]
