"""The 128 x 96 CTA tile in the simulator against numpy's fp32 product: wgmma m64n96k16 (PTX
ISA 9.0, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate": N a multiple of 8 up to
256 for .bf16 and .e4m3), a 96-row B box (twelve 8-row 128-byte swizzle atoms) and a C
epilogue in two unswizzled 48-column slices (64 does not divide 96). C starts as NaN, so a
column nobody writes fails (the check: gemmsim.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import tiled_gemm_matches_numpy  # noqa: E402  (needs ml_dtypes)


@functools.lru_cache
def _program(cluster_m: int, dtype: str):
    print(f"building the 128 x 96 GEMM (cluster {cluster_m}, {dtype})")
    fp8 = dtype == "float8_e4m3fn"
    return hopper_gemm_persistent(cluster_m, dtype, 96, promote=fp8, promote_every=2 if fp8 else 1)


@pytest.mark.parametrize(
    ("m", "n", "k", "cluster_m", "grid", "dtype"),
    [
        # 2 x 3 tiles (N = 200: 96 + 96 + 8 columns), 3 K tiles, over 4 CTAs: the ring wraps
        (130, 200, 192, 1, 4, "bfloat16"),
        # pairs sharing B: each CTA loads 48 of the 96 rows and multicasts them
        (256, 192, 128, 2, 2, "bfloat16"),
        # fp8 promoted every two K tiles: 3 K tiles of 128
        (128, 104, 384, 1, 2, "float8_e4m3fn"),
    ],
)
def test_the_96_wide_tile_matches_numpy(m, n, k, cluster_m, grid, dtype):
    rng = np.random.default_rng(m + n + k)
    kind = ml_dtypes.bfloat16 if dtype == "bfloat16" else ml_dtypes.float8_e4m3fn
    a = rng.standard_normal((m, k)).astype(kind)
    b = rng.standard_normal((n, k)).astype(kind)
    tiled_gemm_matches_numpy(_program(cluster_m, dtype), a, b, 96, cluster_m, grid=grid, seed=1)


def test_96_columns_stage_seven_times_beside_two_48_column_c_slices():
    # A 128 x 64 bf16 = 16 KiB, B 96 x 64 = 12 KiB a stage; C: 2 consumers x 2 buffers of
    # 64 x 48 bf16 (6 KiB each, 24 KiB); 7 x 28 KiB + 24 KiB = 220 KiB of the 227 KiB opt-in
    # (HARDWARE: sm_90 227 KiB a block), an 8th stage would need 248 KiB
    assert gemm_plan.epilogue_cols(96) == 48
    assert gemm_plan.stages("sm_90a", "bfloat16", 96).stages == 7
