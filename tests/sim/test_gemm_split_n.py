"""64-row tiles that both consumer warpgroups compute, each half of the tile's columns
(``split_n``), in the simulator against numpy's fp32 product: tiled alone and in clusters along
M, split-K, stream-K, promoted fp8. C (and the workspaces) start as NaN, so an element nobody
writes fails; the tolerance is C's bf16 rounding (2^-8 relative) plus fp32 reordering.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.errors import GemmShapeError
from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent, splitk_reduce, stream_k_grid
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import check_product, gemm_maps, random_operands  # noqa: E402  (needs ml_dtypes)

FP8 = "float8_e4m3fn"


def _simulate(program, *args, seed: int = 3, **kwargs) -> None:
    result = sim.run(program, *args, schedule="random", seed=seed, **kwargs)
    assert result.ok, result.hazards


def test_split_n_kernels_give_each_consumer_half_the_columns():
    program = hopper_gemm_persistent(tile_n=128, a_rows=64, split_n=True)
    assert program.name == "hopper_gemm_persistent_n128_a64_splitn"
    # each consumer's wgmma is m64n64 on its half (one consumer alone: m64n128)
    assert set(re.findall(r"m64n\d+k\d+", program.source)) == {"m64n64k16"}
    alone = hopper_gemm_persistent(tile_n=128, a_rows=64).source
    assert set(re.findall(r"m64n\d+k\d+", alone)) == {"m64n128k16"}
    # both consumers' C staging tiles, so a ring no deeper than one consumer's
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 128, 64, split_n=True)
    assert plan.buffer("C_stage").shape[0] == 4
    assert gemm_plan.stages(tile_n=128, a_rows=64).stages == 8
    with pytest.raises(GemmShapeError, match=r"True only with a_rows=64; got split_n=True"):
        gemm_plan.requests(a_rows=128, split_n=True)
    with pytest.raises(GemmShapeError, match=r"got split_n='yes'"):
        gemm_plan.stages(a_rows=64, split_n="yes")
    for bad, match in [
        (dict(tile_n=128, a_rows=128), r"needs a_rows=64"),
        (dict(tile_n=128, a_rows=32), r"got a_rows=32"),
        (dict(tile_n=192, a_rows=64), r"tile_n in \(256, 160, 128, 96\); .*tile_n=192"),
        (dict(tile_n=64, a_rows=64), r"tile_n=64"),
        (dict(tile_n=128, a_rows=64, cluster_n=2), r"cluster_n=2"),
    ]:
        with pytest.raises(GemmShapeError, match=match):
            hopper_gemm_persistent(split_n=True, **bad)
    with pytest.raises(GemmShapeError, match=r"split_n is True or False, got 1"):
        hopper_gemm_persistent(tile_n=128, a_rows=64, split_n=1)


@pytest.mark.parametrize(
    ("m", "n", "k", "tile_n", "cluster_m", "grid"),
    [
        # 3 M tiles of 64 (the last 8 rows) x 2 N tiles of 128 (the second 8 wide: its right
        # half all past N) on 4 CTAs, 3 K tiles (the last partial)
        (136, 136, 160, 128, 1, 4),
        # 256 wide (two m64n128 halves), 2 M tiles in a 2x1 cluster sharing B
        (100, 256, 128, 256, 2, 2),
        # 96 wide: halves of 48 columns, one unswizzled 48-column C slice each
        (64, 200, 192, 96, 1, 3),
        # 160 wide: halves of 80, one 80-column slice each
        (70, 160, 64, 160, 1, 2),
    ],
)
def test_split_n_tiles_match_numpy(m, n, k, tile_n, cluster_m, grid):
    a, b, c = random_operands(m, n, k, seed=m + n + k)
    tiles = (ceil_div(m, 64), ceil_div(n, tile_n), ceil_div(k, 64))
    cluster = (cluster_m, 1, 1) if cluster_m > 1 else None
    maps = gemm_maps(a, b, c, tile_n, cluster_m, a_rows=64)
    print(f"building the GEMM with 64 x {tile_n} tiles in halves (cluster {cluster_m})")
    program = hopper_gemm_persistent(cluster_m, tile_n=tile_n, a_rows=64, split_n=True)
    _simulate(program, *maps, *tiles, 8, grid=(grid,), cluster=cluster, sms=grid // cluster_m)
    check_product(a, b, c)


def test_one_half_stored_at_the_other_halfs_columns_is_wrong(monkeypatch):
    # both consumers' fragments placed at the first half's columns: half of C is never written
    # (NaN) and the first half is written twice (a race between the consumers' TMA stores)
    monkeypatch.setattr(hopper, "_origin", lambda acc, tile_n, consumer, m0, n0: (m0, n0))
    m, n, k, tile_n = 64, 128, 64, 128
    a, b, c = random_operands(m, n, k, seed=2)
    program = hopper_gemm_persistent(tile_n=tile_n, a_rows=64, split_n=True)
    result = sim.run(program, *gemm_maps(a, b, c, tile_n, a_rows=64), 1, 1, 1, 8, grid=(1,))
    assert not result.ok or np.isnan(c.astype(np.float32)).any()


def test_split_k_of_split_n_tiles_matches_numpy():
    # 2 M tiles of 64 x 2 N tiles of 128, 4 K tiles in 2 ranges on 5 CTAs
    m, n, k, tile_n, splits = 100, 200, 256, 128, 2
    a, b, c = random_operands(m, n, k, seed=13)
    partial = np.full((splits * m, 2 * tile_n), np.nan, np.float32)
    maps = gemm_maps(a, b, None, tile_n, a_rows=64)
    program = hopper_gemm_persistent(tile_n=tile_n, a_rows=64, split_k=True, split_n=True)
    _simulate(program, *maps, 2, 2, 2, 8, splits, m, partial, grid=(5,), sms=5)
    done = sim.run(splitk_reduce(), partial, c, splits, grid=(ceil_div(m * n, 256),))
    assert done.ok, done.hazards
    check_product(a, b, c)


def test_stream_k_of_split_n_tiles_matches_numpy():
    # 3 M tiles of 64 (a group of 3 CTAs a unit), 2 N tiles of 128 x 5 K tiles over 2 groups
    m, n, k, tile_n = 150, 256, 320, 128
    grid, m_group = stream_k_grid(3, 2, 5, 6)
    assert (grid, m_group) == (6, 3)
    a, b, c = random_operands(m, n, k, seed=17)
    work = np.full((grid * 2 * tile_n // 2, 128), np.nan, np.float32)
    flags = np.zeros(grid * 2, np.uint32)
    maps = gemm_maps(a, b, c, tile_n, a_rows=64)
    program = hopper_gemm_persistent(tile_n=tile_n, a_rows=64, stream_k=True, split_n=True)
    _simulate(program, *maps, 3, 2, 5, 8, m_group, work, flags, grid=(grid,), sms=grid)
    assert not flags.any(), flags
    check_product(a, b, c)


def test_promoted_fp8_split_n_tiles_match_numpy():
    # fp8 promoted every two K tiles, 64 x 128 in halves: 2 M tiles x 1 N tile, 5 K tiles of
    # 128 (two pairs and one left over), both consumers with one fragment each
    m, n, k, tile_n = 90, 128, 640, 128
    a, b, c = random_operands(m, n, k, seed=29, element=ml_dtypes.float8_e4m3fn)
    maps = gemm_maps(a, b, c, tile_n, a_rows=64)
    program = hopper_gemm_persistent(
        dtype=FP8, tile_n=tile_n, a_rows=64, promote=True, promote_every=2, split_n=True
    )
    assert "part_next" not in program.source
    _simulate(program, *maps, 2, 1, 5, 8, grid=(2,), sms=2)
    check_product(a, b, c)
