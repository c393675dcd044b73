"""Exact boundaries of the TMEM pool's column cursor and of TMEMStages indices.

Expected values come from HARDWARE.md (512 TMEM columns per SM, 32-bit cells) and SPEC
section 3 (move_base_to takes any column of the pool, its end included), worked by hand.
"""

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import AllocationError
from tilemem.pool.tmem import TMEMStages


def pool() -> TMEMPool:
    return TMEMPool(SMEMPool(target="sm_100a"), 512)


def test_move_base_to_accepts_both_ends_of_the_pool():
    tmem = pool()
    tmem.move_base_to(512)  # the end itself: SPEC 3, raises the high-water mark to 512
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
