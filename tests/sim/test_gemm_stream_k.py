"""The stream-K GEMM (``hopper_gemm_persistent(stream_k=True)``) in the simulator against
numpy's fp32 product, and its segment arithmetic against a count by hand.

Every K step of every tile is computed exactly once: the CTAs split the steps of the whole
product evenly, a CTA whose share starts inside a tile hands its fp32 sums over through
``work`` and a flag, and the CTA that starts the tile adds them in CTA order and writes C.
C starts as NaN, so a tile nobody writes fails; ``work`` starts as NaN, so a sum read before
it is written fails; the flags must be zero again after the launch. Tolerance as in
test_gemm_shapes.py: bf16 rounding of C (2^-8 relative) plus fp32 reordering.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.errors import GemmShapeError
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent, stream_k_grid
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import gemm_maps  # noqa: E402  (needs ml_dtypes)


@functools.lru_cache
def _program(
    tile_n: int,
    dtype: str = "bfloat16",
    promote: bool = False,
    every: int = 1,
    a_rows: int = 128,
    cluster_m: int = 1,
):
    print(
        f"building the stream-K GEMM (128 x {tile_n}, {dtype}, promote={promote}, {every}, "
        f"{a_rows} rows of A, clusters of {cluster_m})"
    )
    return hopper_gemm_persistent(
        tile_n=tile_n,
        dtype=dtype,
        promote=promote,
        promote_every=every,
        stream_k=True,
        a_rows=a_rows,
        cluster_m=cluster_m,
    )


def _stream_k(
    a,
    b,
    c,
    tile_n: int,
    grid: int,
    seed: int,
    dtype="bfloat16",
    promote=False,
    m_group=1,
    every=1,
    a_rows=128,
    cluster_m=1,
):
    m, k = a.shape
    n = b.shape[0]
    maps = gemm_maps(a, b, c, tile_n, cluster_m=cluster_m, a_rows=a_rows)
    rows = gemm_plan.tile_rows(a_rows)
    tiles = (ceil_div(m, rows), ceil_div(n, tile_n), ceil_div(k, gemm_plan.tile_k(dtype)))
    work = np.full((grid * 2 * tile_n // 2, 128), np.nan, np.float32)
    flags = np.zeros(grid * 2, np.uint32)
    program = _program(tile_n, dtype, promote, every, a_rows, cluster_m)
    result = sim.run(
        program,
        *maps,
        *tiles,
        8,
        m_group,
        work,
        flags,
        grid=(grid,),
        cluster=(cluster_m, 1, 1) if cluster_m > 1 else None,
        sms=grid,
        schedule="random",
        seed=seed,
    )
    assert result.ok, result.hazards
    assert not flags.any(), flags  # every flag raised was taken and set back
    return work


def _bf16_against_numpy(m, n, k, tile_n, grid, data_seed, seed, **kwargs):
    """Random bf16 operands, the stream-K kernel in the simulator, C checked against numpy's
    fp32 product; returns the hand-over workspace."""
    rng = np.random.default_rng(data_seed)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    work = _stream_k(a, b, c, tile_n, grid, seed=seed, **kwargs)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    got = c.astype(np.float32)
    assert np.isfinite(got).all()
    assert (np.abs(got - ref) <= 2.0**-8 * np.abs(ref) + 1e-3).all()
    return work


@pytest.mark.parametrize(
    ("m", "n", "k", "tile_n", "grid", "handed", "m_group"),
    [
        # 2 x 2 tiles of 5 K tiles = 20 steps over 3 CTAs: [0, 6), [6, 13), [13, 20). CTA 0
        # owns tiles 0 and 1, CTA 1 hands tile 1's steps 1-4 over and owns tile 2, CTA 2
        # hands tile 2's steps 3-4 over and owns tile 3 whole
        (130, 136, 320, 128, 3, [1, 2], 1),
        # one tile (N = 104 < 128) of 5 K tiles over 3 CTAs: [0, 1), [1, 3), [3, 5); CTA 0
        # adds 1's and 2's
        (64, 104, 320, 128, 3, [1, 2], 1),
        # 4 tiles over 4 CTAs: each CTA one whole tile, nothing handed over
        (256, 200, 128, 64, 4, [], 1),
        # 3 tiles (N = 136 in 64-wide tiles) of 3 K tiles = 9 steps over 4 CTAs:
        # [0, 2), [2, 4), [4, 6), [6, 9): CTAs 1 and 2 hand over their first segment
        (100, 136, 192, 64, 4, [1, 2], 1),
        # groups of 2 CTAs (M tiles 0 and 1 of one N tile): 2 units of 5 K tiles = 10 steps
        # over 3 groups: [0, 3), [3, 6), [6, 10); groups 1 (CTAs 2, 3) and 2 (CTAs 4, 5) hand
        # their first segment over to the same rank of the group before
        (256, 136, 320, 128, 6, [2, 3, 4, 5], 2),
        # groups of 2 over 4 M tiles (M = 512): 2 units (M tiles 0-1, then 2-3) of 3 K
        # tiles = 6 steps over 3 groups: [0, 2), [2, 4), [4, 6); groups 1 and 2 hand over
        (512, 104, 192, 128, 6, [2, 3, 4, 5], 2),
        # groups of 3 (M = 300: 3 M tiles), one unit of 5 K tiles over 2 groups: [0, 2),
        # [2, 5); CTAs 3, 4, 5 hand over to 0, 1, 2
        (300, 104, 320, 128, 6, [3, 4, 5], 3),
    ],
)
def test_stream_k_matches_numpy(m, n, k, tile_n, grid, handed, m_group):
    work = _bf16_against_numpy(m, n, k, tile_n, grid, m + n + k, grid, m_group=m_group)
    # which CTAs handed sums over: their slots were written, the others' never touched
    regs = tile_n // 2
    written = [cta for cta in range(grid) if np.isfinite(work[cta * 2 * regs]).all()]
    assert written == handed


@pytest.mark.parametrize(("m", "a_rows"), [(13, 16), (50, 64), (32, 32)])
def test_small_m_stream_k_matches_numpy(m, a_rows):
    """A stage holds ``a_rows`` rows of A (M <= a_rows): only the first consumer computes and
    hands sums over, the second frees each stage of every segment (it would deadlock the
    producer otherwise). N = 200 in 64-wide tiles: 4 tiles of 5 K tiles = 20 steps over 3
    CTAs, [0, 6), [6, 13), [13, 20): CTA 1 hands tile 1's steps 1-4 over to CTA 0 and CTA 2
    tile 2's steps 3-4 to CTA 1."""
    n, k, tile_n, grid = 200, 320, 64, 3
    work = _bf16_against_numpy(m, n, k, tile_n, grid, m, m, a_rows=a_rows)
    regs = tile_n // 2
    first = [cta for cta in range(grid) if np.isfinite(work[cta * 2 * regs]).all()]
    second = [cta for cta in range(grid) if np.isfinite(work[(cta * 2 + 1) * regs]).any()]
    assert (first, second) == ([1, 2], [])  # the idle consumer hands nothing over


