"""``@cute.struct`` on the host: field offsets, alignment and size against the C layout rules, written here from
the rules (and, for naturally aligned fields, against ``ctypes.Structure`` itself), for random field lists with
``MemRange``, ``Align`` (also of ``Align``) and nested structs; the declarations it rejects; ``cute.size_in_bytes``
and ``cute.recast_ptr``."""

import __future__
import ctypes

import pytest
from hypothesis import given, strategies as st

import cute_py as cute
from cute_py import AddressSpace, Pointer

DTYPES = [cute.Boolean, cute.Int8, cute.Uint8, cute.Int16, cute.Float16, cute.BFloat16, cute.Int32, cute.Float32,
          cute.Uint32, cute.Int64, cute.Float64, cute.Uint64, cute.Float8E4M3FN]
CTYPE = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32, 8: ctypes.c_uint64}


# -- field specs, and the C layout model (written from the rules, not from cute_py) ---------------------------
# ("scalar", dtype) | ("range", dtype, n) | ("struct", [specs]) | ("align", spec, a)

def c_size_align(spec):
    kind = spec[0]
    if kind == "scalar":
        return spec[1].width // 8, spec[1].width // 8
    if kind == "range":
        return spec[2] * spec[1].width // 8, spec[1].width // 8
    if kind == "struct":
        _, size, align = c_layout(spec[1])
        return size, align
    size, align = c_size_align(spec[1])
    return size, max(align, spec[2])  # alignas: never weaker than the natural alignment


def c_layout(specs):
    """(offsets, size, alignment) of a C struct with these members, in order."""
    offsets, end, align = [], 0, 1
    for s in specs:
        size, a = c_size_align(s)
        start = (end + a - 1) // a * a
        offsets.append(start)
        end = start + size
        align = max(align, a)
    return offsets, (end + align - 1) // align * align, align


def to_cute(spec):
    kind = spec[0]
    if kind == "scalar":
        return spec[1]
    if kind == "range":
        return cute.struct.MemRange[spec[1], spec[2]]
    if kind == "struct":
        return make_struct(spec[1])
    return cute.struct.Align[to_cute(spec[1]), spec[2]]


def make_struct(specs, name="S"):
    cls = type(name, (), {"__annotations__": {f"f{i}": to_cute(s) for i, s in enumerate(specs)}})
    return cute.struct(cls)


