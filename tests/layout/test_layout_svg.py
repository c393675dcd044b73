"""layout.to_svg(): the picture of a tile, parsed and checked cell by cell.

Expected positions are worked by hand; banks from 32 banks of 4 bytes
(docs/HARDWARE-RULES.md#shared-memory-capacity), lane quarters from the tcgen05 access rule
(docs/HARDWARE-RULES.md#tensor-memory). Geometry from tilemem.layout.svg's docstring:
cell (r, c) = (40 + 44 c, 46 + 20 r, 44, 20).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tilemem.errors import LayoutError
from tilemem.layout import TileLayout, mma_shared_layout, sf_tmem_layout, tmem_datapath_layout

NS = "{http://www.w3.org/2000/svg}"


def cells(svg: str) -> dict[tuple[int, int], ET.Element]:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    return {
        (int(el.get("data-row")), int(el.get("data-col"))): el
        for el in root.iter(f"{NS}rect")
        if el.get("data-row") is not None
    }


def labels(svg: str) -> set[tuple[str, str, str]]:
    return {(t.get("x"), t.get("y"), t.text) for t in ET.fromstring(svg).iter(f"{NS}text")}


def test_row_major_float32_geometry_offsets_and_banks():
    svg = TileLayout.row_major((4, 8)).to_svg()
    root = ET.fromstring(svg)
    # width 40 + 8 x 44 + 12 = 404, height 46 + 4 x 20 + 12 = 138
    assert (root.get("width"), root.get("height")) == ("404", "138")
    grid = cells(svg)
    assert len(grid) == 32
    cell = grid[(2, 5)]
    assert [cell.get(k) for k in ("x", "y", "width", "height")] == ["260", "86", "44", "20"]
    # row-major: element 2 * 8 + 5 = 21; float32 word 21 -> bank 21
    assert (cell.get("data-offset"), cell.get("data-bank")) == ("21", "21")
    # its label centred at (40 + 5.5 x 44, 46 + 2 x 20 + 14) = (282, 100)
    assert ("282", "100", "21") in labels(svg)
    # row 0 and row 4 of a 32-wide float32 tile share banks column by column
    wide = cells(TileLayout.row_major((2, 32)).to_svg())
    assert all(wide[(0, c)].get("fill") == wide[(1, c)].get("fill") for c in range(32))
    assert len({wide[(0, c)].get("fill") for c in range(32)}) == 32


def test_swizzled_bf16_tile_spreads_a_column_over_banks():
    # 128B swizzle on bf16: 64 elements = 128 bytes per row. Row r, column 0 sits at element
    # 64 r with its 16-byte chunk XORed by r % 8: element 64 r + 8 (r % 8), i.e. byte
    # 128 r + 16 r -> bank (32 r + 4 r) % 32 = 4 r. Row 1: element 72, bank 4.
    svg = mma_shared_layout("bfloat16", "128B", (8, 64)).to_svg("bfloat16")
    grid = cells(svg)
    assert (grid[(1, 0)].get("data-offset"), grid[(1, 0)].get("data-bank")) == ("72", "4")
    assert [grid[(r, 0)].get("data-bank") for r in range(8)] == [str(4 * r) for r in range(8)]
    # the picture says what it colours by
    assert "SMEM banks (16-bit elements)" in svg


def test_sub_byte_elements_share_a_bank_word():
    # fp4: 8 elements per 32-bit word, so elements 0-7 are bank 0 and 8-15 bank 1
    grid = cells(TileLayout.row_major((1, 16)).to_svg("float4_e2m1fn"))
    assert [grid[(0, c)].get("data-bank") for c in range(16)] == ["0"] * 8 + ["1"] * 8


def test_tmem_datapath_cells_show_lane_and_column_coloured_by_quarter():
    # data path F: lane = 32 (r // 16) + r % 16, col = c. Row 16 -> lane 32 (quarter 1),
    # row 63 -> lane 32 x 3 + 15 = 111 (quarter 3)
    svg = tmem_datapath_layout("F", 64, 8).to_svg()
    grid = cells(svg)
    assert len(grid) == 64 * 8
    assert [grid[(16, 3)].get(k) for k in ("data-lane", "data-tcol", "data-quarter")] == [
        "32",
        "3",
        "1",
    ]
    assert grid[(63, 0)].get("data-lane") == "111" and grid[(63, 0)].get("data-quarter") == "3"
    assert grid[(16, 3)].get("fill") != grid[(15, 3)].get("fill")  # quarters 1 and 0
    # label "lane,col" centred in the cell: (40 + 3.5 x 44, 46 + 16 x 20 + 14) = (194, 380)
    assert ("194", "380", "32,3") in labels(svg)


def test_deeper_layouts_fold_leading_dimensions_into_rows():
    # (2 stages, 8 rows, 64 cols) bf16 -> 16 x 64 picture; stage 1 row 0 is grid row 8,
    # element 8 x 64 = 512 (a whole 1024-byte swizzle period: no XOR on row 0)
    grid = cells(mma_shared_layout("bfloat16", "128B", (2, 8, 64)).to_svg("bfloat16"))
    assert max(grid)[0] == 15 and grid[(8, 0)].get("data-offset") == "512"


def test_too_large_or_foreign_layouts_are_refused_with_the_fix():
    big = TileLayout.row_major((128, 256))
    with pytest.raises(LayoutError, match=r"128 x 256 = 32768 cells .*at most 8192.*window"):
        big.to_svg()
    assert big._repr_svg_() is None  # Jupyter falls back to the repr
    assert TileLayout.row_major((2, 2))._repr_svg_().startswith("<svg")
    mixed = TileLayout.of((2, 2), ("1@m", "1@TCol"))
    with pytest.raises(LayoutError, match=r"SMEM \(m\) or TMEM"):
        mixed.to_svg()


def test_scale_factor_layout_draws_its_primary_lanes():
    # sf_tmem_layout(32 rows, SF_K 4, sf_per_mma 4): TLane = r % 32, TCol = k (one MMA, M = 1)
    grid = cells(sf_tmem_layout(32, 4, 4).to_svg("float8_e8m0fnu"))
    assert grid[(5, 2)].get("data-lane") == "5" and grid[(5, 2)].get("data-tcol") == "2"
