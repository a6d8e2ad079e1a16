"""On a Hopper GPU: a ``@cute.struct`` in shared memory, poisoned byte by byte, written through each of its fields
(scalars of 1, 2, 8 bytes, ranges of Int32, Uint8 and Int64, a nested struct, an ``Align``-ed Float16, and a
128B-swizzled fp16 tile made the DSL's way), then copied byte by byte into global memory: every one of its bytes
is checked against the C layout (offsets written here by hand) and the hardware's 128B swizzle, the padding still
poisoned. The PTX is built and assembled first, everywhere."""

import struct as pystruct

import pytest

try:
    __import__("mlir_dialects.bindings")
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
THREADS = 128
POISON = 0xA5
SW128 = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)   # S<3,4,3> o smem_ptr[16b] o (8,64):(64,1)


@cute.struct
class Pair:
    lo: cute.Int16                                                              # 0..2
    hi: cute.Float64                                                            # 8..16


@cute.struct
class Storage:
    flag: cute.Int8                                                             # 0
    words: cute.struct.MemRange[cute.Int32, 5]                                  # 4..24
    pair: Pair                                                                  # 24..40
    half: cute.struct.Align[cute.Float16, 64]                                   # 64..66
    raw: cute.struct.MemRange[cute.Uint8, 7]                                    # 66..73
    wide: cute.Int64                                                            # 80..88
    longs: cute.struct.MemRange[cute.Int64, 2]                                  # 88..104
    tile: cute.struct.Align[cute.struct.MemRange[cute.Float16, 8 * 64], 1024]   # 1024..2048
    tail: cute.Uint16                                                           # 2048..2050


SIZE = 3072  # 2050 rounded up to the struct's 1024-byte alignment
WIDE = 0x0123456789ABCDEF
HI = 3.141592653589793


@cute.kernel
def struct_bytes(out):
    tid, _, _ = cute.arch.thread_idx()
    storage = cute.utils.SmemAllocator().allocate(Storage)
    raw_bytes = cute.make_tensor(storage.base, cute.make_layout(SIZE))
    for j in range(SIZE // THREADS):
        raw_bytes[tid + THREADS * j] = POISON
    cute.arch.sync_threads()
    if tid == 0:
        storage.flag = -7
        storage.pair.lo = -12345
        storage.pair.hi = HI
        storage.half = 1.5
        storage.wide = WIDE
        storage.longs[0] = -2
        storage.longs[1] = 1 << 40
        storage.tail.store(0xBEEF)
    if tid < 5:
        storage.words[tid] = tid * 1000003 - 17
    if tid < 7:
        storage.raw[tid] = tid + 200
    tile = storage.tile.get_tensor(SW128.outer, swizzle=SW128.inner)
    for j in range(4):
        e = tid * 4 + j
        tile[e // 64, e % 64] = cute.Float16(e)
    cute.arch.sync_threads()
    for j in range(SIZE // THREADS):
        out[tid + THREADS * j] = raw_bytes[tid + THREADS * j]


@cute.jit
def run(out):
    struct_bytes(out).launch(grid=1, block=THREADS, smem=Storage.size_in_bytes())


def expected_bytes():
    """The struct's bytes, from the offsets above and the hardware's 128B swizzle (bits 7-9 of a byte offset
    from the 1024-byte aligned tile XOR into bits 4-6)."""
    b = bytearray([POISON] * SIZE)

    def put(offset, fmt, value):
        data = pystruct.pack("<" + fmt, value)
        b[offset:offset + len(data)] = data

    put(0, "b", -7)
    for i in range(5):
        put(4 + 4 * i, "i", i * 1000003 - 17)
    put(24, "h", -12345)
    put(32, "d", HI)
    put(64, "e", 1.5)
    for i in range(7):
        put(66 + i, "B", i + 200)
    put(80, "q", WIDE)
    put(88, "q", -2)
    put(96, "q", 1 << 40)
    for e in range(512):
        byte = 2 * e  # (e // 64, e % 64) of the row-major (8,64) tile
        put(1024 + (byte ^ (((byte >> 7) & 7) << 4)), "e", float(e))
    put(2048, "H", 0xBEEF)
    return bytes(b)


def test_the_struct_kernel_builds_and_assembles(assemble_ptx):
    assert Storage.size_in_bytes() == SIZE and Storage.__alignof__() == 1024
    c = cute.compile(run, DeviceArraySpec("Uint8", (SIZE,)))
    assert c.smem["struct_bytes_0"] == SIZE
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


def test_every_byte_of_the_struct_is_written_where_the_c_layout_puts_it():
    torch = hopper_torch()
    out = torch.zeros(SIZE, dtype=torch.uint8, device="cuda")
    run(out)
    torch.cuda.synchronize()
    got, want = bytes(out.cpu().numpy().tobytes()), expected_bytes()
    bad = [i for i in range(SIZE) if got[i] != want[i]]
    assert not bad, f"{len(bad)} wrong bytes, first at {bad[:8]}: got {[got[i] for i in bad[:8]]}, " \
                    f"want {[want[i] for i in bad[:8]]}"
