"""GEMM ``C = A @ B^T``: tilemem's persistent Hopper kernel against cuBLAS, one process.

    python3 benchmarks/gemm.py                # every shape, bf16 then fp8: check, time, table
    python3 benchmarks/gemm.py --sanitize     # small non-multiple shapes (staged operands,
                                              # split-K), checked only (run under
                                              # compute-sanitizer --tool memcheck)
    python3 benchmarks/gemm.py --variants 256x1,192x2  # the fixed configurations beside it
    python3 benchmarks/gemm.py --shapes ragged --dtypes bfloat16  # the ragged shape and its
                                              # one-dimension parts
    python3 benchmarks/gemm.py --shapes inference --variants ""  # M = 16 .. 1024 tokens
                                              # against Llama-3 8B / 70B layers
    python3 benchmarks/gemm.py --accuracy 1024,16384  # fp8 error against K: promoted
                                              # every K tile and every two, unpromoted,
                                              # cuBLASLt
    python3 benchmarks/gemm.py --dtypes float8_e4m3fn --variants unpromoted  # fp8 without
                                              # promotion timed beside the promoted policy
    python3 benchmarks/gemm.py --dtypes float8_e4m3fn --variants promote1,unpromoted  # fp8
                                              # promoted every K tile beside both

A and B are bf16 or fp8 e4m3, C is bf16, accumulation fp32. The library side is
``torch.matmul`` (cuBLAS) for bf16 and ``torch._scaled_mm`` (cuBLASLt, unit scales) for fp8.
Every table ends with the geometric mean of the policy's ratios.
Check: fresh random inputs per shape, C poisoned with NaN before the launch; the relative
Frobenius error ``|C - ref| / |ref|`` against an fp32 product of the same inputs (TF32 off)
is printed for the policy (each variant's on the per-shape line) and for the library, and every
tilemem variant must stay below 1e-2 with every element written.
"tilemem" is ``AutoGemm``: the configuration (CTA tile width, cluster or not, K ranges)
that ``policy`` picks from the shape before the launch, one policy for every shape; for fp8
it promotes the sums to fp32 every two K tiles (``DEFAULT_PROMOTE_EVERY``). The other
tilemem columns are fixed configurations ``WIDTHxCLUSTER`` (``--variants``), ``WIDTHs``
(the stream-K kernel at that width, fp8 promoted every K tile where the width allows:
``/p``), ``unpromoted`` (the fp8 policy without promotion) or ``promote1`` / ``promote2``
(the fp8 policy promoting every K tile / every two, ``promote_every``), for comparison only.
The policy's config column adds ``/kS`` where it splits K into S ranges, ``/s`` where it
runs the stream-K kernel and ``/aR`` where a stage loads only R rows of A (M <= R).
Timing: each implementation is captured in a CUDA graph of
``reps`` back-to-back launches; every round replays the graphs (tilemem in each cluster
shape, cuBLAS; the order rotates from round to round), each between CUDA events, after
warm-up; the median round gives the time per product. The launches of a graph cycle through
enough copies of A, B and C (at least ``ROTATE_BYTES`` together) that each one starts with
its operands out of L2, as a layer of a model does, instead of finding the previous launch's
(50 MB of L2 holds all of a small-M product).
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
import subprocess
import sys

try:
    import torch
except ImportError:  # before anything else runs: say what is missing and how to get it
    sys.exit(
        "benchmarks/gemm.py needs torch (it times cuBLAS and makes the GPU arrays) and an sm_90 "
        "GPU: pip install -e '.[bench]'"
    )

from tilemem.gemm import shapes as gemm_shapes
from tilemem.gemm.hopper import DEFAULT_PROMOTE_EVERY, PROMOTED_TILE_NS, AutoGemm, HopperGemm

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
RAGGED_PARTS = [  # the ragged shape rounded to whole tiles, then ragged in one dimension only
    (4992, 3072, 2048),
    (4999, 3072, 2048),
    (4992, 3000, 2048),
    (4992, 3072, 2040),
]
RAGGED_FP8 = [(5008, 3008, 2032)]  # cuBLASLt's fp8 GEMM wants multiples of 16
SMALL = [  # the shapes where the tile policy alone stayed below cuBLAS (2026-12-01)
    (1024, 1024, 1024),
    (2048, 2048, 512),
    (256, 4096, 14336),
    (128, 14336, 4096),
    (1024, 8192, 1024),
]
LLAMA3 = [  # (N, K): 8B qkv, o, gate_up, down; 70B qkv, o, gate_up, down
    (6144, 4096),
    (4096, 4096),
    (28672, 4096),
    (4096, 14336),
    (10240, 8192),
    (8192, 8192),
    (57344, 8192),
    (8192, 28672),
]
INFERENCE = [(m, n, k) for m in (16, 64, 128, 256, 512, 1024) for n, k in LLAMA3]


def every_shape(dtype: str) -> list[tuple[int, int, int]]:
    """Every shape of the standard and inference sets for ``dtype`` inputs, in the benchmark's
    order (fp8 takes RAGGED_FP8 for RAGGED: cuBLASLt's fp8 GEMM wants multiples of 16)."""
    ragged = RAGGED if dtype == "bfloat16" else RAGGED_FP8
    return SQUARE + LLM + ragged + SMALL + INFERENCE


# the bf16 widths the configuration sweeps (gemm_rows64.py, gemm_clusters.py) try; 240 only
# where the policy picks it
SWEEP_WIDTHS = (256, 192, 128, 96, 64)
SWEEP_WIDTHS_FP8 = (192, 128, 96, 64)  # the promoted fp8 widths the sweeps try
SANITIZE = (304, 528, 208)  # ragged for every width: 2.4 x 128, 2.1 x 256, 2.2 x 240, 2.75 x 192
SANITIZE_ANY = [  # staged operands (M < 128, K or N not a multiple of 8), split-K, stream-K
    (1, 9, 7),
    (3, 40, 520),
    (16, 4096, 4096),
    (65, 1000, 130),
    (128, 4096, 4096),  # split-K on the 128-row A box: stream-K with 2 ranges a tile
    (256, 4096, 14336),  # stream-K over the whole machine, groups of 2
]
ROTATE_BYTES = 512 << 20  # operand copies a timed graph cycles through: 10 x the 50 MB L2
Gemm = AutoGemm | HopperGemm
TORCH_TYPES = {"bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn}


def _inputs(m: int, n: int, k: int, dtype: torch.dtype, gen=None):
    a = torch.randn(m, k, device="cuda", generator=gen).to(dtype)
    b = torch.randn(n, k, device="cuda", generator=gen).to(dtype)
    return a, b


def cublas(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The library product: ``torch.matmul`` for bf16, cuBLASLt's fp8 GEMM through
    ``torch._scaled_mm`` (unit scales, bf16 out) for e4m3."""
    if a.dtype == torch.bfloat16:
        return torch.matmul(a, b.T)
    one = torch.ones((), device="cuda")
    return torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def check(gemms: list[Gemm], m: int, n: int, k: int, seed: int) -> list[float]:
    """Errors against the fp32 product: each tilemem variant's, then cuBLAS's; raises if a
    tilemem variant is wrong."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a, b = _inputs(m, n, k, TORCH_TYPES[gemms[0].dtype], gen)
    ref = a.float() @ b.float().T

    def rel(x: torch.Tensor) -> float:
        return float(torch.linalg.norm(x.float() - ref) / torch.linalg.norm(ref))

    errors = []
    for gemm in gemms:
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        gemm(a, b, c)
        torch.cuda.synchronize()
        errors.append(rel(c))
        if not bool(torch.isfinite(c).all()) or not errors[-1] < 1e-2:
            raise SystemExit(
                f"WRONG RESULT for {m}x{n}x{k} {gemm.dtype}, {name(gemm)}: error {errors[-1]:.3e}"
            )
    try:
        return errors + [rel(cublas(a, b))]
    except RuntimeError:  # cuBLASLt's fp8 GEMM takes only multiples of 16
        return errors + [float("nan")]


def _graph(launch, reps: int) -> torch.cuda.CUDAGraph:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        stream = torch.cuda.current_stream().cuda_stream
        for _ in range(reps):
            launch(stream)
    return graph


def time_all(gemms: list[Gemm], m: int, n: int, k: int, rounds: int) -> list[float]:
    """Median seconds per product: each tilemem variant, then cuBLAS, timed interleaved."""
    dtype = TORCH_TYPES[gemms[0].dtype]
    size = (m * k + n * k) * dtype.itemsize + m * n * 2
    copies = max(1, min(32, -(-ROTATE_BYTES // size)))
    sets = [_inputs(m, n, k, dtype) for _ in range(copies)]
    outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]

    def cycle(launches):
        state = {"i": 0}

        def run(stream) -> None:
            launches[state["i"] % copies](stream)
            state["i"] += 1

        return run

    def cublas_on(a, b):
        def run(stream) -> None:
            cublas(a, b)

        return run

    runs = [cycle([gemm.prepare(a, b, c) for (a, b), c in zip(sets, outs)]) for gemm in gemms] + [
        cycle([cublas_on(a, b) for a, b in sets])
    ]
    est = 2.0 * m * n * k / (700e12 if dtype == torch.bfloat16 else 1400e12)
    reps = max(3, min(50, int(0.01 / est)))
    reps = -(-reps // copies) * copies  # every copy equally often
    for _ in range(3):  # warm-up: module load, cuBLAS handle and heuristics, clocks
        for run in runs:
            run(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    graphs = [_graph(run, reps) for run in runs]
    samples: list[list[float]] = [[] for _ in graphs]
    for g in graphs:
        g.replay()
    for r in range(rounds):  # the order rotates: no variant always follows the same one
        for i in [(r + j) % len(graphs) for j in range(len(graphs))]:
            g = graphs[i]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            samples[i].append(start.elapsed_time(end) / 1e3 / reps)
    if CUBLAS_NAMES.record:  # the kernels of one replay of cuBLAS's graph, as it was timed
        CUBLAS_NAMES[(m, n, k)] = graph_kernels(graphs[-1])
    return [statistics.median(x) for x in samples]


class KernelNames(dict):
    """{(m, n, k): the kernels of cuBLAS's timed graph}, which time_all records where
    ``record`` (``--cublas-names``)."""

    record = False


CUBLAS_NAMES = KernelNames()


def graph_kernels(graph) -> str:
    """The distinct names of the kernels one replay of ``graph`` runs, in order (torch's
    profiler, CUDA activity), joined by `` + ``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    names = [e.name for e in prof.events() if e.device_type == cuda]
    return " + ".join(dict.fromkeys(names)) or "none recorded"


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


def name(gemm: Gemm) -> str:
    """Column name: ``tilemem`` for the per-shape policy (``unpromoted``: fp8 without
    promotion, ``promote1`` / ``promote2``: fp8 promoted every K tile / every two where that
    is not the default, ``plain``: launched without programmatic stream serialization,
    ``l2=BYTES``: with that TMA L2 promotion), ``WIDTHxCLUSTER`` for a fixed one."""
    if isinstance(gemm, L2Policy):
        return f"l2={gemm.l2_promotion}"
    if isinstance(gemm, AutoGemm):
        if gemm.programmatic is False:
            return "plain"
        if gemm.dtype == "bfloat16":
            return "tilemem"
        if not gemm.promote:
            return "unpromoted"
        default = gemm.promote_every == DEFAULT_PROMOTE_EVERY
        return "tilemem" if default else f"promote{gemm.promote_every}"
    if gemm.stream_k:
        return f"{gemm.tile_n}s" + ("/p" if gemm.promote else "")
    return f"{gemm.tile_n}x{gemm.cluster_m}" + ("k" if gemm.split_k else "")


def report(gemms: list[Gemm], shapes, rounds: int) -> None:
    """Check and time every shape for one input type, then print its table."""
    rows = []
    for i, (m, n, k) in enumerate(shapes):
        errors = check(gemms, m, n, k, seed=100 + i)
        flops = 2.0 * m * n * k
        rates = [flops / t / 1e12 for t in time_all(gemms, m, n, k, rounds)]
        rows.append(((m, n, k), errors, rates))
        print(f"{m}x{n}x{k}: errors {errors}, TFLOP/s {[round(r) for r in rates]}", flush=True)
        if (m, n, k) in CUBLAS_NAMES:
            print(f"{m}x{n}x{k}: cuBLAS kernels {CUBLAS_NAMES[(m, n, k)]}", flush=True)
    print()
    print(f"{gemms[0].dtype}: TFLOP/s; errors are |C - ref| / |ref| against the fp32 product")
    names = [name(g) for g in gemms]
    print(
        f"| M x N x K | config | error | cuBLAS error | {' | '.join(names)} | cuBLAS | ratio",
        end="",
    )
    print("".join(f" | ratio {n}" for n in names[1:]) + " |")
    print("| --- " * (5 + 2 * len(names)) + "|")
    for (m, n, k), errors, rates in rows:
        tilemem, library = rates[:-1], rates[-1]
        config = policy(gemms[0], m, n, k)
        print(
            f"| {m}x{n}x{k} | {config} | {errors[0]:.2e} | {errors[-1]:.2e} | "
            + " | ".join(f"{r:.0f}" for r in rates)
            + " | "
            + " | ".join(f"{r / library:.3f}" for r in tilemem)
            + " |"
        )
    print()
    for i, gemm in enumerate(gemms):  # the policy first, then each fixed column
        ratios = [rates[i] / rates[-1] for _, _, rates in rows]
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        worst = min(zip(ratios, (shape for shape, _, _ in rows)))
        print(
            f"{gemm.dtype}: geometric mean of the {name(gemm)} ratio over {len(rows)} "
            f"shapes: {geomean:.3f}; lowest {worst[0]:.3f} at {'x'.join(map(str, worst[1]))}; "
            f"{sum(r >= 0.95 for r in ratios)} of {len(rows)} at 0.95 or above"
        )
    print()


def policy(gemm: Gemm, m: int, n: int, k: int) -> str:
    """The configuration AutoGemm picks (``WIDTHxCLUSTER``, ``/kS`` for S K ranges, ``/s`` for
    the stream-K kernel, ``/aR`` for R rows of A a stage, ``/p`` for fp8 promoted to fp32
    every K tile, ``/p2`` every two)."""
    if not isinstance(gemm, AutoGemm):
        return "-"
    tile_n, cluster_m, splits, a_rows, stream_k = gemm.config(m, n, k)
    every = gemm.promote_every
    promoted = ("/p" + (str(every) if every != 1 else "")) if gemm.promote else ""
    split = f"/k{splits}" if splits > 1 else ""
    rows = f"/a{a_rows}" if a_rows < 128 else ""
    return f"{tile_n}x{cluster_m}{split}" + ("/s" if stream_k else "") + rows + promoted


def accuracy_gemms() -> dict[str, AutoGemm]:
    """The fp8 policies of the error table, by column: promoted every two K tiles (the
    default), every K tile, not promoted."""
    return {
        "promoted every 2": AutoGemm(dtype="float8_e4m3fn"),
        "promoted every K tile": AutoGemm(dtype="float8_e4m3fn", promote_every=1),
        "unpromoted": AutoGemm(dtype="float8_e4m3fn", promote=False),
    }


def accuracy_header(labels) -> list[str]:
    """The error table's header and rule: K, each policy's error and config, cuBLASLt."""
    cells = ["K", *(x for label in labels for x in (label, "config")), "cuBLASLt"]
    return ["| " + " | ".join(cells) + " |", "| --- " * len(cells) + "|"]


def accuracy(ks: list[int], m: int, n: int) -> None:
    """fp8 e4m3 error against K: the relative Frobenius error of C against the fp32 product
    of the same inputs for the policy with promotion every K tile and every two, without
    it, and cuBLASLt."""
    print(f"fp8 e4m3 accuracy, M = {m}, N = {n}: |C - ref| / |ref| against the fp32 product")
    columns = accuracy_gemms()
    print("\n".join(accuracy_header(columns)))
    gemms = list(columns.values())
    for k in ks:
        gen = torch.Generator(device="cuda").manual_seed(k)
        a, b = _inputs(m, n, k, torch.float8_e4m3fn, gen)
        ref = a.float() @ b.float().T
        cells = []
        for gemm in gemms:
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            gemm(a, b, c)
            torch.cuda.synchronize()
            err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
            cells += [f"{err:.3e}", policy(gemm, m, n, k)]
        lib = float(torch.linalg.norm(cublas(a, b).float() - ref) / torch.linalg.norm(ref))
        print(f"| {k} | {' | '.join(cells)} | {lib:.3e} |", flush=True)
    print()


# policies named in --variants: the fp8 ones, and "plain" (either type: the policy launched
# without programmatic stream serialization)
POLICY_VARIANTS = ("unpromoted", "promote1", "promote2", "plain")


class L2Policy(AutoGemm):
    """The policy with its own TMA L2 promotion (``--variants l2=BYTES``)."""


def parse_variants(text: str) -> list[tuple[int, int, bool] | tuple[int, str] | str]:
    """``--variants``: ``WIDTHxCLUSTER`` with an optional trailing ``k`` (split-K) as
    ``(width, cluster, split)``, ``WIDTHs`` (the stream-K kernel, CTAs alone; fp8 promoted
    where the width allows) as ``(width, "stream-k")``, ``l2=BYTES`` (the policy with that TMA
    L2 promotion: 0, 64, 128 or 256) as ``(bytes, "l2")``, or a word of
    :data:`POLICY_VARIANTS`."""
    out: list[tuple[int, int, bool] | tuple[int, str] | str] = []
    for v in text.split(","):
        if v in POLICY_VARIANTS:
            out.append(v)
        elif v.startswith("l2="):
            size = int(v.removeprefix("l2="))
            if size not in (0, 64, 128, 256):
                raise ValueError(f"l2=BYTES takes 0, 64, 128 or 256, got {size}")
            out.append((size, "l2"))
        elif v.endswith("s"):
            out.append((int(v.removesuffix("s")), "stream-k"))
        elif v:
            width, cluster = (int(x) for x in v.removesuffix("k").split("x"))
            out.append((width, cluster, v.endswith("k")))
    return out


def make_variants(configs, dtype: str, group_m: int, l2_promotion: int) -> list[Gemm]:
    """The policy, then each of ``configs`` (:func:`parse_variants`) for ``dtype``; the fp8
    policy variants are skipped for bf16."""
    fixed: list[Gemm] = []
    for config in configs:
        if config == "plain":  # either type
            fixed.append(AutoGemm(group_m, dtype, l2_promotion, programmatic=False))
            continue
        if isinstance(config, str):  # a policy variant: fp8 only
            if dtype != "bfloat16":
                every = 2 if config == "promote2" else 1
                promote = config != "unpromoted"
                fixed.append(AutoGemm(group_m, dtype, l2_promotion, promote, every))
            continue
        if len(config) == 2 and config[1] == "l2":  # the policy with another L2 promotion
            fixed.append(L2Policy(group_m, dtype, config[0]))
            continue
        if len(config) == 2:  # stream-K
            tile_n = config[0]
            promote = dtype != "bfloat16" and tile_n in PROMOTED_TILE_NS
            fixed.append(
                HopperGemm(group_m, 1, dtype, l2_promotion, tile_n, promote=promote, stream_k=True)
            )
            continue
        tile_n, cm, split = config
        fixed.append(HopperGemm(group_m, cm, dtype, l2_promotion, tile_n, split))
    return [AutoGemm(group_m, dtype, l2_promotion), *fixed]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--group-m", type=int, default=8)
    parser.add_argument("--l2-promotion", type=int, default=0, choices=(0, 64, 128, 256))
    parser.add_argument(  # 4x1 measured slower: 30 of them fit at once, 120 CTAs of 132
        "--variants",
        default="256x1,256x2,192x2",
        help="fixed tilemem configurations TILE_NxCLUSTER_M beside the per-shape policy; a "
        "trailing k (64x1k) is the split-K kernel with split_count's ranges; 'unpromoted' is "
        "the fp8 policy without fp32 promotion, 'promote1' / 'promote2' the fp8 policy "
        "promoting every K tile / every two (all three skipped for bf16)",
    )
    parser.add_argument(
        "--accuracy",
        metavar="K,K,...",
        help="only print fp8 errors (promoted every K tile and every two, unpromoted, "
        "cuBLASLt) for these K at M = N = 4096",
    )
    parser.add_argument(
        "--stage-small",
        action="store_true",
        help="pad matrices smaller than one TMA box into workspaces (as before boxes could "
        "reach past the matrix edges)",
    )
    parser.add_argument("--dtypes", default="bfloat16,float8_e4m3fn", help="input types")
    parser.add_argument("--sanitize", action="store_true")
    parser.add_argument(
        "--cublas-names",
        action="store_true",
        help="print the kernels of one replay of cuBLAS's timed graph for each shape",
    )
    parser.add_argument(
        "--profile", metavar="M,N,K,CLUSTER,TILE_N", help="only run tilemem 3 times (for ncu)"
    )
    parser.add_argument(
        "--shapes",
        default="all",
        help="comma-separated sets: all, square, ragged, small, inference",
    )
    args = parser.parse_args()
    configs = parse_variants(args.variants)
    gemm_shapes.BOXES_PAST_EDGES = not args.stage_small
    CUBLAS_NAMES.record = args.cublas_names
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")  # torch's context first: the launcher then finds it current
    dtypes = args.dtypes.split(",")
    if args.accuracy:
        accuracy([int(k) for k in args.accuracy.split(",")], 4096, 4096)
        return

    def variants(dtype: str) -> list[Gemm]:
        return make_variants(configs, dtype, args.group_m, args.l2_promotion)

    if args.profile:
        m, n, k, cm, tile_n = (int(x) for x in args.profile.split(","))
        gemm = HopperGemm(args.group_m, cm, dtypes[0], args.l2_promotion, tile_n)
        a, b = _inputs(m, n, k, TORCH_TYPES[dtypes[0]])
        run = gemm.prepare(a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        return
    if args.sanitize:
        for dtype in dtypes:
            gemms = variants(dtype)
            for shape in [SANITIZE, *SANITIZE_ANY]:
                checked = gemms if shape == SANITIZE else gemms[:1]  # the policy on the others
                errors = check(checked, *shape, seed=1)
                config = policy(gemms[0], *shape)
                labels = [f"{name(g)} ({config})" if g is gemms[0] else name(g) for g in checked]
                for label, err in zip([*labels, "cuBLAS"], errors):
                    print(f"sanitize {shape} {dtype}, {label}: relative error {err:.3e}")
        return
    print(f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"gpu, driver: {_smi('name,driver_version')}; torch {torch.__version__}")
    print(f"clocks before (sm, max sm, mem MHz): {_smi('clocks.sm,clocks.max.sm,clocks.mem')}")
    print(f"command: {' '.join([sys.executable.rsplit('/', 1)[-1]] + sys.argv)}")
    print(f"group_m {args.group_m}, TMA L2 promotion {args.l2_promotion} B, {args.rounds} rounds")
    sets = {
        "all": SQUARE + LLM + RAGGED + SMALL,
        "square": SQUARE,
        "ragged": RAGGED + RAGGED_PARTS,
        "small": SMALL,
        "inference": INFERENCE,
    }
    fp8_sets = {**sets, "all": SQUARE + LLM + RAGGED_FP8 + SMALL, "ragged": RAGGED_FP8}
    for dtype in dtypes:
        gemms = variants(dtype)
        resident = ", ".join(
            f"{g.max_clusters} of {name(g)}" for g in gemms if isinstance(g, HopperGemm)
        )
        print(f"{dtype}: clusters resident at once: {resident}")
        chosen = sets if dtype == "bfloat16" else fp8_sets
        unknown = [x for x in args.shapes.split(",") if x not in chosen]
        if unknown:
            sys.exit(f"unknown shape sets {unknown}: pick from {sorted(chosen)}")
        shapes = [shape for x in args.shapes.split(",") for shape in chosen[x]]
        report(gemms, shapes, args.rounds)
    print(f"clocks after (sm, max sm, mem MHz): {_smi('clocks.sm,clocks.max.sm,clocks.mem')}")


if __name__ == "__main__":
    main()
