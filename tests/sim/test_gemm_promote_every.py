"""The fp8 GEMM promoted every two K tiles (``promote_every=2``) in the simulator, against
numpy's fp32 product of the same fp8 inputs, with no hazard; and planted bugs of its
mainloop that these runs catch.

Products of e4m3 values are exact in fp32 (4 + 4 significand bits), so numpy's fp32 product
of the fp8-rounded inputs differs from the kernel's only by fp32 reordering and C's bf16
rounding: the tolerance of test_gemm_shapes.py's promoted fp8 tests, 2^-8 relative + 1e-3.
C (and split-K's partial sums) start as NaN, so an element nothing writes fails the check.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent, splitk_reduce
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import gemm_maps  # noqa: E402  (needs ml_dtypes)

FP8 = "float8_e4m3fn"


def _operands(m: int, n: int, k: int):
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.float8_e4m3fn)
    ref = a.astype(np.float32) @ b.astype(np.float32).T  # the fp8-rounded inputs, in fp32
    return a, b, ref


def _close(c, ref) -> bool:
    c = c.astype(np.float32)
    return bool(np.isfinite(c).all() and (np.abs(c - ref) <= 2.0**-8 * np.abs(ref) + 1e-3).all())


def _run(m, n, k, tile_n, cluster_m, grid, mode):
    """The promote_every=2 kernel on an ``m x n x k`` fp8 product: (simulation, C, numpy's)."""
    a, b, ref = _operands(m, n, k)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    maps = gemm_maps(a, b, c, tile_n, cluster_m)
    tiles = (ceil_div(m, 128), ceil_div(n, tile_n), ceil_div(k, 128))
    print(f"building the fp8 GEMM promoted every 2 K tiles (128 x {tile_n}, cluster {cluster_m})")
    program = hopper_gemm_persistent(cluster_m, FP8, tile_n, promote=True, promote_every=2)
    assert program.name.endswith("_promote_p2")
    cluster = (cluster_m, 1, 1) if cluster_m > 1 else None
    result = sim.run(program, *maps, *tiles, 8, grid=grid, cluster=cluster, schedule=mode, seed=k)
    return result, c, ref


PLAIN = {
    # 130 x 136 x 272 on 128 x 128: 2 x 2 tiles on 2 CTAs, 3 K tiles (the last 16 deep): one
    # pair and the odd last K tile, twice a CTA
    "odd": (130, 136, 272, 128, 1, (2,), "random"),
    # 256 x 200 x 768 on 128 x 192 in one 2x1 cluster sharing B: 2 units a CTA of 6 K tiles,
    # three pairs each, 12 K steps through the 4-stage ring; adversarial completion order
    "even": (256, 200, 768, 192, 2, (2,), "adversarial"),
    # 70 x 72 x 112 on 128 x 64: one K tile, 112 deep: no pair, only the leftover K tile
    "one": (70, 72, 112, 64, 1, (1,), "random"),
    # 130 x 72 x 592 on 128 x 64: 2 x 2 tiles on 2 CTAs of 5 K tiles (the last 80 deep): 10
    # K steps through the 8-stage ring, the second unit's pairs starting on an odd K step
    "odd_wrapping": (130, 72, 592, 64, 1, (2,), "adversarial"),
}


@pytest.mark.parametrize("case", sorted(PLAIN))
def test_promoted_every_two_k_tiles_matches_numpy_in_the_simulator(case):
    result, c, ref = _run(*PLAIN[case])
    assert result.ok, result.hazards
    assert _close(c, ref), np.nanmax(np.abs(c.astype(np.float32) - ref))


@pytest.mark.parametrize(
    ("m", "n", "k", "tile_n", "splits", "a_rows", "grid"),
    [
        # 130 x 136 x 768, 128 x 128 tiles, 128 rows of A (both consumers compute): 6 K tiles
        # in 2 ranges of 3 (a pair and a leftover K tile), 8 units on 3 CTAs
        (130, 136, 768, 128, 2, 128, 3),
        # 40 x 136 x 512, 64 rows of A (the second consumer only frees stages): 4 K tiles in
        # 2 ranges of 2 (one pair), 4 units on 3 CTAs
        (40, 136, 512, 128, 2, 64, 3),
        # 40 x 72 x 384, 128 x 64: 3 K tiles in 3 ranges of 1 (the leftover K tile only)
        (40, 72, 384, 64, 3, 64, 2),
    ],
)
def test_promoted_every_two_k_tiles_split_k_matches_numpy_in_the_simulator(
    m, n, k, tile_n, splits, a_rows, grid
):
    a, b, ref = _operands(m, n, k)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    print(f"building the fp8 split-K GEMM promoted every 2 K tiles (128 x {tile_n}, {a_rows} rows)")
    kernel = hopper_gemm_persistent(
        dtype=FP8, tile_n=tile_n, split_k=True, a_rows=a_rows, promote=True, promote_every=2
    )
    maps = gemm_maps(a, b, None, tile_n, a_rows=a_rows)
    n_tiles = ceil_div(n, tile_n)
    tiles = (ceil_div(m, 128), n_tiles, ceil_div(k, 128) // splits)
    partial = np.full((splits * m, n_tiles * tile_n), np.nan, np.float32)
    result = sim.run(kernel, *maps, *tiles, 8, splits, m, partial, grid=(grid,), seed=k)
    assert result.ok, result.hazards
    done = sim.run(splitk_reduce(), partial, c, splits, grid=(ceil_div(m * n, 256),))
    assert done.ok, done.hazards
    assert _close(c, ref), np.nanmax(np.abs(c.astype(np.float32) - ref))


# -- planted bugs: each is caught by the runs above ----------------------------------------------


def test_a_stage_released_before_its_group_completes_is_a_race(monkeypatch):
    # without the pair's wait_group 1, the first K tile's stage is released while its wgmmas
    # may still read it: the producer's refill of that stage (the ring wraps) races them
    original = T.ptx.wgmma.wait_group
    monkeypatch.setattr(T.ptx.wgmma, "wait_group", lambda n=0: None if n == 1 else original(n))
    result, _, _ = _run(*PLAIN["odd_wrapping"])
    assert result.of_kind("race"), result.hazards


def test_the_second_k_tile_of_a_pair_overwriting_part_is_wrong(monkeypatch):
    # scale-d 0 on the pair's second K tile too: the first K tile's sum is lost
    original = hopper._k_tile
    monkeypatch.setattr(hopper, "_k_tile", lambda *args: original(*args[:-1], 0))
    result, c, ref = _run(*PLAIN["even"])
    assert result.ok, result.hazards
    assert not _close(c, ref)


# -- two fragments: a consumer computing alone (64 or fewer rows of A) on 128, 96, 64 ------------


def _run_alone(m, n, k, tile_n, a_rows, every, grid, mode="random"):
    """The promoted kernel with ``a_rows`` rows of A (one computing consumer) on an ``m x n x
    k`` fp8 product: (simulation, C, numpy's)."""
    a, b, ref = _operands(m, n, k)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    maps = gemm_maps(a, b, c, tile_n, a_rows=a_rows)
    rows = gemm_plan.tile_rows(a_rows)
    tiles = (ceil_div(m, rows), ceil_div(n, tile_n), ceil_div(k, 128))
    print(f"building the fp8 GEMM promoted every {every} ({rows} x {tile_n}, two fragments)")
    program = hopper_gemm_persistent(
        dtype=FP8, tile_n=tile_n, a_rows=a_rows, promote=True, promote_every=every
    )
    assert "part_next" in program.source  # hopper._promote_overlapped
    result = sim.run(program, *maps, *tiles, 8, grid=(grid,), schedule=mode, seed=k)
    return result, c, ref


ALONE = {
    # 100 x 136 x 1664 on 64 x 128: 2 x 2 tiles on 2 CTAs, 13 K tiles each: three runs of two
    # pairs and one K tile left over, 26 K steps a CTA through the ring
    "every2": (100, 136, 1664, 128, 64, 2, 2, "adversarial"),
    # 40 x 72 x 1296 on 64 x 64 (32 rows of A): 11 K tiles (the last 16 deep) in five runs of
    # two single K tiles and one left over
    "every1": (40, 72, 1296, 64, 32, 1, 1, "random"),
    # 20 x 200 x 896 on 16 x 96: 2 x 3 tiles on 3 CTAs, 7 K tiles: one run and 3 left over
    # (a pair and a single K tile)
    "rest3": (20, 200, 896, 96, 16, 2, 3, "random"),
}


@pytest.mark.parametrize("case", sorted(ALONE))
def test_two_fragments_match_numpy_in_the_simulator(case):
    result, c, ref = _run_alone(*ALONE[case])
    assert result.ok, result.hazards
    assert _close(c, ref), np.nanmax(np.abs(c.astype(np.float32) - ref))


@pytest.mark.parametrize("groups", [3, 4])
def test_longer_runs_of_two_fragments_match_numpy(monkeypatch, groups):
    # runs of 3 and 4 groups (OVERLAP_GROUPS; the kernels use 2, since longer runs spill at
    # 128 wide): the third and fourth groups go back to the first and second fragments, and
    # each add reads the group before; 13 K tiles = 2 runs of 6 and one K tile left over (3),
    # 1 run of 8 and 5 left over (4)
    monkeypatch.setattr(hopper, "OVERLAP_GROUPS", groups)
    result, c, ref = _run_alone(*ALONE["every2"])
    assert result.ok, result.hazards
    assert _close(c, ref), np.nanmax(np.abs(c.astype(np.float32) - ref))


def test_two_fragments_sum_as_one_does(monkeypatch):
    # the same groups in the same order: C equal, bit for bit, to the one-fragment kernel's
    _, c, _ = _run_alone(*ALONE["every2"])
    single = hopper_gemm_persistent(dtype=FP8, tile_n=128, a_rows=64, promote=True, promote_every=2)
    monkeypatch.setattr(hopper, "OVERLAPPED_TILE_NS", ())
    one = hopper_gemm_persistent(dtype=FP8, tile_n=128, a_rows=64, promote=True, promote_every=2)
    assert "part_next" in single.source and "part_next" not in one.source
    a, b, _ = _operands(100, 136, 1664)
    c1 = np.full((100, 136), np.nan, ml_dtypes.bfloat16)
    result = sim.run(one, *gemm_maps(a, b, c1, 128, a_rows=64), 2, 2, 13, 8, grid=(2,), seed=1)
    assert result.ok, result.hazards
    assert np.array_equal(c.view(np.uint16), c1.view(np.uint16))


def test_adding_a_fragment_before_its_group_completes_is_a_hazard(monkeypatch):
    # without the wait_group 1 after a group's first K tile, the previous group's fragment is
    # read (and its stages freed) while its wgmmas may still run
    original = T.ptx.wgmma.wait_group
    monkeypatch.setattr(T.ptx.wgmma, "wait_group", lambda n=0: None if n == 1 else original(n))
    result, _, _ = _run_alone(*ALONE["every2"])
    assert not result.ok


def test_adding_the_fragment_in_flight_instead_is_wrong(monkeypatch):
    # each add made with a group in flight adds that group's fragment (the other one) instead
    # of the completed group's: a hazard, or a wrong sum
    original_add, original_run = hopper._add_into, hopper._promote_run

    def run(acc, parts, a, b, full, empty, consumer, step, sched, every, tiles):
        adds = [0]

        def add(acc, part):
            adds[0] += 1
            last = adds[0] == len(range(0, tiles, every))  # the drain's add: nothing in flight
            original_add(acc, part if last else parts[1] if part is parts[0] else parts[0])

        monkeypatch.setattr(hopper, "_add_into", add)
        original_run(acc, parts, a, b, full, empty, consumer, step, sched, every, tiles)
        monkeypatch.setattr(hopper, "_add_into", original_add)

    monkeypatch.setattr(hopper, "_promote_run", run)
    result, c, ref = _run_alone(*ALONE["every2"])
    assert not (result.ok and _close(c, ref))


@pytest.mark.parametrize(
    ("function", "count_arg", "alone", "case"),
    [
        # one fragment (128 rows of A): no group for the k_tiles % 2 K tiles after the pairs;
        # K = 112 (one K tile) sums nothing
        ("_promote_group", -2, False, "one"),
        # two fragments: no run for the K tiles left over after the whole runs; 13 K tiles
        # sum 12
        ("_promote_run", -1, True, "every2"),
    ],
)
def test_a_dropped_leftover_is_wrong(monkeypatch, function, count_arg, alone, case):
    original = getattr(hopper, function)
    monkeypatch.setattr(
        hopper, function, lambda *args: None if args[count_arg] == 1 else original(*args)
    )
    result, c, ref = _run_alone(*ALONE[case]) if alone else _run(*PLAIN[case])
    assert not (result.ok and _close(c, ref))
