"""TMEM pool pinned: constructor bounds, column counts, placement and the plan's totals.

Expected values are worked by hand from docs/HARDWARE-RULES.md (128 lanes x 512 columns of 32-bit
cells; tcgen05.alloc takes a power of two of columns in [32, 512]; at most 1024 threads = 32 warps
per block, warp w = threads 32w..32w+31) and docs/DESIGN.md#tmem-pools and #lifetimes.

Data-path lanes from PTX ISA 9.0 "Matrix fragments for tcgen05.mma" as docs/DESIGN.md#named-layouts
writes them: D uses lanes 0-127; F takes 16 lanes in the lower half of each warp quarter
(lane = 32 (r // 16) + r % 16); B folds two column halves onto lanes 0-63 and 64-127.
"""

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.dtype import as_dtype
from tilemem.errors import AllocationError, TMEMOverflowError
from tilemem.plan.model import LayoutKind
from tilemem.pool import SMEM, Buffer


@pytest.mark.parametrize(
    ("datapath", "shape", "lanes"),
    [
        ("D", (128, 64), ((0, 128),)),
        ("F", (64, 64), ((0, 16), (32, 48), (64, 80), (96, 112))),
        ("B", (64, 64), ((0, 128),)),
        ("G", (32, 64), ((0, 128),)),
    ],
)
def test_plan_entries_list_the_lane_runs(datapath, shape, lanes):
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, 512, name="accum")
    tmem.alloc(shape, "float32", datapath=datapath, name="acc")
    (entry,) = smem.plan().tmem[0].entries
    assert entry.lanes == lanes


# -- the constructor ---------------------------------------------------------------------------


def test_auto_total_cols_stays_auto_until_commit():
    tmem = TMEMPool(SMEMPool(), "auto")
    assert tmem.total_cols == "auto"  # docs/DESIGN.md#tmem-pools: "auto" is fixed at commit()


def test_the_total_cols_hint_starts_at_one_column():
    # 1 column: the smallest power of two tcgen05.alloc takes is 32
    with pytest.raises(AllocationError, match=r"\[32, 512\]: use 32, or 'auto'"):
        TMEMPool(SMEMPool(), 1)


def test_zero_total_cols_gets_no_size_hint():
    # 0 columns is no request to round up: the message states the rule and nothing else
    with pytest.raises(AllocationError, match=r"in \[32, 512\], or 'auto'$"):
        TMEMPool(SMEMPool(), 0)


@pytest.mark.parametrize("warp", [0, 31])
def test_dealloc_warp_may_be_any_warp_of_a_full_block(warp):
    # 1024 threads per block = warps 0..31
    assert TMEMPool(SMEMPool(), 32, alloc_warp=5, dealloc_warp=warp).dealloc_warp == warp


def test_dealloc_warp_32_is_refused():
    with pytest.raises(AllocationError, match=r"dealloc_warp must be an integer in \[0, 31\]"):
        TMEMPool(SMEMPool(), 32, dealloc_warp=32)


def test_a_block_of_33_threads_has_two_warps():
    # threads 0..31 are warp 0, thread 32 is warp 1: ceil(33 / 32) = 2 warps
    with pytest.raises(
        AllocationError, match=r"alloc_warp=2 is outside the block: 33 threads are warps 0\.\.1,"
    ):
        TMEMPool(SMEMPool(threads=33), 32, alloc_warp=2)


def test_a_slot_without_an_element_is_refused():
    smem = SMEMPool()
    empty = Buffer(
        name="empty",
        shape=(0,),
        dtype=as_dtype("uint32"),
        scope=SMEM,
        layout=None,
        nbytes=0,
        align=4,
        byte_offset=0,
        pool=smem,
    )
    with pytest.raises(AllocationError, match="tmem_addr must be a 32-bit shared-memory buffer"):
        TMEMPool(smem, 32, tmem_addr=empty)


# -- columns of a buffer -----------------------------------------------------------------------


def test_cols_equal_to_the_footprint_is_accepted():
    # (128, 64) float32 in data path D spans 64 columns
    buf = TMEMPool(SMEMPool(), 512).alloc((128, 64), "float32", cols=64)
    assert buf.cols == 64


def test_cols_given_with_a_datapath_is_kept():
    # the footprint of (128, 64) float32 in D is 64 columns; cols=128 reserves more
    tmem = TMEMPool(SMEMPool(), 512)
    acc = tmem.alloc((128, 64), "float32", datapath="D", cols=128)
    after = tmem.alloc((128, 32), "float32")
    assert (acc.cols, after.col_offset) == (128, 128)


def test_a_128_row_buffer_defaults_to_data_path_d():
    buf = TMEMPool(SMEMPool(), 512).alloc((128, 64), "float32")
    assert (buf.layout_kind, buf.layout_detail, buf.layout_name) == (
        LayoutKind.TMEM_DATAPATH,
        "D",
        "datapath D",
    )


def test_leading_dimensions_of_the_default_layout_follow_each_other_along_the_columns():
    # (2, 3, 64, 16) float32: 2 x 3 = 6 slices of 16 columns side by side = 96 columns;
    # slice (i, j) starts at column (3 i + j) * 16, so the last one, (1, 2), at 80
    buf = TMEMPool(SMEMPool(), 512).alloc((2, 3, 64, 16), "float32")
    assert buf.cols == 96
    assert buf.layout.apply(1, 2, 0, 0, shape=buf.shape) == {"TLane": 0, "TCol": 80}


