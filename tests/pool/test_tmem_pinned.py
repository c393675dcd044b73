"""TMEM pool plan entries pinned: the lane runs a buffer's layout touches.

Data-path lanes from PTX ISA 9.0 "Matrix fragments for tcgen05.mma" as SPEC section 2.1 writes
them: D uses lanes 0-127; F takes 16 lanes in the lower half of each warp quarter
(lane = 32 (r // 16) + r % 16); B folds two column halves onto lanes 0-63 and 64-127.
"""

import pytest

from tilemem import SMEMPool, TMEMPool


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
