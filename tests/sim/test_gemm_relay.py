"""Cluster kernels that free their stages through a relay warp (``hopper._relay``, switched on
by ``hopper.RELAY_CONSUMERS``; off in the library, measured in benchmarks/gemm_relay.py): the
consumers arrive on their own CTA's ``freed`` barrier and lane ``r`` of the producer
warpgroup's second warp forwards each release to CTA ``r``'s ``empty`` barrier. In the
simulator against numpy's fp32 product, hazard-free on random schedules, and the simulator
sees the relay's ordering: a relay that forwards a stage before the consumers freed it lets
a peer's multicast overwrite a stage that is still being read."""

from __future__ import annotations

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import lang as T
from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent
from tilemem.intmath import ceil_div

ml_dtypes = pytest.importorskip("ml_dtypes")

from .gemmsim import check_product, gemm_maps, random_operands  # noqa: E402  (needs ml_dtypes)


def _relayed(monkeypatch, **kw):
    monkeypatch.setattr(hopper, "RELAY_CONSUMERS", (1, 2))
    print(f"building the GEMM with a relay warp ({kw})")
    return hopper_gemm_persistent(**kw)


CASES = {
    # 3 M tiles of 32 rows in 2x1 pairs sharing B, 2 N tiles (the second 8 wide), 3 K tiles
    "rows32_pairs": (80, 72, 168, dict(a_rows=32, tile_n=64, cluster_m=2), 4),
    # 128-row tiles (two computing consumers: freed counts 2) in pairs, 5 K tiles through
    # the 6-stage ring, two N tiles: two units for the one cluster
    "rows128_pairs": (256, 200, 320, dict(tile_n=128, cluster_m=2), 2),
    # 64-row tiles in 1x2 clusters along N sharing A
    "rows64_along_n": (64, 192, 256, dict(a_rows=64, tile_n=96, cluster_n=2), 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_relayed_clusters_match_numpy_hazard_free(monkeypatch, case):
    m, n, k, kw, grid = CASES[case]
    program = _relayed(monkeypatch, **kw)
    a_rows, tile_n = kw.get("a_rows", 128), kw["tile_n"]
    cm, cn = kw.get("cluster_m", 1), kw.get("cluster_n", 1)
    a, b, c = random_operands(m, n, k, seed=m + n + k)
    maps = gemm_maps(a, b, c, tile_n, cm, a_rows=a_rows, cluster_n=cn)
    tiles = (ceil_div(m, a_rows), ceil_div(n, tile_n), ceil_div(k, 64))
    for seed in (1, 2):
        c[:] = np.nan
        result = sim.run(
            program,
            *maps,
            *tiles,
            8,
            grid=(grid,),
            cluster=(cm * cn, 1, 1),
            sms=grid // (cm * cn),
            schedule="random",
            seed=seed,
        )
        assert result.ok, result.hazards
        check_product(a, b, c)


def test_relayed_kernels_arm_a_local_freed_ring_and_count_one_relay_per_cta(monkeypatch):
    program = _relayed(monkeypatch, a_rows=32, tile_n=64, cluster_m=2)
    src = program.source
    inits = [ln for ln in src.splitlines() if "mbarrier.init" in ln]
    count = {
        name: {ln.split('"r"((uint32_t)(')[1][0] for ln in inits if f"{name} +" in ln}
        for name in ("full_bar", "freed_bar", "empty_bar")
    }
    # one producer arrival; one computing consumer frees locally; one relay of each of 2 CTAs
    assert count == {"full_bar": {"1"}, "freed_bar": {"1"}, "empty_bar": {"2"}}
    assert program.buffer("freed_bar").shape == (13,)  # the ring keeps its 13 stages
    # the consumers' releases are local; only the relay maps a peer's barrier
    assert src.count("mapa.shared::cluster") == 1
    monkeypatch.setattr(hopper, "RELAY_CONSUMERS", ())
    plain = hopper_gemm_persistent(a_rows=32, tile_n=64, cluster_m=2).source
    assert "freed_bar" not in plain and plain.count("mapa.shared::cluster") >= 2
    assert not hopper.relays(1, 32)  # CTAs alone never relay
    monkeypatch.setattr(hopper, "RELAY_CONSUMERS", (1,))
    assert hopper.relays(2, 32) and not hopper.relays(2, 128)
    assert gemm_plan.stages("sm_90a", "bfloat16", 64, 32, relay=True).stages == 13


def test_a_relay_that_does_not_wait_for_the_consumers_is_a_race(monkeypatch):
    # the mutant forwards every release at once: a peer's producer may then multicast the next
    # lap of a stage into this CTA while its consumer's wgmmas still read it
    def eager(freed, empty, sched):
        def release(s, phase, *_):
            T.ptx.mbarrier.arrive_cluster((empty, s), T.lane_id())

        hopper._each_step(sched, freed.shape[0], 0, release)

    monkeypatch.setattr(hopper, "_relay", eager)
    m, k, kw = 80, 64 * 20, dict(a_rows=32, tile_n=64, cluster_m=2)
    program = _relayed(monkeypatch, **kw)
    a, b, c = random_operands(m, 64, k, seed=7)
    maps = gemm_maps(a, b, c, 64, 2, a_rows=32)
    tiles = (ceil_div(m, 32), 1, 20)
    kinds = set()
    for seed in range(3):
        result = sim.run(
            program,
            *maps,
            *tiles,
            8,
            grid=(4,),
            cluster=(2, 1, 1),
            sms=2,
            schedule="random",
            seed=seed,
        )
        kinds |= {h.kind for h in result.hazards}
    assert kinds, "the simulator saw no hazard in a relay that never waits"


@pytest.mark.parametrize("bad", [1, 0, "yes", None, 1.0])
def test_the_plan_takes_relay_as_a_bool_only(bad):
    from tilemem.errors import GemmShapeError

    for call in (
        lambda: gemm_plan.requests("bfloat16", 64, 32, bad),
        lambda: gemm_plan.stages("sm_90a", "bfloat16", 64, 32, bad),
        lambda: gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 64, 32, bad),
    ):
        with pytest.raises(GemmShapeError, match=r"relay is True or False .*got "):
            call()


@pytest.mark.parametrize("bad", [3, 0, -2, 8, 2.0, True, "2", None])
def test_relays_takes_a_cluster_size(bad):
    from tilemem.errors import GemmShapeError

    with pytest.raises(GemmShapeError, match=r"relays takes a cluster size, one of \(1, 2, 4\)"):
        hopper.relays(bad, 64)
    with pytest.raises(GemmShapeError, match=r"rows of A .*got 48"):
        hopper.relays(2, 48)  # a row count the kernel does not take
