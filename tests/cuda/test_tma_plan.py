"""Host-side TMA rules (docs/HARDWARE-RULES.md#tma), checked without a GPU."""

import struct

import numpy as np
import pytest

from tilemem import SMEMPool
from tilemem.cuda.launch import LaunchError, scalar_argument
from tilemem.cuda.tma import (
    HostTensorMap,
    TensorMapPlan,
    TMAError,
    check_plan,
    plan_tile_map,
    tile_map,
)
from tilemem.dtype import DataType
from tilemem.layout import TileLayout
from tilemem.layout.smem import SwizzleMode


def tile(shape, dtype, mode):
    return SMEMPool().alloc_mma(shape, dtype, mode)


@pytest.mark.parametrize(
    "mode,cols,box_cols,boxes",
    [("128B", 128, 64, 2), ("64B", 64, 32, 2), ("32B", 64, 16, 4), ("none", 64, 8, 8)],
)
def test_tile_maps_cut_k_into_swizzle_row_boxes(mode, cols, box_cols, boxes):
    buf = tile((2, 64, cols), "bfloat16", mode)
    plan = plan_tile_map(buf, 0x1000, 1024, 4096)
    assert plan.box == (box_cols, 64) and plan.boxes_per_tile == boxes
    assert plan.swizzle == SwizzleMode.parse(mode) and plan.global_strides == (4096 * 2,)
    assert plan.box_bytes * boxes * 2 == buf.nbytes


def base(**kw):
    fields = dict(
        dtype=DataType("bfloat16"),
        global_dims=(512, 512),
        global_strides=(1024,),
        box=(64, 64),
        swizzle=SwizzleMode.SWIZZLE_128B_ATOM,
        address=0x1000,
    )
    fields.update(kw)
    return TensorMapPlan(**fields)


@pytest.mark.parametrize(
    "change,fact",
    [
        (dict(box=(128, 64)), "inner box is 256 bytes but SWIZZLE_128B_ATOM allows at most 128"),
        (
            dict(box=(4, 64), swizzle=SwizzleMode.SWIZZLE_NONE),
            "inner box is 8 bytes; TMA needs a multiple of 16",
        ),
        (dict(box=(64, 300), global_dims=(512, 512)), "box dimension 1 is 300"),
        (dict(address=0x1008), "not 16-byte aligned"),
        (dict(global_strides=(1000,)), "global stride 1 is 1000 bytes"),
        (
            dict(
                global_dims=(1,) * 6,
                global_strides=(16,) * 5,
                box=(1,) * 6,
                swizzle=SwizzleMode.SWIZZLE_NONE,
            ),
            "at most 5 dimensions",
        ),
    ],
)
def test_each_tma_rule_has_a_clear_error(change, fact):
    check_plan(base(), "ok")  # the base plan is legal
    with pytest.raises(TMAError) as exc:
        check_plan(base(**change), "A")
    assert fact in str(exc.value)


def test_a_box_may_reach_past_the_tensor():
    # CUDA Driver API, cuTensorMapEncodeTiled: boxDim is bounded by 1..256, the inner box's
    # 16-byte multiple and the swizzle span only, never by globalDim; a load fills the
    # elements outside the tensor (oobFill) and a store skips them. A 64 x 64 box over a
    # 5 x 32 matrix (32 columns of 64, 5 rows of 64) is legal.
    check_plan(base(global_dims=(32, 5), global_strides=(64,)), "A")


def test_tile_map_rejects_unsupported_dtypes_and_tmem():
    fp6 = SMEMPool().alloc((64, 128), "float6_e2m3fn", align=128)
    with pytest.raises(TMAError, match="no element type for float6_e2m3fn"):
        plan_tile_map(fp6, 0, 64, 128)


def test_fp4_tiles_move_packed_two_elements_per_byte():
    # 16U4_ALIGN8B: no gaps, so one 128-byte swizzle row holds 256 e2m1 elements; a 64 x 256
    # tile is one 256 x 64 box of 64 * 256 / 2 = 8192 bytes; 4096 columns are 2048-byte rows
    buf = tile((2, 64, 256), "float4_e2m1fn", "128B")
    plan = plan_tile_map(buf, 0x1000, 1024, 4096)
    assert plan.box == (256, 64) and plan.boxes_per_tile == 1
    assert plan.global_strides == (2048,) and plan.box_bytes == 8192
    assert plan.box_bytes * 2 == buf.nbytes
    # without swizzle: one 16-byte core-matrix column is 32 elements
    assert plan_tile_map(tile((64, 256), "float4_e2m1fn", "none"), 0, 64, 256).box == (32, 64)
    with pytest.raises(TMAError, match="do not fill whole bytes"):
        plan_tile_map(buf, 0x1000, 64, 4095)


