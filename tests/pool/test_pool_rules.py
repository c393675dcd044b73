"""Pool rules that once failed: each test pins one fix and fails on the code before it.

Column and byte numbers are worked out by hand in the comments from docs/DESIGN.md#smem-pools and
#tmem-pools and docs/HARDWARE-RULES.md (swizzle periods 256/512/1024 B; TMEM 128 lanes x 512
columns).
"""

import json
import math
import time

import numpy as np
import pytest

from tilemem import SMEMPool, TMEMPool, TMEMStages
from tilemem.errors import AllocationError, PoolStateError, SwizzleError, TargetError
from tilemem.layout import (
    ComposeLayout,
    SwizzleLayout,
    TileLayout,
    mma_shared_layout,
    tmem_datapath_layout,
)
from tilemem.plan import padding_advice


def tmem_pool(total_cols=512):
    return TMEMPool(SMEMPool(), total_cols)


# --- TMEM columns come from the layout's real footprint ---------------------------------


def test_tmem_columns_of_a_staged_buffer_cover_every_stage():
    # (4, 2, 8) float32, default layout: stage s at column 8*s, so columns 0..31 -> 32 columns
    tmem = tmem_pool()
    staged = tmem.alloc((4, 2, 8), name="staged")
    after = tmem.alloc((128, 32), name="after")
    assert staged.cols == 32 and after.col_offset == 32
    assert staged.layout.apply(3, 1, 7) == {"TLane": 1, "TCol": 31}
    assert smem_plan_overlaps(tmem) == []


def smem_plan_overlaps(tmem):
    return tmem.smem_pool.plan().tmem[0].overlaps


def test_tmem_staged_accumulators_fit_all_of_tmem():
    # (2, 128, 256) float32: two 256-column stages side by side = 512 columns
    buf = tmem_pool().alloc((2, 128, 256))
    assert buf.cols == 512 and buf.layout.apply(1, 127, 255) == {"TLane": 127, "TCol": 511}


def test_cols_below_the_layout_footprint_is_refused():
    with pytest.raises(AllocationError, match=r"cols=16 but the layout .* spans 256 columns"):
        tmem_pool().alloc((128, 256), cols=16)


def test_cols_above_the_footprint_reserves_them():
    tmem = tmem_pool()
    tmem.alloc((128, 32), cols=64)
    assert tmem.alloc((128, 32)).col_offset == 64


def test_a_tmem_layout_on_the_smem_axis_is_refused():
    with pytest.raises(AllocationError, match="'TLane' and 'TCol' only"):
        tmem_pool().alloc((128, 32), layout=TileLayout.row_major((128, 32)))


def test_a_swizzled_layout_is_refused_in_tmem():
    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    with pytest.raises(AllocationError, match="TileLayout on axes TLane/TCol"):
        tmem_pool().alloc((64, 64), "bfloat16", layout=layout)


# --- SMEM: custom swizzled layouts keep their period ------------------------------------


def test_custom_swizzled_layout_starts_on_its_period():
    # 128B swizzle of bf16: SwizzleLayout(3, 3, 3) repeats every 2**9 elements = 1024 bytes
    smem = SMEMPool()
    smem.alloc((1,), "uint8")
    tile = smem.alloc((64, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (64, 64)))
    assert tile.byte_offset == 1024 and tile.align == 1024


def test_a_64b_swizzle_composed_by_hand_aligns_to_512_bytes():
    # SwizzleLayout(pe=3, L=2, a=3) on bf16: period 2**8 elements = 512 bytes (Swizzle<2,4,3>)
    layout = ComposeLayout(SwizzleLayout(3, 2, 3), TileLayout.row_major((8, 32)))
    smem = SMEMPool()
    smem.alloc((3,), "uint8")
    assert smem.alloc((8, 32), "bfloat16", layout=layout).byte_offset == 512


def test_padding_advice_never_moves_a_swizzled_tile_off_its_period():
    # A (1024 B, 128B swizzle) at 0, f 1 byte at 1024, g float32 align 1024 at 2048: 2052 bytes.
    # Keeping A on a 1024-byte boundary the best order is A, g, f: 0, 1024, 1028 -> 1029 bytes.
    # With A's alignment taken as the 16 bytes asked for, g, f, A (A at 16) "gives" 1040.
    smem = SMEMPool()
    smem.alloc_mma((8, 64), "bfloat16", "128B", align=16, name="A")
    smem.alloc((1,), "uint8", name="f")
    smem.alloc((1,), "float32", align=1024, name="g")
    pool = smem.plan().smem
    assert [e.align for e in pool.entries] == [1024, 1, 1024]
    assert "(high-water 2052 -> 1029)" in padding_advice(pool)[1]


