"""The policy beside the same policy whose kernels are built with one of
``tilemem.gemm.hopper``'s module switches set otherwise (an A/B of a kernel change kept
behind a switch, e.g. ``PRODUCER_PAIRS``).

    PYTHONPATH=src python3 benchmarks/gemm_flag.py NAME VALUE DTYPE MxNxK[,...] [ROUNDS] [REPEATS]

``NAME`` is a ``hopper`` attribute, or ``plan.NAME`` for one of ``tilemem.gemm.plan``'s
(``plan.GROUPED_EPILOGUE``). ``VALUE`` is a Python literal (``True``, ``(1, 2)``). For each
shape: the policy (``policy:CONFIG``) and the policy built with ``NAME = VALUE``, REPEATS
times (3) with benchmarks/gemm.py's method (each product checked first, fresh inputs,
NaN-poisoned C, rotating order, median of ROUNDS rounds, 5); a ``MEDIAN`` line of each label's
median, then the geometric mean over the shapes of the switched kernel's ratio over the
policy's. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import ast
import pathlib
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_configs import print_geomean, second_over_first
from gemm_promote_overlap import BuiltAuto

from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan


class SwitchedAuto(BuiltAuto):
    """The policy, each kernel built while ``hopper.<name>`` (``plan.<name>`` for a name
    given as ``plan.NAME``: a switch of the GEMM's memory plan) is ``value``."""

    def __init__(self, name: str, value, **kwargs):
        module, attr = (gemm_plan, name[5:]) if name.startswith("plan.") else (hopper, name)
        if not hasattr(module, attr):
            raise SystemExit(f"{module.__name__} has no switch {attr!r}")
        super().__init__(**kwargs)
        self.building = lambda: mock.patch.object(module, attr, value)


def main() -> None:
    name, value, dtype = sys.argv[1], ast.literal_eval(sys.argv[2]), sys.argv[3]
    shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[4].split(",")]
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    repeats = int(sys.argv[6]) if len(sys.argv) > 6 else 3
    torch.zeros(1, device="cuda")
    start = time.time()
    auto = hopper.AutoGemm(dtype=dtype)
    switched = SwitchedAuto(name, value, dtype=dtype)
    gains = []
    for m, n, k in shapes:
        labels = ["policy:" + bench.policy(auto, m, n, k), name]
        gain = second_over_first(
            [auto, switched], labels, m, n, k, rounds, repeats, "SWITCH", dtype
        )
        gains += [gain] if gain is not None else []
    print_geomean(dtype, f"{name}/policy", gains)
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
