"""The 128 x 96, 128 x 160, 128 x 176, 128 x 224 and the 32-wide CTA tiles in the simulator
against numpy's fp32 product: wgmma m64n96k16, m64n160k16, m64n176k16, m64n224k16 and
m64n32k16 (PTX ISA 9.0, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate": N a
multiple of 8 up to 256 for .bf16 and .e4m3), B boxes of 96, 160, 176, 224 and 32 rows (12,
20, 22, 28 and 4 8-row 128-byte swizzle atoms; a pair's or a four's share of them) and C
epilogues in unswizzled slices where 64 does not divide the width: two of 48 columns for 96,
two of 80 for 160, eleven of 16 for 176, seven of 32 for 224, one of 32 for 32. C starts as
NaN, so a column nobody writes fails (the check: gemmsim.py)."""

from __future__ import annotations

import functools

import pytest

from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import PROMOTED_TILE_NS, hopper_gemm_persistent

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import random_operands, tiled_gemm_matches_numpy  # noqa: E402  (needs ml_dtypes)


@functools.lru_cache
def _program(tile_n: int, cluster_m: int, dtype: str, a_rows: int = 128):
    print(f"building the {a_rows} x {tile_n} GEMM (cluster {cluster_m}, {dtype})")
    fp8 = dtype == "float8_e4m3fn"
    every = 2 if fp8 else 1
    return hopper_gemm_persistent(
        cluster_m, dtype, tile_n, a_rows=a_rows, promote=fp8, promote_every=every
    )


@pytest.mark.parametrize(
    ("tile_n", "m", "n", "k", "cluster_m", "grid", "dtype"),
    [
        # 2 x 3 tiles (N = 200: 96 + 96 + 8 columns), 3 K tiles, over 4 CTAs: the ring wraps
        (96, 130, 200, 192, 1, 4, "bfloat16"),
        # pairs sharing B: each CTA loads 48 of the 96 rows and multicasts them
        (96, 256, 192, 128, 2, 2, "bfloat16"),
        # fp8 promoted every two K tiles: 3 K tiles of 128
        (96, 128, 104, 384, 1, 2, "float8_e4m3fn"),
        # 2 x 3 tiles of 160 (N = 328: 160 + 160 + 8 columns), 3 K tiles, over 4 CTAs
        (160, 130, 328, 192, 1, 4, "bfloat16"),
        # fours sharing B: each CTA loads 40 of the 160 rows; the second N tile is 96 wide
        # (its second 80-column slice partly past N)
        (160, 512, 256, 128, 4, 4, "bfloat16"),
        # fp8 promoted every two K tiles, in pairs (80 rows of B each)
        (160, 256, 168, 384, 2, 2, "float8_e4m3fn"),
        # pairs sharing B (112 of the 224 rows each); N = 456: 224 + 224 + 8 columns, the
        # third N tile's seventh 32-column slice past N, 2 K tiles; 3 units over one pair, so
        # the odd slice count carries the staging alternation from tile to tile
        (224, 256, 456, 128, 2, 2, "bfloat16"),
        # fours sharing B: 56 rows each (7 swizzle atoms); one tile of 200 columns
        (224, 512, 200, 64, 4, 4, "bfloat16"),
        # 176 = 11 x 16: eleven 16-column slices (an odd count: the staging alternation carries
        # across tiles); N = 360 = 176 + 176 + 8, 3 K tiles over 4 CTAs
        (176, 130, 360, 192, 1, 4, "bfloat16"),
        # pairs sharing B: 88 of the 176 rows each (11 swizzle atoms); the second N tile 16 wide
        (176, 256, 192, 128, 2, 2, "bfloat16"),
        # fp8 promoted every two K tiles, in pairs; N = 200: the second tile 24 wide
        (176, 256, 200, 384, 2, 2, "float8_e4m3fn"),
    ],
)
def test_the_narrow_tiles_match_numpy(tile_n, m, n, k, cluster_m, grid, dtype):
    kind = ml_dtypes.bfloat16 if dtype == "bfloat16" else ml_dtypes.float8_e4m3fn
    a, b, _ = random_operands(m, n, k, m + n + k, kind)
    program = _program(tile_n, cluster_m, dtype)
    tiled_gemm_matches_numpy(program, a, b, tile_n, cluster_m, grid=grid, seed=1)


