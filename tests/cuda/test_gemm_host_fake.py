"""The GEMM's host code (``HopperGemm``, ``AutoGemm``, workspaces, staging copies) on a CPU,
against the fake driver of ``gemmfake``: what it asks the driver to do for given shapes.

Every expected number is worked out by hand in a comment from these rules:

- the docstrings of ``gemm/hopper.py`` and ``gemm/shapes.py``: a CTA tile is ``128 x tile_n``
  (``tiles = ceil(M / 128) x ceil(Np / tile_n) x ceil(Kp / tile_k)``, ``tile_k`` 64 bf16 or
  128 fp8 elements: 128 bytes), the persistent grid is one CTA per SM or, in clusters of
  ``cluster_m``, ``cluster_m`` times the clusters that fit at once
  (``cuOccupancyMaxActiveClusters``), capped by the work units (``ceil(m_tiles / cluster_m) x
  n_tiles``; split-K: ``tiles x splits``) and by ``ctas``; staged operands are zero-filled
  ``M x Kp`` / ``Np x Kp`` / ``M x Np`` workspaces (``Kp``: K rounded up to 16 bytes, ``Np``: N
  to 8), copied in before the kernel and C copied out after it; split-K sums into a ``splits
  * M x`` (whole N tiles) fp32 workspace and ``splitk_reduce`` writes C with ``ceil(M N /
  256)`` blocks of 256 threads;
- the CUDA Driver API: ``cuTensorMapEncodeTiled`` takes ``globalDim`` innermost first and
  ``globalStrides`` of the outer dimensions in bytes; ``cuMemsetD8`` is asynchronous with the
  host for device memory (API synchronization behavior), so a workspace is synchronised
  before another stream reads it; ``CUDA_MEMCPY2D`` copies ``Height`` rows of
  ``WidthInBytes`` bytes between row pitches; ``cuMemFree`` gives an allocation back;
- ``__cuda_array_interface__`` v3: ``data`` is ``(pointer, read_only)``.
"""

from __future__ import annotations

import gc
import struct

import pytest
from fakedriver import CUDA_ERROR_INVALID_VALUE, Stream
from gemmfake import DEVICE_MEMORY, GemmDriver, Tensor, install

from tilemem.errors import GemmShapeError, LaunchError
from tilemem.gemm.hopper import AutoGemm, HopperGemm

A_AT, B_AT, C_AT = 0x10_0000, 0x40_0000, 0x90_0000
DEFAULT_STREAM = 0x5150  # the fake cuda.core device's default stream
SWIZZLE_128B = 3  # CU_TENSOR_MAP_SWIZZLE_128B (cuda.h)
BF16, UINT8 = 9, 0  # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, _UINT8 (cuda.h): fp8 moves as bytes


@pytest.fixture
def drv(monkeypatch):
    yield install(monkeypatch, GemmDriver())
    gc.collect()  # workspaces freed while the fake driver is still the driver


def operands(m: int, n: int, k: int, dtype: str = "bfloat16"):
    return Tensor(A_AT, (m, k), dtype), Tensor(B_AT, (n, k), dtype), Tensor(C_AT, (m, n))


def ints(params: list[bytes]) -> list[int]:
    return [struct.unpack("<i", p)[0] for p in params]


def pointer(param: bytes) -> int:
    return struct.unpack("<Q", param)[0]


def in_stream(drv: GemmDriver) -> list[tuple]:
    """The copies and launches, in order (frees of earlier tests' workspaces left out)."""
    return [e for e in drv.events if e[0] in ("copy", "launch")]


def only_launch(drv: GemmDriver):
    ((name, launch),) = drv.kernel_launches()
    return name, launch


# -- the defaults ------------------------------------------------------------------------------


def test_default_gemm_launches_bf16_pairs_of_256_wide_tiles(drv):
    # HopperGemm(): group_m 8, cluster_m 2, bf16, no L2 promotion, 256 wide, no split-K, 128
    # rows of A, no promotion. 256 x 256 x 64: 2 x 1 x 1 tiles, one unit of a pair: grid 2
    HopperGemm().prepare(*operands(256, 256, 64))()
    name, launch = only_launch(drv)
    assert name == "hopper_gemm_persistent_cluster2"
    assert (launch.grid, launch.cluster, launch.block) == ((2, 1, 1), (2, 1, 1), (384, 1, 1))
    assert launch.stream == DEFAULT_STREAM
    assert ints(launch.params[3:]) == [2, 1, 1, 8]  # m, n, k tiles, group_m
    a, b, c = (drv.map_of(p) for p in launch.params[:3])
    # A: K = 64 columns of 128-byte rows at A's address, a 64 x 128 box (128 rows of A)
    assert (a["address"], a["dims"], a["strides"], a["box"]) == (A_AT, [64, 256], [128], [64, 128])
    # B: a pair's CTA loads 256 / 2 = 128 rows and multicasts them
    assert (b["address"], b["dims"], b["box"]) == (B_AT, [64, 256], [64, 128])
    # C: 256 x 256 bf16 (512-byte rows) stored in 64 x 64 slices
    assert (c["address"], c["dims"], c["strides"], c["box"]) == (C_AT, [256, 256], [512], [64, 64])
    for m in (a, b, c):
        assert (m["dtype"], m["swizzle"], m["l2"], m["elem"]) == (BF16, SWIZZLE_128B, 0, [1, 1])
    assert not drv.of("alloc")  # nothing staged: no workspace


def test_calling_the_gemm_prepares_and_launches_once(drv):
    HopperGemm(cluster_m=1)(*operands(128, 256, 64), stream=Stream(0x77))
    name, launch = only_launch(drv)
    assert (name, launch.stream, launch.cluster) == ("hopper_gemm_persistent", 0x77, None)


def test_l2_promotion_reaches_a_and_b_maps(drv):
    # CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2 (cuda.h) on A and B; C's map has none
    HopperGemm(cluster_m=1, l2_promotion=128).prepare(*operands(128, 256, 64))()
    _, launch = only_launch(drv)
    assert [drv.map_of(p)["l2"] for p in launch.params[:3]] == [2, 2, 0]


# -- the persistent grid -----------------------------------------------------------------------


def test_without_clusters_the_grid_is_one_cta_per_sm(drv):
    # 1536 x 3072: 12 x 12 = 144 tiles on 132 SMs: 132 CTAs, launched without a cluster. The
    # fake says 100 one-CTA clusters fit so that the test tells which number the grid follows
    drv.occupancy = {1: 100, 2: 50, 4: 25}
    HopperGemm(cluster_m=1).prepare(*operands(1536, 3072, 64))()
    _, launch = only_launch(drv)
    # one attribute: programmatic stream serialization (HopperGemm's default), no cluster
    assert (launch.grid, launch.cluster, launch.num_attrs) == ((132, 1, 1), None, 1)
    assert launch.programmatic


def test_with_pairs_the_grid_is_the_clusters_that_fit(drv):
    # 2560 x 2560: 20 x 10 tiles, 10 x 10 = 100 units of a pair; 60 pairs fit (occupancy,
    # asked for a 2 x 1 x 1 cluster of 384 threads): 60 pairs, grid 120
    drv.occupancy = {1: 132, 2: 60, 4: 30}
    HopperGemm(cluster_m=2).prepare(*operands(2560, 2560, 64))()
    ((_, name, query),) = drv.of("occupancy")
    assert (name, query.cluster, query.block) == (
        "hopper_gemm_persistent_cluster2",
        (2, 1, 1),
        (384, 1, 1),
    )
    _, launch = only_launch(drv)
    assert (launch.grid, launch.cluster) == ((120, 1, 1), (2, 1, 1))


def test_the_grid_is_capped_by_the_work_units(drv):
    # 300 x 512 x 320: 3 x 2 x 5 tiles; pairs: ceil(3 / 2) x 2 = 4 units, grid 8
    HopperGemm(cluster_m=2).prepare(*operands(300, 512, 320))()
    _, launch = only_launch(drv)
    assert (launch.grid, launch.cluster) == ((8, 1, 1), (2, 1, 1))
    assert ints(launch.params[3:]) == [3, 2, 5, 8]


@pytest.mark.parametrize(
    ("ctas", "grid"),
    [
        (6, 6),  # 6 // 2 = 3 pairs
        (7, 6),  # 7 // 2 = 3 pairs: a cap holds whole clusters
        (2, 2),  # one pair
        (3, 2),
    ],
)
def test_ctas_caps_the_grid_in_whole_clusters(drv, ctas, grid):
    # 2560 x 2560: 100 units of a pair, 66 fit: the cap decides
    HopperGemm(cluster_m=2).prepare(*operands(2560, 2560, 64), ctas=ctas)()
    _, launch = only_launch(drv)
    assert launch.grid == (grid, 1, 1)


def test_clusters_along_n_share_a_in_boxes_of_a_share_of_its_rows(drv):
    # 300 x 1000 x 320, 128 x 96 tiles in 1x2 clusters: 3 M tiles x ceil(1000 / 96) = 11 N
    # tiles, ceil(11 / 2) = 6 N units: 18 units of a pair, 60 pairs fit: grid 36, clusters of 2
    drv.occupancy = {1: 132, 2: 60, 4: 30}
    HopperGemm(cluster_m=1, cluster_n=2, tile_n=96).prepare(*operands(300, 1000, 320))()
    ((_, name, query),) = drv.of("occupancy")
    assert (name, query.cluster) == ("hopper_gemm_persistent_clustern2_n96", (2, 1, 1))
    _, launch = only_launch(drv)
    assert (launch.grid, launch.cluster) == ((36, 1, 1), (2, 1, 1))
    assert ints(launch.params[3:]) == [3, 11, 5, 8]
    a, b, _ = (drv.map_of(p) for p in launch.params[:3])
    # A: a rank loads 128 / 2 = 64 rows and multicasts them; B: each CTA its whole 96 rows
    assert (a["box"], b["box"]) == ([64, 64], [64, 96])


