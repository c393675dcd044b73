"""Lifetime packing on real kernels' memory plans and on random instances.

    python3 benchmarks/packing.py              # the corpus and 1,000 random instances
    python3 benchmarks/packing.py --random 0 --sixteen 0   # the corpus only

For every case: the packed footprint, the lower bound (the busiest phase), bump placement
in allocation order (what a pool without lifetimes does), first fit in allocation order
(the greedy baseline), whether the packer proved its footprint minimal, and the planning
time (CPU time of this process). Sizes are bytes (SMEM) or 32-bit columns (TMEM).

The corpus: each kernel's buffers, and when each is live, as its source declares them.
The *structure* (which buffers a kernel lets share storage, which it keeps apart) is read
from the file cited above each case; the *sizes* follow from the tile configuration named
there, computed by hand. Phases: ``mainloop`` (loads and MMAs of a tile) and ``epilogue``
(the output tile leaves); a buffer a persistent kernel keeps across tiles is live in both.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass

from tilemem.plan.lifetimes import Item, Packing, pack

KIB = 1024
MAIN, EPI = "mainloop", "epilogue"
BOTH = frozenset({MAIN, EPI})
PHASES = (MAIN, EPI)


def live(*phases: str) -> frozenset[str]:
    return frozenset(phases)


@dataclass(frozen=True)
class Case:
    name: str
    unit: str
    items: tuple[Item, ...]
    phases: tuple[str, ...] = PHASES


def barriers(name: str, count: int) -> Item:
    """``count`` 8-byte mbarriers, live throughout (they are initialised once)."""
    return Item(name, 8 * count, 8)


def cutlass_sm90_gemm(persistent: bool) -> Case:
    """CUTLASS 3.x Hopper TMA warp-specialised GEMM, bf16, tile 128 x 128 x 64.

    Non-persistent: NVIDIA/cutlass include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized.hpp
    declares ``union TensorStorage { mainloop; epilogue; }`` ("Mainloop and epilogue don't use
    smem concurrently since kernel is non-persistent, so we can use a union"). Persistent:
    sm90_gemm_tma_warpspecialized_cooperative.hpp keeps them in a struct (co-live).
    Configuration here: 6 stages (5 persistent) of A and B 128 x 64 bf16 (16 KiB each);
    the TMA epilogue with 64 x 32 bf16 subtiles, 4 stages of C and 2 of D.
    """
    stages = 5 if persistent else 6
    epi = BOTH if persistent else live(EPI)
    return Case(
        f"cutlass-sm90-gemm-{'persistent' if persistent else 'ws'}",
        "bytes",
        (
            Item("A", stages * 16 * KIB, 1024, live(MAIN)),
            Item("B", stages * 16 * KIB, 1024, live(MAIN)),
            Item("C", 4 * 64 * 32 * 2, 1024, epi),
            Item("D", 2 * 64 * 32 * 2, 1024, epi),
            barriers("mainloop_bars", 2 * stages),
            barriers("epi_load_bars", 2 * 4),
        ),
    )


def cutlass_sm90_grouped_gemm() -> Case:
    """CUTLASS Hopper grouped (ptr-array) GEMM, the MoE expert GEMM, bf16, tile 128 x 256 x 64.

    NVIDIA/cutlass include/cutlass/gemm/kernel/sm90_gemm_array_tma_warpspecialized_cooperative.hpp:
    persistent, mainloop and epilogue storage side by side, plus per-group TMA descriptors in
    shared memory (128 bytes each, for A, B, C and D), updated when the group changes.
    Configuration here: 4 stages of A 128 x 64 and B 256 x 64 bf16; epilogue 4 + 2 subtiles.
    """
    return Case(
        "cutlass-sm90-grouped-gemm",
        "bytes",
        (
            Item("A", 4 * 16 * KIB, 1024, live(MAIN)),
            Item("B", 4 * 32 * KIB, 1024, live(MAIN)),
            Item("C", 4 * 64 * 32 * 2, 1024, BOTH),
            Item("D", 2 * 64 * 32 * 2, 1024, BOTH),
            Item("tensormaps", 4 * 128, 128),
            barriers("mainloop_bars", 2 * 4),
            barriers("epi_load_bars", 2 * 4),
        ),
    )


def cutlass_sm100_blockscaled_gemm() -> Case:
    """CUTLASS Blackwell block-scaled GEMM (tcgen05, MXF8), tile 128 x 128 x 128, its TMEM.

    NVIDIA/cutlass include/cutlass/gemm/kernel/sm100_gemm_tma_warpspecialized.hpp: persistent,
    the accumulator double-buffered in TMEM (two stages) so the epilogue drains tile i while
    the MMA warp fills tile i+1: both stages are live in both phases. The block-scaled
    collective (collective/sm100_blockscaled_mma_warpspecialized.hpp) copies scale factors
    into TMEM for the MMA: mainloop only. Columns as tilemem's ``sf_tmem_layout`` counts
    them: two stages of SFA and SFB for 128 rows, 16 factors each = 32 columns apiece.
    """
    return Case(
        "cutlass-sm100-blockscaled-tmem",
        "cols",
        (
            Item("acc0", 128, 1, BOTH),
            Item("acc1", 128, 1, BOTH),
            Item("SFA", 32, 1, live(MAIN)),
            Item("SFB", 32, 1, live(MAIN)),
        ),
    )


def flash_attention_3(head_dim: int = 128) -> Case:
    """FlashAttention-3 forward (Hopper), bf16, head dim 128.

    Dao-AILab/flash-attention hopper/tile_size.h: kBlockM = 128, kBlockN = 176 for head dim
    128 (non-causal), two K/V stages. hopper/flash_fwd_kernel_sm90.h: "We overlap the shared
    memory for the mainloop and epilogue. However, we only want smem_o to overlap with
    smem_v and nothing else": O is live with Q and K but not with V.
    """
    block_m, block_n, stages = 128, 176, 2
    return Case(
        "flash-attention-3-fwd",
        "bytes",
        (
            Item("Q", block_m * head_dim * 2, 1024, BOTH),
            Item("K", stages * block_n * head_dim * 2, 1024, BOTH),
            Item("V", stages * block_n * head_dim * 2, 1024, live(MAIN)),
            Item("O", block_m * head_dim * 2, 1024, live(EPI)),
            barriers("q_o_bars", 3),
            barriers("kv_bars", 2 * 2 * stages),
        ),
    )


def flash_attention_4(head_dim: int, head_dim_v: int) -> Case:
    """FlashAttention-4 forward (Blackwell, CuTe DSL), bf16, two 128-row Q tiles.

    Dao-AILab/flash-attention flash_attn/cute/flash_fwd_sm100.py: ``overlap_sO_sQ`` is set for
    head dim 192 (and then the kernel is not persistent): O is written over Q. For head dim
    128 the kernel is persistent and O has storage of its own. Configuration here: 128-key
    blocks, 3 K/V stages for head dim 128, 2 for 192.
    """
    overlap = head_dim == 192
    stages = 2 if overlap else 3
    q_live = live(MAIN) if overlap else BOTH
    return Case(
        f"flash-attention-4-fwd-d{head_dim}",
        "bytes",
        (
            Item("Q", 2 * 128 * head_dim * 2, 1024, q_live),
            Item("KV", stages * 128 * max(head_dim, head_dim_v) * 2, 1024, live(MAIN)),
            Item("O", 2 * 128 * head_dim_v * 2, 1024, live(EPI) if overlap else BOTH),
            barriers("q_bars", 2),
            barriers("kv_bars", 2 * stages),
            barriers("s_p_o_bars", 6),
            Item("tmem_addr", 4, 4),
        ),
    )


def flash_attention_4_tmem() -> Case:
    """FlashAttention-4 forward's TMEM: S0, S1 (128 fp32 columns each) and O0, O1 (head dim
    128); P_i in bf16 is written over the upper half of S_i (a view, 64 columns at +64).
    flash_attn/cute/flash_fwd_sm100.py places the same buffers by hand (tmem_s_offset,
    tmem_o_offset, tmem_p_offset)."""
    return Case(
        "flash-attention-4-fwd-tmem",
        "cols",
        (
            Item("S0", 128, 1, live(MAIN)),
            Item("S1", 128, 1, live(MAIN)),
            Item("O0", 128, 1, BOTH),
            Item("O1", 128, 1, BOTH),
            Item("P0", 64, 1, live(MAIN), alias_of="S0", offset=64),
            Item("P1", 64, 1, live(MAIN), alias_of="S1", offset=64),
        ),
    )


def deepgemm_fp8() -> Case:
    """DeepGEMM FP8 GEMM (Hopper), 1 x 128 / 128 x 128 block scaling, BLOCK 128 x 128 x 128.

    deepseek-ai/DeepGEMM deep_gemm/include/deep_gemm/fp8_gemm.cuh: persistent; shared memory
    holds smem_d (BLOCK_M x BLOCK_N bf16), per stage smem_a and smem_b (fp8) and
    smem_scales_a (BLOCK_M floats), smem_scales_b for the whole K (ceil(K / 128) floats),
    and full/empty barriers per stage. Configuration here: 5 stages, K = 7168.
    """
    return _deepgemm("deepgemm-fp8-gemm", block_n=128, stages=5, k=7168)


def deepgemm_fp8_grouped() -> Case:
    """DeepGEMM m-grouped contiguous FP8 GEMM (the MoE expert layer), BLOCK 128 x 128 x 128.

    deepseek-ai/DeepGEMM deep_gemm/include/deep_gemm/fp8_gemm.cuh serves the grouped layouts
    with the same shared storage: co-live D, fp8 stages, scales. Configuration here: BLOCK_N
    = 192 (its N choices are not powers of two), 4 stages, K = 2048 (an expert's
    intermediate size), so scales_b is 16 floats.
    """
    return _deepgemm("deepgemm-fp8-moe-grouped", block_n=192, stages=4, k=2048)


def _deepgemm(name: str, block_n: int, stages: int, k: int) -> Case:
    """DeepGEMM's FP8 shared storage for BLOCK_M = BLOCK_K = 128: the bf16 D tile (co-live),
    per stage fp8 A (128 x 128) and B (block_n x 128) and scales_a (128 floats), scales_b
    for the whole K (one float per 128), and full/empty barriers per stage."""
    return Case(
        name,
        "bytes",
        (
            Item("D", 128 * block_n * 2, 1024, BOTH),
            Item("A", stages * 128 * 128, 1024, live(MAIN)),
            Item("B", stages * block_n * 128, 1024, live(MAIN)),
            Item("scales_a", stages * 128 * 4, 128, live(MAIN)),
            Item("scales_b", k // 128 * 4, 16, BOTH),
            barriers("bars", 2 * stages),
        ),
    )


def mamba2_chunk_scan() -> Case:
    """Mamba-2 SSD chunked scan, one chunk of 256 tokens, 64-wide heads, state size 128.

    state-spaces/mamba mamba_ssm/ops/triton/ssd_chunk_scan.py computes, per chunk, the
    intra-chunk scores C B^T (masked by the decay), applies them to x, and adds C times the
    chunk's incoming state; the chunk state is read once at the start. Phases here:
    ``mainloop`` = the intra-chunk product, ``epilogue`` = the state term and the output.
    Tiles (bf16): C 256 x 128, B 256 x 128, x 256 x 64, scores 256 x 256 fp32 in stages of
    64 rows, state 128 x 64 fp32, out 256 x 64 bf16, decay cumsum 256 floats.
    """
    return Case(
        "mamba2-ssd-chunk-scan",
        "bytes",
        (
            Item("C", 256 * 128 * 2, 1024, BOTH),
            Item("B", 256 * 128 * 2, 1024, live(MAIN)),
            Item("x", 256 * 64 * 2, 1024, live(MAIN)),
            Item("scores", 64 * 256 * 4, 1024, live(MAIN)),
            Item("state", 128 * 64 * 4, 1024, live(EPI)),
            Item("out", 256 * 64 * 2, 1024, live(EPI)),
            Item("dA_cumsum", 256 * 4, 16, BOTH),
        ),
    )


CORPUS = (
    cutlass_sm90_gemm(persistent=False),
    cutlass_sm90_gemm(persistent=True),
    cutlass_sm90_grouped_gemm(),
    cutlass_sm100_blockscaled_gemm(),
    flash_attention_3(),
    flash_attention_4(128, 128),
    flash_attention_4(192, 128),
    flash_attention_4_tmem(),
    deepgemm_fp8(),
    deepgemm_fp8_grouped(),
    mamba2_chunk_scan(),
)


def random_case(
    rng: random.Random, index: int, buffers: int | None = None, interval: bool = False
) -> Case:
    """A kernel-like instance: 3-16 buffers (or ``buffers``) over 2-4 phases; tiles
    (256-1024-byte aligned, sizes multiples of their alignment), barrier groups and small
    16-128-byte-aligned arrays. Live sets are any phases, or with ``interval`` a run of
    consecutive phases (a non-persistent kernel)."""
    phases = tuple(f"p{i}" for i in range(rng.randint(2, 4)))
    items = []
    for n in range(rng.randint(3, 16) if buffers is None else buffers):
        kind = rng.random()
        if kind < 0.6:
            align = rng.choice((256, 512, 1024))
            size = align * rng.randint(1, 64)
        elif kind < 0.8:
            align, size = 8, 8 * rng.randint(1, 8)
        else:
            align = rng.choice((16, 128))
            size = align * rng.randint(1, 32)
        if interval:
            first = rng.randrange(len(phases))
            span = list(phases[first : rng.randrange(first, len(phases)) + 1])
        else:
            span = rng.sample(phases, rng.randint(1, len(phases)))
        items.append(Item(f"b{n}", size, align, None if rng.random() < 0.2 else frozenset(span)))
    return Case(f"random-{index}", "bytes", tuple(items), phases)


@dataclass(frozen=True)
class Result:
    case: Case
    packing: Packing
    seconds: float


def run(case: Case) -> Result:
    """Pack ``case``; the time is this process's CPU time (the machine may be shared)."""
    start = time.process_time()
    packing = pack(case.items, case.phases)
    return Result(case, packing, time.process_time() - start)


