"""The remaining user-error paths of the pools: each raises its class with the key facts."""

import pytest

from tilemem import SMEMPool, TMEMPool, TMEMStages
from tilemem.errors import AllocationError, LayoutError
from tilemem.layout import TileLayout


def tmem_pool():
    return TMEMPool(SMEMPool(), 512)


CASES = [
    (
        "strides and layout",
        lambda: SMEMPool().alloc((4,), strides=(1,), layout=TileLayout.row_major((4,))),
        AllocationError,
        "either strides or layout",
    ),
    (
        "layout string",
        lambda: SMEMPool().alloc((4,), layout="swizzled"),
        AllocationError,
        "'swizzled'",
    ),
    ("layout object", lambda: SMEMPool().alloc((4,), layout=42), AllocationError, "42"),
    ("smem move negative", lambda: SMEMPool().move_base_to(-8), AllocationError, "-8"),
    (
        "unknown swizzle",
        lambda: SMEMPool().alloc_mma((64, 64), "bfloat16", "256B"),
        LayoutError,
        "'256B'",
    ),
    ("tmem needs smem pool", lambda: TMEMPool(None), AllocationError, "SMEMPool"),
    (
        "slot must be 32-bit smem",
        lambda: TMEMPool(SMEMPool(), 32, tmem_addr=tmem_pool().alloc((128, 32))),
        AllocationError,
        "32-bit shared-memory",
    ),
    (
        "tmem lanes",
        lambda: tmem_pool().alloc((64, 32), layout=TileLayout.of((64, 32), ("4@TLane", "1@TCol"))),
        AllocationError,
        "lane 252",
    ),
    ("tmem rows", lambda: tmem_pool().alloc((256, 32)), AllocationError, "256 rows"),
    ("tmem 1-D", lambda: tmem_pool().alloc((32,)), AllocationError, "(rows, cols)"),
    (
        "tmem cols",
        lambda: tmem_pool().alloc((128, 32), cols=0),
        AllocationError,
        "cols (32-bit TMEM columns) must be an integer in [1, 512], got 0",
    ),
    (
        "tmem layout type",
        lambda: tmem_pool().alloc((128, 32), layout="D"),
        AllocationError,
        "Layout",
    ),
    (
        "tmem layout size",
        lambda: tmem_pool().alloc(
            (128, 32), layout=TileLayout.of((128, 16), ("1@TLane", "1@TCol"))
        ),
        AllocationError,
        "holds 2048",
    ),
    ("tmem move range", lambda: tmem_pool().move_base_to(600), AllocationError, "[0, 512]"),
    (
        "sf rank",
        lambda: tmem_pool().alloc_sf((16,), "float8_e4m3fn", sf_per_mma=4),
        AllocationError,
        "(rows, SF_K * sf_reuse)",
    ),
    (
        "sf rows",
        lambda: tmem_pool().alloc_sf((100, 16), "float8_e4m3fn", sf_per_mma=4),
        AllocationError,
        "multiple of 32",
    ),
]


@pytest.mark.parametrize("label,call,error,fact", CASES, ids=[c[0] for c in CASES])
def test_error_path(label, call, error, fact):
    with pytest.raises(error) as exc:
        call()
    assert fact in str(exc.value)


def test_stage_parameters_are_checked():
    acc = tmem_pool().alloc((128, 256))
    with pytest.raises(AllocationError, match="width must be an integer >= 1, got 0"):
        TMEMStages(acc, 0, 0)
    with pytest.raises(AllocationError, match="stage index must be an int"):
        TMEMStages(acc, 0, 128, 2)["0"]
    with pytest.raises(AllocationError, match="slice a:b"):
        TMEMStages(acc, 0, 128, 2)[0, 0:64:2]