@pytest.mark.parametrize("every", [1, 2])
def test_stream_k_promoted_fp8_matches_numpy(every):
    # 2 tiles of 5 fp8 K tiles = 10 steps over 3 CTAs: [0, 3), [3, 6), [6, 10): segments of
    # 3, 2 + 1 and 4 K tiles, odd and even counts for promotion every two K tiles
    m, n, k, grid = 130, 104, 640, 3
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.float8_e4m3fn)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    _stream_k(a, b, c, 128, grid, seed=1, dtype="float8_e4m3fn", promote=True, every=every)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    got = c.astype(np.float32)
    assert (np.abs(got - ref) <= 2.0**-8 * np.abs(ref) + 1e-3).all()


def test_the_same_bits_whichever_cta_finishes_first():
    """The owner adds its peers in CTA order: C does not depend on the schedule."""
    m, n, k = 64, 104, 320
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    outs = []
    for seed in (0, 1, 2):
        c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
        _stream_k(a, b, c, 128, 4, seed=seed)
        outs.append(c.view(np.uint16).copy())
    assert all((o == outs[0]).all() for o in outs)


@pytest.mark.parametrize(
    ("cluster_m", "message"),
    [(1, r"stream-K runs without split-K.*split_k=False"), (2, r"split-K runs CTAs alone")],
)
def test_stream_k_refuses_split_k(cluster_m, message):
    with pytest.raises(GemmShapeError, match=message):
        hopper_gemm_persistent(stream_k=True, split_k=True, cluster_m=cluster_m)


