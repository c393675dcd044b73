"""Planted bugs in the built-in GEMMs, each caught with its kind, buffer and source line.

A mutant is the kernel built with one kernel-language call replaced (monkeypatch) — the same
change a careless edit of ``kernels.py`` or ``gemm/hopper.py`` would make.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T, examples, kernels
from tilemem.cuda.tma import tile_map
from tilemem.gemm import hopper as hopper_module
from tilemem.gemm import plan as gemm_plan

ml_dtypes = pytest.importorskip("ml_dtypes")

KERNELS_PY = Path(kernels.__file__).resolve()
HOPPER_PY = Path(hopper_module.__file__).resolve()


def _line_after(path: Path, anchor: str, text: str) -> int:
    """Line number of the first line containing ``text`` after the one containing ``anchor``."""
    lines = path.read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if anchor in s)
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def _skip_call_at(monkeypatch, owner, name: str, path: Path, lineno: int) -> None:
    """``owner.name(...)`` does nothing when called from ``path:lineno``."""
    original = getattr(owner, name)

    def maybe(*args, **kwargs):
        caller = inspect.stack()[1]
        if Path(caller.filename).resolve() == path and caller.lineno == lineno:
            return None
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, maybe)


def _hopper_example(schedule: str = "adversarial", seed: int = 0, k_tiles: int = 2):
    smem = examples.hopper_gemm_bf16(4, target="sm_90a")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((128, 64 * k_tiles)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 64 * k_tiles)).astype(ml_dtypes.bfloat16)
    c = np.zeros((128, 256), ml_dtypes.bfloat16)
    maps = (
        tile_map(a, smem.buffer("A")),
        tile_map(b, smem.buffer("B")),
        tile_map(c, smem.buffer("C_epilogue")),
    )
    return sim.run(kernels.hopper_gemm(), *maps, k_tiles, schedule=schedule, seed=seed)


def sources(h) -> set:
    return {a.source for a in h.accesses}


def test_missing_proxy_fence_before_the_tma_store(monkeypatch):
    monkeypatch.setattr(T.ptx.fence, "proxy_async_shared_cta", lambda: None)
    result = _hopper_example()
    hazards = result.of_kind("proxy")
    assert hazards and all(h.buffer == "C_epilogue" for h in hazards)
    store = f"{KERNELS_PY}:{_line_after(KERNELS_PY, 'def _store_and_wait', 'tma.store(')}"
    write = f"{KERNELS_PY}:{_line_after(KERNELS_PY, 'def hopper_gemm', 'c[row, col] = acc')}"
    assert sources(hazards[0]) == {store, write}


def test_epilogue_over_a_stage_still_read(monkeypatch):
    """Without wgmma.wait_group the consumers pack C_epilogue (over A's stage 0) while their
    MMAs may still read that stage, and read accumulators the MMAs still write."""
    monkeypatch.setattr(T.ptx.wgmma, "wait_group", lambda n=0: None)
    result = _hopper_example(schedule="adversarial", seed=1)
    races = result.of_kind("race")
    write = f"{KERNELS_PY}:{_line_after(KERNELS_PY, 'def hopper_gemm', 'c[row, col] = acc')}"
    shared = [h for h in races if h.buffer in ("A", "C_epilogue")]
    assert shared and any(write in sources(h) for h in shared)
    assert any(any(a.op.startswith("wgmma") for a in h.accesses) for h in shared)
    assert any(h.space == "registers" and h.buffer == "acc" for h in races)


def test_wgmma_wait_after_the_stage_is_released(monkeypatch):
    """``wait_group(1)`` after a single commit leaves the stage's MMAs in flight when the
    consumer releases it: the producer's next TMA load overwrites what they read."""
    original = T.ptx.wgmma.wait_group
    monkeypatch.setattr(T.ptx.wgmma, "wait_group", lambda n=0: original(1))
    result = _hopper_example(schedule="adversarial", k_tiles=5)  # stage 0 is loaded twice
    races = [h for h in result.of_kind("race") if h.buffer in ("A", "B")]
    assert races
    ops = {a.op.split(" ")[0] for h in races for a in h.accesses}
    assert {"cp.async.bulk.tensor", "wgmma.mma_async"} <= ops


def test_missing_cluster_barrier_before_a_peers_multicast(monkeypatch):
    """The cluster GEMM's barrier inits are published by a cluster barrier; with a block
    barrier only, a peer's multicast can complete_tx on a barrier not yet initialised."""
    line = _line_after(HOPPER_PY, "def _init_barriers", "T.ptx.cluster.sync()")
    _skip_call_at(monkeypatch, T.ptx.cluster, "sync", HOPPER_PY, line)
    program = hopper_module.hopper_gemm_persistent(cluster_m=2)
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 256)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 64)).astype(ml_dtypes.bfloat16)
    c = np.zeros((256, 256), ml_dtypes.bfloat16)
    maps = (
        tile_map(a, plan.buffer("A")),
        tile_map(b, gemm_plan.b_share(2, "bfloat16", tile_n=256)),
        tile_map(c, plan.buffer("C_stage")),
    )
    found = []
    for seed in range(12):  # the interleaving that exposes it depends on the seed
        result = sim.run(program, *maps, 2, 1, 1, 8, grid=(2,), cluster=(2, 1, 1), seed=seed)
        found += [h for h in result.hazards if h.kind in ("mbarrier", "race")]
        if found:
            break
    assert found
    tma_b = f"{HOPPER_PY}:{_line_after(HOPPER_PY, 'def _producer', 'T.ptx.tma.load(') + 1}"
    assert any(h.kind == "mbarrier" and "full_bar" in h.buffer for h in found) or any(
        tma_b in sources(h) for h in found
    )
