"""The text report, line by line, for small plans built by hand.

Every expected line is worked out from the report's rules: a table per pool whose columns are
two spaces apart, numbers (offset, size, align, padding) right-aligned, text left-aligned, the
header underlined with dashes, trailing spaces dropped; then the totals, the TMEM allocation,
the stage views and a column map at most 64 characters wide.
"""

import pytest

from tilemem.plan.model import (
    MemoryPlan,
    PlanEntry,
    PoolPlan,
    StageViews,
    TMEMAllocation,
)


def smem_entry(name, offset, length, align, padding, dtype, shape, layout, **more):
    return PlanEntry(
        name, "shared.dyn", offset, length, align, padding, dtype, shape, layout, **more
    )


def tmem_entry(name, offset, length, dtype, shape, layout, **more):
    return PlanEntry(name, "tmem", offset, length, 1, 0, dtype, shape, layout, **more)


def test_smem_report_with_target_right_aligns_the_numbers():
    smem = PoolPlan(
        "smem",
        "shared.dyn",
        "bytes",
        (
            smem_entry("flags", 0, 3, 1, 0, "uint8", (3,), "row-major"),
            smem_entry("A", 1024, 16384, 1024, 1021, "bfloat16", (2, 64, 64), "mma 128B"),
            smem_entry("bar", 17408, 16, 8, 0, "uint64", (2,), "row-major"),
        ),
        high_water=17424,
        committed=17424,
    )
    # column widths: name 5 ("flags"), scope 10 ("shared.dyn"), offset 6 (header), bytes 5,
    # align 5, padding 7 (header), dtype 8 ("bfloat16"), shape 7 ("2x64x64"), layout 9
    # ("row-major"), overlaps 8 (header); padding 1021 = 1024 - 3
    assert MemoryPlan((smem,), target="sm_100a").format().splitlines() == [
        "target sm_100a",
        "",
        "smem (shared.dyn)",
        "name   scope       offset  bytes  align  padding  dtype     shape    layout     overlaps",
        "-----  ----------  ------  -----  -----  -------  --------  -------  ---------  --------",
        "flags  shared.dyn       0      3      1        0  uint8     3        row-major",
        "A      shared.dyn    1024  16384   1024     1021  bfloat16  2x64x64  mma 128B",
        "bar    shared.dyn   17408     16      8        0  uint64    2        row-major",
        "high-water 17424 bytes, committed 17424 bytes, padding 1021 bytes",
    ]


def test_empty_uncommitted_pool_shows_an_empty_row():
    smem = PoolPlan("smem", "shared.dyn", "bytes", (), high_water=0, committed=None)
    # the name column is as wide as "(empty)", 7; no target: the report starts at the pool
    assert MemoryPlan((smem,)).format().splitlines() == [
        "smem (shared.dyn)",
        "name     scope  offset  bytes  align  padding  dtype  shape  layout  overlaps",
        "-------  -----  ------  -----  -----  -------  -----  -----  ------  --------",
        "(empty)",
        "high-water 0 bytes, not committed, padding 0 bytes",
    ]


def tmem_plan() -> MemoryPlan:
    smem = PoolPlan(
        "smem",
        "shared.dyn",
        "bytes",
        (smem_entry("tmem_addr", 0, 4, 4, 0, "uint32", (1,), "row-major"),),
        high_water=4,
        committed=4,
    )
    tmem = PoolPlan(
        "tmem",
        "tmem",
        "cols",
        (
            tmem_entry("acc", 0, 256, "float32", (128, 256), "datapath D", overlaps=("P",)),
            tmem_entry("P", 64, 64, "bfloat16", (128, 128), "datapath D", overlaps=("acc",)),
            tmem_entry("sf", 256, 16, "float8_e4m3fn", (128, 16), "sf x4/mma"),
        ),
        high_water=272,
        committed=512,
        moves=((256, 64), (128, 256)),
        allocation=TMEMAllocation(1, 1, 2, "tmem_addr", 0),
        stages=(StageViews("acc", ((0, 128), (128, 256))),),
    )
    return MemoryPlan((smem, tmem))


