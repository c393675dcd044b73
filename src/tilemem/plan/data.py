"""The memory plan as data: one entry per buffer, each pool's totals and overlaps.

Nothing here renders: the report (:mod:`tilemem.plan.format`), the picture
(:mod:`tilemem.plan.svg`), the C++ header (:mod:`tilemem.plan.cpp_header`) and the padding
advice (:mod:`tilemem.plan.advice`) read these classes, and :class:`tilemem.plan.model.MemoryPlan`
joins them. Occupancy is in :mod:`tilemem.plan.occupancy`, the JSON form in
:mod:`tilemem.plan.serialize`: every field of these dataclasses round-trips through
``to_dict``/``from_dict``, so a new field needs no serialisation code.
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from ..errors import CapacityError, PlanError, PlanFileError
from ..scopes import SMEM, TMEM
from .occupancy import Occupancy, occupancy
from .serialize import PLAN_SCHEMA, from_data, to_data
from .target import Target, get_target

Self = TypeVar("Self", bound="PlanData")

# Keys written to JSON for its readers, not fields: skipped when read back. All but "example"
# (the name `tilemem plan --json` adds) are computed from the fields.
_DERIVED_KEYS = frozenset({"schema", "occupancy", "padding", "end", "example"})


class LayoutKind(enum.Enum):
    """How a pool chose a buffer's layout: data, so no code reads it back from a label.

    The plan's display label is :meth:`label` of the kind and its detail (the swizzle mode,
    the data path, the strides, ...).
    """

    ROW_MAJOR = "row-major"  # alloc() with the default layout
    STRIDED = "strided"  # alloc(strides=)
    MMA_OPERAND = "mma"  # alloc_mma(): the canonical (swizzled) MMA operand tile
    TMEM_DATAPATH = "datapath"  # a tcgen05 data path layout (datapath=, or (128, n) default)
    TMEM_LANE_ROW = "lane=row"  # TMEM default otherwise: lane = row, column = column
    SCALE_FACTOR = "scale-factor"  # alloc_sf(): block-scale factors for tcgen05.mma
    CUSTOM = "custom"  # a layout the caller passed
    STAGE_VIEW = "stage-view"  # one stage of a TMEMStages view

    def label(self, detail: str = "") -> str:
        """The text the plan shows, e.g. ``"mma 128B"`` for ``MMA_OPERAND`` with ``"128B"``."""
        return _LAYOUT_LABELS[self].format(detail)


_LAYOUT_LABELS = {
    LayoutKind.ROW_MAJOR: "row-major",
    LayoutKind.STRIDED: "strided {}",
    LayoutKind.MMA_OPERAND: "mma {}",
    LayoutKind.TMEM_DATAPATH: "datapath {}",
    LayoutKind.TMEM_LANE_ROW: "lane=row",
    LayoutKind.SCALE_FACTOR: "sf {}",
    LayoutKind.CUSTOM: "{}",
    LayoutKind.STAGE_VIEW: "{}",
}


@dataclass(frozen=True)
class PlanEntry:
    """One buffer of a pool. SMEM positions are bytes, TMEM positions 32-bit columns.

    ``length`` counts the pool's unit (bytes or columns) from ``offset``.
    """

    name: str
    scope: str
    offset: int
    length: int
    align: int
    padding: int
    dtype: str
    shape: tuple[int, ...]
    layout: str
    overlaps: tuple[str, ...] = ()
    swizzle: int = 0  # SwizzleMode value L: 0 none, 1/2/3 the 32/64/128-byte swizzle
    lanes: tuple[tuple[int, int], ...] = ()  # TMEM: [first, end) lane runs the layout touches
    phases: tuple[str, ...] = ()  # pools with phases: the phases the buffer is live in
    alias_of: str | None = None  # a view: the buffer whose storage it lies in
    layout_kind: LayoutKind = LayoutKind.CUSTOM  # how the pool chose ``layout`` (its label)

    def __post_init__(self) -> None:
        if type(self.swizzle) is not int or not 0 <= self.swizzle <= 3:
            raise PlanError(
                f"buffer {self.name!r}: swizzle {self.swizzle!r} is not a SwizzleMode value "
                "(0 none, 1 32B, 2 64B, 3 128B)"
            )

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass(frozen=True)
class TMEMAllocation:
    """How a TMEM pool is allocated: ``tcgen05.alloc.cta_group::N`` by one warp into a slot."""

    cta_group: int
    alloc_warp: int
    dealloc_warp: int
    slot: str  # the SMEM buffer tcgen05.alloc writes the TMEM base address into
    slot_offset: int | None  # its byte offset in the SMEM pool


@dataclass(frozen=True)
class StageViews:
    """``TMEMStages`` over one buffer: stage s covers 32-bit columns ``spans[s]`` = [start, end)
    of the pool (a view: it allocates nothing)."""

    buffer: str
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PoolPlan:
    """One pool: its buffers in allocation order and its totals."""

    name: str
    scope: str  # SMEM ("shared.dyn") or TMEM ("tmem")
    unit: str  # "bytes" or "cols"
    entries: tuple[PlanEntry, ...]
    high_water: int
    committed: int | None  # committed bytes, or total_cols for TMEM; None before commit
    moves: tuple[tuple[int, int], ...] = ()  # (cursor before, cursor after) of each move_base_to
    allocation: TMEMAllocation | None = None  # TMEM pools only
    stages: tuple[StageViews, ...] = ()  # TMEM stage views over this pool's buffers
    phases: tuple[str, ...] = ()  # pools with phases: the program's phases in order
    # max over phases of what is live there (docs/DESIGN.md#lifetimes)
    lower_bound: int | None = None
    bump: int | None = None  # what bump placement in allocation order would need

    @property
    def footprint(self) -> int:
        """The extent the buffers occupy: the high-water mark (packed by lifetime in a pool with
        phases). SMEM commits exactly this unless ``commit(size=)`` asks for more; TMEM rounds
        it up to a power of two of columns."""
        return self.high_water

    @property
    def padding(self) -> int:
        return sum(e.padding for e in self.entries)

    @property
    def used(self) -> int:
        """The committed size, or the high-water mark before commit."""
        return self.committed if self.committed is not None else self.high_water

    @property
    def overlaps(self) -> list[tuple[str, str]]:
        return [(e.name, o) for e in self.entries for o in e.overlaps if e.name < o]

    def to_dict(self) -> dict[str, Any]:
        out = to_data(self)
        out["padding"] = self.padding
        for entry, data in zip(self.entries, out["entries"]):
            data["end"] = entry.end
        return out


@dataclass(frozen=True)
class PaddingAdvice:
    """Bytes an SMEM pool loses to alignment, and an allocation order that loses fewer.

    ``order`` is empty when no order saves bytes, or when the pool uses ``move_base_to``
    (``overlays``): reordering overlaid buffers would change what aliases what.
    """

    pool: str
    padding: int
    high_water: int
    overlays: bool
    order: tuple[str, ...] = ()
    best_high_water: int | None = None

    @property
    def saved(self) -> int:
        return 0 if self.best_high_water is None else self.high_water - self.best_high_water

    def lines(self) -> list[str]:
        lines = [f"{self.padding} bytes lost to alignment padding"]
        if self.overlays:
            lines.append("pool uses move_base_to; reordering is not suggested for overlays")
        elif self.order:
            lines.append(
                f"allocating in the order {', '.join(self.order)} saves {self.saved} bytes "
                f"(high-water {self.high_water} -> {self.best_high_water})"
            )
        else:
            lines.append("no allocation order saves bytes")
        return lines


@dataclass(frozen=True)
class PlanData:
    """The SMEM pool of a thread block and the TMEM pools whose slots it holds, as data
    (:class:`tilemem.plan.model.MemoryPlan` adds the report, picture and header)."""

    pools: tuple[PoolPlan, ...]
    target: str | None = None
    threads: int | None = None  # threads per CTA, when known: the report shows occupancy
    advice: PaddingAdvice | None = None  # the SMEM pool's padding advice, from with_advice()
    name: str | None = None  # an example's or plan file's name: the report's and SVG's title
    summary: str | None = None  # one line on what the plan is, shown after the name

    @property
    def smem(self) -> PoolPlan | None:
        return next((p for p in self.pools if p.scope == SMEM), None)

    @property
    def tmem(self) -> list[PoolPlan]:
        return [p for p in self.pools if p.scope == TMEM]

    @property
    def footprint(self) -> int | None:
        """The SMEM pool's footprint in bytes (each pool has its own: ``pools[i].footprint``)."""
        return None if self.smem is None else self.smem.footprint

    @property
    def lower_bound(self) -> int | None:
        """The SMEM pool's lower bound in bytes: the busiest phase (None without phases)."""
        return None if self.smem is None else self.smem.lower_bound

    def entry(self, name: str) -> PlanEntry:
        for pool in self.pools:
            for e in pool.entries:
                if e.name == name:
                    return e
        names = [e.name for pool in self.pools for e in pool.entries]
        raise PlanError(f"the plan has no buffer named {name!r}; it has {names}")

    def occupancy(
        self, threads: int | None = None, target: str | Target | None = None
    ) -> Occupancy:
        """CTAs per SM for blocks of ``threads`` threads (default: the plan's own
        ``threads``); see :mod:`tilemem.plan.occupancy`.

        Uses the committed sizes, or the high-water marks of pools not yet committed.
        """
        threads = threads if threads is not None else self.threads
        if threads is None:
            raise CapacityError(
                "occupancy needs the threads per CTA: pass threads= or use plan.with_threads(n)"
            )
        target = target or self.target
        if target is None:
            raise CapacityError(
                "occupancy needs a target: pass target= or plan with SMEMPool(target=...)"
            )
        smem = self.smem
        smem_bytes = 0 if smem is None else smem.used
        tmem_cols = sum(p.used for p in self.tmem)
        return occupancy(smem_bytes, threads, target, tmem_cols)

    def with_threads(self: Self, threads: int) -> Self:
        """This plan for CTAs of ``threads`` threads: its report and JSON show occupancy."""
        limit = get_target(self.target).max_threads_per_block if self.target else 1024
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= limit:
            raise CapacityError(
                f"threads per CTA must be an integer in [1, {limit}], got {threads!r}"
            )
        return replace(self, threads=threads)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data: every field, the schema version, and derived values
        for readers (occupancy when threads and target are known, padding, entry ends)."""
        out: dict[str, Any] = {"schema": PLAN_SCHEMA, **to_data(self)}
        out["pools"] = [p.to_dict() for p in self.pools]
        # no occupancy without threads or target, or with SMEM beyond the target: occupancy()
        # raises CapacityError for each
        with contextlib.suppress(CapacityError):
            out["occupancy"] = to_data(self.occupancy())
        return out

    @classmethod
    def from_dict(cls: type[Self], data: dict[str, Any]) -> Self:
        """The plan ``to_dict`` wrote: ``MemoryPlan.from_dict(plan.to_dict()) == plan``."""
        if not isinstance(data, dict):
            raise PlanFileError(f"a plan is a JSON object, got {type(data).__name__}")
        schema = data.get("schema")
        if schema != PLAN_SCHEMA:
            raise PlanFileError(
                f"plan schema {schema!r}; this tilemem reads schema {PLAN_SCHEMA}"
                + (" (a plan written by to_dict() has a 'schema' key)" if schema is None else "")
            )
        plan = from_data(cls, data, derived=_DERIVED_KEYS)
        if plan.threads is None:
            return plan
        try:
            return plan.with_threads(plan.threads)  # refuses what with_threads refuses
        except CapacityError as exc:
            raise PlanFileError(f"plan.threads: {exc}") from None
