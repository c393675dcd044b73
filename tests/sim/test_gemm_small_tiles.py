"""CTA tiles of 32, 16 and 8 rows over any M (``a_rows`` < 64), alone and in clusters along M
that share B, in the simulator against numpy's fp32 product.

One consumer warpgroup computes a ``wgmma m64`` fragment of which only the top ``a_rows`` rows
are the tile's (the rest come from A's zeroed rows); C's tensor map stores only those rows
(``gemm_plan.c_box``), since a 64-row store would write zeros over the next M tile's rows. C
starts as NaN, so a tile nobody writes fails; the tolerance is C's bf16 rounding (2^-8
relative) plus fp32 reordering, as in test_gemm_rows64.py.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.cuda.tma import tile_map
from tilemem.errors import GemmShapeError
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent, splitk_reduce, stream_k_grid
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import check_product, gemm_maps, random_operands  # noqa: E402  (needs ml_dtypes)


def test_small_tiles_cover_their_rows_of_c_and_store_only_those():
    assert [gemm_plan.tile_rows(r) for r in (128, 64, 32, 16, 8)] == [128, 64, 32, 16, 8]
    # the wgmma reads 64 rows of A however few the tile has: the stage keeps 64
    assert [gemm_plan.stage_rows(r) for r in (128, 64, 32, 16, 8)] == [128, 64, 64, 64, 64]
    box = gemm_plan.c_box(32, 64)
    assert box.shape == (32, 64) and box.dtype.name == "bfloat16"
    assert gemm_plan.c_box(8, 240).shape == (8, 48)  # 240 = 5 x 48-column slices
    with pytest.raises(GemmShapeError, match="c_box is for tiles of fewer than 64 rows"):
        gemm_plan.c_box(64, 64)
    # 8-row tiles: one 1024-byte swizzle atom of A a stage (8 rows x 128 bytes)
    assert gemm_plan.a_box(8).shape == (8, 64)
    assert hopper_gemm_persistent(cluster_m=2, a_rows=8, tile_n=64).name.endswith("_n64_a8")


@functools.lru_cache
def _program(a_rows: int, tile_n: int, cluster_m: int = 1, **kw):
    print(f"building the GEMM with {a_rows}-row tiles (x {tile_n}, cluster {cluster_m}, {kw})")
    return hopper_gemm_persistent(cluster_m=cluster_m, tile_n=tile_n, a_rows=a_rows, **kw)


def _simulate(program, *args, seed: int = 3, **kwargs) -> None:
    result = sim.run(program, *args, schedule="random", seed=seed, **kwargs)
    assert result.ok, result.hazards


@pytest.mark.parametrize(
    ("m", "n", "k", "a_rows", "tile_n", "cluster_m", "grid"),
    [
        # 3 M tiles of 32 rows in 2x1 clusters sharing B (each CTA loads 32 of B's 64 rows):
        # the second pair's second tile lies past M (rows 96-127: loads zero-filled, stores
        # clipped); 2 N tiles (the second 8 wide), 3 K tiles (the last partial)
        (80, 72, 168, 32, 64, 2, 4),
        # M = 16 as two 8-row tiles of a pair: 2 units of 64 columns, one per cluster
        (16, 128, 128, 8, 64, 2, 4),
        # 16-row tiles in clusters of four (32 of B's 128 rows each), 5 M tiles (the second
        # cluster's last three past M)
        (72, 128, 256, 16, 128, 4, 8),
        # CTAs alone: 5 M tiles of 16 rows x 2 N tiles on 3 CTAs, 3 or 4 tiles each
        (70, 96, 64, 16, 64, 1, 3),
    ],
)
def test_small_tiles_alone_and_in_clusters_match_numpy(m, n, k, a_rows, tile_n, cluster_m, grid):
    a, b, c = random_operands(m, n, k, seed=m + n + k)
    tiles = (ceil_div(m, a_rows), ceil_div(n, tile_n), ceil_div(k, 64))
    cluster = (cluster_m, 1, 1) if cluster_m > 1 else None
    maps = gemm_maps(a, b, c, tile_n, cluster_m, a_rows=a_rows)
    program = _program(a_rows, tile_n, cluster_m)
    _simulate(program, *maps, *tiles, 8, grid=(grid,), cluster=cluster, sms=grid // cluster_m)
    check_product(a, b, c)


def test_a_64_row_store_of_a_small_tile_writes_over_the_next_tile():
    # the reason for c_box, shown: with the staging tile's 64-row box, the first 32-row tile's
    # store writes its fragment's rows 32-63 (zeros, from A's zeroed rows) over the second
    # tile's rows of C. Two CTAs resident together, one M tile each: the simulator reports
    # the two TMA stores of rows 32-63 (elements 2048..4095) as a race on every schedule, and
    # on some the zeros land last. With c_box, no race and the product.
    m, n, k = 64, 64, 64
    a, b, _ = random_operands(m, n, k, seed=5)
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 64, 32)
    zeroed = 0
    for seed in range(4):
        c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
        maps = gemm_maps(a, b, c, 64, a_rows=32)[:2] + [tile_map(c, plan.buffer("C_stage"))]
        run = dict(grid=(2,), sms=2, schedule="random", seed=seed)
        result = sim.run(_program(32, 64), *maps, 2, 1, 1, 8, **run)
        assert [(h.kind, h.buffer, h.where) for h in result.hazards] == [
            ("race", "tma_c", "elements 2048..4095")
        ]
        zeroed += int((c.astype(np.float32)[32:] == 0).all())
    assert zeroed > 0
    for seed in range(4):
        c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
        maps = gemm_maps(a, b, c, 64, a_rows=32)
        _simulate(_program(32, 64), *maps, 2, 1, 1, 8, grid=(2,), sms=2, seed=seed)
        check_product(a, b, c)


def test_split_k_of_32_row_tiles_stores_only_the_tiles_rows():
    # 3 M tiles of 32 rows (M = 70) x 2 N tiles, 4 K tiles in 2 ranges on 5 CTAs: each range's
    # sums go to rows split * M + r of the workspace for the tile's own 32 rows only (rows
    # 32-63 of the fragment are the next tile's rows of C)
    m, n, k, tile_n, splits = 70, 72, 256, 64, 2
    a, b, c = random_operands(m, n, k, seed=13)
    partial = np.full((splits * m, 2 * tile_n), np.nan, np.float32)
    maps = gemm_maps(a, b, None, tile_n, a_rows=32)
    program = _program(32, tile_n, split_k=True)
    _simulate(program, *maps, 3, 2, 2, 8, splits, m, partial, grid=(5,), sms=5)
    done = sim.run(splitk_reduce(), partial, c, splits, grid=(ceil_div(m * n, 256),))
    assert done.ok, done.hazards
    check_product(a, b, c)


def test_stream_k_of_16_row_tiles_matches_numpy():
    # 40 rows: 3 M tiles of 16, one group of 3 CTAs a unit (m_group 3); 2 units (N tiles of
    # 64) x 5 K tiles = 10 steps over 2 groups: [0, 5), [5, 10); the last tile past M
    m, n, k, tile_n = 40, 128, 320, 64
    grid, m_group = stream_k_grid(3, 2, 5, 6)
    assert (grid, m_group) == (6, 3)
    a, b, c = random_operands(m, n, k, seed=17)
    work = np.full((grid * 2 * tile_n // 2, 128), np.nan, np.float32)
    flags = np.zeros(grid * 2, np.uint32)
    maps = gemm_maps(a, b, c, tile_n, a_rows=16)
    program = _program(16, tile_n, stream_k=True)
    _simulate(program, *maps, 3, 2, 5, 8, m_group, work, flags, grid=(grid,), sms=grid)
    assert not flags.any(), flags
    check_product(a, b, c)


def test_small_tiles_in_clusters_along_n_share_8_row_slices_of_a():
    # 16-row tiles in 1x2 clusters: each CTA loads 8 of the tile's 16 rows of A and multicasts
    # them; 2 M tiles x 4 N tiles of 64 on 4 CTAs
    m, n, k, tile_n = 24, 256, 128, 64
    a, b, c = random_operands(m, n, k, seed=19)
    maps = gemm_maps(a, b, c, tile_n, a_rows=16, cluster_n=2)
    program = _program(16, tile_n, cluster_n=2)
    _simulate(program, *maps, 2, 4, 2, 8, grid=(4,), cluster=(2, 1, 1), sms=2)
    check_product(a, b, c)


def test_stream_k_pairs_of_32_row_tiles_match_numpy():
    # 80 rows: 3 M tiles of 32 in 2x1 clusters (a group is the pair; the second pair's second
    # tile past M), 2 M units x 2 N tiles x 5 K tiles = 20 steps over 4 pairs of 5 each
    m, n, k, tile_n = 80, 128, 320, 64
    grid, m_group = stream_k_grid(3, 2, 5, 8, None, 2)
    assert (grid, m_group) == (8, 2)
    a, b, c = random_operands(m, n, k, seed=23)
    work = np.full((grid * 2 * tile_n // 2, 128), np.nan, np.float32)
    flags = np.zeros(grid * 2, np.uint32)
    maps = gemm_maps(a, b, c, tile_n, cluster_m=2, a_rows=32)
    program = _program(32, tile_n, 2, stream_k=True)
    run = dict(grid=(grid,), cluster=(2, 1, 1), sms=4)
    _simulate(program, *maps, 3, 2, 5, 8, m_group, work, flags, **run)
    assert not flags.any(), flags
    check_product(a, b, c)


def test_fp8_pairs_of_8_row_tiles_match_numpy():
    # promoted fp8 (every two K tiles), 3 M tiles of 8 rows in pairs, 3 K tiles of 128: the
    # idle consumer zeroes A's rows 8-63 of every stage with fp8 zeros (raw bytes)
    m, n, k, tile_n = 20, 128, 384, 64
    a, b, c = random_operands(m, n, k, seed=29, element=ml_dtypes.float8_e4m3fn)
    maps = gemm_maps(a, b, c, tile_n, cluster_m=2, a_rows=8)
    program = hopper_gemm_persistent(
        cluster_m=2,
        dtype="float8_e4m3fn",
        tile_n=tile_n,
        a_rows=8,
        promote=True,
        promote_every=2,
    )
    _simulate(program, *maps, 3, 2, 3, 8, grid=(4,), cluster=(2, 1, 1), sms=2)
    check_product(a, b, c)
