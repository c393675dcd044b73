"""The 128 x 176 tile (cuBLAS's on bf16 512 x 28672 x 4096: ``nvjet_sm90_tst_176x128_64x5_1x2``)
weighed by the policy at a trial width cost, beside the policy without it.

    PYTHONPATH=src python3 benchmarks/gemm_width176.py DTYPES [COST] [ROUNDS] [REPEATS]

For each type of DTYPES (comma-separated) and every shape of benchmarks/gemm.py's sets on
which ``launch_config`` with ``WIDTH_COST[176] = COST`` (1.03 by default, 192's) picks another
configuration: the policy (``policy:CONFIG``) and the policy weighing 176 (``w176:CONFIG``,
:class:`With176`), REPEATS times (3) in one process with benchmarks/gemm.py's method (each
product checked first, fresh inputs, NaN-poisoned C, rotating order, median of ROUNDS rounds,
5), each label's median; then the geometric mean of ``w176 / policy`` over those shapes.
Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import pathlib
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_configs import print_geomean, second_over_first

from tilemem.gemm import hopper


class With176(hopper.AutoGemm):
    """The policy with the 176-wide tile weighed at ``cost`` (``WIDTH_COST[176]``)."""

    def __init__(self, cost: float, **kwargs):
        super().__init__(**kwargs)
        self.cost = cost

    def config(self, m, n, k=None):
        with mock.patch.dict(hopper.WIDTH_COST, {176: self.cost}):
            return super().config(m, n, k)


def changed_shapes(dtype: str, cost: float, sms: int) -> list[tuple[int, int, int]]:
    """The benchmark's shapes of ``dtype`` on which :class:`With176` picks another
    configuration than the policy on ``sms`` SMs."""
    auto, trial = hopper.AutoGemm(dtype=dtype), With176(cost, dtype=dtype)
    auto.sms = trial.sms = sms
    return [s for s in bench.every_shape(dtype) if auto.config(*s) != trial.config(*s)]


def main() -> None:
    dtypes = sys.argv[1].split(",")
    cost = float(sys.argv[2]) if len(sys.argv) > 2 else 1.03
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    torch.zeros(1, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    start = time.time()
    for dtype in dtypes:
        auto, trial = hopper.AutoGemm(dtype=dtype), With176(cost, dtype=dtype)
        gains = []
        for m, n, k in changed_shapes(dtype, cost, sms):
            gemms = [auto, trial]
            labels = [f"{x}:{bench.policy(g, m, n, k)}" for x, g in zip(("policy", "w176"), gemms)]
            gain = second_over_first(gemms, labels, m, n, k, rounds, repeats, "W176", dtype)
            gains += [gain] if gain is not None else []
        print_geomean(dtype, "w176/policy", gains)
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
