"""TMEMPool and TMEMStages: tensor-memory columns and pipeline-stage views (SPEC section 4).

Tensor memory is 128 lanes x 512 columns of 32-bit cells per CTA
(HARDWARE.md). ``tcgen05.alloc`` grants a power of two of columns in
[32, 512] and writes the base address to a shared-memory slot; every TMEM
address is ``base + (lane << 16) + column``.
"""

from __future__ import annotations

import math

from ..dtype import DTypeLike, as_dtype
from ..errors import AllocationError, LayoutError, PoolStateError, TMEMOverflowError
from ..layout import Layout, TileLayout, sf_tmem_layout, tmem_datapath_layout
from ..layout.tmem import accumulator_columns
from ..plan.capacity import check_tmem_target
from ..plan.model import PoolPlan
from ..plan.occupancy import check_tmem_residency, occupancy
from ..plan.packing import is_power_of_two
from .base import BumpPool
from .buffer import SMEM, TMEM, Buffer
from .smem import SMEMPool, describe_layout, normalize_shape

TMEM_LANES = 128
TMEM_MAX_COLS = 512
TMEM_MIN_COLS = 32


def _check_total_cols(total_cols) -> None:
    if total_cols == "auto":
        return
    if (
        isinstance(total_cols, bool)
        or not isinstance(total_cols, int)
        or not (TMEM_MIN_COLS <= total_cols <= TMEM_MAX_COLS and is_power_of_two(total_cols))
    ):
        hint = ""
        if isinstance(total_cols, int) and 0 < total_cols <= TMEM_MAX_COLS:
            hint = f": use {max(TMEM_MIN_COLS, 1 << (total_cols - 1).bit_length())}"
        raise AllocationError(
            f"total_cols={total_cols!r}: tcgen05.alloc takes a power of two of columns in "
            f"[{TMEM_MIN_COLS}, {TMEM_MAX_COLS}]{hint}, or 'auto'"
        )


def _whole_columns(elements: int, bits: int, what: str) -> int:
    if (elements * bits) % 32:
        raise AllocationError(
            f"{what}: {elements} elements x {bits} bits = {elements * bits} bits is not a whole "
            f"number of 32-bit TMEM columns; pass cols= explicitly or widen the buffer"
        )
    return elements * bits // 32


