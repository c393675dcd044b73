"""Hand-edited JSON plans: from_dict takes only a plan the pools could have made.

Each case edits one value of a plan the pools made and expects a PlanFileError whose message
starts with the path of the value and names the rule and its numbers. The base plans:

- ``hopper``: sm_90a, no phases. A (bf16 2x64x64, 128B swizzle) at [0, 16384), bar (uint64
  x4) at [16384, 16416), c (uint8 x100) at [16416, 16516), d (float32 x8, align 128) at
  16640 after 124 bytes of padding (16516 rounded up to 128 = 16640), then move_base_to(0)
  and C (float32 16x16 = 1024 bytes) at [0, 1024) over A. High-water 16672 = d's end.
- ``blackwell``: sm_100a, phases (mainloop, epilogue). SMEM: A [0, 32768) in mainloop, Cst
  [0, 16384) in epilogue, its view half [8192, 16384), the slot tmem_addr at 32768. TMEM
  (512 columns): acc (data path D, 256 columns) at 0, accF (data path F: lanes 0-16, 32-48,
  64-80, 96-112) at [256, 320) in epilogue, scale factors sfa at [256, 260) in mainloop;
  two stage views of 128 columns over acc.
- ``plain``: sm_90a, bar (uint64) at [0, 8) and A (1024-aligned, 16384 bytes) at 1024 after
  1016 bytes of padding; the advice: A first, then bar, needs 16392 bytes instead of 17408.
"""

from __future__ import annotations

import copy
import json
import time
import warnings

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import PlanFileError
from tilemem.plan import MemoryPlan, PlanEntry, plan_from_json_text
from tilemem.plan.check import _partners


def _hopper() -> MemoryPlan:
    smem = SMEMPool(target="sm_90a")
    smem.alloc_mma((2, 64, 64), "bfloat16", name="A")
    smem.alloc((4,), "uint64", name="bar")
    smem.alloc((100,), "uint8", name="c")
    smem.alloc((8,), "float32", align=128, name="d")
    smem.move_base_to(0)
    smem.alloc((16, 16), "float32", name="C")
    smem.commit()
    return smem.plan().with_advice().with_threads(128)


def _blackwell() -> MemoryPlan:
    smem = SMEMPool(target="sm_100a", phases=("mainloop", "epilogue"))
    smem.alloc_mma((2, 128, 64), "bfloat16", name="A", live="mainloop")
    cst = smem.alloc((128, 32), "float32", name="Cst", live="epilogue")
    smem.alloc((64, 32), "float32", name="half", alias_of=cst, offset=8192, live="epilogue")
    tmem = TMEMPool(smem, 512, name="tmem")
    acc = tmem.alloc((128, 256), "float32", name="acc")
    tmem.alloc((64, 64), "float32", datapath="F", name="accF", live="epilogue")
    tmem.alloc_sf((128, 4), "float8_e8m0fnu", sf_per_mma=4, name="sfa", live="mainloop")
    tmem.stages(acc, 0, 128, 2)
    smem.commit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TMEM residency advice
        tmem.commit()
    return smem.plan().with_threads(256)


def _plain() -> MemoryPlan:
    smem = SMEMPool(target="sm_90a")
    smem.alloc((1,), "uint64", name="bar")
    smem.alloc_mma((2, 64, 64), "bfloat16", name="A")
    smem.commit()
    return smem.plan().with_advice()


BASES = {"hopper": _hopper(), "blackwell": _blackwell(), "plain": _plain()}


def data_of(base: str) -> dict:
    return copy.deepcopy(BASES[base].to_dict())


def entry(d: dict, pool: int, index: int) -> dict:
    return d["pools"][pool]["entries"][index]


def pool(d: dict, index: int) -> dict:
    return d["pools"][index]


def _two_tmem_pools(d: dict) -> None:
    second = copy.deepcopy(pool(d, 1))
    second.update(name="tmem2", entries=[], stages=[], high_water=0, lower_bound=0, bump=0)
    d["pools"].append(second)


def test_the_base_plans_are_what_the_docstring_says():
    hopper, blackwell, plain = BASES["hopper"], BASES["blackwell"], BASES["plain"]
    assert [(e.name, e.offset, e.end, e.padding) for e in hopper.pools[0].entries] == [
        ("A", 0, 16384, 0),
        ("bar", 16384, 16416, 0),
        ("c", 16416, 16516, 0),
        ("d", 16640, 16672, 124),
        ("C", 0, 1024, 0),
    ]
    assert [(e.name, e.offset, e.end) for e in blackwell.pools[1].entries] == [
        ("acc", 0, 256),
        ("accF", 256, 320),
        ("sfa", 256, 260),
    ]
    assert blackwell.pools[1].allocation.slot_offset == 32768
    assert plain.advice.order == ("A", "bar") and plain.advice.best_high_water == 16392


