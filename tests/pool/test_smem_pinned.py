"""SMEMPool pinned at the edges the mutation run found unguarded.

Rules from docs/DESIGN.md#smem-pools (bump placement, swizzle-period alignment, move_base_to bounds,
commit) and docs/HARDWARE-RULES.md#swizzle-modes (the buffer start must be a multiple of the period,
counted in bytes).
"""

import warnings

import pytest

from tilemem import SMEMPool, T, TMEMPool
from tilemem.dtype import as_dtype
from tilemem.errors import AllocationError, CapacityError, TargetError, TilememWarning
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


def test_move_base_to_beyond_the_end_raises_the_high_water_mark():
    # docs/DESIGN.md#smem-pools: move_base_to(end); commit() reserves end bytes
    pool = SMEMPool()
    pool.move_base_to(100)
    assert pool.plan().smem.high_water == 100
    assert pool.commit() == 100


def test_a_pool_with_phases_starts_empty():
    pool = SMEMPool(phases=("load", "store"))
    assert pool.plan().smem.high_water == 0


def test_packed_buffers_report_no_padding():
    # two 100-byte buffers live in different phases share bytes [0, 100): no padding anywhere
    pool = SMEMPool(phases=("load", "store"))
    pool.alloc((100,), "uint8", name="a", live="load")
    pool.alloc((100,), "uint8", name="b", live="store")
    assert pool.commit() == 100
    entries = pool.plan().smem.entries
    assert [(e.name, e.offset, e.padding) for e in entries] == [("a", 0, 0), ("b", 0, 0)]


def test_the_plan_before_commit_shows_where_commit_packs():
    pool = SMEMPool(phases=("load", "store"))
    pool.alloc((100,), "uint8", name="a", live="load")
    pool.alloc((100,), "uint8", name="b", live="store")
    assert [(e.name, e.offset) for e in pool.plan().smem.entries] == [("a", 0), ("b", 0)]


def test_a_user_layout_without_strides_is_taken_as_given():
    buf = SMEMPool().alloc((4, 8), "float32", layout=TileLayout.of((4, 8), (1, 4)), name="cm")
    assert (buf.byte_offset, buf.nbytes) == (0, 128)


def test_a_zero_stride_repeats_rows():
    # strides (0, 1): every row reads the same 8 floats
    buf = SMEMPool().alloc((4, 8), "float32", strides=(0, 1), name="bcast")
    assert buf.layout.apply(3, 5) == {"m": 5}


def test_unknown_threads_assume_the_highest_pool_warp():
    # warps 0 and up to 3 reach the pools: at least 4 warps = 128 threads -> 2,048 // 128 = 16
    # CTAs x (128 + 128) columns = 4,096 > 512: a warning naming the estimate
    smem = SMEMPool(target="sm_100a")
    a = TMEMPool(smem, 128, name="a")
    b = TMEMPool(smem, 128, alloc_warp=1, dealloc_warp=3, name="b")
    smem.commit()
    a.commit()
    with pytest.warns(TilememWarning, match=r"\(threads unknown: at least 128 assumed\)"):
        b.commit()


def test_cta_group_2_on_any_pool_makes_ctas_cooperative():
    # 16 CTAs (128 threads) x 256 columns > 512 and one pool is cta_group::2: an error
    smem = SMEMPool(target="sm_100a", threads=128)
    a = TMEMPool(smem, 128, name="a")
    b = TMEMPool(smem, 128, cta_group=2, name="b")
    smem.commit()
    a.commit()
    with pytest.raises(CapacityError, match="wait on each other"):
        b.commit()


def test_residency_is_judged_once_every_pool_is_committed():
    # 2 CTAs (2,048 // 1,024 threads) x (256 + 256) columns = 1,024 > 512: one warning, when
    # the last pool commits
    smem = SMEMPool(target="sm_100a", threads=1024)
    a = TMEMPool(smem, 256, name="a")
    b = TMEMPool(smem, 256, name="b")
    smem.commit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a.commit()
    with pytest.warns(TilememWarning, match="2 x 512 = 1024 > 512"):
        b.commit()