@pytest.mark.parametrize(
    ("m", "n", "k", "tile_n", "grid", "handed", "cluster_m", "a_rows", "dtype"),
    [
        # pairs (M tiles 0 and 1 of one N tile, B multicast): 2 units of 5 K tiles = 10 steps
        # over 3 clusters: [0, 3), [3, 6), [6, 10); clusters 1 (CTAs 2, 3) and 2 (CTAs 4, 5)
        # hand their first segment over to the same rank of the cluster before
        (256, 136, 320, 128, 6, [2, 3, 4, 5], 2, 128, "bfloat16"),
        # 3 M tiles in pairs: the second unit's rank 1 computes a tile past M (zeros, clipped
        # stores); 2 N tiles of 96: 4 units of 3 K tiles = 12 steps over 5 clusters: [0, 2),
        # [2, 4), [4, 7), [7, 9), [9, 12) against units [0, 3), [3, 6), [6, 9), [9, 12):
        # clusters 1, 2 and 3 start inside a unit and hand that segment over, 4 starts one
        (300, 192, 192, 96, 10, [2, 3, 4, 5, 6, 7], 2, 128, "bfloat16"),
        # fours of 64-row tiles (M = 256), 2 units of 4 K tiles over 2 clusters: [0, 4),
        # [4, 8): each cluster one whole unit, nothing handed over
        (256, 128, 256, 64, 8, [], 4, 64, "bfloat16"),
        # promoted fp8 in pairs: 1 unit of 5 K tiles over 2 clusters, [0, 2), [2, 5)
        (256, 104, 640, 128, 4, [2, 3], 2, 128, "float8_e4m3fn"),
    ],
)
def test_stream_k_in_clusters_matches_numpy(
    m, n, k, tile_n, grid, handed, cluster_m, a_rows, dtype
):
    """Stream-K groups as clusters along M sharing B by multicast: C against numpy's fp32
    product, hazard-free, every flag back to zero, and the hand-overs where the even split
    of the steps puts them."""
    rng = np.random.default_rng(m + n + k)
    kind = ml_dtypes.bfloat16 if dtype == "bfloat16" else ml_dtypes.float8_e4m3fn
    a = rng.standard_normal((m, k)).astype(kind)
    b = rng.standard_normal((n, k)).astype(kind)
    c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
    fp8 = dtype != "bfloat16"
    work = _stream_k(
        a,
        b,
        c,
        tile_n,
        grid,
        seed=grid,
        dtype=dtype,
        promote=fp8,
        every=2 if fp8 else 1,
        m_group=cluster_m,
        a_rows=a_rows,
        cluster_m=cluster_m,
    )
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    got = c.astype(np.float32)
    assert np.isfinite(got).all()
    assert (np.abs(got - ref) <= 2.0**-8 * np.abs(ref) + 1e-3).all()
    regs = tile_n // 2
    written = [cta for cta in range(grid) if np.isfinite(work[cta * 2 * regs]).all()]
    assert written == handed


@pytest.mark.parametrize("stream_k", [1, 0, "yes", None])
def test_the_kernel_builder_takes_stream_k_as_a_bool_only(stream_k):
    with pytest.raises(GemmShapeError, match=r"stream_k is True or False, got "):
        hopper_gemm_persistent(stream_k=stream_k)


@pytest.mark.parametrize(
    ("tiles", "sms", "want"),
    [
        ((2, 48, 64), 132, (132, 2)),  # 256 x 6144 x 4096 at 128 x 128: 66 pairs
        ((3, 22, 224), 132, (132, 3)),  # M = 384: groups of 3 M tiles
        ((5, 10, 64), 132, (130, 5)),  # 26 groups of 5 (130 of 132 SMs)
        ((16, 8, 32), 132, (128, 8)),  # at most 8 a group: 16 groups of 8
        ((11, 4, 32), 132, (132, 1)),  # 11 M tiles: no divisor up to 8 but 1
        ((9, 4, 32), 132, (132, 3)),  # 9 M tiles: 3, not 9 (at most 8 a group)
        ((1, 1, 3), 132, (3, 1)),  # 3 K steps: 3 CTAs, one step each
        ((2, 1, 1), 132, (2, 2)),  # one unit of one K step: one group
        ((4, 4, 4), 2, (2, 2)),  # two SMs hold one group of 2
    ],
)
def test_stream_k_grid_takes_whole_groups_of_the_m_tiles(tiles, sms, want):
    assert stream_k_grid(*tiles, sms) == want


