"""TMA tensor maps between a global tensor and a pool buffer (docs/HARDWARE-RULES.md#tma).

How a buffer is filled (box width, boxes per tile, swizzle) is decided from its
layout by :func:`tilemem.layout.tma.tma_fill`, the rule ``T.ptx.tma.load_tile``
follows too; this module turns it into a ``cuTensorMapEncodeTiled`` call for a
row-major global matrix and checks the map against the TMA limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtype import DataType
from ..errors import TMAError
from ..layout.smem import SwizzleMode
from ..layout.tma import MAX_BOX, tma_fill
from ..pool import SMEM, Buffer
from .device import array_shape, device_pointer, driver

MAX_RANK = 5

_SWIZZLE_CODES = {
    SwizzleMode.SWIZZLE_NONE: 0,
    SwizzleMode.SWIZZLE_32B_ATOM: 1,
    SwizzleMode.SWIZZLE_64B_ATOM: 2,
    SwizzleMode.SWIZZLE_128B_ATOM: 3,
}


_L2_PROMOTION_CODES = {0: 0, 64: 1, 128: 2, 256: 3}  # CUtensorMapL2promotion (cuda.h)


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
    if dtype.tma_code is None:
        raise TMAError(f"TMA has no element type for {dtype.name}; copy it as uint8")
    if dtype.bits < 8 and cols % (8 // dtype.bits):
        raise TMAError(
            f"{buf.name}: {cols} columns of {dtype.name} do not fill whole bytes; pad the rows "
            f"to a multiple of {8 // dtype.bits} elements"
        )
    if len(buf.shape) < 2:
        raise TMAError(
            f"{buf.name}: a tile map needs a buffer of shape (..., R, K), got {buf.shape}"
        )
    fill = tma_fill(buf.layout, dtype, buf.shape, buf.byte_offset)
    pitch = row_pitch_bytes if row_pitch_bytes is not None else cols * dtype.bits // 8
    plan = TensorMapPlan(
        dtype=dtype,
        global_dims=(cols, rows),
        global_strides=(pitch,),
        box=fill.box,
        swizzle=fill.swizzle,
        address=address,
        boxes_per_tile=fill.boxes,
    )
    check_plan(plan, buf.name)
    return plan


def check_plan(plan: TensorMapPlan, what: str) -> None:
    """The host-checkable TMA rules of docs/HARDWARE-RULES.md, each with the fix.

    A box may be larger than the tensor: ``cuTensorMapEncodeTiled`` (CUDA Driver API, "Tensor
    Map Object Management") bounds ``boxDim`` only by 1..256, the inner box's bytes and the
    swizzle span, never by ``globalDim``; a load fills the elements outside the tensor
    (``oobFill``: zeros with ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``) and a store skips them."""
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


class EncodedTensorMap:
    """An encoded ``CUtensorMap``; pass it to a kernel's ``T.TensorMap`` parameter."""

    def __init__(self, plan: TensorMapPlan, l2_promotion: int = 0):
        """``l2_promotion``: 0 (none), 64, 128 or 256 bytes fetched into L2 per request."""
        if l2_promotion not in _L2_PROMOTION_CODES:
            raise TMAError(
                f"L2 promotion is one of {sorted(_L2_PROMOTION_CODES)} bytes, got {l2_promotion!r}"
            )
        drv = driver()
        self.plan = plan
        u64 = drv.cuuint64_t
        u32 = drv.cuuint32_t
        err, tmap = drv.cuTensorMapEncodeTiled(
            drv.CUtensorMapDataType(plan.dtype.tma_code),
            plan.rank,
            plan.address,
            [u64(d) for d in plan.global_dims],
            [u64(s) for s in plan.global_strides],
            [u32(b) for b in plan.box],
            [u32(1)] * plan.rank,
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            drv.CUtensorMapSwizzle(_SWIZZLE_CODES[plan.swizzle]),
            drv.CUtensorMapL2promotion(_L2_PROMOTION_CODES[l2_promotion]),
            drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        if int(err) != 0:
            raise TMAError(f"cuTensorMapEncodeTiled rejected {plan}: error {int(err)}")
        self._tmap = tmap

    @property
    def address(self) -> int:
        """Host address of the 128-byte descriptor (what the launch passes by value)."""
        return int(self._tmap.getPtr())


@dataclass(frozen=True)
class HostTensorMap:
    """A tensor map over a host numpy array: what ``tilemem.sim`` reads (the checked plan and
    the array). Nothing is encoded; a GPU launch needs a map of a device tensor.

    ``packed``: the array holds two 4-bit elements per byte (uint8, element ``2j`` in the low
    nibble of byte ``j``, as in shared memory); otherwise one element per array item."""

    plan: TensorMapPlan
    array: np.ndarray
    packed: bool = False


def _host_columns(tensor: np.ndarray, buf: Buffer) -> tuple[int, bool]:
    """The tensor's columns in ``buf``'s elements and whether its bytes pack two 4-bit elements.

    4-bit buffers take ``float4_e2m1fn`` arrays (ml_dtypes, one element per byte) or uint8
    arrays of packed pairs (half as many columns); other buffers take arrays of their width."""
    cols = tensor.shape[1]
    if buf.dtype.bits == 4:
        if tensor.dtype == np.uint8:
            return 2 * cols, True
        if tensor.dtype.name == buf.dtype.name:
            return cols, False
        raise TMAError(
            f"{buf.name} holds {buf.dtype.name} but the array has {tensor.dtype} elements: pass "
            f"ml_dtypes.{buf.dtype.name} data (one element per byte) or uint8 bytes of packed "
            "pairs (element 2j in the low nibble of byte j, half the columns)"
        )
    if tensor.dtype.itemsize * 8 != buf.dtype.bits:
        raise TMAError(
            f"{buf.name} holds {buf.dtype.name} ({buf.dtype.bits} bits) but the array has "
            f"{tensor.dtype} elements: pass {buf.dtype.name} data (ml_dtypes) or its bits"
        )
    return cols, False


def tile_map(tensor, buf: Buffer, l2_promotion: int = 0) -> EncodedTensorMap | HostTensorMap:
    """A tensor map copying tiles of ``buf`` to/from the 2-D row-major ``tensor``: encoded for
    the driver for a device tensor, a :class:`HostTensorMap` for a numpy array.

    A 4-bit buffer (e2m1) maps packed data: a device tensor of shape ``(rows, cols / 2)``
    bytes, or a host array as :func:`_host_columns` says."""
    shape = array_shape(tensor)
    if shape is None or len(shape) != 2:
        raise TMAError(f"tile_map takes a 2-D row-major tensor, got shape {shape}")
    if isinstance(tensor, np.ndarray):
        if not tensor.flags.c_contiguous:
            raise TMAError("tile_map takes a C-contiguous (row-major) numpy array")
        cols, packed = _host_columns(tensor, buf)
        plan = plan_tile_map(buf, tensor.ctypes.data, shape[0], cols)
        return HostTensorMap(plan, tensor, packed)
    cols = shape[1] * 2 if buf.dtype.bits == 4 else shape[1]
    plan = plan_tile_map(buf, device_pointer(tensor), shape[0], cols)
    return EncodedTensorMap(plan, l2_promotion)
