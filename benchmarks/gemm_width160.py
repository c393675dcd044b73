"""The 128 x 160 tile beside the policy with and without it: the sweep ``WIDTH_COST_160`` in
src/tilemem/gemm/hopper.py is fitted to.

    PYTHONPATH=src python3 benchmarks/gemm_width160.py bfloat16,float8_e4m3fn

For each type and every shape of benchmarks/gemm.py's sets: the policy (``policy:CONFIG``), the
policy choosing among the other widths only (``no160:CONFIG``, :class:`Without160`), and the
tiled 128 x 160 kernel alone (``t160x1``) and in 2x1 clusters sharing B (``t160x2``, where M
has two or more 128-row tiles). Ratios are cuBLAS time / tilemem time with benchmarks/gemm.py's
method (fresh inputs, NaN-poisoned C checked first, rotating order, median of 3 rounds). Needs an
sm_90 GPU and torch.
"""

from __future__ import annotations

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_clusters import timed

from tilemem.gemm import hopper
from tilemem.intmath import ceil_div


class Without160(hopper.AutoGemm):
    """The policy over every width but 160 (the policy before the 160-wide tile)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.widths = tuple(w for w in self.widths if w != 160)


def main() -> None:
    torch.zeros(1, device="cuda")
    start = time.time()
    for dtype in sys.argv[1].split(","):
        fp8 = dtype != "bfloat16"
        auto, before = hopper.AutoGemm(dtype=dtype), Without160(dtype=dtype)
        tiled = {
            c: hopper.HopperGemm(
                cluster_m=c,
                dtype=dtype,
                tile_n=160,
                promote=fp8,
                promote_every=hopper.DEFAULT_PROMOTE_EVERY if fp8 else 1,
            )
            for c in (1, 2)
        }
        for m, n, k in bench.every_shape(dtype):
            labels = [
                "policy:" + bench.policy(auto, m, n, k),
                "no160:" + bench.policy(before, m, n, k),
            ]
            gemms = [auto, before, tiled[1]]
            labels.append("t160x1")
            if ceil_div(m, 128) >= 2:
                gemms.append(tiled[2])
                labels.append("t160x2")
            names, ratios, cublas = timed(gemms, labels, m, n, k, 3)
            text = " ".join(f"{label}={x:.3f}" for label, x in zip(names, ratios))
            print(f"RESULT {dtype} {m}x{n}x{k} cublas={cublas * 1e6:.1f}us {text}", flush=True)
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
