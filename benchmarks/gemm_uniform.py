"""The GEMM's kernels as built now beside the same kernels built as earlier versions built
them: the warpgroup index straight from ``threadIdx`` (not provably warp-uniform to ptxas) and
the release of a CTA alone by ``elect.sync``, which together kept the consumer's K loop in
vector registers with an ``R2UR`` before every wgmma.

    PYTHONPATH=src python3 benchmarks/gemm_uniform.py bfloat16,float8_e4m3fn [SET,...]

For each type, every shape of benchmarks/gemm.py's sets (``square``, ``llm``, ``ragged``,
``small``, ``inference``; all by default): the policy's kernel (``uniform``) beside the same
configuration built the earlier way (``earlier``), with benchmarks/gemm.py's method (both
products checked first against a float64 reference, fresh inputs, NaN-poisoned C, rotating
order, median of 5 rounds). Ratios are cuBLAS time / tilemem time; ``speedup`` is
uniform / earlier. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import contextlib
import math
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch

from tilemem import lang as T
from tilemem.gemm import hopper


def earlier_warpgroup():
    """The warpgroup index of earlier versions: ``threadIdx.x / 128`` as it is."""
    return T.let("warpgroup", T.warp_id() // 4)


def earlier_release(empty, stage, size: int) -> None:
    """The release of earlier versions: alone, an elected lane of the first warp arrives."""
    if size == 1:
        with T.If(T.all_of(T.warp_id() % 4 == 0, T.ptx.elect_sync())):
            T.ptx.mbarrier.arrive((empty, stage))
    else:
        with T.If(T.all_of(T.warp_id() % 4 == 0, T.lane_id() < size)):
            T.ptx.mbarrier.arrive_cluster((empty, stage), T.lane_id())


@contextlib.contextmanager
def building_as_before():
    """Kernels built inside take the warpgroup index and the release of earlier versions."""
    saved = hopper._warpgroup, hopper._release
    hopper._warpgroup, hopper._release = earlier_warpgroup, earlier_release
    try:
        yield
    finally:
        hopper._warpgroup, hopper._release = saved


SETS = {
    "square": bench.SQUARE,
    "llm": bench.LLM,
    "ragged": None,  # per type: cuBLASLt's fp8 needs K % 16
    "small": bench.SMALL,
    "inference": bench.INFERENCE,
}


def shapes_of(dtype: str, sets: list[str]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for name in sets:
        if name == "ragged":
            out += bench.RAGGED if dtype == "bfloat16" else bench.RAGGED_FP8
        else:
            out += SETS[name] or []
    return out


def main() -> None:
    torch.zeros(1, device="cuda")
    start = time.time()
    dtypes = sys.argv[1].split(",")
    sets = sys.argv[2].split(",") if len(sys.argv) > 2 else list(SETS)
    unknown = [s for s in sets if s not in SETS]
    if unknown:
        raise SystemExit(f"sets are {sorted(SETS)}, got {unknown}")
    for dtype in dtypes:
        now, before = hopper.AutoGemm(dtype=dtype), hopper.AutoGemm(dtype=dtype)
        speedups = []
        for m, n, k in shapes_of(dtype, sets):
            with building_as_before():
                before.gemm_for(m, n, k)  # built (its kernel traced) the earlier way
            now.gemm_for(m, n, k)
            try:
                bench.check([now, before], m, n, k, seed=1)
            except SystemExit as wrong:
                print(f"FAILED {dtype} {m}x{n}x{k}: {wrong}", flush=True)
                continue
            times = bench.time_all([now, before], m, n, k, rounds=5)
            ratios = [times[-1] / t for t in times[:-1]]
            speedups.append(ratios[0] / ratios[1])
            print(
                f"UNIFORM {dtype} {m}x{n}x{k} {bench.policy(now, m, n, k)} "
                f"uniform={ratios[0]:.3f} earlier={ratios[1]:.3f} "
                f"speedup={speedups[-1]:.3f}",
                flush=True,
            )
        if speedups:
            geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
            print(
                f"SUMMARY {dtype}: {len(speedups)} shapes, geometric mean speedup {geo:.3f}, "
                f"lowest {min(speedups):.3f}, highest {max(speedups):.3f}, "
                f"faster by 2% or more on {sum(s >= 1.02 for s in speedups)}, "
                f"slower by 2% or more on {sum(s <= 0.98 for s in speedups)}",
                flush=True,
            )
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
