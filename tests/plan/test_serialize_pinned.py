"""The plan's JSON form pinned key by key, and from_dict's refusal of each malformed value.

Keys and types follow docs/PLAN_FORMAT.md ("Schema 1"); every error is a PlanFileError whose
message starts with the path of the value.
"""

import json
import re
from dataclasses import dataclass

import pytest

from tilemem.errors import PlanError, PlanFileError
from tilemem.plan import LayoutKind, MemoryPlan, Occupancy, PlanEntry, PoolPlan
from tilemem.plan.advice import PaddingAdvice
from tilemem.plan.model import StageViews, TMEMAllocation
from tilemem.plan.serialize import from_data, to_data


def small_plan() -> MemoryPlan:
    bar = PlanEntry(
        "bar",
        "shared.dyn",
        0,
        16,
        8,
        0,
        "uint64",
        (2,),
        "row-major",
        layout_kind=LayoutKind.ROW_MAJOR,
    )
    return MemoryPlan((PoolPlan("smem", "shared.dyn", "bytes", (bar,), 16, 16),), target="sm_90a")


def test_small_plan_as_json_data_key_by_key():
    assert small_plan().to_dict() == {
        "schema": 1,  # PLAN_FORMAT.md: this tilemem writes and reads schema 1
        "pools": [
            {
                "name": "smem",
                "scope": "shared.dyn",
                "unit": "bytes",
                "entries": [
                    {
                        "name": "bar",
                        "scope": "shared.dyn",
                        "offset": 0,
                        "length": 16,
                        "align": 8,
                        "padding": 0,
                        "dtype": "uint64",
                        "shape": [2],
                        "layout": "row-major",
                        "overlaps": [],
                        "swizzle": 0,
                        "lanes": [],
                        "phases": [],
                        "alias_of": None,
                        "layout_kind": "row-major",
                        "end": 16,  # derived: offset 0 + length 16
                    }
                ],
                "high_water": 16,
                "committed": 16,
                "moves": [],
                "allocation": None,
                "stages": [],
                "phases": [],
                "lower_bound": None,
                "bump": None,
                "padding": 0,  # derived: the entries' padding summed
            }
        ],
        "target": "sm_90a",
        "threads": None,  # no threads: no occupancy key
        "advice": None,
        "name": None,  # an example's or plan file's name and summary: none for a bare plan
        "summary": None,
    }


def every_feature_plan() -> MemoryPlan:
    """Every field away from its default: phases, views, lanes, swizzle, moves, stages, advice,
    name and summary; a plan tilemem could make (from_dict refuses any other)."""
    smem = PoolPlan(
        "smem",
        "shared.dyn",
        "bytes",
        (
            PlanEntry(
                "A",
                "shared.dyn",
                0,
                16384,
                1024,
                0,
                "bfloat16",
                (2, 64, 64),
                "mma 128B",
                overlaps=("C", "C_half"),  # every entry sharing a byte with it
                swizzle=3,
                phases=("mainloop",),
                layout_kind=LayoutKind.MMA_OPERAND,
            ),
            PlanEntry(
                "C",
                "shared.dyn",
                0,
                8192,
                16,
                0,
                "float32",
                (32, 64),
                "row-major",
                overlaps=("A", "C_half"),
                phases=("epilogue",),
                layout_kind=LayoutKind.ROW_MAJOR,
            ),
            PlanEntry(
                "C_half",
                "shared.dyn",
                4096,
                4096,
                16,
                0,
                "float32",
                (16, 64),
                "row-major",
                overlaps=("A", "C"),
                phases=("epilogue",),
                alias_of="C",
                layout_kind=LayoutKind.ROW_MAJOR,
            ),
            PlanEntry(  # the TMEM pool's address slot
                "tmem_addr",
                "shared.dyn",
                16384,
                4,
                4,
                0,
                "uint32",
                (1,),
                "row-major",
                phases=("mainloop", "epilogue"),
                layout_kind=LayoutKind.ROW_MAJOR,
            ),
        ),
        high_water=16388,
        committed=16388,
        moves=((16384, 0),),
        phases=("mainloop", "epilogue"),
        lower_bound=16384,
        bump=24576,
    )
    tmem = PoolPlan(
        "tmem",
        "tmem",
        "cols",
        (
            PlanEntry(
                "acc",
                "tmem",
                0,
                64,
                1,
                0,
                "float32",
                (64, 64),
                "datapath F",
                lanes=((0, 16), (32, 48), (64, 80), (96, 112)),
                layout_kind=LayoutKind.TMEM_DATAPATH,
            ),
        ),
        high_water=64,
        committed=64,
        allocation=TMEMAllocation(2, 1, 3, "tmem_addr", 16384),
        stages=(StageViews("acc", ((0, 32), (32, 64))),),
    )
    advice = PaddingAdvice("smem", 0, 16388, True)  # overlays: no order is suggested
    return MemoryPlan(
        (smem, tmem), "sm_100a", 256, advice, name="every-feature", summary="one of each field"
    )


