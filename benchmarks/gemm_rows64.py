"""Every 64-row tile configuration against the GEMM policy and cuBLAS: the sweep that
``ROWS64_COST`` in src/tilemem/gemm/hopper.py is fitted to.

    PYTHONPATH=src python3 benchmarks/gemm_rows64.py bfloat16,float8_e4m3fn

For each shape of benchmarks/gemm.py's small and inference sets with M >= 64, bf16 then fp8
(promoted every two K tiles, as the policy), the 64-row kernels (``a_rows=64``: one consumer
warpgroup computes ``64 x W``) run at every width, alone (``rWx1``), in 2x1 clusters sharing B
(``rWx2``, W >= 96) and as stream-K (``rWs``, W >= 128), timed beside the policy
(``AutoGemm``) and cuBLAS in one process with benchmarks/gemm.py's method (fresh inputs,
NaN-poisoned C checked first, rotating order, median of 3 rounds). One line per shape:
``RESULT dtype MxNxK policy:CONFIG=ratio rWx1=ratio ... BEST label=ratio`` (ratio: cuBLAS time
/ tilemem time). Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch

from tilemem.gemm.hopper import AutoGemm, HopperGemm


def kernels(dtype: str) -> tuple[list[HopperGemm], list[str]]:
    """The 64-row configurations for ``dtype`` and their labels."""
    fp8 = dtype != "bfloat16"
    widths = bench.SWEEP_WIDTHS_FP8 if fp8 else bench.SWEEP_WIDTHS
    configs = [(w, 1, False) for w in widths]
    configs += [(w, 2, False) for w in widths if w >= 96]
    configs += [(w, 1, True) for w in widths if w >= 128]
    gemms = [
        HopperGemm(
            cluster_m=cm,
            dtype=dtype,
            tile_n=w,
            a_rows=64,
            promote=fp8,
            promote_every=2 if fp8 else 1,
            stream_k=sk,
        )
        for w, cm, sk in configs
    ]
    return gemms, [f"r{w}s" if sk else f"r{w}x{cm}" for w, cm, sk in configs]


def main() -> None:
    torch.zeros(1, device="cuda")
    start = time.time()
    dtypes = sys.argv[1].split(",") if len(sys.argv) > 1 else ["bfloat16", "float8_e4m3fn"]
    for dtype in dtypes:
        auto = AutoGemm(dtype=dtype)
        gemms, labels = kernels(dtype)
        print(f"built {len(gemms)} kernels for {dtype} at {time.time() - start:.0f} s", flush=True)
        for m, n, k in bench.SMALL + bench.INFERENCE:
            if m < 64:
                continue
            names = ["policy:" + bench.policy(auto, m, n, k)] + labels
            bench.check([auto] + gemms, m, n, k, seed=1)
            times = bench.time_all([auto] + gemms, m, n, k, rounds=3)
            ratios = [times[-1] / t for t in times[:-1]]
            best = max(range(1, len(ratios)), key=lambda i: ratios[i])
            text = " ".join(f"{label}={r:.3f}" for label, r in zip(names, ratios))
            print(
                f"RESULT {dtype} {m}x{n}x{k} {text} BEST {names[best]}={ratios[best]:.3f}",
                flush=True,
            )
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
