"""The memory plan as data: entries per buffer, totals, overlaps; dict and table forms."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class PlanEntry:
    """One buffer of a pool. SMEM positions are bytes, TMEM positions 32-bit columns."""

    name: str
    scope: str
    offset: int
    size: int
    align: int
    padding: int
    dtype: str
    shape: tuple[int, ...]
    layout: str
    overlaps: tuple[str, ...] = ()

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class PoolPlan:
    """One pool: its buffers in allocation order and its totals."""

    name: str
    scope: str  # "shared.dyn" or "tmem"
    unit: str  # "bytes" or "cols"
    entries: tuple[PlanEntry, ...]
    high_water: int
    size: int | None  # committed size (bytes, or total_cols for TMEM); None before commit
    moves: tuple[tuple[int, int], ...] = ()  # (cursor before, cursor after) of each move_base_to
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def padding(self) -> int:
        return sum(e.padding for e in self.entries)

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

    def occupancy(self, threads: int, target=None):
        """CTAs per SM for blocks of ``threads`` threads (see :mod:`tilemem.plan.occupancy`)."""
        from .occupancy import plan_occupancy

        return plan_occupancy(self, threads, target)

    def with_section(self, title: str, lines) -> MemoryPlan:
        return MemoryPlan(self.pools, self.target, self.sections + ((title, tuple(lines)),))

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "pools": [p.to_dict() for p in self.pools],
            "sections": {title: list(lines) for title, lines in self.sections},
        }

    def format(self) -> str:
        from .format import format_plan

        return format_plan(self)

    def __str__(self) -> str:
        return self.format()