@pytest.mark.parametrize(
    ("kwargs", "box_rows", "grid"),
    [
        ({"cluster_n": 4, "tile_n": 128}, 32, 24),  # 3 x ceil(8 / 4) = 6 units of 4 CTAs
        ({"cluster_n": 2, "tile_n": 128, "a_rows": 64}, 32, 40),  # 5 x 4 = 20 units, 64-row tiles
        ({"cluster_n": 2, "tile_n": 128, "a_rows": 32}, 16, 8),  # M <= 32: 1 x 4 units
    ],
)
def test_clusters_along_n_launch_whole_clusters_of_their_units(drv, kwargs, box_rows, grid):
    # C of 300 (or 20, for the 32-row kernel) x 1024: 1024 / 128 = 8 N tiles
    m = 20 if kwargs.get("a_rows") == 32 else 300
    HopperGemm(**{"cluster_m": 1, **kwargs}).prepare(*operands(m, 1024, 320))()
    _, launch = only_launch(drv)
    size = kwargs["cluster_n"]
    assert (launch.grid, launch.cluster) == ((grid, 1, 1), (size, 1, 1))
    assert drv.map_of(launch.params[0])["box"] == [64, box_rows]


def test_clusters_along_n_cap_the_grid_in_whole_clusters_and_refuse_less(drv):
    gemm = HopperGemm(cluster_m=1, cluster_n=4, tile_n=128)
    gemm.prepare(*operands(2560, 2560, 64), ctas=10)()
    _, launch = only_launch(drv)
    assert launch.grid == (8, 1, 1)  # 10 // 4 = 2 clusters of 4
    with pytest.raises(GemmShapeError, match=r"ctas=3 is below one cluster: .* clusters of 4"):
        gemm.prepare(*operands(2560, 2560, 64), ctas=3)
    assert len(drv.kernel_launches()) == 1  # refused before anything was mapped or launched
    assert len(drv.of("occupancy")) == 1


def test_a_machine_of_ten_sms_takes_ten_ctas(drv):
    # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 10; 144 tiles: grid 10
    drv.sms = 10
    HopperGemm(cluster_m=1).prepare(*operands(1536, 3072, 64))()
    assert only_launch(drv)[1].grid == (10, 1, 1)


# -- refusals ----------------------------------------------------------------------------------


def test_group_m_must_be_a_positive_number_of_m_tiles(drv):
    with pytest.raises(GemmShapeError, match="group_m is a positive number of M tiles, got 0"):
        HopperGemm(group_m=0)


def test_ctas_below_one_is_refused(drv):
    with pytest.raises(GemmShapeError, match="positive number of CTAs, got 0"):
        HopperGemm(cluster_m=1).prepare(*operands(128, 256, 64), ctas=0)


def test_a_rows_kernel_splits_m_into_tiles_of_its_rows(drv):
    gemm = HopperGemm(cluster_m=1, a_rows=32)
    gemm.prepare(*operands(33, 256, 64))()  # 33 rows: two M tiles of 32
    # the A box is the kernel's 32 rows of A (64 x 32, innermost first), and so is C's: a
    # 64-row store of the first tile would write zeros over the second tile's rows
    _, launch = only_launch(drv)
    assert drv.map_of(launch.params[0])["box"] == [64, 32]
    assert drv.map_of(launch.params[2])["box"] == [64, 32]
    assert ints(launch.params[3:]) == [2, 1, 1, 8]


def test_64_row_tiles_take_any_m(drv):
    # a_rows 64: tiles of 64 rows, so M = 200 is 4 M tiles (rows 192..199 in the last) with a
    # 64 x 64 box of A, where the 128-row kernel has 2
    HopperGemm(cluster_m=1, a_rows=64).prepare(*operands(200, 256, 64))()
    _, launch = only_launch(drv)
    assert drv.map_of(launch.params[0])["box"] == [64, 64]
    assert ints(launch.params[3:]) == [4, 1, 1, 8]


def test_the_full_a_box_kernel_takes_any_m(drv):
    HopperGemm(cluster_m=1).prepare(*operands(200, 256, 64))()  # a_rows 128: M = 200 runs
    _, launch = only_launch(drv)
    assert drv.map_of(launch.params[0])["box"] == [64, 128]
    assert ints(launch.params[3:6]) == [2, 1, 1]


def test_splits_need_the_split_k_kernel(drv):
    with pytest.raises(GemmShapeError, match=r"splits=2 needs the split-K kernel"):
        HopperGemm(cluster_m=1).prepare(*operands(128, 256, 512), splits=2)


# -- staged operands ---------------------------------------------------------------------------


def _staged(drv, stream=None, dtype="bfloat16"):
    # 130 x 130 x 100 bf16: K = 100 is no multiple of 8 (Kp = 104), N = 130 no multiple of 8
    # (Np = 136): A, B and C all staged
    launch = HopperGemm(cluster_m=1, dtype=dtype).prepare(*operands(130, 130, 100, dtype))
    prepared = list(drv.events)
    drv.events.clear()
    launch(stream)
    return launch, prepared


def test_staged_workspaces_are_allocated_zeroed_and_synchronised(drv):
    launch, prepared = _staged(drv)
    allocs = [e for e in prepared if e[0] == "alloc"]
    # A 130 x 104, B 136 x 104, C 130 x 136, 2 bytes each
    assert [n for _, _, n in allocs] == [130 * 104 * 2, 136 * 104 * 2, 130 * 136 * 2]
    for _, address, n in allocs:
        i = prepared.index(("alloc", address, n))
        assert prepared[i + 1 : i + 3] == [("memset", address, 0, n), ("sync",)]
    work = launch.workspace
    assert [work[x].ptr for x in "ABC"] == [address for _, address, _ in allocs]


def test_staged_copies_surround_the_kernel_on_one_stream(drv):
    launch, _ = _staged(drv, stream=Stream(0x77))
    work = launch.workspace
    kinds = [e[0] for e in in_stream(drv)]
    assert kinds == ["copy", "copy", "launch", "copy"]
    (_, a), (_, b), (_, name, kernel), (_, c) = in_stream(drv)
    # A: 130 rows of 200 bytes (K = 100 bf16) into 208-byte rows (Kp = 104); B: 130 rows
    assert (a.src, a.dst, a.src_pitch, a.dst_pitch, a.width, a.height) == (
        A_AT, work["A"].ptr, 200, 208, 200, 130,
    )  # fmt: skip
    assert (b.src, b.dst, b.src_pitch, b.dst_pitch, b.width, b.height) == (
        B_AT, work["B"].ptr, 200, 208, 200, 130,
    )  # fmt: skip
    # C out: 130 rows of 260 bytes (N = 130) from 272-byte rows (Np = 136)
    assert (c.src, c.dst, c.src_pitch, c.dst_pitch, c.width, c.height) == (
        work["C"].ptr, C_AT, 272, 260, 260, 130,
    )  # fmt: skip
    for copy in (a, b, c):
        assert copy.memory_types == (DEVICE_MEMORY, DEVICE_MEMORY)
        assert copy.offsets == (0, 0, 0, 0) and copy.stream == 0x77
    assert (name, kernel.stream, kernel.grid) == ("hopper_gemm_persistent", 0x77, (2, 1, 1))
    # the kernel reads and writes the workspaces: 104 x 130, 104 x 136 and 136 x 130
    maps = [drv.map_of(p) for p in kernel.params[:3]]
    assert [(m["address"], m["dims"]) for m in maps] == [
        (work["A"].ptr, [104, 130]),
        (work["B"].ptr, [104, 136]),
        (work["C"].ptr, [136, 130]),
    ]
    assert ints(kernel.params[3:]) == [2, 1, 2, 8]  # ceil(104 / 64) = 2 K tiles


@pytest.mark.parametrize("stream", [None, 0x99, Stream(0x5A)])
def test_staged_launch_takes_the_stream_given_or_the_default(drv, stream):
    _staged(drv, stream=stream)
    want = {None: DEFAULT_STREAM, 0x99: 0x99}.get(stream, 0x5A)  # type: ignore[call-overload]
    streams = [e[1].stream if e[0] == "copy" else e[2].stream for e in in_stream(drv)]
    assert streams == [want] * 4


def test_fp8_workspaces_hold_bytes_and_c_stays_bf16(drv):
    # fp8: K = 100 pads to 112 (16 one-byte elements); A 130 x 112 and B 136 x 112 of 1 byte,
    # C 130 x 136 of 2 (bf16)
    _, prepared = _staged(drv, dtype="float8_e4m3fn")
    assert [e[2] for e in prepared if e[0] == "alloc"] == [130 * 112, 136 * 112, 130 * 136 * 2]
    a, b = in_stream(drv)[0][1], in_stream(drv)[1][1]
    assert (a.src_pitch, a.dst_pitch, a.width) == (100, 112, 100)
    assert (b.src_pitch, b.dst_pitch, b.width) == (100, 112, 100)
    name, kernel = only_launch(drv)
    assert name == "hopper_gemm_persistent_e4m3"
    assert [drv.map_of(p)["dtype"] for p in kernel.params[:3]] == [UINT8, UINT8, BF16]
    assert ints(kernel.params[3:6]) == [2, 1, 1]  # ceil(112 / 128) = 1 K tile


def test_only_the_operands_that_break_a_rule_are_copied(drv):
    # 130 x 136 x 128: K and N are multiples of 8 (256-byte rows of A and B, 272-byte rows of
    # C): nothing staged; 130 x 130 x 128: N = 130 stages B (Np = 136) and C, A runs in place
    gemm = HopperGemm(cluster_m=1)
    gemm.prepare(*operands(130, 136, 128))()
    assert [e[0] for e in drv.events if e[0] in ("alloc", "copy", "launch")] == ["launch"]
    drv.events.clear()
    launch = gemm.prepare(*operands(130, 130, 128))
    assert sorted(launch.workspace) == ["B", "C"]
    launch()
    (_, b), (_, _, kernel), (_, c) = in_stream(drv)
    assert (b.src, b.dst, b.height, b.width) == (B_AT, launch.workspace["B"].ptr, 130, 256)
    assert (c.src, c.dst, c.height, c.width) == (launch.workspace["C"].ptr, C_AT, 130, 260)
    assert drv.map_of(kernel.params[0])["address"] == A_AT  # A read in place


def test_workspace_describes_itself_as_a_writable_device_matrix(drv):
    launch, _ = _staged(drv)
    a = launch.workspace["A"]
    assert a.__cuda_array_interface__ == {
        "shape": (130, 104),
        "typestr": "|V2",
        "data": (a.ptr, False),  # v3: (pointer, read-only flag): the kernel writes into it
        "strides": None,
        "version": 3,
    }
    assert (a.shape, a.dtype) == ((130, 104), "bfloat16")


