"""MemoryPlan: the plan's data (:mod:`tilemem.plan.data`) with its exporters.

The text report, the SVG picture, the C++ header and the padding advice each read the data
classes; this module joins them into the one object pools return. The data classes are
re-exported here.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Any

from ..errors import PlanFileError, TargetError
from .advice import advise_padding
from .check import check_plan
from .cpp_header import cpp_header
from .data import (
    LayoutKind,
    PaddingAdvice,
    PlanData,
    PlanEntry,
    PoolPlan,
    StageViews,
    TMEMAllocation,
)
from .format import format_plan
from .svg import plan_svg

__all__ = [
    "LayoutKind",
    "MemoryPlan",
    "PaddingAdvice",
    "PlanEntry",
    "PoolPlan",
    "StageViews",
    "TMEMAllocation",
]


@dataclass(frozen=True)
class MemoryPlan(PlanData):
    """The SMEM pool of a thread block and the TMEM pools whose slots it holds: the data of
    :class:`~tilemem.plan.data.PlanData` with its report, picture, header and advice."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryPlan:
        """The plan ``to_dict`` wrote, and one tilemem could have made: PlanFileError naming
        the rule and the path otherwise (see :mod:`tilemem.plan.check`)."""
        try:
            plan = super().from_dict(data)
        except TargetError as exc:  # with_threads looks the target up
            raise PlanFileError(f"plan.target: {exc}") from None
        return check_plan(plan)

    def with_advice(self) -> MemoryPlan:
        """This plan with padding advice for its SMEM pool (an order that loses fewer bytes)."""
        return replace(self, advice=advise_padding(self.smem) if self.smem else None)

    def to_cpp_header(self, namespace: str = "tilemem_plan", *, cute: bool = False) -> str:
        """The plan as a self-contained C++17 header: a namespace per pool and buffer with
        constexpr offsets, sizes, alignments, swizzle modes, TMEM columns and static_asserts
        (see :mod:`tilemem.plan.cpp_header`). ``cute=True`` adds each buffer's CuTe layout
        type, ring stages and GMMA/UMMA layout types (:mod:`tilemem.interop.cute_cpp`)."""
        header = cpp_header(self, namespace)
        if not cute:
            return header
        from ..interop.cute_cpp import with_cute_types  # CuTe text only on request

        return with_cute_types(header, self, namespace)

    def to_svg(self, title: str | None = None) -> str:
        """The plan as an SVG picture: SMEM bytes (phases as rows when lifetimes exist) and a
        TMEM map of lanes x columns (see :mod:`tilemem.plan.svg`)."""
        return plan_svg(self, title)

    def format(self) -> str:
        """The text report: a buffer table per pool, totals, a TMEM column map."""
        return format_plan(self)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        """One line: the target, the threads when known, and each pool's committed size
        (or high-water mark before commit) and buffer count; ``str()`` gives the report."""
        pools = "; ".join(_pool_summary(p) for p in self.pools)
        threads = f", {self.threads} threads" if self.threads is not None else ""
        return f"<MemoryPlan {self.target or 'no target'}{threads}: {pools}>"

    def _repr_svg_(self) -> str:
        """Jupyter shows a plan as its picture."""
        return self.to_svg()

    def _repr_html_(self) -> str:
        """Jupyter's rich form: the picture, and the text report folded under it."""
        svg = self.to_svg()
        svg = svg[svg.index("<svg") :]  # no XML declaration inside HTML
        return (
            f"<div>{svg}<details><summary>report</summary>"
            f"<pre>{html.escape(self.format())}</pre></details></div>"
        )


def _pool_summary(pool: PoolPlan) -> str:
    unit = "bytes" if pool.unit == "bytes" else "columns"
    size = (
        f"{pool.committed:,} {unit}"
        if pool.committed is not None
        else f"uncommitted, {pool.high_water:,} {unit} so far"
    )
    count = len(pool.entries)
    return f"{pool.name} {size}, {count} buffer{'s' if count != 1 else ''}"
