"""64-row CTA tiles (``a_rows=64`` over any M) in the simulator against numpy's fp32 product.

With 64 rows of A a stage one consumer warpgroup computes a ``64 x tile_n`` tile and the
other frees the stages; M splits into tiles of 64 rows, so a product of a few hundred rows
fills twice as many SMs as with 128-row tiles. Tiled alone and in 2x1 clusters (the last
pair's second tile past M), stream-K with groups of four M tiles, and split-K. C starts as
NaN, so a tile nobody writes fails; the tolerance is C's bf16 rounding (2^-8 relative) plus
fp32 reordering, as in test_gemm_shapes.py.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.errors import GemmShapeError
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent, splitk_reduce, stream_k_grid
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import check_product, gemm_maps, random_operands  # noqa: E402  (needs ml_dtypes)


def test_64_row_tiles_get_the_bytes_of_the_unused_rows_as_stages():
    # sm_90a: 227 KiB = 232448 bytes a CTA. 64 x 128 bf16: a stage is A 64 x 64 x 2 = 8192 +
    # B 128 x 64 x 2 = 16384 + two 8-byte barriers = 24592 bytes; C staging is one consumer's
    # two 64 x 64 bf16 tiles = 16384. (232448 - 16384) / 24592 = 8.79: 8 stages (6 with
    # 128-row tiles: (232448 - 32768) / (16384 + 16384 + 16) = 6.09)
    assert gemm_plan.tile_rows(64) == 64 and gemm_plan.tile_rows(128) == 128
    assert [gemm_plan.computing_consumers(r) for r in (128, 64, 32, 16, 8)] == [2, 1, 1, 1, 1]
    for bad in (48, 64.0, True, -64):
        with pytest.raises(GemmShapeError, match="a stage loads one of"):
            gemm_plan.computing_consumers(bad)
    assert gemm_plan.stages("sm_90a", "bfloat16", 128, a_rows=64).stages == 8
    assert gemm_plan.stages("sm_90a", "bfloat16", 128).stages == 6
    # 64 x 256: (232448 - 16384) / (8192 + 32768 + 16) = 5.27: 5 stages
    assert gemm_plan.stages("sm_90a", "bfloat16", 256, a_rows=16).stages == 5
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 128, a_rows=64)
    assert plan.buffer("A").shape == (8, 64, 64)
    assert plan.buffer("C_stage").shape == (2, 64, 64)


def test_clusters_take_64_row_tiles():
    assert hopper_gemm_persistent(cluster_m=2, a_rows=64, tile_n=64).name.endswith("_n64_a64")


@functools.lru_cache
def _program(tile_n: int, cluster_m: int = 1, split_k: bool = False, stream_k: bool = False):
    print(
        f"building the GEMM with 64-row tiles (64 x {tile_n}, cluster {cluster_m}, "
        f"split_k={split_k}, stream_k={stream_k})"
    )
    return hopper_gemm_persistent(
        cluster_m=cluster_m, tile_n=tile_n, split_k=split_k, a_rows=64, stream_k=stream_k
    )


@pytest.mark.parametrize(
    ("m", "n", "k", "tile_n", "cluster_m", "grid"),
    [
        # 4 M tiles of 64 rows (the last 8 rows) x 3 N tiles (the last 8 wide), 3 K tiles:
        # 12 tiles on 5 CTAs, 2 or 3 each through the 13-stage ring
        (200, 136, 192, 64, 1, 5),
        # 3 M tiles in 2x1 clusters sharing B: the second pair's second tile is past M
        # (loads zero-filled, stores clipped); 2 N tiles, 2 K tiles (the second partial)
        (130, 72, 104, 64, 2, 4),
        # 2 M tiles x 2 N tiles of 128 (the second 8 wide), 4 K tiles through the 8-stage ring
        (128, 136, 256, 128, 1, 3),
        # one M tile of 48 rows (one_tile_width's products): 64 x 160 tiles, their C in two
        # 80-column slices, the second N tile 8 wide; 64 x 96, 3 N tiles over 2 CTAs
        (48, 168, 192, 160, 1, 2),
        (40, 200, 128, 96, 1, 2),
    ],
)
def test_tiled_64_row_tiles_match_numpy(m, n, k, tile_n, cluster_m, grid):
    a, b, c = random_operands(m, n, k, seed=m + n + k)
    tiles = (ceil_div(m, 64), ceil_div(n, tile_n), ceil_div(k, 64))
    cluster = (cluster_m, 1, 1) if cluster_m > 1 else None
    maps = gemm_maps(a, b, c, tile_n, cluster_m, a_rows=64)
    run = dict(grid=(grid,), cluster=cluster, sms=grid // cluster_m)  # every CTA at once
    _simulate(_program(tile_n, cluster_m), *maps, *tiles, 8, **run)
    check_product(a, b, c)


def _simulate(program, *args, **kwargs) -> None:
    """``program`` in the simulator (random schedule), which must finish without hazards."""
    result = sim.run(program, *args, schedule="random", seed=3, **kwargs)
    assert result.ok, result.hazards


def test_stream_k_groups_of_64_row_tiles_match_numpy():
    # 200 rows: 4 M tiles of 64, one group of 4 CTAs (m_group 4) a unit; 3 N tiles x 5 K tiles
    # = 15 steps over 2 groups: [0, 7), [7, 15): group 1 hands tile 1's steps 2-4 over
    m, n, k, tile_n = 200, 136, 320, 64
    assert stream_k_grid(4, 3, 5, 8) == (8, 4)
    a, b, c = random_operands(m, n, k, seed=7)
    work = np.full((8 * 2 * tile_n // 2, 128), np.nan, np.float32)
    flags = np.zeros(8 * 2, np.uint32)
    maps = gemm_maps(a, b, c, tile_n, a_rows=64)
    _simulate(_program(tile_n, stream_k=True), *maps, 4, 3, 5, 8, 4, work, flags, grid=(8,), sms=8)
    assert not flags.any(), flags
    # the hand-over: CTAs 4-7 (group 1), consumer 0 only, each its slot of 32 rows (one a
    # register of the 64 x 64 fragment) at row (2 * cta + 0) * 32; nothing else is written
    handed = [row for row in range(0, 512, 32) if np.isfinite(work[row : row + 32]).any()]
    assert handed == [256, 320, 384, 448]
    check_product(a, b, c)


def test_split_k_of_64_row_tiles_matches_numpy():
    # 130 rows: 3 M tiles of 64; N = 72 -> 2 tiles of 64; 4 K tiles in 2 ranges; 12 units on 5
    # CTAs, each range's fp32 sums to its rows of the workspace, then the reduction
    m, n, k, tile_n, splits = 130, 72, 256, 64, 2
    a, b, c = random_operands(m, n, k, seed=11)
    partial = np.full((splits * m, 2 * tile_n), np.nan, np.float32)
    maps = gemm_maps(a, b, None, tile_n, a_rows=64)
    _simulate(_program(tile_n, split_k=True), *maps, 3, 2, 2, 8, splits, m, partial, grid=(5,))
    done = sim.run(splitk_reduce(), partial, c, splits, grid=(ceil_div(m * n, 256),))
    assert done.ok, done.hazards
    check_product(a, b, c)
