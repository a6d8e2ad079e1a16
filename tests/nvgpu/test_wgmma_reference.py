"""The numpy execution of one WGMMA (``cute_py.reference.warpgroup``) against plain numpy, and the law that joins the
descriptor to the layout: the operand a ``make_gmma_desc`` descriptor names, read back with the canonical GMMA
decoding of CuTe C++ and the hardware's byte swizzle, is exactly the tile written through the layout itself."""

import numpy as np
import pytest

import cute_py as cute
from cute_py.reference import warpgroup as R
from cute_py.core.tiling import tile_to_shape
from cute_py.nvgpu import warpgroup as wg
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K, make_smem_layout_atom
from cute_py.nvgpu.warpgroup import OperandMajorMode as OpM
from cute_py.tensor.pointer import AddressSpace, Pointer

KINDS = list(K)
SMEM = 1 << 17


def _bits16(values, dtype):
    if dtype == "Float16":
        return values.astype(np.float16).view(np.uint16)
    f = values.astype(np.float32).view(np.uint32)
    return ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


def _write(smem, base, layout, values_bits):
    """Write the ``(mn, k)`` tile through ``layout`` (element offsets, swizzle from an aligned base)."""
    pil = cute.as_position_independent_swizzle_layout(layout)
    mn, k = values_bits.shape
    for r in range(mn):
        for c in range(k):
            byte = base + 2 * pil((r, c))
            smem[byte], smem[byte + 1] = values_bits[r, c] & 0xFF, values_bits[r, c] >> 8


def _tile(kind, mn):
    """The smallest canonical tile of ``kind`` with ``mn`` rows holding whole 16-wide k-blocks."""
    atom = make_smem_layout_atom(kind, 16)
    return tile_to_shape(atom, (mn, max(16, atom.shape[1] if isinstance(atom.shape[1], int) else 16)))


def _descs(layout, kind, base):
    """The descriptor of each 16-wide k-block of the tile at byte ``base`` (its start from the sub-tensor)."""
    major = OpM.K if kind.major == "K" else OpM.MN
    ptr = Pointer(cute.Float16, AddressSpace.smem, alignment=1024, address=base)
    t = cute.make_tensor(ptr, layout)
    out = []
    for kb in range(cute.size(layout, mode=[1]) // 16):
        d = wg.make_gmma_desc(cute.local_tile(t, (cute.size(layout, mode=[0]), 16), (0, kb)), major)
        out.append(wg.encode_gmma_desc(d.start.address, d.leading_byte_offset, d.stride_byte_offset, d.layout_type))
    return out, kind.major == "K"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@pytest.mark.parametrize("dtype", ["Float16", "BFloat16"])
def test_the_descriptor_names_exactly_the_tile_written_through_its_layout(kind, dtype):
    rng = np.random.default_rng(hash((kind.name, dtype)) % 2**32)
    for mn in (64, 128):
        layout = _tile(kind, mn)
        smem = np.zeros(SMEM, dtype=np.uint8)
        bits = _bits16(rng.standard_normal(tuple(cute.size(layout, mode=[m]) for m in (0, 1))), dtype)
        _write(smem, 4096, layout, bits)
        descs, k_major = _descs(layout, kind, 4096)
        want = R._to_float(bits.reshape(-1).copy(), dtype).reshape(bits.shape)
        for kb, desc in enumerate(descs):
            got = R.wgmma_operand(smem, desc, k_major, mn, dtype)
            assert np.array_equal(got, want[:, 16 * kb:16 * kb + 16]), (kind.name, mn, kb)


@pytest.mark.parametrize("kind_a, kind_b", [(K.K_SW128, K.K_SW128), (K.MN_SW128, K.K_SW64), (K.K_INTER, K.MN_SW32),
                                            (K.MN_INTER, K.MN_SW64)], ids=lambda k: k.name)
@pytest.mark.parametrize("n", [8, 64, 256])
def test_one_wgmma_is_a_times_b_transposed_in_the_ptx_fragment_order(kind_a, kind_b, n):
    rng = np.random.default_rng(n)
    smem = np.zeros(SMEM, dtype=np.uint8)
    la, lb = _tile(kind_a, 64), _tile(kind_b, max(n, 64))
    shape = lambda lay: tuple(cute.size(lay, mode=[m]) for m in (0, 1))  # noqa: E731
    a, b = _bits16(rng.standard_normal(shape(la)), "BFloat16"), _bits16(rng.standard_normal(shape(lb)), "BFloat16")
    _write(smem, 0, la, a)
    _write(smem, 65536, lb, b)
    (da, *_), ak = _descs(la, kind_a, 0)
    (db, *_), bk = _descs(lb, kind_b, 65536)
    acc = rng.standard_normal((128, n // 2)).astype(np.float32)
    got = R.wgmma(smem, da, db, acc, n, "BFloat16", ak, bk)
    fa = R._to_float(a.reshape(-1).copy(), "BFloat16").reshape(a.shape)[:, :16]
    fb = R._to_float(b.reshape(-1).copy(), "BFloat16").reshape(b.shape)[:n, :16]
    d = fa.astype(np.float64) @ fb.astype(np.float64).T
    for t in range(128):
        for i in range(n // 2):
            row, col = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2), 2 * (t % 4) + i % 2 + 8 * (i // 4)
            assert abs(got[t, i] - np.float32(acc[t, i] + d[row, col])) <= 1e-6 * max(1.0, abs(d[row, col]))


@pytest.mark.parametrize("n", [8, 136, 256])
def test_the_ptx_fragment_rule_is_the_ops_c_layout(n):
    c = wg.MmaF16BF16Op(cute.BFloat16, cute.Float32, (64, n, 16)).tv_layout_C
    for t in range(128):
        for i in range(n // 2):
            row, col = R.c_fragment_coord(t, i)
            assert c((t, i)) == row + 64 * col
