"""Any GEMM shape: the staging of ``gemm/shapes.py`` (padded workspace copies for shapes the
TMA boxes and row pitches do not take), checked by hand, and run end to end in the simulator
(operands staged with the same copy descriptors the GPU path gives ``cuMemcpy2DAsync``, the
persistent kernel simulated on the workspaces, C copied back) against numpy's fp32 product.

Tolerance as in test_gemm_sim.py: bf16 rounding of C (2^-8 relative) plus fp32 reordering.
C starts as NaN, so an element the copies or the kernel miss fails the check.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.cuda.tma import tile_map
from tilemem.errors import GemmShapeError
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm import shapes
from tilemem.gemm.hopper import (
    _check_layout,
    _check_operands,
    _check_splits,
    a_rows_for,
    hopper_gemm_persistent,
    split_count,
    splitk_reduce,
)
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import random_operands, tiled_gemm_matches_numpy  # noqa: E402  (needs ml_dtypes)


@pytest.fixture
def boxes_within_edges(monkeypatch):
    """Staging as it was before boxes could reach past the matrices: every matrix padded to
    at least one TMA box as well (shapes.BOXES_PAST_EDGES off)."""
    monkeypatch.setattr(shapes, "BOXES_PAST_EDGES", False)


def test_boxes_past_the_edges_leave_only_the_row_pitches_to_stage():
    # M = 1, K = 7 bf16 = 14-byte rows -> 8 (16 bytes), N = 9 -> 16: A 1 x 8, B 16 x 8
    # (16-byte rows), C 1 x 16; every box reaches past its matrix, zero-filled or clipped
    st = shapes.staging(1, 9, 7, "bfloat16", 128)
    assert (st.ma, st.mc, st.np_, st.kp) == (1, 1, 16, 8)
    assert st.a == shapes.Copy2D(rows=1, width=14, src_pitch=14, dst_pitch=16)
    assert st.b == shapes.Copy2D(rows=9, width=14, src_pitch=14, dst_pitch=16)
    assert st.c == shapes.Copy2D(rows=1, width=18, src_pitch=32, dst_pitch=18)
    assert st.workspace_bytes == (1 * 8 + 16 * 8 + 1 * 16) * 2
    # a 16-token step of Llama-3 8B's o projection, and M < 64 on the 128-row kernel: no copy
    assert not shapes.staging(16, 4096, 4096, "bfloat16", 256).needed
    assert not shapes.staging(16, 4096, 4096, "bfloat16", 256, a_rows=16).needed
    assert not shapes.staging(3, 40, 32, "float8_e4m3fn", 256).needed  # K = 32 < one K tile
    # fp8 K = 36 -> 48 (16-byte rows), no longer a whole 128-element K tile
    assert shapes.staging(300, 264, 36, "float8_e4m3fn", 256).kp == 48


def test_small_ragged_shape_stages_every_operand(boxes_within_edges):
    # M = 1 < 128 rows of A's box and < 64 rows of C's; K = 7 bf16 = 14-byte rows, padded to
    # 8 (16 bytes) then to one 64-element K tile; N = 9 -> 16 (16-byte rows), then to the
    # 128-wide tile.
    st = shapes.staging(1, 9, 7, "bfloat16", 128)
    assert (st.ma, st.mc, st.np_, st.kp) == (128, 64, 128, 64)
    assert st.a == shapes.Copy2D(rows=1, width=14, src_pitch=14, dst_pitch=128)
    assert st.b == shapes.Copy2D(rows=9, width=14, src_pitch=14, dst_pitch=128)
    assert st.c == shapes.Copy2D(rows=1, width=18, src_pitch=256, dst_pitch=18)
    # A 128 x 64 + B 128 x 64 + C 64 x 128, bf16: 16 KiB each
    assert st.workspace_bytes == 3 * 16384


def test_small_m_stages_a_and_c_but_not_b(boxes_within_edges):
    # Llama-3 8B's o projection at 16 tokens: only M breaks a rule
    st = shapes.staging(16, 4096, 4096, "bfloat16", 256)
    assert st.b is None and st.needed
    assert st.workspace_shapes() == {"A": (128, 4096), "C": (64, 4096)}
    assert st.a == shapes.Copy2D(rows=16, width=8192, src_pitch=8192, dst_pitch=8192)
    # the kernel loading 16 rows of A a stage takes A as it is; C still needs 64 rows
    assert shapes.staging(16, 4096, 4096, "bfloat16", 256, a_rows=16).workspace_shapes() == {
        "C": (64, 4096)
    }
    # 64 <= M < 128 on the 128-row kernel: A staged, C written in place (64-row boxes)
    assert shapes.staging(100, 4096, 4096, "bfloat16", 256).workspace_shapes() == {"A": (128, 4096)}


def test_a_rows_for_small_m_is_the_fewest_that_hold_m():
    assert [a_rows_for(m) for m in (1, 16, 17, 32, 33, 64, 65, 128, 5000)] == [
        16,
        16,
        32,
        32,
        64,
        64,
        128,
        128,
        128,
    ]
    with pytest.raises(GemmShapeError, match=r"one of \(128, 64, 32, 16, 8\) rows of A .*, got 48"):
        hopper_gemm_persistent(a_rows=48)


def test_fp8_k_pads_to_16_elements_and_one_128_wide_k_tile(boxes_within_edges):
    # e4m3: 1 byte an element, so 16-byte rows need K % 16 == 0; a K tile is 128 elements
    assert shapes.staging(300, 264, 200, "float8_e4m3fn", 256).kp == 208
    st = shapes.staging(300, 264, 36, "float8_e4m3fn", 256)
    assert st.kp == 128 and st.c is None
    assert st.a == shapes.Copy2D(rows=300, width=36, src_pitch=36, dst_pitch=128)


def test_shapes_the_kernel_takes_need_no_staging():
    st = shapes.staging(4999, 3000, 2040, "bfloat16", 240)
    assert not st.needed and st.workspace_bytes == 0
    assert _check_operands(*(_tensor(*s) for s in ((4999, 2040), (3000, 2040), (4999, 3000))))


@pytest.mark.parametrize(("m", "n", "k"), [(0, 8, 8), (8, 0, 8), (8, 8, 0)])
def test_empty_products_are_refused(m, n, k):
    with pytest.raises(GemmShapeError, match=r"M, N, K >= 1"):
        shapes.staging(m, n, k, "bfloat16", 256)
    with pytest.raises(GemmShapeError, match=r"M, N, K >= 1"):
        _check_layout(_tensor(m, k), _tensor(n, k), _tensor(m, n))


def test_wrong_operands_are_still_refused_whatever_the_shape():
    with pytest.raises(GemmShapeError, match=r"A \(M, K\), B \(N, K\), C \(M, N\)"):
        _check_layout(_tensor(3, 7), _tensor(9, 8), _tensor(3, 9))
    with pytest.raises(GemmShapeError, match=r"B must be bfloat16, got torch.float16"):
        _check_layout(_tensor(3, 7), _tensor(9, 7, dtype="torch.float16"), _tensor(3, 9))
    with pytest.raises(GemmShapeError, match=r"must be 2-D"):
        _check_layout(_tensor(3, 7, 1), _tensor(9, 7), _tensor(3, 9))
    assert _check_layout(_tensor(3, 7), _tensor(9, 7), _tensor(3, 9)) == (3, 7, 9)


def test_copy_host_moves_rows_between_pitches():
    src = np.arange(12, dtype=np.uint8).reshape(3, 4)
    dst = np.full((3, 6), 255, np.uint8)
    shapes.copy_host(shapes.Copy2D(rows=2, width=3, src_pitch=4, dst_pitch=6), src, dst)
    want = np.array([[0, 1, 2, 255, 255, 255], [4, 5, 6, 255, 255, 255], [255] * 6], np.uint8)
    np.testing.assert_array_equal(dst, want)


def _tensor(*shape, dtype="torch.bfloat16"):
    from types import SimpleNamespace

    return SimpleNamespace(shape=shape, dtype=dtype)


@functools.lru_cache
def _program(a_rows: int = 128):
    print(f"building the persistent GEMM (128 x 256, no cluster, {a_rows} rows of A a stage)")
    return hopper_gemm_persistent(cluster_m=1, a_rows=a_rows)


def _a_box(a_rows: int, tile_n: int):
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", tile_n)
    return plan.buffer("A") if a_rows == 128 else gemm_plan.a_box(a_rows)


def _staged_inputs(a, b, tile_n: int, a_rows: int):
    """The host side of the staging: shapes.staging's plan for these operands and zeroed
    workspaces, with A and B copied in where the plan stages them."""
    (m, k), n = a.shape, b.shape[0]
    st = shapes.staging(m, n, k, "bfloat16", tile_n, a_rows)
    work = {name: np.zeros(s, ml_dtypes.bfloat16) for name, s in st.workspace_shapes().items()}
    for name, copy, x in (("A", st.a, a), ("B", st.b, b)):
        if copy is not None:
            shapes.copy_host(copy, x, work[name])
    return st, work


def _gemm_any_shape(a, b, c, seed: int, a_rows: int = 128):
    """C = A @ B^T through the staging of shapes.py and the simulated kernel (128 x 256)."""
    m = a.shape[0]
    st, work = _staged_inputs(a, b, 256, a_rows)
    ka, kb, kc = work.get("A", a), work.get("B", b), work.get("C", c)
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 256)
    maps = (
        tile_map(ka, _a_box(a_rows, 256)),
        tile_map(kb, gemm_plan.b_share(1, "bfloat16", tile_n=256)),
        tile_map(kc, plan.buffer("C_stage")),
    )
    tiles = (ceil_div(m, 128), ceil_div(st.np_, 256), ceil_div(st.kp, 64))
    grid = (min(2, tiles[0] * tiles[1]),)
    program = _program(a_rows)
    result = sim.run(program, *maps, *tiles, 8, grid=grid, schedule="random", seed=seed)
    assert result.ok, result.hazards
    if st.c is not None:
        shapes.copy_host(st.c, work["C"], c)
    return st


@pytest.mark.parametrize(
    ("m", "n", "k", "a_rows"),
    [
        (1, 9, 7, 128),  # every rule broken at once
        (3, 40, 36, 16),  # K not a multiple of 8, below one K tile; N below the tile
        (64, 256, 64, 128),  # only M below the 128-row A box (C takes 64-row boxes)
        (65, 264, 130, 128),  # M small; K = 130 -> 136: two K tiles, the second partial
        (130, 9, 64, 128),  # two M tiles, N = 9 -> 256
        (16, 256, 128, 16),  # A read in place, 16 rows a stage; C staged to 64 rows
        (20, 264, 72, 32),  # A staged to 32 rows; two N tiles, two K tiles
    ],
)
def test_any_shape_matches_numpy_in_the_simulator(m, n, k, a_rows, boxes_within_edges):
    _any_shape_against_numpy(m, n, k, a_rows, staged=True)


@pytest.mark.parametrize(
    ("m", "n", "k", "a_rows", "staged"),
    [
        (1, 9, 7, 128, True),  # rows of 14 and 18 bytes staged; every box past its matrix
        (64, 256, 64, 128, False),  # A's 128-row box over 64 rows, zero-filled
        (5, 40, 32, 16, False),  # 16 rows of A over 5, 64 of C over 5, 256 of B over 40,
        # a 64-wide K box over 32 columns: nothing staged
        (20, 264, 136, 32, False),  # 32 rows of A over 20; two N tiles, three K tiles
    ],
)
def test_boxes_past_the_edges_match_numpy_in_the_simulator(m, n, k, a_rows, staged):
    _any_shape_against_numpy(m, n, k, a_rows, staged)


def _any_shape_against_numpy(m: int, n: int, k: int, a_rows: int, staged: bool) -> None:
    rng = np.random.default_rng(m * 1000 + n + k)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    st = _gemm_any_shape(a, b, c, seed=m, a_rows=a_rows)
    assert st.needed == staged
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    err = np.abs(c.astype(np.float32) - ref)
    assert np.isfinite(c.astype(np.float32)).all()
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-3).all(), err.max()


def test_split_count_fills_the_sms_with_k_ranges_only_where_tiles_are_few():
    # 16 x 4096 x 4096 on 128 x 128 tiles: 1 x 32 tiles, 64 K tiles. 4 ranges give 128 CTAs
    # (5 would need 160 > 132; 5 does not divide 64 anyway); partial sums 8 * 4 * 16 * 4096 =
    # 2 MiB against (16 + 4096) * 4096 * 2 = 32 MiB of operands.
    assert split_count(16, 4096, 4096, 128, 132) == 4
    # 16 x 6144: 48 tiles; 2 ranges give 96 CTAs, 3 would need 144
    assert split_count(16, 6144, 4096, 128, 132) == 2
    # 1024^3: 8 x 8 = 64 tiles, 16 K tiles; 2 ranges fit (128 CTAs) but their partial sums,
    # 8 * 2 * 1024 * 1024 = 16 MiB, are 4 times the 4 MiB of operands: no split
    assert split_count(1024, 1024, 1024, 128, 132) == 1
    # 132 tiles already fill the SMs
    assert split_count(128, 132 * 128, 8192, 128, 132) == 1
    # K = 448 bf16 is 7 K tiles: no divisor s >= 2 leaves 4 tiles a range
    assert split_count(16, 4096, 448, 128, 132) == 1


@pytest.mark.parametrize("splits", [0, 3, 2.0, None])
def test_splits_must_divide_the_k_tiles(splits):
    with pytest.raises(GemmShapeError, match=r"dividing the 8 K tiles"):
        _check_splits(splits, 8)


def test_split_k_runs_ctas_alone():
    with pytest.raises(GemmShapeError, match=r"split-K runs CTAs alone"):
        hopper_gemm_persistent(cluster_m=2, split_k=True)


@functools.lru_cache
def _split_programs(a_rows: int):
    print(f"building the split-K GEMM (128 x 128, {a_rows} rows of A) and its reduction")
    return hopper_gemm_persistent(tile_n=128, split_k=True, a_rows=a_rows), splitk_reduce()


def _gemm_split_k(a, b, c, splits: int, seed: int, a_rows: int) -> None:
    """C = A @ B^T as HopperGemm's split-K path does it: A and B staged as needed, the kernel
    writes each K range's fp32 sums to the workspace, the reduction adds them into C."""
    kernel, reduce = _split_programs(a_rows)
    m, n = a.shape[0], b.shape[0]
    st, work = _staged_inputs(a, b, 128, a_rows)
    maps = (
        tile_map(work.get("A", a), _a_box(a_rows, 128)),
        tile_map(work.get("B", b), gemm_plan.b_share(1, "bfloat16", tile_n=128)),
    )
    k_tiles = ceil_div(st.kp, 64)
    _check_splits(splits, k_tiles)
    tiles = (ceil_div(m, 128), ceil_div(st.np_, 128), k_tiles // splits)
    partial = np.full((splits * m, tiles[1] * 128), np.nan, np.float32)  # every read written
    grid = (min(3, tiles[0] * tiles[1] * splits),)
    result = sim.run(kernel, *maps, *tiles, 8, splits, m, partial, grid=grid, seed=seed)
    assert result.ok, result.hazards
    done = sim.run(reduce, partial, c, splits, grid=(ceil_div(m * n, 256),))
    assert done.ok, done.hazards


@pytest.mark.parametrize(
    ("m", "n", "k", "splits", "a_rows"),
    [
        (3, 40, 520, 3, 128),  # 9 K tiles (the last partial) in 3 ranges; A and B staged
        (130, 136, 256, 4, 128),  # nothing staged; 2 x 2 tiles x 4 ranges of one K tile
        (64, 9, 72, 2, 64),  # two K tiles, the second 8 wide; N = 9 -> 128
        (20, 136, 256, 2, 32),  # A staged to 32 rows; one consumer computes, one idles
    ],
)
def test_split_k_matches_numpy_in_the_simulator(m, n, k, splits, a_rows):
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    _gemm_split_k(a, b, c, splits, seed=splits, a_rows=a_rows)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    err = np.abs(c.astype(np.float32) - ref)
    assert np.isfinite(c.astype(np.float32)).all()
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-3).all(), err.max()


