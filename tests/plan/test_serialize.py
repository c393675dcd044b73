"""The plan's JSON form: data throughout, a schema version, and an exact round trip."""

import contextlib
import json
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import PlanFileError, TilememError
from tilemem.examples import EXAMPLES
from tilemem.layout import tmem_datapath_layout
from tilemem.plan import MemoryPlan
from tilemem.plan.serialize import PLAN_SCHEMA, from_data, to_data


def through_json(plan: MemoryPlan) -> dict:
    return json.loads(json.dumps(plan.to_dict()))


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_plans_round_trip_through_json(name):
    example = EXAMPLES[name]
    plan = example.build().plan().with_threads(example.threads).with_advice()
    data = through_json(plan)
    assert MemoryPlan.from_dict(data) == plan
    assert MemoryPlan.from_dict(data).to_dict() == data


def test_occupancy_is_data_with_the_hardware_limits():
    example = EXAMPLES["hopper-gemm"]
    data = through_json(example.build().plan().with_threads(384))
    # H100 (sm_90): 228 KiB of SMEM per SM, 1 KiB reserved per block, 2048 threads and 32 blocks
    # per SM (CUDA C Programming Guide, compute capability 9.0 table)
    assert data["occupancy"] == {
        "target": "sm_90a",
        "threads": 384,
        "smem_bytes": 196672,  # A + B stages and barriers; C is packed over A
        "tmem_cols": 0,
        "limits": {
            "shared memory": 233472 // (196672 + 1024),
            "threads": 2048 // 384,
            "block slots": 32,
        },
        "ctas_per_sm": 1,
        "binding": "shared memory",
    }
    assert data["schema"] == PLAN_SCHEMA and data["threads"] == 384


def test_no_occupancy_without_threads():
    data = through_json(EXAMPLES["hopper-gemm"].build().plan())
    assert "occupancy" not in data and data["threads"] is None


def test_padding_advice_is_data():
    smem = SMEMPool(target="sm_90a")
    smem.alloc((1,), "uint32", name="flag")  # 4 bytes at 0
    smem.alloc_mma((64, 64), "bfloat16", "128B", name="A")  # 8192 bytes at 1024
    smem.commit()
    data = through_json(smem.plan().with_advice())
    # A first: 8192 bytes at 0, flag at 8192: high-water 8196 instead of 1024 + 8192
    assert data["advice"] == {
        "pool": "smem",
        "padding": 1020,
        "high_water": 9216,
        "overlays": False,
        "order": ["A", "flag"],
        "best_high_water": 8196,
    }


def test_tmem_allocation_and_stage_views_are_data():
    smem = SMEMPool(target="sm_100a", threads=1024)  # 2 CTAs x 256 columns fit TMEM
    tmem = TMEMPool(smem, 256, cta_group=2, alloc_warp=3, name="t")
    acc = tmem.alloc((128, 256), "float32", datapath="D", name="acc")
    tmem.stages(acc, col_start=0, width=64, stages=2, stride=128)
    smem.commit()
    tmem.commit()
    pool = through_json(smem.plan())["pools"][1]
    assert pool["allocation"] == {
        "cta_group": 2,
        "alloc_warp": 3,
        "dealloc_warp": 3,
        "slot": "t_addr",
        "slot_offset": 0,
    }
    assert pool["stages"] == [{"buffer": "acc", "spans": [[0, 64], [128, 192]]}]


@pytest.mark.parametrize(
    ("letter", "rows", "sub_slab", "lanes"),
    [
        # lane formulas of the tcgen05 data paths (PTX ISA, "Matrix fragments for tcgen05.mma")
        ("D", 128, 0, [[0, 128]]),
        ("B", 64, 0, [[0, 128]]),  # lane = r + 64 * (c // (cols/2))
        ("F", 64, 0, [[0, 16], [32, 48], [64, 80], [96, 112]]),  # 32*(r//16) + r%16
        ("F", 64, 1, [[16, 32], [48, 64], [80, 96], [112, 128]]),  # + 16 * sub_slab
        ("G", 32, 0, [[0, 128]]),  # lane = r + 32 * (c // (cols/4))
    ],
)
def test_entries_carry_the_tmem_lanes_of_their_data_path(letter, rows, sub_slab, lanes):
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, 128)
    layout = tmem_datapath_layout(letter, rows, 64, sub_slab=sub_slab)
    tmem.alloc((rows, 64), "float32", layout=layout, name="acc")
    entry = through_json(smem.plan())["pools"][1]["entries"][0]
    assert entry["lanes"] == lanes


