"""``@cute.struct`` in kernels, compiled to PTX without a GPU: ``SmemAllocator().allocate(Struct)`` and writes
through every kind of field land at the byte offsets the C rules give (read from the PTX's shared-memory
addresses), the launch gets the struct's size, a 128B-swizzled fp16 tile made the DSL's way
(``get_tensor(layout.outer, swizzle=layout.inner)``) addresses the bytes the hardware swizzle gives (computed here
by hand), the DSL's ``allocate_array`` / ``allocate_tensor`` / ``allocate(type)`` forms, and the misuses that are
errors at the user's line."""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import ArgumentError, DeviceArraySpec, TraceError
from cute_py.utils import SmemAllocator

SW128 = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)  # S<3,4,3> o smem_ptr[16b] o (8,64):(64,1)


@cute.struct
class Pair:
    lo: cute.Int16      # 0
    hi: cute.Float64    # 8 (size 16, align 8)


@cute.struct
class Storage:
    bars: cute.struct.MemRange[cute.Int64, 4]                                   # 0..32
    flag: cute.Int8                                                             # 32
    words: cute.struct.MemRange[cute.Int32, 5]                                  # 36..56
    pair: Pair                                                                  # 56..72
    half: cute.struct.Align[cute.Float16, 64]                                   # 128..130
    tile: cute.struct.Align[cute.struct.MemRange[cute.Float16, 8 * 64], 1024]   # 1024..2048
    tail: cute.Uint8                                                            # 2048 (size 3072)


STORAGE_SIZE = 3072


def _smem_stores(ptx):
    """``{byte offset: width}`` of every ``st.shared`` at a static offset of the dynamic shared memory."""
    out = {}
    for width, off in re.findall(r"st\.shared\.b(\d+)\s+\[__cute_py_dyn_smem(?:\+(\d+))?\]", ptx):
        out[int(off or 0)] = int(width)
    return out


def _compile(kernel, *args, smem=None, block=32):
    def host(g):
        kernel(g, *args).launch(grid=1, block=block, smem=smem)

    return cute.compile(host, DeviceArraySpec("Int32", (32,)))


@cute.kernel
def write_fields(g):
    tid, _, _ = arch.thread_idx()
    storage = SmemAllocator().allocate(Storage)
    storage.flag = 5
    storage.words[3] = tid
    storage.pair.lo = 7
    storage.pair.hi.store(2.5)
    storage.half = 1.5
    storage.tile[17] = 3.0
    storage.tail = 9
    storage.bars[2] = 11
    arch.mbarrier_init(storage.bars.data_ptr() + 1, 1)
    g[tid] = cute.Int32(storage.words[3])


def test_writes_through_each_field_land_at_the_c_offsets(assemble):
    c = _compile(write_fields)
    stores = _smem_stores(c.ptx)
    # flag @32 (b8), words[3] @36 + 12, pair.lo @56, pair.hi @64, half @128, tile[17] @1024 + 34, tail @2048,
    # bars[2] @16
    assert stores == {32: 8, 48: 32, 56: 16, 64: 64, 128: 16, 1058: 16, 2048: 8, 16: 64}
    assert re.search(r"mbarrier\.init\.shared\.b64\s+\[__cute_py_dyn_smem\+8\]", c.ptx)
    assert c.smem["write_fields_0"] == STORAGE_SIZE == Storage.size_in_bytes()
    assemble(c.ptx)


def _swizzle_128b(byte):
    """The hardware's 128B swizzle of a byte offset from a 1024-byte aligned base: bits 7-9 XOR into bits 4-6."""
    return byte ^ (((byte >> 7) & 0b111) << 4)


COORDS = [(0, 0), (1, 1), (3, 10), (7, 63), (5, 8), (2, 33)]


