"""The second consumer's promotions out of step with the first's (``hopper.STAGGER_K_TILES``)
beside both consumers promoting together, on every promoted fp8 shape with two computing
consumers (128 rows of A a stage).

    PYTHONPATH=src python3 benchmarks/gemm_stagger.py [SET,...] [ROUNDS] [REPEATS]

For each fp8 shape of benchmarks/gemm.py's sets (``square``, ``llm``, ``ragged``, ``small``,
``inference``; all by default) whose AutoGemm configuration has two computing consumers,
REPEATS times (2 by default) in one process with benchmarks/gemm.py's method (every product
checked first against a float64 reference, fresh inputs, NaN-poisoned C, rotating order,
median of ROUNDS rounds, 5 by default): ``policy`` (AutoGemm as it is: staggered) and
``instep`` (the same configuration built with ``STAGGER_K_TILES = 0``). One ``STAGGER`` line
a repeat (ratios cuBLASLt time / tilemem time), a ``MEDIAN`` line a shape, then the geometric
mean of policy / instep over the shapes. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import pathlib
import statistics
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_configs import repeated
from gemm_promote_overlap import FP8, BuiltAuto
from gemm_uniform import SETS, shapes_of

from tilemem.gemm import hopper


class InStepAuto(BuiltAuto):
    """The policy, its kernels built with both consumers promoting at the same K tiles."""

    building = staticmethod(lambda: mock.patch.object(hopper, "STAGGER_K_TILES", 0))


def main() -> None:
    sets = sys.argv[1].split(",") if len(sys.argv) > 1 else list(SETS)
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.zeros(1, device="cuda")
    start = time.time()
    auto, instep = hopper.AutoGemm(dtype=FP8), InStepAuto(dtype=FP8)
    speedups = []
    for m, n, k in dict.fromkeys(shapes_of(FP8, sets)):
        if auto.config(m, n, k)[3] != hopper.TILE_M:
            continue  # one computing consumer: nothing to stagger
        labels = ["policy:" + bench.policy(auto, m, n, k), "instep"]
        medians = repeated(
            [auto, instep], labels, m, n, k, rounds, repeats, "STAGGER", f"{m}x{n}x{k}"
        )
        if len(medians) == 2:
            speedups.append(medians[labels[0]] / medians["instep"])
    if speedups:
        gm = statistics.geometric_mean(speedups)
        faster = sum(s > 1 for s in speedups)
        print(
            f"policy / instep: geometric mean {gm:.3f} over {len(speedups)} shapes, "
            f"faster on {faster}, lowest {min(speedups):.3f}, highest {max(speedups):.3f}"
        )
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