@functools.lru_cache
def _narrow_program():
    print("building the persistent GEMM (128 x 64, no cluster)")
    return hopper_gemm_persistent(tile_n=64)


def test_64_wide_tile_matches_numpy_in_the_simulator():
    # 130 x 136 x 200: 2 x 3 tiles of 128 x 64 (the last 8 columns wide), 4 K tiles (the last
    # 8 deep) through the 8-stage ring, on 2 CTAs; nothing staged
    m, n, k = 130, 136, 200
    rng = np.random.default_rng(64)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 64)
    assert plan.buffer("A").shape[0] == 8  # stages
    assert (ceil_div(m, 128), ceil_div(n, 64), ceil_div(k, 64)) == (2, 3, 4)  # tiles
    tiled_gemm_matches_numpy(_narrow_program(), a, b, 64, schedule="random", seed=5)


@pytest.mark.parametrize(
    ("m", "n", "k", "tile_n", "cluster_m", "mode"),
    [
        (130, 136, 272, 128, 1, "random"),
        (256, 200, 256, 192, 2, "adversarial"),
        # 6 K tiles, the last partial (720 = 5 x 128 + 80)
        (70, 72, 720, 64, 1, "random"),
    ],
)
def test_fp8_with_promotion_matches_numpy_in_the_simulator(m, n, k, tile_n, cluster_m, mode):
    # 130 x 136 x 272 on 128 x 128: 2 x 2 tiles (the second 8 columns wide) of 3 K tiles of 128
    # e4m3 (the last 16 deep), each K tile summed in the second fragment and added into the
    # first, on 2 CTAs whose consumers run 2 tiles each through the ring. 256 x 200 x 256 on
    # 128 x 192 in 2x1 clusters sharing B by multicast: 2 x 2 tiles, 2 K tiles each, the
    # adversarial schedule on 2 clusters. Products of e4m3 values are exact in fp32 (4 + 4
    # significand bits), so numpy's fp32 product differs from the kernel's only by fp32
    # reordering and C's bf16 rounding.
    rng = np.random.default_rng(k)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.float8_e4m3fn)
    print(f"building the fp8 GEMM with fp32 promotion (128 x {tile_n}, cluster {cluster_m})")
    program = hopper_gemm_persistent(cluster_m, "float8_e4m3fn", tile_n, promote=True)
    tiled_gemm_matches_numpy(
        program, a, b, tile_n, cluster_m, grid=2 * cluster_m, schedule=mode, seed=k
    )


