"""TMA fills pinned at the hardware's edges (docs/HARDWARE-RULES.md#tma): each box dimension holds
at most 256 elements, a box's inner dimension is a multiple of 16 bytes, and TMA fills shared
memory tiles of shape (..., R, K) only. SWIZZLE_NONE MMA operands are 8-row x 16-byte core
matrices (docs/DESIGN.md#named-layouts), so they move as boxes one 16-byte column wide.
"""

import pytest

from tilemem.errors import TMAError
from tilemem.layout import SwizzleMode, TileLayout, mma_shared_layout, tmem_datapath_layout
from tilemem.layout.tma import tma_fill


def test_256_rows_fit_one_box():
    # (256, 16) uint8 row-major: 16-byte rows, one box of 16 x 256
    fill = tma_fill(TileLayout.of((256, 16)), "uint8", (256, 16))
    assert (fill.box, fill.boxes) == ((16, 256), 1)


def test_257_rows_are_one_row_too_many():
    with pytest.raises(
        TMAError,
        match=r"outer \(rows\) box dimension would be 257 elements, above the 256 a box allows",
    ):
        tma_fill(TileLayout.of((257, 16)), "uint8", (257, 16))


def test_an_unswizzled_8_bit_operand_moves_in_16_element_columns():
    # float8 core matrices are 8 rows x 16 bytes = 16 elements: K = 32 is two boxes of 16 x 8
    layout = mma_shared_layout("float8_e4m3fn", SwizzleMode.SWIZZLE_NONE, (8, 32))
    fill = tma_fill(layout, "float8_e4m3fn", (8, 32))
    assert (fill.box, fill.boxes) == ((16, 8), 2)


def test_float64_rows_of_two_elements_are_16_bytes():
    # 2 x 8 bytes = 16 bytes per row: one box of 2 x 8
    fill = tma_fill(TileLayout.of((8, 2)), "float64", (8, 2))
    assert (fill.box, fill.boxes) == ((2, 8), 1)


def test_a_one_dimensional_buffer_has_no_rows():
    with pytest.raises(TMAError, match=r"a 64 float32 buffer has no rows"):
        tma_fill(TileLayout.of((64,)), "float32", (64,))


def test_a_tensor_memory_layout_is_no_tma_destination():
    layout = tmem_datapath_layout("D", 128, 32)
    with pytest.raises(TMAError, match=r"the 128x32 float32 buffer's layout has no 'm' axis"):
        tma_fill(layout, "float32", (128, 32))


def test_a_shape_that_does_not_match_the_layout_is_refused():
    # an 8 x 16 layout holds 128 elements; (4, 16) names 64 of them
    with pytest.raises(TMAError, match=r"the layout holds 128 elements but shape \(4, 16\) has 64"):
        tma_fill(TileLayout.of((8, 16)), "uint8", (4, 16))


def test_a_shape_with_a_negative_extent_is_refused():
    with pytest.raises(TMAError, match=r"shape must be a non-empty tuple of positive integers"):
        tma_fill(TileLayout.of((8, 16)), "uint8", (-8, -16))