def test_scale_factors_are_replicated_over_every_lane_quarter():
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, 128)
    tmem.alloc_sf((32, 16), "float8_e4m3fn", sf_per_mma=4, name="sf")
    # rows 0..31 live in lanes 0..31 and are copied to +32, +64, +96
    assert smem.plan().entry("sf").lanes == ((0, 128),)


@pytest.mark.parametrize(("mode", "value"), [("128B", 3), ("64B", 2), ("32B", 1), ("none", 0)])
def test_entries_carry_the_swizzle_mode(mode, value):
    smem = SMEMPool()
    smem.alloc_mma((8, 64), "bfloat16", mode, name="A")
    smem.alloc((4,), "uint64", name="bar")
    plan = smem.plan()
    assert (plan.entry("A").swizzle, plan.entry("bar").swizzle) == (value, 0)


def test_wrong_schema_is_refused():
    data = through_json(EXAMPLES["hopper-gemm"].build().plan())
    data["schema"] = PLAN_SCHEMA + 1
    with pytest.raises(PlanFileError, match=f"plan schema {PLAN_SCHEMA + 1}; this tilemem reads"):
        MemoryPlan.from_dict(data)
    del data["schema"]
    with pytest.raises(PlanFileError, match="'schema' key"):
        MemoryPlan.from_dict(data)


def test_unknown_key_is_refused_with_its_path():
    data = through_json(EXAMPLES["hopper-gemm"].build().plan())
    data["pools"][0]["entries"][2]["colour"] = "red"
    with pytest.raises(
        PlanFileError, match=r"plan\.pools\[0\]\.entries\[2\]: unknown key\(s\) colour"
    ):
        MemoryPlan.from_dict(data)


def test_wrong_type_is_refused_with_its_path():
    data = through_json(EXAMPLES["hopper-gemm"].build().plan())
    data["pools"][0]["entries"][1]["offset"] = "65536"
    with pytest.raises(PlanFileError, match=r"entries\[1\]\.offset: expected int, got '65536'"):
        MemoryPlan.from_dict(data)
    data["pools"][0]["entries"][1]["offset"] = True
    with pytest.raises(PlanFileError, match="expected int, got True"):
        MemoryPlan.from_dict(data)


def test_missing_field_is_refused():
    data = through_json(EXAMPLES["hopper-gemm"].build().plan())
    del data["pools"][0]["high_water"]
    with pytest.raises(PlanFileError, match="PoolPlan needs the key 'high_water'"):
        MemoryPlan.from_dict(data)


@dataclass(frozen=True)
class _Inner:
    at: tuple[int, int]
    note: str | None = None


@dataclass(frozen=True)
class _Outer:
    items: tuple[_Inner, ...]
    table: dict[str, int]
    ratio: float = 0.5


def test_any_dataclass_of_plain_fields_round_trips():
    # a field added to a plan dataclass needs no serialisation code: the same generic path
    value = _Outer((_Inner((1, 2)), _Inner((3, 4), "x")), {"a": 1}, 2.0)
    data = json.loads(json.dumps(to_data(value)))
    assert data == {
        "items": [{"at": [1, 2], "note": None}, {"at": [3, 4], "note": "x"}],
        "table": {"a": 1},
        "ratio": 2.0,
    }
    assert from_data(_Outer, data) == value


# --- random pool programs ---------------------------------------------------------------------

DTYPES = ["uint8", "uint32", "uint64", "bfloat16", "float32", "float8_e4m3fn", "float4_e2m1fn"]

smem_op = st.one_of(
    st.tuples(
        st.just("alloc"),
        st.lists(st.integers(1, 64), min_size=1, max_size=3),
        st.sampled_from(DTYPES),
        st.sampled_from([0, 16, 128, 1024]),
    ),
    st.tuples(
        st.just("mma"),
        st.integers(1, 3),
        st.sampled_from([8, 64, 128]),
        st.sampled_from(["bfloat16", "float8_e4m3fn"]),
        st.sampled_from(["auto", "none", "32B"]),
    ),
    st.tuples(st.just("move"), st.integers(0, 40000)),
)
tmem_op = st.one_of(
    st.tuples(st.just("acc"), st.sampled_from([32, 64, 128]), st.sampled_from(["D", None])),
    st.tuples(st.just("half"), st.sampled_from(["B", "E", "F", "G"]), st.sampled_from([32, 64])),
    st.tuples(st.just("sf"), st.sampled_from([(32, 16), (2, 128, 16)])),
    st.tuples(st.just("move"), st.integers(0, 256)),
)