@cute.kernel
def swizzled_tile(g, layout, how):
    smem = SmemAllocator()
    if how == "struct":
        storage = smem.allocate(Storage)
        s = storage.tile.get_tensor(layout.outer, swizzle=layout.inner)
    else:
        smem.allocate(1024, 1024)
        s = smem.allocate_tensor(cute.Float16, layout)
    for i, (r, k) in enumerate(COORDS):
        s[r, k] = float(i + 1)


@pytest.mark.parametrize("how", ["struct", "allocate_tensor"])
def test_a_128b_swizzled_fp16_tile_addresses_the_hardware_swizzled_bytes(how):
    c = _compile(swizzled_tile, SW128, how)
    stores = _smem_stores(c.ptx)
    expected = {1024 + _swizzle_128b(2 * (64 * r + k)): 16 for r, k in COORDS}
    assert stores == expected
    # by hand: (1,1) is byte 130 of the tile, swizzled to 146; (7,63) is byte 1022, swizzled to 910
    assert 1024 + 146 in stores and 1024 + 910 in stores and 1024 + 0 in stores


def test_the_tensor_of_get_tensor_swizzles_byte_addresses_as_the_dsl_marks_it():
    seen = {}

    @cute.kernel
    def k(g):
        storage = SmemAllocator().allocate(Storage)
        seen["t"] = storage.tile.get_tensor(SW128.outer, swizzle=SW128.inner)
        seen["plain"] = storage.words.get_tensor(cute.Layout(5))

    _compile(k)
    t = seen["t"]
    assert t.element_type is cute.Float16 and t.engine.address == 1024 and t.engine.alignment == 1024
    assert str(t.layout) == "S<3,3,3> o 0 o (8,64):(64,1)"   # the byte swizzle, in fp16 element units
    assert seen["plain"].engine.address == 36 and seen["plain"].element_type is cute.Int32


@cute.kernel
def dsl_forms(g, seen):
    smem = SmemAllocator()
    storage = smem.allocate(Pair)                                    # 0..16
    seen["pair"] = storage.base.address
    seen["one"] = smem.allocate(cute.Int32).address                  # 16
    seen["array"] = smem.allocate_array(cute.Int64, 3)               # 24..48
    seen["tensor"] = smem.allocate_tensor(cute.Float32, cute.Layout((4, 4)), 16).engine   # 48..112
    seen["swz"] = smem.allocate_tensor(cute.Float16, SW128.outer, swizzle=SW128.inner)     # 1024..2048
    seen["raw"] = smem.allocate(10, 4).address                        # 2048
    seen["n"] = smem.allocate_tensor(cute.Int8, 7).engine.address     # 2176 (a TMA tile: 128-byte aligned), 7 B
    seen["total"] = smem.total


def test_the_dsl_allocation_forms():
    seen = {}
    c = _compile(dsl_forms, seen)
    assert seen["pair"] == 0 and seen["one"] == 16
    assert seen["array"].dtype is cute.Int64 and seen["array"].address == 24 and seen["array"].alignment == 8
    assert seen["tensor"].address == 128 and seen["tensor"].alignment == 128   # the TMA alignment of a tile
    assert seen["swz"].engine.address == 1024 and str(seen["swz"].layout) == "S<3,3,3> o 0 o (8,64):(64,1)"
    assert seen["raw"] == 2048 and seen["n"] == 2176 and seen["total"] == 2183
    assert c.smem["dsl_forms_0"] == 2183


def test_the_host_declaration_sizes_the_launch():
    c = _compile(write_fields, smem=Storage.size_in_bytes())
    assert c.smem["write_fields_0"] == STORAGE_SIZE
    with pytest.raises(ArgumentError, match=rf"launch\(smem=3071\) of write_fields_0 is less than the {STORAGE_SIZE}"):
        _compile(write_fields, smem=STORAGE_SIZE - 1)


@cute.kernel
def allocate_given(g, storage_type):
    SmemAllocator().allocate(storage_type).flag = 1


