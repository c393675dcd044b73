"""SMEMPool pinned at the edges the mutation run found unguarded.

Rules from SPEC section 3 (bump placement, swizzle-period alignment, move_base_to bounds,
commit) and HARDWARE.md "Swizzle modes" (the buffer start must be a multiple of the period,
counted in bytes).
"""

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.dtype import as_dtype
from tilemem.errors import AllocationError
from tilemem.layout import (
    ComposeLayout,
    SwizzleLayout,
    SwizzleMode,
    TileLayout,
    layout_swizzle_mode,
)
from tilemem.pool.smem import swizzle_period_bytes


def test_a_plain_layout_needs_no_period():
    assert swizzle_period_bytes(TileLayout.of((4, 8)), as_dtype("float32")) == 1
    no_xor = ComposeLayout(SwizzleLayout(3, 0, 3), TileLayout.of((64,)))
    assert swizzle_period_bytes(no_xor, as_dtype("bfloat16")) == 1


@pytest.mark.parametrize(
    ("swizzle", "dtype", "period"),
    [
        (SwizzleLayout(3, 3, 3), "bfloat16", 1024),  # 512 elements x 2 B
        (SwizzleLayout(0, 1, 1), "float4_e2m1fn", 2),  # 4 elements x 4 bits = 16 bits
        (SwizzleLayout(2, 1, 3), "float32", 256),  # 64 elements x 4 B
    ],
)
def test_swizzle_period_in_bytes(swizzle, dtype, period):
    layout = ComposeLayout(swizzle, TileLayout.of((swizzle.period,)))
    assert swizzle_period_bytes(layout, as_dtype(dtype)) == period


@pytest.mark.parametrize(
    ("swizzle", "bits"),
    [
        (SwizzleLayout(0, 1, 0), 12),  # 2 float6 elements: not whole bytes
        (SwizzleLayout(0, 1, 1), 24),  # 4 float6 elements: 3 bytes, not a power of two
    ],
)
def test_a_period_that_is_no_power_of_two_bytes_is_refused(swizzle, bits):
    layout = ComposeLayout(swizzle, TileLayout.of((swizzle.period,)))
    with pytest.raises(AllocationError, match=f"spans {bits} bits, not a power-of-two number"):
        swizzle_period_bytes(layout, as_dtype("float6_e2m3fn"))


def test_a_pool_may_be_carved_out_of_a_shared_memory_buffer_only():
    outer = SMEMPool(target="sm_100a")
    region = outer.alloc((1024,), "uint8", name="region")
    assert SMEMPool(region, name="inner").ptr is region
    tmem = TMEMPool(outer, 32, name="accum")
    acc = tmem.alloc((128, 32), "float32", name="acc")
    with pytest.raises(AllocationError, match=r"carves a pool out of a shared-memory Buffer"):
        SMEMPool(acc, name="bad")


def test_alloc_mma_names_are_checked_like_alloc():
    pool = SMEMPool()
    pool.alloc_mma((8, 64), "bfloat16", name="A")
    with pytest.raises(AllocationError, match="this CTA already has a buffer named 'A'"):
        pool.alloc_mma((8, 64), "bfloat16", name="A")
    with pytest.raises(AllocationError, match="buffer name"):
        pool.alloc_mma((8, 64), "bfloat16", name="1A")


def test_auto_swizzle_reads_the_row_of_a_staged_tile():
    # (2, 128, 32) bf16: 64-byte rows -> 64B (reading 128 as the row would pick 128B)
    buf = SMEMPool().alloc_mma((2, 128, 32), "bfloat16")
    assert layout_swizzle_mode(buf.layout) is SwizzleMode.SWIZZLE_64B_ATOM


def test_move_base_to_accepts_offsets_up_to_2_40():
    pool = SMEMPool()
    pool.move_base_to(1 << 40)
    assert pool.offset == 1 << 40


@pytest.mark.parametrize("offset", [-1, (1 << 40) + 1, 1.0])
def test_move_base_to_refuses_other_offsets(offset):
    with pytest.raises(
        AllocationError,
        match=r"move_base_to offset \(bytes\) must be an integer in \[0, 1099511627776\]",
    ):
        SMEMPool().move_base_to(offset)


def test_commit_accepts_sizes_up_to_2_40():
    assert SMEMPool().commit(1 << 40) == 1 << 40  # plan-only, no target: no capacity check


def test_an_empty_pool_commits_zero_bytes():
    assert SMEMPool().commit() == 0
    assert SMEMPool().commit(0) == 0
    assert SMEMPool(phases=("load", "store")).commit() == 0


@pytest.mark.parametrize("size", [-1, (1 << 40) + 1])
def test_commit_size_bounds(size):
    with pytest.raises(AllocationError, match=r"commit size \(bytes\) must be an integer in \[0, "):
        SMEMPool().commit(size)