def test_plan_with_every_feature_round_trips_through_json():
    plan = every_feature_plan()
    data = json.loads(json.dumps(plan.to_dict()))
    assert "occupancy" in data  # derived from threads and target, skipped when read back
    assert MemoryPlan.from_dict(data) == plan
    assert MemoryPlan.from_dict(data).to_dict() == data


def test_fields_left_out_take_their_defaults():
    data = small_plan().to_dict()
    entry = data["pools"][0]["entries"][0]
    for key in ("overlaps", "swizzle", "lanes", "phases", "alias_of", "layout_kind"):
        del entry[key]
    for key in ("moves", "allocation", "stages", "phases", "lower_bound", "bump"):
        del data["pools"][0][key]
    for key in ("target", "threads", "advice"):
        del data[key]
    pool = MemoryPlan.from_dict(data).pools[0]
    bar = pool.entries[0]
    # the defaults of model.py: no overlaps, swizzle 0 (none), no lanes or phases, no view,
    # a caller's layout
    assert (bar.overlaps, bar.swizzle, bar.lanes, bar.phases, bar.alias_of) == ((), 0, (), (), None)
    assert bar.layout_kind is LayoutKind.CUSTOM
    assert (pool.moves, pool.allocation, pool.stages, pool.phases) == ((), None, (), ())
    assert (pool.lower_bound, pool.bump) == (None, None)


def refused(data, message):
    with pytest.raises(PlanFileError, match="^" + re.escape(message) + "$"):
        MemoryPlan.from_dict(data)


def test_a_plan_that_is_not_an_object_is_refused():
    refused([], "a plan is a JSON object, got list")


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("offset", "8", "offset: expected int, got '8'"),
        ("swizzle", True, "swizzle: expected int, got True"),  # a bool is not a number here
        ("offset", -16, "offset: expected int >= 0, got -16"),  # SMEM bytes from the start
        ("length", -1, "length: expected int >= 0, got -1"),
        ("shape", [2, -1], "shape[1]: expected int >= 0, got -1"),
        ("shape", 5, "shape: expected an array, got 5"),
        ("shape", [2, "x"], "shape[1]: expected int, got 'x'"),
        ("alias_of", 5, "alias_of: expected str, got 5"),
        (
            "layout_kind",
            "bogus",
            "layout_kind: expected one of ['row-major', 'strided', 'mma', 'datapath', "
            "'lane=row', 'scale-factor', 'custom', 'stage-view'], got 'bogus'",
        ),
    ],
)
def test_entry_value_of_the_wrong_form_is_refused_with_its_path(key, value, message):
    data = small_plan().to_dict()
    data["pools"][0]["entries"][0][key] = value
    refused(data, f"plan.pools[0].entries[0].{message}")


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("committed", "8", "committed: expected int, got '8'"),  # int | None: the int's error
        ("committed", -1, "committed: expected int >= 0, got -1"),
        ("entries", [5], "entries[0]: expected an object (PlanEntry), got 5"),
        # a move is (cursor before, cursor after): exactly two numbers
        ("moves", [[128, 64, 0]], "moves[0]: expected an array of 2, got [128, 64, 0]"),
        ("moves", [[128]], "moves[0]: expected an array of 2, got [128]"),
    ],
)
def test_pool_value_of_the_wrong_form_is_refused_with_its_path(key, value, message):
    data = small_plan().to_dict()
    data["pools"][0][key] = value
    refused(data, f"plan.pools[0].{message}")


