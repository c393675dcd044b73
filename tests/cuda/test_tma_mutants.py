"""Host-side tensor-map rules at their boundaries (tilemem.cuda.tma), without a GPU.

Limits from the CUDA driver API's cuTensorMapEncodeTiled (tensorRank 1..5; boxDim[i] in
1..256; globalAddress 16-byte aligned; globalStrides multiples of 16) and PTX ISA 9.0
"Tensor Data Types" (4-bit elements are packed two per byte).
"""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.cuda.tma import (
    EncodedTensorMap,
    HostTensorMap,
    TensorMapPlan,
    TMAError,
    check_plan,
    plan_tile_map,
    tile_map,
)
from tilemem.dtype import DataType
from tilemem.layout.smem import SwizzleMode


def _plan(**kw) -> TensorMapPlan:
    fields = dict(
        dtype=DataType("float32"),
        global_dims=(64, 64),
        global_strides=(256,),
        box=(4, 1),  # 4 float32 = 16 bytes inner, one row
        swizzle=SwizzleMode.SWIZZLE_NONE,
        address=0x1000,
    )
    fields.update(kw)
    return TensorMapPlan(**fields)


def test_a_box_dimension_of_1_is_accepted_and_0_refused():
    check_plan(_plan(), "t")  # boxDim[1] = 1: the smallest box the driver takes
    with pytest.raises(TMAError, match=r"t: box dimension 1 is 0; each must be in \[1, 256\]"):
        check_plan(_plan(box=(4, 0)), "t")


def test_a_rank_5_map_is_accepted_and_rank_6_refused():
    dims, strides = (64, 2, 2, 2, 2), (256, 512, 1024, 2048)
    check_plan(_plan(global_dims=dims, global_strides=strides, box=(4, 1, 1, 1, 1)), "t")
    with pytest.raises(TMAError, match=r"t: a tensor map has at most 5 dimensions, got 6"):
        check_plan(
            _plan(global_dims=(*dims, 2), global_strides=(*strides, 4096), box=(4, 1, 1, 1, 1, 1)),
            "t",
        )


def test_defaults_of_the_public_constructors():
    # a plan made by hand is one box per tile; a host map holds one element per array item
    # unless told it is packed; L2 promotion defaults to none (CU_TENSOR_MAP_L2_PROMOTION_NONE)
    assert _plan().boxes_per_tile == 1
    assert HostTensorMap(_plan(), np.zeros((64, 64), np.float32)).packed is False
    for fn in (tile_map, EncodedTensorMap.__init__):
        assert inspect.signature(fn).parameters["l2_promotion"].default == 0


def _tile(shape=(64, 64), dtype="float32", mode="128B"):
    return SMEMPool().alloc_mma(shape, dtype, mode)


def test_host_maps_of_whole_byte_types_are_not_packed():
    buf = _tile()
    assert tile_map(np.zeros((64, 64), np.float32), buf).packed is False
    fp4 = _tile((64, 256), "float4_e2m1fn")
    assert tile_map(np.zeros((64, 256), ml_dtypes.float4_e2m1fn), fp4).packed is False
    assert tile_map(np.zeros((64, 128), np.uint8), fp4).packed is True


def test_an_e2m1_map_takes_e2m1_elements_or_packed_bytes_only():
    fp4 = _tile((64, 256), "float4_e2m1fn")
    with pytest.raises(TMAError, match=r"holds float4_e2m1fn but the array has float32 elements"):
        tile_map(np.zeros((64, 256), np.float32), fp4)


def test_tile_map_takes_a_2d_c_contiguous_array():
    buf = _tile()
    with pytest.raises(TMAError, match=r"tile_map takes a 2-D row-major tensor, got shape"):
        tile_map(np.zeros((2, 64, 64), np.float32), buf)
    with pytest.raises(TMAError, match=r"tile_map takes a 2-D row-major tensor, got shape None"):
        tile_map(object(), buf)
    with pytest.raises(TMAError, match=r"tile_map takes a C-contiguous \(row-major\) numpy"):
        tile_map(np.zeros((64, 128), np.float32)[:, ::2], buf)


def test_a_map_needs_a_shared_memory_buffer_of_at_least_2_dimensions():
    smem = SMEMPool()
    tmem = TMEMPool(smem, 32, name="tmem")
    acc = tmem.alloc((128, 32), "float32", datapath="D", name="acc")
    with pytest.raises(TMAError, match=r"a TMA map copies into a shared-memory pool buffer.*acc"):
        plan_tile_map(acc, 0x1000, 128, 32)
    flat = SMEMPool().alloc((256,), "float32", name="flat")
    with pytest.raises(TMAError, match=r"flat: a tile map needs a buffer of shape"):
        plan_tile_map(flat, 0x1000, 1, 256)


def test_plan_tile_map_checks_the_plan():
    with pytest.raises(TMAError, match=r"the global address 0x1008 is not 16-byte aligned"):
        plan_tile_map(_tile(), 0x1008, 64, 64)


