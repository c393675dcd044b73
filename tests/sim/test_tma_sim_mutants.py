"""The simulated TMA copies (``T.ptx.tma.*``, tilemem.ir.intrinsics.tma) on the cases the
other simulator tests leave out: a multicast load that names only some CTAs of the cluster,
8-byte elements, e2m1 tiles stored into one-element-per-byte arrays, packed e2m1 stores that
cover half a byte, and packed e2m1 loads.

Expected values are worked by hand or with numpy and ml_dtypes on the arrays themselves
(PTX ISA 9.0, "cp.async.bulk.tensor": elements of a box outside the tensor are not
written by a store; a multicast load writes the box and signals complete_tx only in the CTAs
whose bit is set in ``ctaMask``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T
from tilemem.cuda.tma import tile_map

FP4 = ml_dtypes.float4_e2m1fn


def _self_multicast(holder: dict):
    """Each CTA of a 2-CTA cluster loads rows 16 * rank .. + 15 with the multicast mask
    ``1 << rank`` (only itself) and stores them back to the same rows."""

    @T.kernel(target="sm_90a", grid=2, block=32, cluster=2)
    def k(tma_in: T.TensorMap, tma_out: T.TensorMap):
        smem = T.SMEMPool(name="smem")
        tile = smem.alloc_mma((16, 32), "float32", "128B", name="tile")
        bar = smem.alloc((1,), "uint64", name="full")
        smem.commit()
        holder["tile"] = tile
        rank = T.ptx.cluster.ctarank()
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init((bar, 0), 1)
            T.ptx.fence.mbarrier_init()
        T.ptx.cluster.sync()
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.arrive_expect_tx((bar, 0), 16 * 32 * 4)
            mask = T.cast(1, "uint32") << rank
            T.ptx.tma.load(tma_in, tile, (bar, 0), [0, rank * 16], multicast_mask=mask)
            T.ptx.mbarrier.wait((bar, 0), 0)
            T.ptx.tma.store(tma_out, tile, [0, rank * 16])
            T.ptx.tma.commit_group()
            T.ptx.tma.wait_group(0)
        T.ptx.cluster.sync()

    _ = k.ir
    return k


def test_a_multicast_load_reaches_only_the_ctas_of_its_mask():
    # mask 1 << rank: CTA 0 gets rows 0-15 only, CTA 1 rows 16-31 only; a load that also
    # reached the other CTA would overwrite its tile and over-complete its mbarrier
    holder: dict = {}
    k = _self_multicast(holder)
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = np.zeros_like(a)
    result = sim.run(k, tile_map(a, holder["tile"]), tile_map(out, holder["tile"]))
    assert result.hazards == ()
    np.testing.assert_array_equal(out, a)


def test_float64_tiles_round_trip():
    """8-byte elements: the store reads 8 bytes per element from shared memory."""
    holder: dict = {}

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(tma_in: T.TensorMap, tma_out: T.TensorMap):
        smem = T.SMEMPool(name="smem")
        tile = smem.alloc((16, 16), "float64", name="tile")
        bar = smem.alloc((1,), "uint64", name="full")
        smem.commit()
        holder["tile"] = tile
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init((bar, 0), 1)
            T.ptx.fence.mbarrier_init()
            T.ptx.mbarrier.arrive_expect_tx((bar, 0), 16 * 16 * 8)
            T.ptx.tma.load_tile(tma_in, tile, (bar, 0), 0, 0)
            T.ptx.mbarrier.wait((bar, 0), 0)
            T.ptx.tma.store_tile(tma_out, tile, 0, 0)
            T.ptx.tma.commit_group()
            T.ptx.tma.wait_group(0)

    _ = k.ir
    a = np.arange(256.0).reshape(16, 16) * 1.5 - 100.25  # not representable in 4 bytes' worth
    out = np.zeros_like(a)
    result = sim.run(k, tile_map(a, holder["tile"]), tile_map(out, holder["tile"]))
    assert result.hazards == ()
    np.testing.assert_array_equal(out, a)


def _fp4_copy(holder: dict):
    """TMA-load a 64 x 256 e2m1 tile at (0, 0) and TMA-store it at (row0, col0)."""

    @T.kernel(target="sm_100a", grid=1, block=32)
    def k(tma_in: T.TensorMap, tma_out: T.TensorMap, row0: T.int32, col0: T.int32):
        smem = T.SMEMPool(name="smem")
        tile = smem.alloc_mma((64, 256), "float4_e2m1fn", "128B", name="tile")
        bar = smem.alloc((1,), "uint64", name="full")
        smem.commit()
        holder["tile"] = tile
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init((bar, 0), 1)
            T.ptx.fence.mbarrier_init()
            T.ptx.mbarrier.arrive_expect_tx((bar, 0), 64 * 256 // 2)
            T.ptx.tma.load_tile(tma_in, tile, (bar, 0), 0, 0)
            T.ptx.mbarrier.wait((bar, 0), 0)
            T.ptx.tma.store_tile(tma_out, tile, row0, col0)
            T.ptx.tma.commit_group()
            T.ptx.tma.wait_group(0)

    _ = k.ir
    return k


@pytest.fixture(scope="module")
def fp4_copy():
    print("building a 64 x 256 e2m1 TMA copy kernel")
    holder: dict = {}
    return _fp4_copy(holder), holder["tile"]


def _codes(x: np.ndarray) -> np.ndarray:
    """The 4-bit e2m1 codes of ml_dtypes elements (one per byte, code in the low nibble)."""
    return x.view(np.uint8) & 0xF


def _unpack(packed: np.ndarray) -> np.ndarray:
    """Element 2j of a row is the low nibble of byte j, element 2j + 1 the high nibble."""
    out = np.empty((packed.shape[0], packed.shape[1] * 2), np.uint8)
    out[:, 0::2], out[:, 1::2] = packed & 0xF, packed >> 4
    return out


def _source(seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice(np.arange(-12, 13) / 2, (64, 256)).astype(FP4)


def test_a_packed_store_at_an_odd_column_keeps_the_other_half_of_its_first_byte(fp4_copy):
    """The store at (32, 257) of an 80 x 384 packed output: rows 32-79 and element columns
    257-383 take the tile's rows 0-47 and columns 0-126. Column 257 is the high nibble of
    byte 128, whose low nibble (column 256, outside the box) keeps its old code 0xB; every
    other element keeps its old code (0xB at even columns, 0xA at odd ones)."""
    k, tile = fp4_copy
    src = _source()
    out = np.full((80, 192), 0xAB, np.uint8)
    result = sim.run(k, tile_map(src, tile), tile_map(out, tile), 32, 257)
    assert result.hazards == ()
    want = _unpack(np.full((80, 192), 0xAB, np.uint8))
    want[32:80, 257:384] = _codes(src[:48, :127])
    got = _unpack(out)
    np.testing.assert_array_equal(got, want)
    assert out[32, 128] == (int(_codes(src[:1, :1])[0, 0]) << 4) | 0xB


def test_an_e2m1_tile_is_stored_into_one_element_per_byte_arrays(fp4_copy):
    """An ml_dtypes float4_e2m1fn output (one element per byte, not packed): the store at
    (32, 256) of an 80 x 384 output writes rows 32-79, columns 256-383 and nothing else."""
    k, tile = fp4_copy
    src = _source(3)
    out = np.zeros((80, 384), FP4)
    result = sim.run(k, tile_map(src, tile), tile_map(out, tile), 32, 256)
    assert result.hazards == ()
    want = np.zeros((80, 384), np.uint8)
    want[32:, 256:] = _codes(src[:48, :128])
    np.testing.assert_array_equal(_codes(out), want)


def test_a_packed_load_reads_element_2j_from_the_low_nibble(fp4_copy):
    """Packed bytes in (element 2j in the low nibble of byte j), one element per byte out."""
    k, tile = fp4_copy
    src = _source(11)
    packed = np.ascontiguousarray(_codes(src[:, 0::2]) | (_codes(src[:, 1::2]) << 4))
    out = np.zeros((64, 256), FP4)
    result = sim.run(k, tile_map(packed, tile), tile_map(out, tile), 0, 0)
    assert result.hazards == ()
    np.testing.assert_array_equal(_codes(out), _codes(src))
