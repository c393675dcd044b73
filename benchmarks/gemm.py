"""bf16 GEMM ``C = A @ B^T``: tilemem's persistent Hopper kernel against cuBLAS, one process.

    python3 benchmarks/gemm.py                # every shape: check, then time, then the table
    python3 benchmarks/gemm.py --sanitize     # one small non-multiple shape, checked only
                                              # (run under compute-sanitizer --tool memcheck)

Check: fresh random inputs per shape, C poisoned with NaN before the launch; the relative
Frobenius error ``|C - ref| / |ref|`` against an fp32 product of the same bf16 inputs (TF32
off) is printed for tilemem and for ``torch.matmul`` (cuBLAS), and tilemem must stay below
1e-2 with every element written. Timing: each implementation is captured in a CUDA graph of
``reps`` back-to-back launches; every round replays tilemem's graph and then cuBLAS's, each
between CUDA events, after warm-up; the median round gives the time per product.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import subprocess
import sys

import torch

from tilemem.gemm.hopper import HopperGemm

SQUARE = [(s, s, s) for s in (2048, 4096, 8192, 16384)]
LLM = [  # M = 8192 tokens; (N, K) of projection and MLP layers
    (8192, 1024, 4096),
    (8192, 4096, 1024),
    (8192, 4096, 4096),
    (8192, 8192, 1024),
    (8192, 4096, 14336),
    (8192, 14336, 4096),
    (8192, 14336, 8192),
]
RAGGED = [(4999, 3000, 2040)]  # not a multiple of the 128 x 256 x 64 tile in any dimension
ALIGNED_PEER = [(4992, 3072, 2048)]  # the ragged shape's tile multiple: 39 x 12 tiles, 32 K steps
SANITIZE = (300, 520, 200)


def check(gemm: HopperGemm, m: int, n: int, k: int, seed: int) -> tuple[float, float]:
    """(tilemem error, cuBLAS error) against the fp32 product; raises if tilemem is wrong."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    cublas = torch.matmul(a, b.T)

    def rel(x: torch.Tensor) -> float:
        return float(torch.linalg.norm(x.float() - ref) / torch.linalg.norm(ref))

    err, err_cublas = rel(c), rel(cublas)
    if not bool(torch.isfinite(c).all()) or not err < 1e-2:
        raise SystemExit(f"WRONG RESULT for {m}x{n}x{k}: relative error {err:.3e}")
    return err, err_cublas


def _graph(launch, reps: int) -> torch.cuda.CUDAGraph:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        stream = torch.cuda.current_stream().cuda_stream
        for _ in range(reps):
            launch(stream)
    return graph


def time_pair(gemm: HopperGemm, m: int, n: int, k: int, rounds: int) -> tuple[float, float]:
    """Median seconds per product (tilemem, cuBLAS), timed interleaved."""
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c_tm = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    c_bl = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    run_tm = gemm.prepare(a, b, c_tm)
    bt = b.T

    def run_bl(stream) -> None:
        torch.matmul(a, bt, out=c_bl)

    est = 2.0 * m * n * k / 700e12
    reps = max(3, min(50, int(0.01 / est)))
    for _ in range(3):  # warm-up: module load, cuBLAS handle and heuristics, clocks
        run_tm(torch.cuda.current_stream().cuda_stream)
        run_bl(None)
    torch.cuda.synchronize()
    graphs = [_graph(run_tm, reps), _graph(run_bl, reps)]
    samples: list[list[float]] = [[], []]
    for g in graphs:
        g.replay()
    for _ in range(rounds):
        for i, g in enumerate(graphs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            samples[i].append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(samples[0]), statistics.median(samples[1])


def _smi(query: str) -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "nvidia-smi unavailable"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--group-m", type=int, default=8)
    parser.add_argument("--l2-promotion", type=int, default=256, choices=(0, 64, 128, 256))
    parser.add_argument("--sanitize", action="store_true")
    parser.add_argument("--shapes", default="all", choices=("all", "square", "ragged"))
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")  # torch's context first: the launcher then finds it current
    gemm = HopperGemm(group_m=args.group_m, l2_promotion=args.l2_promotion)
    if args.sanitize:
        err, err_bl = check(gemm, *SANITIZE, seed=1)
        print(f"sanitize shape {SANITIZE}: relative error {err:.3e} (cuBLAS {err_bl:.3e})")
        return
    print(f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"gpu, driver: {_smi('name,driver_version')}; torch {torch.__version__}")
    print(f"clocks before (sm, max sm, mem MHz): {_smi('clocks.sm,clocks.max.sm,clocks.mem')}")
    print(f"command: {' '.join([sys.executable.rsplit('/', 1)[-1]] + sys.argv)}")
    print(f"group_m {args.group_m}, TMA L2 promotion {args.l2_promotion} B, {args.rounds} rounds")
    sets = {"all": SQUARE + LLM + RAGGED, "square": SQUARE, "ragged": RAGGED + ALIGNED_PEER}
    shapes = sets[args.shapes]
    rows = []
    for i, (m, n, k) in enumerate(shapes):
        err, err_bl = check(gemm, m, n, k, seed=100 + i)
        t_tm, t_bl = time_pair(gemm, m, n, k, args.rounds)
        flops = 2.0 * m * n * k
        rows.append((m, n, k, err, err_bl, flops / t_tm / 1e12, flops / t_bl / 1e12))
        print(
            f"{m}x{n}x{k}: err {err:.2e} / {err_bl:.2e}, "
            f"{rows[-1][5]:.0f} / {rows[-1][6]:.0f} TFLOP/s",
            flush=True,
        )
    print(f"clocks after (sm, max sm, mem MHz): {_smi('clocks.sm,clocks.max.sm,clocks.mem')}")
    print()
    print("| M x N x K | rel. err tilemem | rel. err cuBLAS | tilemem | cuBLAS | ratio |")
    print("| --- | --- | --- | --- | --- | --- |")  # tilemem and cuBLAS in TFLOP/s
    for m, n, k, err, err_bl, tm, bl in rows:
        print(f"| {m}x{n}x{k} | {err:.2e} | {err_bl:.2e} | {tm:.0f} | {bl:.0f} | {tm / bl:.3f} |")


if __name__ == "__main__":
    main()
