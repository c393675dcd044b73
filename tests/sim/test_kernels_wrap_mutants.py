"""The NVFP4 GEMM and the attention kernel with more K tiles (KV blocks) than ring stages,
in the simulator.

Their other simulator tests use at most 2 K tiles (KV blocks) through rings of 4 (3)
stages, so the producer never waits for a stage to be given back: the ``empty`` barriers,
the commits that arrive on them, the parity of a reused stage and which warp plays which
role go untested there. Here 5 K tiles pass the NVFP4 GEMM's 4-stage ring and 4 KV blocks
the attention kernel's 3-stage ring, so stage 0 is reused once and the per-block barriers
``s_full`` and ``p_full`` (waited with parity ``j % 2``) complete four phases, the fourth
with parity 1 (PTX ISA 9.7.13.15.16, ``mbarrier.test_wait/try_wait``: "phaseParity
indicates the parity of the current phase or the immediately preceding phase ... the
valid values of phaseParity operand are 0 and 1"). A missing wait or commit then deadlocks
or races, a wrong parity lets a stage or a TMEM tile be read before it is written, and two
roles on one warp deadlock (the producer loop waits for a stage that only the same warp's
MMA loop, not yet started, gives back). Expected values as in ``test_nvfp4_sim.py`` and
``test_tcgen05_attention.py``: numpy in float64 on inputs whose every fp32 partial sum is
exact, so the outputs must match exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import kernels
from tilemem.cuda.tma import tile_map

from .test_nvfp4_sim import BF16, E4M3, FP4, _buffers, atom_order, pack_pairs
from .test_tcgen05_attention import run_attention

K_TILES = 5  # one more than the NVFP4 GEMM's 4 stages
KV_BLOCKS = 4  # one more than the attention kernel's 3 stages, and a fourth phase of p/s_full


@pytest.fixture(scope="module")
def nvfp4():
    return kernels.nvfp4_gemm()


@pytest.fixture(scope="module")
def attention():
    return kernels.attention_fwd()


def _run_nvfp4_one_tile(program, schedule, seed):
    """One CTA (a 128 x 256 tile of C) over K = 256 * K_TILES."""
    rng = np.random.default_rng(seed)
    k = 256 * K_TILES
    a = rng.choice(np.arange(-12, 13) / 2, (128, k)).astype(FP4)
    b = rng.choice(np.arange(-12, 13) / 2, (256, k)).astype(FP4)
    sfa = rng.choice(np.array([0.5, 1, 2]), (128, k // 16)).astype(E4M3)
    sfb = rng.choice(np.array([0.5, 1, 2]), (256, k // 16)).astype(E4M3)
    c = np.zeros((128, 256), BF16)
    a_buf, b_buf, sfa_buf, sfb_buf, c_buf = _buffers()
    maps = (
        tile_map(a, a_buf),
        tile_map(pack_pairs(b), b_buf),
        tile_map(atom_order(sfa), sfa_buf),
        tile_map(atom_order(sfb), sfb_buf),
        tile_map(c, c_buf),
    )
    result = sim.run(program, *maps, K_TILES, grid=(1, 1), schedule=schedule, seed=seed)
    scaled_a = a.astype(np.float64) * np.repeat(sfa.astype(np.float64), 16, axis=1)
    scaled_b = b.astype(np.float64) * np.repeat(sfb.astype(np.float64), 16, axis=1)
    ref = (scaled_a @ scaled_b.T).astype(np.float32).astype(BF16).astype(np.float32)
    return result, c.astype(np.float32), ref


@pytest.mark.parametrize(("schedule", "seed"), [("adversarial", 1), ("random", 4)])
def test_nvfp4_five_k_tiles_through_the_four_stage_ring(nvfp4, schedule, seed):
    result, c, ref = _run_nvfp4_one_tile(nvfp4, schedule, seed)
    assert result.hazards == ()
    np.testing.assert_array_equal(c, ref)
    # 4 K=64 MMAs a K tile, issued once by warp 1's elected thread
    assert result.instructions["ptx.tcgen05.mma_block_scale"] == 4 * K_TILES


@pytest.mark.parametrize(("schedule", "seed"), [("adversarial", 0), ("random", 5)])
def test_attention_four_kv_blocks_through_the_three_stage_ring(attention, schedule, seed):
    result, o, ref = run_attention(attention, KV_BLOCKS, schedule, seed)
    assert result.hazards == ()
    np.testing.assert_array_equal(o, ref)
    # per KV block: 2 x 8 MMAs for S (K = 128 in steps of 16), 2 x 8 for O (128 KV rows)
    assert result.instructions["ptx.tcgen05.mma"] == 32 * KV_BLOCKS
