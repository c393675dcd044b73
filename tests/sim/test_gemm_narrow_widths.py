"""The 128 x 96, 128 x 160, 128 x 176, 128 x 224 and the 32-wide CTA tiles in the simulator
against numpy's fp32 product: wgmma m64n96k16, m64n160k16, m64n176k16, m64n224k16 and
m64n32k16 (PTX ISA 9.0, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate": N a
multiple of 8 up to 256 for .bf16 and .e4m3), B boxes of 96, 160, 176, 224 and 32 rows (12,
20, 22, 28 and 4 8-row 128-byte swizzle atoms; a pair's or a four's share of them) and C
epilogues in unswizzled slices where 64 does not divide the width: two of 48 columns for 96,
two of 80 for 160, eleven of 16 for 176 (staged four at a time), seven of 32 for 224 (two at
a time), one of 32 for 32. C starts as
NaN, so a column nobody writes fails (the check: gemmsim.py)."""

from __future__ import annotations

import functools
from unittest import mock

import numpy as np
import pytest

from tilemem.errors import GemmShapeError
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


def test_176_columns_stage_five_times_beside_eleven_16_column_c_slices_in_groups_of_four():
    # A 128 x 64 bf16 = 16 KiB, B 176 x 64 = 22 KiB a stage (+ two 8-byte barriers: 38,928).
    # C: 2 consumers x 2 halves x a group of 4 slices of 64 x 16 bf16 (2 KiB each, 32 KiB):
    # 5 x 38,928 + 32,768 = 227,408 of 232,448, a 6th stage would need 266,336; slices staged
    # one a buffer (8 KiB) kept the same 5 stages in 202,832 bytes. 16 is the only multiple of
    # 16 (one stmatrix.x4) that divides 176 = 11 x 16 below 176 itself
    assert gemm_plan.epilogue_cols(176) == 16 and gemm_plan.epilogue_cols(32) == 32
    assert gemm_plan.epilogue_staging(176) == (2, 4)  # 2 buffers of 4 slices
    solution = gemm_plan.stages("sm_90a", "bfloat16", 176)
    assert (solution.stages, solution.bytes_used) == (5, 227_408)
    with mock.patch.object(gemm_plan, "GROUPED_EPILOGUE", False):
        # one slice a buffer, as many buffers as fit beside 5 stages: 194,640 + 2 x 9 x 2 KiB =
        # 231,504 (10: 235,600)
        assert gemm_plan.epilogue_staging(176) == (9, 1)
        with mock.patch.object(gemm_plan, "SPARE_STAGING", False):
            assert gemm_plan.epilogue_staging(176) == (2, 1)
            solution = gemm_plan.stages("sm_90a", "bfloat16", 176)
            assert (solution.stages, solution.bytes_used) == (5, 202_832)
    # 64-row tiles (one consumer): A 8 KiB + B 22 KiB + 16 = 30,736 a stage; C 2 x 4 x 2 KiB =
    # 16 KiB: 7 x 30,736 + 16,384 = 231,536 (8 stages: 262,272); groups of 1 also 7
    assert gemm_plan.epilogue_staging(176, 64) == (2, 4)
    solution = gemm_plan.stages("sm_90a", "bfloat16", 176, 64)
    assert (solution.stages, solution.bytes_used) == (7, 231_536)
    # eleven stores in three bulk groups (4 + 4 + 3) a consumer, each between one barrier pair;
    # three groups (odd): the half of group g of the CTA's tile t is (3 t + g) % 2
    source = hopper_gemm_persistent(cluster_m=2, tile_n=176).source
    assert source.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 11
    assert source.count("cp.async.bulk.commit_group") == 3
    assert source.count("bar.sync %0, 128;") == 6
    assert "((t_1 * 3) % 2)" in source and "(((t_1 * 3) + 2) % 2)" in source
    assert "((n_tile_1 * 176) + 160)" in source  # the eleventh slice's first column


