"""Im2col TMA descriptors: each rule of cuTensorMapEncodeIm2col is rejected up front with a TmaError naming it,
the conv2d atom's descriptor fields follow the convolution, and the per-tile coordinates are those of the
output pixel and filter tap the tile starts at (expected values written from the conv formulas, not our code)."""

import dataclasses

import pytest

from cute_py.core.layout import Layout
from cute_py.demo.tour import smem_tile_layout
from cute_py.errors import CuteTypeError, CuteValueError, TmaError
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma import TmaSwizzle
from cute_py.nvgpu.tma.im2col import Conv2dGeometry, Im2colDescriptor, im2col_instruction, make_im2col_tma_atom
from cute_py.tensor.dtypes import dtype_of
from cute_py.tensor.fake import make_fake_tensor

F16 = dtype_of("Float16")


def _nhwc(n, h, w, c, dtype="Float16", align=16):
    return make_fake_tensor(dtype, (n, h, w, c), (h * w * c, w * c, c, 1), assumed_align=align)


def _good(**kw):
    base = dict(dtype=F16, global_dims=(64, 9, 9, 2), global_strides=(128, 1152, 10368), lower_corner=(-1, -1),
                upper_corner=(-1, -1), channels_per_pixel=64, pixels_per_column=128, element_strides=(1, 1, 1, 1))
    base.update(kw)
    return Im2colDescriptor(**base)


def test_a_valid_descriptor_validates():
    d = _good().validate()
    assert d.box_bytes == 128 * 64 * 2 and d.row_bytes == 128 and d.rank == 4


@pytest.mark.parametrize("kw,match", [
    (dict(global_dims=(64, 2), global_strides=(128,), lower_corner=(), upper_corner=(), element_strides=(1, 1)),
     r"rank 3, 4 or 5.*rank 2"),
    (dict(global_dims=(64, 9, 9, 9, 9, 2), global_strides=(128,) * 5, lower_corner=(0,) * 4, upper_corner=(0,) * 4,
          element_strides=(1,) * 6), r"rank 3, 4 or 5.*rank 6"),
    (dict(global_strides=(128, 1152)), r"global_strides must have 3 entries"),
    (dict(lower_corner=(-1,)), r"lower_corner must have 2 entries"),
    (dict(global_address=0x1008), r"0x1008 must be 16-byte aligned"),
    (dict(address_alignment=8), r"only 8-byte alignment"),
    (dict(global_strides=(120, 1152, 10368)), r"global stride 1 is 120 bytes.*multiples of 16"),
    (dict(global_strides=(128, 1152, 1 << 40)), r"global stride 3 .*\(0, 2\^40\)"),
    (dict(global_dims=(64, 0, 9, 2)), r"global dim 1 is 0"),
    (dict(lower_corner=(-129, 0)), r"lower_corner\[0\] is -129; a rank-4 .* \[-128, 127\]"),
    (dict(upper_corner=(0, 128)), r"upper_corner\[1\] is 128; a rank-4 .* \[-128, 127\]"),
    (dict(global_dims=(64, 9, 2), global_strides=(128, 1152), lower_corner=(-40000,), upper_corner=(0,),
          element_strides=(1, 1, 1)), r"rank-3 .* \[-32768, 32767\]"),
    (dict(global_dims=(64, 9, 9, 9, 2), global_strides=(128, 1152, 10368, 93312), lower_corner=(0, 0, -17),
          upper_corner=(0, 0, 0), element_strides=(1,) * 5), r"rank-5 .* \[-16, 15\]"),
    (dict(channels_per_pixel=257 * 8), r"channels_per_pixel is 2056; it must be in 1..256"),
    (dict(channels_per_pixel=4), r"4 x 16 bits = 8 bytes; .* multiple of 16 bytes"),
    (dict(pixels_per_column=1025), r"pixels_per_column is 1025; it must be in 1..1024"),
    (dict(pixels_per_column=0), r"pixels_per_column is 0"),
    (dict(element_strides=(1, 9, 1, 1)), r"element stride 1 is 9; .* 1..8"),
    (dict(element_strides=(1, 0, 1, 1)), r"element stride 1 is 0"),
    (dict(element_strides=(2, 1, 1, 1)), r"element stride 0 \(channels\) is 2"),
    (dict(swizzle=TmaSwizzle.B64), r"128 bytes; with the B64 swizzle it must fill the 64-byte span"),
    (dict(channels_per_pixel=32, swizzle=TmaSwizzle.B128), r"64 bytes; with the B128 swizzle"),
    (dict(global_dims=(64, 9.0, 9, 2)), r"global_dims must be a tuple of static ints"),
    (dict(swizzle="128B"), r"swizzle must be a TmaSwizzle"),
])
def test_each_driver_rule_is_a_tma_error_naming_it(kw, match):
    with pytest.raises(TmaError, match=match):
        _good(**kw).validate()


