"""The Hopper GEMM example and the persistent warp-specialised GEMM, simulated at small sizes
in every schedule mode against numpy, with zero hazards.

Reference: numpy's float32 product of the same bf16 inputs. The kernels accumulate in fp32
(in another order) and round C to bf16, so each element may differ by half a bf16 ulp of the
result (at most 2^-8 relative: bf16 keeps 8 significant bits) plus fp32 reordering (far below
1e-3 at these sizes).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import examples, kernels, sim_examples
from tilemem.cuda.tma import tile_map
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")


def _operands(m: int, n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    return a, b, np.zeros((m, n), ml_dtypes.bfloat16)


def _check(c, a, b) -> None:
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    err = np.abs(c.astype(np.float32) - ref)
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-3).all(), err.max()


@functools.lru_cache
def _example():
    print("building the hopper-gemm example kernel")
    smem = examples.hopper_gemm_bf16(4, target="sm_90a")  # the kernel's own plan
    return kernels.hopper_gemm(), smem.buffer("A"), smem.buffer("B"), smem.buffer("C_epilogue")


@pytest.mark.parametrize(
    ("mode", "seed"), [("in-order", 0), ("random", 0), ("random", 1), ("adversarial", 2)]
)
def test_hopper_gemm_example(mode, seed):
    k, a_buf, b_buf, c_buf = _example()
    a, b, c = _operands(128, 256, 128, seed)
    maps = tile_map(a, a_buf), tile_map(b, b_buf), tile_map(c, c_buf)
    result = sim.run(k, *maps, 2, schedule=mode, seed=seed)
    assert result.ok, result.hazards
    _check(c, a, b)
    # 2 K tiles x 4 k16 steps, in each of the 8 consumer warps
    assert result.instructions["ptx.wgmma.mma_async"] == 2 * 4 * 8


@functools.lru_cache
def _persistent(cluster_m: int):
    print(f"building the persistent GEMM, cluster_m={cluster_m}")
    return hopper_gemm_persistent(cluster_m=cluster_m)


def _run_persistent(cluster_m: int, m: int, n: int, k: int, mode: str, seed: int):
    program = _persistent(cluster_m)
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 256)
    a, b, c = _operands(m, n, k, seed)
    maps = (
        tile_map(a, plan.buffer("A")),
        tile_map(b, gemm_plan.b_share(cluster_m, "bfloat16", tile_n=256)),
        tile_map(c, plan.buffer("C_stage")),
    )
    tiles = (ceil_div(m, 128), ceil_div(n, 256), ceil_div(k, 64))
    grid = (2 * cluster_m,)  # two clusters: with these shapes one holds two tiles
    result = sim.run(
        program, *maps, *tiles, 8, grid=grid, cluster=(cluster_m, 1, 1), schedule=mode, seed=seed
    )
    return result, a, b, c


@pytest.mark.parametrize(
    ("cluster_m", "mode", "seed"),
    [
        (1, "random", 0),
        (1, "adversarial", 1),
        (2, "in-order", 0),
        (2, "random", 3),
        (2, "adversarial", 4),
    ],
)
def test_persistent_gemm_ragged(cluster_m, mode, seed):
    # 192 x 320 x 160: partial M, N and K tiles (zero-filled loads, clipped stores)
    result, a, b, c = _run_persistent(cluster_m, 192, 320, 160, mode, seed)
    assert result.ok, result.hazards
    _check(c, a, b)
    assert result.instructions["ptx.setmaxnreg.inc"] == 8 * 2 * cluster_m


@pytest.mark.parametrize(("mode", "seed"), [("random", 0), ("adversarial", 1)])
def test_attention_forward(mode, seed):
    """The Blackwell attention skeleton: both Q tiles and KV blocks as two 64-column TMA
    boxes each, S into TMEM, P written over S's upper half, O += P V with P from TMEM."""
    done = sim_examples.run_example("attention-fwd", seed=seed, schedule=mode)
    assert done.result.ok, done.result.hazards
    assert done.within_tolerance, done.max_error
