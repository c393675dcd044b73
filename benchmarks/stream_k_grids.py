"""Every stream-K grid against the GEMM policy and cuBLAS, on every shape of benchmarks/gemm.py.

    PYTHONPATH=src python3 benchmarks/stream_k_grids.py bfloat16,float8_e4m3fn

For each shape (the ``all`` and ``inference`` sets, bf16 then promoted fp8) and each width
the stream-K kernel takes, the kernel runs with its grid capped at ``units * m_group * s``
CTAs for s = 1..4 (each unit then spans s groups: an in-kernel split-K when s > 1) and on
the whole machine; the policy (``AutoGemm``) and cuBLAS are timed beside them in one process
with benchmarks/gemm.py's method (fresh inputs, NaN-poisoned C checked first, rotating
order, median of 3 rounds). One line per shape and candidate, ``RESULT dtype m n k label
ratio`` (ratio: cuBLAS time / tilemem time; labels ``WIDTHs/xS`` and ``WIDTHs/full``), and a
``#`` line with the policy's ratio and the best candidate. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch

from tilemem.gemm.hopper import AutoGemm, HopperGemm, stream_k_grid
from tilemem.gemm.plan import tile_k
from tilemem.intmath import ceil_div


class Capped:
    """A stream-K HopperGemm whose launches are capped at ``ctas`` CTAs."""

    def __init__(self, gemm: HopperGemm, ctas: int):
        self.gemm, self.ctas, self.dtype = gemm, ctas, gemm.dtype

    def prepare(self, a, b, c):
        return self.gemm.prepare(a, b, c, ctas=self.ctas)

    def __call__(self, a, b, c, stream=None) -> None:
        self.prepare(a, b, c)(stream)


def candidates(kernels: dict, dtype: str, m: int, n: int, k: int) -> list[tuple[object, str]]:
    """(gemm, label) of the policy and of every stream-K grid for an ``m x n x k`` product."""
    fp8 = dtype != "bfloat16"
    auto = AutoGemm(dtype=dtype)
    out: list[tuple[object, str]] = [(auto, "policy:" + bench.policy(auto, m, n, k))]
    m_tiles, k_tiles = ceil_div(m, 128), ceil_div(k, tile_k(dtype))
    for width in (192, 128, 64) if fp8 else (256, 192, 128, 64):
        if (dtype, width) not in kernels:
            kernels[dtype, width] = HopperGemm(
                cluster_m=1, dtype=dtype, tile_n=width, promote=fp8, stream_k=True
            )
        n_tiles = ceil_div(n, width)
        full, group = stream_k_grid(m_tiles, n_tiles, k_tiles, 132)
        units = m_tiles // group * n_tiles
        caps = {units * group * s: f"{width}s/x{s}" for s in (1, 2, 3, 4)}
        caps = {cap: label for cap, label in caps.items() if cap <= 132}
        caps.setdefault(full, f"{width}s/full")
        out += [(Capped(kernels[dtype, width], cap), label) for cap, label in sorted(caps.items())]
    return out


def main() -> None:
    torch.zeros(1, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    kernels: dict = {}
    for dtype in sys.argv[1].split(","):
        fp8 = dtype != "bfloat16"
        shapes = bench.SQUARE + bench.LLM + (bench.RAGGED_FP8 if fp8 else bench.RAGGED)
        for m, n, k in shapes + bench.SMALL + bench.INFERENCE:
            gemms, labels = zip(*candidates(kernels, dtype, m, n, k))
            bench.check(list(gemms), m, n, k, seed=1)
            times = bench.time_all(list(gemms), m, n, k, rounds=3)
            library = times[-1]
            ratios = [library / t for t in times[:-1]]
            for ratio, label in zip(ratios, labels):
                print(f"RESULT {dtype} {m} {n} {k} {label} {ratio:.4f}", flush=True)
            best = max(zip(ratios, labels))
            print(f"# {dtype} {m}x{n}x{k}: policy {ratios[0]:.3f}, best {best[1]} {best[0]:.3f}")


if __name__ == "__main__":
    main()