def test_workspaces_are_freed_with_the_launch(drv):
    launch, prepared = _staged(drv)
    allocated = {e[1] for e in prepared if e[0] == "alloc"}
    del launch
    gc.collect()
    assert {e[1] for e in drv.of("free")} == allocated and not drv.memory


def test_a_failed_staging_copy_is_a_launch_error(drv):
    drv.fail["cuMemcpy2DAsync"] = CUDA_ERROR_INVALID_VALUE
    with pytest.raises(
        LaunchError,
        match=r"'hopper_gemm_persistent': staging copy failed with CUDA_ERROR_INVALID_VALUE",
    ):
        _staged(drv)  # the copy names the kernel it stages for, as the workspace errors do


def test_a_failed_zeroing_is_a_launch_error(drv):
    drv.fail["cuMemsetD8"] = CUDA_ERROR_INVALID_VALUE
    with pytest.raises(LaunchError, match=r"cuMemsetD8 of the workspace failed"):
        _staged(drv)


# -- split-K -----------------------------------------------------------------------------------


def test_split_k_sums_ranges_into_a_workspace_then_reduces(drv):
    # 130 x 300 x 512, 128 wide, 2 ranges: N = 300 stages B (Np = 304; C is never staged with
    # split-K); tiles ceil(130 / 128) = 2 x ceil(304 / 128) = 3, 8 K tiles: 4 a range; grid
    # 2 x 3 x 2 = 12; partial sums 2 x 130 rows x 3 x 128 columns of fp32
    gemm = HopperGemm(cluster_m=1, tile_n=128, split_k=True)
    launch = gemm.prepare(*operands(130, 300, 512), splits=2)
    assert sorted(launch.workspace) == ["B", "partial"]
    allocs = [n for _, _, n in drv.of("alloc")]
    assert allocs == [304 * 512 * 2, 260 * 384 * 4]
    drv.events.clear()
    launch(Stream(0x31))
    assert [e[0] for e in in_stream(drv)] == ["copy", "launch", "launch"]
    (_, b), (_, name, main), (_, rname, reduce) = in_stream(drv)
    partial = launch.workspace["partial"].ptr
    assert (b.src, b.dst, b.height, b.width, b.dst_pitch) == (
        B_AT,
        launch.workspace["B"].ptr,
        300,
        1024,
        1024,
    )
    assert name == "hopper_gemm_persistent_n128_splitk"
    assert (main.grid, main.cluster, main.stream) == ((12, 1, 1), None, 0x31)
    maps = [drv.map_of(p) for p in main.params[:2]]
    assert [(m["address"], m["dims"]) for m in maps] == [
        (A_AT, [512, 130]),
        (launch.workspace["B"].ptr, [512, 304]),
    ]
    # m, n, k tiles (of a range), group_m, splits, m_rows, work, its rows and columns
    assert ints(main.params[2:8]) == [2, 3, 4, 8, 2, 130]
    assert pointer(main.params[8]) == partial and ints(main.params[9:]) == [260, 384]
    # the reduction: ceil(130 * 300 / 256) = 153 blocks of 256 threads, on C itself
    assert rname == "hopper_gemm_splitk_reduce"
    assert (reduce.grid, reduce.block, reduce.stream) == ((153, 1, 1), (256, 1, 1), 0x31)
    assert [pointer(reduce.params[0]), pointer(reduce.params[1])] == [partial, C_AT]
    assert ints(reduce.params[2:]) == [2, 260, 384, 130, 300]  # splits, work's, C's shape


@pytest.mark.parametrize(("ctas", "grid"), [(None, 12), (5, 5), (40, 12)])
def test_split_k_grid_is_capped_by_ctas_and_units(drv, ctas, grid):
    gemm = HopperGemm(cluster_m=1, tile_n=128, split_k=True)
    gemm.prepare(*operands(130, 300, 512), ctas=ctas, splits=2)()
    assert drv.kernel_launches()[0][1].grid == (grid, 1, 1)


def test_split_k_defaults_to_split_counts_choice(drv):
    # 128 x 128 x 4096, 128 wide: 1 tile, 64 K tiles; split_count: the largest s <= 16
    # dividing 64 with >= 4 K tiles a range, s <= 132 and 8 s 128 128 <= (128 + 128) 4096 2 / 4
    # (s <= 4): 4 ranges of 16 K tiles, grid 4, partial 4 * 128 x 128 fp32, 64 reduce blocks
    launch = HopperGemm(cluster_m=1, tile_n=128, split_k=True).prepare(*operands(128, 128, 4096))
    assert [n for _, _, n in drv.of("alloc")] == [512 * 128 * 4]
    launch()
    (_, main), (_, reduce) = drv.kernel_launches()
    assert main.grid == (4, 1, 1) and ints(main.params[2:8]) == [1, 1, 16, 8, 4, 128]
    assert reduce.grid == (64, 1, 1) and ints(reduce.params[2:3]) == [4]


def test_split_k_takes_one_range(drv):
    # 1 divides every K tile count: one range of all 64 K tiles
    gemm = HopperGemm(cluster_m=1, tile_n=128, split_k=True)
    gemm.prepare(*operands(128, 128, 4096), splits=1)()
    (_, main), _ = drv.kernel_launches()
    assert main.grid == (1, 1, 1) and ints(main.params[2:8]) == [1, 1, 64, 8, 1, 128]


@pytest.mark.parametrize("splits", [3, 0, 2.0])
def test_split_k_refuses_splits_that_do_not_divide_the_k_tiles(drv, splits):
    gemm = HopperGemm(cluster_m=1, tile_n=128, split_k=True)
    words = rf"splits={splits!r} must be a positive int dividing the 64 K tiles"
    with pytest.raises(GemmShapeError, match=words.replace(".", r"\.")):
        gemm.prepare(*operands(128, 128, 4096), splits=splits)


# -- AutoGemm ----------------------------------------------------------------------------------


def test_auto_gemm_builds_one_kernel_per_configuration(drv):
    # 132 SMs, M = N = 128: one M tile; launch_config's cost rounds x tile_n x WIDTH_COST:
    # one round for every width, 64 x 1.9 = 121.6 the cheapest: 128 x 64 tiles, alone. K = 64:
    # rows64_width's 64-row tiles cost rounds x tile_n x ROWS64_COST a K step: 2 x 2 tiles of
    # 64 x 96, one round, 96 x 1.15 = 110.4 < 121.6 (64 x 128: 115.2, 64 x 256: 174, 64 x 64:
    # 121.6): they run.
    # split_count(128, 128, k, 64): 2 tiles; K = 64 (1 K tile): no split; K = 2048 (32 K
    # tiles): 8 s 128 128 <= (256 k 2) / 4 = 262,144 gives s <= 2: 2 ranges; K = 4096 (64 K
    # tiles): s <= 4: 4 ranges. (The split's cost, 32 / 2 x 121.6 = 1945.6, is below the
    # 64-row tiles' 32 x 115.2.) Two ranges of 16 K tiles, fewer than FINER_M_MAX_STEPS = 48:
    # finer_rows gives tiles of half the rows instead, 64 x 64 over all of K, 2 x 2 = 4 CTAs
    # as the split had. Four ranges run as stream-K with the same ranges: groups of 1 (one
    # M tile), units * splits groups: 2 * 4 = 8 CTAs.
    # M = 16 (16 rows of A a stage): K = 2048: 8 s 16 128 <= (144 k 2) / 4 = 147,456 gives
    # s <= 9, s divides the 32 K tiles and leaves at least 4 a range: 8 ranges of 4, as
    # stream-K too (2 * 8 = 16 CTAs), with no reduction kernel
    auto = AutoGemm()
    auto.prepare(*operands(128, 128, 64))()
    auto.prepare(*operands(128, 128, 2048))()
    auto(*operands(128, 128, 4096))
    auto(*operands(16, 128, 2048))
    names = [name for name, _ in drv.kernel_launches()]
    assert names == [
        "hopper_gemm_persistent_n96_a64",
        "hopper_gemm_persistent_n64_a64",
        "hopper_gemm_persistent_n64_streamk",
        "hopper_gemm_persistent_n64_a16_streamk",
    ]
    launches = [launch for _, launch in drv.kernel_launches()]
    assert ints(launches[0].params[3:]) == [2, 2, 1, 8] and launches[0].grid == (4, 1, 1)
    assert ints(launches[1].params[3:]) == [2, 2, 32, 8] and launches[1].grid == (4, 1, 1)
    assert ints(launches[2].params[3:8]) == [1, 2, 64, 8, 1] and launches[2].grid == (8, 1, 1)
    assert ints(launches[3].params[3:8]) == [1, 2, 32, 8, 1] and launches[3].grid == (16, 1, 1)
    assert len(auto.gemms) == 4
    assert auto.config(128, 128, 64) == (96, 1, 1, 64, False)
    assert auto.config(128, 128, 2048) == (64, 1, 1, 64, False)
    assert auto.config(16, 128, 2048) == (64, 1, 8, 16, True)
    assert auto.gemm_for(128, 128, 64) is auto.gemm_for(128, 128)


def test_auto_gemm_counts_the_sms_once(drv):
    # 8 SMs: M = N = 128 fits every width in one round; of 128-row tiles 64 wide is the
    # cheapest (64 x 1.9 = 121.6), of 64-row tiles 96 wide (four, 96 x 1.15 = 110.4): those
    drv.sms = 8
    auto = AutoGemm()
    assert auto.config(128, 128) == (96, 1, 1, 64, False)
    auto.config(256, 256)
    assert auto.sms == 8
    counts = [c for c in drv.calls if c[0] == "cuDeviceGetAttribute"]
    assert len(counts) == 1


def test_auto_gemm_runs_one_64_row_tile_of_m_at_one_tile_width(drv):
    # 132 SMs, M = 64: one_tile_width's 64 x 96 tiles on 6144 columns (64 CTAs; launch_config
    # alone gives 128 x 64, 96 tiles), built with 64 rows of A; 3072 x 4096 keeps the split's
    # replacement, 32-row tiles 64 wide (finer_rows; 4096 x 4096 runs beside_width's tiles)
    auto = AutoGemm()
    assert auto.config(64, 6144, 4096) == (96, 1, 1, 64, False)
    assert auto.config(64, 3072, 4096) == (64, 1, 1, 32, False)
    auto(*operands(64, 6144, 4096))
    name, launch = only_launch(drv)
    assert name == "hopper_gemm_persistent_n96_a64" and launch.grid == (64, 1, 1)