def test_an_empty_bounding_box_is_rejected():
    with pytest.raises(TmaError, match=r"bounding box along spatial dim 0 is empty: dim 9 \+ upper corner -10 - lower "
                                       r"corner -1 = 0"):
        _good(upper_corner=(-10, -1)).validate()


def test_swizzle_matching_the_row_is_accepted():
    for channels, swizzle in ((64, TmaSwizzle.B128), (32, TmaSwizzle.B64)):
        d = _good(channels_per_pixel=channels, swizzle=swizzle)
        d.validate()  # a row of exactly the swizzle's width: no TmaError
        assert (d.channels_per_pixel * 2, d.swizzle) == (swizzle.span, swizzle)


@pytest.mark.parametrize("n,h,w,c,k,s,d,p", [(2, 9, 9, 64, 3, 1, 1, 1), (1, 16, 12, 32, 5, 2, 2, 2),
                                             (3, 7, 11, 16, 1, 2, 1, 0)])
def test_the_conv_atom_descriptor_follows_the_convolution(n, h, w, c, k, s, d, p):
    atom = make_im2col_tma_atom(_nhwc(n, h, w, c), Layout((64, 16), (16, 1)), k, s, d, p)
    desc = atom.descriptor
    assert desc.global_dims == (c, w, h, n)
    assert desc.global_strides == (c * 2, w * c * 2, h * w * c * 2)
    assert desc.lower_corner == (-p, -p)
    assert desc.upper_corner == (p - d * (k - 1),) * 2
    assert desc.element_strides == (1, s, s, 1)
    assert (desc.channels_per_pixel, desc.pixels_per_column) == (16, 64)
    oh = (h + 2 * p - d * (k - 1) - 1) // s + 1
    ow = (w + 2 * p - d * (k - 1) - 1) // s + 1
    assert (atom.conv.oh, atom.conv.ow) == (oh, ow)
    # the bounding box visits exactly OW positions along W: -p, -p + s, ... <= w - 1 + upper
    last_w = w - 1 + desc.upper_corner[0]
    assert len(range(-p, last_w + 1, s)) == ow
    assert atom.num_m_tiles == -(-(n * oh * ow) // 64) and atom.num_k_tiles == k * k * c // 16


def test_tile_coordinates_are_the_first_pixel_and_the_filter_tap():
    atom = make_im2col_tma_atom(_nhwc(2, 10, 7, 32), Layout((16, 16), (16, 1)), 3, 2, 2, 1)
    oh, ow = (10 + 2 - 4 - 1) // 2 + 1, (7 + 2 - 4 - 1) // 2 + 1
    for m_tile in range(atom.num_m_tiles):
        for k_tile in range(atom.num_k_tiles):
            m, kk = m_tile * 16, k_tile * 16
            n, rest = divmod(m, oh * ow)
            y, x = divmod(rest, ow)
            tap, ch = divmod(kk, 32)
            kh, kw = divmod(tap, 3)
            assert im2col_instruction(atom, m_tile, k_tile) == ((ch, x * 2 - 1, y * 2 - 1, n), (kw * 2, kh * 2))


def test_out_of_range_static_steps_are_rejected():
    atom = make_im2col_tma_atom(_nhwc(1, 8, 8, 16), Layout((64, 16), (16, 1)), 3, 1, 1, 1)
    with pytest.raises(CuteValueError, match=r"nhw_step = 1 is outside the 1 tiles"):
        im2col_instruction(atom, 1, 0)
    with pytest.raises(CuteValueError, match=r"c_step = 9 is outside the 9 tiles"):
        im2col_instruction(atom, 0, 9)


def test_the_128b_swizzled_tile_is_accepted_and_a_k_blocked_one_is_not():
    atom = make_im2col_tma_atom(_nhwc(1, 8, 8, 64), smem_tile_layout("Float16", (64, 64), "128B"), 3, 1, 1, 1)
    assert atom.descriptor.swizzle is TmaSwizzle.B128
    with pytest.raises(TmaError, match="row-major"):
        make_im2col_tma_atom(_nhwc(1, 8, 8, 128), smem_tile_layout("Float16", (64, 128), "128B"), 3, 1, 1, 1)


@pytest.mark.parametrize("build,error,match", [
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 48), Layout((64, 32), (32, 1)), 3), TmaError,
     r"block_K = 32 must divide the 48 channels"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 64, 64, 16), Layout((2048, 16), (16, 1)), 3), TmaError,
     r"block_M = 2048 pixels; .* at most 1024"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 16), Layout((64, 16), (1, 64)), 3), TmaError, r"row-major"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 16), Layout((64, 16), (16, 1)), 9), CuteValueError,
     r"the dilated kernel spans 9 pixels"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 16), Layout((64, 16), (16, 1)), 3, 0), CuteValueError,
     r"stride must be >= 1, got 0"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 16), Layout((64, 16), (16, 1)), 3, 1, 1, -1), CuteValueError,
     r"pad must be >= 0, got -1"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 16), Layout((64, 16), (16, 1)), 3.0), CuteTypeError,
     r"kernel must be an int"),
    (lambda: make_im2col_tma_atom(make_fake_tensor("Float16", (1, 8, 8, 16)), Layout((64, 16), (16, 1)), 3), TmaError,
     r"channels of an NHWC tensor must be contiguous"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 16), Layout((64, 4), (4, 1)), 3), TmaError,
     r"4 x 16 bits = 8 bytes"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 8, 8, 16, align=8), Layout((64, 16), (16, 1)), 3), TmaError,
     r"only 8-byte alignment"),
    (lambda: make_im2col_tma_atom(_nhwc(1, 200, 200, 16), Layout((64, 16), (16, 1)), 3, 1, 1, 130), TmaError,
     r"lower_corner\[0\] is -130"),
    (lambda: make_im2col_tma_atom(make_fake_tensor("Float16", (8, 8, 16), (128, 16, 1)), Layout((64, 16), (16, 1)), 3),
     TmaError, r"rank-4 NHWC"),
])
def test_bad_convolutions_and_tiles_are_rejected_naming_the_rule(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_make_tiled_tma_atom_refuses_the_im2col_op():
    with pytest.raises(CuteTypeError, match="make_im2col_tma_atom"):
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorIm2colG2SOp(), make_fake_tensor("Float16", (64, 64)),
                                    Layout((64, 64)), (64, 64))


def test_conv_geometry_output_sizes():
    g = Conv2dGeometry(2, 10, 13, 8, kernel=3, stride=2, dilation=2, pad=1)
    assert (g.oh, g.ow, g.gemm_m, g.gemm_k) == (4, 6, 48, 72)
    assert dataclasses.replace(g, pad=0).ow == 5
