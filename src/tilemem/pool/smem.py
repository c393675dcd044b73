"""SMEMPool: a bump allocator over one block's dynamic shared-memory region (SPEC section 3)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..dtype import DTypeLike, as_dtype
from ..errors import AlignmentError, AllocationError, PoolStateError
from ..layout import Layout, TileLayout, layout_swizzle_mode, mma_shared_layout, widest_swizzle
from ..layout.smem import SwizzleMode, SwizzleModeLike, check_mma_tile
from ..plan.capacity import check_smem_capacity
from ..plan.model import MemoryPlan, PoolPlan
from ..plan.packing import Placement, check_align, place
from ..plan.target import Target, get_target
from .base import BumpPool
from .buffer import SMEM, Buffer
from .emit import current_emitter


def normalize_shape(shape) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not shape or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in shape):
        raise AllocationError(
            f"shape must be a non-empty tuple of positive integers, got {shape!r}"
        )
    return shape


def describe_layout(layout: Layout) -> str:
    mode = layout_swizzle_mode(layout)
    tile = getattr(layout, "tile", layout)
    text = repr(tile).removeprefix("TileLayout")
    return f"swizzle {mode.label} {text}" if mode else text


class SMEMPool(BumpPool):
    """Dynamic shared memory of one thread block, carved into buffers in allocation order.

    With no ``ptr`` the pool owns the region and ``commit()`` fixes its size;
    with a ``ptr`` (an existing shared-memory pointer inside a kernel) the
    caller owns the storage and ``commit()`` only checks. ``target`` (plan-only
    use) enables the capacity check at commit; inside a kernel the kernel's
    target is used. ``threads`` (threads per CTA, plan-only) lets TMEM pools
    check at commit that co-resident CTAs cannot block each other in
    ``tcgen05.alloc``; a kernel checks that with its own block size.
    """

    def __init__(
        self,
        ptr: Any = None,
        *,
        name: str | None = None,
        target: str | Target | None = None,
        threads: int | None = None,
    ):
        self.name = name or "smem"
        self.ptr = ptr
        self.emitter = current_emitter()
        if target is None and self.emitter is not None:
            target = getattr(self.emitter, "target", None)
        self.target: Target | None = get_target(target) if target is not None else None
        self.threads = threads
        self._init_bump()
        self._spots: list[Placement] = []
        self._size: int | None = None
        self.tmem_pools: list = []  # TMEMPools whose address slot lives here
        if self.emitter is not None:
            self.emitter.smem_pool(self)

    # -- read-only state (offset, max_offset, buffers, buffer(name): BumpPool) ----
    @property
    def committed(self) -> bool:
        return self._size is not None

    @property
    def size(self) -> int | None:
        """Committed region size in bytes (None before commit)."""
        return self._size

    # -- allocation -------------------------------------------------------------
    def alloc(
        self,
        shape,
        dtype: DTypeLike = "float32",
        *,
        strides: Sequence | None = None,
        align: int = 0,
        layout: Layout | str = "default",
        name: str | None = None,
    ) -> Buffer:
        """Place a buffer at the cursor rounded up to ``max(align, natural alignment)``.

        Size is ``ceil(elements * bits / 8)`` bytes, where elements covers the
        layout's span on ``m`` (``prod(shape)`` for dense layouts). Sub-byte
        dtypes are counted in bits and rounded up once.
        """
        shape, dtype = normalize_shape(shape), as_dtype(dtype)
        if strides is not None and not (isinstance(layout, str) and layout == "default"):
            raise AllocationError("pass either strides or layout, not both")
        if strides is not None:
            layout = TileLayout.of(shape, strides)
            name_of_layout = f"strided {tuple(strides)}"
        elif isinstance(layout, str):
            if layout != "default":
                raise AllocationError(f"layout must be a Layout or 'default', got {layout!r}")
            layout = TileLayout.row_major(shape)
            name_of_layout = "row-major"
        elif isinstance(layout, Layout):
            name_of_layout = describe_layout(layout)
        else:
            raise AllocationError(f"layout must be a Layout or 'default', got {layout!r}")
        if layout.size() != math.prod(shape):
            raise AllocationError(
                f"layout holds {layout.size()} elements but shape {shape} has {math.prod(shape)}"
            )
        if set(layout.axes) - {"m"}:
            raise AllocationError(
                f"a shared-memory layout maps to axis 'm' only, got axes {layout.axes}"
            )
        return self._place(shape, dtype, layout, align, name, name_of_layout)

    def alloc_mma(
        self,
        shape,
        dtype: DTypeLike = "float16",
        swizzle_mode: SwizzleModeLike | str = "auto",
        align: int = 1024,
        *,
        name: str | None = None,
    ) -> Buffer:
        """An MMA operand tile ``(..., rows, K)`` in ``mma_shared_layout``.

        ``"auto"`` picks the widest swizzle whose row (32/64/128 bytes) divides
        the tile's row. The buffer must start on a multiple of the swizzle period
        (256/512/1024 bytes), because the hardware swizzles absolute addresses.
        """
        dtype = as_dtype(dtype)
        shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        if isinstance(swizzle_mode, str) and swizzle_mode == "auto":
            mode = (
                widest_swizzle(dtype, shape[-1])
                if shape and isinstance(shape[-1], int)
                else SwizzleMode.SWIZZLE_NONE
            )
        else:
            mode = SwizzleMode.parse(swizzle_mode)
        check_mma_tile(shape, dtype, mode)
        layout = mma_shared_layout(dtype, mode, shape)
        check_align(align)
        spot = place(self._cursor, 0, max(align, dtype.natural_align))
        if spot.offset % mode.period_bytes:
            raise AlignmentError(
                f"MMA tile {name or '(unnamed)'} {shape} {dtype.name} would start at byte "
                f"{spot.offset}, not a multiple of the {mode.period_bytes}-byte {mode.name} period "
                f"(the hardware swizzles absolute addresses): pass align={mode.period_bytes}"
            )
        return self._place(shape, dtype, layout, align, name, f"mma {mode.label}")

    def move_base_to(self, offset: int) -> None:
        """Set the cursor; buffers placed after this may overlay earlier ones (recorded in the
        plan)."""
        self._check_open("move_base_to")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise AllocationError(f"move_base_to needs a byte offset >= 0, got {offset!r}")
        self._move(offset)

    def commit(self, size: int | None = None) -> int:
        """Fix the region's size (``size`` or the high-water mark); once. Returns the size."""
        self._check_open("commit")
        if size is None:
            size = self._high_water
        elif size < self._high_water:
            raise AllocationError(
                f"commit(size={size}) is below the high-water mark {self._high_water} bytes of "
                "pool "
                f"{self.name!r}: pass size >= {self._high_water} or omit it"
            )
        if self.target is not None:
            check_smem_capacity(self._pool_plan(size), self.target)
        self._size = size
        if self.emitter is not None:
            self.emitter.smem_commit(self, size)
        return size

    # -- plan -------------------------------------------------------------------
    def plan(self) -> MemoryPlan:
        """This pool and the TMEM pools whose slots it holds, as data."""
        pools = [self._pool_plan(self._size)] + [t.pool_plan() for t in self.tmem_pools]
        return MemoryPlan(tuple(pools), self.target.name if self.target else None)

    def _pool_plan(self, size: int | None) -> PoolPlan:
        entries = self._entries(
            (b, s.offset, s.size, s.align, s.padding) for b, s in zip(self._buffers, self._spots)
        )
        return PoolPlan(
            self.name, SMEM, "bytes", entries, self._high_water, size, tuple(self._moves)
        )

    # -- internals --------------------------------------------------------------
    def _check_open(self, action: str) -> None:
        if self._size is not None:
            raise PoolStateError(
                f"{action} on SMEM pool {self.name!r} after commit(): the region is fixed at "
                f"{self._size} bytes; allocate everything before commit"
            )

    def _place(self, shape, dtype, layout: Layout, align: int, name, layout_name: str) -> Buffer:
        self._check_open("alloc")
        check_align(align)
        align = max(align, dtype.natural_align)
        elements = max(math.prod(shape), layout.span("m"))
        nbytes = dtype.storage_bytes(elements)
        spot = place(self._cursor, nbytes, align)
        buf = Buffer(
            name=self._unique_name(name, "buf"),
            shape=shape,
            dtype=dtype,
            scope=SMEM,
            layout=layout,
            nbytes=nbytes,
            align=align,
            byte_offset=spot.offset,
            layout_name=layout_name,
            pool=self,
        )
        self._spots.append(spot)
        self._record(buf, spot.end)
        if self.emitter is not None:
            self.emitter.smem_buffer(self, buf)
        return buf