def test_fp4_host_arrays_are_ml_dtypes_elements_or_packed_bytes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    buf = tile((64, 256), "float4_e2m1fn", "128B")
    unpacked = tile_map(np.zeros((64, 512), ml_dtypes.float4_e2m1fn), buf)
    packed = tile_map(np.zeros((64, 256), np.uint8), buf)
    assert isinstance(unpacked, HostTensorMap) and isinstance(packed, HostTensorMap)
    assert not unpacked.packed and packed.packed
    # both describe a 64 x 512 e2m1 matrix of 256-byte rows (what the hardware reads)
    assert unpacked.plan.global_dims == packed.plan.global_dims == (512, 64)
    assert unpacked.plan.global_strides == packed.plan.global_strides == (256,)
    with pytest.raises(TMAError, match="uint8 bytes of packed pairs"):
        tile_map(np.zeros((64, 512), np.int8), buf)


def test_a_row_major_buffer_maps_to_one_box_as_wide_as_its_rows():
    # 64 bf16 = 128-byte rows: one 64 x 64 box, no swizzle (not eight 16-byte boxes)
    smem = SMEMPool()
    smem.alloc((3,), "uint64")
    buf = smem.alloc((64, 64), "bfloat16", align=128)
    plan = plan_tile_map(buf, 0x1000, 1024, 4096)
    assert plan.box == (64, 64) and plan.boxes_per_tile == 1
    assert plan.swizzle == SwizzleMode.SWIZZLE_NONE


def test_a_layout_tma_cannot_fill_is_refused_before_any_map_exists():
    smem = SMEMPool()
    buf = smem.alloc((64, 64), "bfloat16", align=128, layout=TileLayout.of((64, 64), (1, 64)))
    with pytest.raises(TMAError, match="TMA cannot fill"):
        plan_tile_map(buf, 0x1000, 1024, 4096)


@pytest.mark.parametrize(
    "dtype,value,fmt",
    [
        ("int32", -5, "<i"),
        ("uint32", 2**32 - 1, "<I"),
        ("float32", 1.5, "<f"),
        ("int64", -(2**40), "<q"),
        ("uint8", 200, "<B"),
    ],
)
def test_scalar_arguments_are_the_bytes_of_their_c_type(dtype, value, fmt):
    # golden bytes from Python's struct (little-endian C types), independent of tilemem
    assert bytes(scalar_argument(DataType(dtype), value, "k")) == struct.pack(fmt, value)


def test_a_scalar_that_does_not_fit_is_a_launch_error():
    with pytest.raises(LaunchError, match="takes an integer"):
        scalar_argument(DataType("int32"), 2.5, "k")
    with pytest.raises(LaunchError, match="does not fit int8"):
        scalar_argument(DataType("int8"), 300, "k")
    with pytest.raises(LaunchError, match="bfloat16 scalar cannot be passed"):
        scalar_argument(DataType("bfloat16"), 1.0, "k")


def test_tma_element_codes_are_cuda_h_enumerators():
    # CUtensorMapDataType in cuda.h: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5,
    # FLOAT16 6, FLOAT32 7, FLOAT64 8, BFLOAT16 9, ..., 16U4_ALIGN8B 13
    codes = {n: DataType(n).tma_code for n in ("uint8", "uint16", "uint32", "int32", "uint64")}
    assert codes == {"uint8": 0, "uint16": 1, "uint32": 2, "int32": 3, "uint64": 4}
    assert [DataType(n).tma_code for n in ("int64", "float16", "float32", "float64")] == [
        5,
        6,
        7,
        8,
    ]
    assert DataType("bfloat16").tma_code == 9 and DataType("float4_e2m1fn").tma_code == 13
    assert DataType("float6_e2m3fn").tma_code is None
