"""Inputs that once hung: every public call answers within a second or refuses.

Times are CPU seconds of this process (other work on the machine does not count).
"""

import time

import pytest

from tilemem import SMEMPool, TMEMPool, TMEMStages
from tilemem.errors import AllocationError, CapacityError
from tilemem.plan import BufferRequest, solve_stages

LIMIT = 1.0


def timed(call):
    start = time.process_time()
    try:
        return call()
    finally:
        assert time.process_time() - start < LIMIT


def test_a_hundred_million_stage_buffer_is_refused_quickly():
    # 10^8 x 64 B stages + 10^8 barriers: 7.2 GB against 232,448 B; with 72 B per stage
    # the pipeline fits (232,448) // 72 = 3228 stages, found by bisection
    smem = SMEMPool(target="sm_90a")
    smem.alloc((10**8, 8, 8), "uint8")
    smem.alloc((10**8,), "uint64")
    with pytest.raises(CapacityError, match="3228 stages would fit on sm_90a"):
        timed(smem.commit)


def test_one_byte_stages_with_a_huge_stage_limit_are_solved_quickly():
    # 1 uint8 per stage: 232,448 stages fit sm_90a's 232,448 bytes, capped at max_stages
    requests = [BufferRequest("flag", (), "uint8", per_stage=True)]
    assert timed(lambda: solve_stages(requests, "sm_90a", max_stages=1 << 20)).stages == 232_448


def test_a_zero_size_per_stage_request_is_refused():
    with pytest.raises(CapacityError, match=r"\(0,\)"):
        BufferRequest("empty", (0,), per_stage=True)


def test_a_million_stride_zero_stages_are_refused_quickly():
    acc = TMEMPool(SMEMPool(), 512).alloc((128, 512))
    with pytest.raises(AllocationError):
        timed(lambda: TMEMStages(acc, 0, 1, stages=10**6, stride=0))


def test_plan_of_800_overlays_answers_quickly():
    # 800 buffers overlaid at byte 0: 800 x 799 / 2 = 319,600 overlapping pairs. The cubic
    # search this replaced took about 9 CPU seconds, the pairwise one about 0.1; the best of
    # three tries keeps a busy machine's cache misses from failing it
    smem = SMEMPool()
    for _ in range(800):
        smem.move_base_to(0)
        smem.alloc((64,), "uint8")
    seconds = []
    for _ in range(3):
        start = time.process_time()
        plan = smem.plan()
        seconds.append(time.process_time() - start)
        if seconds[-1] < LIMIT:
            break
    assert min(seconds) < LIMIT
    assert len(plan.smem.overlaps) == 800 * 799 // 2
    assert len(plan.smem.entries[0].overlaps) == 799


def test_whole_layout_evaluation_of_an_absurd_layout_is_refused():
    from tilemem.errors import LayoutError
    from tilemem.layout import SwizzleLayout, TileLayout

    with pytest.raises(LayoutError, match="1099511627776 elements"):
        timed(TileLayout.row_major((2**20, 2**20)).positions)
    with pytest.raises(LayoutError, match="apply_flat"):
        timed(SwizzleLayout(20, 20, 20).positions)
