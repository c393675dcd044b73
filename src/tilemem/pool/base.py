"""Bookkeeping shared by SMEMPool and TMEMPool: a cursor, a high-water mark, buffers in order,
moves, and the names of one CTA's buffers."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..dtype import DataType, DTypeLike, as_dtype
from ..errors import AllocationError
from ..layout import Layout, TileLayout
from ..layout.smem import layout_swizzle_mode
from ..plan.model import LayoutKind, PlanEntry
from ..plan.packing import overlapping_index_pairs
from ..validate import MAX_ELEMENTS, check_buffer_name, check_shape
from .buffer import TMEM, Buffer

_Fact = TypeVar("_Fact")
_FACTS: dict[tuple[int, str], tuple[Layout, object]] = {}
FACTS_KEPT = 4096  # distinct (layout, fact) pairs kept before the memo starts afresh
_NAMES: set[str] = set()  # buffer names that passed check_buffer_name (at most FACTS_KEPT)
_DTYPES: dict[str, DataType] = {}  # dtype name -> its DataType
# a buffer's layout kind, its detail, label, swizzle mode value and lane runs (layout_facts)
LayoutFacts = tuple[LayoutKind, str, str, int, tuple[tuple[int, int], ...]]


def layout_fact(layout: Layout, fact: str, compute: Callable[[Layout], _Fact]) -> _Fact:
    """``compute(layout)``, kept per layout object: layouts are immutable values, and the
    pools take theirs from caches, so the same objects come back allocation after
    allocation. An entry holds its layout, so the ``id`` it is keyed by stays that layout's
    while the entry lives."""
    key = (id(layout), fact)
    hit = _FACTS.get(key)
    if hit is not None and hit[0] is layout:
        return hit[1]  # type: ignore[return-value]
    value = compute(layout)
    if len(_FACTS) >= FACTS_KEPT:
        _FACTS.clear()
    _FACTS[key] = (layout, value)
    return value


def pool_shape(shape) -> tuple[int, ...]:
    """:func:`~tilemem.validate.check_shape`'s answer; a tuple of positive ints (the usual
    argument) is accepted without the general conversion."""
    if type(shape) is tuple and shape:
        for s in shape:
            if type(s) is not int or s < 1:
                return check_shape(shape)  # raises
        if math.prod(shape) <= MAX_ELEMENTS:
            return shape
    return check_shape(shape)


def pool_dtype(dtype: DTypeLike) -> DataType:
    """:func:`~tilemem.dtype.as_dtype`; a dtype name is looked up once (DataTypes are
    immutable values)."""
    if type(dtype) is str:
        known = _DTYPES.get(dtype)
        if known is None:
            known = _DTYPES[dtype] = as_dtype(dtype)  # raises for an unknown name
        return known
    return as_dtype(dtype)


def lane_set(layout: Layout) -> frozenset[int]:
    """The TMEM lanes a layout touches, replicas included.

    Lanes are ``offset + sum(c_i * stride_i)`` over the TLane Iters of shard and replica.
    TMEM buffers have TileLayouts only (TMEMPool refuses any other layout).
    """
    return layout_fact(layout, "lanes", _lane_set)


def _lane_set(layout: Layout) -> frozenset[int]:
    assert isinstance(layout, TileLayout), layout
    lanes = {layout.offset.get("TLane", 0)}
    for it in (*layout.shard, *layout.replica):
        if it.axis == "TLane":
            lanes = {lane + k * it.stride for lane in lanes for k in range(it.extent)}
    return frozenset(lanes)


def lane_runs(layout: Layout) -> tuple[tuple[int, int], ...]:
    """The lanes of :func:`lane_set` as sorted [first, end) runs."""
    return layout_fact(layout, "lane runs", _lane_runs)


def _lane_runs(layout: Layout) -> tuple[tuple[int, int], ...]:
    runs: list[list[int]] = []
    for lane in sorted(lane_set(layout)):
        if runs and runs[-1][1] == lane:
            runs[-1][1] = lane + 1
        else:
            runs.append([lane, lane + 1])
    return tuple((lo, hi) for lo, hi in runs)


def buffer_count(buffers) -> str:
    """``"1 buffer"``, ``"3 buffers"``: for the pools' reprs."""
    return f"{len(buffers)} buffer{'s' if len(buffers) != 1 else ''}"