@pytest.mark.parametrize(
    ("a_rows", "m", "n", "k", "grid", "dtype"),
    [
        # 64 x 32 tiles (hopper.narrow_width's for fp8): one 32-column slice, wgmma m64n32;
        # N = 104 = 3 x 32 + 8, M = 70 (a second M tile of 6 rows), 3 K tiles over 3 CTAs
        (64, 70, 104, 192, 3, "bfloat16"),
        # fp8 promoted every two K tiles with two fragments (32 is an overlapped width), 16-row
        # tiles: A's rows 16..63 zeroed by the idle consumer, C's box 16 rows
        (16, 13, 72, 640, 2, "float8_e4m3fn"),
        # 128-row tiles of 32 columns: two consumers of 64 rows each
        (128, 200, 64, 256, 2, "bfloat16"),
    ],
)
def test_32_wide_tiles_match_numpy(a_rows, m, n, k, grid, dtype):
    kind = ml_dtypes.bfloat16 if dtype == "bfloat16" else ml_dtypes.float8_e4m3fn
    a, b, _ = random_operands(m, n, k, m + n + k, kind)
    program = _program(32, 1, dtype, a_rows)
    tiled_gemm_matches_numpy(program, a, b, 32, 1, grid=grid, a_rows=a_rows, seed=1)


def test_176_columns_stage_five_times_beside_eleven_16_column_c_slices():
    # A 128 x 64 bf16 = 16 KiB, B 176 x 64 = 22 KiB a stage (+ two 8-byte barriers: 38,928);
    # C: 2 consumers x 2 buffers of 64 x 16 bf16 (2 KiB each, 8 KiB): 5 x 38,928 + 8192 =
    # 202,832 of 232,448, a 6th stage would need 241,760. 16 is the only multiple of 16 (one
    # stmatrix.x4) that divides 176 = 11 x 16 below 176 itself
    assert gemm_plan.epilogue_cols(176) == 16 and gemm_plan.epilogue_cols(32) == 32
    solution = gemm_plan.stages("sm_90a", "bfloat16", 176)
    assert (solution.stages, solution.bytes_used) == (5, 202_832)


def test_96_columns_stage_seven_times_beside_two_48_column_c_slices():
    # A 128 x 64 bf16 = 16 KiB, B 96 x 64 = 12 KiB a stage; C: 2 consumers x 2 buffers of
    # 64 x 48 bf16 (6 KiB each, 24 KiB); 7 x 28 KiB + 24 KiB = 220 KiB of the 227 KiB opt-in
    # (HARDWARE: sm_90 227 KiB a block), an 8th stage would need 248 KiB
    assert gemm_plan.epilogue_cols(96) == 48
    assert gemm_plan.stages("sm_90a", "bfloat16", 96).stages == 7


def test_224_columns_stage_four_times_beside_seven_32_column_c_slices():
    # A 128 x 64 bf16 = 16 KiB, B 224 x 64 = 28 KiB a stage (+ two 8-byte barriers); C: 2
    # consumers x 2 buffers of 64 x 32 bf16 (4 KiB each, 16 KiB); 4 x 45,072 + 16,384 =
    # 196,672 bytes of the 232,448 a block may opt into (227 KiB, sm_90), a 5th stage would
    # need 241,744. Two 112-column slices (56 KiB of staging) would leave three stages.
    assert gemm_plan.epilogue_cols(224) == 32
    solution = gemm_plan.stages("sm_90a", "bfloat16", 224)
    assert (solution.stages, solution.bytes_used) == (4, 196_672)
    # the promoted kernel's two fragments of 112 registers + 40 others exceed 232
    assert 224 not in PROMOTED_TILE_NS
    source = hopper_gemm_persistent(cluster_m=2, tile_n=224).source
    assert source.count("wgmma.mma_async.sync.aligned.m64n224k16.f32.bf16.bf16") == 4
    assert "float acc[112]" in source and "(st_row * 32)" in source
    # seven slices a tile: the staging tile of slice j of the CTA's tile t is (7 t + j) % 2
    assert "((t_1 * 7) % 2)" in source and "(((t_1 * 7) + 6) % 2)" in source
    assert "((n_tile_1 * 224) + 192)" in source  # the seventh slice's first column
    assert "(cta_rank * 112u)" in source  # each CTA of a pair multicasts 112 of B's rows


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
