"""Bookkeeping shared by SMEMPool and TMEMPool: a cursor, a high-water mark, buffers in order,
moves, and the names of one CTA's buffers."""

from __future__ import annotations

from ..errors import AllocationError
from ..layout import Layout, TileLayout
from ..layout.smem import layout_swizzle_mode
from ..plan.model import PlanEntry
from ..plan.packing import overlapping_pairs
from ..validate import check_buffer_name
from .buffer import TMEM, Buffer


def lane_set(layout: Layout) -> frozenset[int]:
    """The TMEM lanes a layout touches, replicas included.

    Lanes are ``offset + sum(c_i * stride_i)`` over the TLane Iters of shard and replica.
    TMEM buffers have TileLayouts only (TMEMPool refuses any other layout).
    """
    assert isinstance(layout, TileLayout), layout
    lanes = {layout.offset.get("TLane", 0)}
    for it in (*layout.shard, *layout.replica):
        if it.axis == "TLane":
            lanes = {lane + k * it.stride for lane in lanes for k in range(it.extent)}
    return frozenset(lanes)


def lane_runs(layout: Layout) -> tuple[tuple[int, int], ...]:
    """The lanes of :func:`lane_set` as sorted [first, end) runs."""
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
        check_buffer_name(name, "buffer name")
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

    def _entries(self, spots) -> tuple[PlanEntry, ...]:
        """Plan entries from ``(buffer, offset, size, align, padding)`` rows, overlaps included."""
        spots = list(spots)
        partners: dict[str, list[str]] = {b.name: [] for b, *_ in spots}
        for a, b in overlapping_pairs(
            [(b.name, offset, offset + size) for b, offset, size, _, _ in spots]
        ):
            partners[a].append(b)
            partners[b].append(a)
        return tuple(
            PlanEntry(
                name=b.name,
                scope=b.scope,
                offset=offset,
                length=size,
                align=align,
                padding=padding,
                dtype=b.dtype.name,
                shape=b.shape,
                layout=b.layout_name,
                layout_kind=b.layout_kind,
                overlaps=tuple(partners[b.name]),
                swizzle=int(layout_swizzle_mode(b.layout)),
                lanes=lane_runs(b.layout) if b.scope == TMEM else (),
            )
            for b, offset, size, align, padding in spots
        )
