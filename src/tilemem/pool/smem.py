"""SMEMPool: a bump allocator over one block's dynamic shared-memory region
(docs/DESIGN.md#smem-pools)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from ..dtype import DataType, DTypeLike
from ..errors import AlignmentError, AllocationError, PoolStateError, TargetError
from ..intmath import align_up, is_power_of_two
from ..layout import (
    ComposeLayout,
    Layout,
    SwizzleLayout,
    TileLayout,
    layout_swizzle_mode,
    mma_shared_layout,
    widest_swizzle,
)
from ..layout.smem import SwizzleMode, SwizzleModeLike, check_mma_tile
from ..plan.capacity import check_smem_capacity
from ..plan.model import LayoutKind, MemoryPlan, PoolPlan
from ..plan.occupancy import check_tmem_residency
from ..plan.packing import check_align
from ..plan.target import Target, get_target
from ..validate import check_int, check_name
from .base import (
    FACTS_KEPT,
    BumpPool,
    LayoutFacts,
    buffer_count,
    layout_facts,
    pool_dtype,
    pool_shape,
)
from .buffer import SMEM, Buffer
from .emit import current_emitter
from .lifetimes import Lifetime, LifetimePool, Spot, check_phases

SCOPES = (SMEM, "shared")  # TIRx's positional alloc names the scope; both mean this region


def describe_layout(layout: Layout) -> str:
    mode = layout_swizzle_mode(layout)
    tile = layout.tile if isinstance(layout, ComposeLayout) else layout
    text = repr(tile).removeprefix("TileLayout")
    return f"swizzle {mode.label} {text}" if mode else text


def swizzle_period_bytes(layout: Layout, dtype: DataType) -> int:
    """Bytes after which a layout's XOR pattern repeats; 1 for layouts without a swizzle.

    The swizzle acts on offsets relative to the buffer start while the hardware
    swizzles absolute addresses (docs/HARDWARE-RULES.md#swizzle-modes), so the buffer
    must start on a multiple of this period.
    """
    swizzle = layout.swizzle if isinstance(layout, ComposeLayout) else layout
    if not isinstance(swizzle, SwizzleLayout) or swizzle.swizzle_len == 0:
        return 1
    period_bits = swizzle.period * dtype.bits
    if period_bits % 8 or not is_power_of_two(period_bits // 8):
        raise AllocationError(
            f"a swizzle of period {swizzle.period} {dtype.name} elements spans {period_bits} "
            "bits, not a power-of-two number of bytes, so no buffer start keeps it aligned"
        )
    return period_bits // 8


@functools.lru_cache(maxsize=1024)
def _row_major(shape: tuple[int, ...]) -> TileLayout:
    """The default layout, kept per shape: layouts are immutable values, and a kernel
    allocates a few shapes many times."""
    return TileLayout.row_major(shape)


@functools.lru_cache(maxsize=1024)
def _mma_tile(
    shape: tuple[int, ...], dtype: DataType, mode: SwizzleMode
) -> tuple[Layout, int, LayoutFacts, int, int]:
    """An MMA operand tile's checked layout, its swizzle period in bytes, its layout facts
    (:func:`~tilemem.pool.base.layout_facts`) and its :func:`tile_bytes` (bytes, the dtype's
    natural alignment), kept per (shape, dtype, mode). Without a swizzle, rows that are not a
    multiple of 16 bytes hold no core matrix: the tile is then plain row-major."""
    check_mma_tile(shape, dtype, mode)
    kind, detail = LayoutKind.MMA_OPERAND, mode.label
    if mode == SwizzleMode.SWIZZLE_NONE and shape[-1] * dtype.bits % 128:
        kind, detail = LayoutKind.ROW_MAJOR, ""
    layout = mma_shared_layout(dtype, mode, shape)
    facts = layout_facts(layout, kind, detail, SMEM)
    return layout, mode.period_bytes, facts, *tile_bytes(layout, dtype, shape)


_ROW_MAJOR = (LayoutKind.ROW_MAJOR, "")
_PLAIN: dict[tuple[tuple[int, ...], str, int], tuple[TileLayout, int, int, LayoutFacts]] = {}


def _plain_tile(
    shape: tuple[int, ...], dtype: DataType, align: int
) -> tuple[TileLayout, int, int, LayoutFacts]:
    """alloc()'s default layout (row-major), its bytes, its alignment (``align`` raised to
    the dtype's natural alignment) and its layout facts, kept per (shape, dtype name, align)
    of checked values."""
    key = (shape, dtype.name, align)
    hit = _PLAIN.get(key)
    if hit is None:
        layout = _row_major(shape)
        nbytes, natural = tile_bytes(layout, dtype, shape)
        hit = (
            layout,
            nbytes,
            max(align, swizzle_period_bytes(layout, dtype), natural),
            layout_facts(layout, *_ROW_MAJOR, SMEM),
        )
        if len(_PLAIN) >= FACTS_KEPT:
            _PLAIN.clear()
        _PLAIN[key] = hit
    return hit


_MMA_REQUESTS: dict[tuple[tuple[int, ...], str, str], tuple] = {}


def _mma_request(
    shape: tuple[int, ...], dtype: DataType, swizzle: SwizzleModeLike | str
) -> tuple[Layout, int, LayoutFacts, int, int, SwizzleMode]:
    """:func:`_mma_tile`'s answer and the mode for alloc_mma's ``swizzle`` (a mode, or
    ``"auto"``: the widest that fits the row). Kept per (shape, dtype name, swizzle) when
    ``swizzle`` is a name, so a repeated request skips parsing and hashing the dtype."""
    key = (shape, dtype.name, swizzle) if type(swizzle) is str else None
    hit = _MMA_REQUESTS.get(key) if key is not None else None
    if hit is not None:
        return hit
    if isinstance(swizzle, str) and swizzle == "auto":
        mode = widest_swizzle(dtype, shape[-1])
    else:
        mode = SwizzleMode.parse(swizzle)
    found = (*_mma_tile(shape, dtype, mode), mode)
    if key is not None:
        if len(_MMA_REQUESTS) >= FACTS_KEPT:
            _MMA_REQUESTS.clear()
        _MMA_REQUESTS[key] = found
    return found


@functools.lru_cache(maxsize=1024)
def _strided(shape: tuple[int, ...], strides: tuple[int, ...]) -> TileLayout:
    """The layout of ``strides=``, kept per (shape, strides) like :func:`_row_major`."""
    return TileLayout.of(shape, strides)


_TILE_BYTES: dict[tuple[int, str, tuple[int, ...]], tuple[Layout, int, int]] = {}


def tile_bytes(layout: Layout, dtype: DataType, shape: tuple[int, ...]) -> tuple[int, int]:
    """A buffer's bytes, ``ceil(elements * bits / 8)`` with elements covering the layout's
    span on ``m`` (``prod(shape)`` for dense layouts; sub-byte dtypes rounded up once), and
    its dtype's natural alignment. Kept per (layout object, dtype, shape) like
    :func:`~tilemem.pool.base.layout_fact`: the pools take layouts from caches."""
    key = (id(layout), dtype.name, shape)
    hit = _TILE_BYTES.get(key)
    if hit is not None and hit[0] is layout:
        return hit[1], hit[2]
    elements = max(math.prod(shape), layout.span("m"))
    if len(_TILE_BYTES) >= FACTS_KEPT:
        _TILE_BYTES.clear()
    _TILE_BYTES[key] = (layout, dtype.storage_bytes(elements), dtype.natural_align)
    return _TILE_BYTES[key][1:]


def _kernel_settings(
    emitter: object, target: Target | None, threads: int | None
) -> tuple[Target | None, int | None]:
    """Inside a kernel a pool plans for the kernel's target and block: what it was not told
    comes from the kernel, and what it was told must agree with the kernel."""
    kernel_target = getattr(emitter, "target", None)
    kernel_target = get_target(kernel_target) if kernel_target is not None else None
    if target is not None and kernel_target is not None and target.name != kernel_target.name:
        raise TargetError(
            f"SMEMPool(target={target.name!r}) inside a kernel built for {kernel_target.name}: "
            "the pool would be checked against another GPU; drop target= (a pool in a kernel "
            "takes the kernel's)"
        )
    kernel_threads = getattr(emitter, "threads", None)
    if threads is not None and kernel_threads is not None and threads != kernel_threads:
        raise AllocationError(
            f"SMEMPool(threads={threads}) inside a kernel of {kernel_threads} threads per "
            "block: drop threads= (a pool in a kernel takes the kernel's)"
        )
    return (
        target if target is not None else kernel_target,
        threads if threads is not None else kernel_threads,
    )


class SMEMPool(LifetimePool, BumpPool):
    """Dynamic shared memory of one thread block, carved into buffers in allocation order.

    With no ``ptr`` the pool owns the region and ``commit()`` fixes its size;
    with a ``ptr`` (an existing shared-memory pointer inside a kernel) the
    caller owns the storage and ``commit()`` only checks. ``target`` enables the
    capacity check at commit; inside a kernel it is the kernel's target.
    ``threads`` (threads per CTA) sharpens the TMEM residency check
    (docs/DESIGN.md#capacity-and-residency); inside a kernel it is the kernel's block size. Inside a
    kernel, a ``target`` or ``threads`` other than the kernel's is refused.

    ``phases`` (names in program order) makes a lifetime pool (docs/DESIGN.md#lifetimes):
    each alloc takes ``live=`` (a phase or a set of them; default every phase) and
    ``commit()`` places the buffers so that buffers live together never share a byte.
    """

    def __init__(
        self,
        ptr: Any = None,
        *,
        name: str | None = None,
        target: str | Target | None = None,
        threads: int | None = None,
        phases: Sequence[str] | None = None,
    ):
        name = "smem" if name is None else check_name(name, "SMEM pool name")
        phases = check_phases(phases)
        if ptr is not None and not (isinstance(ptr, Buffer) and ptr.scope == SMEM):
            raise AllocationError(
                f"SMEMPool(ptr=...) carves a pool out of a shared-memory Buffer, got {ptr!r}"
            )
        if threads is not None:
            threads = check_int(threads, "threads", minimum=1, maximum=1024)
        emitter = current_emitter()
        self.target: Target | None = get_target(target) if target is not None else None
        if emitter is not None:
            self.target, threads = _kernel_settings(emitter, self.target, threads)
        self.name = name
        self.ptr = ptr
        self.emitter = emitter
        self.threads = threads
        self._init_bump(set())
        self._init_lifetimes(phases)
        self._spots: list[Spot] = []
        self._size: int | None = None
        self.tmem_pools: list = []  # TMEMPools whose address slot lives here
        if self.emitter is not None:
            self.emitter.smem_pool(self)

    # -- read-only state (offset, max_offset, buffers, buffer(name): BumpPool) ----
    @property
    def committed(self) -> bool:
        return self._size is not None

    @property
    def committed_bytes(self) -> int | None:
        """Committed region size in bytes (None before commit)."""
        return self._size

    # -- allocation -------------------------------------------------------------
    def alloc(
        self,
        shape,
        dtype: DTypeLike = "float32",
        strides: Sequence | None = None,
        scope: str = SMEM,
        align: int = 0,
        *,
        layout: Layout | str = "default",
        name: str | None = None,
        live=None,
        alias_of: Buffer | None = None,
        offset: int | None = None,
    ) -> Buffer:
        """Place a buffer at the cursor rounded up to ``max(align, natural alignment)``.

        Also TIRx's positional form ``alloc(shape, dtype, strides, scope, align)``
        with scope ``"shared.dyn"`` or ``"shared"``. Size is ``ceil(elements *
        bits / 8)`` bytes, where elements covers the layout's span on ``m``
        (``prod(shape)`` for dense layouts). Sub-byte dtypes are counted in bits
        and rounded up once. A swizzled ``layout`` also aligns the buffer to its
        swizzle period. ``live``, ``alias_of`` and ``offset`` (bytes; inside ``alias_of``
        when given) are those of docs/DESIGN.md#lifetimes.
        """
        self._check_open("alloc")
        lifetime = self._check_lifetime(live, alias_of, offset, "bytes")
        shape, dtype = pool_shape(shape), pool_dtype(dtype)
        if scope not in SCOPES:
            raise AllocationError(
                f"SMEMPool.alloc places shared memory: scope must be one of {SCOPES}, got {scope!r}"
            )
        align = check_align(align)
        self._check_new_name(name)
        if strides is None and type(layout) is str and layout == "default":
            plain, nbytes, align, facts = _plain_tile(shape, dtype, align)
            return self._put(shape, dtype, plain, nbytes, align, name, facts, lifetime)
        layout, kind, detail = self._layout(shape, strides, layout)
        align = max(align, swizzle_period_bytes(layout, dtype))
        facts = layout_facts(layout, kind, detail, SMEM)
        return self._place(shape, dtype, layout, align, name, facts, lifetime)

    def alloc_mma(
        self,
        shape,
        dtype: DTypeLike = "float16",
        swizzle: SwizzleModeLike | str = "auto",
        align: int = 1024,
        *,
        name: str | None = None,
        live=None,
        alias_of: Buffer | None = None,
        offset: int | None = None,
        swizzle_mode: SwizzleModeLike | str | None = None,
    ) -> Buffer:
        """An MMA operand tile ``(..., rows, K)`` in ``mma_shared_layout``.

        ``swizzle`` (also spelled ``swizzle_mode=``, as ``BufferRequest`` accepts both) is a
        mode or ``"auto"``, the widest swizzle whose row (32/64/128 bytes) divides the tile's
        row. The buffer must start on a multiple of the swizzle period (256/512/1024 bytes),
        because the hardware swizzles absolute addresses. Without a swizzle, rows that are
        not a multiple of 16 bytes hold no 8 x 16-byte core matrix: the tile is then plain
        row-major and the plan labels it so.
        """
        self._check_open("alloc_mma")
        if swizzle_mode is not None:
            if not (isinstance(swizzle, str) and swizzle == "auto"):
                raise AllocationError(
                    f"alloc_mma: swizzle={swizzle!r} and swizzle_mode={swizzle_mode!r} spell one "
                    "setting twice; give swizzle= only"
                )
            swizzle = swizzle_mode
        lifetime = self._check_lifetime(live, alias_of, offset, "bytes")
        shape, dtype = pool_shape(shape), pool_dtype(dtype)
        align = check_align(align)
        self._check_new_name(name)
        layout, period, facts, nbytes, natural, mode = _mma_request(shape, dtype, swizzle)
        bumped = self.phases is None and lifetime[1] is None and lifetime[2] is None
        if bumped:
            start = align_up(self._cursor, max(align, natural))
            if start % period:
                raise AlignmentError(
                    f"MMA tile {name or '(unnamed)'} {shape} {dtype.name} would start at byte "
                    f"{start}, not a multiple of the {period}-byte {mode.name} period "
                    f"(the hardware swizzles absolute addresses): pass align={period}"
                )
        align = max(align, period, natural)  # the plan (and padding advice) must keep the period
        return self._put(shape, dtype, layout, nbytes, align, name, facts, lifetime)

    def move_base_to(self, offset: int) -> None:
        """Set the cursor; buffers placed after this may overlay earlier ones (recorded in the
        plan). Beyond the high-water mark it raises the mark: ``move_base_to(end); commit()``
        reserves ``end`` bytes (docs/DESIGN.md#smem-pools)."""
        self._check_open("move_base_to")
        offset = check_int(offset, "move_base_to offset (bytes)", minimum=0, maximum=1 << 40)
        self._move(offset)

    def commit(self, size: int | None = None) -> int:
        """Fix the region's size (``size`` or the high-water mark); once. Returns the size."""
        self._check_open("commit")
        spots = self._commit_spots()
        high_water = self._high_water_with(start + length for start, length, _, _ in spots)
        if size is None:
            size = high_water
        else:
            size = check_int(size, "commit size (bytes)", minimum=0, maximum=1 << 40)
        if size < high_water:
            raise AllocationError(
                f"commit(size={size}) is below the high-water mark {high_water} bytes of "
                f"pool {self.name!r}: pass size >= {high_water} or omit it"
            )
        if self.target is not None and size > self.target.max_smem_per_block:
            check_smem_capacity(self._pool_plan(size, spots), self.target)  # raises
        self.check_tmem_residency(size=size)  # before any state changes
        if self.phases is not None:
            self._settle(spots, high_water)
        self._size = size
        if self.emitter is not None:
            self.emitter.smem_commit(self, size)
        return size

    def check_tmem_residency(self, size: int | None = None, pending=None) -> None:
        """docs/DESIGN.md#capacity-and-residency over every TMEM pool of this CTA, once all of them
        and this pool are committed (so the verdict does not depend on the order of commits).

        ``size`` (this pool's bytes) and ``pending`` (a TMEM pool and its ``total_cols``) are
        commits about to happen: the rule is checked before they change any state.
        """
        size = self._size if size is None else size
        if self.target is None or size is None or not self.tmem_pools:
            return
        waiting, cols = pending if pending is not None else (None, 0)
        if not all(t.committed or t is waiting for t in self.tmem_pools):
            return
        lowest_threads = 32 * (1 + max(max(t.alloc_warp, t.dealloc_warp) for t in self.tmem_pools))
        check_tmem_residency(
            [(t.name, cols if t is waiting else t.total_cols) for t in self.tmem_pools],
            smem_bytes=size,
            threads=self.threads,
            target=self.target,
            cooperative=self.cooperative,
            lowest_threads=lowest_threads,
        )

    @property
    def cooperative(self) -> bool:
        """Whether CTAs wait on each other (cluster launch or cta_group::2 TMEM)."""
        cluster = getattr(self.emitter, "cluster", None)
        return bool(cluster and math.prod(cluster) > 1) or any(
            t.cta_group == 2 for t in self.tmem_pools
        )

    # -- plan -------------------------------------------------------------------
    def __repr__(self) -> str:
        state = (
            f"committed {self._size:,} bytes"
            if self._size is not None
            else f"uncommitted, {self._high_water:,} bytes so far"
        )
        target = self.target.name if self.target else "no target"
        return f"<SMEMPool {self.name!r} {target}: {state}, {buffer_count(self._buffers)}>"

    def _repr_svg_(self) -> str:
        return self.plan()._repr_svg_()

    def _repr_html_(self) -> str:
        return self.plan()._repr_html_()

    def plan(self) -> MemoryPlan:
        """This pool and the TMEM pools whose slots it holds, as data."""
        pools = [self._pool_plan(self._size)] + [t.pool_plan() for t in self.tmem_pools]
        return MemoryPlan(tuple(pools), self.target.name if self.target else None, self.threads)

    def _pool_plan(self, size: int | None, spots: list[Spot] | None = None) -> PoolPlan:
        packing = self._packing
        if spots is None and self.phases is not None and packing is None:
            spots = self._commit_spots()  # before commit: where commit() would put them
        if packing is None and self.phases is not None:
            packing = self._provisional  # set by the _commit_spots() that gave ``spots``
        spots = self._spots if spots is None else spots
        entries = self._entries(spots)
        high_water = self._high_water_with(start + length for start, length, _, _ in spots)
        lifetimes = self._plan_totals(packing)
        return PoolPlan(
            self.name,
            SMEM,
            "bytes",
            entries,
            high_water,
            size,
            tuple(self._moves),
            **lifetimes,
        )

    # -- lifetimes ----------------------------------------------------------------
    def _commit_spots(self) -> list[Spot]:
        """Each buffer's final spot: packed by lifetime in a pool with phases."""
        if self.phases is None:
            return list(self._spots)
        packing = self._pack(
            [length for _, length, _, _ in self._spots],
            [b.align for b in self._buffers],
            [None] * len(self._buffers),
            self._spots,
            "bytes",
        )
        return [
            (offset, length, align, 0)
            for offset, (_, length, align, _) in zip(packing.offsets, self._spots)
        ]

    def _settle(self, spots: list[Spot], high_water: int) -> None:
        """Give each buffer its packed offset and, in a kernel, declare it there."""
        self._packing = self._provisional
        self._spots = spots
        self._high_water = high_water
        for buf, (offset, _, _, _) in zip(self._buffers, spots):
            object.__setattr__(buf, "byte_offset", offset)  # placed once, at commit
            if self.emitter is not None:
                self.emitter.smem_buffer(self, buf)

    def _size_of(self, buf: Buffer) -> int:
        return buf.nbytes

    def _offset_in_pool(self, buf: Buffer) -> int | None:
        return None if self.phases is not None else buf.byte_offset

    # -- internals --------------------------------------------------------------
    def _check_open(self, action: str) -> None:
        if self._size is not None:
            raise PoolStateError(
                f"{action} on SMEM pool {self.name!r} after commit(): the region is fixed at "
                f"{self._size} bytes; allocate everything before commit"
            )

    @staticmethod
    def _layout(shape, strides, layout) -> tuple[Layout, LayoutKind, str]:
        """The buffer's layout, its kind and the kind's detail, from ``strides=`` or ``layout=``."""
        if strides is not None and not (isinstance(layout, str) and layout == "default"):
            raise AllocationError("pass either strides or layout, not both")
        if strides is not None:
            if isinstance(strides, str | bytes) or not hasattr(strides, "__iter__"):
                raise AllocationError(f"strides must be a sequence, got {strides!r}")
            strides = tuple(check_int(s, "stride", minimum=0) for s in strides)
            if len(strides) != len(shape):
                raise AllocationError(
                    f"shape {shape} has {len(shape)} dimensions but strides {strides} has "
                    f"{len(strides)}"
                )
            return _strided(shape, strides), LayoutKind.STRIDED, str(strides)
        if isinstance(layout, str):
            if layout != "default":
                raise AllocationError(f"layout must be a Layout or 'default', got {layout!r}")
            return _row_major(shape), *_ROW_MAJOR
        if not isinstance(layout, Layout):
            raise AllocationError(f"layout must be a Layout or 'default', got {layout!r}")
        if layout.size() != math.prod(shape):
            raise AllocationError(
                f"layout holds {layout.size()} elements but shape {shape} has {math.prod(shape)}"
            )
        if set(layout.axes) - {"m"}:
            raise AllocationError(
                f"a shared-memory layout maps to axis 'm' only, got axes {layout.axes}"
            )
        return layout, LayoutKind.CUSTOM, describe_layout(layout)

    def _place(
        self,
        shape,
        dtype,
        layout: Layout,
        align: int,
        name,
        facts: LayoutFacts,
        lifetime: Lifetime,
    ) -> Buffer:
        nbytes, natural = tile_bytes(layout, dtype, shape)
        return self._put(shape, dtype, layout, nbytes, max(align, natural), name, facts, lifetime)

    def _put(
        self,
        shape,
        dtype,
        layout: Layout,
        nbytes: int,
        align: int,
        name,
        facts: LayoutFacts,
        lifetime: Lifetime,
    ) -> Buffer:
        """Record a buffer of ``nbytes`` bytes aligned to ``align`` (the final alignment), its
        layout chosen as ``facts`` say (:func:`~tilemem.pool.base.layout_facts`)."""
        spot = self._spot(nbytes, align, lifetime, "bytes")
        offset = spot[0]
        buf = Buffer(
            self._unique_name(name, "buf"),
            shape,
            dtype,
            SMEM,
            layout,
            nbytes,
            align,
            None if self.phases is not None else offset,
            None,
            None,
            facts[0],
            facts[1],
            self,
        )
        self._spots.append(spot)
        self._facts.append(facts)
        self._keep(buf, spot, lifetime)
        if self.emitter is not None and self.phases is None:
            self.emitter.smem_buffer(self, buf)
        return buf
