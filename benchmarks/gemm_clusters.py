"""Clusters against CTAs alone, and the cluster release's arrivals side by side against one
thread arriving on each CTA in turn.

    PYTHONPATH=src python3 benchmarks/gemm_clusters.py sweep diag,bfloat16,float8_e4m3fn
    PYTHONPATH=src python3 benchmarks/gemm_clusters.py arrivals bfloat16,float8_e4m3fn

``sweep``: ``diag`` times 128 x 96 tiles alone (``a96``), in 2x1 clusters sharing B (``p96``),
the same pairs built with the earlier serial release (``p96serial``, :func:`serial_release`),
launched plainly (``nopdl``), in 1x2 clusters sharing A (``n96``), and 64 x 192 tiles alone and
in 2x1 clusters (``r192``, ``r192p``) on three one-wave bf16 shapes (``DIAG`` lines); then, for
each type, every shape of benchmarks/gemm.py's small and inference sets with the policy
(``policy:CONFIG``), the policy with each tiled configuration of CTAs alone run in pairs
(``pairsMN``: 2x1 where there are two M tiles, else 1x2; ``=same`` where none changes), and
2x1 (``mW``) and 1x2 (``nW``) clusters at every width with 128-row and 64-row (``r``)
tiles. ``arrivals``: on every shape of benchmarks/gemm.py's sets where the policy runs
clusters, the policy beside the same kernels built with the release of earlier versions (one
elected thread arriving on each CTA's barrier in turn, :func:`serial_release`). Ratios are
cuBLAS time / tilemem time, with benchmarks/gemm.py's method (fresh inputs, NaN-poisoned C
checked first, rotating order, median of 5 (``DIAG``, ``ARRIVALS``) or 3 rounds). Needs an
sm_90 GPU and torch.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch

from tilemem import lang as T
from tilemem.gemm import hopper
from tilemem.gemm.plan import tile_rows
from tilemem.intmath import ceil_div

DIAG_SHAPES = [(256, 6144, 4096), (512, 4096, 4096), (256, 10240, 8192)]
DIAG = [  # label, HopperGemm arguments
    ("a96", dict(cluster_m=1, tile_n=96)),
    ("p96", dict(cluster_m=2, tile_n=96)),
    ("p96serial", dict(cluster_m=2, tile_n=96)),  # built inside releasing_serially()
    ("a96nopdl", dict(cluster_m=1, tile_n=96, programmatic=False)),
    ("p96nopdl", dict(cluster_m=2, tile_n=96, programmatic=False)),
    ("n96", dict(cluster_m=1, cluster_n=2, tile_n=96)),
    ("r192", dict(cluster_m=1, tile_n=192, a_rows=64)),
    ("r192p", dict(cluster_m=2, tile_n=192, a_rows=64)),
]


def pairs_for(auto: hopper.AutoGemm, m: int, n: int, k: int):
    """``(tile_n, a_rows, cluster_m, cluster_n)`` of the pair that replaces the policy's tiled
    configuration of CTAs alone (2x1 over two or more M tiles, else 1x2 over two or more N
    tiles), or None where the policy runs clusters, split-K or stream-K already."""
    tile_n, cm, splits, a_rows, stream_k = auto.config(m, n, k)
    if cm != 1 or splits != 1 or stream_k:
        return None
    if a_rows >= 64 and ceil_div(m, tile_rows(a_rows)) >= 2:
        return tile_n, a_rows, 2, 1
    if a_rows >= 32 and ceil_div(n, tile_n) >= 2:
        return tile_n, a_rows, 1, 2
    return None


def kernel_like(auto: hopper.AutoGemm, tile_n, a_rows, cluster_m, cluster_n, stream_k=False):
    """The HopperGemm of one configuration with ``auto``'s type, rasterisation, L2 promotion,
    fp8 promotion and launch (what AutoGemm would build for it, clusters along N included)."""
    return hopper.HopperGemm(
        auto.group_m,
        cluster_m,
        auto.dtype,
        auto.l2_promotion,
        tile_n,
        a_rows=a_rows,
        promote=auto.promote,
        promote_every=auto.promote_every,
        stream_k=stream_k,
        programmatic=auto.programmatic,
        cluster_n=cluster_n,
    )


class PairsAuto(hopper.AutoGemm):
    """The policy, with its tiled configurations of CTAs alone run in pairs (``pick``:
    :func:`pairs_for`), each pair's kernel built inside ``building()`` (none here)."""

    pick = staticmethod(pairs_for)
    building: Callable[[], contextlib.AbstractContextManager[Any]] = staticmethod(
        contextlib.nullcontext
    )

    def prepare(self, a, b, c, ctas=None):
        m, k, n = hopper._check_layout(a, b, c, self.dtype)
        pick = self.pick(self, m, n, k)
        if pick is None:
            return super().prepare(a, b, c, ctas)
        tile_n, a_rows, cm, cn = pick
        key = ("pairs", tile_n, a_rows, cm, cn)
        if key not in self.gemms:
            with self.building():
                self.gemms[key] = kernel_like(self, tile_n, a_rows, cm, cn)  # type: ignore[index]
        return self.gemms[key].prepare(a, b, c, ctas)  # type: ignore[index]


