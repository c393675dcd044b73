"""Where the 2x1 clusters' time goes: the same tiles alone, in pairs sharing B by multicast
(the library's, and ``relay``: the same freeing stages through a relay warp), in pairs that
each load all of B but still free each stage in both CTAs
(``coupled``: no multicast, the pair waits for its slower CTA), and in pairs that share
nothing (``local``: no multicast, each CTA frees only its own stages; a cluster launch of two
independent CTAs), and the same without the cluster barriers at its start and end (``bare``).

    PYTHONPATH=src python3 benchmarks/gemm_cluster_cost.py [ROUNDS] [REPEATS]
    PYTHONPATH=src python3 benchmarks/gemm_cluster_cost.py profile VARIANT

The second form (for ncu) checks one kernel on bf16 64x4096x4096 (``alone``, ``pairs``,
``coupled`` or ``local``) and launches it three times.

On bf16 64x4096x4096 with 32-row tiles 64 wide (the policy's tile; cuBLAS runs the same
tile count in 2x1 pairs sharing B) and 256x6144x4096 with 128 x 96 tiles. ``coupled`` and
``local`` are diagnostic kernels built here by wrapping the library's producer and barrier
set-up while the kernel is generated; the library's kernels are unchanged after each build.
Ratios cuBLAS time / tilemem time with benchmarks/gemm.py's method (every product checked
against a float64 reference first, fresh inputs, NaN-poisoned C, rotating order, median of
ROUNDS rounds), REPEATS times. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from gemm_configs import repeated  # benchmarks/gemm.py's check and timing, repeated

from tilemem import lang as T
from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan

SHAPES = [((64, 4096, 4096), dict(tile_n=64, a_rows=32)), ((256, 6144, 4096), dict(tile_n=96))]


class _AloneToTheProducer:
    """The producer's view of a pair's schedule: the pair's tiles, but no cluster to
    multicast into (``cluster_m`` 1: this CTA loads all of B at row 0 of its stage). The
    cluster's ``size`` stays the pair's, so the producer still waits at its end until both
    CTAs freed every stage (``hopper._producer_tail``): ``coupled``'s consumers arrive on the
    peer's barriers, and without that wait a CTA could exit before its peer's last arrival
    (a first version without it failed on the H200 with an unspecified launch failure)."""

    cluster_m = 1
    cluster_n = 1

    def __init__(self, sched):
        self._sched = sched

    def __getattr__(self, name):
        return getattr(self._sched, name)


def _no_multicast_producer(library_producer):
    def producer(tma_a, tma_b, a, b, full, empty, sched, a_rows=hopper.TILE_M):
        library_producer(tma_a, tma_b, a, b, full, empty, _AloneToTheProducer(sched), a_rows)

    return producer


def _own_barriers(full, empty, consumers: int, sync) -> None:
    """Each stage's ``empty`` counts only this CTA's consumers; then ``sync``."""
    with T.If(T.thread_id() == 0):
        for s in range(full.shape[0]):
            T.ptx.mbarrier.init((full, s), 1)
            T.ptx.mbarrier.init((empty, s), consumers)
        T.ptx.fence.mbarrier_init()
    sync()


def _local_barriers(full, empty, size, consumers=hopper.CONSUMERS, freed=None):
    """This CTA's consumers only; the cluster still syncs."""
    _own_barriers(full, empty, consumers, T.ptx.cluster.sync)


def _bare_barriers(full, empty, size, consumers=hopper.CONSUMERS, freed=None):
    """This CTA's consumers only, the CTA alone syncing: no cluster barrier at all."""
    _own_barriers(full, empty, consumers, T.cuda.syncthreads)


def _local_release(library_release):
    def release(empty, stage, size):
        library_release(empty, stage, 1)

    return release


def pair(variant: str, **kwargs) -> hopper.HopperGemm:
    """2x1 pairs of ``kwargs``'s tiles: ``mc`` (the library's: each consumer arrives on both
    CTAs' barriers), ``relay`` (the same with the stages freed through a relay warp,
    ``hopper._relay``), ``coupled``, ``local`` or ``bare`` (``local`` without the cluster
    barriers at the start and the end: a cluster launch of CTAs that never meet)."""
    if variant == "mc":
        return hopper.HopperGemm(cluster_m=2, **kwargs)
    if variant == "relay":
        with mock.patch.object(hopper, "RELAY_CONSUMERS", (1, 2)):
            return hopper.HopperGemm(cluster_m=2, **kwargs)
    patches = dict(_producer=_no_multicast_producer(hopper._producer))
    if variant in ("local", "bare"):
        patches.update(_init_barriers=_local_barriers, _release=_local_release(hopper._release))
    with contextlib.ExitStack() as stack:
        if variant == "bare":
            patches.update(_init_barriers=_bare_barriers)
            stack.enter_context(mock.patch.object(T.ptx.cluster, "sync", lambda: None))
        stack.enter_context(mock.patch.multiple(hopper, **patches))
        gemm = hopper.HopperGemm(cluster_m=2, **kwargs)
    # each CTA's B box is the whole B tile, as for CTAs alone
    gemm.b_share = gemm_plan.b_share(1, gemm.dtype, tile_n=gemm.tile_n)
    return gemm


VARIANTS = {
    "alone": None,
    "pairs": "mc",
    "relay": "relay",
    "coupled": "coupled",
    "local": "local",
    "bare": "bare",
}


def variant_gemm(label: str, **kwargs) -> hopper.HopperGemm:
    """The kernel a label of this benchmark names, on ``kwargs``'s tiles."""
    if label not in VARIANTS:
        raise SystemExit(f"a variant is one of {sorted(VARIANTS)}, got {label!r}")
    built = VARIANTS[label]
    return hopper.HopperGemm(cluster_m=1, **kwargs) if built is None else pair(built, **kwargs)


def profile(label: str) -> None:
    """Check ``label``'s kernel on the first shape, then launch it three times (for ncu)."""
    import gemm as bench  # benchmarks/gemm.py: its check and inputs
    import torch

    (m, n, k), kwargs = SHAPES[0]
    gemm = variant_gemm(label, **kwargs)
    bench.check([gemm], m, n, k, seed=1)
    a, b = bench._inputs(m, n, k, torch.bfloat16)
    run = gemm.prepare(a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
    for _ in range(3):
        run()
    torch.cuda.synchronize()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "profile":
        profile(sys.argv[2])
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    import torch

    torch.zeros(1, device="cuda")
    start = time.time()
    for (m, n, k), kwargs in SHAPES:
        labels = list(VARIANTS)
        gemms = [variant_gemm(label, **kwargs) for label in labels]
        repeated(gemms, labels, m, n, k, rounds, repeats, "COST", f"bfloat16 {m}x{n}x{k}")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