def test_e2m1_rows_need_whole_bytes_only():
    # 258 e2m1 elements are 129 bytes: whole bytes, so with a 144-byte pitch the map is legal;
    # 257 elements end inside a byte
    fp4 = _tile((64, 256), "float4_e2m1fn")
    plan = plan_tile_map(fp4, 0x1000, 64, 258, row_pitch_bytes=144)
    assert plan.global_dims == (258, 64) and plan.global_strides == (144,)
    with pytest.raises(TMAError, match=r"257 columns of float4_e2m1fn do not fill whole bytes"):
        plan_tile_map(fp4, 0x1000, 64, 257, row_pitch_bytes=144)


# -- the cuTensorMapEncodeTiled call, against a stand-in for the driver bindings -------------


class _FakeDriver:
    """Records the arguments of cuTensorMapEncodeTiled; the enums and integer wrappers pass
    their values through."""

    def __init__(self, err: int = 0):
        self.err, self.calls = err, []
        for name in ("CUtensorMapDataType", "CUtensorMapSwizzle", "CUtensorMapL2promotion"):
            setattr(self, name, lambda v: ("enum", v))
        self.CUtensorMapInterleave = type("I", (), {"CU_TENSOR_MAP_INTERLEAVE_NONE": "none"})
        self.CUtensorMapFloatOOBfill = type(
            "F", (), {"CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE": "nofill"}
        )

    cuuint64_t = staticmethod(lambda v: ("u64", v))
    cuuint32_t = staticmethod(lambda v: ("u32", v))

    def cuTensorMapEncodeTiled(self, *args):
        self.calls.append(args)
        return self.err, type("T", (), {"getPtr": lambda self: 0xCAFE00})()


class _DeviceTensor:
    """A device tensor as __cuda_array_interface__ (version 3) describes it."""

    def __init__(self, shape, typestr, ptr=0x7F0000):
        self.shape = shape
        self.__cuda_array_interface__ = {
            "data": (ptr, False),
            "shape": shape,
            "typestr": typestr,
            "version": 3,
        }


@pytest.fixture
def fake_driver(monkeypatch):
    import tilemem.cuda.tma as tma_module

    drv = _FakeDriver()
    monkeypatch.setattr(tma_module, "driver", lambda: drv)
    return drv


def test_a_device_map_encodes_dense_elements_of_its_plan(fake_driver):
    # cuTensorMapEncodeTiled(type, rank, address, globalDim[rank], globalStrides[rank - 1],
    # boxDim[rank], elementStrides[rank] (1: every element), interleave, swizzle, L2
    # promotion, OOB fill); CU_TENSOR_MAP_SWIZZLE_128B = 3, L2_PROMOTION_L2_128B = 2
    buf = _tile((64, 64), "float32", "128B")
    tmap = tile_map(_DeviceTensor((256, 512), "<f4"), buf, l2_promotion=128)
    assert tmap.address == 0xCAFE00
    ((dtype, rank, address, dims, strides, box, elem, inter, swz, l2, oob),) = fake_driver.calls
    assert (dtype, rank, address) == (("enum", DataType("float32").tma_code), 2, 0x7F0000)
    assert dims == [("u64", 512), ("u64", 256)] and strides == [("u64", 512 * 4)]
    assert box == [("u32", 32), ("u32", 64)]  # 128 bytes of float32 per swizzle row
    assert elem == [("u32", 1), ("u32", 1)]
    assert (inter, swz, l2, oob) == ("none", ("enum", 3), ("enum", 2), "nofill")


def test_a_packed_e2m1_device_tensor_has_two_elements_per_byte(fake_driver):
    buf = _tile((64, 256), "float4_e2m1fn", "128B")
    tile_map(_DeviceTensor((64, 128), "|u1"), buf)  # 64 rows of 128 bytes: 256 elements
    ((_, _, _, dims, strides, *_),) = fake_driver.calls
    assert dims == [("u64", 256), ("u64", 64)] and strides == [("u64", 128)]
    assert fake_driver.calls[0][9] == ("enum", 0)  # L2 promotion none by default


def test_a_rejected_encoding_is_a_tma_error(fake_driver):
    fake_driver.err = 1  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(TMAError, match=r"cuTensorMapEncodeTiled rejected .*: error 1"):
        tile_map(_DeviceTensor((64, 64), "<f4"), _tile())


def test_l2_promotion_takes_the_driver_s_four_sizes_only():
    # CUtensorMapL2promotion: NONE, L2_64B, L2_128B, L2_256B
    with pytest.raises(TMAError, match=r"L2 promotion is one of \[0, 64, 128, 256\] bytes, got 32"):
        EncodedTensorMap(_plan(), 32)


def test_a_map_takes_arrays_of_its_buffer_s_element_width():
    with pytest.raises(TMAError, match=r"holds float32 \(32 bits\) but the array has float64"):
        tile_map(np.zeros((64, 64), np.float64), _tile())
