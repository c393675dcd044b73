"""Cluster kernels whose stages are freed through a relay warp (``hopper._relay``, switched on
here through ``hopper.RELAY_CONSUMERS``: the consumers arrive on a local barrier, a warp of the
producer's warpgroup arrives on every CTA's ``empty`` barrier) beside the library's kernels
(each consumer arriving on every CTA's barrier itself, ``direct``).

    PYTHONPATH=src python3 benchmarks/gemm_relay.py pairs DTYPE[,...] [ROUNDS] [REPEATS]
    PYTHONPATH=src python3 benchmarks/gemm_relay.py policy DTYPE[,...] [ROUNDS] [REPEATS]

``pairs``: on every shape of benchmarks/gemm.py's small and inference sets with M <= 128
where the policy runs tiles alone that could pair up (:func:`pair_for`), the policy, the same tiles
in pairs with the relay (``relay``) and in pairs without it (``direct``). ``policy``: on every
shape of the benchmark's sets where the policy runs clusters, the policy beside itself with
the relay (``relay``). (The run of docs/PERFORMANCE.md labels them the other way round: it
ran with the relay on by default, the policy's column then being the relay's.) Ratios cuBLAS
time / tilemem time with benchmarks/gemm.py's method (every product checked first, fresh
inputs, NaN-poisoned C, rotating order, median of ROUNDS rounds), REPEATS times in one
process, then each label's median. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
from gemm_clusters import PairsAuto
from gemm_configs import repeated
from gemm_promote_overlap import BuiltAuto

from tilemem.gemm import hopper
from tilemem.gemm.plan import tile_rows
from tilemem.intmath import ceil_div


def relayed():
    """While open, cluster kernels are built with the relay, whatever their tiles' rows."""
    return mock.patch.object(hopper, "RELAY_CONSUMERS", (1, 2))


class RelayAuto(BuiltAuto):
    """The policy, its cluster kernels built with the relay."""

    building = staticmethod(relayed)


def pair_for(auto: hopper.AutoGemm, m: int, n: int, k: int):
    """``(tile_n, a_rows, cluster_m, cluster_n)`` of the pair of the policy's tiled
    configuration of CTAs alone: 2x1 over two or more M tiles (any rows: 32-row tiles of
    M = 64 pair as cuBLAS's do), else 1x2 over two or more N tiles of 32 rows or more; None
    where the policy runs clusters, split-K or stream-K already."""
    tile_n, cm, splits, a_rows, stream_k = auto.config(m, n, k)
    if cm != 1 or splits != 1 or stream_k:
        return None
    if ceil_div(m, tile_rows(a_rows)) >= 2 and a_rows >= 16:
        return tile_n, a_rows, 2, 1
    if a_rows >= 32 and ceil_div(n, tile_n) >= 2:
        return tile_n, a_rows, 1, 2
    return None


class Pairs(PairsAuto):
    """The policy, its tiled configurations of CTAs alone run in pairs (:func:`pair_for`);
    ``relay`` builds them with the relay."""

    pick = staticmethod(pair_for)

    def __init__(self, dtype: str, relay: bool):
        super().__init__(dtype=dtype)
        self.building = relayed if relay else contextlib.nullcontext


MAX_M = 128  # pairs mode: the products of few rows, where the policy runs tiles alone


def main() -> None:
    import torch

    mode, dtypes = sys.argv[1], sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    torch.zeros(1, device="cuda")
    start = time.time()
    for dtype in dtypes:
        auto = hopper.AutoGemm(dtype=dtype)
        if mode == "pairs":
            gemms = [auto, Pairs(dtype, True), Pairs(dtype, False)]
            small = [s for s in bench.SMALL + bench.INFERENCE if s[0] <= MAX_M]
            shapes = [s for s in small if pair_for(auto, *s)]
        else:
            gemms = [auto, RelayAuto(dtype=dtype)]
            every = bench.every_shape(dtype)
            shapes = [s for s in every if auto.config(*s)[1] > 1]
        for m, n, k in shapes:
            names = ["policy:" + bench.policy(auto, m, n, k)]
            names += ["relay", "direct"] if mode == "pairs" else ["relay"]
            repeated(gemms, names, m, n, k, rounds, repeats, "RELAY", f"{dtype} {m}x{n}x{k}")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