def test_64_row_176_wide_tiles_stage_c_in_groups_and_match_numpy():
    # one consumer computes each 64-row tile alone: its 8 staging tiles are 2 halves of a
    # group of 4; 3 x 3 tiles (M = 130: 64 + 64 + 2 rows; N = 360) over 4 CTAs, 2 K tiles
    program = _program(176, 1, "bfloat16", 64)
    a, b, _ = random_operands(130, 360, 128, 7, ml_dtypes.bfloat16)
    tiled_gemm_matches_numpy(program, a, b, 176, 1, grid=4, a_rows=64, seed=2)


def test_epilogue_staging_fills_the_bytes_the_ring_cannot_use():
    # (buffers, slices a buffer) a computing consumer stages C in. Slices of 64, 48 or 80
    # columns stage one a buffer; 176's 16-column slices four (64 columns), 224's 32-column
    # slices two, except on 64-row tiles: A 8 KiB + B 28 KiB + 16 = 36,880 a stage; with groups
    # of 2 (C 2 x 2 x 4 KiB = 16 KiB) 6 stages need 237,664 > 232,448, with groups of 1 (8 KiB)
    # 229,472 fit: the group gives way. Buffers past two, up to a tile's groups, where the ring
    # keeps its depth (232,448 bytes a CTA on sm_90a; per stage A + B + two 8-byte barriers):
    #   128 x 240: 4 x (16,384 + 30,720 + 16) = 188,480 + 2 x 3 x 6 KiB (36,864) = 225,344
    #     (4 buffers: 237,632); 5 stages would need 235,600 + 24,576 even with 2
    #   128 x 224: 4 x 45,072 = 180,288 + 2 x 3 x 8 KiB (2 x 4 KiB a buffer) = 229,440
    #   128 x 192: 4 x 40,976 = 163,904 + 2 x 3 x 8 KiB = 213,056 (all 3 slices; 5 stages:
    #     204,880 + 32,768 > 232,448 even with 2)
    #   128 x 256: 4 x 49,168 = 196,672 + 32,768 = 229,440 with 2; 3 would need 245,824
    #   64 x 256: 5 x 40,976 = 204,880 + 3 x 8 KiB = 229,456 (4: 237,648)
    #   64 x 240: 5 x 38,928 = 194,640 + 5 x 6 KiB = 225,360 (all 5 slices)
    #   64 x 192: 6 x 32,784 = 196,704 + 3 x 8 KiB = 221,280 (all 3)
    #   64 x 160: 2 slices, 2 buffers; 64 x 176: 3 groups, a 3rd buffer of 8 KiB would need
    #     7 x 30,736 + 24,576 = 239,728
    expected = {
        (240, 128): (3, 1),
        (224, 128): (3, 2),
        (192, 128): (3, 1),
        (176, 128): (2, 4),
        (256, 64): (3, 1),
        (240, 64): (5, 1),
        (192, 64): (3, 1),
        (176, 64): (2, 4),
    }
    for tile_n in gemm_plan.TILE_NS:
        for a_rows in (128, 64, 32):
            want = expected.get((tile_n, 128 if a_rows == 128 else 64), (2, 1))  # 32 as 64
            assert gemm_plan.epilogue_staging(tile_n, a_rows) == want, (tile_n, a_rows)
            assert gemm_plan.epilogue_staging(tile_n, a_rows, relay=True) == want
    assert gemm_plan.stages("sm_90a", "bfloat16", 224, 64).stages == 6
    assert gemm_plan.stages("sm_90a", "bfloat16", 240).bytes_used == 225_344
    assert gemm_plan.stages("sm_90a", "bfloat16", 256, 64).bytes_used == 229_456
    with mock.patch.object(gemm_plan, "SPARE_STAGING", False):
        assert gemm_plan.epilogue_staging(240, 64) == (2, 1)
        assert gemm_plan.epilogue_staging(224) == (2, 2)
    for bad in (0, 8, 2.0, True, "2"):
        with pytest.raises(GemmShapeError, match="slices of 32 columns"):
            gemm_plan.requests("bfloat16", 224, 128, False, bad)
    for bad in (0, 65, 2.0, False):
        with pytest.raises(GemmShapeError, match="buffers is 1 to 64"):
            gemm_plan.requests("bfloat16", 224, 128, False, None, bad)
    # a width that only compares equal to one (a float, a bool) is refused as the width it is
    # not, in the staging rule and in the plan alike; a numpy integer is the width it holds
    for bad in (176.0, True, 200, "176"):
        with pytest.raises(GemmShapeError, match=rf"columns, got {bad!r}"):
            gemm_plan.epilogue_staging(bad)
        with pytest.raises(GemmShapeError, match=rf"columns, got {bad!r}"):
            gemm_plan.requests("bfloat16", bad)
    assert gemm_plan.epilogue_staging(np.int64(176)) == (2, 4)
    assert gemm_plan.check_tile_n(np.int64(176)) == 176
    # by default no relay barrier, and the staging epilogue_staging gives (2 x 64 rows x 64
    # columns of 256, one buffer a slice)
    default = gemm_plan.requests()
    assert [r.name for r in default] == ["A", "B", "C_stage", "full_bar", "empty_bar"]
    assert default[2].shape == (4, 64, 64)
    # explicit staging overrides either part: 3 buffers of 2 slices, 2 consumers: 12 tiles
    assert gemm_plan.requests("bfloat16", 224, 128, False, 2, 3)[2].shape == (12, 64, 32)
    assert gemm_plan.requests("bfloat16", 224, 64, False, None, 4)[2].shape == (4, 64, 32)


