"""Bookkeeping shared by SMEMPool and TMEMPool: a cursor, a high-water mark, buffers in order,
moves."""

from __future__ import annotations

from ..errors import AllocationError
from ..plan.model import PlanEntry
from ..plan.packing import overlapping_pairs
from .buffer import Buffer


class BumpPool:
    """A bump allocator's state. Positions are bytes (SMEM) or 32-bit columns (TMEM)."""

    name: str

    def _init_bump(self) -> None:
        self._cursor = 0
        self._high_water = 0
        self._buffers: list[Buffer] = []
        self._moves: list[tuple[int, int]] = []

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
        raise KeyError(
            f"pool {self.name!r} has no buffer {name!r}; it has {[b.name for b in self._buffers]}"
        )

    def _unique_name(self, name: str | None, stem: str) -> str:
        taken = {b.name for b in self._buffers}
        if name is not None:
            if name in taken:
                raise AllocationError(f"pool {self.name!r} already has a buffer named {name!r}")
            return name
        n = len(self._buffers)
        while f"{stem}{n}" in taken:
            n += 1
        return f"{stem}{n}"

    def _record(self, buf: Buffer, end: int) -> None:
        self._buffers.append(buf)
        self._cursor = end
        self._high_water = max(self._high_water, end)

    def _move(self, position: int) -> None:
        self._moves.append((self._cursor, position))
        self._cursor = position

    def _entries(self, spots) -> tuple[PlanEntry, ...]:
        """Plan entries from ``(buffer, offset, size, align, padding)`` rows, overlaps included."""
        spots = list(spots)
        overlaps = overlapping_pairs(
            [(b.name, offset, offset + size) for b, offset, size, _, _ in spots]
        )
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
                overlaps=tuple(
                    x for pair in overlaps if b.name in pair for x in pair if x != b.name
                ),
            )
            for b, offset, size, align, padding in spots
        )
