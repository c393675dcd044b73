"""Index arithmetic of a swizzle that permutes nothing (``swizzle_len`` 0)."""

import itertools

from tilemem.ir import interpret, layout_index
from tilemem.ir.nodes import Var
from tilemem.layout import ComposeLayout, SwizzleLayout, TileLayout


def test_a_zero_length_swizzle_leaves_the_row_major_offsets():
    # Swizzle(pe=3, L=0, a=3): c ^= (c & 0) >> 3 changes nothing, so (i, j) of an 8 x 64
    # row-major tile stays at 64 i + j
    layout = ComposeLayout(SwizzleLayout(3, 0, 3), TileLayout.row_major((8, 64)))
    (m,) = layout_index(layout, [Var("i"), Var("j")]).values()
    for i, j in itertools.product(range(8), range(64)):
        assert interpret(m, {"i": i, "j": j}) == 64 * i + j


def test_the_same_tile_under_a_128_byte_swizzle_moves_16_byte_chunks():
    # bf16 (8 elements per 16 bytes, pe=3), L=3, a=3: element (3, 5) is offset 197 = 3 * 64 + 5,
    # chunk 197 >> 3 = 24, 24 ^ ((24 & 0b111000) >> 3) = 24 ^ 3 = 27, back: 27 << 3 | 5 = 221
    # (row 3's chunk 0 XOR row 3 = chunk 3: 3 * 64 + 3 * 8 + 5 = 221)
    layout = ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout.row_major((8, 64)))
    (m,) = layout_index(layout, [Var("i"), Var("j")]).values()
    assert interpret(m, {"i": 3, "j": 5}) == 221
    assert interpret(m, {"i": 0, "j": 5}) == 5  # row 0: chunk XOR 0