class BumpPool:
    """A bump allocator's state. Positions are bytes (SMEM) or 32-bit columns (TMEM).

    ``_names`` is shared by an SMEM pool and the TMEM pools whose slots it holds: a
    plan names each buffer of a CTA once, whichever memory it lives in.
    """

    name: str
    _names: set[str]

    def _init_bump(self, names: set[str]) -> None:
        self._cursor = 0
        self._high_water = 0
        self._buffers: list[Buffer] = []
        self._moves: list[tuple[int, int]] = []
        self._facts: list[LayoutFacts] = []  # per buffer, in order (see layout_facts)
        self._names = names

    @property
    def offset(self) -> int:
        """The cursor: where the next buffer would start before alignment."""
        return self._cursor

    @property
    def max_offset(self) -> int:
        """The high-water mark."""
        return self._high_water

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        return tuple(self._buffers)

    def buffer(self, name: str) -> Buffer:
        """The buffer called ``name``."""
        for buf in self._buffers:
            if buf.name == name:
                return buf
        raise AllocationError(
            f"pool {self.name!r} has no buffer {name!r}; it has {[b.name for b in self._buffers]}"
        )

    def _check_new_name(self, name: str | None) -> None:
        """Raise before any state changes when ``name`` is unusable or taken in this CTA."""
        if name is None:
            return
        if type(name) is not str or name not in _NAMES:
            check_buffer_name(name, "buffer name")
            if len(_NAMES) < FACTS_KEPT:
                _NAMES.add(name)
        if name in self._names:
            raise AllocationError(
                f"this CTA already has a buffer named {name!r}: SMEM and TMEM buffers (and the "
                "generated TMEM address slots and stage-view names) share one namespace, so "
                "pick another name"
            )

    def _free_name(self, stem: str, numbered: bool = True) -> str:
        """``stem`` + the first free number from len(buffers), or bare ``stem`` while free."""
        n = len(self._buffers)
        name = stem if not numbered and stem not in self._names else f"{stem}{n}"
        while name in self._names:
            n += 1
            name = f"{stem}{n}"
        return name

    def _unique_name(self, name: str | None, stem: str) -> str:
        """``name`` (already checked) or a generated free one; taken from now on."""
        name = self._free_name(stem) if name is None else name
        self._names.add(name)
        return name

    def _move(self, position: int) -> None:
        """Set the cursor; like TIRx, a move beyond the high-water mark raises it
        (docs/DESIGN.md#smem-pools)."""
        self._moves.append((self._cursor, position))
        self._cursor = position
        self._high_water = max(self._high_water, position)

    def _entries(self, spots: Sequence[tuple[int, int, int, int]]) -> tuple[PlanEntry, ...]:
        """Plan entries of the buffers, in order, from their ``(offset, size, align, padding)``
        (one per buffer), with the layout facts kept at alloc, their overlaps and lifetimes."""
        buffers = self._buffers
        overlaps: list[tuple[str, ...]] = [()] * len(buffers)
        if self._may_overlap():
            partners: list[list[str]] = [[] for _ in buffers]
            ranges = [(offset, offset + size) for offset, size, _, _ in spots]
            for i, j in overlapping_index_pairs(ranges):  # by (i, j): each list in buffer order
                partners[i].append(buffers[j].name)
                partners[j].append(buffers[i].name)
            overlaps = [tuple(names) for names in partners]
        entries = []
        new = object.__new__
        for b, (offset, size, align, padding), facts, overlap, (phases, alias_of) in zip(
            buffers, spots, self._facts, overlaps, self._lifetime_fields()
        ):
            kind, _, label, swizzle, lanes = facts
            # every field in declaration order, written into the entry's dict: a frozen
            # dataclass's own __init__ sets each through object.__setattr__, and its only
            # check (the swizzle is a SwizzleMode value) holds by construction
            # (layout_facts takes it from layout_swizzle_mode)
            entry = new(PlanEntry)
            fields = entry.__dict__
            fields["name"] = b.name
            fields["scope"] = b.scope
            fields["offset"] = offset
            fields["length"] = size
            fields["align"] = align
            fields["padding"] = padding
            fields["dtype"] = b.dtype.name
            fields["shape"] = b.shape
            fields["layout"] = label
            fields["overlaps"] = overlap
            fields["swizzle"] = swizzle
            fields["lanes"] = lanes
            fields["phases"] = phases
            fields["alias_of"] = alias_of
            fields["layout_kind"] = kind
            entries.append(entry)
        return tuple(entries)

    def _lifetime_fields(self) -> list[tuple[tuple[str, ...], str | None]]:
        """Per buffer, the plan's ``phases`` and ``alias_of`` (LifetimePool)."""
        raise NotImplementedError

    def _may_overlap(self) -> bool:
        """Whether two buffers can share positions (LifetimePool)."""
        raise NotImplementedError


def layout_facts(layout: Layout, kind: LayoutKind, detail: str, scope: str) -> LayoutFacts:
    """How a pool chose a buffer's layout and what its plan entry takes from it: the layout's
    kind and detail (the Buffer's ``layout_kind`` and ``layout_detail``), its label, its
    swizzle mode value and (TMEM) its lane runs. A pool works them out once per buffer at
    alloc, from its caches for the usual requests."""
    return (
        kind,
        detail,
        kind.label(detail),
        int(layout_swizzle_mode(layout)),
        lane_runs(layout) if scope == TMEM else (),
    )
