"""SVG pictures, read back with ElementTree: one cell per element, the right labels, colours and tooltips."""

from collections import Counter

import pytest

import cute_py as cute
from cute_py import viz
from cute_py.nvgpu import cpasync
from cute_py.runtime import make_fake_tensor
from cute_py.viz._svg import MIN_FONT

from _svgparse import SVG, all_text, cells, elements, label_texts, parse, size, title_of


def _tv_example():
    return cute.make_layout_tv(cute.Layout((2, 3), (3, 1)), cute.Layout((2, 2), (2, 1)))


def _sw128_fp16():
    return cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)


# -- layouts -----------------------------------------------------------------------------------


def test_a_layout_picture_has_one_cell_per_element_labelled_with_its_index():
    layout = cute.Layout((4, (2, 8)), (2, (1, 8)))
    root = parse(viz.layout_svg(layout))
    cs = cells(root)
    assert len(cs) == 64
    for c in cs:
        m, n = int(c.get("data-m")), int(c.get("data-n"))
        assert c.get("data-value") == str(layout((m, n)))
    assert Counter(label_texts(root)) == Counter(str(layout(i)) for i in range(64))


def test_layout_cells_are_coloured_by_index_mod_8_and_placed_by_row_and_column():
    layout = cute.Layout((4, 6), (6, 1))
    cs = cells(parse(viz.layout_svg(layout)))
    for c in cs:
        m, n = int(c.get("data-m")), int(c.get("data-n"))
        assert c.get("fill") == viz.PALETTE[layout((m, n)) % 8]
    xs = {int(c.get("data-n")): float(c.get("x")) for c in cs}
    ys = {int(c.get("data-m")): float(c.get("y")) for c in cs}
    assert sorted(xs, key=xs.get) == list(range(6)) and sorted(ys, key=ys.get) == list(range(4))


def test_every_cell_has_a_tooltip_with_its_coordinate_and_value():
    layout = cute.Layout((4, (2, 8)), (2, (1, 8)))
    for c in cells(parse(viz.layout_svg(layout))):
        m, n = int(c.get("data-m")), int(c.get("data-n"))
        t = title_of(c)
        assert t.startswith(f"(m={m}, n={n})") and t.endswith(f"-> {layout((m, n))}")
    # the hierarchical coordinate of mode 1 is spelled out: n = 11 is (1,5)
    c11 = next(c for c in cells(parse(viz.layout_svg(layout))) if c.get("data-n") == "11" and c.get("data-m") == "0")
    assert "(0,(1,5))" in title_of(c11)


def test_a_rank1_layout_is_one_row_and_a_rank3_layout_is_grouped():
    assert {c.get("data-m") for c in cells(parse(viz.layout_svg(cute.Layout(8, 3))))} == {"0"}
    root = parse(viz.layout_svg(cute.Layout((2, 2, 2))))
    assert len(cells(root)) == 8 and any("group_modes(layout, 1, 3)" in t for t in all_text(root))


def test_a_swizzled_composed_layout_is_drawn_with_its_swizzled_offsets():
    atom = _sw128_fp16()
    elements = cute.as_position_independent_swizzle_layout(atom)  # the byte swizzle on 16-bit elements
    cs = cells(parse(viz.layout_svg(atom)))
    assert len(cs) == 512
    assert all(c.get("data-value") == str(elements((int(c.get("data-m")), int(c.get("data-n"))))) for c in cs)


def test_a_host_tensor_is_drawn_with_its_values():
    import numpy as np

    t = cute.make_tensor(np.arange(6, dtype=np.int32) * 10, cute.Layout((2, 3)))
    assert sorted(label_texts(parse(viz.layout_svg(t))), key=int) == ["0", "10", "20", "30", "40", "50"]


