"""A large layout's picture reads as a gradient of its values (a colour ramp from the smallest to the largest),
where CuTe's ``value % 8`` colouring would stripe; small layouts keep ``value % 8``."""

import colorsys
import re

from hypothesis import given, settings, strategies as st

import cute_py as cute
from cute_py.viz import layout_svg
from cute_py.viz._svg import PALETTE, ramp_color
from cute_py.viz.pictures import RAMP_CELLS


def _cells(picture):
    """``(value, fill)`` of each cell, from the cells' data attributes."""
    out = []
    for tag in re.findall(r"<rect [^>]*data-value=[^>]*>", str(picture)):
        value = re.search(r'data-value="([^"]*)"', tag).group(1)
        fill = re.search(r'fill="(#[0-9A-Fa-f]{6})"', tag).group(1)
        out.append((int(value), fill))
    return out


def _lightness(fill):
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[1]


def test_a_small_layout_keeps_cutes_colouring():
    pic = layout_svg(cute.Layout((8, 8), (1, 8)))
    cells = _cells(pic)
    assert len(cells) == 64 and all(fill == PALETTE[v % 8] for v, fill in cells)
    assert "colour = value % 8" in str(pic)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(32, 32), (17, 40), (128, 128), (8, 300)]), st.booleans())
def test_a_large_layout_is_a_ramp_of_its_values(shape, row_major):
    stride = (shape[1], 1) if row_major else (1, shape[0])
    layout = cute.Layout(shape, stride)
    pic = layout_svg(layout)
    cells = _cells(pic)
    assert len(cells) == shape[0] * shape[1] > RAMP_CELLS
    hi = shape[0] * shape[1] - 1
    assert f"light (0) to dark ({hi})" in str(pic)
    for v, fill in cells:
        assert fill == ramp_color(v / hi)
    # the ramp darkens with the value: no stripes
    ordered = [_lightness(f) for _, f in sorted(cells)]
    assert all(a >= b - 1e-9 for a, b in zip(ordered, ordered[1:]))
