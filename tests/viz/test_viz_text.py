"""Text tables in CuTe's print_layout style: layouts of every rank, composed layouts, tensors, TV layouts."""

import io
import re

import numpy as np
import pytest

import cute_py as cute
from cute_py import viz
from cute_py.tensor.pointer import AddressSpace, Pointer
from cute_py.testing import RuntimeInt


def _rows(text):
    """The table's cell values, row by row (parsed back from the '|  v |' lines)."""
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines() if re.match(r"^\s*\d+\s+\|", line)]


def test_print_layout_of_a_rank2_layout_is_the_cute_table():
    out = io.StringIO()
    cute.print_layout(cute.Layout((2, 3), (3, 1)), file=out)
    assert out.getvalue() == (
        "(2,3):(3,1)\n"
        "      0   1   2\n"
        "    +---+---+---+\n"
        " 0  | 0 | 1 | 2 |\n"
        "    +---+---+---+\n"
        " 1  | 3 | 4 | 5 |\n"
        "    +---+---+---+\n"
    )


def test_table_cells_are_layout_m_n_for_nested_modes():
    layout = cute.Layout((4, (2, 8)), (2, (1, 8)))
    rows = _rows(viz.format_layout(layout))
    assert len(rows) == 4 and all(len(r) == 16 for r in rows)
    assert all(rows[m][n] == str(layout((m, n))) for m in range(4) for n in range(16))


def test_column_headers_and_separators_line_up_with_the_cells():
    text = viz.format_layout(cute.Layout((3, 12), (12, 1)))
    lines = text.splitlines()
    header, sep, row = lines[1], lines[2], lines[3]
    assert len(sep) == len(row)
    # every '|' of a row sits on a '+' of the separator, every column index ends before its cell's end
    assert [i for i, c in enumerate(row) if c == "|"] == [i for i, c in enumerate(sep) if c == "+"]
    assert header.split() == [str(n) for n in range(12)]


def test_rows_beyond_99_keep_the_table_aligned():
    text = viz.format_layout(cute.Layout((120, 2)))
    lines = [ln for ln in text.splitlines()[1:]]
    assert len({len(ln) for ln in lines if "|" in ln or "+" in ln}) == 1
    assert _rows(text)[119] == ["119", "239"]


def test_a_rank1_layout_prints_one_row():
    rows = _rows(viz.format_layout(cute.Layout(8, 2)))
    assert rows == [[str(2 * i) for i in range(8)]]


def test_a_rank3_layout_is_grouped_to_rank2_and_the_table_says_so():
    text = viz.format_layout(cute.Layout((2, 2, 2)))
    assert "group_modes(layout, 1, 3)" in text and "(2,(2,2)):(1,(2,4))" in text
    assert _rows(text) == [["0", "2", "4", "6"], ["1", "3", "5", "7"]]


def test_a_swizzled_layout_table_shows_the_swizzled_offsets():
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    rows = _rows(viz.format_layout(atom))
    assert len(rows) == 8 and len(rows[0]) == 64
    elements = cute.as_position_independent_swizzle_layout(atom)
    assert all(rows[m][n] == str(elements((m, n))) for m in range(8) for n in range(64))
    assert rows[1][0] == "72"  # S<3,3,3>: row 1 starts at 64 ^ (1 << 3)


def test_format_tensor_shows_a_host_tensors_values_in_the_same_grid():
    t = cute.make_tensor(np.arange(12, dtype=np.float32) / 2, cute.Layout((3, 4), (4, 1)))
    text = viz.format_tensor(t)
    assert text.splitlines()[0] == str(t)
    assert _rows(text) == [["0", "0.5", "1", "1.5"], ["2", "2.5", "3", "3.5"], ["4", "4.5", "5", "5.5"]]


def test_print_tensor_of_an_identity_tensor_shows_coordinates():
    rows = _rows(viz.format_tensor(cute.make_identity_tensor((2, 3))))
    assert rows == [["(0,0)", "(0,1)", "(0,2)"], ["(1,0)", "(1,1)", "(1,2)"]]


def test_print_tensor_of_integer_tensors_prints_integers():
    t = cute.make_tensor(np.arange(6, dtype=np.int32), cute.Layout((2, 3)))
    assert _rows(viz.format_tensor(t)) == [["0", "2", "4"], ["1", "3", "5"]]


def test_print_tensor_rejects_a_tensor_over_a_device_pointer():
    t = cute.make_tensor(Pointer(cute.Float16, AddressSpace.gmem), cute.Layout((4, 4)))
    with pytest.raises(cute.CuteValueError, match="host tensor.*print_layout"):
        viz.format_tensor(t)


def test_print_tensor_rejects_a_layout_and_names_print_layout():
    with pytest.raises(cute.CuteValueError, match="print_layout"):
        viz.format_tensor(cute.Layout(4))


def test_a_dynamic_shape_is_rejected_and_named():
    with pytest.raises(cute.StaticValueRequired, match=re.escape("static shape, got shape (?,2)")):
        viz.format_layout(cute.Layout((RuntimeInt(4), 2)))


def test_dynamic_strides_print_as_question_marks():
    # row 0 meets the run-time stride with the static coordinate 0, which gives the static 0 (as in CuTe)
    rows = _rows(viz.format_layout(cute.Layout((2, 2), (RuntimeInt(3), 1))))
    assert rows == [["0", "1"], ["?", "?"]]
    rows = _rows(viz.format_layout(cute.Layout((2, 2), (1, RuntimeInt(3)))))
    assert rows == [["0", "?"], ["1", "?"]]


def test_print_layout_rejects_things_that_are_not_layouts():
    with pytest.raises(cute.CuteTypeError, match="needs a Layout"):
        viz.format_layout("(4,2):(1,4)")


def test_print_layout_tv_labels_each_cell_with_its_thread_and_value():
    tiler, tv = cute.make_layout_tv(cute.Layout((2, 3), (3, 1)), cute.Layout((2, 2), (2, 1)))
    rows = _rows(viz.format_layout_tv(tv, tiler))
    assert len(rows) == 4 and len(rows[0]) == 6
    for t in range(6):
        for v in range(4):
            idx = tv((t, v))
            assert rows[idx % 4][idx // 4] == f"T{t}V{v}"
    assert rows[0][:2] == ["T0V0", "T0V1"]


def test_print_layout_tv_marks_cells_owned_twice_and_cells_owned_by_none():
    # two threads broadcast onto the same 2 cells of a 1 x 4 tile
    rows = _rows(viz.format_layout_tv(cute.Layout((2, 2), (0, 1)), (1, 4)))
    assert rows == [["T0V0*", "T0V1*", ".", "."]]
