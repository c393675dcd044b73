"""What a plan entry says about its buffer's layout is worked out at alloc and kept per buffer
by its pool (``tilemem.pool.base.layout_facts``), from caches shared by every pool.

Expected values by hand: a 128-byte-swizzled MMA tile is labelled ``mma 128B`` with swizzle
mode value 3 (SWIZZLE_128B_ATOM, docs/HARDWARE-RULES.md#swizzle-modes), a plain ``alloc()``
``row-major`` with 0; TMEM lane runs are the lanes the layout covers: a 128-row data path D
tile every lane, a (64, 16) ``lane = row`` tile lanes 0..63.
"""

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import AlignmentError, AllocationError, TMEMOverflowError


def _layouts(pool_plan):
    return [(e.name, e.layout, e.swizzle, e.lanes) for e in pool_plan.entries]


def test_refused_allocs_leave_the_other_buffers_facts_in_place():
    smem = SMEMPool()
    a = smem.alloc_mma((128, 64), "bfloat16", "128B", name="A")
    with pytest.raises(AllocationError):  # bytes [1024, 17408) do not fit inside A's 16384
        smem.alloc_mma((128, 64), "bfloat16", "128B", alias_of=a, offset=1024, name="late")
    with pytest.raises(AlignmentError):
        smem.alloc((4,), "uint64", align=3, name="odd")
    smem.alloc((4,), "uint64", name="bar")
    tmem = TMEMPool(smem, 64, name="t")
    tmem.alloc((128, 32), "float32", datapath="D", name="acc")
    with pytest.raises(TMEMOverflowError):  # columns [32, 96) of 64
        tmem.alloc((128, 64), "float32", datapath="D", name="big")
    tmem.alloc((64, 16), "float32", name="rows")
    smem.commit()
    tmem.commit()
    plan = smem.plan()
    assert _layouts(plan.pools[0]) == [
        ("A", "mma 128B", 3, ()),
        ("bar", "row-major", 0, ()),
        ("t_addr", "row-major", 0, ()),
    ]
    assert _layouts(plan.pools[1]) == [
        ("acc", "datapath D", 0, ((0, 128),)),
        ("rows", "lane=row", 0, ((0, 64),)),
    ]


def test_pools_making_the_same_requests_in_another_order_keep_their_own_facts():
    first, second = SMEMPool(name="first"), SMEMPool(name="second")
    first.alloc_mma((128, 64), "bfloat16", "128B", name="A")
    first.alloc((4,), "uint64", name="bar")
    second.alloc((4,), "uint64", name="bar")
    second.alloc_mma((128, 64), "bfloat16", "128B", name="A")
    second.alloc((4,), "uint64", name="bar2")
    assert _layouts(first.plan().pools[0]) == [
        ("A", "mma 128B", 3, ()),
        ("bar", "row-major", 0, ()),
    ]
    assert _layouts(second.plan().pools[0]) == [
        ("bar", "row-major", 0, ()),
        ("A", "mma 128B", 3, ()),
        ("bar2", "row-major", 0, ()),
    ]
    assert [b.layout_name for b in second.buffers] == ["row-major", "mma 128B", "row-major"]
