"""Register fragments against the PTX ISA figures (by hand) and CuTe's layouts, evaluated with
pycute: the wgmma accumulator (``CLayout_64xN``, cute/atom/mma_traits_sm90_gmma.hpp) and the
tcgen05.ld shapes (``Copy_Traits<SM100_TMEM_LOAD_*>::DstLayout``, copy_traits_sm100.hpp)."""

from __future__ import annotations

import numpy as np
import pytest

from tilemem.errors import LayoutError
from tilemem.layout.fragments import (
    TMEM_SHAPES,
    lane_quarter,
    mma_result_cells,
    tmem_ld_cells,
    wgmma_accumulator,
)

pycute = pytest.importorskip("pycute")
Layout = pycute.Layout


def test_wgmma_accumulator_by_hand():
    # PTX ISA "wgmma .m64nNk16 D fragment" figure: T0 holds d0,d1 at row 0 cols 0,1 and
    # d2,d3 at row 8; T5 (lane 5) row 1 cols 2,3; warp 1 starts at row 16; d4 is col 8
    rows, cols = wgmma_accumulator(16)
    assert [(rows[0, i], cols[0, i]) for i in range(4)] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    assert (rows[5, 0], cols[5, 0]) == (1, 2)
    assert (rows[32, 0], cols[32, 0]) == (16, 0)
    assert (rows[0, 4], cols[0, 4]) == (0, 8)


@pytest.mark.parametrize("n", [8, 16, 64, 120])
def test_wgmma_accumulator_matches_cute(n):
    # CuTe SM90 CLayout_64xN: (thread, value) -> m + 64 n
    clayout = Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))
    rows, cols = wgmma_accumulator(n)
    for t in range(128):
        for v in range(n // 2):
            idx = clayout(t, v)
            assert (rows[t, v], cols[t, v]) == (idx % 64, idx // 64), (t, v)


@pytest.mark.parametrize("n", [8, 24, 256])
def test_wgmma_accumulator_covers_the_tile_once(n):
    rows, cols = wgmma_accumulator(n)
    flat = rows * n + cols
    assert sorted(flat.ravel().tolist()) == list(range(64 * n))


# CuTe TMEM load atoms: (shape, num) -> (DstLayout, bits per TMEM lane of the ValID, half split)
CUTE_LOADS = {
    ("32x32b", 1): (Layout((32, 32), (32, 1)), 32),
    ("32x32b", 2): (Layout((32, 64), (64, 1)), 64),
    ("16x64b", 1): (Layout(((2, 2, 8), 32), ((512, 32, 64), 1)), 64),
    ("16x64b", 2): (Layout(((2, 2, 8), (32, 2)), ((1024, 32, 128), (1, 64))), 128),
    ("16x128b", 1): (Layout(((4, 8), (32, 2)), ((32, 128), (1, 1024))), 128),
    ("16x128b", 2): (Layout(((4, 8), (32, 2, 2)), ((32, 256), (1, 2048, 128))), 256),
    ("16x256b", 1): (Layout(((4, 8), (64, 2)), ((64, 256), (1, 2048))), 256),
    ("16x256b", 2): (Layout(((4, 8), (64, 2, 2)), ((64, 512), (1, 4096, 256))), 512),
    ("16x32bx2", 1): (Layout(((16, 2), 32), ((64, 32), 1)), 64),
    ("16x32bx2", 2): (Layout(((16, 2), 64), ((128, 64), 1)), 128),
}


@pytest.mark.parametrize("shape, num", sorted(CUTE_LOADS))
def test_tmem_ld_matches_cute(shape, num):
    """CuTe's DstLayout maps (thread, bit of its registers) to bit ``b`` of the 16/32-lane
    block, ``lane = b // W``, 32-bit column ``(b % W) // 32``; its 16x32bx2 atoms use
    ``immHalfSplitoff = num``."""
    dst, width = CUTE_LOADS[(shape, num)]
    lanes, cols = tmem_ld_cells(shape, num, half_split=num)
    regs = lanes.shape[1]
    for t in range(32):
        for r in range(regs):
            b = dst(t, 32 * r)  # the register's first bit
            assert (lanes[t, r], cols[t, r]) == (b // width, (b % width) // 32), (t, r)


@pytest.mark.parametrize("shape", sorted(TMEM_SHAPES))
def test_tmem_ld_touches_each_cell_once(shape):
    s = TMEM_SHAPES[shape]
    lanes, cols = tmem_ld_cells(shape, 4, half_split=4)
    cells = set(zip(lanes.ravel().tolist(), cols.ravel().tolist()))
    assert len(cells) == lanes.size  # no cell read twice
    assert max(lanes.ravel()) == s.lanes - 1


def test_tmem_ld_repetitions_move_along_columns():
    # 16x256b.x2: registers 4..7 are the second repetition, 8 columns further
    lanes, cols = tmem_ld_cells("16x256b", 2)
    np.testing.assert_array_equal(cols[:, 4:], cols[:, :4] + 8)
    np.testing.assert_array_equal(lanes[:, 4:], lanes[:, :4])


def test_tmem_ld_num_is_checked():
    with pytest.raises(LayoutError, match=r"\[1, 32\]"):
        tmem_ld_cells("16x256b", 64)
    with pytest.raises(LayoutError, match="shape must be one of"):
        tmem_ld_cells("8x32b", 1)


def test_lane_quarter():
    # PTX ISA "Tensor Memory" access restrictions: warp w reaches lanes 32 (w % 4) + 0..31
    assert lane_quarter(5) == range(32, 64)
    assert lane_quarter(3) == range(96, 128)


def test_mma_results_by_hand():
    lanes, cols = mma_result_cells(128, 16, 1)  # data path D: row r in lane r
    assert (lanes[77, 5], cols[77, 5]) == (77, 5)
    lanes, cols = mma_result_cells(64, 16, 1)  # data path F: rows 16 q .. in lanes 32 q ..
    assert (lanes[17, 3], cols[17, 3]) == (33, 3)
    lanes, cols = mma_result_cells(128, 32, 2)  # B: 64 rows per CTA, N halves on lanes + 64
    assert (lanes[5, 20], cols[5, 20]) == (69, 4)
    lanes, cols = mma_result_cells(256, 32, 2)  # A: 128 rows per CTA
    assert lanes.shape == (128, 32) and lanes[100, 0] == 100
    with pytest.raises(LayoutError, match="M=64 with cta_group::2"):
        mma_result_cells(64, 16, 2)
