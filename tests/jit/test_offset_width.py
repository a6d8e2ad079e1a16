"""The width of element offsets in a kernel, as a law over arbitrary layouts and coordinates.

A kernel's coordinates are fixed-width integers (32-bit thread and block indices, loop counters), its run-time
extents and strides 32- or 64-bit parameters. Here a stand-in for the traced integers (``Wrap``) computes with
exactly that arithmetic -- two's-complement wrap-around at its width, the wider width of two operands, a
constant that does not fit widening to 64 bits, ``.to(Int64)`` widening -- while a fake device context answers
each element load with its offset. The law: for any layout over global memory (static or with run-time extents
and strides, of either width; any strides, negative and zero included) and any in-range coordinate (static or
run-time, flat or hierarchical, through element access, slices, ``local_tile`` and ``domain_offset``), the offset
the library computes equals the exact offset, computed here independently with Python integers, or, for a value no
64-bit integer holds (a static coordinate past 2**63 split by run-time extents), the kernel's refusal of that
constant (the traced integers raise; ``Wrap`` does as they do). Before offsets were widened, every coordinate
times a stride past 2**31 wrapped.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import device
from cute_py.core.leaves import DynamicInt
from cute_py.errors import TraceError
from cute_py.tensor.offsets import offset_width, static_span
from cute_py.tensor.tensor import Tensor

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


def _wrap(v, w):
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


class Wrap(DynamicInt):
    """A ``width``-bit two's-complement integer with the promotion rules of the kernel's traced integers."""

    known_divisor = 1

    def __init__(self, v, width=32):
        self.v, self.width = _wrap(v, width), width

    def to(self, dtype):
        assert dtype.is_integer and dtype.width >= self.width
        return Wrap(self.v, dtype.width)

    def _op(self, other, f, reverse=False):
        if isinstance(other, Wrap):
            w, o = max(self.width, other.width), other.v
        elif type(other) is int:
            w = self.width if -(1 << (self.width - 1)) <= other < (1 << (self.width - 1)) else 64
            if not -(1 << 63) <= other < (1 << 63):     # as the traced integers refuse it
                raise TraceError(f"the constant {other} does not fit in 64 bits")
            o = other
        else:
            return NotImplemented
        a, b = (o, self.v) if reverse else (self.v, o)
        return Wrap(f(_wrap(a, w), _wrap(b, w)), w)

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._op(o, lambda a, b: a + b, True)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._op(o, lambda a, b: a - b, True)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: a * b, True)

    def __floordiv__(self, o):
        return self._op(o, lambda a, b: a // b)

    def __rfloordiv__(self, o):
        return self._op(o, lambda a, b: a // b, True)

    def __mod__(self, o):
        return self._op(o, lambda a, b: a % b)

    def __rmod__(self, o):
        return self._op(o, lambda a, b: a % b, True)


class _Offsets(device.DeviceContext):
    """Answers an element load with the element's offset from the tensor's base."""

    def load(self, pointer, offset):
        return _value(pointer.offset) + _value(offset)


def _value(x):
    return x.v if isinstance(x, Wrap) else x


def _exact(coord, shape, stride):
    """The offset of ``coord`` in ``shape:stride`` with Python integers (colexicographic split of flat coordinates)."""
    if type(shape) is tuple:
        if type(coord) is tuple:
            return sum(_exact(c, s, d) for c, s, d in zip(coord, shape, stride))
        total, rest = 0, coord
        for i, (s, d) in enumerate(zip(shape, stride)):
            n = _size(s)
            if i == len(shape) - 1:
                total += _exact(rest, s, d)
            else:
                total += _exact(rest % n, s, d)
                rest //= n
        return total
    return coord * stride


def _size(s):
    if type(s) is tuple:
        p = 1
        for x in s:
            p *= _size(x)
        return p
    return s


# -- strategies ---------------------------------------------------------------------------------------------------

_EXTENT = st.one_of(st.integers(1, 8), st.integers(1, 1 << 16), st.sampled_from([65536, 70000, 1 << 20]))
_STRIDE = st.one_of(st.integers(-(1 << 20), 1 << 20), st.sampled_from([0, 1, 65536, 70000, 1 << 31, 1 << 33,
                                                                      -(1 << 31), 3 << 30]))


@st.composite
def _layouts(draw):
    """(shape, stride) of rank 1..3, each mode a leaf or a pair, the cosize below 2**40 (a tensor argument's tagged
    range): Python ints."""
    def mode():
        if draw(st.integers(0, 3)) == 0:
            return (draw(_EXTENT), draw(_EXTENT)), (draw(_STRIDE), draw(_STRIDE))
        return draw(_EXTENT), draw(_STRIDE)
    modes = [mode() for _ in range(draw(st.integers(1, 3)))]
    shape, stride = tuple(m[0] for m in modes), tuple(m[1] for m in modes)
    lo, hi = static_span(shape, stride)
    if max(-lo, hi) >= 1 << 40:
        stride = tuple(_scale_down(d) for d in stride)
    return shape, stride


def _scale_down(d):
    if type(d) is tuple:
        return tuple(_scale_down(x) for x in d)
    return d % 4096


def _runtime(draw, t, kind):
    """``t`` (a shape or stride tuple) with some leaves made run-time values: 32-bit where they fit (a sym_int or
    use_32bit_stride value), else 64-bit."""
    if type(t) is tuple:
        return tuple(_runtime(draw, x, kind) for x in t)
    if not draw(st.booleans()):
        return t
    fits = -(1 << 31) <= t < (1 << 31)
    width = draw(st.sampled_from([32, 64])) if fits else 64
    return Wrap(t, width)


def _coord(draw, shape):
    """A coordinate of ``shape``: per mode a static int, a 32-bit run-time value, or a flat index into a tuple mode."""
    if type(shape) is tuple and draw(st.integers(0, 2)):
        return tuple(_coord(draw, s) for s in shape)
    n = _size(shape)
    c = draw(st.integers(0, n - 1))
    if n <= (1 << 31) and draw(st.booleans()):
        return Wrap(c, 32)
    return c


def _plain(c):
    if type(c) is tuple:
        return tuple(_plain(x) for x in c)
    return _value(c)


def _gmem_tensor(shape, stride):
    ptr = cute.runtime.make_ptr(cute.Uint8, 1 << 45, cute.AddressSpace.gmem)
    return Tensor(ptr, cute.make_layout(shape, stride=stride))


# -- the law ------------------------------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_element_offsets_are_exact_at_any_width(data):
    shape, stride = data.draw(_layouts())
    dyn_shape = data.draw(st.booleans())
    rshape = _runtime(data.draw, shape, "shape") if dyn_shape else shape
    rstride = _runtime(data.draw, stride, "stride")
    t = _gmem_tensor(rshape, rstride)
    coord = _coord(data.draw, shape)
    want = _exact(_plain(coord), shape, stride)
    with device.tracing(_Offsets()):
        try:
            got = t[coord]
        except TraceError as e:
            # a kernel holds no value past 64 bits: a static coordinate split by run-time extents may be one (shapes
            # of 2**64 elements and more); it is refused, naming the value, never wrapped
            assert "does not fit in 64 bits" in str(e) and _size(shape) >= 1 << 63, (shape, stride, _plain(coord))
            return
        assert got == want, (shape, stride, _plain(coord))
        # a slice keeping the first mode, then the element of it
        if type(coord) is tuple and len(coord) > 1:
            sub = t[(None,) + coord[1:]]
            assert sub[(coord[0],)] == want
        # domain_offset moves the base by the offset of the coordinate
        if type(coord) is tuple:
            moved = cute.domain_offset(coord, t)
            assert _value(moved.iterator.offset) == want


@SETTINGS
@given(st.data())
def test_local_tile_offsets_are_exact_at_any_width(data):
    rows, cols = data.draw(st.sampled_from([(70000, 65536), (3, 1 << 30), (1 << 16, 1 << 16), (1000, 1024)]))
    col_major = data.draw(st.booleans())
    stride = (1, rows) if col_major else (cols, 1)
    rt = data.draw(st.booleans())
    shape = (Wrap(rows, 32), Wrap(cols, 32)) if rt else (rows, cols)
    rstride = tuple(Wrap(s, data.draw(st.sampled_from([32, 64]))) if rt and s != 1 else s for s in stride)
    t = _gmem_tensor(shape, rstride)
    r, j = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols // 256 - 1))
    i = data.draw(st.integers(0, 255))
    want = r * stride[0] + (j * 256 + i) * stride[1]
    with device.tracing(_Offsets()):
        tile = cute.local_tile(t, (1, 256), (Wrap(r), Wrap(j)))
        assert tile[0, Wrap(i)] == want


def test_the_width_rule():
    with device.tracing(_Offsets()):
        assert offset_width(_gmem_tensor((1 << 15, 1 << 16), (1 << 16, 1))) == 32  # span 2**31 - 1
        assert offset_width(_gmem_tensor((1 << 15 | 1, 1 << 16), (1 << 16, 1))) == 64
        assert offset_width(_gmem_tensor((1 << 15, 1 << 16), (-(1 << 16), -1))) == 32  # down to -2**31 + 1
        assert offset_width(_gmem_tensor((1 << 15 | 1, 1 << 16), (-(1 << 16), -1))) == 64
        assert offset_width(_gmem_tensor((2, 1 << 16), (-(1 << 15), 1))) == 32
        assert offset_width(_gmem_tensor((Wrap(4), 8), (8, 1))) == 64  # run-time: no bound while compiling
        smem = cute.runtime.make_ptr(cute.Uint8, 0, cute.AddressSpace.smem)
        assert offset_width(Tensor(smem, cute.make_layout((1 << 20, 1 << 20)))) == 0
    assert offset_width(_gmem_tensor((1 << 20, 1 << 20), (1 << 20, 1))) == 0  # outside a kernel: host arithmetic
