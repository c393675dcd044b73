"""M tiles of 8 to 64 rows, alone and in clusters along M sharing B, beside the policy on the
small-M shapes.

    PYTHONPATH=src python3 benchmarks/gemm_small_tiles.py bfloat16,float8_e4m3fn [M,...]
    PYTHONPATH=src python3 benchmarks/gemm_small_tiles.py ab bfloat16,float8_e4m3fn

For each type and every shape of benchmarks/gemm.py's small and inference sets with M up to 256
(or the M given): the policy (``policy:CONFIG``) and, for every tile of ``r`` rows (8, 16, 32,
64; fewer than M, so M splits into 2 to 8 tiles), every width ``w`` and clusters of ``c`` CTAs
along M (1, 2, 4; at most the M tiles), the kernel ``HopperGemm(a_rows=r, tile_n=w,
cluster_m=c)`` (``rRwWcC``) where its grid of ``ceil(M / r) * ceil(N / w)`` CTAs holds between
half and twice the SMs (one round of tiles, or nearly). This is the structure cuBLAS runs on
64 x 4096 x 4096 (two 32-row tiles of a pair sharing B, 64 wide, all of K each: docs/verification
/2026-12-03-h200-gemm-ncu-weak-shapes.txt). Ratios are cuBLAS time / tilemem time with
benchmarks/gemm.py's method (fresh inputs, NaN-poisoned C checked first, rotating order, median
of 3 rounds). ``ab``: on every shape of benchmarks/gemm.py's sets where the policy's tiles of
half the rows (``hopper.finer_rows``) replace a 2-way split, the policy beside the same policy
with the split (:class:`SplitAuto`), median of 5 rounds. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_clusters import timed

from tilemem.gemm import hopper
from tilemem.intmath import ceil_div

ROWS = (64, 32, 16, 8)
CLUSTERS = (1, 2, 4)
MAX_M = 256


def variants(m: int, n: int, widths, sms: int) -> list[tuple[int, int, int]]:
    """``(rows, width, cluster)`` of the kernels timed for an ``m x n`` C (module docstring)."""
    out = []
    for r in ROWS:
        m_tiles = ceil_div(m, r)
        if not 2 <= m_tiles <= 8:
            continue
        for w in widths:
            ctas = m_tiles * ceil_div(n, w)
            if not sms // 2 <= ctas <= 2 * sms:
                continue
            out += [(r, w, c) for c in CLUSTERS if c <= m_tiles and w // c % 8 == 0]
    return out


@contextlib.contextmanager
def splitting():
    """The policy as before :func:`hopper.finer_rows`: a short 2-way split stays a split."""
    current = hopper.finer_rows
    hopper.finer_rows = lambda *args: None
    try:
        yield
    finally:
        hopper.finer_rows = current


class SplitAuto(hopper.AutoGemm):
    """AutoGemm whose configurations are chosen as in :func:`splitting`."""

    def config(self, m, n, k=None):
        with splitting():
            return super().config(m, n, k)


def ab(dtypes: list[str]) -> None:
    for dtype in dtypes:
        auto, split = hopper.AutoGemm(dtype=dtype), SplitAuto(dtype=dtype)
        shapes = bench.every_shape(dtype)
        for m, n, k in shapes:
            if auto.config(m, n, k) == split.config(m, n, k):
                continue
            _, ratios, cublas = timed([auto, split], ["finer", "split"], m, n, k, 5)
            if len(ratios) == 2:
                print(
                    f"AB {dtype} {m}x{n}x{k} cublas={cublas * 1e6:.1f}us "
                    f"finer:{bench.policy(auto, m, n, k)}={ratios[0]:.3f} "
                    f"split:{bench.policy(split, m, n, k)}={ratios[1]:.3f} "
                    f"speedup={ratios[0] / ratios[1]:.3f}",
                    flush=True,
                )


def main() -> None:
    torch.zeros(1, device="cuda")
    start = time.time()
    if sys.argv[1] == "ab":
        ab(sys.argv[2].split(","))
        print(f"elapsed {time.time() - start:.0f} s")
        return
    dtypes = sys.argv[1].split(",")
    only = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else None
    for dtype in dtypes:
        fp8 = dtype != "bfloat16"
        widths = bench.SWEEP_WIDTHS_FP8 if fp8 else bench.SWEEP_WIDTHS
        auto = hopper.AutoGemm(dtype=dtype)
        built: dict[tuple[int, int, int], hopper.HopperGemm] = {}
        for m, n, k in bench.SMALL + bench.INFERENCE:
            if m > MAX_M or (only is not None and m not in only):
                continue
            picks = variants(m, n, widths, auto.gemm_for(m, n, k).sms)
            for r, w, c in picks:
                if (r, w, c) not in built:
                    built[(r, w, c)] = hopper.HopperGemm(
                        cluster_m=c,
                        dtype=dtype,
                        tile_n=w,
                        a_rows=r,
                        promote=fp8,
                        promote_every=hopper.DEFAULT_PROMOTE_EVERY if fp8 else 1,
                    )
            labels = ["policy:" + bench.policy(auto, m, n, k)]
            labels += [f"r{r}w{w}c{c}" for r, w, c in picks]
            gemms = [auto] + [built[p] for p in picks]
            names, ratios, cublas = timed(gemms, labels, m, n, k, 3)
            best = max(range(len(ratios)), key=lambda i: ratios[i])
            text = " ".join(f"{label}={x:.3f}" for label, x in zip(names, ratios))
            print(
                f"RESULT {dtype} {m}x{n}x{k} cublas={cublas * 1e6:.1f}us {text} "
                f"BEST {names[best]}={ratios[best]:.3f}",
                flush=True,
            )
        print(f"{dtype}: {len(built)} kernels built, at {time.time() - start:.0f} s", flush=True)
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
