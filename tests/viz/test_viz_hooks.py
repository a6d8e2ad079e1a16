"""Interactive use: notebook hooks, reprs that round-trip, lazy exports, and viz's place in the layers."""

import ast
import pathlib
import subprocess
import sys

import cute_py as cute
from cute_py import viz
from cute_py.nvgpu import cpasync
from cute_py.testing import RuntimeInt

from _svgparse import cells, parse

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_layouts_and_composed_layouts_display_as_svg_in_notebooks():
    layout = cute.Layout((4, (2, 8)), (2, (1, 8)))
    assert len(cells(parse(layout._repr_svg_()))) == 64
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    assert len(cells(parse(atom._repr_svg_()))) == 512


def test_a_tiled_copy_displays_its_source_and_destination():
    tc = cute.make_tiled_copy_tv(cute.make_copy_atom(cpasync.CopyG2SOp(), cute.Float16, 128),
                                 cute.Layout((4, 2), (2, 1)), cute.Layout((1, 8)))
    cs = cells(parse(tc._repr_svg_()))
    assert {c.get("data-side") for c in cs} == {"S", "D"} and len(cs) == 2 * 4 * 16


def test_objects_that_cannot_be_drawn_fall_back_to_their_text_repr_and_large_ones_say_so():
    assert cute.Layout((RuntimeInt(4), 2))._repr_svg_() is None
    assert len(cells(parse(cute.Layout((64, 64))._repr_svg_()))) == 64 * 64  # the notebook limit, drawn
    for big in (cute.Layout((64, 65)), cute.Layout((128, 128)), cute.Layout((256, 256))):
        note = big._repr_svg_()
        assert len(note) < 1000 and 'data-cute-note="too-large"' in note and not cells(parse(note))
        assert f"{big}: more cells than the 4096 drawn inline" in note and "max_cells" in note
    assert len(cute.Layout((64, 64))._repr_svg_()) < 1_200_000  # a capped picture stays about a megabyte


def test_pictures_display_themselves_and_save_to_files(tmp_path):
    pic = viz.layout_svg(cute.Layout((2, 2)))
    assert pic._repr_svg_() == str(pic)
    assert "Picture" in repr(pic) and "<svg" not in repr(pic)
    path = pic.save(tmp_path / "p.svg")
    assert path.read_text() == str(pic)


def test_layout_and_composed_layout_reprs_round_trip():
    names = {"Layout": cute.Layout, "ComposedLayout": cute.ComposedLayout, "Swizzle": cute.Swizzle,
             "SmemPtrFlag": cute.SmemPtrFlag}
    for x in (
        cute.Layout((4, (2, 8)), (2, (1, 8))),
        cute.Layout(8),
        cute.Layout((2, 3), (0, -1)),
        cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16),
        cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.MN_SW64, 16), (64, 16)),
        cute.Swizzle(3, 4, 3),
    ):
        assert eval(repr(x), names) == x


def test_print_layout_and_print_tensor_are_exported_from_the_package():
    assert cute.print_layout is viz.print_layout and cute.print_tensor is viz.print_tensor
    assert {"print_layout", "print_tensor", "viz"} <= set(cute.__all__)


def test_import_cute_py_does_not_import_viz():
    code = "import sys, cute_py; print('cute_py.viz' in sys.modules); cute_py.print_layout; print('cute_py.viz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "True"]


def test_viz_imports_only_the_algebra_and_the_standard_library_at_module_level():
    # the standard library that costs nothing at import (typing and collections.abc load with cute_py anyway)
    allowed_external = {"__future__", "argparse", "collections", "colorsys", "os", "sys", "typing", "xml"}
    below = {"jit"}
    for path in (ROOT / "cute_py" / "viz").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                assert {a.name.split(".")[0] for a in node.names} <= allowed_external, path
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    assert node.module.split(".")[0] in allowed_external, path
                elif node.level == 2:
                    assert (node.module or "").split(".")[0] not in below, path


def test_the_notebook_formatters_are_registered_by_the_package_facade():
    # the algebra never imports the pictures (tests/test_package.py checks every import); the façade attaches
    # Jupyter's _repr_svg_ to the classes it draws
    for cls in (cute.Layout, cute.ComposedLayout, cute.TiledCopy):
        assert cls.__dict__["_repr_svg_"] is cute._repr_svg_