# --- state rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [
        lambda t: t.alloc((128, 32)),
        lambda t: t.alloc_sf((128, 16), "float8_e4m3fn", sf_per_mma=4),
        lambda t: t.move_base_to(0),
    ],
    ids=["alloc", "alloc_sf", "move_base_to"],
)
def test_tmem_pool_is_closed_after_commit(action):
    tmem = tmem_pool(32)
    tmem.commit()
    with pytest.raises(PoolStateError, match="after commit"):
        action(tmem)


def test_tmem_pool_is_closed_after_dealloc():
    tmem = tmem_pool(32)
    tmem.commit()
    tmem.dealloc()
    with pytest.raises(PoolStateError, match=r"after dealloc\(\)"):
        tmem.alloc((128, 32))


# --- move_base_to raises the high-water mark (docs/DESIGN.md#smem-pools, as TIRx) ---


def test_smem_move_beyond_the_high_water_mark_reserves_it():
    smem = SMEMPool()
    smem.alloc((16,), "uint8")
    smem.move_base_to(4096)
    assert smem.max_offset == 4096 and smem.commit() == 4096


def test_smem_allocation_after_a_move_continues_from_there():
    smem = SMEMPool()
    smem.alloc((64,), "uint8")
    smem.move_base_to(8)
    buf = smem.alloc((4,), "float32")
    assert (buf.byte_offset, smem.offset, smem.max_offset) == (8, 24, 64)


def test_tmem_move_beyond_the_high_water_mark_sizes_auto():
    tmem = TMEMPool(SMEMPool(), "auto")
    tmem.alloc((128, 32))
    tmem.move_base_to(100)
    assert tmem.max_offset == 100 and tmem.commit() == 128


# --- tmem_addr= and the positional alloc form (TIRx parity) -------------------------------


def test_tmem_addr_reuses_an_existing_slot():
    smem = SMEMPool()
    slot = smem.alloc((1,), "uint32", name="slot")
    tmem = TMEMPool(smem, 32, tmem_addr=slot)
    assert tmem.slot is slot and [b.name for b in smem.buffers] == ["slot"]


@pytest.mark.parametrize("slot", [5, "slot", object()])
def test_tmem_addr_must_be_a_buffer(slot):
    with pytest.raises(AllocationError, match="32-bit shared-memory buffer"):
        TMEMPool(SMEMPool(), 32, tmem_addr=slot)


def test_tmem_addr_of_another_pool_is_refused():
    other = SMEMPool(name="other").alloc((1,), "uint32")
    with pytest.raises(AllocationError, match="another CTA's shared memory"):
        TMEMPool(SMEMPool(), 32, tmem_addr=other)


@pytest.mark.parametrize("scope", ["shared.dyn", "shared"])
def test_positional_alloc_form(scope):
    smem = SMEMPool()
    smem.alloc((1,), "uint8")
    buf = smem.alloc((4,), "float32", None, scope, 64)
    assert (buf.byte_offset, buf.align, buf.nbytes) == (64, 64, 16)


def test_positional_alloc_refuses_other_scopes():
    with pytest.raises(AllocationError, match="scope must be one of"):
        SMEMPool().alloc((4,), "float32", None, "global", 0)


# --- names ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "1x", "a-b", "int", "class", "tm_f16", "__x", "é", 7])
def test_bad_buffer_names_are_refused(name):
    smem = SMEMPool()
    with pytest.raises(AllocationError, match="name"):
        smem.alloc((4,), name=name)
    assert smem.buffers == ()


def test_smem_and_tmem_buffers_share_one_namespace():
    smem = SMEMPool()
    tmem = TMEMPool(smem, 32)
    smem.alloc((4,), name="x")
    with pytest.raises(AllocationError, match="already has a buffer named 'x'"):
        tmem.alloc((128, 32), name="x")


def test_generated_slot_name_steps_around_a_user_name():
    smem = SMEMPool()
    smem.alloc((4,), name="tmem_addr")
    tmem = TMEMPool(smem, 32)
    assert tmem.slot.name == "tmem_addr1"


def test_auto_names_step_around_user_names():
    smem = SMEMPool()
    smem.alloc((4,), name="buf1")
    assert [smem.alloc((4,)).name for _ in range(2)] == ["buf2", "buf3"]


# --- shapes and integers -----------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,fact",
    [
        ((4.7, 128, 64), "extent 4.7 (float) is not an integer"),
        ((4.0, 128, 64), "extent 4.0 (float) is not an integer"),
        ((True, 128, 64), "extent True (bool) is not an integer"),
        ((-1, 128, 64), "extent -1 is below 1"),
        ((), "got ()"),
        ("128", "got '128'"),
    ],
)
def test_alloc_mma_shapes_are_checked(shape, fact):
    with pytest.raises(AllocationError) as exc:
        SMEMPool().alloc_mma(shape, "bfloat16")
    assert fact in str(exc.value)