def test_fp8_with_promotion_split_k_and_a_small_m_box_matches_numpy_in_the_simulator():
    # 40 x 136 x 512 fp8: 64 rows of A a stage (the first consumer computes, the second only
    # frees stages; with fewer it would also store fp8 zeros, which test_gemm_small_tiles.py
    # covers), 128 x 128 tiles (2 across N, the second 8 wide), 4 K tiles of 128 in 2
    # ranges of 2, each K tile promoted; the reduction adds the ranges' fp32 sums into C
    m, n, k, splits = 40, 136, 512, 2
    a, b, c = random_operands(m, n, k, seed=512, element=ml_dtypes.float8_e4m3fn)
    print("building the promoted fp8 split-K GEMM (128 x 128, 64 rows of A) and its reduction")
    kernel = hopper_gemm_persistent(
        dtype="float8_e4m3fn", tile_n=128, split_k=True, a_rows=64, promote=True
    )
    maps = (
        tile_map(a, gemm_plan.a_box(64, "float8_e4m3fn")),
        tile_map(b, gemm_plan.b_share(1, "float8_e4m3fn", tile_n=128)),
    )
    tiles = (1, 2, 4 // splits)
    partial = np.full((splits * m, 2 * 128), np.nan, np.float32)
    result = sim.run(kernel, *maps, *tiles, 8, splits, m, partial, grid=(3,), seed=2)
    assert result.ok, result.hazards
    done = sim.run(splitk_reduce(), partial, c, splits, grid=(ceil_div(m * n, 256),))
    assert done.ok, done.hazards
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    err = np.abs(c.astype(np.float32) - ref)
    assert np.isfinite(c.astype(np.float32)).all()
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-3).all(), err.max()
