"""How a cluster kernel's CTAs end: the library's (``hopper.PRODUCER_TAIL``: each CTA exits
once its producer has seen every stage freed by the whole cluster) beside the cluster barrier
that every thread of the cluster met at the end before (``barrier``).

    PYTHONPATH=src python3 benchmarks/gemm_cluster_end.py DTYPE[,...] [ROUNDS] [REPEATS]

On every shape of benchmarks/gemm.py's sets where the policy runs clusters: the policy beside
itself built with the end barrier. Ratios cuBLAS time / tilemem time with benchmarks/gemm.py's
method (every product checked first, fresh inputs, NaN-poisoned C, rotating order, median of
ROUNDS rounds), REPEATS times in one process, then each label's median. Needs an sm_90 GPU
and torch.
"""

from __future__ import annotations

import pathlib
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
from gemm_configs import repeated
from gemm_promote_overlap import BuiltAuto

from tilemem.gemm import hopper


class BarrierAuto(BuiltAuto):
    """The policy, its cluster kernels ending at a cluster barrier."""

    building = staticmethod(lambda: mock.patch.object(hopper, "PRODUCER_TAIL", False))


def cluster_shapes(auto: hopper.AutoGemm) -> list[tuple[int, int, int]]:
    """The benchmark's shapes on which ``auto``'s policy runs clusters."""
    every = bench.every_shape(auto.dtype)
    return [s for s in every if auto.config(*s)[1] > 1]


def main() -> None:
    import torch

    dtypes = sys.argv[1].split(",")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    torch.zeros(1, device="cuda")
    start = time.time()
    for dtype in dtypes:
        auto = hopper.AutoGemm(dtype=dtype)
        gemms = [auto, BarrierAuto(dtype=dtype)]
        for m, n, k in cluster_shapes(auto):
            names = ["policy:" + bench.policy(auto, m, n, k), "barrier"]
            repeated(gemms, names, m, n, k, rounds, repeats, "END", f"{dtype} {m}x{n}x{k}")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
