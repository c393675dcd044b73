"""How TMA fills a buffer, read from its layout (docs/HARDWARE-RULES.md#tma and #swizzle-modes).

Expected boxes come from the hardware rules, not from the code: with a swizzle the box's
inner dimension is at most one swizzle row (32/64/128 bytes), so a K-major MMA tile is cut
into K / (row_bytes / esize) boxes; a row-major tile is one box as wide as its rows; box
dimensions are at most 256 elements; a box's inner bytes are a multiple of 16.
"""

from __future__ import annotations

import pytest

from tilemem import SMEMPool
from tilemem.errors import TilememError, TMAError
from tilemem.layout import SwizzleMode, TileLayout, mma_shared_layout
from tilemem.layout.tma import tma_fill


@pytest.mark.parametrize(
    "mode,dtype,shape,box,boxes",
    [
        # 128B: 128-byte rows = 64 bf16; K = 128 -> 2 boxes of 64 x R
        ("128B", "bfloat16", (64, 128), (64, 64), 2),
        ("64B", "bfloat16", (64, 64), (32, 64), 2),
        ("32B", "bfloat16", (64, 64), (16, 64), 4),
        ("128B", "uint8", (32, 256), (128, 32), 2),
        ("64B", "float32", (3, 32, 32), (16, 32), 2),
        # SWIZZLE_NONE MMA tiles are 8 x 16-byte core matrices: 16-byte columns (8 bf16)
        ("none", "bfloat16", (64, 64), (8, 64), 8),
        ("none", "uint32", (2, 16, 16), (4, 16), 4),
    ],
)
def test_mma_tiles_move_as_boxes_one_swizzle_row_wide(mode, dtype, shape, box, boxes):
    fill = tma_fill(mma_shared_layout(dtype, mode, shape), dtype, shape)
    assert (fill.box, fill.boxes, fill.swizzle) == (box, boxes, SwizzleMode.parse(mode))


@pytest.mark.parametrize(
    "dtype,shape,box",
    [
        ("bfloat16", (64, 64), (64, 64)),  # 128-byte rows: one box, not eight 16-byte ones
        ("uint8", (32, 48), (48, 32)),
        ("float32", (2, 16, 4), (4, 16)),  # 16-byte rows, two stages
    ],
)
def test_a_row_major_buffer_is_one_box_per_tile_without_swizzle(dtype, shape, box):
    fill = tma_fill(TileLayout.row_major(shape), dtype, shape)
    assert (fill.box, fill.boxes, fill.swizzle) == (box, 1, SwizzleMode.SWIZZLE_NONE)


def test_the_pool_row_major_buffer_gets_the_row_major_fill():
    smem = SMEMPool()
    smem.alloc((8,), "uint8")
    buf = smem.alloc((64, 64), "bfloat16", align=128)
    fill = tma_fill(buf.layout, buf.dtype, buf.shape, buf.byte_offset)
    assert fill.box == (64, 64) and fill.boxes == 1


def test_a_transposed_layout_is_refused():
    layout = TileLayout.of((64, 64), (1, 64))  # column-major: element (r, k) at r + 64 k
    with pytest.raises(TMAError, match="TMA cannot fill the 64x64 bfloat16 buffer") as exc:
        tma_fill(layout, "bfloat16", (64, 64))
    assert isinstance(exc.value, TilememError) and isinstance(exc.value, ValueError)


def test_rows_wider_than_a_box_are_refused():
    # 512 bf16 per row > 256 elements per box dimension
    with pytest.raises(TMAError, match="inner \\(columns\\) box dimension would be 512"):
        tma_fill(TileLayout.row_major((16, 512)), "bfloat16", (16, 512))


def test_rows_that_are_not_16_byte_multiples_are_refused():
    # 12 bytes per row: no box of whole rows, and not an MMA layout either
    with pytest.raises(TMAError, match="cannot fill"):
        tma_fill(TileLayout.row_major((8, 6)), "bfloat16", (8, 6))


def test_a_misaligned_buffer_is_refused_with_the_alignment_to_ask_for():
    # without swizzle a TMA destination is 128-byte aligned (docs/HARDWARE-RULES.md, swizzle table)
    with pytest.raises(TMAError, match=r"start at byte 2 .*align=128"):
        tma_fill(TileLayout.row_major((64, 64)), "bfloat16", (64, 64), byte_offset=2)


def test_swizzled_boxes_must_start_on_the_swizzle_period():
    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    with pytest.raises(TMAError, match="multiple of the 1024 bytes SWIZZLE_128B_ATOM needs"):
        tma_fill(layout, "bfloat16", (64, 64), byte_offset=512)


def test_sub_byte_elements_other_than_packed_fp4_are_refused():
    with pytest.raises(TMAError, match="6-bit elements: copy it as uint8"):
        tma_fill(TileLayout.row_major((8, 64)), "float6_e2m3fn", (8, 64))


def test_fp4_rows_are_half_as_many_bytes():
    # 64 e2m1 packed two per byte (16U4_ALIGN8B) = 32-byte rows: one 64 x 8 box
    fill = tma_fill(TileLayout.row_major((8, 64)), "float4_e2m1fn", (8, 64))
    assert fill.box == (64, 8) and fill.boxes == 1
    # 48 e2m1 = 24 bytes: no 16-byte multiple box fits the rows
    with pytest.raises(TMAError, match="cannot fill"):
        tma_fill(TileLayout.row_major((8, 48)), "float4_e2m1fn", (8, 48))
