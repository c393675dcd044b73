"""Clusters along N (``cluster_n``): CTAs of adjacent N tiles of one M tile, each loading
``a_rows / cluster_n`` rows of the shared A tile and multicasting them, in the simulator
against numpy's fp32 product.

Each case runs more units than clusters (a cluster takes several in turn, so the ring wraps
across tiles) on a ragged shape (the last M tile past M, the last cluster's second N tile past
N: its TMA loads read zeros and its stores are clipped). C starts as NaN, so a tile nobody
writes fails; the tolerance is C's bf16 rounding (2^-8 relative) plus fp32 reordering, as in
test_gemm_shapes.py. The simulator's hazard checks see every multicast write land in each
CTA of the cluster and every remote arrival on the ``empty`` barriers: a stage refilled
before one of the cluster's consumers released it is reported.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.errors import GemmShapeError
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import gemm_maps  # noqa: E402  (needs ml_dtypes)


@functools.lru_cache
def _program(tile_n: int, cluster_n: int, a_rows: int, dtype: str):
    print(f"building the GEMM in clusters of {cluster_n} along N ({a_rows} x {tile_n}, {dtype})")
    fp8 = dtype != "bfloat16"
    return hopper_gemm_persistent(
        cluster_m=1,
        dtype=dtype,
        tile_n=tile_n,
        a_rows=a_rows,
        promote=fp8,
        promote_every=2 if fp8 else 1,
        cluster_n=cluster_n,
    )


@pytest.mark.parametrize(
    "tile_n, cluster_n, a_rows, m, n, k, grid, dtype",
    [
        (96, 2, 128, 200, 5 * 96 - 8, 192, 4, "bfloat16"),  # 2 x 3 units over 2 clusters
        (128, 2, 64, 130, 3 * 128, 128, 4, "bfloat16"),  # 64-row tiles, A shares of 32 rows
        (64, 2, 32, 20, 4 * 64, 64, 2, "bfloat16"),  # M <= 32: shares of 16 rows
        (64, 4, 128, 128, 8 * 64, 128, 4, "bfloat16"),  # four CTAs, A shares of 32 rows
        (128, 2, 128, 128, 4 * 128, 384, 2, "float8_e4m3fn"),  # fp8, promoted every two
    ],
)
def test_clusters_along_n_give_the_fp32_product(tile_n, cluster_n, a_rows, m, n, k, grid, dtype):
    rng = np.random.default_rng(7)
    np_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else ml_dtypes.float8_e4m3fn
    a = rng.standard_normal((m, k)).astype(np_type)
    b = rng.standard_normal((n, k)).astype(np_type)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    program = _program(tile_n, cluster_n, a_rows, dtype)
    assert f"_clustern{cluster_n}" in program.name
    maps = gemm_maps(a, b, c, tile_n, a_rows=a_rows, cluster_n=cluster_n)
    rows = gemm_plan.tile_rows(a_rows)
    tk = gemm_plan.tile_k(dtype)
    tiles = (ceil_div(m, rows), ceil_div(n, tile_n), ceil_div(k, tk))
    result = sim.run(program, *maps, *tiles, 8, grid=(grid,), cluster=(cluster_n, 1, 1), seed=3)
    assert result.ok, result.hazards
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    got = c.astype(np.float32)
    assert np.isfinite(got).all()
    err = np.abs(got - ref)
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-3 * np.sqrt(k)).all(), err.max()


def test_a_share_box_is_the_rank_s_rows():
    # the A tensor map's box of a rank: a_rows / cluster_n rows x one K tile (128 bytes)
    assert gemm_plan.a_box(128 // 2, "bfloat16").shape == (64, 64)
    assert gemm_plan.a_box(64 // 2, "float8_e4m3fn").shape == (32, 128)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(cluster_n=3), r"cluster_n is one of \(1, 2, 4\) .* got 3"),
        (dict(cluster_n=True), r"cluster_n is one of .* got True"),
        (dict(cluster_n=2.0), r"cluster_n is one of .* got 2.0"),
        (dict(cluster_n=2, cluster_m=2), r"cluster_n=2 .* runs with cluster_m=1"),
        (dict(cluster_n=2, split_k=True), r"without split-K or stream-K"),
        (dict(cluster_n=2, stream_k=True), r"without split-K or stream-K"),
        (dict(cluster_n=2, a_rows=8), r"a_rows=8 does not split into 2 .* = 4.0"),
        (dict(cluster_n=4, a_rows=16), r"a_rows=16 does not split into 4"),
    ],
)
def test_clusters_along_n_refuse_what_they_cannot_run(kwargs, match):
    kwargs = {"cluster_m": 1, **kwargs}
    with pytest.raises(GemmShapeError, match=match):
        hopper_gemm_persistent(**kwargs)