def test_a_128x128_layout_fits_drops_labels_below_legible_size_and_keeps_every_tooltip():
    root = parse(viz.layout_svg(cute.Layout((128, 128), (128, 1))))
    cs = cells(root)
    assert len(cs) == 128 * 128
    w, h = size(root)
    assert w <= 4096 + 200 and h <= 4096 + 200
    assert all(title_of(c) for c in cs)
    fonts = [float(g.get("font-size")) for g in elements(root, "g", "labels")]
    assert all(f >= MIN_FONT for f in fonts)  # labels present only while legible


def test_labels_are_dropped_but_tooltips_kept_when_cells_get_tiny():
    root = parse(viz.layout_svg(cute.Layout((256, 256))))
    assert len(cells(root)) == 256 * 256
    assert label_texts(root) == []
    assert all(title_of(c) for c in cells(root)[:100])


def test_a_layout_too_large_for_a_picture_is_rejected_with_a_hint():
    with pytest.raises(cute.CuteValueError, match="slice it first"):
        viz.layout_svg(cute.Layout((512, 512)))


# -- TV layouts --------------------------------------------------------------------------------


def test_a_tv_picture_colours_each_cell_by_its_thread_and_labels_it_TtVv():
    tiler, tv = _tv_example()
    root = parse(viz.tv_svg(tv, tiler))
    cs = cells(root)
    assert len(cs) == 24
    for c in cs:
        m, n = int(c.get("data-m")), int(c.get("data-n"))
        t, v = int(c.get("data-thread")), int(c.get("data-value"))
        assert tv((t, v)) == m + 4 * n
        assert c.get("fill") == viz.thread_color(t)
    assert sorted(label_texts(root)) == sorted(f"T{t}V{v}" for t in range(6) for v in range(4))
    # one colour per thread, different threads of this tile look different
    fills = {int(c.get("data-thread")): c.get("fill") for c in cs}
    assert len(set(fills.values())) == 6


def test_tv_svg_takes_make_layout_tv_results_in_either_order():
    a = parse(viz.tv_svg(*_tv_example()))
    tiler, tv = _tv_example()
    b = parse(viz.tv_svg(tv, tiler))
    assert [c.attrib for c in cells(a)] == [c.attrib for c in cells(b)]


def test_threads_beyond_the_palette_cycle_through_it():
    tiler, tv = cute.make_layout_tv(cute.Layout((4, 8), (8, 1)), cute.Layout((1, 2)))
    for c in cells(parse(viz.tv_svg(tv, tiler))):
        assert c.get("fill") == viz.PALETTE[int(c.get("data-thread")) % 16]


def test_an_mma_style_tv_layout_over_its_tile_covers_every_cell_once():
    tv = cute.Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))  # SM80 16x8 accumulator layout
    cs = cells(parse(viz.tv_svg(tv, (16, 8))))
    assert len(cs) == 128 and all(c.get("data-owners") is None and c.get("data-thread") != "-1" for c in cs)


def test_a_rank3_tv_layout_is_rejected_with_a_group_modes_hint():
    with pytest.raises(cute.RankError, match=r"rank 2 \(thread, value\).*group_modes"):
        viz.tv_svg(cute.Layout((2, 2, 2)), (2, 4))


def test_a_tv_layout_reaching_outside_its_tile_is_rejected():
    with pytest.raises(cute.CuteValueError, match="outside the 2 x 2 tile"):
        viz.tv_svg(cute.Layout((2, 4)), (2, 2))


def test_a_tile_of_rank3_is_rejected():
    with pytest.raises(cute.RankError, match="rank-1 or rank-2 tile"):
        viz.tv_svg(cute.Layout((2, 4)), (2, 2, 2))


# -- shared-memory banks -----------------------------------------------------------------------


def _col_stats(root):
    return [t.text for t in elements(root, "text", "colstat")]