def cluster_variants(dtype: str) -> list[tuple[str, hopper.HopperGemm]]:
    """2x1 and 1x2 clusters at every width, 128-row and 64-row tiles, and their labels."""
    fp8 = dtype != "bfloat16"
    widths = bench.SWEEP_WIDTHS_FP8 if fp8 else bench.SWEEP_WIDTHS
    out = []
    for cm, cn, tag in ((2, 1, "m"), (1, 2, "n")):
        for rows in (128, 64):
            for w in widths:
                gemm = hopper.HopperGemm(
                    cluster_m=cm,
                    cluster_n=cn,
                    dtype=dtype,
                    tile_n=w,
                    a_rows=rows,
                    promote=fp8,
                    promote_every=2 if fp8 else 1,
                )
                out.append((f"{tag}{w}" + ("r" if rows == 64 else ""), gemm))
    return out


def timed(gemms, labels, m, n, k, rounds):
    """(labels, ratios, cuBLAS seconds) of the kernels that give the right product."""
    names, ok = [], []
    for label, gemm in zip(labels, gemms):
        try:
            bench.check([gemm], m, n, k, seed=1)
        except SystemExit as wrong:
            print(f"FAILED {label} {m}x{n}x{k}: {wrong}", flush=True)
            continue
        names.append(label)
        ok.append(gemm)
    times = bench.time_all(ok, m, n, k, rounds=rounds)
    return names, [times[-1] / t for t in times[:-1]], times[-1]


def diag_gemm(label: str, kwargs: dict) -> hopper.HopperGemm:
    """The ``DIAG`` kernel of ``label``: built with the serial release for ``*serial``."""
    if not label.endswith("serial"):
        return hopper.HopperGemm(**kwargs)
    with releasing_serially():
        return hopper.HopperGemm(**kwargs)


def sweep(what: list[str], start: float) -> None:
    if "diag" in what:
        gemms: list[bench.Gemm] = [diag_gemm(label, kw) for label, kw in DIAG]
        for m, n, k in DIAG_SHAPES:
            names, ratios, cublas = timed(gemms, [label for label, _ in DIAG], m, n, k, 5)
            text = " ".join(f"{label}={r:.3f}" for label, r in zip(names, ratios))
            print(f"DIAG {m}x{n}x{k} cublas={cublas * 1e6:.1f}us {text}", flush=True)
    for dtype in [d for d in what if d != "diag"]:
        auto, pairs = hopper.AutoGemm(dtype=dtype), PairsAuto(dtype=dtype)
        variants = cluster_variants(dtype)
        print(f"built {len(variants)} for {dtype} at {time.time() - start:.0f} s", flush=True)
        for m, n, k in bench.SMALL + bench.INFERENCE:
            pick = pairs_for(auto, m, n, k)
            labels = ["policy:" + bench.policy(auto, m, n, k)]
            labels += ["pairs" + (f"{pick[2]}{pick[3]}" if pick else "=same")]
            labels += [label for label, _ in variants]
            gemms = [auto, pairs] + [gemm for _, gemm in variants]
            names, ratios, _ = timed(gemms, labels, m, n, k, 3)
            best = max(range(len(ratios)), key=lambda i: ratios[i])
            text = " ".join(f"{label}={r:.3f}" for label, r in zip(names, ratios))
            print(f"RESULT {dtype} {m}x{n}x{k} {text} BEST {names[best]}={ratios[best]:.3f}")


def serial_release(empty, stage, size: int) -> None:
    """The release of earlier versions: one elected thread of the warpgroup's first warp
    arrives on each CTA's ``empty`` barrier in turn."""
    with T.If(T.all_of(T.warp_id() % 4 == 0, T.ptx.elect_sync())):
        if size == 1:
            T.ptx.mbarrier.arrive((empty, stage))
        else:
            for rank in range(size):
                T.ptx.mbarrier.arrive_cluster((empty, stage), rank)


@contextlib.contextmanager
def releasing_serially():
    """Kernels built inside release as :func:`serial_release` does."""
    current = hopper._release
    hopper._release = serial_release
    try:
        yield
    finally:
        hopper._release = current


def arrivals(dtypes: list[str]) -> None:
    for dtype in dtypes:
        auto, old = hopper.AutoGemm(dtype=dtype), hopper.AutoGemm(dtype=dtype)
        shapes = bench.every_shape(dtype)  # fp8: the ragged shape cuBLASLt takes
        for m, n, k in shapes:
            config = auto.config(m, n, k)
            if config[1] == 1:
                continue
            with releasing_serially():
                old.gemm_for(m, n, k)  # built (and its kernel traced) with the old release
            _, ratios, _ = timed([auto, old], ["side-by-side", "serial"], m, n, k, 5)
            if len(ratios) == 2:
                print(
                    f"ARRIVALS {dtype} {m}x{n}x{k} {bench.policy(auto, m, n, k)} "
                    f"side-by-side={ratios[0]:.3f} serial={ratios[1]:.3f} "
                    f"speedup={ratios[0] / ratios[1]:.3f}",
                    flush=True,
                )


def main() -> None:
    torch.zeros(1, device="cuda")
    start = time.time()
    mode, what = sys.argv[1], sys.argv[2].split(",")
    if mode == "sweep":
        sweep(what, start)
    elif mode == "arrivals":
        arrivals(what)
    else:
        raise SystemExit(f"mode is sweep or arrivals, got {mode!r}")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
