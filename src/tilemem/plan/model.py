"""The memory plan as data: one entry per buffer, each pool's totals and overlaps.

Rendering lives in :mod:`tilemem.plan.format`, occupancy in :mod:`tilemem.plan.occupancy`;
both read this model, and this module imports neither.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import CapacityError
from .format import format_plan
from .occupancy import Occupancy, occupancy
from .target import Target


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

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass(frozen=True)
class PoolPlan:
    """One pool: its buffers in allocation order and its totals."""

    name: str
    scope: str  # "shared.dyn" or "tmem"
    unit: str  # "bytes" or "cols"
    entries: tuple[PlanEntry, ...]
    high_water: int
    committed: int | None  # committed bytes, or total_cols for TMEM; None before commit
    moves: tuple[tuple[int, int], ...] = ()  # (cursor before, cursor after) of each move_base_to
    details: dict[str, Any] = field(default_factory=dict)

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
        out = asdict(self)
        out["padding"] = self.padding
        out["entries"] = [
            {**asdict(e), "shape": list(e.shape), "overlaps": list(e.overlaps)}
            for e in self.entries
        ]
        out["moves"] = [list(m) for m in self.moves]
        return out


@dataclass(frozen=True)
class MemoryPlan:
    """The SMEM pool of a thread block and the TMEM pools whose slots it holds."""

    pools: tuple[PoolPlan, ...]
    target: str | None = None
    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()  # extra report sections (title, lines)

    @property
    def smem(self) -> PoolPlan | None:
        return next((p for p in self.pools if p.scope == "shared.dyn"), None)

    @property
    def tmem(self) -> list[PoolPlan]:
        return [p for p in self.pools if p.scope == "tmem"]

    def entry(self, name: str) -> PlanEntry:
        for pool in self.pools:
            for e in pool.entries:
                if e.name == name:
                    return e
        raise KeyError(name)

    def occupancy(self, threads: int, target: str | Target | None = None) -> Occupancy:
        """CTAs per SM for blocks of ``threads`` threads (see :mod:`tilemem.plan.occupancy`).

        Uses the committed sizes, or the high-water marks of pools not yet committed.
        """
        target = target or self.target
        if target is None:
            raise CapacityError(
                "occupancy needs a target: pass target= or plan with SMEMPool(target=...)"
            )
        smem = self.smem
        smem_bytes = 0 if smem is None else smem.used
        tmem_cols = sum(p.used for p in self.tmem)
        return occupancy(smem_bytes, threads, target, tmem_cols)

    def with_section(self, title: str, lines) -> MemoryPlan:
        return MemoryPlan(self.pools, self.target, self.sections + ((title, tuple(lines)),))

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "pools": [p.to_dict() for p in self.pools],
            "sections": {title: list(lines) for title, lines in self.sections},
        }

    def format(self) -> str:
        """The text report: a buffer table per pool, totals, a TMEM column map."""
        return format_plan(self)

    def __str__(self) -> str:
        return self.format()