def test_a_bank_picture_colours_each_cell_by_its_4_byte_bank():
    atom = _sw128_fp16()
    root = parse(viz.smem_banks_svg(atom, 16))
    cs = cells(root)
    assert len(cs) == 512
    offsets = cute.as_position_independent_swizzle_layout(atom)
    for c in cs:
        off = offsets((int(c.get("data-m")), int(c.get("data-n"))))
        assert int(c.get("data-offset")) == off
        assert int(c.get("data-bank")) == (off * 16 // 8 // 4) % 32
        assert c.get("fill") == viz.bank_color(int(c.get("data-bank")))
    assert len(elements(root, "rect", "legend")) == 32
    assert len({viz.bank_color(b) for b in range(32)}) == 32


def test_the_128B_swizzle_makes_fp16_columns_conflict_free_and_the_plain_tile_does_not():
    sw = parse(viz.smem_banks_svg(_sw128_fp16()))
    plain = parse(viz.smem_banks_svg(cute.Layout((8, 64), (64, 1))))
    assert set(_col_stats(sw)) == {"ok"}
    assert set(_col_stats(plain)) == {"8"}
    assert any("each column hits 8 distinct banks: conflict-free" in t for t in all_text(sw))
    assert any("worst 8-way bank conflict" in t for t in all_text(plain))


def test_bank_statistics_count_words_not_elements():
    # two fp16 elements of one 4-byte word share it: no conflict; 32 words apart: a 2-way conflict
    assert viz.bank_stats([0, 1], 16) == (1, 1)
    assert viz.bank_stats([0, 64], 16) == (1, 2)
    assert viz.bank_of(64, 16) == 0 and viz.bank_of(2, 16) == 1 and viz.bank_of(1, 32) == 1


def test_element_width_changes_the_banks():
    cs = cells(parse(viz.smem_banks_svg(cute.Layout((1, 8)), element_bits=64)))
    assert [int(c.get("data-bank")) for c in cs] == [0, 2, 4, 6, 8, 10, 12, 14]


def test_a_rank3_smem_layout_is_rejected_with_a_group_modes_hint():
    with pytest.raises(cute.RankError, match=r"rank-2 layout.*group_modes\(layout, 1, 3\)"):
        viz.smem_banks_svg(cute.Layout((2, 2, 2)))


def test_a_bank_picture_needs_a_positive_element_width():
    with pytest.raises(cute.CuteValueError, match="element_bits"):
        viz.smem_banks_svg(cute.Layout((2, 2)), 0)


# -- tiled copies ------------------------------------------------------------------------------


def _tiled_copy():
    atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cute.Float16, 128)
    return cute.make_tiled_copy_tv(atom, cute.Layout((8, 4), (4, 1)), cute.Layout((1, 8)))


def test_a_tiled_copy_picture_draws_source_and_destination_side_by_side():
    tc = _tiled_copy()
    root = parse(viz.tiled_copy_svg(tc))
    cs = cells(root)
    src = [c for c in cs if c.get("data-side") == "S"]
    dst = [c for c in cs if c.get("data-side") == "D"]
    assert len(src) == len(dst) == 8 * 32
    assert max(float(c.get("x")) for c in src) < min(float(c.get("x")) for c in dst)
    for side, layout in ((src, tc.get_layoutS_TV()), (dst, tc.get_layoutD_TV())):
        for c in side:
            t, v = int(c.get("data-thread")), int(c.get("data-value"))
            assert layout((t, v)) == int(c.get("data-m")) + 8 * int(c.get("data-n"))
            assert c.get("fill") == viz.thread_color(t)
    assert Counter(label_texts(root))["T5V3"] == 2


def test_a_tiled_copy_picture_needs_a_tiled_copy():
    with pytest.raises(cute.CuteTypeError, match="needs a TiledCopy"):
        viz.tiled_copy_svg(cute.Layout(4))


# -- TMA ---------------------------------------------------------------------------------------