class TMEMPool(BumpPool):
    """Bump allocator over TMEM columns; owns the alloc/dealloc protocol of one CTA."""

    def __init__(
        self,
        pool: SMEMPool,
        total_cols: int | str = 512,
        *,
        cta_group: int = 1,
        alloc_warp: int = 0,
        dealloc_warp: int | None = None,
        tmem_addr: Buffer | None = None,
        sync_after_alloc: bool = True,
        name: str | None = None,
    ):
        if not isinstance(pool, SMEMPool):
            raise AllocationError(
                f"TMEMPool needs the SMEMPool that holds its address slot, got {pool!r}"
            )
        _check_total_cols(total_cols)
        if cta_group not in (1, 2):
            raise AllocationError(f"cta_group must be 1 or 2, got {cta_group!r}")
        for label, warp in (("alloc_warp", alloc_warp), ("dealloc_warp", dealloc_warp)):
            if warp is not None and (
                isinstance(warp, bool) or not isinstance(warp, int) or warp < 0
            ):
                raise AllocationError(f"{label} must be a warp index >= 0, got {warp!r}")
        self.name = name or ("tmem" if not pool.tmem_pools else f"tmem{len(pool.tmem_pools)}")
        if pool.target is not None:
            check_tmem_target(pool.target, self.name)
        self.smem_pool = pool
        self.total_cols = total_cols
        self.cta_group = cta_group
        self.alloc_warp = alloc_warp
        self.dealloc_warp = alloc_warp if dealloc_warp is None else dealloc_warp
        self.sync_after_alloc = sync_after_alloc
        if tmem_addr is None:
            tmem_addr = pool.alloc((1,), "uint32", align=4, name=f"{self.name}_addr")
        elif tmem_addr.scope != SMEM or tmem_addr.dtype.bits != 32:
            raise AllocationError(
                "tmem_addr must be a 32-bit shared-memory buffer (the slot tcgen05.alloc writes), "
                f"got {tmem_addr!r}"
            )
        self.slot = tmem_addr
        self.emitter = pool.emitter
        self._init_bump()
        self.stage_views: list[TMEMStages] = []
        self._committed = False
        self._deallocated = False
        pool.tmem_pools.append(self)
        if self.emitter is not None:
            self.emitter.tmem_pool(self)

    # -- state (offset, max_offset, buffers, buffer(name): BumpPool) ---------------
    @property
    def committed(self) -> bool:
        return self._committed

    @property
    def capacity(self) -> int:
        """Columns available to buffers: total_cols, or 512 while 'auto' is unresolved."""
        return self.total_cols if isinstance(self.total_cols, int) else TMEM_MAX_COLS

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
    ) -> Buffer:
        """Columns ``[offset, offset + cols)`` for a buffer.

        ``cols``: as given; else from ``layout``/``datapath``: ``span(TCol) *
        bits / 32``; else ``prod(shape) * bits / (32 * shape[0])``. The default
        layout is data path D for 128 rows, ``lane = r, col = c`` otherwise.
        """
        shape, dtype = normalize_shape(shape), as_dtype(dtype)
        if layout is not None and datapath is not None:
            raise AllocationError(
                "pass layout= or datapath= to TMEMPool.alloc, not both: datapath=X means "
                "layout=tmem_datapath_layout(X, rows, cols)"
            )
        if datapath is not None:
            if len(shape) != 2:
                raise AllocationError(
                    f"datapath={datapath!r} needs a 2-D shape (rows, cols), got {shape}"
                )
            layout = tmem_datapath_layout(datapath, *shape, dtype=dtype)
            layout_name = f"datapath {datapath}"
        elif layout is not None:
            if not isinstance(layout, Layout):
                raise AllocationError(f"layout must be a Layout, got {layout!r}")
            if layout.size() != math.prod(shape):
                raise AllocationError(
                    f"layout holds {layout.size()} elements but shape {shape} has "
                    f"{math.prod(shape)}"
                )
            layout_name = describe_layout(layout)
        else:
            layout, layout_name = self._default_layout(shape)
        if cols is None and datapath is not None:  # an accumulator: one element per 32-bit cell
            cols = accumulator_columns(layout, dtype)
        if cols is None:
            if layout_name not in ("datapath D", "lane=row"):
                cols = _whole_columns(
                    layout.span("TCol"), dtype.bits, f"buffer {shape} {dtype.name}"
                )
            else:
                cols = _whole_columns(
                    math.prod(shape) // shape[0], dtype.bits, f"buffer {shape} {dtype.name}"
                )
        elif isinstance(cols, bool) or not isinstance(cols, int) or cols < 1:
            raise AllocationError(f"cols must be a positive number of 32-bit columns, got {cols!r}")
        lanes = layout.span("TLane")
        if lanes > TMEM_LANES:
            raise AllocationError(
                f"buffer {shape} reaches TMEM lane {lanes - 1}; tensor memory has {TMEM_LANES} "
                "lanes"
            )
        return self._place(shape, dtype, layout, cols, name, layout_name)

    def alloc_sf(
        self,
        shape,
        dtype: DTypeLike,
        *,
        sf_per_mma: int,
        sf_reuse: int = 1,
        name: str | None = None,
    ) -> Buffer:
        """Block-scale factors: shape ``(rows, SF_K * sf_reuse)`` or ``(pipe_depth, rows, SF_K *
        sf_reuse)``."""
        shape, dtype = normalize_shape(shape), as_dtype(dtype)
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
        pipe_depth = shape[0] if len(shape) == 3 else None
        rows, width = shape[-2:]
        if (
            isinstance(sf_reuse, bool)
            or not isinstance(sf_reuse, int)
            or sf_reuse < 1
            or width % sf_reuse
        ):
            raise AllocationError(
                f"sf_reuse={sf_reuse!r} must be a positive divisor of shape[-1]={width}"
            )
        try:
            layout = sf_tmem_layout(rows, width // sf_reuse, sf_per_mma, sf_reuse, pipe_depth)
        except LayoutError as exc:
            raise AllocationError(f"alloc_sf {shape}: {exc}") from None
        cols = _whole_columns(layout.span("TCol"), dtype.bits, f"scale factors {shape}")
        return self._place(shape, dtype, layout, cols, name, f"sf x{sf_per_mma}/mma")

    def move_base_to(self, col: int) -> None:
        """Set the column cursor; later buffers alias earlier ones (recorded in the plan)."""
        if isinstance(col, bool) or not isinstance(col, int) or not 0 <= col <= self.capacity:
            raise AllocationError(
                f"move_base_to needs a column in [0, {self.capacity}], got {col!r}"
            )
        self._move(col)

    # -- protocol --------------------------------------------------------------------
    def commit(self) -> int:
        """Fix ``total_cols`` (resolving 'auto') and emit the guarded ``tcgen05.alloc``. Returns
        total_cols."""
        if self._committed:
            raise PoolStateError(
                f"TMEM pool {self.name!r} is already committed; commit() runs once"
            )
        if not isinstance(self.total_cols, int):  # 'auto'
            need = max(TMEM_MIN_COLS, self._high_water)
            self.total_cols = 1 << (need - 1).bit_length()
        pool = self.smem_pool
        if (
            self.emitter is None
            and pool.target is not None
            and pool.threads
            and pool.committed
            and pool.size is not None
        ):
            check_tmem_residency(occupancy(pool.size, pool.threads, pool.target, self.total_cols))
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
    def pool_plan(self) -> PoolPlan:
        entries = self._entries((b, b.col_offset, b.cols, 1, 0) for b in self._buffers)
        size = self.total_cols if isinstance(self.total_cols, int) else None  # None: 'auto'
        details = {
            "alloc": (
                f"cta_group::{self.cta_group}, warp {self.alloc_warp} allocates, "
                f"warp {self.dealloc_warp} deallocates, "
                f"slot {self.slot.name}@{self.slot.byte_offset}"
            ),
        }
        for views in self.stage_views:
            spans = []
            for s in range(views.stages):
                v = views.view(s)
                assert v.col_offset is not None and v.cols is not None
                spans.append(f"[{s}] cols {v.col_offset}..{v.col_offset + v.cols}")
            details[f"stages of {views.buf.name}"] = ", ".join(spans)
        return PoolPlan(
            self.name, TMEM, "cols", entries, self._high_water, size, tuple(self._moves), details
        )

    # -- internals -----------------------------------------------------------------------
    def _default_layout(self, shape) -> tuple[TileLayout, str]:
        if len(shape) == 2 and shape[0] == 128:
            return tmem_datapath_layout("D", *shape), "datapath D"
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
        return TileLayout.of(shape, strides), "lane=row"

    def _place(self, shape, dtype, layout, cols: int, name, layout_name: str) -> Buffer:
        end = self._cursor + cols
        if end > self.capacity:
            raise TMEMOverflowError(
                f"TMEM overflow in pool {self.name!r}: buffer {name or ''} {shape} {dtype.name} "
                "needs "
                f"columns [{self._cursor}, {end}) but total_cols is {self.capacity}; "
                f"free {end - self.capacity} columns, alias with move_base_to, or raise total_cols"
            )
        buf = Buffer(
            name=self._unique_name(name, "tbuf"),
            shape=shape,
            dtype=dtype,
            scope=TMEM,
            layout=layout,
            nbytes=cols * TMEM_LANES * 4,
            align=1,
            col_offset=self._cursor,
            cols=cols,
            layout_name=layout_name,
            pool=self,
        )
        self._record(buf, end)
        if self.emitter is not None:
            self.emitter.tmem_buffer(self, buf)
        return buf


class TMEMStages:
    """Pipeline-stage views over a 2-D TMEM buffer; allocates nothing.

    ``view[s]`` is ``buf[:, col_start + s*stride : col_start + s*stride + width]``;
    ``view[s, a:b]`` narrows within the stage. Columns here are logical columns
    of the buffer (elements of its dtype).
    """

    def __init__(
        self, buf: Buffer, col_start: int, width: int, stages: int = 1, stride: int | None = None
    ):
        if not isinstance(buf, Buffer) or buf.scope != TMEM or len(buf.shape) != 2:
            raise AllocationError(f"TMEMStages views a 2-D TMEM buffer, got {buf!r}")
        stride = width if stride is None else stride
        for label, value, low in (
            ("col_start", col_start, 0),
            ("width", width, 1),
            ("stages", stages, 1),
            ("stride", stride, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise AllocationError(
                    f"TMEMStages {label} must be an integer >= {low}, got {value!r}"
                )
        last = col_start + (stages - 1) * stride + width
        if last > buf.shape[1]:
            raise AllocationError(
                f"TMEMStages over {buf.name!r}: {stages} stages of {width} columns, stride "
                f"{stride}, "
                f"from column {col_start} reach column {last}, beyond the buffer's {buf.shape[1]} "
                "columns"
            )
        self.buf, self.col_start, self.width, self.stages, self.stride = (
            buf,
            col_start,
            width,
            stages,
            stride,
        )
        if isinstance(buf.pool, TMEMPool):
            buf.pool.stage_views.append(self)

    def __len__(self) -> int:
        return self.stages

    def __getitem__(self, key) -> Buffer:
        stage, window = key if isinstance(key, tuple) else (key, slice(None))
        if not isinstance(window, slice) or window.step not in (None, 1):
            raise AllocationError(f"narrow a stage with a slice a:b, got {window!r}")
        start = 0 if window.start is None else window.start
        stop = self.width if window.stop is None else window.stop
        if not 0 <= start < stop <= self.width:
            raise AllocationError(
                f"slice [{start}:{stop}] of a stage of {self.buf.name!r} must lie within its "
                f"{self.width} columns"
            )
        if isinstance(stage, bool) or not isinstance(stage, int):
            emitter = self.buf.pool.emitter if self.buf.pool is not None else None
            if emitter is None:
                raise AllocationError(f"stage index must be an int in plan-only use, got {stage!r}")
            return emitter.tmem_stage(self, stage, start, stop)
        if not 0 <= stage < self.stages:
            raise AllocationError(
                f"stage {stage} out of range for {self.stages} stages over {self.buf.name!r} "
                f"(0..{self.stages - 1})"
            )
        return self.view(stage, start, stop)

    def view(self, stage: int, start: int = 0, stop: int | None = None) -> Buffer:
        """The Buffer for ``stage`` narrowed to ``[start, stop)``; its layout is exact."""
        stop = self.width if stop is None else stop
        buf = self.buf
        if not isinstance(buf.layout, TileLayout) or buf.col_offset is None:
            raise LayoutError(f"TMEMStages needs a TMEM buffer with a TileLayout, got {buf!r}")
        first = self.col_start + stage * self.stride + start
        layout = buf.layout.window(1, first, stop - start)
        offset = layout.offset
        col_shift = 0
        if offset.get("TCol", 0) * buf.dtype.bits % 32 == 0:
            col_shift = offset.pop("TCol", 0) * buf.dtype.bits // 32
            layout = TileLayout(
                layout.shard, layout.replica, offset, shape=layout.shape, axes=layout.axes
            )
        cols = -(-layout.span("TCol") * buf.dtype.bits // 32)
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
            layout_name=f"{buf.layout_name} stage {stage}",
            pool=buf.pool,
        )