def test_auto_gemm_picks_a_rows_for_small_m(drv):
    # M = 16: a_rows_for(16) = 16, the _a16 kernel
    AutoGemm()(*operands(16, 256, 64))
    name, launch = only_launch(drv)
    assert name.endswith("_a16") and drv.map_of(launch.params[0])["box"] == [64, 16]


# -- stream-K ----------------------------------------------------------------------------------


def test_stream_k_launches_whole_groups_with_zeroed_flags(drv):
    # 256 x 6144 x 4096 at 128 x 128: 2 x 48 tiles of 64 K tiles. Groups of 2 (the largest
    # divisor of 2 M tiles up to 8): 132 // 2 = 66 groups, grid 132. Hand-over workspace:
    # 132 CTAs x 2 consumers x 64 registers = 16,896 rows of 128 fp32; flags 132 x 2 uint32,
    # both zero-filled and synchronised before any stream uses them
    gemm = HopperGemm(cluster_m=1, tile_n=128, stream_k=True)
    launch = gemm.prepare(*operands(256, 6144, 4096))
    work, flags = launch.workspace["work"], launch.workspace["flags"]
    assert (work.shape, flags.shape) == ((16896, 128), (264,))
    prepared = list(drv.events)
    for ws, n in ((work, 16896 * 128 * 4), (flags, 264 * 4)):
        i = prepared.index(("alloc", ws.ptr, n))
        assert prepared[i + 1 : i + 3] == [("memset", ws.ptr, 0, n), ("sync",)]
    drv.events.clear()
    launch(Stream(0x42))
    name, main = only_launch(drv)
    assert name == "hopper_gemm_persistent_n128_streamk"
    assert (main.grid, main.cluster, main.stream) == ((132, 1, 1), None, 0x42)
    # m, n, k tiles, group_m, m_group; the work and flags pointers, then their sizes (work's
    # rows: its 128 columns are fixed in the kernel; the flag count)
    assert ints(main.params[3:8]) == [2, 48, 64, 8, 2]
    assert [pointer(p) for p in main.params[8:10]] == [work.ptr, flags.ptr]
    assert ints(main.params[10:]) == [16896, 264]


@pytest.mark.parametrize(
    ("m", "ctas", "grid", "m_group"),
    [
        (384, None, 132, 3),  # 3 M tiles: 44 groups of 3
        (640, None, 130, 5),  # 5 M tiles: 26 groups of 5
        (256, 7, 6, 2),  # a cap of 7 CTAs holds 3 groups of 2
        (128, 5, 5, 1),  # one M tile: groups of one CTA
    ],
)
def test_stream_k_grid_is_whole_groups_of_the_m_tiles(drv, m, ctas, grid, m_group):
    HopperGemm(cluster_m=1, tile_n=128, stream_k=True).prepare(*operands(m, 1024, 1024), ctas)()
    _, main = only_launch(drv)
    assert main.grid == (grid, 1, 1) and ints(main.params[7:8]) == [m_group]


@pytest.mark.parametrize(
    ("m", "size", "occupancy", "ctas", "grid"),
    [
        (256, 2, 66, None, 132),  # 2 M tiles: 66 pairs, every SM
        (384, 2, 66, None, 132),  # 3 M tiles in pairs (the second unit's rank 1 past M)
        (256, 2, 60, None, 120),  # only 60 pairs resident at once: 120 CTAs, not 132
        (512, 4, 33, None, 132),  # fours
        (512, 4, 33, 10, 8),  # a cap of 10 CTAs holds 2 fours
    ],
)
def test_stream_k_in_clusters_launches_whole_resident_clusters(drv, m, size, occupancy, ctas, grid):
    """Stream-K groups as clusters along M: the kernel's m_group parameter is the cluster
    size, the launch carries the cluster dimensions, and the grid is at most the clusters
    resident at once (the owners' waits need every CTA running)."""
    drv.occupancy = {1: 132, 2: 66, 4: 33, size: occupancy}
    gemm = HopperGemm(cluster_m=size, tile_n=128, stream_k=True)
    gemm.prepare(*operands(m, 1024, 1024), ctas)()
    name, main = only_launch(drv)
    assert name == f"hopper_gemm_persistent_cluster{size}_n128_streamk"
    assert (main.grid, main.cluster) == ((grid, 1, 1), (size, 1, 1))
    assert ints(main.params[7:8]) == [size]


def test_stream_k_in_clusters_refuses_a_cap_below_one_cluster(drv):
    gemm = HopperGemm(cluster_m=2, tile_n=128, stream_k=True)
    with pytest.raises(GemmShapeError, match=r"ctas"):
        gemm.prepare(*operands(256, 1024, 1024), 1)
    assert drv.kernel_launches() == []


def test_stream_k_splits_spread_each_unit_over_that_many_groups(drv):
    # 256 x 256 x 640 at 128 x 256: 2 M tiles (groups of 2), 1 unit of 10 K tiles; splits 3:
    # 3 groups, grid 6; splits 40: capped by the 10 K steps, 10 groups, grid 20
    gemm = HopperGemm(cluster_m=1, stream_k=True)
    gemm.prepare(*operands(256, 256, 640), splits=3)()
    gemm.prepare(*operands(256, 256, 640), splits=40)()
    grids = [launch.grid for _, launch in drv.kernel_launches()]
    assert grids == [(6, 1, 1), (20, 1, 1)]


@pytest.mark.parametrize("splits", [0, -1, 2.0, True])
def test_stream_k_takes_positive_int_splits_and_only_bools(drv, splits):
    gemm = HopperGemm(cluster_m=1, stream_k=True)
    with pytest.raises(GemmShapeError, match=r"the stream-K kernel takes a positive int"):
        gemm.prepare(*operands(256, 256, 640), splits=splits)
    with pytest.raises(GemmShapeError, match=r"stream_k is True or False, got 1"):
        HopperGemm(cluster_m=1, stream_k=1)  # type: ignore[arg-type]


def test_auto_gemm_runs_stream_k_where_its_policy_says(drv):
    # 384 x 14336 x 4096 bf16 (stream_k_policy: 256 wide; the tiled policy's 224-wide tiles
    # alone, 3 x 64 = 192 in two rounds of 132, fill 0.73 < STREAM_K_KEEP_FILL): 3 M tiles x
    # 56 N tiles, 64 K tiles, groups of 3 CTAs, 44 groups; then 256 x 6144 x 4096 (31 K steps
    # a CTA: not stream-K; the tiled kernel's 128 x 96 tiles, 128 in one round, cost 64 K
    # steps x 96 x 1.75 = 10752, 64-row tiles of 64 x 192, 4 x 32 = 128 in one round, 64 x
    # 192 x 0.8 = 9830.4: those run); then 256 x 28672 x 4096, 2 x 128 = 256 tiles of 224 in
    # two rounds: tiled, alone (ALONE_WIDTHS); then 512 x 28672 x 4096, where 176-wide pairs
    # (pairs_176: 2 x 163 = 326 units over 66 pairs, 5 rounds, 5 x 176 x 1.03 = 906.4) cost
    # less than 224 (4 rounds, 4 x 224 x 1.03 = 922.9): 176 x 2 in place of 224 alone
    auto = AutoGemm()
    assert auto.config(384, 14336, 4096) == (256, 1, 1, 128, True)
    auto(*operands(384, 14336, 4096))
    auto(*operands(256, 6144, 4096))
    assert auto.config(256, 28672, 4096) == (224, 1, 1, 128, False)
    auto(*operands(256, 28672, 4096))
    assert auto.config(512, 28672, 4096) == (176, 2, 1, 128, False)
    auto(*operands(512, 28672, 4096))
    (name, sk), (name2, _), (name3, tiled), (name4, pairs) = drv.kernel_launches()
    assert (name, name2, name3, name4) == (
        "hopper_gemm_persistent_streamk",
        "hopper_gemm_persistent_n192_a64",
        "hopper_gemm_persistent_n224",
        "hopper_gemm_persistent_cluster2_n176",
    )
    assert sk.grid == (132, 1, 1) and ints(sk.params[3:8]) == [3, 56, 64, 8, 3]
    assert tiled.grid == (132, 1, 1) and ints(tiled.params[3:6]) == [2, 128, 64]
    assert pairs.grid == (132, 1, 1) and ints(pairs.params[3:6]) == [4, 163, 64]


def test_a_device_that_holds_no_cluster_is_refused_before_the_launch(drv):
    # one SM cannot hold a pair of one-CTA-per-SM blocks: cuOccupancyMaxActiveClusters gives
    # 0 for 2 x 1 x 1 (the fake's table), and the grid would be 0 CTAs
    drv.sms, drv.occupancy = 1, {1: 1, 2: 0, 4: 0}
    gemm = HopperGemm(cluster_m=2)
    with pytest.raises(
        GemmShapeError, match=r"holds no cluster of 2 CTAs at once .* gave 0; 1 SMs"
    ):
        gemm.prepare(*operands(256, 256, 64))
    assert not drv.kernel_launches()
    with pytest.raises(GemmShapeError, match=r"holds no cluster of 2 CTAs at once"):
        HopperGemm(cluster_m=2, stream_k=True).prepare(*operands(256, 256, 64))
    assert not drv.kernel_launches()
    HopperGemm(cluster_m=1).prepare(*operands(256, 256, 64))()  # CTAs alone run
    assert only_launch(drv)[1].grid == (1, 1, 1)


