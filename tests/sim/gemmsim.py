"""The tiled persistent GEMM in the simulator against numpy's fp32 product, for the tests
that run one kernel configuration on random operands."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tilemem.sim as sim
from tilemem.cuda.tma import tile_map
from tilemem.gemm import plan as gemm_plan
from tilemem.intmath import ceil_div


def gemm_maps(
    a, b, c, tile_n: int, cluster_m: int = 1, a_rows: int = 128, cluster_n: int = 1
) -> list:
    """The persistent GEMM's tensor maps with the boxes HopperGemm encodes them with
    (:func:`~tilemem.gemm.plan.tma_boxes`); no C map where ``c`` is None (split-K writes a
    workspace). The type is A's: bf16 or fp8 e4m3 (ml_dtypes arrays)."""
    dtype = "bfloat16" if a.dtype == ml_dtypes.bfloat16 else "float8_e4m3fn"
    boxes = gemm_plan.tma_boxes(dtype, tile_n, a_rows, cluster_m, cluster_n)
    maps = [tile_map(a, boxes.a), tile_map(b, boxes.b)]
    return maps + ([tile_map(c, boxes.c)] if c is not None else [])


def random_operands(m: int, n: int, k: int, seed: int, element=ml_dtypes.bfloat16):
    """Random A (``m x k``) and B (``n x k``) of ``element`` (an ml_dtypes type: bf16 or fp8
    e4m3), and a NaN-poisoned bf16 C (``m x n``)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(element)
    b = rng.standard_normal((n, k)).astype(element)
    return a, b, np.full((m, n), np.nan, ml_dtypes.bfloat16)


def check_product(a, b, c) -> None:
    """C is finite everywhere (no tile left unwritten) and ``A @ B^T`` within C's bf16 rounding
    (2^-8 relative) plus fp32 reordering."""
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    got = c.astype(np.float32)
    assert np.isfinite(got).all()
    err = np.abs(got - ref)
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-3).all(), err.max()


def tiled_gemm_matches_numpy(
    program, a, b, tile_n: int, cluster_m: int = 1, grid: int = 2, a_rows: int = 128, **run
):
    """``C = A @ B^T`` by ``program`` (:func:`~tilemem.gemm.hopper.hopper_gemm_persistent`,
    not split, not stream-K, tiles of ``a_rows`` rows, the program's) on ``grid`` CTAs in
    clusters of ``cluster_m``;
    ``run`` goes to :func:`tilemem.sim.run` (schedule, seed; ``sms`` defaults to every
    cluster of the grid at once, so the CTAs' writes to C can race where tiles overlap).
    C starts as NaN, so a tile nobody writes fails; the tolerance is C's bf16 rounding
    (2^-8 relative) plus fp32 reordering. A and B are both bf16 or both fp8 e4m3 (ml_dtypes
    arrays)."""
    run.setdefault("sms", max(1, grid // cluster_m))
    dtype = "bfloat16" if a.dtype == ml_dtypes.bfloat16 else "float8_e4m3fn"
    (m, k), n = a.shape, b.shape[0]
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    maps = gemm_maps(a, b, c, tile_n, cluster_m, a_rows)
    tiles = (ceil_div(m, a_rows), ceil_div(n, tile_n), ceil_div(k, gemm_plan.tile_k(dtype)))
    cluster = (cluster_m, 1, 1) if cluster_m > 1 else None
    result = sim.run(program, *maps, *tiles, 8, grid=(grid,), cluster=cluster, **run)
    assert result.ok, result.hazards
    check_product(a, b, c)