def test_stream_k_grid_refuses_what_its_32_bit_steps_cannot_count():
    # 64 x 64 units of 4,096 K tiles = 2**24 steps on 16 groups of 8: 2**28 fits
    assert stream_k_grid(512, 64, 4096, 128) == (128, 8)
    with pytest.raises(GemmShapeError, match=r"32-bit step arithmetic; use stream_k=False"):
        stream_k_grid(1024, 1024, 4096, 132)  # 2**29 steps * 16 groups
    # the edge on two SMs: 2**15 units of 2**15 - 1 K tiles on 2 groups is 2**31 - 2**16,
    # 2**15 of 2**15 is 2**31, one past the largest int32
    assert stream_k_grid(1, 2**15, 2**15 - 1, 2) == (2, 1)
    with pytest.raises(GemmShapeError, match=r"1073741824 \* 2 does not fit"):
        stream_k_grid(1, 2**15, 2**15, 2)


def test_stream_k_grid_splits_cap_the_groups_at_units_times_splits():
    # 2 M tiles (groups of 2) x 3 N tiles = 3 units of 10 K tiles: splits 1 gives 3 groups
    # (each unit on one group: the tiled kernel's grid), 2 gives 6, 40 the 30 K steps
    assert stream_k_grid(2, 3, 10, 132, 1) == (6, 2)
    assert stream_k_grid(2, 3, 10, 132, 2) == (12, 2)
    assert stream_k_grid(2, 3, 10, 132, 40) == (60, 2)


@pytest.mark.parametrize(
    "args", [(0, 1, 1, 132), (1, 0, 1, 132), (1, 1, 0, 132), (1, 1, 1, 0), (1, 1, 1, 132, 0)]
)
def test_stream_k_grid_refuses_counts_below_one(args):
    with pytest.raises(GemmShapeError, match=r"stream_k_grid's \w+ must be"):
        stream_k_grid(*args)


def test_generated_source_keeps_what_the_simulator_cannot_see():
    """Three things the simulated runs pass without (docs/TESTING.md, the stream-K mutation
    run), pinned in the CUDA the kernel is built from: the hand-over's bar.sync is the
    consumer's own named barrier (ids 1 and 2, as the epilogue's: PTX ISA "bar.sync", a
    barrier id shared by the two warpgroups' different 128-thread barriers would mix them),
    one thread then fences (fence.acq_rel.gpu: the release pattern of the PTX memory model)
    before its release atomic, and each warpgroup's thread 0 waits for all its bulk stores
    (cp.async.bulk.wait_group 0) before the CTA retires."""
    src = _program(128).source
    hand_over = src[src.index("int32_t fix_slot = ") : src.index("} else {", src.index("fix_slot"))]
    assert 'asm volatile("bar.sync %0, 128;" :  : "r"(((warpgroup - 1) + 1))' in hand_over
    guard = hand_over.index("if ((fix_t == 0)) {")
    fence = hand_over.index('asm volatile("fence.acq_rel.gpu;"')
    atom = hand_over.index("tm_atom_add_acq_rel_gpu(&flags[fix_slot], (uint32_t)(1u))")
    assert hand_over.index("bar.sync") < guard < fence < atom
    tail = src[src.rindex("cp.async.bulk.wait_group.read 1;") :]
    assert (
        'if ((((int)threadIdx.x % 128) == 0)) {\n      asm volatile("cp.async.bulk.wait_group 0;"'
        in tail
    )


@pytest.mark.parametrize(
    ("tiles", "sms", "cluster_m", "want"),
    [
        ((2, 54, 128), 132, 2, (132, 2)),  # 256 x 10240 x 8192 at 128 x 192: 66 pairs
        ((3, 10, 64), 132, 2, (132, 2)),  # 3 M tiles in pairs: 2 x 10 units, 66 pairs
        ((8, 4, 32), 132, 4, (132, 4)),  # fours, not the 8 a group of CTAs alone would be
        ((2, 1, 3), 132, 2, (6, 2)),  # 3 steps: 3 pairs
        ((2, 48, 64), 120, 2, (120, 2)),  # 60 pairs resident
    ],
)
def test_stream_k_grid_of_clusters(tiles, sms, cluster_m, want):
    assert stream_k_grid(*tiles, sms, None, cluster_m) == want


@pytest.mark.parametrize(
    ("sms", "cluster_m"), [(1, 2), (3, 4), (132, 3), (132, 8), (132, 2.0), (132, True)]
)
def test_stream_k_grid_refuses_clusters_it_cannot_form(sms, cluster_m):
    with pytest.raises(GemmShapeError, match=r"stream_k_grid"):
        stream_k_grid(2, 4, 8, sms, None, cluster_m)