def test_the_stream_k_grid_benchmark_lists_every_capped_grid(drv, monkeypatch):
    """benchmarks/stream_k_grids.py (loaded with a stand-in torch, its GPU parts unused):
    256 x 4096 x 14336 bf16 has 2 M tiles, so groups of 2 and 66 groups on 132 SMs; units at
    256/192/128/64 wide are 16/22/32/64, so the grids units * 2 * s <= 132 are s = 1..4 at
    256 (32..128 CTAs) and 192 (44..176: s = 1..3), s = 1, 2 at 128 (64, 128) and s = 1 at
    64 (128), and the whole machine (132) where no s gives it."""
    import importlib.util
    import pathlib
    import sys
    from types import SimpleNamespace

    from test_gemm_host_inputs import _benchmark_module

    monkeypatch.setitem(sys.modules, "gemm", _benchmark_module(monkeypatch))
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace())
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "stream_k_grids.py"
    spec = importlib.util.spec_from_file_location("stream_k_grids", path)
    assert spec is not None and spec.loader is not None
    grids = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grids)
    found = grids.candidates({}, "bfloat16", 256, 4096, 14336)
    labels = [label for _, label in found]
    assert labels[0] == "policy:128x1/a64"  # 64-row tiles (finer_rows), not stream-K
    assert labels[1:] == [
        "256s/x1", "256s/x2", "256s/x3", "256s/x4", "256s/full",
        "192s/x1", "192s/x2", "192s/x3",
        "128s/x1", "128s/x2", "128s/full",
        "64s/x1", "64s/full",
    ]  # fmt: skip
    assert [g.ctas for g, _ in found[1:6]] == [32, 64, 96, 128, 132]


def test_the_64_row_sweep_builds_every_64_row_configuration(drv, monkeypatch):
    """benchmarks/gemm_rows64.py (loaded with a stand-in torch): bf16 has widths 256, 192,
    128, 96 and 64 alone, in pairs from 96 up and as stream-K from 128 up; promoted fp8 the
    widths whose two fragments fit (192, 128, 96, 64), promoted every two K tiles."""
    sweep = _load_benchmark(monkeypatch, "gemm_rows64")
    gemms, labels = sweep.kernels("bfloat16")
    assert labels == [
        "r256x1", "r192x1", "r128x1", "r96x1", "r64x1",
        "r256x2", "r192x2", "r128x2", "r96x2",
        "r256s", "r192s", "r128s",
    ]  # fmt: skip
    assert {g.a_rows for g in gemms} == {64}
    assert [g.program.name for g in gemms[:1] + gemms[5:6] + gemms[9:10]] == [
        "hopper_gemm_persistent_a64",
        "hopper_gemm_persistent_cluster2_a64",
        "hopper_gemm_persistent_a64_streamk",
    ]
    gemms, labels = sweep.kernels("float8_e4m3fn")
    assert labels[:4] == ["r192x1", "r128x1", "r96x1", "r64x1"] and len(labels) == 9
    assert all(g.promote and g.promote_every == 2 for g in gemms)


# -- programmatic stream serialization ---------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "shape"),
    [
        ({"cluster_m": 1}, (256, 512, 128)),
        ({"cluster_m": 2}, (2560, 2560, 64)),
        ({"cluster_m": 1, "tile_n": 128, "stream_k": True}, (256, 1024, 1024)),
        ({"cluster_m": 1, "tile_n": 64, "a_rows": 16}, (16, 512, 256)),
    ],
)
def test_programmatic_true_and_false_launch_every_kernel_so(drv, kwargs, shape):
    # the kernel issues griddepcontrol.wait before any global access, so the launch may
    # overlap the stream's previous kernel; True asks for that on any grid, False never
    HopperGemm(**kwargs, programmatic=True).prepare(*operands(*shape))()
    HopperGemm(**kwargs, programmatic=False).prepare(*operands(*shape))()
    (_, on), (_, off) = drv.kernel_launches()
    assert on.programmatic and not off.programmatic
    assert on.num_attrs == off.num_attrs + 1
    assert (on.grid, on.cluster, len(on.params)) == (off.grid, off.cluster, len(off.params))


@pytest.mark.parametrize(
    ("ctas", "programmatic"),
    [(132, True), (126, True), (125, False), (80, False), (None, True)],
)
def test_by_default_only_a_grid_that_leaves_at_most_5_percent_of_the_sms_idle_is_programmatic(
    drv, ctas, programmatic
):
    # 1536 x 3072: 144 tiles, capped at ctas CTAs (None: 132, one per SM). 5% of 132 SMs is
    # 6.6: 126 CTAs leave 6 idle (programmatic), 125 leave 7 (plain)
    HopperGemm(cluster_m=1).prepare(*operands(1536, 3072, 64), ctas=ctas)()
    _, launch = only_launch(drv)
    assert launch.grid == ((ctas or 132), 1, 1)
    assert launch.programmatic is programmatic


def test_by_default_small_grids_launch_plainly(drv):
    # 256 x 512 x 128 on 128 x 256 tiles: 2 x 2 = 4 CTAs of 132
    gemm = HopperGemm(cluster_m=1)
    gemm.prepare(*operands(256, 512, 128))()
    _, launch = only_launch(drv)
    assert (launch.grid, launch.programmatic) == ((4, 1, 1), False)
    assert (gemm.launches_programmatically(4), gemm.launches_programmatically(131)) == (
        False,
        True,
    )


@pytest.mark.parametrize(
    ("m", "n", "k", "a_rows", "programmatic"),
    [
        # 64-row tiles 128 wide: 4 x 32 = 128 CTAs; 64 K tiles (K = 4096) over 4 M tiles:
        # plain; 32 K tiles: programmatic
        (256, 4096, 4096, 64, False),
        (256, 4096, 2048, 64, True),
        (256, 4096, 4032, 64, True),  # 63 K tiles
        # one M tile of 64 rows (64 x 16384 on 128 CTAs): programmatic whatever K
        (64, 16384, 8192, 64, True),
        # 32-row tiles: 2 M tiles at M = 64, x 64 N tiles of 128 = 128 CTAs: plain
        (64, 8192, 4096, 32, False),
        # two consumers (128-row tiles): 4 x 32 = 128 CTAs, programmatic
        (512, 4096, 4096, 128, True),
    ],
)
def test_one_consumer_tiles_over_several_m_tiles_with_a_long_k_launch_plainly(
    drv, m, n, k, a_rows, programmatic
):
    gemm = HopperGemm(cluster_m=1, tile_n=128, a_rows=a_rows)
    gemm.prepare(*operands(m, n, k))()
    _, launch = only_launch(drv)
    assert launch.grid == (128, 1, 1)
    assert launch.programmatic is programmatic
    # asked for, the launch is programmatic all the same
    asked = HopperGemm(cluster_m=1, tile_n=128, a_rows=a_rows, programmatic=True)
    assert asked.launches_programmatically(128, 4, 64)


def test_split_k_launches_its_gemm_programmatically_and_its_reduction_plainly(drv):
    # the reduction kernel has no griddepcontrol.wait: it must start after the GEMM completes
    gemm = HopperGemm(cluster_m=1, tile_n=128, split_k=True, programmatic=True)
    gemm.prepare(*operands(128, 128, 4096))()
    (gemm_name, gemm_launch), (reduce_name, reduce) = drv.kernel_launches()
    assert gemm_name.endswith("_splitk") and gemm_launch.programmatic
    assert reduce_name == "hopper_gemm_splitk_reduce" and not reduce.programmatic


def test_auto_gemm_passes_programmatic_to_its_kernels(drv):
    # 1024^3: 128 x 64 tiles, 8 x 16 = 128 CTAs of 132 (4 idle: programmatic by default)
    AutoGemm(programmatic=False).prepare(*operands(1024, 1024, 1024))()
    AutoGemm().prepare(*operands(1024, 1024, 1024))()
    AutoGemm(programmatic=True).prepare(*operands(128, 128, 64))()  # a few CTAs, asked for
    (_, off), (_, default), (_, on) = drv.kernel_launches()
    assert off.grid == default.grid == (128, 1, 1) and on.grid[0] <= 4
    assert (off.programmatic, default.programmatic, on.programmatic) == (False, True, True)


@pytest.mark.parametrize("bad", [1, 0, "no", 1.0])
def test_programmatic_must_be_a_bool_or_none(drv, bad):
    with pytest.raises(GemmShapeError, match="programmatic is True, False or None"):
        HopperGemm(cluster_m=1, programmatic=bad)
    with pytest.raises(GemmShapeError, match="programmatic is True, False or None"):
        AutoGemm(programmatic=bad)
    assert drv.kernel_launches() == []


def test_a_staged_stream_k_launch_keeps_both_workspaces(drv):
    # K = 4100 (8200-byte rows, not a multiple of 16): A and B staged into K = 4104
    # workspaces; the stream-K kernel's hand-over and flags come with them
    gemm = HopperGemm(cluster_m=1, tile_n=64, a_rows=64, stream_k=True)
    launch = gemm.prepare(*operands(50, 4000, 4100), ctas=128)
    assert sorted(launch.workspace) == ["A", "B", "flags", "work"]
    # 128 CTAs x 2 consumers x 32 registers = 8192 rows of 128 fp32; 256 flags
    assert (launch.workspace["work"].shape, launch.workspace["flags"].shape) == (
        (8192, 128),
        (256,),
    )


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "132", None])
def test_launches_programmatically_takes_a_positive_int_cta_count(drv, bad):
    with pytest.raises(GemmShapeError, match=r"launches_programmatically's ctas"):
        HopperGemm(cluster_m=1).launches_programmatically(bad)
    with pytest.raises(GemmShapeError, match=r"launches_programmatically's m_tiles"):
        HopperGemm(cluster_m=1).launches_programmatically(128, bad)
    with pytest.raises(GemmShapeError, match=r"launches_programmatically's k_tiles"):
        HopperGemm(cluster_m=1).launches_programmatically(128, 2, bad)