def _tma(mc, k_major=True):
    if k_major:
        g = make_fake_tensor(cute.Float16, (512, 256), stride=(256, 1))
        smem = cute.tile_to_shape(_sw128_fp16(), (128, 64))
    else:
        g = make_fake_tensor(cute.Float16, (512, 256), stride=(1, 512))
        smem = cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.MN_SW128, 16), (128, 64))
    op = cpasync.CopyBulkTensorTileG2SMulticastOp() if mc > 1 else cpasync.CopyBulkTensorTileG2SOp()
    atom, _ = cpasync.make_tiled_tma_atom(op, g, smem, (128, 64), num_multicast=mc)
    return atom, g


def _boxes(root):
    return [{k[5:]: int(v) for k, v in b.attrib.items() if k.startswith("data-")} for b in elements(root, "rect", "box")]


@pytest.mark.parametrize("mc", [1, 2, 4])
@pytest.mark.parametrize("k_major", [True, False])
def test_the_tma_boxes_of_all_multicast_ctas_cover_the_tile_exactly_once(mc, k_major):
    atom, g = _tma(mc, k_major)
    root = parse(viz.tma_svg(atom, g, (1, 2)))
    seen = Counter()
    per_cta = Counter()
    for b in _boxes(root):
        assert 128 <= b["m0"] < b["m1"] <= 256 and 128 <= b["n0"] < b["n1"] <= 192
        area = (b["m1"] - b["m0"]) * (b["n1"] - b["n0"])
        per_cta[b["cta"]] += area
        for m in range(b["m0"], b["m1"]):
            for n in range(b["n0"], b["n1"]):
                seen[m, n] += 1
    assert len(seen) == 128 * 64 and set(seen.values()) == {1}
    assert per_cta == {k: 128 * 64 // mc for k in range(mc)}
    # each box is one TMA instruction of box_dims elements
    box_elems = 1
    for d in atom.descriptor.box_dims:
        box_elems *= d
    assert all((b["m1"] - b["m0"]) * (b["n1"] - b["n0"]) == box_elems for b in _boxes(root))


def test_multicast_ctas_get_different_colours_and_the_tile_is_outlined():
    atom, g = _tma(2)
    root = parse(viz.tma_svg(atom, g, (1, 2)))
    fills = {b.get("data-cta"): b.get("fill") for b in elements(root, "rect", "box")}
    assert fills == {"0": viz.PALETTE[0], "1": viz.PALETTE[1]}
    (tile,) = elements(root, "rect", "tile")
    assert "rows 128..255, cols 128..191" in title_of(tile)
    assert any("2 multicast CTAs" in t for t in all_text(root))
    assert [b.get("data-cta") for b in elements(root, "rect", "box")] == ["0", "1"]
    assert [(b["m0"], b["m1"]) for b in _boxes(root)] == [(128, 192), (192, 256)]


def test_a_tma_tile_coordinate_outside_the_tensor_is_rejected():
    atom, g = _tma(1)
    with pytest.raises(cute.CuteValueError, match=r"outside the \(4,4\) grid"):
        viz.tma_svg(atom, g, (4, 0))


def test_a_tma_picture_needs_a_tma_atom():
    with pytest.raises(cute.CuteTypeError, match="make_tiled_tma_atom"):
        viz.tma_svg(cute.make_copy_atom(cute.CopyUniversalOp(), cute.Float16), (8, 8))


def test_to_svg_picks_the_picture_of_each_kind_of_object():
    atom, g = _tma(1)
    assert any("TMA" in t for t in all_text(parse(viz.to_svg(atom, gmem=g))))
    assert len(cells(parse(viz.to_svg(_tiled_copy())))) == 2 * 256
    assert len(cells(parse(viz.to_svg(cute.Layout((3, 3)))))) == 9


def test_every_picture_title_names_what_it_shows():
    root = parse(viz.layout_svg(cute.Layout((2, 2), (1, 2))))
    assert root.find(SVG + "title").text == "(2,2):(1,2)"
