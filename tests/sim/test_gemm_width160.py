"""The 128 x 160 CTA tile in the simulator against numpy's fp32 product: wgmma m64n160k16 (PTX
ISA 9.0, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate": N a multiple of 8 up to
256 for .bf16 and .e4m3), a 160-row B box (twenty 8-row 128-byte swizzle atoms; 80 or 40 rows
a CTA of a pair or a four) and a C epilogue in two unswizzled 80-column slices (neither 64 nor
48 divides 160). C starts as NaN, so a column nobody writes fails (the check: gemmsim.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import PROMOTED_TILE_NS, hopper_gemm_persistent

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import tiled_gemm_matches_numpy  # noqa: E402  (needs ml_dtypes)


@functools.lru_cache
def _program(cluster_m: int, dtype: str):
    print(f"building the 128 x 160 GEMM (cluster {cluster_m}, {dtype})")
    fp8 = dtype == "float8_e4m3fn"
    return hopper_gemm_persistent(cluster_m, dtype, 160, promote=fp8, promote_every=2 if fp8 else 1)


@pytest.mark.parametrize(
    ("m", "n", "k", "cluster_m", "grid", "dtype"),
    [
        # 2 x 3 tiles (N = 328: 160 + 160 + 8 columns), 3 K tiles, over 4 CTAs: the ring wraps
        (130, 328, 192, 1, 4, "bfloat16"),
        # fours sharing B: each CTA loads 40 of the 160 rows and multicasts them; the second
        # N tile is 96 columns wide (its second 80-column slice partly past N)
        (512, 256, 128, 4, 4, "bfloat16"),
        # fp8 promoted every two K tiles: 3 K tiles of 128, in pairs (80 rows of B each)
        (256, 168, 384, 2, 2, "float8_e4m3fn"),
    ],
)
def test_the_160_wide_tile_matches_numpy(m, n, k, cluster_m, grid, dtype):
    rng = np.random.default_rng(m + n + k)
    kind = ml_dtypes.bfloat16 if dtype == "bfloat16" else ml_dtypes.float8_e4m3fn
    a = rng.standard_normal((m, k)).astype(kind)
    b = rng.standard_normal((n, k)).astype(kind)
    tiled_gemm_matches_numpy(_program(cluster_m, dtype), a, b, 160, cluster_m, grid=grid, seed=1)


def test_160_columns_stage_five_times_beside_two_80_column_c_slices():
    # A 128 x 64 bf16 = 16 KiB, B 160 x 64 = 20 KiB a stage (+ two 8-byte barriers); C: 2
    # consumers x 2 buffers of 64 x 80 bf16 (10 KiB each, 40 KiB); 5 x 36,880 + 40,960 =
    # 225,360 bytes of the 232,448 a block may opt into (227 KiB, sm_90), a 6th stage would
    # need 262,240
    assert gemm_plan.epilogue_cols(160) == 80
    solution = gemm_plan.stages("sm_90a", "bfloat16", 160)
    assert (solution.stages, solution.bytes_used) == (5, 225_360)
    # two fp32 fragments of 80 registers a thread + 40 others fit the consumer's 232
    assert 160 in PROMOTED_TILE_NS
    source = hopper_gemm_persistent(cluster_m=2, tile_n=160).source
    assert source.count("wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16") == 4
    assert "float acc[80]" in source and "(st_row * 80)" in source
    assert "(cta_rank * 80u)" in source  # each CTA of a pair multicasts 80 of B's rows