def _load_benchmark(monkeypatch, name: str):
    """benchmarks/NAME.py, loaded with a stand-in torch and benchmarks/gemm.py's helpers."""
    import importlib.util
    import pathlib
    import sys
    from types import SimpleNamespace

    from test_gemm_host_inputs import _benchmark_module

    monkeypatch.setitem(sys.modules, "gemm", _benchmark_module(monkeypatch))
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace())
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cluster_sweep_builds_pairs_along_m_and_n(drv, monkeypatch):
    """benchmarks/gemm_clusters.py: 2x1 and 1x2 clusters at every width, 128-row then 64-row
    tiles; the policy's tiled configurations alone become 2x1 pairs over two or more M tiles,
    else 1x2 over two or more N tiles, and nothing else changes."""
    sweep = _load_benchmark(monkeypatch, "gemm_clusters")
    found = sweep.cluster_variants("bfloat16")
    labels = [label for label, _ in found]
    assert labels[:5] == ["m256", "m192", "m128", "m96", "m64"] and len(labels) == 20
    assert labels[5] == "m256r" and labels[10] == "n256" and labels[-1] == "n64r"
    names = {label: g.program.name for label, g in found}
    assert names["m96"] == "hopper_gemm_persistent_cluster2_n96"
    assert names["n128r"] == "hopper_gemm_persistent_clustern2_n128_a64"
    assert len(sweep.cluster_variants("float8_e4m3fn")) == 16
    auto = sweep.hopper.AutoGemm()
    auto.sms = 132
    # 256 x 6144 x 4096: 64 x 192 tiles alone (docs/verification device check 8) -> 2x1 pairs
    assert auto.config(256, 6144, 4096) == (192, 1, 1, 64, False)
    assert sweep.pairs_for(auto, 256, 6144, 4096) == (192, 64, 2, 1)
    # one M tile of 64 rows over 96 N tiles: 1x2 pairs
    assert auto.config(64, 6144, 4096)[1:] == (1, 1, 64, False)
    assert sweep.pairs_for(auto, 64, 6144, 4096)[2:] == (1, 2)
    # clusters already (8192^3: 256 x 2), stream-K (1024 x 10240 x 8192): unchanged
    assert auto.config(8192, 8192, 8192)[1] == 2 and sweep.pairs_for(auto, 8192, 8192, 8192) is None
    assert auto.config(1024, 10240, 8192)[4] and sweep.pairs_for(auto, 1024, 10240, 8192) is None
    # PairsAuto runs what pairs_for picks: the 2x1 pair of 64 x 192 tiles, no relay
    pairs = sweep.PairsAuto()
    pairs.sms = 132
    pairs.prepare(*operands(256, 6144, 4096))
    (built,) = [g for key, g in pairs.gemms.items() if key[0] == "pairs"]
    assert (built.tile_n, built.a_rows, built.cluster_m, built.cluster_n) == (192, 64, 2, 1)
    assert "freed_bar" not in built.program.source


def test_the_arrivals_benchmark_rebuilds_the_serial_release(drv, monkeypatch):
    """benchmarks/gemm_clusters.py's releasing_serially(): one elected thread arriving on
    rank 0's, then rank 1's barrier, as before the arrivals went side by side; and the
    library's own release again once it ends."""
    from csource import asm_ops, evaluate

    sweep = _load_benchmark(monkeypatch, "gemm_clusters")
    hopper = sweep.hopper
    with sweep.releasing_serially():
        old = hopper.hopper_gemm_persistent(cluster_m=2).source
    new = hopper.hopper_gemm_persistent(cluster_m=2).source
    remote = "{\\n.reg .b32 remote;\\nmapa"
    assert [evaluate(rank) for _, rank in asm_ops(old, remote)] == [0, 1, 0, 1]
    assert len(asm_ops(new, remote)) == 2 and "% 32) < 2))" in new
    assert hopper._release is not sweep.serial_release
    # the sweep's DIAG pair with the serial release, beside the library's
    kwargs = dict(sweep.DIAG)["p96serial"]
    serial, current = sweep.diag_gemm("p96serial", kwargs), sweep.diag_gemm("p96", kwargs)
    assert [evaluate(r) for _, r in asm_ops(serial.program.source, remote)] == [0, 1, 0, 1]
    assert len(asm_ops(current.program.source, remote)) == 2


def test_the_uniform_benchmark_rebuilds_the_earlier_kernels(drv, monkeypatch):
    """benchmarks/gemm_uniform.py's building_as_before(): the warpgroup index straight from
    threadIdx and, alone, the elected release; the library's shuffle and thread-0 release
    again once it ends."""
    bench = _load_benchmark(monkeypatch, "gemm_uniform")
    hopper = bench.hopper
    with bench.building_as_before():
        old = hopper.hopper_gemm_persistent().source
    new = hopper.hopper_gemm_persistent().source
    # the helper's definition, the producer's guard and the consumer's two releases
    assert "__shfl_sync" not in old and old.count("tm_elect_sync()") == 4
    assert "int32_t warpgroup = __shfl_sync(0xffffffffu" in new
    assert new.count("tm_elect_sync()") == 2  # the definition and the producer's guard
    assert hopper._release is not bench.earlier_release
    assert hopper._warpgroup is not bench.earlier_warpgroup
    assert bench.shapes_of("float8_e4m3fn", ["ragged"]) == bench.bench.RAGGED_FP8


def test_the_stream_k_cluster_benchmark_pairs_the_policys_stream_k(drv, monkeypatch):
    """benchmarks/gemm_stream_k_clusters.py: the policy's stream-K configuration in 2x1 (over
    two or three M tiles) and also 4x1 clusters (over four or more); nothing where the policy
    runs the tiled kernel or stream-K over one M tile."""
    bench = _load_benchmark(monkeypatch, "gemm_stream_k_clusters")
    auto = bench.hopper.AutoGemm()
    auto.sms = 132
    assert auto.config(384, 14336, 4096) == (256, 1, 1, 128, True)  # 3 M tiles
    pairs = bench.clustered(auto, 384, 14336, 4096)
    assert [(label, g.cluster_m, g.tile_n, g.stream_k) for label, g in pairs] == [
        ("pairs", 2, 256, True)
    ]
    assert auto.config(1024, 10240, 8192) == (256, 1, 1, 128, True)  # 8 M tiles
    assert [label for label, _ in bench.clustered(auto, 1024, 10240, 8192)] == ["pairs", "fours"]
    assert bench.clustered(auto, 512, 28672, 4096) == []  # 224-wide tiles alone
    assert bench.clustered(auto, 8192, 8192, 8192) == []  # the tiled kernel
    # stream-K over one M tile (64 rows: a 2-way split run as stream-K)
    assert auto.config(64, 3072, 14336) == (64, 1, 2, 64, True)
    assert bench.clustered(auto, 64, 3072, 14336) == []


def test_the_promotion_benchmark_builds_what_it_names(drv, monkeypatch):
    """benchmarks/gemm_promote_overlap.py: ``single`` builds the policy's kernels with one
    fragment, ``both`` with two in both consumers, and ``previous`` chooses as the policy did
    before 128-wide fp8 tiles ran alone and kept stream-K out (512 x 4096 x 14336: the 192-wide
    promoted stream-K kernel; 2048^3: 128 x 128 in pairs)."""
    bench = _load_benchmark(monkeypatch, "gemm_promote_overlap")
    fp8 = bench.FP8
    autos = {
        "policy": bench.hopper.AutoGemm(dtype=fp8),
        "single": bench.SingleAuto(dtype=fp8),
        "both": bench.BothAuto(dtype=fp8),
        "previous": bench.PreviousAuto(dtype=fp8),
    }
    for auto in autos.values():
        auto.sms = 132
    assert autos["policy"].config(512, 4096, 14336) == (128, 1, 1, 128, False)
    assert autos["previous"].config(512, 4096, 14336) == (192, 1, 1, 128, True)
    assert autos["previous"].config(2048, 2048, 2048) == (128, 2, 1, 128, False)
    assert autos["policy"].config(2048, 2048, 2048) == (128, 1, 1, 128, False)
    one = (64, 1, 1, 32, False)  # 32 rows of A: one computing consumer
    two = (128, 1, 1, 128, False)  # both consumers compute
    source = {
        name: (a._gemm(one).program.source, a._gemm(two).program.source)
        for name, a in autos.items()
    }
    assert ["part_next" in s for s in source["policy"]] == [True, False]
    assert ["part_next" in s for s in source["single"]] == [False, False]
    assert ["part_next" in s for s in source["both"]] == [True, True]
    assert bench.hopper.OVERLAPPED_TILE_NS == (128, 96, 64, 32)  # restored after each build


def test_the_configs_benchmark_reads_its_labels(drv, monkeypatch):
    """benchmarks/gemm_configs.py: ``WxCrR[s][nN]`` labels, each one configuration on every
    shape; ``nN`` builds the kernel of clusters of N CTAs along N."""
    bench = _load_benchmark(monkeypatch, "gemm_configs")
    assert bench.parse_config("128x1r64") == (128, 1, 64, False, 1)
    assert bench.parse_config("192x2r128s") == (192, 2, 128, True, 1)
    assert bench.parse_config("64x1r32n2") == (64, 1, 32, False, 2)
    auto = bench.ConfigAuto("bfloat16", bench.parse_config("256x1r64"))
    auto.sms = 132
    assert auto.config(256, 4096, 14336) == (256, 1, 1, 64, False)
    assert auto.config(8192, 8192, 8192) == (256, 1, 1, 64, False)
    assert auto.gemm_for(64, 4096, 4096).cluster_n == 1
    along_n = bench.ConfigAuto("float8_e4m3fn", bench.parse_config("64x1r64n4"))
    along_n.sms = 132
    gemm = along_n.gemm_for(64, 4096, 14336)
    assert (gemm.cluster_n, gemm.cluster_m, gemm.a_rows, gemm.tile_n) == (4, 1, 64, 64)
    assert (gemm.promote, gemm.promote_every) == (True, 2)  # as AutoGemm's fp8
    assert "_clustern4" in gemm.program.name


def test_the_zero_rows_benchmark_builds_what_it_names(drv, monkeypatch):
    """benchmarks/gemm_zero_rows.py: ``bytes`` builds the policy's kernel with the element-wise
    zeroing (a loop of byte stores, no stmatrix before the barrier), ``none`` with no zeroing
    at all (only the barrier); the library's stmatrix zeroing is back after each build."""
    bench = _load_benchmark(monkeypatch, "gemm_zero_rows")
    fp8, config = "float8_e4m3fn", (64, 1, 1, 8, False)  # 8-row tiles: rows 8..63 zeroed

    def idle_branch(auto) -> str:  # from the idle consumer's else to its bar.sync 3
        source = auto._gemm(config).program.source
        end = source.rindex("bar.sync 3, 256")
        return source[source.rindex("} else {", 0, end) : end]

    policy = idle_branch(bench.hopper.AutoGemm(dtype=fp8))
    by_elements = idle_branch(bench.ZeroAuto(fp8, bench.zero_by_elements))
    nothing = idle_branch(bench.ZeroAuto(fp8, bench.zero_nothing))
    stages = bench.hopper.gemm_plan.hopper_gemm_persistent_plan(fp8, "sm_90a", 64, 8)
    passes = 4  # rows 8..63, 16 a pass
    assert policy.count("stmatrix") == passes * stages.buffer("A").shape[0]
    assert "for (int z = 0; z < 56; ++z)" not in policy
    assert "stmatrix" not in by_elements and "for (int z = 0; z < 56; ++z)" in by_elements
    assert "stmatrix" not in nothing and "z_row" not in nothing and "fence.proxy" not in nothing
    assert bench.hopper._zero_a_rows is not bench.zero_by_elements


