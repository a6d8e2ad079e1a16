"""The CPU reference of the im2col TMA load against an independent im2col: a direct numpy loop over the
convolution's definition and ``torch.nn.functional.unfold`` (when torch is installed), over random shapes,
kernels, strides, dilations, paddings and tiles; zeros in the padding and past the last output pixel."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cute_py.core.layout import Layout
from cute_py.errors import CuteValueError
from cute_py.nvgpu.tma.im2col import im2col_instruction, make_im2col_tma_atom
from cute_py.reference import MBarrier, im2col_box_elements, tma_load_im2col
from cute_py.tensor.fake import make_fake_tensor


def _direct_im2col(img, k, s, d, p):
    """``A[m, (kh, kw, c)]`` of the NHWC ``img``, from the convolution's definition."""
    n, h, w, c = img.shape
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
    out = np.zeros((n * oh * ow, k * k * c), img.dtype)
    for b in range(n):
        for y in range(oh):
            for x in range(ow):
                for kh in range(k):
                    for kw in range(k):
                        iy, ix = y * s - p + kh * d, x * s - p + kw * d
                        if 0 <= iy < h and 0 <= ix < w:
                            row = (b * oh + y) * ow + x
                            out[row, (kh * k + kw) * c:(kh * k + kw + 1) * c] = img[b, iy, ix]
    return out


def _reference_im2col(img, k, s, d, p, bm, bk):
    """The whole im2col matrix assembled tile by tile from the reference im2col TMA load."""
    n, h, w, c = img.shape
    t = make_fake_tensor("Float16", (n, h, w, c), (h * w * c, w * c, c, 1))
    atom = make_im2col_tma_atom(t, Layout((bm, bk), (bk, 1)), k, s, d, p)
    m, kk = atom.conv.gemm_m, atom.conv.gemm_k
    out = np.full((atom.num_m_tiles * bm, kk), np.float16(7.0))
    smem = np.zeros(bm * bk * 2 + 256, np.uint8)
    for mt in range(atom.num_m_tiles):
        for kt in range(atom.num_k_tiles):
            crd, off = im2col_instruction(atom, mt, kt)
            bar = MBarrier()
            bar.arrive_and_expect_tx(atom.tile_bytes)
            smem[:] = 0xFF
            tma_load_im2col(atom.descriptor, img, crd, off, smem, 128, bar)
            assert bar.try_wait(0)  # exactly the tile's bytes completed the phase
            tile = smem[128:128 + bm * bk * 2].view(np.float16).reshape(bm, bk)
            out[mt * bm:(mt + 1) * bm, kt * bk:(kt + 1) * bk] = tile
    return out, m


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 9), cm=st.integers(1, 3),
       k=st.sampled_from([1, 2, 3, 5]),
       s=st.integers(1, 3), d=st.integers(1, 2), p=st.integers(0, 2), bm=st.sampled_from([8, 16, 64]),
       bk=st.sampled_from([8, 16]), seed=st.integers(0, 2**16))
def test_reference_matches_a_direct_im2col(n, h, w, cm, k, s, d, p, bm, bk, seed):
    c = bk * cm
    if h + 2 * p < d * (k - 1) + 1 or w + 2 * p < d * (k - 1) + 1:
        return  # no output pixel: rejected (tested elsewhere)
    img = np.random.default_rng(seed).standard_normal((n, h, w, c)).astype(np.float16)
    got, m = _reference_im2col(img, k, s, d, p, bm, bk)
    want = _direct_im2col(img, k, s, d, p)
    assert np.array_equal(got[:m], want)
    assert not got[m:].any()  # pixels past the last image read as zeros


@pytest.mark.parametrize("k,s,d,p", [(3, 1, 1, 1), (5, 2, 2, 2), (1, 2, 1, 0), (3, 2, 1, 0)])
def test_reference_matches_torch_unfold(k, s, d, p):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(k * 100 + s * 10 + d + p)
    img = rng.standard_normal((2, 11, 10, 16)).astype(np.float16)
    got, m = _reference_im2col(img, k, s, d, p, 32, 16)
    x = torch.from_numpy(img.astype(np.float32)).permute(0, 3, 1, 2)  # NCHW
    cols = torch.nn.functional.unfold(x, k, dilation=d, padding=p, stride=s)  # (N, C*k*k, L), rows (c, kh, kw)
    cols = cols.reshape(2, 16, k, k, -1).permute(0, 4, 2, 3, 1).reshape(-1, k * k * 16)  # rows (n, l), (kh, kw, c)
    assert np.array_equal(got[:m].astype(np.float32), cols.numpy())


def test_the_traversal_wraps_rows_and_images_at_the_bounding_box():
    # W=3, H=2, N=2, C=8, 1x1 kernel, stride 1, no padding: 12 pixels in (n, h, w) order, then zeros
    t = make_fake_tensor("Float16", (2, 2, 3, 8), (48, 24, 8, 1))
    atom = make_im2col_tma_atom(t, Layout((16, 8), (8, 1)), 1)
    idx = im2col_box_elements(atom.descriptor, (0, 0, 0, 0), (0, 0)).reshape(16, 8)
    assert np.array_equal(idx[:12, 0], np.arange(12) * 8)
    assert (idx[12:] == -1).all()


def test_offsets_and_coordinates_are_checked():
    t = make_fake_tensor("Float16", (1, 4, 4, 8), (128, 32, 8, 1))
    desc = make_im2col_tma_atom(t, Layout((16, 8), (8, 1)), 3, 1, 1, 1).descriptor
    with pytest.raises(CuteValueError, match="takes 2 offsets"):
        im2col_box_elements(desc, (0, 0, 0, 0), (0,))
    with pytest.raises(CuteValueError, match="16-bit unsigned"):
        im2col_box_elements(desc, (0, 0, 0, 0), (0, 1 << 16))
    with pytest.raises(CuteValueError, match="takes 4 coordinates"):
        im2col_box_elements(desc, (0, 0, 0), (0, 0))