def test_a_struct_passed_to_a_kernel_specialises_it():
    def other(n):
        @cute.struct
        class Storage:  # same name, another layout
            bars: cute.struct.MemRange[cute.Int64, n]
            flag: cute.Int8
        return Storage

    a, b = _compile(allocate_given, other(2)), _compile(allocate_given, other(5))
    assert a.smem["allocate_given_0"] == 24 and b.smem["allocate_given_0"] == 48
    assert list(_smem_stores(a.ptx)) == [16] and list(_smem_stores(b.ptx)) == [40]


@cute.kernel
def run_time_index(g):
    tid, _, _ = arch.thread_idx()
    storage = SmemAllocator().allocate(Storage)
    storage.words[tid % 5] = tid
    g[tid] = storage.words[(tid + 1) % 5]


def test_a_run_time_index_into_a_memrange(assemble):
    c = _compile(run_time_index)
    # words starts at byte 36: the run-time element offset * 4 is added to it
    assert len(re.findall(r"st\.shared\.b32\s+\[%rd\d+\+36\]", c.ptx)) == 1
    assert len(re.findall(r"ld\.shared\.b32\s+%r\d+, \[%rd\d+\+36\]", c.ptx)) == 1
    assemble(c.ptx)


# -- errors at the user's line -------------------------------------------------------------------------------------


@cute.struct
class Huge:
    bars: cute.struct.MemRange[cute.Int64, 2]
    data: cute.struct.Align[cute.struct.MemRange[cute.Float32, 58 * 1024], 1024]   # 232448 bytes from 1024


@cute.struct
class Unaligned:
    bars: cute.struct.MemRange[cute.Int64, 2]
    tile: cute.struct.MemRange[cute.Float16, 8 * 64]    # at 16: not on the 1024-byte swizzle repeat


@cute.struct
class Empty:
    marker: cute.struct.MemRange[cute.Int64, 0]
    x: cute.Int32


@cute.struct
class TooAligned:
    x: cute.struct.Align[cute.Int32, 2048]


def _error(kernel, error=TraceError):
    with pytest.raises(error) as info:
        _compile(kernel)
    return str(info.value)


def test_a_struct_beyond_227_kb_is_an_error_naming_its_size():
    @cute.kernel
    def k(g):
        SmemAllocator().allocate(Huge)

    msg = _error(k)
    assert "test_smem_struct_kernels.py" in msg and "shared memory overflow" in msg
    assert "cute.struct::Huge (238592 bytes)" in msg and "more than the 232448" in msg


def test_a_swizzled_tile_needs_a_field_aligned_to_the_swizzle():
    @cute.kernel
    def k(g):
        SmemAllocator().allocate(Unaligned).tile.get_tensor(SW128.outer, swizzle=SW128.inner)

    msg = _error(k, cute.CuteValueError)
    assert "Unaligned.tile.get_tensor: the swizzle" in msg and "repeats every 1024 bytes" in msg
    assert "struct.Align[..., 1024]" in msg


@pytest.mark.parametrize("layout,match", [
    (cute.Layout((8, 65), (65, 1)), "reaches byte 1039, past the 1024 bytes"),
    (cute.Layout(4, -1), "below the start of its storage"),
])
def test_a_tensor_outside_its_memrange_is_an_error(layout, match):
    @cute.kernel
    def k(g):
        SmemAllocator().allocate(Storage).tile.get_tensor(layout)

    assert re.search(match, _error(k, cute.CuteValueError))


@cute.struct
class Short:
    tile: cute.struct.Align[cute.struct.MemRange[cute.Float16, 104], 1024]   # 208 bytes
    more: cute.struct.Align[cute.struct.MemRange[cute.Float16, 108], 1024]   # 216 bytes


# 100 fp16 elements are bytes [0, 200), but the 128B swizzle moves bytes 128..199 within their 128-byte row:
# the last byte written is the largest swizzled byte
PARTIAL_END = max(_swizzle_128b(2 * e) for e in range(100)) + 2