# (id, base, edit, path, words the message holds)
CASES = [
    # -- the plan ----------------------------------------------------------------------------
    ("no-pools", "hopper", lambda d: d.update(pools=[]), "plan.pools", ["one SMEM pool first"]),
    (
        "two-smem-pools",
        "hopper",
        lambda d: d["pools"].append(copy.deepcopy(pool(d, 0))),
        "plan.pools",
        ["one SMEM pool first", "['shared.dyn', 'shared.dyn']"],
    ),
    (
        "tmem-pool-first",
        "blackwell",
        lambda d: d["pools"].reverse(),
        "plan.pools",
        ["one SMEM pool first", "['tmem', 'shared.dyn']"],
    ),
    (
        "unknown-target",
        "hopper",
        lambda d: d.update(target="sm_99"),
        "plan.target",
        ["unknown target 'sm_99'", "sm_90a"],
    ),
    (
        "tmem-on-hopper",
        "blackwell",
        lambda d: d.update(target="sm_90a"),
        "plan.target",
        ["sm_90a has no tensor memory", "sm_100a"],
    ),
    (
        "tmem-on-plain-sm100",
        "blackwell",
        lambda d: d.update(target="sm_100"),
        "plan.target",
        ["sm_100 has no tensor memory"],
    ),
    ("name-newline", "hopper", lambda d: d.update(name="a\nb"), "plan.name", ["printable"]),
    ("summary-empty", "hopper", lambda d: d.update(summary=""), "plan.summary", ["1 to 1000"]),
    (
        "summary-long",
        "hopper",
        lambda d: d.update(summary="x" * 1001),
        "plan.summary",
        ["1 to 1000 printable"],
    ),
    ("name-number", "hopper", lambda d: d.update(name=5), "plan.name", ["expected str, got 5"]),
    (
        "threads-0",
        "hopper",
        lambda d: d.update(threads=0),
        "plan.threads",
        ["[1, 1024]", "got 0"],
    ),
    (
        "threads-2048",
        "hopper",
        lambda d: d.update(threads=2048),
        "plan.threads",
        ["[1, 1024]", "got 2048"],
    ),
    # -- pools -------------------------------------------------------------------------------
    (
        "scope-global",
        "hopper",
        lambda d: pool(d, 0).update(scope="global"),
        "plan.pools[0].scope",
        ["'global' is not a memory", "'shared.dyn'", "'tmem'"],
    ),
    (
        "unit-cols-in-smem",
        "hopper",
        lambda d: pool(d, 0).update(unit="cols"),
        "plan.pools[0].unit",
        ["counts bytes", "'cols'"],
    ),
    (
        "unit-bytes-in-tmem",
        "blackwell",
        lambda d: pool(d, 1).update(unit="bytes"),
        "plan.pools[1].unit",
        ["counts cols", "'bytes'"],
    ),
    (
        "pool-name-dash",
        "hopper",
        lambda d: pool(d, 0).update(name="smem-1"),
        "plan.pools[0].name",
        ["'smem-1' is not an identifier"],
    ),
    (
        "pool-name-keyword",
        "hopper",
        lambda d: pool(d, 0).update(name="compl"),
        "plan.pools[0].name",
        ["'compl' is a C++ or Python keyword"],
    ),
    (
        "smem-and-tmem-pool-one-name",
        "blackwell",
        lambda d: pool(d, 1).update(name="smem"),
        "plan.pools[1].name",
        ["'smem' is also plan.pools[0].name's"],
    ),
    (
        "phases-twice",
        "blackwell",
        lambda d: pool(d, 0).update(phases=["mainloop", "mainloop"]),
        "plan.pools[0].phases",
        ["each phase once", "['mainloop', 'mainloop']"],
    ),
    (
        "phase-name-space",
        "blackwell",
        lambda d: pool(d, 0)["phases"].__setitem__(0, "main loop"),
        "plan.pools[0].phases[0]",
        ["'main loop' is not an identifier"],
    ),
    (
        "lower-bound-without-phases",
        "hopper",
        lambda d: pool(d, 0).update(lower_bound=5, bump=7),
        "plan.pools[0]",
        ["lower_bound and bump", "lower_bound 5"],
    ),
    (
        "phases-without-lower-bound",
        "blackwell",
        lambda d: pool(d, 0).update(lower_bound=None),
        "plan.pools[0]",
        ["lower_bound and bump", "lower_bound None"],
    ),
    (
        "high-water-below-last-end",
        "hopper",
        lambda d: pool(d, 0).update(high_water=16000),
        "plan.pools[0].high_water",
        ["high_water 16000 bytes", "reach 16672"],
    ),
    (
        "high-water-above",
        "hopper",
        lambda d: pool(d, 0).update(high_water=20000),
        "plan.pools[0].high_water",
        ["high_water 20000", "reach 16672"],
    ),
    (
        "high-water-with-phases",
        "blackwell",
        lambda d: pool(d, 0).update(high_water=40000),
        "plan.pools[0].high_water",
        ["high_water 40000 bytes, but the buffers reach 32772"],
    ),
    (
        "tmem-high-water",
        "blackwell",
        lambda d: pool(d, 1).update(high_water=256),
        "plan.pools[1].high_water",
        ["high_water 256 cols", "reach 320"],
    ),
    (
        "move-far-away",
        "hopper",
        lambda d: pool(d, 0).update(moves=[[16672, 2**50]]),
        "plan.pools[0].high_water",
        [f"reach {2**50}"],
    ),
    (
        "committed-below-high-water",
        "hopper",
        lambda d: pool(d, 0).update(committed=16000),
        "plan.pools[0].committed",
        ["committed 16000 bytes is below the high-water mark 16672"],
    ),
    (
        "committed-beyond-target",
        "hopper",
        lambda d: pool(d, 0).update(committed=300000),
        "plan.pools[0].committed",
        ["300000 bytes", "sm_90a gives a block at most 232448"],  # 227 KiB
    ),
    (
        "committed-beyond-any-pool",
        "hopper",
        lambda d: (d.update(target=None), pool(d, 0).update(committed=2**60)),
        "plan.pools[0].committed",
        [f"{2**60} bytes is beyond any pool's size"],
    ),
    (
        "tmem-committed-48",
        "blackwell",
        lambda d: pool(d, 1).update(committed=48),
        "plan.pools[1].committed",
        ["power of two of columns in [32, 512], got 48"],
    ),
    (
        "tmem-committed-1024",
        "blackwell",
        lambda d: pool(d, 1).update(committed=1024),
        "plan.pools[1].committed",
        ["[32, 512], got 1024"],
    ),
    (
        "tmem-committed-16",
        "blackwell",
        lambda d: pool(d, 1).update(committed=16),
        "plan.pools[1].committed",
        ["[32, 512], got 16"],
    ),
    (
        "tmem-committed-below-high-water",
        "blackwell",
        lambda d: pool(d, 1).update(committed=256),
        "plan.pools[1].committed",
        ["committed 256 cols is below the high-water mark 320"],
    ),
    (
        "two-tmem-pools-beyond-512",
        "blackwell",
        _two_tmem_pools,
        "plan.pools",
        ["[('tmem', 512), ('tmem2', 512)]", "1024 columns", "512"],
    ),
    (
        "smem-with-allocation",
        "hopper",
        lambda d: pool(d, 0).update(
            allocation={
                "cta_group": 1,
                "alloc_warp": 0,
                "dealloc_warp": 0,
                "slot": "bar",
                "slot_offset": 16384,
            }
        ),
        "plan.pools[0]",
        ["an SMEM pool has no TMEM allocation"],
    ),
    (
        "smem-with-stages",
        "hopper",
        lambda d: pool(d, 0).update(stages=[{"buffer": "A", "spans": [[0, 8]]}]),
        "plan.pools[0]",
        ["no stage views"],
    ),
    (
        "tmem-without-allocation",
        "blackwell",
        lambda d: pool(d, 1).update(allocation=None),
        "plan.pools[1].allocation",
        ["records its tcgen05.alloc"],
    ),
    (
        "stage-view-over-missing-buffer",
        "blackwell",
        lambda d: pool(d, 1)["stages"][0].update(buffer="accX"),
        "plan.pools[1].stages[0].buffer",
        ["'accX', which is no buffer of pool 'tmem'"],
    ),
    (
        "stage-beyond-buffer",
        "blackwell",
        lambda d: pool(d, 1)["stages"][0].update(spans=[[0, 128], [128, 300]]),
        "plan.pools[1].stages[0].spans[1]",
        ["stage 1 at columns [128, 300) is not inside 'acc' at [0, 256)"],
    ),
    (
        "stage-empty-span",
        "blackwell",
        lambda d: pool(d, 1)["stages"][0].update(spans=[[10, 10]]),
        "plan.pools[1].stages[0].spans[0]",
        ["[10, 10)"],
    ),
    (
        "stage-view-over-a-bad-name",
        "blackwell",
        lambda d: pool(d, 1)["stages"][0].update(buffer="a-b"),
        "plan.pools[1].stages",
        ["'a-b' is not an identifier"],
    ),
    (
        "no-stages",
        "blackwell",
        lambda d: pool(d, 1)["stages"][0].update(spans=[]),
        "plan.pools[1].stages[0]",
        ["at least one stage"],
    ),
    (
        "stage-view-over-1d-buffer",
        "blackwell",
        lambda d: (
            entry(d, 1, 0).update(shape=[128, 2, 128]),
            pool(d, 1)["stages"][0].update(spans=[[0, 8]]),
        ),
        "plan.pools[1].stages[0]",
        ["2-D buffer", "acc"],
    ),
    (
        "slot-missing",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(slot="nope"),
        "plan.pools[1].allocation.slot",
        ["'nope' is no 32-bit buffer of SMEM pool 'smem'"],
    ),
    (
        "slot-16-bit",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(slot="A"),
        "plan.pools[1].allocation.slot",
        ["'A' is no 32-bit buffer"],
    ),
    (
        "slot-offset-elsewhere",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(slot_offset=0),
        "plan.pools[1].allocation.slot_offset",
        ["slot_offset 0", "'tmem_addr' is at byte 32768"],
    ),
    (
        "slot-offset-none-after-commit",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(slot_offset=None),
        "plan.pools[1].allocation.slot_offset",
        ["slot_offset None", "32768"],
    ),
    (
        "cta-group-3",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(cta_group=3),
        "plan.pools[1].allocation.cta_group",
        ["1 or 2, got 3"],
    ),
    (
        "cta-group-float",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(cta_group=2.0),
        "plan.pools[1].allocation.cta_group",
        ["expected int, got 2.0"],
    ),
    (
        "alloc-warp-32",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(alloc_warp=32),
        "plan.pools[1].allocation.alloc_warp",
        ["warp 32 is beyond a block's 32 warps"],
    ),
    (
        "dealloc-warp-99",
        "blackwell",
        lambda d: pool(d, 1)["allocation"].update(dealloc_warp=99),
        "plan.pools[1].allocation.dealloc_warp",
        ["warp 99"],
    ),
    # -- names -------------------------------------------------------------------------------
    (
        "buffer-name-twice",
        "hopper",
        lambda d: entry(d, 0, 4).update(name="A"),
        "plan.pools[0].entries[4].name",
        ["'A' is also plan.pools[0].entries[0].name's"],
    ),
    (
        "buffer-name-twice-across-pools",
        "blackwell",
        lambda d: entry(d, 1, 0).update(name="Cst"),
        "plan.pools[1].entries[0].name",
        ["'Cst' is also plan.pools[0].entries[1].name's"],
    ),
    *[
        (
            f"buffer-name-{name}",
            "hopper",
            lambda d, name=name: entry(d, 0, 2).update(name=name),
            "plan.pools[0].entries[2].name",
            [repr(name), words],
        )
        for name, words in [
            ("bitand", "keyword"),
            ("not_eq", "keyword"),
            ("xor_eq", "keyword"),
            ("NULL", "macro"),
            ("unix", "macro"),
            ("total_cols", "pool constant"),
            ("a b", "not an identifier"),
            ("a\\", "not an identifier"),
            ("x\ny", "not an identifier"),
            ("é", "not an identifier"),
            ("a__b", "reserved"),
            ("_Tile", "reserved"),
            ("", "not an identifier"),
        ]
    ],
    (
        "stage-name-clash",
        "blackwell",
        lambda d: (entry(d, 1, 1).update(name="acc_stages"), entry(d, 1, 2).update(overlaps=[])),
        "plan.pools[1].entries[1].name",
        ["'acc_stages' is the header's name of the stage views", "'acc'"],
    ),
    # -- entries -----------------------------------------------------------------------------
    (
        "entry-scope",
        "hopper",
        lambda d: entry(d, 0, 1).update(scope="tmem"),
        "plan.pools[0].entries[1].scope",
        ["'tmem' in a shared.dyn pool"],
    ),
    (
        "dtype-unknown",
        "hopper",
        lambda d: entry(d, 0, 1).update(dtype="float128"),
        "plan.pools[0].entries[1].dtype",
        ["unknown dtype 'float128'"],
    ),
    (
        "dtype-alias",
        "hopper",
        lambda d: entry(d, 0, 0).update(dtype="bf16"),
        "plan.pools[0].entries[0].dtype",
        ["unknown dtype 'bf16'"],
    ),
    (
        "dtype-injection",
        "hopper",
        lambda d: entry(d, 0, 0).update(dtype="bfloat16\n#define A 1"),
        "plan.pools[0].entries[0].dtype",
        ["unknown dtype"],
    ),
    (
        "shape-empty",
        "hopper",
        lambda d: entry(d, 0, 1).update(shape=[]),
        "plan.pools[0].entries[1].shape",
        ["non-empty tuple of positive integers"],
    ),
    (
        "shape-zero",
        "hopper",
        lambda d: entry(d, 0, 1).update(shape=[0, 4]),
        "plan.pools[0].entries[1].shape",
        ["extent 0 is below 1"],
    ),
    (
        "shape-huge",
        "hopper",
        lambda d: entry(d, 0, 1).update(shape=[2**30, 2**30]),
        "plan.pools[0].entries[1].shape",
        [f"{2**60} elements", f"{2**40}"],
    ),
    (
        "stage-view-kind",
        "hopper",
        lambda d: entry(d, 0, 1).update(layout_kind="stage-view"),
        "plan.pools[0].entries[1].layout_kind",
        ["row-major, strided, mma, custom, not 'stage-view'"],
    ),
    (
        "smem-datapath",
        "hopper",
        lambda d: entry(d, 0, 1).update(layout_kind="datapath", layout="datapath D"),
        "plan.pools[0].entries[1].layout_kind",
        ["not 'datapath'"],
    ),
    (
        "tmem-mma",
        "blackwell",
        lambda d: entry(d, 1, 0).update(layout_kind="mma", layout="mma 128B"),
        "plan.pools[1].entries[0].layout_kind",
        ["datapath, lane=row, scale-factor, custom, not 'mma'"],
    ),
    (
        "label-injection",
        "hopper",
        lambda d: entry(d, 0, 1).update(layout="row-major\n#define bar 0"),
        "plan.pools[0].entries[1].layout",
        ["is no label of a 'row-major' layout"],
    ),
    (
        "custom-label-backslash",
        "hopper",
        lambda d: entry(d, 0, 1).update(layout_kind="custom", layout="(4):(1)\\"),
        "plan.pools[0].entries[1].layout",
        ["no label of a 'custom' layout"],
    ),
    (
        "custom-label-tab",
        "hopper",
        lambda d: entry(d, 0, 1).update(layout_kind="custom", layout="a\tb"),
        "plan.pools[0].entries[1].layout",
        ["no label of a 'custom' layout"],
    ),
    (
        "mma-256B",
        "hopper",
        lambda d: entry(d, 0, 0).update(layout="mma 256B"),
        "plan.pools[0].entries[0].layout",
        ["'mma 256B' is no label of a 'mma' layout"],
    ),
    (
        "mma-label-and-swizzle-disagree",
        "hopper",
        lambda d: entry(d, 0, 0).update(layout="mma 64B"),
        "plan.pools[0].entries[0].swizzle",
        ["swizzle 3 but the layout is 'mma 64B' (swizzle 2)"],
    ),
    (
        "row-major-swizzled",
        "hopper",
        lambda d: entry(d, 0, 1).update(swizzle=1),
        "plan.pools[0].entries[1].swizzle",
        ["a 'row-major' layout has no swizzle, got 1"],
    ),
    (
        "strides-per-dimension",
        "hopper",
        lambda d: entry(d, 0, 2).update(layout_kind="strided", layout="strided (1, 2)"),
        "plan.pools[0].entries[2].layout",
        ["no stride per dimension of (100,)"],
    ),
    (
        "datapath-Z",
        "blackwell",
        lambda d: entry(d, 1, 0).update(layout="datapath Z"),
        "plan.pools[1].entries[0].layout",
        ["'datapath Z' is no label"],
    ),
    (
        "sf-x0",
        "blackwell",
        lambda d: entry(d, 1, 2).update(layout="sf x0/mma"),
        "plan.pools[1].entries[2].layout",
        ["'sf x0/mma' is no label"],
    ),
    (
        "align-3",
        "hopper",
        lambda d: entry(d, 0, 2).update(align=3),
        "plan.pools[0].entries[2].align",
        ["align 3 is not a power of two in [1, 1073741824]"],
    ),
    (
        "align-0",
        "hopper",
        lambda d: entry(d, 0, 2).update(align=0),
        "plan.pools[0].entries[2].align",
        ["align 0 is not a power of two"],
    ),
    (
        "align-below-natural",
        "hopper",
        lambda d: entry(d, 0, 3).update(align=2, padding=0),
        "plan.pools[0].entries[3].align",
        ["[4, 1073741824]", "float32's natural alignment is 4 bytes"],
    ),
    (
        "align-2-to-the-31",
        "hopper",
        lambda d: entry(d, 0, 0).update(align=2**31),
        "plan.pools[0].entries[0].align",
        ["align 2147483648"],
    ),
    (
        "offset-breaks-align",
        "hopper",
        lambda d: entry(d, 0, 1).update(offset=16388),
        "plan.pools[0].entries[1].offset",
        ["offset 16388 is not a multiple of align 8"],
    ),
    (
        "padding-beyond-align",
        "hopper",
        lambda d: entry(d, 0, 3).update(padding=200),
        "plan.pools[0].entries[3].padding",
        ["padding 200 bytes", "fewer than align 128"],
    ),
    (
        "padding-larger-than-offset",
        "hopper",
        lambda d: entry(d, 0, 0).update(padding=8),
        "plan.pools[0].entries[0].padding",
        ["padding 8 bytes", "at most the offset 0"],
    ),
    (
        "length-too-small",
        "hopper",
        lambda d: entry(d, 0, 2).update(length=99),
        "plan.pools[0].entries[2].length",
        ["99 bytes, but uint8[100] in a 'row-major' layout takes 100 bytes"],
    ),
    (
        "length-huge",
        "hopper",
        lambda d: entry(d, 0, 2).update(length=2**50),
        "plan.pools[0].entries[2].length",
        [f"{2**50} bytes, but uint8[100]"],
    ),
    (
        "custom-length-huge",
        "hopper",
        lambda d: entry(d, 0, 2).update(length=2**50, layout_kind="custom", layout="(100):(1)"),
        "plan.pools[0].entries[2].length",
        [f"{2**50} bytes", "takes 100 bytes or more"],
    ),
    (
        "length-too-large-for-row-major",
        "hopper",
        lambda d: entry(d, 0, 1).update(length=40),
        "plan.pools[0].entries[1].length",
        ["40 bytes, but uint64[4] in a 'row-major' layout takes 32 bytes"],  # 4 x 8
    ),
    (
        "strided-span",
        "hopper",
        # strides (2,) over 100 uint8 reach element 1 + 99 * 2 = 199: 199 bytes, not 100
        lambda d: entry(d, 0, 2).update(layout_kind="strided", layout="strided (2,)"),
        "plan.pools[0].entries[2].length",
        ["100 bytes", "takes 199 bytes"],
    ),
    (
        "mma-tile-of-7-rows",
        "hopper",
        lambda d: entry(d, 0, 0).update(shape=[2, 7, 64], length=1792),  # 2 x 7 x 64 x 2 B
        "plan.pools[0].entries[0].shape",
        ["no MMA operand tile", "8-row atoms"],
    ),
    (
        "mma-rows-narrower-than-the-swizzle",
        "hopper",
        lambda d: entry(d, 0, 0).update(shape=[4, 64, 32], length=16384),  # 64-byte rows
        "plan.pools[0].entries[0].shape",
        ["64-byte rows", "multiple of 128 bytes"],
    ),
    (
        "padding-in-a-pool-with-phases",
        "blackwell",
        lambda d: entry(d, 0, 3).update(padding=2),
        "plan.pools[0].entries[3].padding",
        ["padding 2", "placed by lifetime"],
    ),
    (
        "swizzle-off-period",
        "hopper",
        lambda d: (entry(d, 0, 0).update(align=256), entry(d, 0, 4).update(offset=256)),
        "plan.pools[0].entries[0].offset",
        ["128B-swizzled", "1024-byte period", "align 256"],
    ),
    (
        "swizzle-5",
        "hopper",
        lambda d: entry(d, 0, 0).update(swizzle=5),
        "plan.pools[0].entries[0]",
        ["swizzle 5 is not a SwizzleMode value"],
    ),
    (
        "smem-lanes",
        "hopper",
        lambda d: entry(d, 0, 1).update(lanes=[[0, 128]]),
        "plan.pools[0].entries[1].lanes",
        ["an SMEM buffer has no TMEM lanes"],
    ),
    (
        "lanes-200",
        "blackwell",
        lambda d: entry(d, 1, 0).update(lanes=[[0, 200]]),
        "plan.pools[1].entries[0].lanes[0]",
        ["lanes [0, 200)", "128 TMEM lanes"],
    ),
    (
        "lanes-none",
        "blackwell",
        lambda d: entry(d, 1, 0).update(lanes=[]),
        "plan.pools[1].entries[0].lanes",
        ["at least one lane"],
    ),
    (
        "lanes-unsorted",
        "blackwell",
        lambda d: entry(d, 1, 1).update(lanes=[[32, 48], [0, 16]]),
        "plan.pools[1].entries[1].lanes[1]",
        ["lanes [0, 16) are not a run after the previous one"],
    ),
    (
        "lanes-not-merged",
        "blackwell",
        lambda d: entry(d, 1, 0).update(lanes=[[0, 64], [64, 128]]),
        "plan.pools[1].entries[0].lanes[1]",
        ["lanes [64, 128)"],
    ),
    (
        "lanes-empty-run",
        "blackwell",
        lambda d: entry(d, 1, 0).update(lanes=[[5, 5]]),
        "plan.pools[1].entries[0].lanes[0]",
        ["lanes [5, 5)"],
    ),
    (
        "tmem-zero-columns",
        "blackwell",
        lambda d: entry(d, 1, 2).update(length=0),
        "plan.pools[1].entries[2].length",
        ["columns [256, 256)", "512 TMEM columns"],
    ),
    (
        "tmem-beyond-512",
        "blackwell",
        lambda d: entry(d, 1, 0).update(offset=400),
        "plan.pools[1].entries[0].length",
        ["columns [400, 656) are not within the 512 TMEM columns"],
    ),
    (
        "tmem-align",
        "blackwell",
        lambda d: entry(d, 1, 0).update(align=4),
        "plan.pools[1].entries[0]",
        ["align 1 and no padding, got 4, 0"],
    ),
    (
        "tmem-padding",
        "blackwell",
        lambda d: entry(d, 1, 1).update(padding=2),
        "plan.pools[1].entries[1]",
        ["align 1 and no padding, got 1, 2"],
    ),
    (
        "tmem-custom-swizzled",
        "blackwell",
        lambda d: entry(d, 1, 0).update(swizzle=1, layout_kind="custom"),
        "plan.pools[1].entries[0].swizzle",
        ["TMEM buffers are not swizzled, got 1"],
    ),
    # -- lifetimes and views -----------------------------------------------------------------
    (
        "phases-in-a-pool-without",
        "hopper",
        lambda d: entry(d, 0, 1).update(phases=["mainloop"]),
        "plan.pools[0].entries[1].phases",
        ["phases ['mainloop'] in a pool without phases"],
    ),
    (
        "phases-out-of-order",
        "blackwell",
        lambda d: entry(d, 0, 3).update(phases=["epilogue", "mainloop"]),
        "plan.pools[0].entries[3].phases",
        ["['epilogue', 'mainloop'] are not some of the pool's phases"],
    ),
    (
        "phases-none",
        "blackwell",
        lambda d: entry(d, 0, 0).update(phases=[]),
        "plan.pools[0].entries[0].phases",
        ["at least one"],
    ),
    (
        "phase-outside-the-pool",
        "blackwell",
        lambda d: entry(d, 0, 0).update(phases=["prologue"]),
        "plan.pools[0].entries[0].phases",
        ["['prologue']", "['mainloop', 'epilogue']"],
    ),
    (
        "tmem-phase-outside",
        "blackwell",
        lambda d: entry(d, 1, 1).update(phases=["mainloop", "tail"]),
        "plan.pools[1].entries[1].phases",
        ["['mainloop', 'tail']"],
    ),
    (
        "alias-of-nothing",
        "blackwell",
        lambda d: entry(d, 0, 2).update(alias_of="nope"),
        "plan.pools[0].entries[2].alias_of",
        ["'nope' names no buffer allocated before 'half' in pool 'smem'"],
    ),
    (
        "alias-of-a-later-buffer",
        "blackwell",
        lambda d: entry(d, 0, 1).update(alias_of="half"),
        "plan.pools[0].entries[1].alias_of",
        ["'half' names no buffer allocated before 'Cst'"],
    ),
    (
        "alias-of-itself",
        "blackwell",
        lambda d: entry(d, 0, 2).update(alias_of="half"),
        "plan.pools[0].entries[2].alias_of",
        ["'half' names no buffer allocated before 'half'"],
    ),
    (
        "alias-of-another-pool",
        "blackwell",
        lambda d: entry(d, 1, 1).update(alias_of="A"),
        "plan.pools[1].entries[1].alias_of",
        ["'A' names no buffer", "pool 'tmem'"],
    ),
    (
        "view-outside-parent",
        "blackwell",
        lambda d: entry(d, 0, 2).update(offset=12288),
        "plan.pools[0].entries[2].alias_of",
        ["the view 'half' at [12288, 20480) is not inside 'Cst' at [0, 16384)"],
    ),
    (
        "overlaps-left-out",
        "hopper",
        lambda d: entry(d, 0, 0).update(overlaps=[]),
        "plan.pools[0].entries[0].overlaps",
        ["'A' at [0, 16384) overlaps ['C'], but the plan lists []"],
    ),
    (
        "overlaps-made-up",
        "hopper",
        lambda d: entry(d, 0, 1).update(overlaps=["c"]),
        "plan.pools[0].entries[1].overlaps",
        ["'bar' at [16384, 16416) overlaps [], but the plan lists ['c']"],
    ),
    (
        "overlaps-twice",
        "hopper",
        lambda d: entry(d, 0, 0).update(overlaps=["C", "C"]),
        "plan.pools[0].entries[0].overlaps",
        ["lists ['C', 'C']"],
    ),
    (
        "moved-away-keeping-overlaps",
        "hopper",
        lambda d: entry(d, 0, 4).update(offset=20000, overlaps=[]),
        "plan.pools[0].entries[0].overlaps",
        ["'A' at [0, 16384) overlaps [], but the plan lists ['C']"],  # C: [20000, 21024)
    ),
    (
        "moved-beyond-high-water",
        "hopper",
        lambda d: (
            entry(d, 0, 4).update(offset=20000, overlaps=[]),
            entry(d, 0, 0).update(overlaps=[]),
        ),
        "plan.pools[0].high_water",
        ["high_water 16672", "reach 21024"],  # C ends at 20000 + 1024
    ),
    (
        "live-together-and-overlapping",
        "blackwell",
        lambda d: entry(d, 0, 1).update(phases=["mainloop", "epilogue"]),
        "plan.pools[0].entries[1]",
        ["'A' and 'Cst' share bytes [0, 16384) while both are live in ['mainloop']"],
    ),
    (
        "tmem-live-together-on-shared-lanes",
        "blackwell",
        lambda d: entry(d, 1, 1).update(phases=["mainloop", "epilogue"]),
        "plan.pools[1].entries[2]",
        ["'accF' and 'sfa' share cols [256, 260)", "['mainloop']"],
    ),
    # -- padding advice ----------------------------------------------------------------------
    (
        "advice-other-pool",
        "hopper",
        lambda d: d["advice"].update(pool="other"),
        "plan.advice",
        ["advice for pool 'other'", "SMEM pool 'smem'"],
    ),
    (
        "advice-padding",
        "hopper",
        lambda d: d["advice"].update(padding=0),
        "plan.advice",
        ["padding 0", "padding 124"],
    ),
    (
        "advice-no-overlays",
        "hopper",
        lambda d: d["advice"].update(overlays=False),
        "plan.advice",
        ["overlays False", "overlays True"],
    ),
    (
        "advice-order-leaves-one-out",
        "plain",
        lambda d: d["advice"].update(order=["A"]),
        "plan.advice.order",
        ["order ['A'] is no order of ['A', 'bar']"],
    ),
    (
        "advice-saves-nothing",
        "plain",
        lambda d: d["advice"].update(best_high_water=17408),
        "plan.advice.best_high_water",
        ["17408 saves nothing"],
    ),
    (
        "advice-better-without-order",
        "plain",
        lambda d: d["advice"].update(order=[]),
        "plan.advice.best_high_water",
        ["without an order"],
    ),
    # -- values of the wrong form ------------------------------------------------------------
    (
        "offset-nan",
        "hopper",
        lambda d: entry(d, 0, 1).update(offset=float("nan")),
        "plan.pools[0].entries[1].offset",
        ["expected int, got nan"],
    ),
    (
        "offset-bool",
        "hopper",
        lambda d: entry(d, 0, 1).update(offset=True),
        "plan.pools[0].entries[1].offset",
        ["expected int, got True"],
    ),
    (
        "offset-2-to-the-64",
        "hopper",
        lambda d: entry(d, 0, 1).update(offset=2**64),
        "plan.pools[0].high_water",
        [f"reach {2**64 + 32}"],
    ),
    (
        "lanes-not-pairs",
        "blackwell",
        lambda d: entry(d, 1, 0).update(lanes=[[0, 64, 128]]),
        "plan.pools[1].entries[0].lanes[0]",
        ["an array of 2"],
    ),
]


