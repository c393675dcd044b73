"""MemoryPlan's own rules: occupancy inputs, the threads limit, derived JSON keys, bad input."""

import re

import pytest

from tilemem.errors import CapacityError, PlanFileError
from tilemem.plan import MemoryPlan, PlanEntry, PoolPlan


def smem_pool(nbytes: int) -> PoolPlan:
    buf = PlanEntry("buf", "shared.dyn", 0, nbytes, 16, 0, "uint8", (nbytes,), "row-major")
    return PoolPlan("smem", "shared.dyn", "bytes", (buf,), nbytes, nbytes)


def tmem_pool(cols: int) -> PoolPlan:
    acc = PlanEntry("acc", "tmem", 0, cols, 1, 0, "float32", (128, cols), "datapath D")
    return PoolPlan("tmem", "tmem", "cols", (acc,), cols, cols)


def test_occupancy_needs_threads_and_a_target():
    with pytest.raises(CapacityError, match=r"^occupancy needs the threads per CTA: pass threads="):
        MemoryPlan((smem_pool(1024),), target="sm_90a").occupancy()
    with pytest.raises(CapacityError, match=r"^occupancy needs a target: pass target="):
        MemoryPlan((smem_pool(1024),), threads=128).occupancy()


def test_occupancy_of_a_plan_without_smem_counts_zero_bytes():
    occ = MemoryPlan((tmem_pool(128),), target="sm_100a", threads=128).occupancy()
    # no SMEM pool: 0 bytes + 1 KiB reserved per block, 233472 // 1024 = 228 blocks by SMEM
    assert (occ.smem_bytes, occ.tmem_cols) == (0, 128)
    assert occ.limits["shared memory"] == 228


@pytest.mark.parametrize("threads", [1, 1024])
def test_threads_from_1_to_1024_without_a_target(threads):
    # CUDA: at most 1024 threads per block on every compute capability
    assert MemoryPlan((smem_pool(16),)).with_threads(threads).threads == threads


@pytest.mark.parametrize("threads", [0, 1025, True, 2.0])
def test_threads_outside_1_to_1024_or_not_an_integer_are_refused(threads):
    message = f"threads per CTA must be an integer in [1, 1024], got {threads!r}"
    with pytest.raises(CapacityError, match="^" + re.escape(message) + "$"):
        MemoryPlan((smem_pool(16),)).with_threads(threads)


def test_threads_limit_of_the_target():
    plan = MemoryPlan((smem_pool(16),), target="sm_90a")
    assert plan.with_threads(1024).threads == 1024
    with pytest.raises(CapacityError, match=re.escape("[1, 1024], got 1025")):
        plan.with_threads(1025)


@pytest.mark.parametrize(
    "target, threads, nbytes",
    [
        (None, 128, 1024),  # no target
        ("sm_90a", None, 1024),  # no threads
        ("sm_90a", 128, 240000),  # more than sm_90a's 232448 bytes per block
    ],
)
def test_json_has_occupancy_only_when_it_exists(target, threads, nbytes):
    plan = MemoryPlan((smem_pool(nbytes),), target=target, threads=threads)
    assert "occupancy" not in plan.to_dict()


def test_json_occupancy_with_threads_and_target():
    data = MemoryPlan((smem_pool(17424),), target="sm_90a", threads=128).to_dict()
    # sm_90a: 233472 // (17424 + 1024) = 12 blocks by SMEM, 2048 // 128 = 16 by threads
    assert (data["occupancy"]["ctas_per_sm"], data["occupancy"]["binding"]) == (
        12,
        "shared memory",
    )


def test_overlaps_are_pairs_of_two_distinct_buffers_each_named_once():
    # PoolPlan.overlaps lists each overlapping pair once, smaller name first; a hand-built
    # entry that names itself (possible through the constructor or JSON) is not a pair
    a = PlanEntry("a", "shared.dyn", 0, 64, 16, 0, "uint8", (64,), "row-major", overlaps=("a", "b"))
    b = PlanEntry("b", "shared.dyn", 0, 64, 16, 0, "uint8", (64,), "row-major", overlaps=("a",))
    pool = PoolPlan("smem", "shared.dyn", "bytes", (a, b), 64, 64)
    assert pool.overlaps == [("a", "b")]


@pytest.mark.parametrize(("threads", "limit"), [(0, 1024), (1025, 1024)])
def test_from_dict_refuses_threads_that_with_threads_refuses(threads, limit):
    # CUDA: 1 to 1024 threads per block; a plan file saying otherwise is refused by name
    data = MemoryPlan((smem_pool(16),)).with_threads(128).to_dict()
    data["threads"] = threads
    with pytest.raises(PlanFileError, match=rf"^plan.threads: .*\[1, {limit}\], got {threads}$"):
        MemoryPlan.from_dict(data)
    data["threads"] = 1024
    assert MemoryPlan.from_dict(data).threads == 1024
