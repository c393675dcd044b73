"""A remote operation that reaches a peer CTA after every thread of that CTA exited is a
``"lifetime"`` hazard (the peer's shared memory is past its lifetime; on the GPU the arrival
would land in whatever the SM gives the next CTA). PTX ISA 9.0, "barrier.cluster": a cluster
barrier at the end keeps every CTA resident until all have arrived; "exit": exited threads
count as arrived. Planted: CTA 1 arrives on CTA 0's mbarrier, which CTA 0 never waits for."""

from __future__ import annotations

import tilemem.sim as sim
from tilemem import lang as T


def _remote_arrival(end_barrier: bool, wait: bool):
    @T.kernel(target="sm_90a", grid=2, block=32, cluster=(2, 1, 1), name="remote_arrival")
    def kernel():
        smem = T.SMEMPool(name="smem")
        bar = smem.alloc((1,), "uint64", name="bar")
        smem.commit()
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init((bar, 0), 1)
            T.ptx.fence.mbarrier_init()
        T.ptx.cluster.sync()
        rank = T.let("rank", T.ptx.cluster.ctarank())
        with T.If(T.all_of(rank == 1, T.thread_id() == 0)):
            T.ptx.mbarrier.arrive_cluster((bar, 0), 0)  # on CTA 0's barrier
        if wait:  # CTA 0 waits for the arrival before it exits
            with T.If(rank == 0):
                T.ptx.mbarrier.wait((bar, 0), 0)
        if end_barrier:
            T.ptx.cluster.sync()

    return kernel


def _kinds(kernel, seeds=range(12)) -> list[set[str]]:
    return [
        {h.kind for h in sim.run(kernel, schedule="random", seed=seed).hazards} for seed in seeds
    ]


def test_an_arrival_after_the_peer_exited_is_a_lifetime_hazard():
    kinds = _kinds(_remote_arrival(end_barrier=False, wait=False))
    assert {"lifetime"} in kinds  # some schedule lets CTA 0 exit first
    assert all(k <= {"lifetime"} for k in kinds)
    hazard = next(
        h
        for seed in range(12)
        for h in sim.run(_remote_arrival(False, False), schedule="random", seed=seed).hazards
    )
    assert hazard.space == "shared" and "after every thread of that CTA exited" in hazard.message


def test_a_cluster_barrier_at_the_end_or_a_wait_for_the_arrival_keeps_the_peer_resident():
    assert _kinds(_remote_arrival(end_barrier=True, wait=False)) == [set()] * 12
    assert _kinds(_remote_arrival(end_barrier=False, wait=True)) == [set()] * 12


def test_the_gemm_producer_tail_is_what_keeps_its_pairs_resident(monkeypatch):
    """The persistent GEMM's 2x1 pairs (32-row tiles, B multicast, each stage freed in both
    CTAs) end without a cluster barrier: the producer's tail (hopper._producer_tail) waits
    until both CTAs freed every stage. Without the tail a CTA may exit while its peer's
    consumer still arrives on its barriers: the simulator reports it (and on the H200 a
    diagnostic kernel built so failed with an unspecified launch failure)."""
    import numpy as np

    from tilemem.gemm import hopper
    from tilemem.intmath import ceil_div

    from .gemmsim import check_product, gemm_maps, random_operands

    m, n, k = 64, 64, 64 * 16
    a, b, c = random_operands(m, n, k, seed=3)
    maps = gemm_maps(a, b, c, 64, 2, a_rows=32)
    args = (*maps, ceil_div(m, 32), 1, 16, 8)
    run = dict(grid=(2,), cluster=(2, 1, 1), sms=1, schedule="random")

    def kinds(program) -> set[str]:
        found: set[str] = set()
        for seed in range(4):
            c[:] = np.nan
            found |= {h.kind for h in sim.run(program, *args, seed=seed, **run).hazards}
        return found

    assert hopper.PRODUCER_TAIL
    program = hopper.hopper_gemm_persistent(cluster_m=2, tile_n=64, a_rows=32)
    assert kinds(program) == set()
    check_product(a, b, c)
    monkeypatch.setattr(hopper, "_producer_tail", lambda empty, steps, stages: None)
    untailed = hopper.hopper_gemm_persistent(cluster_m=2, tile_n=64, a_rows=32)
    assert "barrier.cluster.wait" in untailed.source  # the start's barrier only
    assert untailed.source.count("barrier.cluster.wait") == 1
    assert "lifetime" in kinds(untailed)
