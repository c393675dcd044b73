"""How much the ring's depth matters to the products that stream B from memory: the policy's
kernel beside the same kernel built with fewer stages.

    PYTHONPATH=src python3 benchmarks/gemm_ring_depth.py DTYPE MxNxK[,...] DEPTH[,...] \
        [ROUNDS] [REPEATS] [CONFIG[,...]]

For each shape the policy's configuration is built once as the library builds it (the
deepest ring beside the C staging tiles, ``plan.stages``) and once for each DEPTH below that
(``dD``); ratios cuBLAS time / tilemem time with benchmarks/gemm.py's method (every product
checked against a float64 reference first, fresh inputs, NaN-poisoned C, rotating order,
median of ROUNDS rounds), REPEATS times in one process. If the time grows as the ring
shrinks, a deeper ring (smaller stages) is a lead; if not, the depth is not what bounds these
products. With CONFIGs (``benchmarks/gemm_configs.py``'s ``WxCrR[s][nN]``) each of them is
built at its full depth and at every DEPTH instead of the policy's configuration (labels
``CONFIG:dD``), e.g. the same tiles alone and in pairs, to see whether a pair's stages need
more depth than a CTA's alone. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from gemm_configs import ConfigAuto, parse_config, repeated  # gemm.py's check and timing

from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan


def ring_of(depth: int):
    """While open, plans are built with at most ``depth`` stages."""
    library = gemm_plan.stages

    def shallower(*args, **kwargs):
        solution = library(*args, **kwargs)
        return dataclasses.replace(solution, stages=min(depth, solution.stages))

    return mock.patch.object(gemm_plan, "stages", shallower)


class DepthAuto(hopper.AutoGemm):
    """The policy's configuration on every shape, with a ring of at most ``depth`` stages."""

    def __init__(self, dtype: str, depth: int):
        super().__init__(dtype=dtype)
        self.depth = depth

    def _gemm(self, config):
        with ring_of(self.depth):  # builds on first use, under the shallower plan
            return super()._gemm(config)


class DepthConfig(ConfigAuto):
    """One configuration on every shape, with a ring of at most ``depth`` stages."""

    def __init__(self, dtype: str, label: str, depth: int):
        super().__init__(dtype, parse_config(label))
        self.depth = depth

    def _gemm(self, config):
        with ring_of(self.depth):
            return super()._gemm(config)


def configs(dtype: str, labels: list[str], depths: list[int]) -> tuple[list, list[str]]:
    """Each configuration of ``labels`` at its full depth and at each of ``depths``."""
    gemms: list = []
    names: list[str] = []
    for label in labels:
        tile_n, _, a_rows, _, _ = parse_config(label)
        full = gemm_plan.stages("sm_90a", dtype, tile_n, a_rows).stages
        for depth in [full] + depths:
            gemms.append(DepthConfig(dtype, label, depth))
            names.append(f"{label}:d{depth}")
    return gemms, names


def main() -> None:
    import torch

    dtype = sys.argv[1]
    shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[2].split(",")]
    depths = [int(d) for d in sys.argv[3].split(",")]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    torch.zeros(1, device="cuda")
    start = time.time()
    auto = hopper.AutoGemm(dtype=dtype)
    gemms = [auto] + [DepthAuto(dtype, d) for d in depths]
    if len(sys.argv) > 6:
        gemms, names = configs(dtype, sys.argv[6].split(","), depths)
        for m, n, k in shapes:
            repeated(gemms, names, m, n, k, rounds, repeats, "DEPTH", f"{dtype} {m}x{n}x{k}")
        print(f"elapsed {time.time() - start:.0f} s")
        return
    for m, n, k in shapes:
        tile_n, _, _, a_rows, _ = auto.config(m, n, k)
        full = gemm_plan.stages("sm_90a", dtype, tile_n, a_rows).stages
        labels = [f"policy:d{full}"] + [f"d{d}" for d in depths]
        repeated(gemms, labels, m, n, k, rounds, repeats, "DEPTH", f"{dtype} {m}x{n}x{k}")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
