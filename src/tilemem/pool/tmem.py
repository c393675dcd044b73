"""TMEMPool and TMEMStages: tensor-memory columns and pipeline-stage views
(docs/DESIGN.md#tmem-pools).

Tensor memory is 128 lanes x 512 columns of 32-bit cells per CTA
(docs/HARDWARE-RULES.md). ``tcgen05.alloc`` grants a power of two of columns in
[32, 512] and writes the base address to a shared-memory slot; every TMEM
address is ``base + (lane << 16) + column``.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from ..dtype import DataType, DTypeLike
from ..errors import AllocationError, LayoutError, PoolStateError, TMEMOverflowError
from ..intmath import ceil_div, is_power_of_two
from ..layout import Layout, TileLayout, sf_tmem_layout, tmem_datapath_layout
from ..layout.tmem import TMEM_COLS, TMEM_LANES, TMEM_MIN_ALLOC_COLS
from ..plan.capacity import check_tmem_target
from ..plan.cpp_header import stage_namespace
from ..plan.lifetimes import Packing
from ..plan.model import LayoutKind, PoolPlan, StageViews, TMEMAllocation
from ..plan.occupancy import check_tmem_per_cta
from ..validate import check_int, check_name, is_int
from .base import (
    FACTS_KEPT,
    BumpPool,
    LayoutFacts,
    buffer_count,
    lane_set,
    layout_fact,
    layout_facts,
    pool_dtype,
    pool_shape,
)
from .buffer import SMEM, TMEM, Buffer
from .lifetimes import Lifetime, LifetimePool, Spot, check_phases
from .smem import SMEMPool, describe_layout

MAX_WARPS = 32  # 1024 threads per block (CUDA C++ Programming Guide, compute capabilities)


def _check_total_cols(total_cols) -> int | str:
    if isinstance(total_cols, str) and total_cols == "auto":
        return total_cols
    if not (
        is_power_of_two(total_cols)
        and not isinstance(total_cols, bool)
        and TMEM_MIN_ALLOC_COLS <= total_cols <= TMEM_COLS
    ):
        hint = ""
        if isinstance(total_cols, int) and 0 < total_cols <= TMEM_COLS:
            hint = f": use {max(TMEM_MIN_ALLOC_COLS, 1 << (total_cols - 1).bit_length())}"
        raise AllocationError(
            f"total_cols={total_cols!r}: tcgen05.alloc takes a power of two of columns in "
            f"[{TMEM_MIN_ALLOC_COLS}, {TMEM_COLS}]{hint}, or 'auto'"
        )
    return total_cols


def _whole_columns(elements: int, bits: int, what: str) -> int:
    if (elements * bits) % 32:
        raise AllocationError(
            f"{what}: {elements} elements x {bits} bits = {elements * bits} bits is not a whole "
            f"number of 32-bit TMEM columns; pass cols= explicitly or widen the buffer"
        )
    return elements * bits // 32


def _span(window: tuple[TileLayout, int, int], base: int) -> tuple[int, int]:
    """[first, end) 32-bit columns of a stage window of a buffer starting at column ``base``."""
    _, shift, cols = window
    return base + shift, base + shift + cols


def column_footprint(layout: Layout, bits: int) -> int:
    """32-bit columns from the buffer's first column to the last one its layout touches:
    ``ceil(span(TCol) * bits / 32)``, ``TCol`` counting elements of the dtype."""
    return ceil_div(_span_tcol(layout) * bits, 32)


def _span_tcol(layout: Layout) -> int:
    return layout_fact(layout, "span TCol", _tcol_span)


def _tcol_span(layout: Layout) -> int:
    return layout.span("TCol")


_TILES: dict[tuple[tuple[int, ...], str, str | None], tuple] = {}  # TMEMPool._tile
_SF_TILES: dict[tuple[tuple[int, ...], int, int], tuple] = {}  # TMEMPool.alloc_sf


# Layouts are immutable values and a kernel allocates a few kinds of TMEM buffer many
# times: the layouts below are kept per argument tuple (arguments already checked ints, so
# equal keys mean equal calls; a refused call raises and is not kept).
@functools.lru_cache(maxsize=1024)
def _datapath_layout(letter: str, rows: int, cols: int, dtype: DataType | None) -> TileLayout:
    return tmem_datapath_layout(letter, rows, cols, dtype=dtype)


@functools.lru_cache(maxsize=1024)
def _sf_layout(rows: int, sf_k: int, per_mma: int, reuse: int, depth: int | None) -> TileLayout:
    return sf_tmem_layout(rows, sf_k, per_mma, reuse, depth)


class TMEMPool(LifetimePool, BumpPool):
    """Bump allocator over TMEM columns; owns the alloc/dealloc protocol of one CTA.

    ``phases`` (default: the SMEM pool's) makes it a lifetime pool (docs/DESIGN.md#lifetimes):
    buffers live together never share a (lane, column) cell; buffers on disjoint lanes may share
    columns.
    """

    def __init__(
        self,
        pool: SMEMPool,
        total_cols: int | str = TMEM_COLS,
        *,
        cta_group: int = 1,
        alloc_warp: int = 0,
        dealloc_warp: int | None = None,
        tmem_addr: Buffer | None = None,
        sync_after_alloc: bool = True,
        name: str | None = None,
        phases=None,
    ):
        if not isinstance(pool, SMEMPool):
            raise AllocationError(
                f"TMEMPool needs the SMEMPool that holds its address slot, got {pool!r}"
            )
        total_cols = _check_total_cols(total_cols)
        phases = check_phases(phases) if phases is not None else pool.phases
        if type(cta_group) is not int or cta_group not in (1, 2):
            raise AllocationError(
                f"cta_group must be the int 1 or 2 (tcgen05 .cta_group::1 / ::2), got "
                f"{cta_group!r} ({type(cta_group).__name__})"
            )
        alloc_warp = check_int(alloc_warp, "alloc_warp", minimum=0, maximum=MAX_WARPS - 1)
        if dealloc_warp is not None:
            dealloc_warp = check_int(dealloc_warp, "dealloc_warp", minimum=0, maximum=MAX_WARPS - 1)
        self._check_warps_in_block(pool, alloc_warp, dealloc_warp)
        if not isinstance(sync_after_alloc, bool):
            raise AllocationError(
                f"sync_after_alloc must be True or False, got {sync_after_alloc!r}"
            )
        name = self._pool_name(pool, name)
        if pool.target is not None:
            check_tmem_target(pool.target, name)
        if tmem_addr is not None:
            self._check_slot(pool, tmem_addr)
            tmem_addr.pool.check_live_throughout(tmem_addr, "the TMEM address slot")
        if isinstance(total_cols, int):  # the pools of one CTA must fit together
            check_tmem_per_cta(
                [(t.name, t.capacity) for t in pool.tmem_pools] + [(name, total_cols)]
            )
        if tmem_addr is None:  # the last check: after it, the SMEM pool has changed
            tmem_addr = pool.alloc(
                (1,), "uint32", align=4, name=pool._free_name(f"{name}_addr", numbered=False)
            )
        tmem_addr.pool._live_throughout(tmem_addr)  # written at alloc, read at dealloc
        self.name = name
        self.smem_pool = pool
        self.total_cols = total_cols
        self.cta_group = cta_group
        self.alloc_warp = alloc_warp
        self.dealloc_warp = alloc_warp if dealloc_warp is None else dealloc_warp
        self.sync_after_alloc = sync_after_alloc
        self.slot = tmem_addr
        self.emitter = pool.emitter
        self._init_bump(pool._names)
        self._init_lifetimes(phases)
        self._col_spots: list[Spot] = []  # each buffer's spot before commit (bump, view or pin)
        self._stage_views: list[TMEMStages] = []
        self._committed = False
        self._deallocated = False
        pool.tmem_pools.append(self)
        if self.emitter is not None:
            self.emitter.tmem_pool(self)

    @staticmethod
    def _pool_name(pool: SMEMPool, name: str | None) -> str:
        """``name``, or the first free of tmem, tmem1, tmem2, ...: the pools of one CTA are
        namespaces of one C++ header, so their names differ."""
        in_kernel = getattr(pool.emitter, "tmem_pools", ())  # other SMEM pools' in a kernel
        taken = {pool.name, *(t.name for t in (*pool.tmem_pools, *in_kernel))}
        if name is None:
            n = len(pool.tmem_pools)
            name = f"tmem{n or ''}"
            while name in taken:
                n += 1
                name = f"tmem{n}"
            return name
        name = check_name(name, "TMEM pool name")
        if name in taken:
            raise AllocationError(
                f"TMEM pool name {name!r} is taken in this CTA (pools {sorted(taken)}): each "
                "pool is a namespace of the plan's C++ header; pick another name"
            )
        return name

    @staticmethod
    def _check_slot(pool: SMEMPool, slot) -> None:
        if (
            not isinstance(slot, Buffer)
            or slot.scope != SMEM
            or slot.dtype.bits != 32
            or slot.numel < 1
        ):
            raise AllocationError(
                "tmem_addr must be a 32-bit shared-memory buffer (the slot tcgen05.alloc writes), "
                f"got {slot!r}"
            )
        same_kernel = (
            pool.emitter is not None and getattr(slot.pool, "emitter", None) is pool.emitter
        )
        if slot.pool is not pool and not same_kernel:
            raise AllocationError(
                f"tmem_addr {slot.name!r} belongs to another CTA's shared memory; pass a slot "
                f"of pool {pool.name!r} (or of a pool carved out of it)"
            )

    @staticmethod
    def _check_warps_in_block(pool: SMEMPool, alloc_warp: int, dealloc_warp: int | None) -> None:
        if pool.threads is None:
            return
        warps = ceil_div(pool.threads, 32)
        for label, warp in (("alloc_warp", alloc_warp), ("dealloc_warp", dealloc_warp)):
            if warp is not None and warp >= warps:
                raise AllocationError(
                    f"{label}={warp} is outside the block: {pool.threads} threads are warps 0.."
                    f"{warps - 1}, so that warp would never run tcgen05."
                    f"{'alloc' if label == 'alloc_warp' else 'dealloc'}"
                )

    # -- state (offset, max_offset, buffers, buffer(name): BumpPool) ---------------
    @property
    def committed(self) -> bool:
        return self._committed

    @property
    def deallocated(self) -> bool:
        return self._deallocated

    @property
    def capacity(self) -> int:
        """Columns available to buffers: total_cols, or 512 while 'auto' is unresolved."""
        return self.total_cols if isinstance(self.total_cols, int) else TMEM_COLS

    @property
    def stage_views(self) -> tuple[TMEMStages, ...]:
        """The views made with :meth:`stages`, in order, listed in the plan."""
        return tuple(self._stage_views)

    # -- allocation ----------------------------------------------------------------
    def alloc(
        self,
        shape,
        dtype: DTypeLike = "float32",
        *,
        layout: Layout | None = None,
        cols: int | None = None,
        datapath: str | None = None,
        name: str | None = None,
        live=None,
        alias_of: Buffer | None = None,
        offset: int | None = None,
    ) -> Buffer:
        """Columns ``[offset, offset + cols)`` for a buffer.

        The layout is ``layout``, ``tmem_datapath_layout(datapath, *shape)``, or the
        default (data path D for 128 rows, ``lane = row, col = column`` otherwise,
        leading dimensions laid out along the columns). It must map to ``TLane`` and
        ``TCol`` only, within the 128 lanes. Columns used: the layout's footprint
        ``ceil(span(TCol) * bits / 32)`` (whole columns unless ``cols`` is given), or
        ``cols`` when given, which must cover the footprint.
        """
        self._check_open("alloc")
        lifetime = self._check_lifetime(live, alias_of, offset, "columns")
        shape, dtype = pool_shape(shape), pool_dtype(dtype)
        self._check_new_name(name)
        if layout is not None and datapath is not None:
            raise AllocationError(
                "pass layout= or datapath= to TMEMPool.alloc, not both: datapath=X means "
                "layout=tmem_datapath_layout(X, rows, cols)"
            )
        if layout is None and cols is None and (datapath is None or type(datapath) is str):
            layout, facts, cols = self._tile(shape, dtype, datapath)
            return self._place(shape, dtype, layout, cols, name, facts, lifetime)
        if datapath is not None:
            if len(shape) != 2:
                raise AllocationError(
                    f"datapath={datapath!r} needs a 2-D shape (rows, cols), got {shape}"
                )
            if type(datapath) is str:
                layout = _datapath_layout(datapath, *shape, dtype)
            else:
                layout = tmem_datapath_layout(datapath, *shape, dtype=dtype)
            kind = (LayoutKind.TMEM_DATAPATH, str(datapath))
        elif layout is not None:
            kind = (LayoutKind.CUSTOM, self._check_layout(layout, shape))
        else:
            layout, kind = self._default_layout(shape)
        footprint = column_footprint(layout, dtype.bits)
        if cols is None and datapath is not None:
            cols = footprint  # an accumulator: one element per 32-bit cell (16-bit ones too)
        elif cols is None:
            cols = _whole_columns(_span_tcol(layout), dtype.bits, f"buffer {shape} {dtype.name}")
        else:
            cols = check_int(cols, "cols (32-bit TMEM columns)", minimum=1, maximum=TMEM_COLS)
            if cols < footprint:
                raise AllocationError(
                    f"cols={cols} but the layout of buffer {shape} {dtype.name} spans "
                    f"{footprint} columns (span(TCol) = {layout.span('TCol')} elements): a "
                    f"smaller cols would let the next buffer land inside it; pass cols >= "
                    f"{footprint} or omit it"
                )
        facts = layout_facts(layout, *kind, TMEM)
        return self._place(shape, dtype, layout, cols, name, facts, lifetime)

    def alloc_sf(
        self,
        shape,
        dtype: DTypeLike,
        *,
        sf_per_mma: int,
        sf_reuse: int = 1,
        name: str | None = None,
        live=None,
        alias_of: Buffer | None = None,
        offset: int | None = None,
    ) -> Buffer:
        """Block-scale factors: shape ``(rows, SF_K * sf_reuse)`` or ``(pipe_depth, rows, SF_K *
        sf_reuse)``."""
        self._check_open("alloc_sf")
        lifetime = self._check_lifetime(live, alias_of, offset, "columns")
        shape, dtype = pool_shape(shape), pool_dtype(dtype)
        self._check_new_name(name)
        if dtype.bits != 8:
            raise AllocationError(
                "scale factors are 8-bit (float8_e8m0fnu for MX, float8_e4m3fn for NVFP4), got "
                f"{dtype.name}"
            )
        if len(shape) not in (2, 3):
            raise AllocationError(
                "alloc_sf shape is (rows, SF_K * sf_reuse) or (pipe_depth, rows, SF_K * "
                f"sf_reuse), got {shape}"
            )
        key = (shape, sf_per_mma, sf_reuse)  # kept when both are ints: dtype has 8 bits here
        kept = type(sf_per_mma) is int and type(sf_reuse) is int
        hit = _SF_TILES.get(key) if kept else None
        if hit is not None:
            layout, cols, facts = hit
            return self._place(shape, dtype, layout, cols, name, facts, lifetime)
        pipe_depth = shape[0] if len(shape) == 3 else None
        rows, width = shape[-2:]
        sf_reuse = check_int(sf_reuse, "sf_reuse", minimum=1)
        if width % sf_reuse:
            raise AllocationError(
                f"sf_reuse={sf_reuse!r} must be a positive divisor of shape[-1]={width}"
            )
        make = _sf_layout if type(sf_per_mma) is int else sf_tmem_layout
        try:
            layout = make(rows, width // sf_reuse, sf_per_mma, sf_reuse, pipe_depth)
        except LayoutError as exc:
            raise AllocationError(f"alloc_sf {shape}: {exc}") from None
        cols = _whole_columns(_span_tcol(layout), dtype.bits, f"scale factors {shape}")
        facts = layout_facts(layout, LayoutKind.SCALE_FACTOR, f"x{sf_per_mma}/mma", TMEM)
        if kept:
            if len(_SF_TILES) >= FACTS_KEPT:
                _SF_TILES.clear()
            _SF_TILES[key] = (layout, cols, facts)
        return self._place(shape, dtype, layout, cols, name, facts, lifetime)

    def move_base_to(self, col: int) -> None:
        """Set the column cursor; later buffers alias earlier ones (recorded in the plan).
        Beyond the high-water mark it raises the mark, as in SMEMPool."""
        self._check_open("move_base_to")
        if not is_int(col) or not 0 <= col <= self.capacity:
            raise AllocationError(
                f"move_base_to needs a column in [0, {self.capacity}], got {col!r}"
            )
        self._move(int(col))

    def stages(
        self, buf: Buffer, col_start: int, width: int, stages: int = 1, stride: int | None = None
    ) -> TMEMStages:
        """:class:`TMEMStages` over ``buf``, listed in this pool's plan."""
        if not isinstance(buf, Buffer) or buf.pool is not self:
            raise AllocationError(
                f"TMEMPool {self.name!r} lists views of its own buffers; {buf!r} is not one"
            )
        views = TMEMStages(buf, col_start, width, stages, stride)
        name = self._stages_name(buf.name)
        self._names.add(name)
        self._stage_views.append(views)
        return views

    def _stages_name(self, buffer: str) -> str:
        """The header's namespace of the next stage views over ``buffer``: ``<buffer>_stages``,
        then ``<buffer>_stages2``, ... (names of the CTA's namespace, like buffers')."""
        name = stage_namespace(buffer, 1 + sum(v.buf.name == buffer for v in self._stage_views))
        if name in self._names:
            raise AllocationError(
                f"stage views over {buffer!r} are named {name!r} in the plan's C++ header, and "
                f"this CTA already has a buffer named {name!r}; rename that buffer"
            )
        return name

    # -- protocol --------------------------------------------------------------------
    def commit(self) -> int:
        """Fix ``total_cols`` (resolving 'auto') and emit the guarded ``tcgen05.alloc``. Returns
        total_cols."""
        if self._committed:
            raise PoolStateError(
                f"TMEM pool {self.name!r} is already committed; commit() runs once"
            )
        if self.emitter is not None and not self.slot.placed:
            raise PoolStateError(
                f"commit SMEM pool {self.smem_pool.name!r} before TMEM pool {self.name!r}: the "
                f"SMEM pool has phases, so its address slot {self.slot.name!r} gets its offset "
                "at the SMEM commit, and tcgen05.alloc writes through it"
            )
        packing = self._packed()
        high_water = (
            self._high_water if packing is None else self._high_water_with([packing.footprint])
        )
        if packing is not None and high_water > self.capacity:
            raise TMEMOverflowError(
                f"TMEM overflow in pool {self.name!r}: packed by lifetime the buffers need "
                f"{high_water} columns (lower bound {packing.lower_bound}) but total_cols is "
                f"{self.capacity}; shorten lifetimes, free {high_water - self.capacity} "
                f"columns, or raise total_cols{self._peak_text()}"
            )
        total_cols = self.total_cols
        if not isinstance(total_cols, int):  # 'auto'
            need = max(TMEM_MIN_ALLOC_COLS, high_water)
            total_cols = 1 << (need - 1).bit_length()
        others = [(t.name, t.capacity) for t in self.smem_pool.tmem_pools if t is not self]
        check_tmem_per_cta(others + [(self.name, total_cols)])
        self.smem_pool.check_tmem_residency(pending=(self, total_cols))  # before state changes
        if packing is not None:
            self._packing, self._high_water = packing, high_water
            for buf, col in zip(self._buffers, packing.offsets):
                object.__setattr__(buf, "col_offset", col)  # placed once, at commit
        self.total_cols = total_cols
        self._committed = True
        if self.emitter is not None:
            self.emitter.tmem_commit(self)
        return self.total_cols

    def dealloc(self) -> None:
        """Emit ``tcgen05.relinquish_alloc_permit`` + ``tcgen05.dealloc`` under the dealloc-warp
        guard; once."""
        if not self._committed:
            raise PoolStateError(
                f"dealloc() on TMEM pool {self.name!r} before commit(): nothing is allocated yet"
            )
        if self._deallocated:
            raise PoolStateError(
                f"TMEM pool {self.name!r} is already deallocated; dealloc() runs once"
            )
        self._deallocated = True
        if self.emitter is not None:
            self.emitter.tmem_dealloc(self)

    # -- plan --------------------------------------------------------------------------
    def __repr__(self) -> str:
        state = (
            f"committed {self.total_cols} columns"
            if self._committed
            else f"uncommitted, {self._high_water} columns so far"
        )
        target = self.smem_pool.target.name if self.smem_pool.target else "no target"
        return f"<TMEMPool {self.name!r} {target}: {state}, {buffer_count(self._buffers)}>"

    def _repr_svg_(self) -> str:
        """Jupyter shows the CTA's plan (its SMEM pool and every TMEM pool) as a picture."""
        return self.smem_pool.plan()._repr_svg_()

    def _repr_html_(self) -> str:
        return self.smem_pool.plan()._repr_html_()

    def pool_plan(self) -> PoolPlan:
        offsets = self._plan_offsets()
        spots = [(col, self._size_of(b), 1, 0) for b, col in zip(self._buffers, offsets)]
        entries = self._entries(spots)
        where = {b.name: col for b, col in zip(self._buffers, offsets)}
        # None before commit: tcgen05.alloc takes its columns at commit ("auto" resolves there)
        size = self.total_cols if self._committed and isinstance(self.total_cols, int) else None
        allocation = TMEMAllocation(
            self.cta_group,
            self.alloc_warp,
            self.dealloc_warp,
            self.slot.name,
            self.slot.byte_offset if self.slot.placed else None,  # a lifetime pool: at commit
        )
        stages = tuple(
            StageViews(
                views.buf.name,
                tuple(_span(views.window(s), where[views.buf.name]) for s in range(views.stages)),
            )
            for views in self._stage_views
        )
        packing = self._packing or (self._provisional if self.phases is not None else None)
        lifetimes = self._plan_totals(packing)
        return PoolPlan(
            self.name,
            TMEM,
            "cols",
            entries,
            self._high_water_with(col + b.cols for b, col in zip(self._buffers, offsets) if b.cols),
            size,
            tuple(self._moves),
            allocation,
            stages,
            **lifetimes,
        )

    # -- lifetimes ---------------------------------------------------------------------
    def _packed(self) -> Packing | None:
        """Columns from the lifetime packer, lanes included (None for a pool without phases);
        AliasError for overlays live together."""
        if self.phases is None:
            return None
        return self._pack(
            [b.cols or 0 for b in self._buffers],
            [1] * len(self._buffers),
            [lane_set(b.layout) for b in self._buffers],
            self._col_spots,
            "columns",
        )

    def _peak_text(self) -> str:
        """The overflow message's line on the busiest phase: the buffers live in one phase
        that cover one lane, with the most columns together (views lie inside their parents).
        The packed width is at least that sum: those buffers must not share a column."""
        assert self.phases is not None  # only pools with phases pack by lifetime
        roots = [
            (buf, when, lane_set(buf.layout))
            for buf, (when, parent, _) in zip(self._buffers, self._lifetimes)
            if parent is None
        ]
        best: tuple[int, str, list[Buffer]] = (-1, "", [])
        for phase in self.phases:
            for lane in range(TMEM_LANES):
                on = [
                    b
                    for b, when, lanes in roots
                    if lane in lanes and (when is None or phase in when)
                ]
                load = sum(b.cols or 0 for b in on)
                if load > best[0]:
                    best = (load, phase, on)
        load, phase, on = best
        names = ", ".join(f"{b.name} ({b.cols} columns)" for b in on) or "none"
        return (
            f"\npeak phase {phase!r}: {load} columns live at once on one lane, in "
            f"{len(on)} buffer{'s' if len(on) != 1 else ''}: {names}"
        )

    def _plan_offsets(self) -> list[int]:
        """Each buffer's first column; before commit in a pool with phases, where commit()
        would put it."""
        if self.phases is not None and not self.committed:
            packing = self._packed()
            assert packing is not None  # the pool has phases
            return list(packing.offsets)
        return [b.col_offset or 0 for b in self._buffers]

    def _size_of(self, buf: Buffer) -> int:
        return buf.cols or 0

    def _offset_in_pool(self, buf: Buffer) -> int | None:
        return None if self.phases is not None else buf.col_offset

    # -- internals -----------------------------------------------------------------------
    def _check_open(self, action: str) -> None:
        if self._deallocated:
            raise PoolStateError(
                f"{action} on TMEM pool {self.name!r} after dealloc(): its columns are given "
                "back and the CTA relinquished the right to allocate again"
            )
        if self._committed:
            raise PoolStateError(
                f"{action} on TMEM pool {self.name!r} after commit(): tcgen05.alloc already "
                f"took {self.total_cols} columns; allocate everything before commit"
            )

    def _tile(
        self, shape: tuple[int, ...], dtype: DataType, datapath: str | None
    ) -> tuple[Layout, LayoutFacts, int]:
        """The layout, its facts (:func:`~tilemem.pool.base.layout_facts`) and the whole
        columns of a buffer given no ``layout=`` or ``cols=``: data path ``datapath`` (one
        element per 32-bit cell, so its footprint), or the default layout. Kept per (shape,
        dtype, datapath): a kernel allocates a few kinds of TMEM buffer many times (a refused
        request raises and is not kept)."""
        key = (shape, dtype.name, datapath)
        hit = _TILES.get(key)
        if hit is not None:
            return hit
        if datapath is not None:
            if len(shape) != 2:
                raise AllocationError(
                    f"datapath={datapath!r} needs a 2-D shape (rows, cols), got {shape}"
                )
            layout: Layout = _datapath_layout(datapath, *shape, dtype)
            kind = (LayoutKind.TMEM_DATAPATH, datapath)
            cols = column_footprint(layout, dtype.bits)
        else:
            layout, kind = self._default_layout(shape)
            cols = _whole_columns(_span_tcol(layout), dtype.bits, f"buffer {shape} {dtype.name}")
        if len(_TILES) >= FACTS_KEPT:
            _TILES.clear()
        facts = layout_facts(layout, *kind, TMEM)
        _TILES[key] = (layout, facts, cols)
        return layout, facts, cols

    @staticmethod
    def _check_layout(layout, shape) -> str:
        if not isinstance(layout, TileLayout):
            raise AllocationError(f"layout must be a TileLayout on axes TLane/TCol, got {layout!r}")
        if layout.size() != math.prod(shape):
            raise AllocationError(
                f"layout holds {layout.size()} elements but shape {shape} has {math.prod(shape)}"
            )
        if set(layout.axes) - {"TLane", "TCol"}:
            raise AllocationError(
                f"a TMEM layout maps to axes 'TLane' and 'TCol' only, got axes {layout.axes}: "
                "write strides as '1@TLane' / '1@TCol'"
            )
        lanes = layout.span("TLane")
        if lanes > TMEM_LANES:
            raise AllocationError(
                f"buffer {shape} reaches TMEM lane {lanes - 1}; tensor memory has {TMEM_LANES} "
                "lanes"
            )
        return describe_layout(layout)

    def _default_layout(self, shape) -> tuple[TileLayout, tuple[LayoutKind, str]]:
        """Data path D for ``(128, cols)``; else ``lane = row, col = column`` with leading
        dimensions (stages) placed one after another along the columns."""
        if len(shape) == 2 and shape[0] == TMEM_LANES:
            return _datapath_layout("D", *shape, None), (LayoutKind.TMEM_DATAPATH, "D")
        if len(shape) < 2:
            raise AllocationError(
                f"a TMEM buffer needs a shape (rows, cols) or a layout=, got {shape}"
            )
        *lead, rows, width = shape
        if rows > TMEM_LANES:
            raise AllocationError(
                f"TMEM buffer {shape}: {rows} rows but tensor memory has {TMEM_LANES} lanes"
            )
        strides = [(math.prod(lead[i + 1 :]) * width, "TCol") for i in range(len(lead))] + [
            (1, "TLane"),
            (1, "TCol"),
        ]
        return TileLayout.of(shape, strides), (LayoutKind.TMEM_LANE_ROW, "")

    def _place(
        self,
        shape,
        dtype,
        layout,
        cols: int,
        name,
        facts: LayoutFacts,
        lifetime: Lifetime,
    ) -> Buffer:
        spot = self._spot(cols, 1, lifetime, "columns")
        offset = spot[0]
        start, end = offset, offset + cols
        if self.phases is not None:  # packed at commit: only the buffer itself must fit
            start, end = 0, cols
        if end > self.capacity:
            raise TMEMOverflowError(
                f"TMEM overflow in pool {self.name!r}: buffer {name or ''} {shape} {dtype.name} "
                f"needs columns [{start}, {end}) but total_cols is {self.capacity}; "
                f"free {end - self.capacity} columns, alias with move_base_to, or raise total_cols"
            )
        buf = Buffer(
            self._unique_name(name, "tbuf"),
            shape,
            dtype,
            TMEM,
            layout,
            cols * TMEM_LANES * 4,
            1,
            None,
            None if self.phases is not None else offset,
            cols,
            facts[0],
            facts[1],
            self,
        )
        self._col_spots.append(spot)
        self._facts.append(facts)
        self._keep(buf, spot, lifetime)
        if self.emitter is not None:
            self.emitter.tmem_buffer(self, buf)
        return buf


@dataclasses.dataclass(frozen=True)
class TMEMStages:
    """Pipeline-stage views over a 2-D TMEM buffer; allocates nothing and changes nothing.

    ``view[s]`` is ``buf[:, col_start + s*stride : col_start + s*stride + width]``;
    ``view[s, a:b]`` narrows within the stage. Columns here are logical columns
    of the buffer (elements of its dtype). Every stage is checked when the view is
    made, so a view that exists answers for every stage. ``TMEMPool.stages``
    makes one that the pool's plan lists.
    """

    buf: Buffer
    col_start: int
    width: int
    stages: int = 1
    stride: int | None = None

    def __post_init__(self) -> None:
        buf = self.buf
        if not isinstance(buf, Buffer) or buf.scope != TMEM or len(buf.shape) != 2:
            raise AllocationError(f"TMEMStages views a 2-D TMEM buffer, got {buf!r}")
        columns = buf.shape[1]
        set_ = object.__setattr__
        set_(self, "col_start", check_int(self.col_start, "TMEMStages col_start", minimum=0))
        set_(self, "width", check_int(self.width, "TMEMStages width", minimum=1))
        most = TMEM_COLS * 32 // buf.dtype.bits  # element columns of all tensor memory
        set_(self, "stages", check_int(self.stages, "TMEMStages stages", minimum=1, maximum=most))
        stride = self.width if self.stride is None else self.stride
        set_(self, "stride", check_int(stride, "TMEMStages stride", minimum=0))
        if self.stages > 1 and self.stride == 0:
            raise AllocationError(
                f"TMEMStages over {buf.name!r}: stride=0 makes all {self.stages} stages the same "
                "columns; pass stride >= 1 (default: width) or stages=1"
            )
        last = self.col_start + (self.stages - 1) * self.step + self.width
        if last > columns:
            raise AllocationError(
                f"TMEMStages over {buf.name!r}: {self.stages} stages of {self.width} columns, "
                f"stride {self.step}, from column {self.col_start} reach column {last}, beyond "
                f"the buffer's {columns} columns"
            )
        for stage in range(self.stages):  # at most `columns` stages: stride >= 1
            self.window(stage)

    @property
    def step(self) -> int:
        """The stride between stages, in the buffer's columns (elements)."""
        assert self.stride is not None  # set in __post_init__
        return self.stride

    def __len__(self) -> int:
        return self.stages

    def __getitem__(self, key) -> Buffer:
        stage, window = key if isinstance(key, tuple) and len(key) == 2 else (key, slice(None))
        if not isinstance(window, slice) or window.step not in (None, 1):
            raise AllocationError(f"narrow a stage with a slice a:b, got {window!r}")
        start = 0 if window.start is None else window.start
        stop = self.width if window.stop is None else window.stop
        if not (is_int(start) and is_int(stop) and 0 <= start < stop <= self.width):
            raise AllocationError(
                f"slice [{start}:{stop}] of a stage of {self.buf.name!r} must lie within its "
                f"{self.width} columns"
            )
        start, stop = int(start), int(stop)
        if not is_int(stage):
            emitter = getattr(self.buf.pool, "emitter", None)
            if emitter is None:
                raise AllocationError(
                    f"stage index must be an int (or a kernel expression inside @T.kernel), got "
                    f"{stage!r}"
                )
            return emitter.tmem_stage(self, stage, start, stop)
        if not 0 <= stage < self.stages:
            raise AllocationError(
                f"stage {stage} out of range for {self.stages} stages over {self.buf.name!r} "
                f"(0..{self.stages - 1})"
            )
        return self.view(int(stage), start, stop)

    def view(self, stage: int, start: int = 0, stop: int | None = None) -> Buffer:
        """The Buffer for ``stage`` narrowed to ``[start, stop)``; its layout is exact."""
        stage = check_int(stage, "stage", minimum=0, maximum=self.stages - 1)
        stop = self.width if stop is None else stop
        start = check_int(start, "view start", minimum=0, maximum=self.width - 1)
        stop = check_int(stop, "view stop", minimum=start + 1, maximum=self.width)
        buf = self.buf
        layout, col_shift, cols = self.window(stage, start, stop)
        assert buf.col_offset is not None  # raises for a lifetime pool before commit
        return Buffer(
            name=f"{buf.name}[{stage}]"
            + ("" if (start, stop) == (0, self.width) else f"[{start}:{stop}]"),
            shape=(buf.shape[0], stop - start),
            dtype=buf.dtype,
            scope=TMEM,
            layout=layout,
            nbytes=cols * TMEM_LANES * 4,
            align=1,
            col_offset=buf.col_offset + col_shift,
            cols=cols,
            layout_kind=LayoutKind.STAGE_VIEW,
            layout_detail=f"{buf.layout_name} stage {stage}",
            pool=buf.pool,
        )

    def window(
        self, stage: int, start: int = 0, stop: int | None = None
    ) -> tuple[TileLayout, int, int]:
        """Stage ``stage`` narrowed to ``[start, stop)``: its layout, its first 32-bit column
        relative to the buffer's, and its columns."""
        stop = self.width if stop is None else stop
        buf = self.buf
        if not isinstance(buf.layout, TileLayout):
            raise AllocationError(f"TMEMStages needs a TMEM buffer with a TileLayout, got {buf!r}")
        first = self.col_start + stage * self.step + start
        try:
            layout = buf.layout.window(1, first, stop - start)
        except LayoutError as exc:
            raise AllocationError(
                f"TMEMStages over {buf.name!r}: stage {stage} columns [{first}, "
                f"{first + stop - start}) are not one strided window of its layout: {exc}"
            ) from None
        offset = layout.offset
        col_shift = 0
        if offset.get("TCol", 0) * buf.dtype.bits % 32 == 0:
            col_shift = offset.pop("TCol", 0) * buf.dtype.bits // 32
            layout = TileLayout(
                layout.shard, layout.replica, offset, shape=layout.shape, axes=layout.axes
            )
        return layout, col_shift, column_footprint(layout, buf.dtype.bits)
