"""Stream-K in clusters along M beside stream-K of CTAs alone.

    PYTHONPATH=src python3 benchmarks/gemm_stream_k_clusters.py bfloat16,float8_e4m3fn

For each type, every shape of benchmarks/gemm.py's sets where the policy runs the stream-K
kernel over two or more M tiles: the policy (``alone``: groups of CTAs walking the same N
tile and K steps, each reading B) beside the same configuration whose groups are 2x1
clusters (``pairs``) and, over four or more M tiles, 4x1 clusters (``fours``), which read B
once a cluster and multicast it. benchmarks/gemm.py's method: every product checked against
a float64 reference first, fresh inputs, NaN-poisoned C, rotating order, median of 5
rounds; ratios are cuBLAS time / tilemem time. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import math
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch

from tilemem.gemm import hopper
from tilemem.gemm.plan import tile_rows
from tilemem.intmath import ceil_div


def clustered(auto: hopper.AutoGemm, m: int, n: int, k: int) -> list[tuple[str, hopper.HopperGemm]]:
    """The policy's stream-K configuration for the shape in 2x1 (and 4x1) clusters, or []
    where the policy does not run stream-K of CTAs alone over two or more M tiles (over the
    whole machine: not where it also caps the groups a unit spreads over)."""
    tile_n, cluster_m, splits, a_rows, stream_k = auto.config(m, n, k)
    m_tiles = ceil_div(m, tile_rows(a_rows))
    if not stream_k or cluster_m != 1 or splits != 1 or a_rows < 64 or m_tiles < 2:
        return []  # (with splits > 1 AutoGemm caps the groups, which a HopperGemm would not)
    sizes = [2, 4] if m_tiles >= 4 else [2]
    return [
        (
            "pairs" if size == 2 else "fours",
            hopper.HopperGemm(
                group_m=auto.group_m,
                cluster_m=size,
                dtype=auto.dtype,
                l2_promotion=auto.l2_promotion,
                tile_n=tile_n,
                a_rows=a_rows,
                promote=auto.promote,
                promote_every=auto.promote_every,
                stream_k=True,
                programmatic=auto.programmatic,
            ),
        )
        for size in sizes
    ]


def main() -> None:
    torch.zeros(1, device="cuda")
    start = time.time()
    for dtype in sys.argv[1].split(","):
        auto = hopper.AutoGemm(dtype=dtype)
        speedups: dict[str, list[float]] = {"pairs": [], "fours": []}
        for m, n, k in bench.every_shape(dtype):
            variants = clustered(auto, m, n, k)
            if not variants:
                continue
            labels = ["alone"] + [label for label, _ in variants]
            gemms = [auto] + [gemm for _, gemm in variants]
            try:
                bench.check(gemms, m, n, k, seed=1)
            except SystemExit as wrong:
                print(f"FAILED {dtype} {m}x{n}x{k}: {wrong}", flush=True)
                continue
            times = bench.time_all(gemms, m, n, k, rounds=5)
            ratios = [times[-1] / t for t in times[:-1]]
            for label, r in zip(labels[1:], ratios[1:]):
                speedups[label].append(r / ratios[0])
            text = " ".join(f"{label}={r:.3f}" for label, r in zip(labels, ratios))
            print(f"SKCLUSTER {dtype} {m}x{n}x{k} {bench.policy(auto, m, n, k)} {text}", flush=True)
        for label, values in speedups.items():
            if values:
                geo = math.exp(sum(math.log(v) for v in values) / len(values))
                print(
                    f"SUMMARY {dtype} {label}: {len(values)} shapes, geometric mean speedup over "
                    f"alone {geo:.3f}, lowest {min(values):.3f}, highest {max(values):.3f}",
                    flush=True,
                )
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
