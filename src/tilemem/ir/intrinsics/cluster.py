"""Thread-block clusters (sm_90): the CTA's rank, the cluster barrier, and mbarrier arrivals on
a peer CTA's shared memory (PTX ISA 9.0: "barrier.cluster", "mapa", "mbarrier.arrive",
special register ``%cluster_ctarank``)."""

from __future__ import annotations

import numpy as np

from ..nodes import UINT32, convert
from .registry import SimContext, asm, expose, intrinsic
from .thread import shared_operand

_CTARANK = r"""__device__ __forceinline__ uint32_t tm_cluster_ctarank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
"""


@intrinsic(
    "ptx.cluster.ctarank",
    feature="cluster",
    instruction="%cluster_ctarank",
    lower=lambda call, gen: "tm_cluster_ctarank()",
    helper=_CTARANK,
    value=UINT32,
    sim=lambda ctx, call: ctx.rank,
)
def cluster_ctarank():
    """This CTA's rank in its cluster, 0 .. cluster size - 1."""
    return (), ()


@intrinsic(
    "ptx.cluster.arrive",
    feature="cluster",
    instruction="barrier.cluster.arrive",
    ptx="barrier.cluster.arrive.release;",
    sim=lambda ctx, call: ctx.cluster_arrive(),
)
def cluster_arrive():
    """Arrive on the cluster barrier, releasing this thread's prior memory accesses."""
    return (), ()


def _sim_cluster_wait(ctx: SimContext, call):
    """Wait until every warp of the cluster has arrived; acquires what they released."""
    yield from ctx.cluster_wait()


@intrinsic(
    "ptx.cluster.wait",
    feature="cluster",
    instruction="barrier.cluster.wait",
    ptx="barrier.cluster.wait.acquire;",
    sim=_sim_cluster_wait,
)
def cluster_wait():
    """Wait until every thread of every CTA in the cluster has arrived."""
    return (), ()


@expose("ptx.cluster.sync")
def cluster_sync() -> None:
    """Every thread of the cluster meets here (arrive, then wait); every thread must call it."""
    cluster_arrive()
    cluster_wait()


def _lower_arrive_remote(call, gen) -> str:
    bar, rank = call.args
    return asm(
        "{\\n.reg .b32 remote;\\nmapa.shared::cluster.u32 remote, %0, %1;\\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\\n}",
        "",
        f'"r"({gen.expr(bar)}), "r"((uint32_t)({gen.expr(rank)}))',
    )


def _sim_arrive_cluster(ctx: SimContext, call) -> None:
    """Each active thread arrives once on the mbarrier of CTA ``cta_rank``."""
    bars = ctx.value(0).astype(np.int64)[ctx.active]
    ranks = ctx.value(1).astype(np.int64)[ctx.active]
    pairs, counts = np.unique(np.stack([bars, ranks], axis=1), axis=0, return_counts=True)
    for (bar, rank), n in zip(pairs, counts):
        ctx.mbarrier_arrive(int(bar), int(n), rank=int(rank))


@intrinsic(
    "ptx.mbarrier.arrive_cluster",
    feature="cluster",
    instruction="mapa + mbarrier.arrive.shared::cluster",
    lower=_lower_arrive_remote,
    sim=_sim_arrive_cluster,
)
def mbarrier_arrive_cluster(bar, cta_rank):
    """Arrive on the mbarrier at ``bar``'s offset in the shared memory of cluster CTA
    ``cta_rank`` (this CTA's own rank included). The arrive keeps its default ``.release.cta``
    semantics: a ``.release.cluster`` arrive orders all of the thread's earlier memory accesses
    cluster-wide first, and on the consumer's critical path that halved the GEMM's rate."""
    return (shared_operand(bar), convert(cta_rank)), ()
