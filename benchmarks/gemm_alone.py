"""The policy's 2x1 clusters beside the same tiles alone.

    PYTHONPATH=src python3 benchmarks/gemm_alone.py bfloat16,float8_e4m3fn

For each type and every shape of benchmarks/gemm.py's sets where the policy runs CTAs in
clusters: the policy (``pairs``) beside the same configuration with CTAs alone (``alone``,
:class:`AloneAuto`), in one process with benchmarks/gemm.py's method (fresh inputs,
NaN-poisoned C checked first, rotating order, median of 5 rounds). One line per shape:
``ALONE dtype MxNxK CONFIG pairs=ratio alone=ratio speedup=alone/pairs`` (ratio: cuBLAS time /
tilemem time). Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_clusters import timed

from tilemem.gemm import hopper


class AloneAuto(hopper.AutoGemm):
    """The policy with every configuration's CTAs alone (cluster_m 1)."""

    def config(self, m, n, k=None):
        tile_n, _, splits, a_rows, stream_k = super().config(m, n, k)
        return tile_n, 1, splits, a_rows, stream_k


def main() -> None:
    torch.zeros(1, device="cuda")
    start = time.time()
    for dtype in sys.argv[1].split(","):
        auto, alone = hopper.AutoGemm(dtype=dtype), AloneAuto(dtype=dtype)
        speedups = []
        for m, n, k in bench.every_shape(dtype):
            if auto.config(m, n, k)[1] == 1:
                continue
            _, ratios, _ = timed([auto, alone], ["pairs", "alone"], m, n, k, 5)
            if len(ratios) == 2:
                speedups.append(ratios[1] / ratios[0])
                print(
                    f"ALONE {dtype} {m}x{n}x{k} {bench.policy(auto, m, n, k)} "
                    f"pairs={ratios[0]:.3f} alone={ratios[1]:.3f} speedup={speedups[-1]:.3f}",
                    flush=True,
                )
        if speedups:
            geo = statistics.geometric_mean(speedups)
            faster = sum(s > 1.02 for s in speedups)
            slower = sum(s < 0.98 for s in speedups)
            print(
                f"{dtype}: {len(speedups)} shapes, geometric mean speedup {geo:.3f}, "
                f"{faster} 2% or more faster, {slower} 2% or more slower",
                flush=True,
            )
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
