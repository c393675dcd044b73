"""Bookkeeping shared by the pools, pinned: the TMEM lanes a plan entry reports.

Block-scale factors (docs/DESIGN.md#named-layouts, sf_tmem_layout): TLane = r % 32, replicated at
+32, +64 and +96, so every lane quarter holds a copy and the buffer occupies all 128 lanes.
"""

from tilemem import SMEMPool, TMEMPool


def test_scale_factor_replicas_occupy_every_lane_quarter():
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, 32, name="t")
    tmem.alloc_sf((128, 4), "float8_e8m0fnu", sf_per_mma=1, name="sfa")
    (entry,) = smem.plan().pools[1].entries
    assert entry.lanes == ((0, 128),)
