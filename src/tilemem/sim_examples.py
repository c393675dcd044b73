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


def _ml_dtypes():
    try:
        import ml_dtypes  # optional: the `sim` extra
    except ImportError:
        raise SimError(
            "the examples' bf16 and fp4 data needs ml_dtypes: pip install 'tilemem[sim]'"
        ) from None
    return ml_dtypes


def _bf16():
    return _ml_dtypes().bfloat16


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


def _one_tile_gemm(name: str, smem, program, seed: int, schedule: str) -> ExampleRun:
    """One 128 x 256 tile, K = 128 (two K tiles through the 4-stage ring) of a built-in GEMM
    kernel whose A, B and C_epilogue buffers ``smem`` places."""
    a, b, c = _operands(128, 256, 128, seed)
    maps = (
        tile_map(a, smem.buffer("A")),
        tile_map(b, smem.buffer("B")),
        tile_map(c, smem.buffer("C_epilogue")),
    )
    result = run(program, *maps, 2, seed=seed, schedule=schedule)
    return _compare(name, (128, 256, 128), result, a, b, c)


def _hopper_gemm(seed: int, schedule: str) -> ExampleRun:
    """The Hopper example: TMA producer, two wgmma consumer warpgroups."""
    smem = examples.hopper_gemm_bf16(4, target="sm_90a")
    return _one_tile_gemm("hopper-gemm", smem, kernels.hopper_gemm(), seed, schedule)


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
    """The Blackwell example: through tcgen05.mma into TMEM."""
    smem = examples.blackwell_gemm_bf16(4, target="sm_100a")
    return _one_tile_gemm("blackwell-gemm", smem, kernels.blackwell_gemm(), seed, schedule)


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


def _sf_atom_order(sf: np.ndarray) -> np.ndarray:
    """Scale factors ``sf[row, k / 16]`` laid out as ``kernels.nvfp4_gemm`` loads them: in
    each 128-row block and 16-factor K tile, global row ``32 * step + lane`` carries the 4
    factors of MMA step ``step`` for rows ``lane``, ``lane + 32``, ``+ 64``, ``+ 96`` of the
    block (one 16-byte tcgen05.cp 32x128b row per TMEM lane)."""
    out = np.empty_like(sf)
    rows, cols = np.indices(sf.shape)
    block, lane = rows - rows % 128, rows % 32
    step, quarter = (rows % 128) // 32, (cols % 16) // 4
    k_tile, i = cols - cols % 16, cols % 4
    out[block + 32 * quarter + lane, k_tile + 4 * step + i] = sf
    return out


def _nvfp4_gemm(seed: int, schedule: str) -> ExampleRun:
    """One 128 x 256 tile, K = 512 (two K tiles) of e2m1 values (TMA packs them two per byte),
    one UE4M3 factor (0.5, 1 or 2) per 16 elements. Every product is a multiple of 2^-4
    below 144, so the fp32 sums are exact and only C's bf16 rounding differs from numpy's
    float32 product."""
    md = _ml_dtypes()
    m, n, k = 128, 256, 512
    rng = np.random.default_rng(seed)
    a = rng.choice(np.arange(-12, 13) / 2, (m, k)).astype(md.float4_e2m1fn)
    b = rng.choice(np.arange(-12, 13) / 2, (n, k)).astype(md.float4_e2m1fn)
    sfa = rng.choice(np.array([0.5, 1, 2]), (m, k // 16)).astype(md.float8_e4m3fn)
    sfb = rng.choice(np.array([0.5, 1, 2]), (n, k // 16)).astype(md.float8_e4m3fn)
    c = np.zeros((m, n), md.bfloat16)
    smem = examples.blockscaled_nvfp4_gemm(4, target="sm_100a")
    maps = (
        tile_map(a, smem.buffer("A")),
        tile_map(b, smem.buffer("B")),
        tile_map(_sf_atom_order(sfa), smem.buffer("SFA_smem")),
        tile_map(_sf_atom_order(sfb), smem.buffer("SFB_smem")),
        tile_map(c, smem.buffer("C_epilogue")),
    )
    result = run(kernels.nvfp4_gemm(), *maps, 2, seed=seed, schedule=schedule)
    scaled_a = a.astype(np.float32) * np.repeat(sfa.astype(np.float32), 16, axis=1)
    scaled_b = b.astype(np.float32) * np.repeat(sfb.astype(np.float32), 16, axis=1)
    ref = scaled_a @ scaled_b.T
    what = "C = (A * SFA) @ (B * SFB)^T"
    return _within("nvfp4-gemm", (m, n, k), result, c, ref, what, 0.0)


EXAMPLES: dict[str, Callable[[int, str], ExampleRun]] = {
    "hopper-gemm": _hopper_gemm,
    "hopper-gemm-persistent": _persistent,
    "blackwell-gemm": _blackwell_gemm,
    "attention-fwd": _attention_fwd,
    "nvfp4-gemm": _nvfp4_gemm,
}


def run_example(name: str, seed: int = 0, schedule: str = "random") -> ExampleRun:
    if name not in EXAMPLES:
        raise SimError(f"no simulated example {name!r}; choose one of: {', '.join(EXAMPLES)}")
    return EXAMPLES[name](seed, schedule)
