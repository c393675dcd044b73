"""The TMEM protocol in the simulator: alloc / dealloc by one warp, relinquish, columns held
at exit, accesses outside the allocation, and co-resident CTAs sharing 512 columns."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.errors import TilememWarning

from . import simkernels as kernels
from .simkernels import line


def sources(h) -> set:
    return {a.source for a in h.accesses}


def _tmem_user(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TilememWarning)  # the residency advice of the plan
        return kernels.tmem_user(**kw)


def test_store_and_load_through_tmem():
    out = np.zeros(128, np.float32)
    result = sim.run(_tmem_user(), out, schedule="adversarial")
    assert result.ok, result.hazards
    assert np.array_equal(out, np.arange(128, dtype=np.float32))  # thread t stored t


def test_dealloc_by_another_warp():
    result = sim.run(_tmem_user(dealloc_warp=1), np.zeros(128, np.float32))
    (h,) = result.of_kind("tmem-protocol")
    assert "by warp 1 of columns warp 0 allocated" in h.message
    assert h.where == "columns 0..127" and sources(h) == {line("tmem-dealloc")}


def test_columns_held_at_exit_and_no_relinquish(monkeypatch):
    build_module = importlib.import_module("tilemem.ir.build")  # the module, not build()
    monkeypatch.setattr(build_module, "_check_pools_finished", lambda builder: None)
    result = sim.run(_tmem_user(deallocate=False), np.zeros(128, np.float32))
    messages = [h.message for h in result.of_kind("tmem-protocol")]
    assert any("never issued tcgen05.relinquish_alloc_permit" in m for m in messages)
    (held,) = [h for h in result.of_kind("tmem-protocol") if "exited holding" in h.message]
    assert "TMEM columns 0..127 (allocated by warp 0 at " in held.message
    assert held.where == "columns 0..127"
    (alloc,) = held.accesses  # the tcgen05.alloc that took the columns, where and by whom
    assert alloc.op == "tcgen05.alloc" and alloc.source == line("tmem-alloc")
    assert (alloc.cta, alloc.warp) == ((0, 0, 0), 0)


def test_access_outside_the_allocation():
    # column 200 of a 128-column allocation
    result = sim.run(_tmem_user(store_col=200), np.zeros(128, np.float32), schedule="in-order")
    (h,) = result.of_kind("out-of-bounds")
    assert h.space == "tmem" and h.where.endswith(" x columns 200")  # a warp's quarter
    assert sources(h) == {line("tmem-st")}


def test_over_subscribed_cluster_deadlocks():
    """Two clusters of two CTAs, each CTA taking all 512 columns, on SMs that host one CTA of
    each cluster (sms=2): when each cluster gets one SM first, both wait at the cluster barrier
    for a peer that waits for columns, as on the GPU. Other orders finish cleanly."""
    k = _tmem_user(cols=512, cluster=2, pad_smem=120_000)
    stuck = []
    for seed in range(4):
        out = np.zeros(512, np.float32)
        result = sim.run(k, out, sms=2, grid=4, seed=seed)
        if result.of_kind("deadlock"):
            stuck.append(result.of_kind("deadlock")[0])
        else:
            assert result.ok, result.hazards
            assert np.array_equal(out, np.tile(np.arange(128, dtype=np.float32), 4))
    assert stuck, "no seed interleaved the clusters into the deadlock"
    assert any("tcgen05.alloc of 512 columns: 0 of 512 free" in h.message for h in stuck)
    assert all(
        line("tmem-alloc") in sources(h) or line("cluster-sync") in sources(h) for h in stuck
    )


@pytest.mark.parametrize("mode", sim.SCHEDULES)
def test_two_ctas_share_the_sm_without_hazards(mode):
    out = np.zeros(256, np.float32)
    result = sim.run(_tmem_user(cols=512), out, grid=2, sms=2, schedule=mode)
    assert result.ok, result.hazards  # the second CTA waits for the first one's columns
    assert np.array_equal(out, np.tile(np.arange(128, dtype=np.float32), 2))