def to_ctypes(spec):
    kind = spec[0]
    if kind == "scalar":
        return CTYPE[spec[1].width // 8]
    if kind == "range":
        return CTYPE[spec[1].width // 8] * spec[2]
    return type("C", (ctypes.Structure,), {"_fields_": [(f"f{i}", to_ctypes(s)) for i, s in enumerate(spec[1])]})


def _specs(align):
    leaf = st.one_of(st.tuples(st.just("scalar"), st.sampled_from(DTYPES)),
                     st.tuples(st.just("range"), st.sampled_from(DTYPES), st.integers(0, 40)))

    def extend(inner):
        options = [st.tuples(st.just("struct"), st.lists(inner, min_size=1, max_size=4))]
        if align:
            options.append(st.tuples(st.just("align"), inner, st.sampled_from([1, 2, 4, 8, 16, 64, 128, 1024])))
        return st.one_of(*options)

    return st.lists(st.recursive(leaf, extend, max_leaves=8), min_size=1, max_size=6)


@given(_specs(align=True))
def test_offsets_alignment_and_size_follow_the_c_rules(specs):
    s = make_struct(specs)
    offsets, size, align = c_layout(specs)
    assert [f.offset for f in s.fields] == offsets
    assert s.size_in_bytes() == s.__sizeof__() == size
    assert s.__alignof__() == align


@given(_specs(align=False))
def test_naturally_aligned_structs_are_laid_out_as_ctypes_lays_them_out(specs):
    s, c = make_struct(specs), to_ctypes(("struct", specs))
    assert [f.offset for f in s.fields] == [getattr(c, f"f{i}").offset for i in range(len(specs))]
    assert s.size_in_bytes() == ctypes.sizeof(c)
    assert s.__alignof__() == ctypes.alignment(c)


@given(_specs(align=True))
def test_struct_layout_laws(specs):
    s = make_struct(specs)
    fields, size, align = s.fields, s.size_in_bytes(), s.__alignof__()
    assert align == max(f.align for f in fields) and align & (align - 1) == 0
    end = 0
    for f, spec in zip(fields, specs):
        natural = c_size_align(spec[1] if spec[0] == "align" else spec)[1]
        assert f.align >= natural and f.offset % f.align == 0
        if spec[0] == "align":
            assert f.align >= spec[2]
        assert f.offset >= end  # in order, no overlap
        end = f.offset + f.size
        if f.kind == "struct":
            assert f.size == f.struct.size_in_bytes() and f.align >= f.struct.__alignof__()
    assert size % align == 0 and end <= size < end + align


def test_a_worked_example():
    @cute.struct
    class Complex:
        re: cute.Float32
        im: cute.Float32

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[cute.Int64, 3]           # 0..24
        flag: cute.Int8                                     # 24
        c: Complex                                          # 28..36
        h: cute.struct.Align[cute.Float16, 16]              # 48..50
        tile: cute.struct.Align[cute.struct.MemRange[cute.Float16, 4096], 1024]  # 1024..9216
        tail: cute.Int16                                    # 9216..9218

    assert [(f.name, f.offset, f.size, f.align) for f in Storage.fields] == [
        ("bars", 0, 24, 8), ("flag", 24, 1, 1), ("c", 28, 8, 4), ("h", 48, 2, 16), ("tile", 1024, 8192, 1024),
        ("tail", 9216, 2, 2)]
    assert Storage.size_in_bytes() == 10240 and Storage.__alignof__() == 1024
    assert cute.struct.MemRange[cute.Float16, 4096].size_in_bytes == 8192


def test_align_of_align_is_the_strictest():
    assert cute.struct.Align[cute.struct.Align[cute.Int32, 64], 16].align == 64
    assert cute.struct.Align[cute.struct.Align[cute.Int32, 16], 64].align == 64
    s = make_struct([("scalar", cute.Int8), ("align", ("align", ("scalar", cute.Int32), 16), 64)])
    assert s.fields[1].offset == 64 and s.size_in_bytes() == 128


def test_a_zero_length_range_is_an_address_marker_with_its_element_alignment():
    # as the DSL (and C's zero-length arrays): no bytes, but aligned as its elements
    s = make_struct([("scalar", cute.Int8), ("range", cute.Int64, 0), ("scalar", cute.Int8)])
    assert [f.offset for f in s.fields] == [0, 8, 8] and s.size_in_bytes() == 16


def test_string_annotations_evaluate_where_the_struct_is_defined():
    src = ("import cute_py as cute\n"
           "def declare(n):\n"
           "    @cute.struct\n"
           "    class S:\n"
           "        bars: cute.struct.MemRange[cute.Int64, n]\n"
           "        x: cute.struct.Align[cute.Int32, 2 * n]\n"
           "    return S\n")
    ns = {"__name__": __name__}
    exec(compile(src, "<future>", "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True), ns)
    s = ns["declare"](8)
    assert [f.offset for f in s.fields] == [0, 64] and s.size_in_bytes() == 80


# -- declarations that are errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("params,error,match", [
    ((cute.Int32, -1), cute.CuteValueError, "count must be >= 0, got -1"),
    ((cute.Int32, 2.0), cute.CuteTypeError, "static int"),
    ((cute.Int32, True), cute.CuteTypeError, "must be an int"),
    ((cute.Int32, "3"), cute.CuteTypeError, "static int"),
    ((int, 3), cute.CuteTypeError, "must be a numeric type"),
    (("Float32", 3), cute.CuteTypeError, "must be a numeric type"),
    ((cute.Layout(4), 3), cute.CuteTypeError, "must be a numeric type"),
    ((cute.Int32, 3, 4), cute.CuteTypeError, r"takes \[element type, count\]"),
])
def test_bad_memrange_parameters_are_rejected(params, error, match):
    with pytest.raises(error, match=match):
        cute.struct.MemRange[params]


def test_a_memrange_of_one_parameter_is_rejected():
    with pytest.raises(cute.CuteTypeError, match=r"takes \[element type, count\]"):
        cute.struct.MemRange[cute.Int32]


@pytest.mark.parametrize("params,error,match", [
    ((cute.Int32, 3), cute.CuteValueError, "positive power of two, got 3"),
    ((cute.Int32, 0), cute.CuteValueError, "positive power of two, got 0"),
    ((cute.Int32, -8), cute.CuteValueError, "positive power of two, got -8"),
    ((cute.Int32, 8.0), cute.CuteTypeError, "power-of-two int|static int"),
    ((cute.Int32, True), cute.CuteTypeError, "power-of-two int"),
    ((int, 8), cute.CuteTypeError, "applies to a numeric type"),
    ((cute.struct.MemRange, 8), cute.CuteTypeError, "applies to a numeric type"),
    ((cute.Layout(4), 8), cute.CuteTypeError, "applies to a numeric type"),
])
def test_bad_align_parameters_are_rejected(params, error, match):
    with pytest.raises(error, match=match):
        cute.struct.Align[params]


@pytest.mark.parametrize("annotation", [int, float, 5, None, cute.Layout(4), cute.struct.MemRange, cute.struct.Align,
                                        type("Plain", (), {}), "not a type"])
def test_a_field_that_is_no_type_is_rejected(annotation):
    cls = type("Bad", (), {"__annotations__": {"ok": cute.Int32, "bad": annotation}})
    with pytest.raises(cute.CuteTypeError, match=r"Bad\.bad"):
        cute.struct(cls)


def test_structs_without_fields_with_defaults_or_bases_are_rejected():
    with pytest.raises(cute.CuteTypeError, match="has no fields"):
        cute.struct(type("Empty", (), {}))
    with pytest.raises(cute.CuteValueError, match=r"no default values.*D\.x"):
        cute.struct(type("D", (), {"__annotations__": {"x": cute.Int32}, "x": 3}))
    base = type("Base", (), {"__annotations__": {"x": cute.Int32}})
    with pytest.raises(cute.CuteTypeError, match="cannot derive"):
        cute.struct(type("Derived", (base,), {"__annotations__": {"y": cute.Int32}}))
    with pytest.raises(cute.CuteValueError, match="B.base: 'base' names an instance's base pointer"):
        cute.struct(type("B", (), {"__annotations__": {"base": cute.Int32}}))
    with pytest.raises(cute.CuteTypeError, match="decorates a class"):
        cute.struct(3)


def test_the_repr_names_every_field_and_tells_structs_apart():
    a = make_struct([("scalar", cute.Int32), ("range", cute.Float16, 8)])
    b = make_struct([("scalar", cute.Int32), ("range", cute.Float16, 9)])
    assert repr(a) != repr(b)
    assert "f1: MemRange[Float16, 8] @4" in repr(a) and "(20 B, align 4)" in repr(a)


# -- size_in_bytes ------------------------------------------------------------------------------------------------


def test_size_in_bytes_counts_the_cosize_in_whole_bytes():
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    assert cute.size_in_bytes(cute.Float16, cute.Layout((8, 64), (64, 1))) == 1024
    assert cute.size_in_bytes(cute.Float32, cute.Layout((4, 4), (1, 8))) == 4 * 28  # cosize 3 + 24 + 1
    assert cute.size_in_bytes(cute.Int8, cute.Layout(5, 3)) == 13
    assert cute.size_in_bytes(cute.Boolean, cute.Layout(10)) == 10
    assert cute.size_in_bytes(cute.Float64, cute.Layout((2, 3), (0, 1))) == 24  # a broadcast mode adds nothing
    assert cute.size_in_bytes(cute.Float16, atom) == 1024
    assert cute.size_in_bytes(cute.Float16, cute.tile_to_shape(atom, (64, 64))) == 8192
    unflagged = cute.make_composed_layout(cute.Swizzle(3, 4, 3), 0, cute.Layout((8, 64), (64, 1)))
    assert cute.size_in_bytes(cute.Float16, unflagged) == 1024
    assert cute.size_in_bytes(cute.Float16, None) == 0
    # a composed layout with a layout as its inner function: the inner layout's cosize (15), as the DSL counts it
    assert cute.size_in_bytes(cute.Float32, cute.make_composed_layout(cute.Layout(8, 2), 0, cute.Layout(4))) == 60


@pytest.mark.parametrize("dtype,layout", [("nope", cute.Layout(4)), (int, cute.Layout(4)),
                                          (cute.Float16, (8, 64)), (cute.Float16, 8)])
def test_size_in_bytes_rejects_what_is_no_type_or_layout(dtype, layout):
    with pytest.raises(cute.CuteTypeError):
        cute.size_in_bytes(dtype, layout)


# -- recast_ptr ---------------------------------------------------------------------------------------------------


def test_recast_ptr_keeps_the_byte_address_and_the_alignment():
    p = Pointer("Uint8", AddressSpace.smem, 128, 256)
    f = cute.recast_ptr(p, dtype=cute.Float32)
    assert (f.dtype, f.address, f.alignment, f.memspace) == (cute.Float32, 256, 128, AddressSpace.smem)
    g = cute.recast_ptr(p + 8, dtype=cute.Float32)
    assert g.address == 264 and g.alignment == 8 and (g + 1).address == 268
    h = cute.recast_ptr(g, dtype=cute.Int8)
    assert h.address == 264 and (h + 3).address == 267
    assert cute.recast_ptr(p) is p and cute.recast_ptr(p, cute.Swizzle(0, 4, 3)) is p


def test_recast_ptr_rejects_what_it_cannot_do_exactly():
    p = Pointer("Uint8", AddressSpace.smem, 128, 256)
    with pytest.raises(cute.CuteValueError, match="2-byte aligned, a Float32 pointer needs 4-byte"):
        cute.recast_ptr(p + 2, dtype=cute.Float32)
    sw = cute.recast_ptr(p, cute.Swizzle(3, 4, 3), dtype=cute.Float16)  # a pointer that carries a swizzle
    with pytest.raises(cute.CuteValueError, match="takes no other swizzle"):
        cute.recast_ptr(sw, cute.Swizzle(2, 4, 3))
    with pytest.raises(cute.CuteValueError, match="goes with a shared-memory pointer"):
        cute.recast_ptr(Pointer("Uint8", AddressSpace.gmem, 128, 256), cute.Swizzle(3, 4, 3))
    with pytest.raises(cute.CuteTypeError, match="needs a Pointer"):
        cute.recast_ptr(256, dtype=cute.Float16)
    with pytest.raises(cute.CuteTypeError, match="Swizzle or None"):
        cute.recast_ptr(p, "S<3,4,3>")
    with pytest.raises(cute.CuteTypeError):
        cute.recast_ptr(p, dtype="no such type")


# -- hostile values: a result or a CuteError, never another exception ----------------------------------------------

HOSTILE = [-1, 0, 3, 2**70, 1.5, float("nan"), None, "4", "", b"4", True, [2, 4], (2, None), (), object(),
           {2: 4}, cute.Layout((2, 2), (1, 2)), cute.Layout(4, -1), cute.Layout(4, 0), cute.Swizzle(1, 1, 1),
           cute.E(0), cute.Float32, cute.AddressSpace.smem, cute.struct.MemRange, cute.struct.Align,
           Pointer("Uint8", AddressSpace.smem, 128, 256), Pointer("Float32", AddressSpace.gmem, 4, None, 3),
           cute.make_composed_layout(cute.Swizzle(3, 4, 3), 0, cute.Layout(8)),
           cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16), cute.Layout(4, cute.E(1))]


@given(st.sampled_from(HOSTILE), st.sampled_from(HOSTILE), st.sampled_from(HOSTILE))
def test_hostile_arguments_give_a_result_or_a_cute_error(a, b, c):
    calls = [lambda: cute.recast_ptr(a, b, c), lambda: cute.recast_ptr(a, dtype=b), lambda: cute.size_in_bytes(a, b),
             lambda: cute.struct.MemRange[a, b], lambda: cute.struct.Align[a, b], lambda: cute.struct.MemRange[a],
             lambda: cute.struct(type("H", (), {"__annotations__": {"x": a, "y": b}})),
             lambda: cute.struct.align_offset(a, b)]
    for call in calls:
        try:
            call()
        except cute.CuteError:
            pass