def test_tmem_report_has_allocation_stages_and_column_map():
    lines = tmem_plan().format().splitlines()
    assert lines[5:] == [
        "",  # one blank line between pools
        "tmem (tmem)",
        "name  scope  offset  cols  align  padding  dtype          shape    layout      overlaps",
        "----  -----  ------  ----  -----  -------  -------------  -------  ----------  --------",
        "acc   tmem        0   256      1        0  float32        128x256  datapath D  P",
        "P     tmem       64    64      1        0  bfloat16       128x128  datapath D  acc",
        "sf    tmem      256    16      1        0  float8_e4m3fn  128x16   sf x4/mma",
        "high-water 272 cols, committed 512 cols, padding 0 cols, 2 move_base_to",
        "alloc: cta_group::1, warp 1 allocates, warp 2 deallocates, slot tmem_addr@0",
        "stages of acc: [0] cols 0..128, [1] cols 128..256",
        # 512 columns / 64 characters = 8 per character: acc [0, 256) is characters 0..31,
        # P [64, 128) characters 8..15 (over acc: '*'), sf [256, 272) characters 32..33
        "TMEM columns 0..512 (8 per character):",
        "|" + "A" * 8 + "*" * 8 + "A" * 16 + "C" * 2 + "." * 30 + "|",
        "  A=acc[0:256)  B=P[64:128)  C=sf[256:272)",
    ]
    # the SMEM pool has entries but no column map: its report is its table and totals
    assert lines[:5] == [
        "smem (shared.dyn)",
        "name       scope       offset  bytes  align  padding  dtype   shape  layout     overlaps",
        "---------  ----------  ------  -----  -----  -------  ------  -----  ---------  --------",
        "tmem_addr  shared.dyn       0      4      4        0  uint32  1      row-major",
        "high-water 4 bytes, committed 4 bytes, padding 0 bytes",
    ]


@pytest.mark.parametrize(
    "high_water, title, row",
    [
        # uncommitted: the map covers the high-water mark, but never fewer than 32 columns
        (16, "TMEM columns 0..32 (1 per character):", "|" + "A" * 16 + "." * 16 + "|"),
        # 130 columns need ceil(130 / 64) = 3 per character, ceil(130 / 3) = 44 characters
        (130, "TMEM columns 0..130 (3 per character):", "|" + "A" * 44 + "|"),
    ],
)
def test_uncommitted_tmem_map_covers_the_high_water_mark(high_water, title, row):
    tmem = PoolPlan(
        "tmem",
        "tmem",
        "cols",
        (tmem_entry("acc", 0, high_water, "float32", (128, high_water), "lane=row"),),
        high_water=high_water,
        committed=None,
    )
    lines = MemoryPlan((tmem,)).format().splitlines()
    assert lines[-3:] == [title, row, f"  A=acc[0:{high_water})"]


def test_tmem_pool_without_buffers_has_no_column_map():
    tmem = PoolPlan("tmem", "tmem", "cols", (), high_water=0, committed=32)
    assert MemoryPlan((tmem,)).format().splitlines()[-1] == (
        "high-water 0 cols, committed 32 cols, padding 0 cols"
    )


def one_smem_buffer(committed, high_water) -> PoolPlan:
    return PoolPlan(
        "smem",
        "shared.dyn",
        "bytes",
        (smem_entry("big", 0, high_water, 16, 0, "uint8", (high_water,), "row-major"),),
        high_water=high_water,
        committed=committed,
    )


def test_occupancy_section_needs_threads_and_target():
    pool = one_smem_buffer(17424, 17424)
    with_threads = MemoryPlan((pool,), target="sm_100a", threads=128).format().splitlines()
    # sm_100a: 228 KiB = 233472 bytes per SM, 1 KiB reserved per block, 2048 threads and
    # 32 blocks per SM (CUDA C++ Programming Guide, compute capability 10.0):
    # 233472 // (17424 + 1024) = 12, 2048 // 128 = 16, 32 block slots
    assert with_threads[-6:] == [
        "",
        "occupancy (128 threads per CTA)",
        "  12 CTA(s) per SM on sm_100a with 128 threads, bound by shared memory",
        "  shared memory allows 12",
        "  threads       allows 16",
        "  block slots   allows 32",
    ]
    # threads without a target: no occupancy section, the report ends with the totals
    no_target = MemoryPlan((pool,), threads=128).format().splitlines()
    assert no_target[-1] == "high-water 17424 bytes, committed 17424 bytes, padding 0 bytes"


def test_occupancy_beyond_the_target_capacity_is_reported_in_place():
    # an uncommitted pool of 240000 bytes on sm_100a (at most 232448 per block):
    # 240000 - 232448 = 7552 bytes must go
    plan = MemoryPlan((one_smem_buffer(None, 240000),), target="sm_100a", threads=128)
    assert plan.format().splitlines()[-4:] == [
        "high-water 240000 bytes, not committed, padding 0 bytes",
        "",
        "occupancy (128 threads per CTA)",
        "  240000 bytes of shared memory per block exceed sm_100a's 232448: "
        "remove at least 7552 bytes",
    ]
