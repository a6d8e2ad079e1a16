"""Rules that must agree. A shared-memory tile under a swizzle of byte addresses needs storage aligned to the
swizzle's repeat, capped at 1024 bytes (``swizzle_alignment``): the same rule in ``MemRange.get_tensor``,
``SmemAllocator.allocate_tensor`` and ``make_tensor`` over a shared-memory pointer. And ``fill`` of a Boolean
register fragment works under a run-time branch as it does outside one."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import DeviceArraySpec, TraceError
from cute_py.core.composed import ComposedLayout, SmemPtrFlag
from cute_py.core.swizzle import Swizzle, swizzle_alignment
from cute_py.errors import CuteError
from cute_py.tensor.pointer import AddressSpace, Pointer
from cute_py.utils import SmemAllocator

TILE = cute.Layout((8, 64), (64, 1))


@cute.struct
class Tiles:
    pad: cute.Int8
    a128: cute.struct.Align[cute.struct.MemRange[cute.Float16, 8 * 64 * 4], 128]
    a1024: cute.struct.Align[cute.struct.MemRange[cute.Float16, 8 * 64 * 4], 1024]


def _compile(kernel, *args):
    @cute.jit
    def host(g):
        kernel(g, *args).launch(grid=1, block=32)

    return cute.compile(host, DeviceArraySpec("Float32", (4,)))


# (composed layout over fp16, byte alignment it needs): S<3,3,4> read in fp16 elements is the byte swizzle
# S<3,4,4>, repeating every 2048 bytes; no hardware swizzle repeats past 1024, so 1024 is enough
CASES = [
    (ComposedLayout(Swizzle(3, 3, 4), 0, TILE), 1024),
    (ComposedLayout(Swizzle(3, 4, 3), SmemPtrFlag(16), TILE), 1024),   # 128B
    (ComposedLayout(Swizzle(2, 4, 3), SmemPtrFlag(16), TILE), 512),    # 64B
    (ComposedLayout(Swizzle(1, 4, 3), SmemPtrFlag(16), TILE), 256),    # 32B
    (ComposedLayout(Swizzle(3, 3, 4), SmemPtrFlag(16), TILE), 1024),
]


def test_swizzle_alignment_is_the_repeat_capped_at_1024():
    assert swizzle_alignment(Swizzle(3, 4, 3)) == 1024 and swizzle_alignment(Swizzle(1, 4, 3)) == 256
    assert swizzle_alignment(Swizzle(3, 4, 4)) == 1024 and swizzle_alignment(Swizzle(0, 4, 3)) == 1


@pytest.mark.parametrize("layout,need", CASES, ids=[str(c[0]) for c in CASES])
def test_get_tensor_allocate_tensor_and_make_tensor_agree(layout, need):
    seen = {}

    @cute.kernel
    def k(g):
        smem = SmemAllocator()
        st = smem.allocate(Tiles)
        for name, field in (("a128", st.a128), ("a1024", st.a1024)):
            for how in ("get_tensor", "make_tensor"):
                try:
                    if how == "get_tensor":
                        field.get_tensor(layout)
                    else:
                        cute.make_tensor(field.data_ptr(), layout)
                    seen[name, how] = True
                except CuteError:
                    seen[name, how] = False
        seen["alloc"] = smem.allocate_tensor(cute.Float16, layout).engine.alignment

    _compile(k)
    for name, align in (("a128", 128), ("a1024", 1024)):
        assert seen[name, "get_tensor"] == seen[name, "make_tensor"] == (align >= need), (name, seen)
    assert seen["alloc"] >= need and seen["alloc"] <= 1024


def test_make_tensor_refuses_a_swizzled_tile_at_a_less_aligned_shared_memory_pointer():
    sw128 = ComposedLayout(Swizzle(3, 4, 3), SmemPtrFlag(16), TILE)
    with pytest.raises(CuteError, match="1024-byte aligned"):
        cute.make_tensor(Pointer(cute.Float16, AddressSpace.smem, 128, 128), sw128)
    t = cute.make_tensor(Pointer(cute.Float16, AddressSpace.smem, 1024, 2048), sw128)
    assert t.engine.address == 2048


# -- fill of a Boolean register fragment under run-time control flow ----------------------------------------


@cute.kernel
def _bool_fill(g, how):
    tid, _, _ = arch.thread_idx()
    p = cute.make_fragment_like(cute.Layout(4), cute.Boolean)
    if how == "traced_then_zero":
        for i in range(4):
            p[i] = tid + i < 20
    if tid < 16:
        if how == "traced_in_branch":
            p.fill(tid > 100)
        elif how == "boolean_scalar":
            p.fill(cute.Boolean(False))
        else:
            p.fill(0)
    elif how == "zero":
        p.fill(1)
    for i in range(4):
        if p[i]:
            g[i] = 1.0


@pytest.mark.parametrize("how", ["zero", "traced_then_zero", "traced_in_branch", "boolean_scalar"])
def test_fill_of_a_boolean_fragment_under_a_run_time_branch_compiles(how):
    c = _compile(_bool_fill, how)
    assert ".entry" in c.ptx  # (a fragment false on every path stores nothing)


def test_a_boolean_fragment_still_refuses_a_value_of_another_type_across_paths():
    with pytest.raises(TraceError):
        _compile(_bool_fill_int32)


@cute.kernel
def _bool_fill_int32(g):
    tid, _, _ = arch.thread_idx()
    p = cute.make_fragment_like(cute.Layout(4), cute.Boolean)
    if tid < 16:
        p.fill(cute.Int32(2))
    if p[0]:
        g[0] = 1.0
