"""Each buffer carries how its pool chose the layout as data; the plan's label derives from it."""

import json

from tilemem import SMEMPool, TMEMPool
from tilemem.layout import TileLayout
from tilemem.plan import LayoutKind, MemoryPlan
from tilemem.plan.serialize import from_data, to_data


def _pools():
    smem = SMEMPool(target="sm_100a", threads=1024)  # 2 CTAs x 256 columns fit TMEM
    plain = smem.alloc((8, 8), "float32", name="plain")
    strided = smem.alloc((4, 8), "float32", strides=(16, 1), name="strided")
    custom = smem.alloc((4, 8), "float32", layout=TileLayout.of((4, 8), (1, 4)), name="custom")
    mma = smem.alloc_mma((64, 64), "bfloat16", "128B", name="mma")
    tmem = TMEMPool(smem, 256, name="t")
    acc = tmem.alloc((128, 128), "float32", name="acc")
    rows = tmem.alloc((64, 32), "float32", name="rows")
    sf = tmem.alloc_sf((128, 4), "float8_e4m3fn", sf_per_mma=4, name="sf")
    stage = tmem.stages(acc, 0, 64, stages=2)[1]
    return (
        smem,
        tmem,
        {
            plain: LayoutKind.ROW_MAJOR,
            strided: LayoutKind.STRIDED,
            custom: LayoutKind.CUSTOM,
            mma: LayoutKind.MMA_OPERAND,
            # (128, n) defaults to data path D (docs/DESIGN.md#named-layouts)
            acc: LayoutKind.TMEM_DATAPATH,
            rows: LayoutKind.TMEM_LANE_ROW,
            sf: LayoutKind.SCALE_FACTOR,
            stage: LayoutKind.STAGE_VIEW,
        },
    )


def test_each_allocation_path_records_its_layout_kind():
    _, _, expected = _pools()
    for buf, kind in expected.items():
        assert buf.layout_kind is kind, buf.name


def test_labels_are_the_kind_and_its_detail():
    _, _, expected = _pools()
    labels = {buf.name: buf.layout_name for buf in expected}
    assert labels["plain"] == "row-major"
    assert labels["strided"] == "strided (16, 1)"
    assert labels["custom"] == "(4:1@m, 8:4@m)"  # extent:stride@axis per dimension
    assert labels["mma"] == "mma 128B"
    assert labels["acc"] == "datapath D"
    assert labels["rows"] == "lane=row"
    assert labels["sf"] == "sf x4/mma"
    assert labels["acc[1]"] == "datapath D stage 1"


def test_plan_entries_carry_the_kind_through_json():
    smem, tmem, expected = _pools()
    tmem.commit()
    smem.commit()
    plan = smem.plan()
    kinds = {e.name: e.layout_kind for pool in plan.pools for e in pool.entries}
    for buf, kind in expected.items():
        if buf.name in kinds:  # stage views are listed as views, not entries
            assert kinds[buf.name] is kind, buf.name
    data = json.loads(json.dumps(plan.to_dict()))
    entry = next(e for pool in data["pools"] for e in pool["entries"] if e["name"] == "mma")
    assert entry["layout_kind"] == "mma" and entry["layout"] == "mma 128B"
    assert MemoryPlan.from_dict(data) == plan


def test_every_kind_round_trips_as_data():
    for kind in LayoutKind:
        assert from_data(LayoutKind, json.loads(json.dumps(to_data(kind)))) is kind