def test_the_stagger_benchmark_builds_the_consumers_in_step(drv, monkeypatch):
    """benchmarks/gemm_stagger.py: ``instep`` builds the policy's configuration with
    STAGGER_K_TILES = 0 (no second consumer's own groups), the policy out of step."""
    bench = _load_benchmark(monkeypatch, "gemm_stagger")
    config = (128, 1, 1, 128, False)  # 128 x 128 alone, two computing consumers
    policy = bench.hopper.AutoGemm(dtype=bench.FP8)._gemm(config).program.source
    instep = bench.InStepAuto(dtype=bench.FP8)._gemm(config).program.source
    assert "kg_1" in policy and "kg_1" not in instep
    assert bench.hopper.STAGGER_K_TILES == 1  # restored after the build


def test_the_cluster_cost_benchmark_builds_what_it_names(drv, monkeypatch):
    """benchmarks/gemm_cluster_cost.py: ``pairs`` is the library's 2x1 kernel (B multicast in
    halves, each stage freed in both CTAs); ``coupled`` loads all of B in each CTA, no
    multicast, still freeing each stage in both; ``local`` shares nothing (each stage's
    ``empty`` counts this CTA's one consumer, arrived on locally); the library's kernels are
    unchanged after the builds."""
    bench = _load_benchmark(monkeypatch, "gemm_cluster_cost")
    kwargs = dict(tile_n=64, a_rows=32)
    library = bench.hopper.HopperGemm(cluster_m=2, **kwargs).program.source
    built = {v: bench.pair(v, **kwargs) for v in ("mc", "coupled", "local")}
    source = {v: g.program.source for v, g in built.items()}
    assert source["mc"] == library
    assert bench.hopper.HopperGemm(cluster_m=2, **kwargs).program.source == library
    assert "multicast::cluster" in library and "mapa.shared::cluster" in library
    for v in ("coupled", "local"):
        assert "multicast::cluster" not in source[v]
        assert "barrier.cluster.arrive" in source[v]  # still a cluster launch's kernel
        assert built[v].b_share.shape == (64, 64)  # the whole B tile a stage
    assert built["mc"].b_share.shape == (32, 64)  # this rank's half
    assert "mapa.shared::cluster" in source["coupled"]  # frees the stage in both CTAs
    assert "mapa.shared::cluster" not in source["local"]
    empty_counts = {
        v: {
            line.split('"r"((uint32_t)(')[1][0]
            for line in s.splitlines()
            if "empty_bar +" in line and "mbarrier.init" in line
        }
        for v, s in source.items()
    }
    assert empty_counts == {"mc": {"2"}, "coupled": {"2"}, "local": {"1"}}
    # the labels the timing lines and the profile mode use name the same kernels
    named = {label: bench.variant_gemm(label, **kwargs) for label in bench.VARIANTS}
    assert list(named) == ["alone", "pairs", "relay", "coupled", "local", "bare"]
    assert named["alone"].cluster_m == 1 and "barrier.cluster" not in named["alone"].program.source
    for label, v in (("pairs", "mc"), ("coupled", "coupled"), ("local", "local")):
        assert named[label].program.source == source[v]
    # the relay variant: its consumers arrive on a local freed_bar; the library's pairs have none
    relay = named["relay"].program.source
    assert "freed_bar" in relay and "freed_bar" not in library
    assert named["relay"].plan.buffer("freed_bar").shape == (13,)
    assert bench.hopper.RELAY_CONSUMERS == ()  # the library is unchanged after the build
    # bare: local's kernel without any cluster barrier (the CTA syncs alone after the set-up)
    bare = named["bare"].program.source
    assert "barrier.cluster" not in bare and "mapa.shared::cluster" not in bare
    assert "multicast::cluster" not in bare and "__syncthreads();" in bare
    assert bare.replace("barrier.cluster", "") != source["local"]
    assert "barrier.cluster" in source["local"]  # the patch is undone after the build
    assert "barrier.cluster" in bench.pair("local", **kwargs).program.source
    with pytest.raises(SystemExit, match="one of"):
        bench.variant_gemm("paired", **kwargs)


def test_the_ring_depth_benchmark_builds_shallower_rings(drv, monkeypatch):
    """benchmarks/gemm_ring_depth.py: the policy's kernel with at most D stages (its plan,
    its dynamic shared memory and its ring arithmetic), the library's plan unchanged after."""
    bench = _load_benchmark(monkeypatch, "gemm_ring_depth")
    shallow = bench.DepthAuto("bfloat16", 9)
    shallow.sms = 132
    config = shallow.config(64, 3072, 4096)
    assert config == (64, 1, 1, 32, False)  # 32-row tiles 64 wide: 13 stages in the library
    gemm = shallow.gemm_for(64, 3072, 4096)
    assert gemm.plan.buffer("A").shape[0] == 9 and gemm.plan.buffer("B").shape[0] == 9
    assert gemm.plan in gemm.program.ir.pools  # the kernel's own plan, not a second one
    assert "(stage * 4096)" in gemm.program.source  # a B stage: 64 x 64 bf16
    assert "% 9)" in gemm.program.source and "% 13)" not in gemm.program.source
    library = bench.hopper.AutoGemm()
    library.sms = 132
    assert library.gemm_for(64, 3072, 4096).plan.buffer("A").shape[0] == 13
    assert "% 13)" in library.gemm_for(64, 4096, 4096).program.source
    assert bench.gemm_plan.stages("sm_90a", "bfloat16", 64, 32).stages == 13


def test_the_ring_depth_benchmark_builds_named_configurations_at_each_depth(drv, monkeypatch):
    """benchmarks/gemm_ring_depth.py with CONFIGs: each configuration (here 32-row tiles 64
    wide alone and in 2x1 pairs) at its full depth (13: plan.stages) and at each DEPTH given,
    whatever the policy would pick; the library's plan unchanged after."""
    bench = _load_benchmark(monkeypatch, "gemm_ring_depth")
    gemms, names = bench.configs("bfloat16", ["64x1r32", "64x2r32"], [11, 9])
    assert names == ["64x1r32:d13", "64x1r32:d11", "64x1r32:d9"] + [
        "64x2r32:d13",
        "64x2r32:d11",
        "64x2r32:d9",
    ]
    for gemm, name in zip(gemms, names):
        gemm.sms = 132
        kernel = gemm.gemm_for(64, 4096, 4096)
        depth = int(name.split(":d")[1])
        assert kernel.plan.buffer("A").shape[0] == depth == kernel.plan.buffer("B").shape[0]
        assert kernel.cluster_m == (2 if name.startswith("64x2") else 1)
        assert f"% {depth})" in kernel.program.source
    assert bench.gemm_plan.stages("sm_90a", "bfloat16", 64, 32).stages == 13


def test_the_cluster_end_benchmark_builds_the_policy_with_the_end_barrier(drv, monkeypatch):
    """benchmarks/gemm_cluster_end.py: the shapes where the policy runs clusters, and the
    policy's kernel on them built with the cluster barrier at the end instead of the
    producer's tail; the library builds with the tail after."""
    bench = _load_benchmark(monkeypatch, "gemm_cluster_end")
    auto = bench.hopper.AutoGemm()
    auto.sms = 132
    shapes = bench.cluster_shapes(auto)
    assert (8192, 8192, 8192) in shapes and (64, 4096, 4096) not in shapes
    assert all(auto.config(*s)[1] == 2 for s in shapes)
    barrier = bench.BarrierAuto(dtype="bfloat16")
    barrier.sms = 132
    ended = barrier.gemm_for(8192, 8192, 8192).program.source
    tailed = auto.gemm_for(8192, 8192, 8192).program.source
    assert ended.count("barrier.cluster.wait.acquire;") == 2  # after init, and at the end
    assert tailed.count("barrier.cluster.wait.acquire;") == 1 and "int tail = 0" in tailed
    assert "int tail = 0" not in ended
    assert bench.hopper.PRODUCER_TAIL is True


def test_the_relay_benchmark_pairs_the_policys_tiles_and_builds_the_relay(drv, monkeypatch):
    """benchmarks/gemm_relay.py: pair_for pairs the policy's tiles alone (2x1 over two or more
    M tiles, 32-row tiles of M = 64 included; else 1x2), none where the policy runs clusters
    or stream-K; Pairs and RelayAuto build with the relay only when asked; the library
    keeps it off."""
    bench = _load_benchmark(monkeypatch, "gemm_relay")
    auto = bench.hopper.AutoGemm()
    auto.sms = 132
    assert auto.config(64, 3072, 4096) == (64, 1, 1, 32, False)
    assert bench.pair_for(auto, 64, 3072, 4096) == (64, 32, 2, 1)
    assert bench.pair_for(auto, 8192, 8192, 8192) is None  # the policy runs pairs already
    assert bench.pair_for(auto, 64, 3072, 14336) is None  # stream-K
    relay = bench.RelayAuto(dtype="bfloat16")
    relay.sms = 132
    assert "freed_bar" in relay.gemm_for(8192, 8192, 8192).program.source
    # Pairs (gemm_clusters.PairsAuto with this benchmark's pair_for): the 2x1 pair of 32-row
    # tiles on 64x3072x4096, with the relay only when asked
    for with_relay in (True, False):
        pairs = bench.Pairs("bfloat16", with_relay)
        pairs.sms = 132
        pairs.prepare(*operands(64, 3072, 4096))
        (built,) = [g for key, g in pairs.gemms.items() if key[0] == "pairs"]
        assert (built.tile_n, built.a_rows, built.cluster_m, built.cluster_n) == (64, 32, 2, 1)
        assert ("freed_bar" in built.program.source) is with_relay
    assert "freed_bar" not in auto.gemm_for(8192, 8192, 8192).program.source
    assert bench.hopper.RELAY_CONSUMERS == ()


