"""Views that start outside their tensor: ``domain_offset`` at a coordinate outside the shape is a view (a
negative or past-the-end offset, as the residue-first k-tile of a GEMM); what is checked is each element read or
written.  Law (host arrays): ``domain_offset(c, t)[x] == t[c + x]`` when ``c + x`` is inside ``t``'s shape, else a
CuteIndexError."""

import itertools
import re

import numpy as np
import pytest

import cute_py as cute
from cute_py import Layout, arch
from cute_py.errors import CuteError, CuteIndexError
from cute_py.nvgpu import cpasync


def _host(shape, stride=None, extra=0):
    layout = Layout(shape, stride) if stride is not None else Layout(shape)
    a = np.arange(cute.cosize(layout) + extra, dtype=np.float64)
    return cute.make_tensor(a, layout)


def test_a_negative_shift_is_a_view_whose_elements_are_checked_when_read():
    t = _host((4, 8))
    v = cute.domain_offset((0, -3), t)
    assert v[(1, 3)] == t[(1, 0)] and v[(2, 7)] == t[(2, 4)]
    with pytest.raises(CuteIndexError, match=r"element offset -12\b"):
        v[(0, 0)]  # column -3 of t: 12 elements before the array
    with pytest.raises(CuteIndexError):
        v[(3, 2)] = 1.0
    assert t.to_numpy().ravel(order="F").tolist() == list(range(32))  # nothing written


def test_a_past_the_end_shift_is_a_view():
    t = _host((4, 8))
    v = cute.domain_offset((0, 8), t)
    with pytest.raises(CuteIndexError):
        v[(0, 0)]
    w = cute.domain_offset((0, -8), v)
    assert w[(3, 5)] == t[(3, 5)]


def test_an_element_outside_the_shape_but_inside_the_array_is_refused():
    # (4,4) compact: coordinate (5,0) has the offset of (1,1); the view must not read it
    t = _host((4, 4))
    v = cute.domain_offset((2, 0), t)
    assert v[(1, 0)] == t[(3, 0)]
    with pytest.raises(CuteIndexError, match=r"\(5,0\)"):
        v[(3, 0)]


def test_an_int_outside_a_mode_of_several_modes_is_refused():
    t = _host((8, 8))
    with pytest.raises(CuteIndexError, match="not linear"):
        cute.domain_offset(-1, t)


def _law(t, shape):
    checked = 0
    flat = [range(-s - 1, s + 1) for s in shape]
    inside = [range(s) for s in shape]
    for c in itertools.product(*flat):
        v = cute.domain_offset(c, t)
        for x in itertools.product(*inside):
            cx = tuple(ci + xi for ci, xi in zip(c, x))
            if all(0 <= y < s for y, s in zip(cx, shape)):
                assert v[x] == t[cx], (c, x)
                checked += 1
            else:
                with pytest.raises(CuteError):
                    v[x]
    return checked  # the elements compared with the tensor's


@pytest.mark.parametrize("shape,stride,extra", [((3, 4), None, 0), ((3, 4), (1, 5), 3), ((4, 3), (3, 1), 0),
                                                ((2, 3, 2), (6, 1, 3), 2), ((5,), (2,), 4)])
def test_domain_offset_law_over_arbitrary_coordinates(shape, stride, extra):
    assert _law(_host(shape, stride, extra), shape) > 0


def test_domain_offset_law_through_two_shifts():
    t = _host((3, 4))
    for c1, c2 in [((-2, 1), (1, 2)), ((4, -4), (-3, 5))]:
        v = cute.domain_offset(c2, cute.domain_offset(c1, t))
        c = tuple(a + b for a, b in zip(c1, c2))
        for x in itertools.product(range(3), range(4)):
            cx = tuple(ci + xi for ci, xi in zip(c, x))
            if 0 <= cx[0] < 3 and 0 <= cx[1] < 4:
                assert v[x] == t[cx]
            else:
                with pytest.raises(CuteError):
                    v[x]


# -- in a kernel: the residue-first k-tile, masked by a predicated copy ---------------------------------------


@cute.kernel
def _residue_kernel(g, tc, tile, residue):
    tid, _, _ = arch.thread_idx()
    bx, _, _ = arch.block_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(g.element_type, cute.Layout(tile, (tile[1], 1)))
    g_a = cute.domain_offset((0, residue), cute.local_tile(g, tile, (bx, 0)))
    c_a = cute.domain_offset((0, residue), cute.local_tile(cute.make_identity_tensor(g.shape), tile, (bx, 0)))
    thr = tc.get_slice(tid)
    t_g, t_s, t_c = thr.partition_S(g_a), thr.partition_D(s), thr.partition_S(c_a)
    pred = cute.predicate(t_c, g.shape)
    for i in range(cute.size(pred)):
        k_ok = t_c[i][1] >= 0
        pred[i] = k_ok if pred[i] is True else (False if pred[i] is False else pred[i] & k_ok)
    cute.copy(tc, t_g, t_s, pred=pred)
    arch.cp_async_commit_group()
    arch.cp_async_wait_group(0)


@cute.jit
def _residue_copy(g, residue):
    atom = cute.make_copy_atom(cpasync.CopyG2SOp(cpasync.LoadCacheMode.ALWAYS), g.element_type, 32)
    tc = cute.make_tiled_copy_tv(atom, cute.Layout((8, 4), (4, 1)), cute.Layout((1, 1)))
    _residue_kernel(g, tc, (8, 8), residue).launch(grid=4, block=32)


def test_a_kernel_copies_a_residue_first_k_tile_with_a_predicate():
    c = cute.compile(_residue_copy, cute.compiler.DeviceArraySpec("Float32", (32, 29)), -3)
    # two 4-byte cp.async per thread (the (8, 8) tile over 32 threads), each predicated
    assert len(re.findall(r"cp\.async\.ca\.shared\.global", c.ptx)) == 2
    assert "setp" in c.ptx


@pytest.mark.parametrize("shift", [(-2, 0), (0, -3), (-1, -1), (2, 1), (-4, 5)])
def test_predicate_of_a_shifted_coordinate_view_is_true_exactly_inside_the_bound(shift):
    """``cute.predicate`` is ``0 <= c < bound`` in every mode: a coordinate view shifted before its tensor (a
    residue-first tile) has negative coordinates, which are outside (expected values computed here)."""
    shape, bound = (4, 6), (4, 6)
    view = cute.domain_offset(shift, cute.make_identity_tensor(shape))
    p = cute.predicate(view, bound)
    for i in range(shape[0] * shape[1]):
        r, c = i % shape[0] + shift[0], i // shape[0] + shift[1]
        assert p[i] == (0 <= r < bound[0] and 0 <= c < bound[1]), (shift, i, (r, c))