def test_missing_entry_field_without_default_is_refused():
    data = small_plan().to_dict()
    del data["pools"][0]["entries"][0]["dtype"]
    refused(data, "plan.pools[0].entries[0]: PlanEntry needs the key 'dtype'")


# --- from_data over any dataclass of plain fields ------------------------------------------


def test_occupancy_limits_come_back_as_given():
    # Occupancy.limits is a bare dict: its values are taken as they are
    occ = Occupancy(
        "sm_90a", 128, 17424, 0, {"shared memory": 12, "threads": 16}, 12, "shared memory"
    )
    assert from_data(Occupancy, json.loads(json.dumps(to_data(occ))), "occupancy") == occ
    data = to_data(occ)
    data["limits"] = [12]
    with pytest.raises(PlanFileError, match=r"^occupancy\.limits: expected an object, got \[12\]$"):
        from_data(Occupancy, data, "occupancy")


@dataclass(frozen=True)
class _Loose:
    items: tuple  # no element type: any array, as it is
    ratio: float
    either: int | str


def test_untyped_tuple_float_and_two_way_union():
    value = from_data(_Loose, {"items": [1, "a"], "ratio": 2, "either": "x"})
    assert value == _Loose((1, "a"), 2.0, "x") and isinstance(value.ratio, float)
    with pytest.raises(PlanFileError, match=r"^plan\.ratio: expected float, got True$"):
        from_data(_Loose, {"items": [], "ratio": True, "either": 1})
    with pytest.raises(PlanFileError, match=r"^plan\.either: no form fits \[1\]$"):
        from_data(_Loose, {"items": [], "ratio": 1.5, "either": [1]})


@dataclass(frozen=True)
class _Unsupported:
    value: complex


def test_field_of_a_type_json_cannot_hold_is_a_model_bug():
    # not a malformed file: a dataclass field that from_data has no rule for
    with pytest.raises(TypeError, match=r"^plan\.value: cannot rebuild a field of type"):
        from_data(_Unsupported, {"value": 1})


@pytest.mark.parametrize("swizzle", [4, 7])
def test_from_dict_refuses_a_swizzle_that_is_no_swizzle_mode(swizzle):
    # SwizzleMode values are L = 0..3 (none, 32B, 64B, 128B; docs/HARDWARE-RULES.md#swizzle-modes):
    # a hand-edited 4 would make the C++ header claim 256-byte swizzle rows
    data = small_plan().to_dict()
    data["pools"][0]["entries"][0]["swizzle"] = swizzle
    name = data["pools"][0]["entries"][0]["name"]
    refused(
        data,
        f"plan.pools[0].entries[0]: buffer {name!r}: swizzle {swizzle} is not a SwizzleMode "
        "value (0 none, 1 32B, 2 64B, 3 128B)",
    )
    # 3 is a mode (128B), for a caller's swizzled layout on its 1024-byte period (8 x 128 B)
    data["pools"][0]["entries"][0].update(
        swizzle=3, layout="swizzle 128B (2):(1)", layout_kind="custom", align=1024
    )
    assert MemoryPlan.from_dict(data).pools[0].entries[0].swizzle == 3


def test_a_plan_entry_refuses_a_swizzle_outside_0_to_3():
    with pytest.raises(PlanError, match="swizzle -1 is not a SwizzleMode value"):
        PlanEntry("a", "shared.dyn", 0, 16, 16, 0, "uint8", (16,), "row-major", swizzle=-1)