def test_numpy_integers_become_python_ints_and_the_plan_stays_json():
    smem = SMEMPool()
    buf = smem.alloc(np.array([4, 8])[0:2], "float32", align=np.int64(16))
    smem.move_base_to(np.int32(64))
    smem.alloc((np.int64(2),))
    smem.commit()
    assert buf.shape == (4, 8) and all(type(s) is int for s in buf.shape)
    json.dumps(smem.plan().to_dict())


@pytest.mark.parametrize("size", [math.nan, 1.5, "64", True, -1])
def test_commit_size_must_be_an_integer(size):
    smem = SMEMPool()
    with pytest.raises(AllocationError, match="commit size"):
        smem.commit(size)
    assert not smem.committed


# --- TMEMStages: a pure, checked view ------------------------------------------------------


def test_stages_made_directly_change_nothing_in_the_pool():
    tmem = tmem_pool()
    acc = tmem.alloc((128, 512), name="acc")
    before = tmem.smem_pool.plan().to_dict()
    TMEMStages(acc, 0, 256, 2)
    assert tmem.smem_pool.plan().to_dict() == before and tmem.stage_views == ()


def test_several_stage_views_of_one_buffer_are_all_listed():
    tmem = tmem_pool()
    acc = tmem.alloc((128, 512), name="acc")
    tmem.stages(acc, 0, 256, 2)
    tmem.stages(acc, 0, 128, 4)
    stages = tmem.pool_plan().stages
    assert [(v.buffer, v.spans) for v in stages] == [
        ("acc", ((0, 256), (256, 512))),
        ("acc", ((0, 128), (128, 256), (256, 384), (384, 512))),
    ]


def test_a_window_that_is_no_strided_layout_is_refused_when_made():
    # data path B, 64 x 256: columns 0..127 on lanes 0..63, 128..255 on lanes 64..127;
    # a 100-column window from 100 crosses the fold
    tmem = tmem_pool()
    buf = tmem.alloc((64, 256), datapath="B")
    with pytest.raises(AllocationError, match=r"stage 0 columns \[100, 200\)"):
        TMEMStages(buf, 100, 100)
    tmem.smem_pool.plan()


def test_a_stride_zero_multi_stage_view_is_refused_at_once():
    acc = tmem_pool().alloc((128, 512))
    start = time.process_time()  # CPU time: robust to a loaded machine
    with pytest.raises(AllocationError, match="stride=0 makes all 500 stages the same"):
        TMEMStages(acc, 0, 1, stages=500, stride=0)
    assert time.process_time() - start < 0.5


def test_stage_count_is_bounded_by_tensor_memory():
    acc = tmem_pool().alloc((128, 512))
    with pytest.raises(AllocationError, match=r"stages must be an integer in \[1, 512\]"):
        TMEMStages(acc, 0, 1, stages=10**6, stride=1)


# --- plans ---------------------------------------------------------------------------------


def test_a_user_tile_layout_reads_as_its_iters_in_the_plan():
    smem = SMEMPool()
    smem.alloc((4, 8), "float32", layout=TileLayout.of((4, 8), (1, 4)), name="colmajor")
    (entry,) = smem.plan().smem.entries
    assert entry.layout == "(4:1@m, 8:4@m)"


def test_tmem_is_refused_on_plain_sm_100():
    with pytest.raises(TargetError, match="code built for sm_100 cannot use tensor memory"):
        TMEMPool(SMEMPool(target="sm_100"), 32)


def test_default_layout_of_128_rows_is_data_path_d():
    assert tmem_pool().alloc((128, 64)).layout == tmem_datapath_layout("D", 128, 64)


@pytest.mark.parametrize("bits", [4, 5, 7])
def test_a_swizzle_of_more_than_3_bits_is_refused_before_the_pool_changes(bits):
    # the hardware swizzles XOR 1, 2 or 3 address bits (32B, 64B, 128B: PTX ISA, "Tensor
    # Memory Accelerator: swizzling modes"); SwizzleLayout(3, 4, 3) would be a 256B mode
    layout = ComposeLayout(SwizzleLayout(3, bits, 3), TileLayout.row_major((8, 64)))
    smem = SMEMPool()
    smem.alloc((3,), "uint8", name="x")
    with pytest.raises(SwizzleError, match=f"XORs {bits} address bits is none of the hardware"):
        smem.alloc((8, 64), "bfloat16", layout=layout, name="t")
    assert [b.name for b in smem.buffers] == ["x"]
    assert smem.alloc((8, 64), "bfloat16", name="t").name == "t"  # the name is still free