def test_the_switch_benchmark_builds_with_the_switch_and_restores_it(drv, monkeypatch):
    """benchmarks/gemm_flag.py: SwitchedAuto builds the policy's kernels while one of hopper's
    module switches holds another value (here PRODUCER_TAIL off: cluster kernels without the
    producer's tail), the library's value back after each build; an unknown switch is
    refused before anything is built."""
    bench = _load_benchmark(monkeypatch, "gemm_flag")
    switched = bench.SwitchedAuto("PRODUCER_TAIL", False, dtype="bfloat16")
    auto = bench.hopper.AutoGemm(dtype="bfloat16")
    switched.sms = auto.sms = 132
    pairs = (256, 2, 1, 128, False)  # a cluster kernel: the tail is its last producer loop
    assert "tail" in auto._gemm(pairs).program.source
    assert "tail" not in switched._gemm(pairs).program.source
    assert bench.hopper.PRODUCER_TAIL is True
    with pytest.raises(SystemExit, match="no switch 'NO_SUCH_SWITCH'"):
        bench.SwitchedAuto("NO_SUCH_SWITCH", 1, dtype="bfloat16")
    # a plan switch: 176-wide pairs with C slices staged one a buffer (eleven bulk groups a
    # consumer's tile) beside the library's groups of four (three)
    ungrouped = bench.SwitchedAuto("plan.GROUPED_EPILOGUE", False, dtype="bfloat16")
    ungrouped.sms = 132
    pairs = (176, 2, 1, 128, False)
    commits = "cp.async.bulk.commit_group"
    assert auto._gemm(pairs).program.source.count(commits) == 3
    assert ungrouped._gemm(pairs).program.source.count(commits) == 11
    assert bench.gemm_plan.GROUPED_EPILOGUE is True
    with pytest.raises(SystemExit, match=r"tilemem\.gemm\.plan has no switch 'NOPE'"):
        bench.SwitchedAuto("plan.NOPE", 1, dtype="bfloat16")


def test_the_configs_benchmark_prints_the_geometric_mean_of_ratios(drv, monkeypatch, capsys):
    # gemm_configs.print_geomean (gemm_flag.py and gemm_width176.py): sqrt(1.21 x 1.0) = 1.1;
    # nothing for no shapes
    bench = _load_benchmark(monkeypatch, "gemm_configs")
    bench.print_geomean("bfloat16", "x/policy", [1.21, 1.0])
    bench.print_geomean("bfloat16", "x/policy", [])
    assert capsys.readouterr().out == "GEOMEAN bfloat16 x/policy=1.100 over 2 shapes\n"


@pytest.mark.parametrize(
    ("m", "n", "k", "a_rows", "grid", "programmatic"),
    [
        # one M tile of one consumer's 64 x 64 tiles on 59.4 (0.45 x 132) to 66 CTAs: the next
        # launch's whole grid starts beside this one: programmatic, whatever K
        (64, 4096, 4096, 64, 64, True),
        (16, 4096, 14336, 16, 64, True),
        (64, 4224, 1024, 64, 66, True),  # 66 CTAs: half the SMs exactly
        (64, 4288, 1024, 64, 67, False),  # 67: the next grid no longer fits beside it
        (64, 3776, 1024, 64, 59, False),  # 59 < 59.4: below BESIDE_MIN_FILL
        # two M tiles (32-row tiles at M = 64): 2 x 32 = 64 CTAs, 64 K tiles: plain
        (64, 2048, 4096, 32, 64, False),
        # two consumers (128-row tiles), one M tile, 64 CTAs: plain
        (128, 4096, 4096, 128, 64, False),
    ],
)
def test_one_m_tile_on_at_most_half_the_sms_launches_programmatically(
    drv, m, n, k, a_rows, grid, programmatic
):
    gemm = HopperGemm(cluster_m=1, tile_n=64, a_rows=a_rows)
    gemm.prepare(*operands(m, n, k))()
    _, launch = only_launch(drv)
    assert launch.grid == (grid, 1, 1)
    assert launch.programmatic is programmatic
    # not for split-K and stream-K launches (tiled=False), nor with programmatic=False
    assert not gemm.launches_programmatically(64, 1, 64)
    assert gemm.launches_programmatically(64, 1, 64, tiled=True) is (a_rows < 128)
    assert not HopperGemm(
        cluster_m=1, tile_n=64, a_rows=64, programmatic=False
    ).launches_programmatically(64, 1, 64, tiled=True)
    with pytest.raises(GemmShapeError, match="tiled is a bool"):
        gemm.launches_programmatically(64, 1, 64, tiled=1)


def test_wider_tiles_over_one_m_tile_on_half_the_sms_launch_plainly(drv):
    # 64 CTAs of 96-wide tiles (64 x 6144) over one M tile: plain (measured slower so)
    wider = HopperGemm(cluster_m=1, tile_n=96, a_rows=64)
    wider.prepare(*operands(64, 6144, 4096))()
    _, launch = only_launch(drv)
    assert (launch.grid, launch.programmatic) == ((64, 1, 1), False)
    assert not wider.launches_programmatically(64, 1, 64, tiled=True)


def test_auto_gemm_runs_bf16_products_of_one_small_m_tile_on_half_the_sms(drv):
    # beside_width: bf16, M <= 64, ceil(4096 / 64) = 64 tiles in [59.4, 66]: 64 x 64 tiles of
    # a_rows_for(M) rows, all of K each, launched programmatically
    auto = AutoGemm()
    assert auto.config(64, 4096, 4096) == (64, 1, 1, 64, False)
    assert auto.config(16, 4096, 14336) == (64, 1, 1, 16, False)
    auto(*operands(64, 4096, 4096))
    ((name, launch),) = drv.kernel_launches()
    assert name == "hopper_gemm_persistent_n64_a64"
    assert launch.grid == (64, 1, 1) and launch.programmatic


def test_the_programmatic_launch_bounds_hold_at_equality(drv):
    # 20 SMs: beside_width's grids of 9.0 (0.45 x 20) to 10 CTAs launch programmatically; 19
    # CTAs leave 1 = 0.05 x 20 SMs idle: programmatic too (PDL_MAX_IDLE), 18 leave 2: plain
    drv.sms = 20
    gemm = HopperGemm(cluster_m=1, tile_n=64, a_rows=64)
    assert gemm.launches_programmatically(9, 1, 64, tiled=True)
    assert gemm.launches_programmatically(10, 1, 64, tiled=True)
    assert not gemm.launches_programmatically(8, 1, 64, tiled=True)
    assert not gemm.launches_programmatically(11, 1, 64, tiled=True)
    assert gemm.launches_programmatically(19) and not gemm.launches_programmatically(18)


def test_the_benchmarks_share_one_list_of_every_shape(drv, monkeypatch):
    # benchmarks/gemm.py's every_shape: the standard and inference sets in order, fp8 with the
    # ragged shape cuBLASLt takes (multiples of 16) in place of 4999 x 3000 x 2040
    bench = _load_benchmark(monkeypatch, "gemm_configs").bench
    bf16, fp8 = bench.every_shape("bfloat16"), bench.every_shape("float8_e4m3fn")
    assert len(bf16) == len(fp8) == 4 + 7 + 1 + 5 + 48
    assert (4999, 3000, 2040) in bf16 and (5008, 3008, 2032) in fp8
    assert (5008, 3008, 2032) not in bf16 and (4999, 3000, 2040) not in fp8
    assert bf16[:4] == [(2048,) * 3, (4096,) * 3, (8192,) * 3, (16384,) * 3]
    assert bf16[-1] == (1024, 8192, 28672)


def test_the_medians_script_reads_every_table_and_takes_each_shape_s_median(tmp_path, capsys):
    """benchmarks/gemm_medians.py: every table of benchmarks/gemm.py's output is one run of its
    type (two in one file here, one in another), the policy's ratio column whatever columns
    come before it; per shape the median over the runs. Hand-worked: 8x8x8 over 0.94, 0.99,
    0.97 -> 0.97; 16x16x16 over 1.21, 1.0, 1.1 -> 1.1; geomean of the medians sqrt(0.97 x
    1.1) = 1.033; run 1's geomean sqrt(0.94 x 1.21) = 1.066."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "gemm_medians.py"
    spec = importlib.util.spec_from_file_location("gemm_medians", path)
    assert spec is not None and spec.loader is not None
    medians = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(medians)

    def table(dtype, plain, rows):
        extra = " | plain" if plain else ""
        head = f"| M x N x K | config | error | cuBLAS error | tilemem{extra} | cuBLAS | ratio |"
        lines = [f"{dtype}: TFLOP/s; errors are |C - ref| / |ref| against the fp32 product", head]
        lines.append("| --- " * 8 + "|")
        for shape, ratio in rows:
            cells = f"| {shape} | 256x2 | 1e-3 | 1e-3 | 100{' | 99' if plain else ''} | 101 "
            lines.append(cells + f"| {ratio} | 0.5 |")
        return "\n".join(lines) + "\n\nbfloat16: geometric mean of the tilemem ratio ...\n"

    first = tmp_path / "a.txt"
    first.write_text(
        "| 8x8x8 | 256x2 | stray row before any table |\n"
        + table("bfloat16", True, [("8x8x8", 0.94), ("16x16x16", 1.21)])
        + "lowest bf16 ratios:\n| 8x8x8 | 256x2 | 1e-3 | 1e-3 | 1 | 1 | 1 | 0.10 |\n"
        + table("bfloat16", False, [("8x8x8", 0.99), ("16x16x16", 1.0)])
    )
    second = tmp_path / "b.txt"
    second.write_text(table("bfloat16", False, [("8x8x8", 0.97), ("16x16x16", 1.1)]))
    medians.main([str(first), str(second)])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bfloat16:"
    assert out[1] == "  run 1: geomean 1.066 over 2 distinct shapes; under 0.95: 8x8x8 0.940"
    assert out[2].endswith("under 0.95: none") and len(out) == 5
    assert out[4] == (
        "  medians over 3 runs: 2 of 2 shapes at 0.95 or above; geomean of the medians "
        "1.033; lowest 8x8x8 0.970, 16x16x16 1.100"
    )
    empty = tmp_path / "c.txt"
    empty.write_text("no tables here\n")
    with pytest.raises(SystemExit, match=r"no benchmarks/gemm\.py table"):
        medians.main([str(empty)])
    with pytest.raises(SystemExit, match="Per-shape medians"):
        medians.main([])
