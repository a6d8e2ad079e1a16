"""Stores into a peer CTA's shared memory (``CopyDsmemStoreOp``): the PTX of each width, and every misuse an
error at the user's line."""

import inspect
import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync
from _trace_checks import kernel_line

F = cute.compiler.DeviceArraySpec


@cute.kernel
def dsmem_kernel(g, case, bits):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    box = smem.allocate_tensor(g.element_type, cute.Layout(256))
    bar = smem.allocate_mbarrier()
    other_bar = smem.allocate_mbarrier()
    frag = cute.make_fragment(cute.Layout(8), g.element_type)
    cute.copy(cute.local_tile(g, (8,), (tid,)), frag)
    remote = cute.make_tensor(arch.map_dsmem_ptr(box.engine, 1), cute.Layout(256))
    atom = cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), g.element_type, num_bits_per_copy=bits)
    mine = cute.local_tile(remote, (8,), (tid,))
    if case == "ok":
        cute.copy(atom, frag, mine, mbar_ptr=arch.map_dsmem_ptr(bar, 1))
    elif case == "no_mbar":
        cute.copy(atom, frag, mine)
    elif case == "local_mbar":
        cute.copy(atom, frag, mine, mbar_ptr=bar)
    elif case == "other_cta_mbar":
        cute.copy(atom, frag, mine, mbar_ptr=arch.map_dsmem_ptr(other_bar, 0))
    elif case == "local_dst":
        cute.copy(atom, frag, cute.local_tile(box, (8,), (tid,)), mbar_ptr=arch.map_dsmem_ptr(bar, 1))
    elif case == "smem_src":
        cute.copy(atom, cute.local_tile(box, (8,), (tid,)), mine, mbar_ptr=arch.map_dsmem_ptr(bar, 1))
    elif case == "strided_dst":
        strided = cute.make_tensor(remote.engine + tid, cute.Layout(8, 32))
        cute.copy(atom, frag, strided, mbar_ptr=arch.map_dsmem_ptr(bar, 1))
    elif case == "bad_rank":
        arch.map_dsmem_ptr(bar, 16)
    elif case == "gmem_map":
        arch.map_dsmem_ptr(g.engine, 1)
    elif case == "plain_store":
        remote[tid] = 1.0
    elif case == "plain_load":
        g[tid] = remote[tid]


@cute.jit
def dsmem(g, case, bits=128):
    dsmem_kernel(g, case, bits).launch(grid=2, block=32, cluster=(2, 1, 1))


@pytest.mark.parametrize("dtype, bits, suffix, count", [
    ("Float32", 128, ".v4.b32", 2), ("Float32", 64, ".b64", 4), ("Float32", 32, ".b32", 8),
    ("Float16", 128, ".v4.b32", 1), ("Int32", 64, ".b64", 4)])
def test_each_store_width_is_one_st_async(dtype, bits, suffix, count):
    c = cute.compile(dsmem, F(dtype, (256,)), "ok", bits)
    stores = re.findall(r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes(\S*) ", c.ptx)
    assert stores == [suffix] * count
    assert c.ptx.count("mapa.shared::cluster.u32") == 2 * count


@pytest.mark.parametrize("case, line, fragment", [
    ("no_mbar", "cute.copy(atom, frag, mine)", "a DSMEM store needs mbar_ptr="),
    ("local_mbar", "mbar_ptr=bar)", "the mbarrier must be in a peer CTA's shared memory (arch.map_dsmem_ptr)"),
    ("other_cta_mbar", "map_dsmem_ptr(other_bar, 0)", "the tile is mapped to CTA 1, the mbarrier to CTA 0"),
    ("local_dst", "cute.local_tile(box, (8,), (tid,)), mbar_ptr", "writes a tensor over a peer CTA's shared memory"),
    ("smem_src", "cute.copy(atom, cute.local_tile(box", "a DSMEM store copies a register fragment"),
    ("strided_dst", "cute.copy(atom, frag, strided", "are not adjacent: a 16-byte st.async"),
    ("bad_rank", "arch.map_dsmem_ptr(bar, 16)", "a CTA rank in a cluster is in 0..15, got 16"),
    ("gmem_map", "arch.map_dsmem_ptr(g.engine, 1)", "map_dsmem_ptr maps a shared-memory pointer of this CTA"),
    # a peer pointer's value is this CTA's offset: a plain access through it would touch this CTA's memory
    ("plain_store", "remote[tid] = 1.0", "tensor store: loads and stores go to shared or global memory, got dsmem_ptr"),
    ("plain_load", "g[tid] = remote[tid]", "tensor load: loads and stores go to shared or global memory, got dsmem_ptr"),
])
def test_dsmem_store_misuse_is_an_error_at_its_line(case, line, fragment):
    with pytest.raises(cute.CuteError) as e:
        cute.compile(dsmem, F("Float32", (256,)), case)
    path = inspect.getsourcefile(dsmem_kernel.fn)
    msg = str(e.value)
    assert msg.startswith(f"{path}:{kernel_line(dsmem_kernel, line)}: "), msg
    assert fragment in msg, msg
