"""Named kernel configurations beside the policy on named shapes, timed several times in one
process to show the spread between runs.

    PYTHONPATH=src python3 benchmarks/gemm_configs.py DTYPE MxNxK[,...] CONFIG[,...] \
        [ROUNDS] [REPEATS]
    PYTHONPATH=src python3 benchmarks/gemm_configs.py profile DTYPE MxNxK CONFIG

The second form only checks the product and launches CONFIG three times (for ncu).

``CONFIG`` is ``WxCrR`` with an optional trailing ``s`` or ``nN``: tiles ``W`` wide
(``hopper.TILE_NS``) in clusters of ``C`` CTAs along M, ``R`` rows of A a stage
(``plan.A_ROWS``), ``s`` for the stream-K kernel, ``nN`` for clusters of ``N`` CTAs along N
(sharing A; ``C`` then 1); e.g. ``128x1r64`` (64-row tiles 128 wide, alone), ``192x1r128s``,
``64x1r32n2``. fp8 kernels promote every two K tiles, as AutoGemm's. For each shape,
REPEATS times (3 by default): the policy and every configuration with benchmarks/gemm.py's
method (every product checked against a float64 reference first, fresh inputs, NaN-poisoned C,
rotating order, median of ROUNDS rounds, 5 by default). One ``CONFIGS`` line a repeat
(ratios cuBLAS time / tilemem time), then a ``MEDIAN`` line of each label's median over the
repeats. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import math
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_clusters import kernel_like, timed

from tilemem.gemm import hopper


class ConfigAuto(hopper.AutoGemm):
    """One configuration ``(tile_n, cluster_m, a_rows, stream_k, cluster_n)`` on every shape."""

    def __init__(self, dtype: str, config: tuple[int, int, int, bool, int]):
        super().__init__(dtype=dtype)
        self.fixed = config

    def config(self, m, n, k=None):
        tile_n, cluster_m, a_rows, stream_k, _ = self.fixed
        return tile_n, cluster_m, 1, a_rows, stream_k

    def _gemm(self, config):
        if self.fixed[4] == 1:
            return super()._gemm(config)
        tile_n, cluster_m, _, a_rows, stream_k = config
        key = (tile_n, cluster_m, False, a_rows, stream_k)
        if key not in self.gemms:
            self.gemms[key] = kernel_like(self, tile_n, a_rows, cluster_m, self.fixed[4], stream_k)
        return self.gemms[key]


def parse_config(text: str) -> tuple[int, int, int, bool, int]:
    """``WxCrR[s][nN]`` as ``(tile_n, cluster_m, a_rows, stream_k, cluster_n)``."""
    text, _, along_n = text.partition("n")
    stream_k = text.endswith("s")
    width, rest = text.removesuffix("s").split("x")
    cluster, rows = rest.split("r")
    return int(width), int(cluster), int(rows), stream_k, int(along_n or 1)


def profile(dtype: str, shape: str, label: str) -> None:
    """Check ``label``'s product on ``shape``, then launch it three times (for ncu)."""
    m, n, k = (int(x) for x in shape.split("x"))
    gemm = ConfigAuto(dtype, parse_config(label))
    bench.check([gemm], m, n, k, seed=1)
    a, b = bench._inputs(m, n, k, bench.TORCH_TYPES[dtype])
    run = gemm.prepare(a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
    for _ in range(3):
        run()
    torch.cuda.synchronize()


def repeated(gemms, labels, m, n, k, rounds, repeats, tag, prefix) -> dict[str, float]:
    """``gemms`` (named ``labels``) timed ``repeats`` times on ``m x n x k``: a ``TAG PREFIX
    cublas=... label=ratio ...`` line each time, then ``MEDIAN PREFIX label=median ...``; each
    label's median over the repeats in which its kernel gave the right product."""
    runs: dict[str, list[float]] = {}
    for _ in range(repeats):
        ok, ratios, cublas = timed(gemms, labels, m, n, k, rounds)
        for label, ratio in zip(ok, ratios):
            runs.setdefault(label, []).append(ratio)
        text = " ".join(f"{label}={r:.3f}" for label, r in zip(ok, ratios))
        print(f"{tag} {prefix} cublas={cublas * 1e6:.1f}us {text}", flush=True)
    medians = {label: statistics.median(r) for label, r in runs.items()}
    text = " ".join(f"{label}={r:.3f}" for label, r in medians.items())
    print(f"MEDIAN {prefix} {text}", flush=True)
    return medians


def second_over_first(gemms, labels, m, n, k, rounds, repeats, tag, dtype) -> float | None:
    """Two kernels (``labels[0]`` and ``labels[1]``) timed :func:`repeated`-ly on ``m x n x k``:
    the second's median ratio over the first's, or None where either gave a wrong product."""
    medians = repeated(gemms, labels, m, n, k, rounds, repeats, tag, f"{dtype} {m}x{n}x{k}")
    return medians[labels[1]] / medians[labels[0]] if len(medians) == 2 else None


def print_geomean(dtype: str, what: str, gains: list[float]) -> None:
    """``GEOMEAN DTYPE WHAT=...`` over ``gains`` (nothing where there are none)."""
    if gains:
        geomean = math.exp(sum(math.log(g) for g in gains) / len(gains))
        print(f"GEOMEAN {dtype} {what}={geomean:.3f} over {len(gains)} shapes", flush=True)


def main() -> None:
    if sys.argv[1] == "profile":
        torch.zeros(1, device="cuda")
        profile(*sys.argv[2:5])
        return
    dtype = sys.argv[1]
    shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[2].split(",")]
    labels = sys.argv[3].split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    torch.zeros(1, device="cuda")
    start = time.time()
    auto = hopper.AutoGemm(dtype=dtype)
    gemms = [auto] + [ConfigAuto(dtype, parse_config(label)) for label in labels]
    for m, n, k in shapes:
        names = ["policy:" + bench.policy(auto, m, n, k)] + labels
        repeated(gemms, names, m, n, k, rounds, repeats, "CONFIGS", f"{dtype} {m}x{n}x{k}")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
