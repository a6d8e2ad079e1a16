"""A real SVG renderer (librsvg's rsvg-convert) turns every kind of picture into a PNG."""

import shutil
import subprocess

import pytest

import cute_py as cute
from cute_py import viz
from cute_py.nvgpu import cpasync
from cute_py.runtime import make_fake_tensor

RSVG = shutil.which("rsvg-convert")
pytestmark = pytest.mark.skipif(
    RSVG is None, reason="rsvg-convert not installed (Debian/Ubuntu: apt-get install librsvg2-bin)"
)


def _pictures():
    sw = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    tc = cute.make_tiled_copy_tv(cute.make_copy_atom(cpasync.CopyG2SOp(), cute.Float16, 128),
                                 cute.Layout((4, 2), (2, 1)), cute.Layout((1, 8)))
    g = make_fake_tensor(cute.Float16, (512, 256), stride=(256, 1))
    atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), g,
                                          cute.tile_to_shape(sw, (128, 64)), (128, 64), num_multicast=2)
    return {
        "layout": viz.layout_svg(cute.Layout((4, (2, 8)), (2, (1, 8)))),
        "tv": viz.tv_svg(*cute.make_layout_tv(cute.Layout((2, 3), (3, 1)), cute.Layout((2, 2), (2, 1)))),
        "banks": viz.smem_banks_svg(sw),
        "copy": viz.tiled_copy_svg(tc),
        "tma": viz.tma_svg(atom, g, (1, 2)),
    }


@pytest.mark.parametrize("kind", ["layout", "tv", "banks", "copy", "tma"])
def test_the_picture_renders_to_a_png_of_its_declared_size(kind, tmp_path):
    import xml.etree.ElementTree as ET

    pic = _pictures()[kind]
    src = pic.save(tmp_path / f"{kind}.svg")
    png = tmp_path / f"{kind}.png"
    r = subprocess.run([RSVG, "-o", str(png), str(src)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    root = ET.fromstring(str(pic))
    assert abs(width - float(root.get("width"))) <= 1 and abs(height - float(root.get("height"))) <= 1
    assert not r.stderr.strip(), r.stderr  # no warnings about unknown elements or styles
