"""The block-scaled NVFP4 GEMM (tilemem.kernels.nvfp4_gemm) executed by the simulator, end to
end: packed e2m1 operands and UE4M3 scale factors through TMA, the factors through tcgen05.cp
into TMEM, kind::mxf4nvf4 MMAs, the bf16 epilogue.

Reference: numpy decodes the e2m1 elements and the scale factors with ml_dtypes (independent of
tilemem.dtype), multiplies each element by its row's factor for its 16-element block, and sums
in float64, rounded to fp32 then bf16 like the kernel's output. The inputs are chosen so every
fp32 partial sum is exact whatever the order: e2m1 values are multiples of 0.5 up to 6, the
factors are 0.5, 1 or 2, so each product is a multiple of 2^-4 below 144 and a sum of 512 of
them stays below 2^17, within fp32's 24 bits. The output must therefore match exactly.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T, examples, kernels
from tilemem.cuda.tma import tile_map

FP4 = ml_dtypes.float4_e2m1fn
E4M3 = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16
GRID = (2, 2)  # 2 N tiles of 256 x 2 M tiles of 128: four CTAs
M, N = 128 * GRID[1], 256 * GRID[0]


def pack_pairs(x: np.ndarray) -> np.ndarray:
    """e2m1 elements packed two per byte, element 2j in the low nibble of byte j."""
    codes = x.view(np.uint8) & 0xF
    return codes[:, 0::2] | (codes[:, 1::2] << 4)


def atom_order(sf: np.ndarray) -> np.ndarray:
    """Factors ``sf[row, k / 16]`` in the order the kernel's TMA loads them: per 128-row block
    and 16-factor K tile, row ``32 ko + l`` holds, for j = 0..3, the 4 factors of MMA step
    ``ko`` of row ``32 j + l`` (the tcgen05.cp 32x128b atom: one 16-byte row per lane)."""
    rows, kf = sf.shape
    t = sf.reshape(rows // 128, 4, 32, kf // 16, 4, 4)  # (h, j, l, kt, ko, i)
    return np.ascontiguousarray(t.transpose(0, 4, 2, 3, 1, 5)).reshape(rows, kf)


def _buffers():
    smem = examples.blockscaled_nvfp4_gemm(4, target="sm_100a")
    names = ("A", "B", "SFA_smem", "SFB_smem", "C_epilogue")
    return [smem.buffer(n) for n in names]


def run_nvfp4(program, k_tiles=2, schedule="random", seed=0):
    rng = np.random.default_rng(seed)
    k = 256 * k_tiles
    a = rng.choice(np.arange(-12, 13) / 2, (M, k)).astype(FP4)  # only e2m1 values survive
    b = rng.choice(np.arange(-12, 13) / 2, (N, k)).astype(FP4)
    sfa = rng.choice(np.array([0.5, 1, 2]), (M, k // 16)).astype(E4M3)
    sfb = rng.choice(np.array([0.5, 1, 2]), (N, k // 16)).astype(E4M3)
    c = np.zeros((M, N), BF16)
    a_buf, b_buf, sfa_buf, sfb_buf, c_buf = _buffers()
    maps = (
        tile_map(a, a_buf),  # one e2m1 element per byte (ml_dtypes)
        tile_map(pack_pairs(b), b_buf),  # packed bytes, as on the GPU
        tile_map(atom_order(sfa), sfa_buf),
        tile_map(atom_order(sfb), sfb_buf),
        tile_map(c, c_buf),
    )
    result = sim.run(program, *maps, k_tiles, grid=GRID, schedule=schedule, seed=seed)
    scaled_a = a.astype(np.float64) * np.repeat(sfa.astype(np.float64), 16, axis=1)
    scaled_b = b.astype(np.float64) * np.repeat(sfb.astype(np.float64), 16, axis=1)
    ref = (scaled_a @ scaled_b.T).astype(np.float32).astype(BF16)
    return result, c.astype(np.float32), ref.astype(np.float32)


def _fp4_copy(holder: dict):
    """TMA-load a 64 x 256 e2m1 tile (128-byte swizzle) and TMA-store it back."""

    @T.kernel(target="sm_100a", grid=1, block=32)
    def k(tma_in: T.TensorMap, tma_out: T.TensorMap):
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
            T.ptx.tma.store_tile(tma_out, tile, 32, 256)  # rows 32.., columns 256..
            T.ptx.tma.commit_group()
            T.ptx.tma.wait_group(0)

    return k


def test_fp4_tiles_round_trip_packed_and_clipped():
    """ml_dtypes elements in, packed bytes out: the store at (32, 256) of an 80 x 384 output
    clips the box to its first 48 rows and 128 columns and leaves every other byte alone; the
    tile in shared memory is packed (the mbarrier's tx count is the 8192 bytes of 64 x 256
    half-byte elements)."""
    holder: dict = {}
    k = _fp4_copy(holder)
    _ = k.ir
    rng = np.random.default_rng(7)
    src = rng.choice(np.arange(-12, 13) / 2, (64, 256)).astype(FP4)
    out = np.full((80, 192), 0xAB, np.uint8)  # 80 x 384 e2m1, packed
    result = sim.run(k, tile_map(src, holder["tile"]), tile_map(out, holder["tile"]))
    assert result.hazards == ()
    np.testing.assert_array_equal(out[32:, 128:], pack_pairs(src[:48, :128]))
    assert (out[:32] == 0xAB).all() and (out[:, :128] == 0xAB).all()


@pytest.fixture(scope="module")
def gemm():
    print("building kernels.nvfp4_gemm()")
    return kernels.nvfp4_gemm()


def test_the_layouts_the_reference_assumes():
    # pack_pairs: 1.0 is e2m1 code 0b0010, 6.0 is 0b0111 -> byte 0x72
    assert pack_pairs(np.array([[1.0, 6.0]]).astype(FP4)).tolist() == [[0x72]]
    # atom_order: factor (row 32 j + l, k 4 ko + i) moves to (32 ko + l, 4 j + i)
    sf = np.arange(128 * 16).reshape(128, 16)
    moved = atom_order(sf)
    assert moved[32 * 1 + 5, 4 * 2 + 3] == sf[32 * 2 + 5, 4 * 1 + 3]


@pytest.mark.parametrize("schedule, seed", [("adversarial", 1), ("random", 2)])
def test_nvfp4_gemm_is_exact_without_hazards(gemm, schedule, seed):
    result, c, ref = run_nvfp4(gemm, 2, schedule, seed)
    assert result.hazards == ()
    np.testing.assert_array_equal(c, ref)


def test_a_scale_factor_column_off_by_one_is_caught(monkeypatch):
    """The MMA reading SFA one 32-bit TMEM column (4 factors) further: the next MMA step's
    factors (or an unwritten column) scale A, which only the numbers show."""
    original = T.ptx.tcgen05.mma_block_scale

    def shifted(acc, a, b, idesc, sfa, sfb, **kwargs):
        return original(acc, a, b, idesc, sfa + 1, sfb, **kwargs)

    monkeypatch.setattr(T.ptx.tcgen05, "mma_block_scale", shifted)
    program = kernels.nvfp4_gemm()
    _ = program.ir
    monkeypatch.undo()
    _, c, ref = run_nvfp4(program, 1, "random", 4)
    assert not np.array_equal(c, ref)