def corpus_table(results: list[Result]) -> list[str]:
    header = ("case", "unit", "buffers", "footprint", "lower bound", "bump", "first fit",
              "saved vs bump", "exact", "ms")  # fmt: skip
    rows = [header]
    for r in results:
        p = r.packing
        saved = f"{100 * (p.bump - p.footprint) / p.bump:.1f}%" if p.bump else "-"
        rows.append(
            (r.case.name, r.case.unit, str(len(r.case.items)), str(p.footprint),
             str(p.lower_bound), str(p.bump), str(p.first_fit), saved,
             "yes" if p.exact else "no", f"{1000 * r.seconds:.1f}")
        )  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return lines


def random_summary(results: list[Result], title: str) -> list[str]:
    times = sorted(r.seconds for r in results)
    ratio_bump = [r.packing.footprint / r.packing.bump for r in results]
    ratio_bound = [r.packing.footprint / r.packing.lower_bound for r in results]
    better_ff = sum(r.packing.footprint < r.packing.first_fit for r in results)
    at_bound = sum(r.packing.footprint == r.packing.lower_bound for r in results)
    exact = sum(r.packing.exact for r in results)
    n = len(results)
    return [
        f"{n} random instances ({title}, 2-4 phases)",
        f"  footprint / bump:        mean {statistics.fmean(ratio_bump):.3f}, "
        f"worst {max(ratio_bump):.3f}",
        f"  footprint / lower bound: mean {statistics.fmean(ratio_bound):.4f}, "
        f"worst {max(ratio_bound):.4f}; equal to the bound in {at_bound}",
        f"  smaller than first fit in allocation order: {better_ff}",
        f"  proven minimal: {exact} of {n}",
        f"  planning time: median {1000 * times[n // 2]:.1f} ms, "
        f"99th percentile {1000 * times[min(n - 1, n * 99 // 100)]:.1f} ms, "
        f"max {1000 * times[-1]:.1f} ms",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=1000, help="random instances (0: none)")
    parser.add_argument(
        "--sixteen",
        type=int,
        default=1000,
        help="random instances of exactly 16 buffers (twice: any live sets, intervals)",
    )
    args = parser.parse_args(argv)
    now = datetime.datetime.now(datetime.timezone.utc)
    machine = platform.processor() or platform.machine()
    print(f"{now:%Y-%m-%d %H:%M} UTC, {machine}, Python {platform.python_version()}")
    corpus = [run(case) for case in CORPUS]
    print("\n".join(corpus_table(corpus)))
    if args.random:
        rng = random.Random(2026)
        results = [run(random_case(rng, i)) for i in range(args.random)]
        print()
        print("\n".join(random_summary(results, "seed 2026, 3-16 buffers")))
    if args.sixteen:
        rng = random.Random(2027)
        results = [run(random_case(rng, i, 16)) for i in range(args.sixteen)]
        print()
        print("\n".join(random_summary(results, "seed 2027, 16 buffers")))
        rng = random.Random(2028)
        results = [run(random_case(rng, i, 16, interval=True)) for i in range(args.sixteen)]
        print()
        print("\n".join(random_summary(results, "seed 2028, 16 buffers, interval lifetimes")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