@pytest.mark.parametrize(
    ("base", "edit", "path", "words"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_a_hand_edited_plan_is_refused_with_its_rule_and_path(base, edit, path, words):
    data = data_of(base)
    edit(data)
    with pytest.raises(PlanFileError) as info:
        MemoryPlan.from_dict(json.loads(json.dumps(data)))
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    for word in words:
        assert word in message, message


def test_every_case_has_its_own_id():
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 120


# -- what is accepted comes back exactly ---------------------------------------------------


@pytest.mark.parametrize("base", list(BASES))
def test_a_plan_the_pools_made_round_trips(base):
    plan = BASES[base]
    data = json.loads(json.dumps(plan.to_dict()))
    assert MemoryPlan.from_dict(data) == plan
    assert MemoryPlan.from_dict(data).to_dict() == data


@pytest.mark.parametrize("base", list(BASES))
def test_name_summary_and_threads_keep_the_report_and_the_svg_title(base):
    plan = BASES[base]
    named = MemoryPlan(
        plan.pools, plan.target, plan.threads, plan.advice, name=base, summary=f"the {base} plan"
    )
    loaded = plan_from_json_text(json.dumps(named.to_dict()), f"{base}.json")
    assert (loaded.name, loaded.summary, loaded.threads) == (
        base,
        f"the {base} plan",
        plan.threads,
    )
    assert loaded.format() == named.format()
    title = f"{loaded.name}: {loaded.summary}"
    assert loaded.to_svg(title) == named.to_svg(f"{base}: the {base} plan")


def test_a_plan_before_commit_round_trips():
    smem = SMEMPool(target="sm_100a", phases=("mainloop", "epilogue"))
    smem.alloc((128, 64), "bfloat16", name="A", live="mainloop")
    tmem = TMEMPool(smem, 256)
    tmem.alloc((128, 128), "float32", name="acc")
    plan = smem.plan()
    # nothing is committed: no sizes, and the slot has no offset before the SMEM commit
    assert [p.committed for p in plan.pools] == [None, None]
    assert plan.tmem[0].allocation.slot_offset is None
    assert MemoryPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan


def test_the_example_key_names_a_plan_without_a_name():
    data = {"example": "hopper-gemm", **BASES["hopper"].to_dict()}
    assert plan_from_json_text(json.dumps(data)).name == "hopper-gemm"
    data["name"] = "mine"
    assert plan_from_json_text(json.dumps(data)).name == "mine"


def test_derived_keys_are_skipped():
    data = BASES["hopper"].to_dict()
    assert data["occupancy"]["ctas_per_sm"] >= 1  # threads 128 and sm_90a: occupancy shown
    data["occupancy"] = {"anything": "is recomputed"}
    assert MemoryPlan.from_dict(data) == BASES["hopper"]


# -- JSON text -----------------------------------------------------------------------------

TEXT_CASES = [
    ("nested-arrays", "[" * 100_000, "x.json: arrays or objects nested too deep"),
    ("nested-objects", '{"a":' * 100_000, "x.json: arrays or objects nested too deep"),
    ("duplicate-key", '{"schema": 1, "schema": 1}', "the key 'schema' appears twice"),
    ("long-integer", '{"schema": ' + "1" * 5000 + "}", "x.json: not a JSON plan: Exceeds"),
    ("truncated", '{"schema": 1', "x.json:1: not valid JSON"),
    ("second-line", '{\n"schema": 1,,\n}', "x.json:2: not valid JSON"),
    ("empty", "", "x.json:1: not valid JSON"),
    ("a-number", "5", "x.json: a plan is a JSON object, got int"),
    ("a-list", "[]", "x.json: a plan is a JSON object, got list"),
    ("no-schema", "{}", "x.json: plan schema None; this tilemem reads schema 1"),
    ("schema-2", '{"schema": 2}', "x.json: plan schema 2"),
    ("nan-offset", None, "x.json: plan.pools[0].entries[1].offset: expected int, got nan"),
    ("bytes", b"{}", "x.json: a JSON plan is text, got bytes"),
]


@pytest.mark.parametrize(("text", "words"), [pytest.param(t, w, id=i) for i, t, w in TEXT_CASES])
def test_json_text_that_is_no_plan_is_refused(text, words):
    if text is None:  # NaN is what the json module reads from a hand-edited 'NaN'
        text = json.dumps(BASES["hopper"].to_dict()).replace('"offset": 16384', '"offset": NaN')
    with pytest.raises(PlanFileError) as info:
        plan_from_json_text(text, "x.json")
    assert words in str(info.value)


def test_a_byte_order_mark_is_skipped():
    text = "\ufeff" + json.dumps(BASES["blackwell"].to_dict())
    assert plan_from_json_text(text) == BASES["blackwell"]


def test_overlaps_are_found_by_a_sweep_not_by_all_pairs():
    # 20,000 buffers side by side: all pairs would be 2 * 10**8 comparisons (minutes in
    # Python); the sweep in order of offset compares each buffer with its neighbour only
    entries = [
        PlanEntry(f"b{i}", "shared.dyn", 16 * i, 16, 16, 0, "float32", (4,), "row-major")
        for i in range(20_000)
    ]
    entries.append(PlanEntry("all", "shared.dyn", 0, 32, 16, 0, "float32", (8,), "row-major"))
    start = time.process_time()  # CPU time: robust to a loaded machine
    partners = _partners(entries)
    assert time.process_time() - start < 10.0
    assert partners["all"] == {"b0", "b1"} and partners["b1"] == {"all"}
    assert sum(len(p) for p in partners.values()) == 4  # two pairs, each seen from both ends
