"""The built-in example kernels on small inputs under ``tilemem.sim``, checked against numpy
(what ``tilemem sim --example NAME`` runs).

Each example builds its kernel, makes seeded random operands, simulates, and compares the
result with numpy's float32 product of the same (bf16) inputs. The kernels accumulate in
fp32 in another order and round C to bf16, so an element may differ by half a bf16 ulp of the
result (2^-8 relative) plus fp32 reordering (``atol`` 1e-3 at these sizes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import examples, kernels
from .cuda.tma import tile_map
from .errors import SimError
from .gemm import plan as gemm_plan
from .gemm.hopper import hopper_gemm_persistent
from .intmath import ceil_div
from .sim import SimResult, run

RTOL, ATOL = 2.0**-8, 1e-3


@dataclass(frozen=True)
class ExampleRun:
    """A simulated example: its result, the worst error against numpy and whether it is within
    the tolerance."""

    name: str
    shape: tuple
    result: SimResult
    what: str
    max_error: float
    within_tolerance: bool


def _bf16():
    try:
        import ml_dtypes  # optional: the `sim` extra
    except ImportError:
        raise SimError(
            "the examples' bf16 data needs ml_dtypes: pip install 'tilemem[sim]'"
        ) from None
    return ml_dtypes.bfloat16


def _operands(m: int, n: int, k: int, seed: int):
    bf16 = _bf16()
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(bf16)
    b = rng.standard_normal((n, k)).astype(bf16)
    return a, b, np.zeros((m, n), bf16)


def _compare(name: str, shape: tuple, result: SimResult, a, b, c) -> ExampleRun:
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    return _within(name, shape, result, c, ref, "C = A @ B^T", ATOL)


def _within(name, shape, result, out, ref, what: str, atol: float) -> ExampleRun:
    err = np.abs(out.astype(np.float32) - ref)
    ok = bool((err <= RTOL * np.abs(ref) + atol).all())
    return ExampleRun(name, shape, result, what, float(err.max()), ok)


def _hopper_gemm(seed: int, schedule: str) -> ExampleRun:
    """One 128 x 256 tile, K = 128 (two K tiles through the 4-stage ring)."""
    smem = examples.hopper_gemm_bf16(4, target="sm_90a")
    a, b, c = _operands(128, 256, 128, seed)
    maps = (
        tile_map(a, smem.buffer("A")),
        tile_map(b, smem.buffer("B")),
        tile_map(c, smem.buffer("C_epilogue")),
    )
    result = run(kernels.hopper_gemm(), *maps, 2, seed=seed, schedule=schedule)
    return _compare("hopper-gemm", (128, 256, 128), result, a, b, c)


def _persistent(seed: int, schedule: str, cluster_m: int = 2) -> ExampleRun:
    """192 x 320 x 160 (ragged M, N and K tiles) on two clusters of ``cluster_m`` CTAs that
    share B by multicast."""
    m, n, k = 192, 320, 160
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 256)
    a, b, c = _operands(m, n, k, seed)
    maps = (
        tile_map(a, plan.buffer("A")),
        tile_map(b, gemm_plan.b_share(cluster_m, "bfloat16", tile_n=256)),
        tile_map(c, plan.buffer("C_stage")),
    )
    tiles = (ceil_div(m, 128), ceil_div(n, 256), ceil_div(k, 64))
    result = run(
        hopper_gemm_persistent(cluster_m=cluster_m),
        *maps,
        *tiles,
        8,
        grid=(2 * cluster_m,),
        cluster=(cluster_m, 1, 1),
        seed=seed,
        schedule=schedule,
    )
    return _compare("hopper-gemm-persistent", (m, n, k), result, a, b, c)


def _blackwell_gemm(seed: int, schedule: str) -> ExampleRun:
    """One 128 x 256 tile, K = 128, through tcgen05.mma into TMEM."""
    smem = examples.blackwell_gemm_bf16(4, target="sm_100a")
    a, b, c = _operands(128, 256, 128, seed)
    maps = (
        tile_map(a, smem.buffer("A")),
        tile_map(b, smem.buffer("B")),
        tile_map(c, smem.buffer("C_epilogue")),
    )
    result = run(kernels.blackwell_gemm(), *maps, 2, seed=seed, schedule=schedule)
    return _compare("blackwell-gemm", (128, 256, 128), result, a, b, c)


def _attention_fwd(seed: int, schedule: str) -> ExampleRun:
    """Two 128-row Q tiles against two 128-row KV blocks, head_dim 128. The kernel's softmax
    is a stand-in: P = bf16(S / 8) with S = Q K^T, then O = sum over blocks of P V (V is the
    KV block itself). P's bf16 rounding may differ by one ulp where fp32 S sums in another
    order: ``atol`` 0.05 covers it (one P ulp, 2^-8, times |V| ~ 4 for a few terms)."""
    bf16 = _bf16()
    smem = examples.attention_fwd_fa4(3, 128, target="sm_100a")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((256, 128)).astype(bf16)
    kv = rng.standard_normal((256, 128)).astype(bf16)
    o = np.zeros((256, 128), bf16)
    maps = (
        tile_map(q, smem.buffer("Q")),
        tile_map(kv, smem.buffer("KV")),
        tile_map(o, smem.buffer("O_epilogue")),
    )
    result = run(kernels.attention_fwd(), *maps, 2, seed=seed, schedule=schedule)
    qf, kvf = q.astype(np.float32), kv.astype(np.float32)
    ref = np.zeros((256, 128), np.float32)
    for i in range(2):
        for j in range(2):
            block = kvf[j * 128 : (j + 1) * 128]
            p = (0.125 * (qf[i * 128 : (i + 1) * 128] @ block.T)).astype(bf16)
            ref[i * 128 : (i + 1) * 128] += p.astype(np.float32) @ block
    return _within("attention-fwd", (256, 256, 128), result, o, ref, "O = bf16(Q K^T / 8) V", 0.05)


EXAMPLES: dict[str, Callable[[int, str], ExampleRun]] = {
    "hopper-gemm": _hopper_gemm,
    "hopper-gemm-persistent": _persistent,
    "blackwell-gemm": _blackwell_gemm,
    "attention-fwd": _attention_fwd,
}


def run_example(name: str, seed: int = 0, schedule: str = "random") -> ExampleRun:
    if name not in EXAMPLES:
        raise SimError(f"no simulated example {name!r}; choose one of: {', '.join(EXAMPLES)}")
    return EXAMPLES[name](seed, schedule)
