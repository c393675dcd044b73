"""Built-in memory plans of real kernels, shown by ``tilemem plan``.

Each example builds its pools exactly as the kernel would and returns the
SMEM pool (its plan includes the TMEM pools). The numbers are the ones a
kernel author would pick for these shapes; each docstring says why.

The pools have two phases, the mainloop and the epilogue, and each buffer says
when it is live (docs/DESIGN.md#lifetimes): commit() packs them, so an epilogue tile lands
over drained pipeline stages, and the report prints the footprint against the
lower bound and against bump placement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .gemm.plan import hopper_gemm_persistent_bf16
from .pool import SMEMPool, TMEMPool


@dataclass(frozen=True)
class Example:
    name: str
    target: str
    threads: int
    summary: str
    build: Callable[[], SMEMPool]


PHASES = ("mainloop", "epilogue")
MAINLOOP, EPILOGUE = PHASES


def _epilogue_live(persistent: bool) -> set[str]:
    """When the C staging tile is live. A one-tile kernel writes it only after the last MMA
    has read the last stage, so it may lie over the drained stages; a persistent kernel
    stores tile i while the mainloop of tile i+1 loads, so both phases hold at once."""
    return {MAINLOOP, EPILOGUE} if persistent else {EPILOGUE}


def _gemm_mainloop(smem: SMEMPool, stages: int, persistent: bool) -> None:
    """A 128x64 and B 256x64 bf16 per stage (128B swizzle), a 128x64 epilogue slice, full/empty
    barriers (live throughout: mbarriers are never re-initialised)."""
    smem.alloc_mma((stages, 128, 64), "bfloat16", "128B", name="A", live=MAINLOOP)
    smem.alloc_mma((stages, 256, 64), "bfloat16", "128B", name="B", live=MAINLOOP)
    smem.alloc_mma(
        (128, 64), "bfloat16", "128B", name="C_epilogue", live=_epilogue_live(persistent)
    )
    smem.alloc((stages,), "uint64", name="full_bar")
    smem.alloc((stages,), "uint64", name="empty_bar")


def hopper_gemm_bf16(
    stages: int = 4, target: str = "sm_90a", *, persistent: bool = False
) -> SMEMPool:
    """Hopper warp-specialised bf16 GEMM mainloop, CTA tile 128 x 256 x 64.

    Per stage: A 128x64 and B 256x64 bf16, K-major, 128-byte swizzle (a 64-element
    bf16 row is exactly one 128-byte swizzle row) = 48 KiB. A full and an empty
    mbarrier per stage (TMA producer / wgmma consumer). The epilogue stages a
    128 x 64 bf16 slice of C for TMA stores (16 KiB), four slices per tile: over
    the drained stages in this one-tile kernel, beside them when ``persistent``.
    """
    smem = SMEMPool(name="smem", target=target, phases=PHASES)
    _gemm_mainloop(smem, stages, persistent)
    smem.commit()
    return smem


def blackwell_gemm_bf16(
    stages: int = 4, target: str = "sm_100a", *, persistent: bool = False
) -> SMEMPool:
    """Blackwell tcgen05 bf16 GEMM, CTA tile 128 x 256 x 64, cta_group::1 (data path D).

    The fp32 accumulator is 128 x 256 = 256 TMEM columns; two of them (512
    columns, all of TMEM) let the epilogue drain tile i while the MMA warp
    accumulates tile i+1. ``tmem.stages`` gives the two 256-column views.
    SMEM: the same 48 KiB stages as the Hopper mainloop, a 128 x 64 epilogue
    slice (over the drained stages unless ``persistent``), load barriers per
    stage and accumulator barriers per TMEM stage.
    """
    smem = SMEMPool(name="smem", target=target, phases=PHASES)
    _gemm_mainloop(smem, stages, persistent)
    smem.alloc((2,), "uint64", name="acc_full_bar")
    smem.alloc((2,), "uint64", name="acc_empty_bar")
    tmem = TMEMPool(smem, 512, cta_group=1, alloc_warp=1, name="tmem")
    acc = tmem.alloc((128, 512), "float32", datapath="D", name="acc")
    tmem.stages(acc, col_start=0, width=256, stages=2)  # acc_stage[i % 2]: a view, no columns
    smem.commit()
    tmem.commit()
    return smem


def blockscaled_nvfp4_gemm(stages: int = 4, target: str = "sm_100a") -> SMEMPool:
    """Block-scaled NVFP4 GEMM (tcgen05.mma kind::mxf4nvf4), CTA tile 128 x 256 x 256.

    A and B are float4_e2m1fn: a 256-element K tile is 128 bytes per row, one
    128-byte swizzle row. Every 16 elements along K share one float8_e4m3fn
    scale factor, so a K tile carries SF_K = 16 factors per row; one MMA
    consumes K = 64, i.e. 4 factors (sf_per_mma=4). Scale factors arrive in
    SMEM by TMA (per stage) and are copied to TMEM (tcgen05.cp) where the MMA
    reads them: SFA for 128 rows, SFB for 256 rows, double-buffered. Operand and
    scale-factor stages are drained when the epilogue starts, so the C slice
    goes over them; in TMEM the scale factors are mainloop-only.
    """
    smem = SMEMPool(name="smem", target=target, phases=PHASES)
    smem.alloc_mma((stages, 128, 256), "float4_e2m1fn", "128B", name="A", live=MAINLOOP)
    smem.alloc_mma((stages, 256, 256), "float4_e2m1fn", "128B", name="B", live=MAINLOOP)
    smem.alloc((stages, 128, 16), "float8_e4m3fn", align=128, name="SFA_smem", live=MAINLOOP)
    smem.alloc((stages, 256, 16), "float8_e4m3fn", align=128, name="SFB_smem", live=MAINLOOP)
    smem.alloc_mma((128, 32), "bfloat16", "64B", name="C_epilogue", live=EPILOGUE)
    smem.alloc((stages,), "uint64", name="full_bar")
    smem.alloc((stages,), "uint64", name="empty_bar")
    smem.alloc((1,), "uint64", name="acc_full_bar")
    tmem = TMEMPool(smem, "auto", cta_group=1, alloc_warp=1, name="tmem")
    tmem.alloc((128, 256), "float32", datapath="D", name="acc")
    tmem.alloc_sf((2, 128, 16), "float8_e4m3fn", sf_per_mma=4, name="SFA", live=MAINLOOP)
    tmem.alloc_sf((2, 256, 16), "float8_e4m3fn", sf_per_mma=4, name="SFB", live=MAINLOOP)
    smem.commit()
    tmem.commit()
    return smem


def attention_fwd_fa4(kv_stages: int = 3, head_dim: int = 128, target: str = "sm_100a") -> SMEMPool:
    """FlashAttention-4-style forward pass on Blackwell: two 128-row Q tiles, 128-key blocks.

    TMEM (512 columns): S0, S1 = Q_i K^T in fp32 (128 columns each) and the
    output accumulators O0, O1 (head_dim columns each). P_i = softmax(S_i) in
    bf16 needs half of S_i's columns; it is written over the upper half of S_i
    (columns +64) once S_i is in registers: a view, ``alias_of=S_i``, checked to fit
    inside S_i. SMEM: Q for both tiles, K/V blocks sharing ``kv_stages`` stages and
    the barriers; the O epilogue tile is written once the last P V has read the last
    KV stage, so commit() puts it over Q or the drained KV stages.
    """
    smem = SMEMPool(name="smem", target=target, phases=PHASES)
    smem.alloc_mma((2, 128, head_dim), "bfloat16", "128B", name="Q", live=MAINLOOP)
    smem.alloc_mma((kv_stages, 128, head_dim), "bfloat16", "128B", name="KV", live=MAINLOOP)
    smem.alloc_mma((128, head_dim), "bfloat16", "128B", name="O_epilogue", live=EPILOGUE)
    smem.alloc((2,), "uint64", name="q_full_bar")
    smem.alloc((kv_stages,), "uint64", name="kv_full_bar")
    smem.alloc((kv_stages,), "uint64", name="kv_empty_bar")
    smem.alloc((2,), "uint64", name="s_full_bar")
    smem.alloc((2,), "uint64", name="p_full_bar")
    smem.alloc((2,), "uint64", name="o_full_bar")
    tmem = TMEMPool(smem, 512, cta_group=1, alloc_warp=0, name="tmem")
    s = [
        tmem.alloc((128, 128), "float32", datapath="D", name=f"S{i}", live=MAINLOOP)
        for i in range(2)
    ]
    for i in range(2):
        tmem.alloc((128, head_dim), "float32", datapath="D", name=f"O{i}")
    for i in range(2):  # P_i = softmax(S_i) in bf16, written over the upper half of S_i
        tmem.alloc(  # packed, two per column: an MMA A operand, not an accumulator
            (128, 128), "bfloat16", name=f"P{i}", alias_of=s[i], offset=64, live=MAINLOOP
        )
    smem.commit()
    tmem.commit()
    return smem


EXAMPLES: dict[str, Example] = {
    e.name: e
    for e in (
        Example(
            "hopper-gemm",
            "sm_90a",
            384,
            "Hopper bf16 GEMM mainloop, 128x256x64 tiles, 4 stages, TMA + wgmma",
            hopper_gemm_bf16,
        ),
        Example(
            "hopper-gemm-persistent",
            "sm_90a",
            384,
            "Persistent warp-specialised Hopper bf16 GEMM, 128x256x64 tiles, solved stage ring "
            "beside the C staging tiles",
            hopper_gemm_persistent_bf16,
        ),
        Example(
            "blackwell-gemm",
            "sm_100a",
            256,
            "Blackwell bf16 GEMM, 128x256 fp32 accumulator double-buffered in TMEM",
            blackwell_gemm_bf16,
        ),
        Example(
            "nvfp4-gemm",
            "sm_100a",
            256,
            "Block-scaled NVFP4 GEMM, 128x256x256 tiles, scale factors in TMEM",
            blockscaled_nvfp4_gemm,
        ),
        Example(
            "attention-fwd",
            "sm_100a",
            512,
            "FlashAttention-4-style forward, P aliased over S in TMEM",
            attention_fwd_fa4,
        ),
    )
}
DEFAULT_EXAMPLE = "hopper-gemm"