def test_96_columns_stage_seven_times_beside_two_48_column_c_slices():
    # A 128 x 64 bf16 = 16 KiB, B 96 x 64 = 12 KiB a stage; C: 2 consumers x 2 buffers of
    # 64 x 48 bf16 (6 KiB each, 24 KiB); 7 x 28 KiB + 24 KiB = 220 KiB of the 227 KiB opt-in
    # (HARDWARE: sm_90 227 KiB a block), an 8th stage would need 248 KiB
    assert gemm_plan.epilogue_cols(96) == 48
    assert gemm_plan.stages("sm_90a", "bfloat16", 96).stages == 7


def test_224_columns_stage_four_times_beside_seven_32_column_c_slices():
    # A 128 x 64 bf16 = 16 KiB, B 224 x 64 = 28 KiB a stage (+ two 8-byte barriers); C: 2
    # consumers x 3 buffers x a group of 2 slices of 64 x 32 bf16 (4 KiB each, 48 KiB);
    # 4 x 45,072 + 49,152 = 229,440 bytes of the 232,448 a block may opt into (227 KiB,
    # sm_90), a 5th stage would need 274,512. Two 112-column slices (56 KiB of staging) would
    # leave three stages.
    assert gemm_plan.epilogue_cols(224) == 32
    assert gemm_plan.epilogue_staging(224) == (3, 2)
    solution = gemm_plan.stages("sm_90a", "bfloat16", 224)
    assert (solution.stages, solution.bytes_used) == (4, 229_440)
    # the promoted kernel's two fragments of 112 registers + 40 others exceed 232
    assert 224 not in PROMOTED_TILE_NS
    source = hopper_gemm_persistent(cluster_m=2, tile_n=224).source
    assert source.count("wgmma.mma_async.sync.aligned.m64n224k16.f32.bf16.bf16") == 4
    assert "float acc[112]" in source and "(st_row * 32)" in source
    # seven slices in four groups (2 + 2 + 2 + 1) over three buffers: group g of the CTA's
    # tile t stages in buffer (4 t + g) % 3, each waited for while the other two may be read
    assert source.count("cp.async.bulk.commit_group") == 4
    assert source.count('"cp.async.bulk.wait_group.read 2;"') == 4
    assert "((t_1 * 4) % 3)" in source and "(((t_1 * 4) + 3) % 3)" in source
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