def test_a_custom_layout_is_labelled_with_its_strides():
    from tilemem.layout import TileLayout

    layout = TileLayout.of((64, 32), [(1, "TLane"), (1, "TCol")])
    buf = TMEMPool(SMEMPool(), 512).alloc((64, 32), "float32", layout=layout)
    assert buf.layout_kind == LayoutKind.CUSTOM
    assert "1@TLane" in buf.layout_name and "1@TCol" in buf.layout_name


def test_a_buffer_takes_128_lanes_of_4_byte_cells_per_column_and_any_column():
    # 64 columns x 128 lanes x 4 bytes = 32768 bytes; columns need no alignment
    buf = TMEMPool(SMEMPool(), 512).alloc((128, 64), "float32")
    assert (buf.nbytes, buf.align) == (32768, 1)


def test_one_column_buffers_are_placed_on_consecutive_columns():
    tmem = TMEMPool(SMEMPool(), 512)
    first = tmem.alloc((128, 1), "float32")
    second = tmem.alloc((128, 1), "float32")
    assert (first.col_offset, second.col_offset) == (0, 1)


def test_one_column_buffers_live_together_are_packed_on_consecutive_columns():
    smem = SMEMPool(phases=("load", "store"))
    tmem = TMEMPool(smem, 32)
    first = tmem.alloc((128, 1), "float32")
    second = tmem.alloc((128, 1), "float32")
    tmem.commit()
    # both live in every phase: columns 0 and 1, 2 columns in all
    assert sorted([first.col_offset, second.col_offset]) == [0, 1]
    assert smem.plan().tmem[0].high_water == 2


def test_scale_factor_names_are_checked_before_use():
    tmem = TMEMPool(SMEMPool(), 512)
    tmem.alloc((128, 32), "float32", name="sf")
    with pytest.raises(AllocationError, match="already has a buffer named 'sf'"):
        tmem.alloc_sf((128, 4), "float8_e8m0fnu", sf_per_mma=4, name="sf")


def test_a_view_of_a_later_buffer_starts_inside_it():
    # no phases: acc2 is at columns [64, 128), so a view 16 columns into it starts at 80
    tmem = TMEMPool(SMEMPool(), 512)
    tmem.alloc((128, 64), "float32", name="acc1")
    acc2 = tmem.alloc((128, 64), "float32", name="acc2")
    view = tmem.alloc((128, 32), "float32", alias_of=acc2, offset=16)
    assert view.col_offset == 80


def test_a_too_wide_buffer_in_a_pool_with_phases_names_its_own_columns():
    # packed at commit, so only the buffer itself must fit: columns [0, 1024) of 512
    tmem = TMEMPool(SMEMPool(phases=("a", "b")), 512)
    with pytest.raises(TMEMOverflowError, match=r"needs columns \[0, 1024\) but total_cols is 512"):
        tmem.alloc((128, 1024), "float32")


# -- commit -------------------------------------------------------------------------------------


def test_auto_rounds_one_column_past_a_power_of_two_up_to_the_next():
    # 33 columns: the smallest power of two >= 33 is 64
    tmem = TMEMPool(SMEMPool(), "auto")
    tmem.alloc((128, 33), "float32")
    assert tmem.commit() == 64


def test_a_packing_that_fills_the_pool_exactly_commits():
    # two 32-column buffers live together need 64 columns: exactly total_cols
    tmem = TMEMPool(SMEMPool(phases=("load", "store")), 64)
    tmem.alloc((128, 32), "float32")
    tmem.alloc((128, 32), "float32")
    assert tmem.commit() == 64


# -- the plan ------------------------------------------------------------------------------------


def test_the_plan_high_water_is_the_last_column_used():
    # buffers at [0, 64) and [64, 128)
    smem = SMEMPool()
    tmem = TMEMPool(smem, 512)
    tmem.alloc((128, 64), "float32")
    tmem.alloc((128, 64), "float32")
    assert smem.plan().tmem[0].high_water == 128


def test_the_plan_high_water_includes_a_move_beyond_the_buffers():
    # docs/DESIGN.md#smem-pools: move_base_to(end) reserves up to end, here 512 past a 64-column
    # buffer
    smem = SMEMPool()
    tmem = TMEMPool(smem, 512)
    tmem.alloc((128, 64), "float32")
    tmem.move_base_to(512)
    assert smem.plan().tmem[0].high_water == 512


def test_a_pool_with_phases_and_no_buffers_uses_no_columns():
    smem = SMEMPool(phases=("load", "store"))
    TMEMPool(smem, 32)
    assert smem.plan().tmem[0].high_water == 0


def test_the_plan_before_commit_shows_where_commit_would_pack():
    # a lives in "load", b in "store": never live together, so both go to column 0;
    # lower bound = max(64 in load, 64 in store) = 64; bump placement would need 64 + 64
    smem = SMEMPool(phases=("load", "store"))
    tmem = TMEMPool(smem, 512)
    tmem.alloc((128, 64), "float32", name="a", live="load")
    tmem.alloc((128, 64), "float32", name="b", live="store")
    plan = smem.plan().tmem[0]
    assert [e.offset for e in plan.entries] == [0, 0]
    assert (plan.high_water, plan.lower_bound, plan.bump) == (64, 64, 128)
