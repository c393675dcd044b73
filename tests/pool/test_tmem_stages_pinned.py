"""Exact boundaries of the TMEM pool's column cursor and of TMEMStages indices.

Expected values come from docs/HARDWARE-RULES.md (512 TMEM columns per SM, 32-bit cells)
and docs/DESIGN.md#smem-pools (move_base_to takes any column of the pool, its end included), worked
by hand.
"""

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import AllocationError
from tilemem.pool.tmem import TMEMStages


def pool() -> TMEMPool:
    return TMEMPool(SMEMPool(target="sm_100a"), 512)


def test_move_base_to_accepts_both_ends_of_the_pool():
    tmem = pool()
    # the end itself: docs/DESIGN.md#smem-pools, raises the high-water mark to 512
    tmem.move_base_to(512)
    tmem.move_base_to(0)  # column 0 is a column of the pool
    assert tmem.commit() == 512


@pytest.mark.parametrize("col", [-1, 513])
def test_move_base_to_refuses_one_past_either_end(col):
    with pytest.raises(AllocationError, match=rf"\[0, 512\], got {col}"):
        pool().move_base_to(col)


def test_stages_default_to_one_stage():
    tmem = pool()
    acc = tmem.alloc((128, 256), "float32")
    views = tmem.stages(acc, 0, 64)
    assert len(views) == 1  # stages=1 by default


def test_one_stage_with_stride_zero_is_accepted():
    acc = pool().alloc((128, 256), "float32")
    views = TMEMStages(acc, 0, 64, stages=1, stride=0)  # a single stage repeats nothing
    assert len(views) == 1


def test_stage_zero_and_the_last_stage_are_in_range():
    # 4 x 64 fp32 columns = 256 of the buffer's 512: a fifth stage would still fit in the
    # buffer, so only the stage bound refuses it
    acc = pool().alloc((128, 512), "float32")
    views = TMEMStages(acc, 0, 64, stages=4)
    assert len(views) == 4
    assert views[0] is not None
    assert views.view(3) is not None
    with pytest.raises(AllocationError):
        views.view(4)  # stages 0..3
    with pytest.raises(AllocationError, match=r"stage 4 out of range for 4 stages"):
        views[4]


def test_a_stage_narrowed_with_an_explicit_step_of_one_is_accepted():
    acc = pool().alloc((128, 256), "float32")
    assert TMEMStages(acc, 0, 64, stages=2)[1, 0:32:1].shape == (128, 32)


def test_view_defaults_to_the_whole_stage():
    acc = pool().alloc((128, 256), "float32", name="acc")
    view = TMEMStages(acc, 0, 64, stages=2).view(1)
    # stage 1 = columns [64, 128) of acc, all 64 of them
    assert (view.name, view.shape, view.col_offset, view.cols) == ("acc[1]", (128, 64), 64, 64)


def test_a_narrowed_view_names_its_columns():
    acc = pool().alloc((128, 256), "float32", name="acc")
    views = TMEMStages(acc, 0, 64, stages=2)
    assert views.view(1, 0, 32).name == "acc[1][0:32]"
    assert views.view(1, 1, 64).name == "acc[1][1:64]"


def test_view_start_runs_up_to_the_last_column_of_the_stage():
    acc = pool().alloc((128, 256), "float32")
    views = TMEMStages(acc, 0, 64, stages=2)
    assert views.view(0, 63).shape == (128, 1)  # columns [63, 64)
    with pytest.raises(
        AllocationError, match=r"view start must be an integer in \[0, 63\], got 64"
    ):
        views.view(0, 64)


def test_view_stop_is_at_least_one_past_start():
    acc = pool().alloc((128, 256), "float32")
    views = TMEMStages(acc, 0, 64, stages=2)
    assert views.view(0, 5, 6).shape == (128, 1)  # one column
    with pytest.raises(AllocationError, match=r"view stop must be an integer in \[6, 64\], got 5"):
        views.view(0, 5, 5)


def test_a_stage_view_takes_128_lanes_of_4_byte_cells_per_column_and_any_column():
    # a 64-column float32 stage: 64 x 128 x 4 = 32768 bytes
    acc = pool().alloc((128, 256), "float32")
    view = TMEMStages(acc, 0, 64, stages=2).view(1)
    assert (view.nbytes, view.align) == (32768, 1)


def test_a_16_bit_stage_starting_inside_a_column_keeps_that_column():
    # (64, 64) float16, lane = row: element column c is in 32-bit column c // 2. Stage 0 starts
    # at element 1, the upper half of column 0: the view starts at column 0 with the one-element
    # offset in its layout, and spans elements 1..2 = ceil(3 x 16 / 32) = 2 columns
    tmem = pool()
    tmem.alloc((128, 8), "float32")  # the buffer starts at column 8
    half = tmem.alloc((64, 64), "float16")
    view = TMEMStages(half, 1, 2).view(0)
    assert (view.col_offset, view.cols) == (8, 2)
    assert view.layout.offset == {"TCol": 1}


def test_a_16_bit_stage_on_a_whole_column_moves_the_column_offset():
    # element 8 of a float16 lane-row buffer = 8 x 16 bits = column 4
    tmem = pool()
    half = tmem.alloc((64, 64), "float16")
    view = TMEMStages(half, 8, 8).view(0)
    assert (view.col_offset, view.cols) == (4, 4)
    assert view.layout.offset.get("TCol", 0) == 0


def test_stages_need_a_buffer_with_a_tile_layout():
    from tilemem.dtype import as_dtype
    from tilemem.layout import SwizzleLayout
    from tilemem.pool import TMEM, Buffer

    tmem = pool()
    odd = Buffer(
        name="odd",
        shape=(128, 64),
        dtype=as_dtype("float32"),
        scope=TMEM,
        layout=SwizzleLayout(0, 3),
        nbytes=32768,
        align=1,
        col_offset=0,
        cols=64,
        pool=tmem,
    )
    with pytest.raises(AllocationError, match="TMEMStages needs a TMEM buffer with a TileLayout"):
        TMEMStages(odd, 0, 64)