def test_a_partial_swizzle_block_counts_its_swizzled_bytes():
    assert PARTIAL_END == 216
    seen = {}

    @cute.kernel
    def fits(g):
        smem = SmemAllocator()
        seen["t"] = smem.allocate(Short).more.get_tensor(cute.Layout(100), swizzle=SW128.inner)
        start = smem.total
        seen["s"] = smem.allocate_tensor(cute.Float16, cute.Layout(100), swizzle=SW128.inner)
        seen["bytes"] = smem.total - seen["s"].engine.address
        seen["start"] = start

    @cute.kernel
    def overflows(g):
        SmemAllocator().allocate(Short).tile.get_tensor(cute.Layout(100), swizzle=SW128.inner)

    _compile(fits)
    assert seen["bytes"] == PARTIAL_END and seen["s"].engine.address % 1024 == 0
    assert re.search(rf"reaches byte {PARTIAL_END - 1}, past the 208 bytes", _error(overflows, cute.CuteValueError))


@pytest.mark.parametrize("body,error,match", [
    (lambda s: s.bars[4], cute.CuteIndexError, "the coordinate 4 is outside the shape 4"),
    (lambda s: s.words.__setitem__(-1, 0), cute.CuteIndexError, "the coordinate -1 is outside the shape 5"),
    (lambda s: setattr(s, "bars", 3), cute.CuteTypeError, "only a scalar field of cute.struct::Storage can be "
                                                           "assigned, not 'bars'"),
    (lambda s: setattr(s, "pair", 3), cute.CuteTypeError, "not 'pair'"),
    (lambda s: arch.mbarrier_init(s.tile.data_ptr(), 1), TraceError,
     r"lies in the struct field Storage\.tile \(Float16 x 512\)"),
    (lambda s: arch.mbarrier_init(cute.recast_ptr(s.pair.hi.ptr, dtype=cute.Int64), 1), TraceError,
     r"the address 64 lies in the struct field Storage\.pair\.hi \(Float64\)"),
])
def test_misuses_of_fields_are_errors(body, error, match):
    @cute.kernel
    def k(g):
        body(SmemAllocator().allocate(Storage))

    assert re.search(match, _error(k, error))


def test_a_whole_swizzled_layout_is_accepted_without_a_swizzle_argument():
    seen = {}

    @cute.kernel
    def k(g):
        seen["t"] = SmemAllocator().allocate(Storage).tile.get_tensor(SW128)

    _compile(k)
    assert str(seen["t"].layout) == "S<3,3,3> o 0 o (8,64):(64,1)"


def test_a_composed_layout_and_a_swizzle_together_are_rejected():
    @cute.kernel
    def k(g):
        SmemAllocator().allocate(Storage).tile.get_tensor(SW128, swizzle=SW128.inner)

    assert "a swizzle goes with a plain layout" in _error(k, cute.CuteTypeError)


def test_a_zero_length_range_has_an_address_but_no_tensor():
    seen = {}

    @cute.kernel
    def k(g):
        storage = SmemAllocator().allocate(Empty)
        seen["marker"] = storage.marker.data_ptr()
        storage.marker.get_tensor(cute.Layout(1))

    assert "MemRange of 0 elements: it holds no tensor" in _error(k, cute.CuteValueError)
    assert seen["marker"].address == 0 and seen["marker"].dtype is cute.Int64


def test_alignments_beyond_the_shared_memory_base_are_rejected():
    @cute.kernel
    def k(g):
        SmemAllocator().allocate(TooAligned)

    assert "power of two up to 1024, got 2048" in _error(k)


def test_a_struct_over_a_pointer_that_is_no_byte_pointer_or_misaligned_is_rejected():
    @cute.kernel
    def wide(g):
        Pair(SmemAllocator().allocate_array(cute.Int32, 8))

    @cute.kernel
    def misaligned(g):
        smem = SmemAllocator()
        Pair(smem.allocate(16, 8) + 4)

    assert "base must be a pointer to bytes" in _error(wide, cute.CuteTypeError)
    assert "needs 8-byte alignment" in _error(misaligned, cute.CuteValueError)