def _smem_step(smem, op):
    if op[0] == "alloc":
        smem.alloc(tuple(op[1]), op[2], align=op[3])
    elif op[0] == "mma":
        stages, rows, dtype, mode = op[1:]
        smem.alloc_mma((stages, rows, 64), dtype, mode)
    else:
        smem.move_base_to(op[1])


def _tmem_step(tmem, op):
    if op[0] == "acc":
        tmem.alloc((128, op[1]), "float32", datapath=op[2])
    elif op[0] == "half":
        rows = {"B": 64, "E": 64, "F": 64, "G": 32}[op[1]]
        tmem.alloc((rows, op[2]), "float32", datapath=op[1])
    elif op[0] == "sf":
        tmem.alloc_sf(op[1], "float8_e4m3fn", sf_per_mma=4)
    else:
        tmem.move_base_to(op[1])


@pytest.mark.filterwarnings("ignore::tilemem.errors.TilememWarning")  # residency advice
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    target=st.sampled_from(["sm_80", "sm_90a", "sm_100a", "sm_120", None]),
    smem_ops=st.lists(smem_op, max_size=6),
    tmem_ops=st.lists(tmem_op, max_size=5),
    total_cols=st.sampled_from([128, 256, 512, "auto"]),
    stages=st.booleans(),
    commit=st.booleans(),
    threads=st.sampled_from([None, 128, 384]),
)
def test_random_pool_programs_round_trip(
    target, smem_ops, tmem_ops, total_cols, stages, commit, threads
):
    smem = SMEMPool(target=target)
    for op in smem_ops:
        with contextlib.suppress(TilememError):  # a refused call changes nothing
            _smem_step(smem, op)
    if target == "sm_100a":
        tmem = TMEMPool(smem, total_cols, name="tmem")
        for op in tmem_ops:
            with contextlib.suppress(TilememError):
                _tmem_step(tmem, op)
        wide = [b for b in tmem.buffers if b.shape[-2:] == (128, 128)]
        if stages and wide:
            tmem.stages(wide[0], col_start=0, width=32, stages=2, stride=64)
    if commit:
        with contextlib.suppress(TilememError):
            smem.commit()
    plan = smem.plan().with_advice()
    if threads and target:
        plan = plan.with_threads(threads)
    data = through_json(plan)
    assert data["schema"] == PLAN_SCHEMA
    assert MemoryPlan.from_dict(data) == plan
    assert MemoryPlan.from_dict(data).to_dict() == data


def test_lifetimes_round_trip_as_data():
    smem = SMEMPool(target="sm_90a", phases=("load", "mma", "epilogue"))
    smem.alloc_mma((2, 128, 64), "bfloat16", name="A", live=("load", "mma"))
    c = smem.alloc_mma((128, 128), "bfloat16", name="C", live="epilogue")
    smem.alloc((64, 64), "bfloat16", name="P", alias_of=c, offset=0, live="epilogue")
    smem.commit()
    plan = smem.plan()
    data = through_json(plan)
    pool = data["pools"][0]
    assert pool["phases"] == ["load", "mma", "epilogue"]
    # busiest phase: load/mma hold A (32768 bytes); epilogue holds C (32768), P is inside C
    assert pool["lower_bound"] == 32768
    assert [e["phases"] for e in pool["entries"]] == [["load", "mma"], ["epilogue"], ["epilogue"]]
    assert pool["entries"][2]["alias_of"] == "C"
    assert MemoryPlan.from_dict(data) == plan


phase_sets = st.sets(st.sampled_from(["load", "mma", "epilogue"]), min_size=1)


@pytest.mark.filterwarnings("ignore::tilemem.errors.TilememWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    buffers=st.lists(
        st.tuples(
            st.integers(1, 64), st.sampled_from(["uint8", "float32", "bfloat16"]), phase_sets
        ),
        max_size=6,
    ),
    mma=st.lists(st.tuples(st.sampled_from([64, 128]), phase_sets), max_size=3),
)
def test_random_programs_with_lifetimes_round_trip(buffers, mma):
    smem = SMEMPool(target="sm_100a", phases=("load", "mma", "epilogue"))
    for rows, live in mma:
        smem.alloc_mma((rows, 64), "bfloat16", live=tuple(sorted(live)))
    for n, dtype, live in buffers:
        smem.alloc((n,), dtype, live=tuple(sorted(live)))
    smem.commit()
    plan = smem.plan().with_advice()
    data = through_json(plan)
    assert MemoryPlan.from_dict(data) == plan
    assert MemoryPlan.from_dict(data).to_dict() == data