def test_a_pool_in_a_kernel_takes_the_kernels_target_and_threads():
    # the kernel (sm_100a, 128 threads) fills in what the pool was not told, and saying
    # the same again is accepted
    pools = []

    @T.kernel(target="sm_100a", block=128)
    def k(x: T.Buffer((1,), "float32")):
        told = T.SMEMPool(target="sm_100a", threads=128, name="told")
        plain = T.SMEMPool(told.alloc((64,), "uint8", name="region"), name="plain")
        plain.commit()
        told.commit()
        pools.extend([told, plain])

    told, plain = pools
    assert (told.target.name, told.threads) == ("sm_100a", 128)
    assert (plain.target.name, plain.threads) == ("sm_100a", 128)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"target": "sm_90a"},
            TargetError,
            r"SMEMPool\(target='sm_90a'\) inside a kernel built for sm_100a: .* drop target=",
        ),
        (
            {"threads": 256},
            AllocationError,
            r"SMEMPool\(threads=256\) inside a kernel of 128 threads per block: drop threads=",
        ),
    ],
)
def test_a_pool_in_a_kernel_refuses_another_target_or_block(options, error, message):
    # a plan checked against sm_90a's 227 KiB, or a residency rule for 256 threads, would not
    # describe the sm_100a kernel of 128 threads it runs in
    with pytest.raises(error, match=message):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            T.SMEMPool(**options)


@pytest.mark.parametrize(("cluster", "cooperative"), [((1, 1, 1), False), ((2, 1, 1), True)])
def test_only_a_cluster_of_two_or_more_ctas_makes_them_cooperative(cluster, cooperative):
    # a 1 x 1 x 1 cluster is a lone CTA: nobody waits on a peer
    # (docs/DESIGN.md#capacity-and-residency)
    pools = []

    @T.kernel(target="sm_100a", block=128, cluster=cluster)
    def k(x: T.Buffer((1,), "float32")):
        smem = T.SMEMPool()
        smem.commit()
        pools.append(smem)

    assert pools[0].cooperative is cooperative


def test_a_pool_with_phases_leaves_the_swizzle_period_to_the_packer():
    # the cursor stands at byte 100 when B is allocated with align=16; commit() places B by its
    # 1024-byte period instead of refusing it: over A (other phase) at byte 0
    pool = SMEMPool(phases=("load", "store"))
    pool.alloc((100,), "uint8", name="A", live="load")
    b = pool.alloc_mma((8, 64), "bfloat16", align=16, name="B", live="store")
    pool.commit()
    assert (b.byte_offset, b.align) == (0, 1024)


def test_a_view_skips_the_cursor_check_and_sits_in_its_aligned_parent():
    # cursor at byte 5220 (100 + pad to 1024 + 4096 + 100), not a multiple of 1024; the view's
    # start is its parent's, byte 1024
    pool = SMEMPool()
    pool.alloc((100,), "uint8", name="a")
    parent = pool.alloc((4096,), "uint8", align=1024, name="parent")
    pool.alloc((100,), "uint8", name="b")
    view = pool.alloc_mma((8, 64), "bfloat16", align=16, name="view", alias_of=parent)
    assert (pool.offset, view.byte_offset) == (5220, 1024)


def test_a_pinned_tile_skips_the_cursor_check():
    # cursor at byte 100; offset=2048 is a multiple of the 1024-byte period, so it is accepted
    pool = SMEMPool()
    pool.alloc((100,), "uint8", name="a")
    tile = pool.alloc_mma((8, 64), "bfloat16", align=16, name="tile", offset=2048)
    assert tile.byte_offset == 2048


def test_strides_with_any_layout_name_are_refused():
    with pytest.raises(AllocationError, match="pass either strides or layout, not both"):
        SMEMPool().alloc((4, 8), "float32", strides=(8, 1), layout="row_major")