def test_allocate_rejects_what_is_no_size_type_or_struct():
    for bad in (0, -4, 2.5, "x", Pair.fields[0], None):
        @cute.kernel
        def k(g):
            SmemAllocator().allocate(bad)

        assert "allocate needs a positive static byte count" in _error(k)
    for args, match in (((cute.Int32, 0), "at least 1 element"), ((int, 4), "needs a numeric type"),
                        ((cute.Int32, 2.0), "static int element count")):
        @cute.kernel
        def k(g):
            SmemAllocator().allocate_array(*args)

        assert match in _error(k)


def test_capacity():
    assert SmemAllocator.capacity_in_bytes() == SmemAllocator.capacity_in_bytes("sm_90") == 227 * 1024
    assert cute.utils.get_smem_capacity_in_bytes("sm_90a") == 227 * 1024
    # the capacities of the other architectures, as the DSL's table gives them (an Ampere kernel sizes its stages so)
    assert SmemAllocator.capacity_in_bytes("sm_80") == 163 * 1024
    assert SmemAllocator.capacity_in_bytes("sm_86") == 99 * 1024
    assert SmemAllocator.capacity_in_bytes("sm_100a") == 227 * 1024
    with pytest.raises(cute.CuteValueError, match="no shared-memory capacity known for compute capability 'sm_70'"):
        SmemAllocator.capacity_in_bytes("sm_70")


# -- hostile values in a kernel: a kernel or a CuteError, never another exception -----------------------------------

HOSTILE = [-1, 0, 1, 3, 2**31, 2**70, 1.5, float("nan"), None, "4", True, [2, 4], (), (2, None), object(), {2: 4},
           cute.Layout(4), cute.Layout(4, -1), cute.Layout((8, 64), (64, 1)), cute.Layout(4, cute.E(1)),
           cute.Float32, cute.Int64, cute.AddressSpace.smem, cute.Swizzle(3, 4, 3), cute.Swizzle(1, 1, 1), SW128,
           Pair, Storage, Huge]
CASES = {
    "allocate": lambda a, v: a.allocate(v),
    "allocate alignment": lambda a, v: a.allocate(64, v),
    "allocate type alignment": lambda a, v: a.allocate(cute.Int32, byte_alignment=v),
    "allocate_array count": lambda a, v: a.allocate_array(cute.Int32, v),
    "allocate_array type": lambda a, v: a.allocate_array(v, 2),
    "allocate_tensor layout": lambda a, v: a.allocate_tensor(cute.Float16, v),
    "allocate_tensor swizzle": lambda a, v: a.allocate_tensor(cute.Float16, cute.Layout((8, 64), (64, 1)), swizzle=v),
    "allocate_tensor alignment": lambda a, v: a.allocate_tensor(cute.Float16, cute.Layout(64), v),
    "get_tensor layout": lambda a, v: a.allocate(Storage).tile.get_tensor(v),
    "get_tensor swizzle": lambda a, v: a.allocate(Storage).tile.get_tensor(cute.Layout((8, 64), (64, 1)), swizzle=v),
    "get_tensor dtype": lambda a, v: a.allocate(Storage).tile.get_tensor(cute.Layout(16), dtype=v),
    "range index": lambda a, v: a.allocate(Storage).words[v],
    "range store": lambda a, v: a.allocate(Storage).words.__setitem__(1, v),
    "scalar store": lambda a, v: setattr(a.allocate(Storage), "flag", v),
    "struct base": lambda a, v: Storage(v),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_values_in_kernels_give_a_kernel_or_a_cute_error(case):
    for v in HOSTILE:
        @cute.kernel
        def k(g):
            CASES[case](SmemAllocator(), v)

        try:
            _compile(k)
        except cute.CuteError:
            pass
