"""Where the CuTe DSL's algebra answers otherwise than CuTe C++ (and cute_py, which computes C++'s result), each
difference with the law the DSL's answer breaks.

The DSL's results below were printed by ``nvidia-cutlass-dsl`` 4.8.1 (``@cute.jit`` host code) on 2026-11-28 over
550 random flat/tiled/zipped/logical divides and products; 120 differed from cute_py. They fall in three classes:

- a group of rank 1 of ``flat_divide``, ``tiled_divide``, ``flat_product`` and ``tiled_product``: C++ slices the
  zipped result with ``repeat<R>(_)``, and ``repeat<1>(_)`` is ``_`` itself, so the group stays one rank-1 mode
  (``((2),(4))``); the DSL unpacks it (``(2,4)``). Both are the same function; the DSL's answer breaks the slicing
  law of the definition (``tests/cute/golden`` holds C++'s printed results, which cute_py gives);
- an int in a tiler of a layout of tuple shape: the DSL refuses it, C++ (and cute_py) read ``n`` as the layout
  ``n:1`` (the porting guide's differences);
- ``raked_product``: the porting guide's differences (C++'s result, checked against C++'s printed results).

A shared-memory tensor (``tma_partition``'s, any other) prints its hardware swizzle in bytes, as the DSL does
(``S<3,4,3>`` for fp16, not the element form ``S<3,3,3>`` it holds), and that text read back at the same pointer is
the same tensor.

(The remaining rows differed only in the text of an error: both sides refused the tiler.)

Where cute_py raises and the DSL returns (a composition whose rhs stride divides no lhs mode, a ``make_layout_tv`` of
a thread layout that is no bijection), the DSL's answers were printed by the same version and break the law (the
last test).
"""

import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
from cute_py.core.modes import slice_

# (op, layout, tiler, the DSL's printed result)
DSL_RANK1 = [
    ("flat_divide", cute.Layout((8,), (1,)), (2,), "(2,4):(1,2)"),
    ("flat_divide", cute.Layout((3,), (1,)), (2,), "(2,2):(1,2)"),
    ("tiled_divide", cute.Layout(6, 1), (1,), "((1),6):((0),1)"),
    ("tiled_divide", cute.Layout((2,), (1,)), (2,), "((2),1):((1),0)"),
    ("flat_product", cute.Layout((8,), (1,)), cute.Layout((6,), (1,)), "(8,6):(1,8)"),
    ("tiled_product", cute.Layout(3, 1), cute.Layout((4,), (1,)), "(3,4):(1,3)"),
]


def _repeat(r):
    return None if r == 1 else (None,) * r  # CuTe's repeat<R>(_): _ itself for R == 1


def _law(op, layout, tiler):
    zipped = (cute.zipped_divide if op.endswith("divide") else cute.zipped_product)(layout, tiler)
    first = _repeat(len(zipped[0])) if op.startswith("flat") else None
    return slice_(zipped, (first, _repeat(len(zipped[1]))))


@pytest.mark.parametrize("op, layout, tiler, dsl", DSL_RANK1)
def test_the_dsls_rank_1_groups_break_the_slicing_law_and_are_the_same_function(op, layout, tiler, dsl):
    ours = getattr(cute, op)(layout, tiler)
    assert ours == _law(op, layout, tiler)  # C++'s definition
    theirs = cute.parse_layout(dsl)
    assert theirs != _law(op, layout, tiler)  # the DSL's answer breaks it ...
    n = cute.size(ours)
    assert cute.size(theirs) == n and all(ours(i) == theirs(i) for i in range(n))  # ... computing the same map


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=3), st.data())
def test_law_flat_and_tiled_divides_and_products_are_slices_of_the_zipped_ones(shape, data):
    stride, acc = [], 1
    for x in shape:
        stride.append(acc)
        acc *= x
    layout = cute.Layout(tuple(shape), tuple(stride))
    tiler = tuple(data.draw(st.sampled_from([d for d in range(1, x + 1) if x % d == 0])) for x in shape)
    for op in ("flat_divide", "tiled_divide"):
        assert getattr(cute, op)(layout, tiler) == _law(op, layout, tiler)
    block = cute.Layout(tuple(data.draw(st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=2))))
    for op in ("flat_product", "tiled_product"):
        assert getattr(cute, op)(block, layout) == _law(op, block, layout)


@pytest.mark.parametrize("dtype", [cute.Float16, cute.Float32, cute.Uint8, cute.Float64])
@pytest.mark.parametrize("kind", ["K_SW32", "K_SW64", "K_SW128"])
def test_a_shared_memory_tensor_prints_its_hardware_swizzle_in_bytes_as_the_dsl_and_the_text_reads_back(dtype, kind):
    atom = cute.make_smem_layout_atom(getattr(cute.SmemLayoutAtomKind, kind), dtype)
    ptr = cute.make_ptr(dtype, 0, cute.AddressSpace.smem, assumed_align=1024)
    t = cute.make_tensor(ptr, atom)
    text = repr(t)
    byte = cute.get_swizzle_portion(atom)  # the atom's swizzle of byte addresses
    assert f" o {byte} o " in text, text
    # the printed layout, made into a tensor at the same pointer (the DSL's reading there), is the same tensor
    printed = text[text.index(str(byte)):-1]
    sw, offset, outer = printed.split(" o ")
    again = cute.make_tensor(ptr, cute.make_composed_layout(cute.parse_swizzle(sw), int(offset),
                                                            cute.parse_layout(outer)))
    assert again.layout == t.layout


def test_where_cute_py_raises_and_the_dsl_returns_the_dsls_answer_breaks_the_law():
    # composition: C++'s precondition (the rhs stride divides the lhs mode, or the rhs stays inside it) fails; the
    # DSL returns (2,2):(48,1), which is not lhs o rhs
    lhs, rhs = cute.Layout((4, 16), (16, 1)), cute.Layout(4, 3)
    with pytest.raises(cute.DivisibilityError):
        cute.composition(lhs, rhs)
    dsl = cute.parse_layout("(2,2):(48,1)")
    assert [dsl(i) for i in range(4)] != [lhs(rhs(i)) for i in range(4)]  # 1 != 33 at i = 2
    # make_layout_tv of a thread layout that is no bijection: the DSL returns tv (4,2):(1,4) over a tile of 8,
    # giving thread 1 the element 1, which the thread layout gives to thread 0 (4:0 maps every position to it)
    thr, val = cute.Layout(4, 0), cute.Layout(2)
    with pytest.raises(cute.CuteValueError, match="not a bijection"):
        cute.make_layout_tv(thr, val)
    tv = cute.parse_layout("(4,2):(1,4)")
    owner = {tv((t, v)): t for t in range(4) for v in range(2)}
    # in the raked product of thr and val, position p is in the block of thread thr(p % 4) = 0
    assert any(owner[p] != thr(p % 4) for p in range(8))
