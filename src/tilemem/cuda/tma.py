"""TMA tensor maps between a global tensor and a pool buffer (HARDWARE.md, "TMA").

A K-major operand tile ``(..., R, K)`` is laid out as ``K / C`` column blocks
of ``R x C`` elements, ``C`` one swizzle row (for no swizzle: one 16-byte core
matrix column). A swizzled TMA box may be at most one swizzle row wide, so a
tile is copied as ``K / C`` boxes of ``C x R``, box ``b`` landing at the
tile's column block ``b`` (``T.ptx.tma.load_tile`` issues them). The map's
swizzle is read from the buffer's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtype import DataType
from ..errors import TilememError
from ..layout import ComposeLayout, layout_swizzle_mode
from ..layout.smem import SwizzleMode
from ..pool import SMEM, Buffer
from .device import array_shape, device_pointer, driver

MAX_BOX = 256
MAX_RANK = 5

# CUtensorMapDataType enumerators (cuda.h)
_DTYPE_CODES = {
    "uint8": 0,
    "int8": 0,
    "float8_e4m3fn": 0,
    "float8_e5m2": 0,
    "float8_e8m0fnu": 0,
    "bool": 0,
    "uint16": 1,
    "int16": 1,
    "uint32": 2,
    "int32": 3,
    "uint64": 4,
    "int64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
_SWIZZLE_CODES = {
    SwizzleMode.SWIZZLE_NONE: 0,
    SwizzleMode.SWIZZLE_32B_ATOM: 1,
    SwizzleMode.SWIZZLE_64B_ATOM: 2,
    SwizzleMode.SWIZZLE_128B_ATOM: 3,
}


class TMAError(TilememError, ValueError):
    """A tensor map that breaks a TMA rule; the message says which and how to fix it."""


@dataclass(frozen=True)
class TensorMapPlan:
    """Everything ``cuTensorMapEncodeTiled`` needs, already checked against the TMA rules."""

    dtype: DataType
    global_dims: tuple  # innermost first, in elements
    global_strides: tuple  # bytes, for dims 1..rank-1
    box: tuple  # innermost first
    swizzle: SwizzleMode
    address: int
    boxes_per_tile: int = 1  # boxes along K that fill one (R, K) tile

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def box_bytes(self) -> int:
        n = 1
        for b in self.box:
            n *= b
        return n * self.dtype.bits // 8


def plan_tile_map(
    buf: Buffer, address: int, rows: int, cols: int, row_pitch_bytes: int | None = None
) -> TensorMapPlan:
    """Map a row-major global matrix ``rows x cols`` (at ``address``) to tiles of ``buf`` (shape
    ``(..., R, K)``)."""
    if not isinstance(buf, Buffer) or buf.scope != SMEM:
        raise TMAError(f"a TMA map copies into a shared-memory pool buffer, got {buf!r}")
    dtype = buf.dtype
    if dtype.name not in _DTYPE_CODES:
        raise TMAError(f"TMA has no element type for {dtype.name}; copy it as uint8")
    if len(buf.shape) < 2:
        raise TMAError(
            f"{buf.name}: a tile map needs a buffer of shape (..., R, K), got {buf.shape}"
        )
    tile_rows, tile_cols = buf.shape[-2:]
    mode = layout_swizzle_mode(buf.layout)
    esize = dtype.bits // 8
    span = mode.row_bytes  # 16 bytes of one core-matrix column when not swizzled
    per_box_row = span // esize
    if (
        isinstance(buf.layout, ComposeLayout) or mode == SwizzleMode.SWIZZLE_NONE
    ) and tile_cols % per_box_row:
        raise TMAError(
            f"{buf.name}: K = {tile_cols} elements is not a multiple of the "
            f"{span}-byte box row ({per_box_row} elements) that {mode.name} allows"
        )
    pitch = row_pitch_bytes if row_pitch_bytes is not None else cols * esize
    plan = TensorMapPlan(
        dtype=dtype,
        global_dims=(cols, rows),
        global_strides=(pitch,),
        box=(per_box_row, tile_rows),
        swizzle=mode,
        address=address,
        boxes_per_tile=tile_cols // per_box_row,
    )
    check_plan(plan, buf.name)
    return plan


def check_plan(plan: TensorMapPlan, what: str) -> None:
    """The host-checkable TMA rules of HARDWARE.md, each with the fix."""
    inner_bytes = plan.box[0] * plan.dtype.bits // 8
    if plan.rank > MAX_RANK:
        raise TMAError(f"{what}: a tensor map has at most {MAX_RANK} dimensions, got {plan.rank}")
    if inner_bytes % 16:
        raise TMAError(
            f"{what}: the inner box is {inner_bytes} bytes; TMA needs a multiple of 16 bytes"
        )
    if plan.swizzle != SwizzleMode.SWIZZLE_NONE and inner_bytes > plan.swizzle.row_bytes:
        raise TMAError(
            f"{what}: the inner box is {inner_bytes} bytes but {plan.swizzle.name} allows at most "
            f"{plan.swizzle.row_bytes}: split K into boxes one swizzle row wide"
        )
    for n, b in enumerate(plan.box):
        if not 1 <= b <= MAX_BOX:
            raise TMAError(
                f"{what}: box dimension {n} is {b}; each must be in [1, {MAX_BOX}]: use a smaller "
                "tile or several loads"
            )
    if plan.address % 16:
        raise TMAError(f"{what}: the global address {plan.address:#x} is not 16-byte aligned")
    for n, s in enumerate(plan.global_strides):
        if s % 16:
            raise TMAError(
                f"{what}: global stride {n + 1} is {s} bytes; TMA needs multiples of 16 (pad the "
                "rows)"
            )
    for n, (d, b) in enumerate(zip(plan.global_dims, plan.box)):
        if b > d:
            raise TMAError(f"{what}: box dimension {n} ({b}) exceeds the tensor's extent {d}")


class EncodedTensorMap:
    """An encoded ``CUtensorMap``; pass it to a kernel's ``T.TensorMap`` parameter."""

    def __init__(self, plan: TensorMapPlan):
        drv = driver()
        self.plan = plan
        u64 = drv.cuuint64_t
        u32 = drv.cuuint32_t
        err, tmap = drv.cuTensorMapEncodeTiled(
            drv.CUtensorMapDataType(_DTYPE_CODES[plan.dtype.name]),
            plan.rank,
            plan.address,
            [u64(d) for d in plan.global_dims],
            [u64(s) for s in plan.global_strides],
            [u32(b) for b in plan.box],
            [u32(1)] * plan.rank,
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            drv.CUtensorMapSwizzle(_SWIZZLE_CODES[plan.swizzle]),
            drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
            drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        if int(err) != 0:
            raise TMAError(f"cuTensorMapEncodeTiled rejected {plan}: error {int(err)}")
        self._tmap = tmap

    @property
    def address(self) -> int:
        """Host address of the 128-byte descriptor (what the launch passes by value)."""
        return int(self._tmap.getPtr())


def tile_map(tensor, buf: Buffer) -> EncodedTensorMap:
    """An encoded tensor map copying tiles of ``buf`` to/from the 2-D row-major ``tensor``."""
    shape = array_shape(tensor)
    if shape is None or len(shape) != 2:
        raise TMAError(f"tile_map takes a 2-D row-major tensor, got shape {shape}")
    return EncodedTensorMap(plan_tile_map(buf, device_pointer(tensor), shape[0], shape[1]))
