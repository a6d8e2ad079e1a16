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


# -- 8-bit floats ---------------------------------------------------------------------------------------------

F8 = ["Float8E4M3FN", "Float8E5M2"]


def test_the_8_bit_decoding_is_the_ocp_formats():
    """Values of the OCP FP8 specification: E4M3 (bias 7, no infinity, S.1111.111 NaN, largest 448) and E5M2
    (bias 15, IEEE-like: largest 57344, infinities and NaNs at exponent 31), subnormals and signed zeros."""
    e4, e5 = R._f8_table("Float8E4M3FN"), R._f8_table("Float8E5M2")
    assert (e4[0x38], e4[0x7E], e4[0x01], e4[0x08], e4[0xC0]) == (1.0, 448.0, 2.0 ** -9, 2.0 ** -6, -2.0)
    assert np.isnan(e4[0x7F]) and np.isnan(e4[0xFF]) and np.isinf(e4).sum() == 0 and np.isnan(e4).sum() == 2
    assert e4[0x80] == 0 and np.signbit(e4[0x80]) and not np.signbit(e4[0x00])
    assert (e5[0x3C], e5[0x7B], e5[0x01], e5[0x04], e5[0xBC]) == (1.0, 57344.0, 2.0 ** -16, 2.0 ** -14, -1.0)
    assert e5[0x7C] == np.inf and e5[0xFC] == -np.inf and np.isnan(e5[0x7D]) and np.isnan(e5).sum() == 6
    for table in (e4, e5):      # monotone over the positive finite patterns
        finite = table[:0x80][np.isfinite(table[:0x80])]
        assert np.all(np.diff(finite) > 0)


def _f8_tile(kind, mn):
    atom = make_smem_layout_atom(kind, 8)
    return tile_to_shape(atom, (mn, max(32, atom.shape[1] if isinstance(atom.shape[1], int) else 32)))


def _write8(smem, base, layout, raw):
    pil = cute.as_position_independent_swizzle_layout(layout)
    for r in range(raw.shape[0]):
        for c in range(raw.shape[1]):
            smem[base + pil((r, c))] = raw[r, c]


def _descs8(layout, base, dtype):
    ptr = Pointer(getattr(cute, dtype), AddressSpace.smem, alignment=1024, address=base)
    t = cute.make_tensor(ptr, layout)
    out = []
    for kb in range(cute.size(layout, mode=[1]) // 32):
        d = wg.make_gmma_desc(cute.local_tile(t, (cute.size(layout, mode=[0]), 32), (0, kb)), OpM.K)
        out.append(wg.encode_gmma_desc(d.start.address, d.leading_byte_offset, d.stride_byte_offset, d.layout_type))
    return out


def _finite_bytes(rng, shape, dtype):
    """Random bit patterns of ``dtype`` that decode to finite values."""
    table = R._f8_table(dtype)
    ok = np.flatnonzero(np.isfinite(table)).astype(np.uint8)
    return rng.choice(ok, size=shape)


@pytest.mark.parametrize("kind", [K.K_SW128, K.K_SW64, K.K_SW32, K.K_INTER], ids=lambda k: k.name)
@pytest.mark.parametrize("dtype", F8)
def test_an_8_bit_descriptor_names_exactly_the_tile_written_through_its_layout(kind, dtype):
    rng = np.random.default_rng(hash((kind.name, dtype, 8)) % 2**32)
    for mn in (64, 128):
        layout = _f8_tile(kind, mn)
        smem = np.zeros(SMEM, dtype=np.uint8)
        raw = _finite_bytes(rng, tuple(cute.size(layout, mode=[m]) for m in (0, 1)), dtype)
        _write8(smem, 4096, layout, raw)
        want = R._to_float(raw, dtype)
        for kb, desc in enumerate(_descs8(layout, 4096, dtype)):
            got = R.wgmma_operand(smem, desc, True, mn, dtype)
            assert got.shape == (mn, 32) and np.array_equal(got, want[:, 32 * kb:32 * kb + 32]), (kind.name, mn, kb)


@pytest.mark.parametrize("a_dtype, b_dtype", [("Float8E4M3FN", "Float8E4M3FN"), ("Float8E5M2", "Float8E4M3FN")])
@pytest.mark.parametrize("n", [8, 128])
def test_one_8_bit_wgmma_is_a_times_b_transposed_in_the_ptx_fragment_order(a_dtype, b_dtype, n):
    rng = np.random.default_rng(n + len(a_dtype))
    smem = np.zeros(SMEM, dtype=np.uint8)
    la, lb = _f8_tile(K.K_SW128, 64), _f8_tile(K.K_SW64, max(n, 64))
    shape = lambda lay: tuple(cute.size(lay, mode=[m]) for m in (0, 1))  # noqa: E731
    a, b = _finite_bytes(rng, shape(la), a_dtype), _finite_bytes(rng, shape(lb), b_dtype)
    _write8(smem, 0, la, a)
    _write8(smem, 65536, lb, b)
    da, db = _descs8(la, 0, a_dtype)[0], _descs8(lb, 65536, b_dtype)[0]
    acc = rng.standard_normal((128, n // 2)).astype(np.float32)
    got = R.wgmma(smem, da, db, acc, n, a_dtype, b_dtype=b_dtype)
    fa = R._to_float(a, a_dtype)[:, :32].astype(np.float64)
    fb = R._to_float(b, b_dtype)[:n, :32].astype(np.float64)
    d = fa @ fb.T
    for t in range(128):
        for i in range(n // 2):
            row, col = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2), 2 * (t % 4) + i % 2 + 8 * (i // 4)
            assert abs(got[t, i] - np.float32(acc[t, i] + d[row, col])) <= 1e-6 * max(1.0, abs(d[row, col]))
    with pytest.raises(cute.CuteValueError, match="8-bit WGMMA operands are K-major"):
        R.wgmma(smem, da, db, acc, n, a_dtype, b_k_major=False, b_dtype=b_dtype)
    with pytest.raises(cute.CuteValueError, match="one 16-bit type, or two 8-bit floats"):
        R.wgmma(smem, da, db, acc, n, a_dtype, b_dtype="BFloat16")
