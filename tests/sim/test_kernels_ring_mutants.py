"""The one-tile example GEMMs with more K tiles than ring stages, in the simulator.

With K tiles <= stages the producer never waits for a stage to be given back, so the
``empty`` barriers, their arrival counts and the phase parity of a reused stage go untested.
Five K tiles through the 4-stage ring reuse stage 0 once: a wrong count deadlocks or lets
the producer overwrite a stage still being read (a race), a wrong parity reads a stage
before it is refilled. Small integer operands keep every product and partial sum exact in
fp32, so C must equal numpy's product rounded once to bf16.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import examples, kernels
from tilemem.cuda.tma import tile_map

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16
K_TILES = 5  # one more than the 4 stages


def _build(name: str):
    print(f"building the {name} example kernel")
    if name == "hopper-gemm":
        return kernels.hopper_gemm(), examples.hopper_gemm_bf16(4, target="sm_90a")
    return kernels.blackwell_gemm(), examples.blackwell_gemm_bf16(4, target="sm_100a")


@pytest.mark.parametrize(
    ("name", "mma", "per_k_tile"),
    [
        # 4 k16 wgmma a K tile, issued by each of the 8 consumer warps
        ("hopper-gemm", "ptx.wgmma.mma_async", 4 * 8),
        # 4 K=16 tcgen05.mma a K tile, issued by one elected thread of warp 1
        ("blackwell-gemm", "ptx.tcgen05.mma", 4),
    ],
)
def test_five_k_tiles_through_the_four_stage_ring(name, mma, per_k_tile):
    program, smem = _build(name)
    rng = np.random.default_rng(9)
    a = rng.integers(-3, 4, (128, 64 * K_TILES)).astype(BF16)
    b = rng.integers(-3, 4, (256, 64 * K_TILES)).astype(BF16)
    c = np.zeros((128, 256), BF16)
    maps = (
        tile_map(a, smem.buffer("A")),
        tile_map(b, smem.buffer("B")),
        tile_map(c, smem.buffer("C_epilogue")),
    )
    result = sim.run(program, *maps, K_TILES, schedule="adversarial", seed=3)
    assert result.hazards == ()
    ref = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32).astype(BF16)
    np.testing.assert_array_equal(c.astype(np.float32), ref.astype(np.float32))
    assert result.instructions[mma] == K_TILES * per_k_tile
