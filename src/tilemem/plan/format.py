"""Text rendering of a PlanData: a buffer table per pool, totals, a TMEM column map."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

from ..errors import CapacityError
from ..intmath import ceil_div
from ..scopes import TMEM
from ..text import table

if TYPE_CHECKING:  # the model imports this module to render itself
    from .data import PlanData, PoolPlan

_MAP_WIDTH = 64  # characters in the TMEM column map


def _pool_lines(pool: PoolPlan) -> list[str]:
    unit = "bytes" if pool.unit == "bytes" else "cols"
    header = [
        "name",
        "scope",
        "offset",
        unit,
        "align",
        "padding",
        "dtype",
        "shape",
        "layout",
        "overlaps",
    ]
    rows = [header]
    for e in pool.entries:
        rows.append(
            [
                e.name,
                e.scope,
                str(e.offset),
                str(e.length),
                str(e.align),
                str(e.padding),
                e.dtype,
                "x".join(map(str, e.shape)),
                e.layout,
                ", ".join(e.overlaps),
            ]
        )
    if not pool.entries:
        rows.append(["(empty)"] + [""] * (len(header) - 1))
    lines = [f"{pool.name} ({pool.scope})"] + table(rows, right={2, 3, 4, 5})
    committed = "not committed" if pool.committed is None else f"committed {pool.committed} {unit}"
    lines.append(
        f"high-water {pool.high_water} {unit}, {committed}, padding {pool.padding} {unit}"
        + (f", {len(pool.moves)} move_base_to" if pool.moves else "")
    )
    lines += lifetime_lines(pool)
    if pool.allocation is not None:
        a = pool.allocation
        lines.append(
            f"alloc: cta_group::{a.cta_group}, warp {a.alloc_warp} allocates, "
            f"warp {a.dealloc_warp} deallocates, slot {a.slot}@{a.slot_offset}"
        )
    for views in pool.stages:
        spans = ", ".join(f"[{s}] cols {lo}..{hi}" for s, (lo, hi) in enumerate(views.spans))
        lines.append(f"stages of {views.buffer}: {spans}")
    return lines


def lifetime_lines(pool: PoolPlan) -> list[str]:
    """A pool with phases: footprint against lower bound and bump, and a buffer x phase table
    ('#' where the buffer is live) with each buffer's range."""
    if not pool.phases:
        return []
    unit = "bytes" if pool.unit == "bytes" else "cols"
    lines = [
        f"packed by lifetime: footprint {pool.footprint} {unit}, lower bound "
        f"{pool.lower_bound} {unit}, bump placement {pool.bump} {unit}"
    ]
    rows = [["buffer", *pool.phases, unit]]
    for e in pool.entries:
        live = ["#" if p in e.phases else "." for p in pool.phases]
        view = f" in {e.alias_of}" if e.alias_of else ""
        rows.append([e.name, *live, f"[{e.offset}, {e.end}){view}"])
    return [*lines, "lifetimes:", *table(rows, indent="  ")]


def column_map(pool: PoolPlan) -> list[str]:
    """One character per group of columns; each buffer gets a letter, '*' where buffers alias."""
    total = pool.committed or max(32, pool.high_water)  # >= 32 columns
    per_char = ceil_div(total, _MAP_WIDTH)
    cells = ["."] * ceil_div(total, per_char)
    legend = []
    letters = string.ascii_uppercase + string.ascii_lowercase
    for n, e in enumerate(pool.entries):
        mark = letters[n % len(letters)]
        legend.append(f"{mark}={e.name}[{e.offset}:{e.end})")
        for c in range(e.offset // per_char, min(len(cells), ceil_div(e.end, per_char))):
            cells[c] = mark if cells[c] == "." else "*"
    return [
        f"TMEM columns 0..{total} ({per_char} per character):",
        "|" + "".join(cells) + "|",
        "  " + "  ".join(legend),
    ]


def format_plan(plan: PlanData) -> str:
    lines: list[str] = []
    if plan.target:
        lines.append(f"target {plan.target}")
    for pool in plan.pools:
        if lines:
            lines.append("")
        lines += _pool_lines(pool)
        if pool.scope == TMEM and pool.entries:
            lines += column_map(pool)
    if plan.threads is not None and plan.target:
        lines += ["", f"occupancy ({plan.threads} threads per CTA)"]
        try:
            lines += [f"  {line}" for line in plan.occupancy().lines()]
        except CapacityError as exc:  # an uncommitted pool beyond the target's capacity
            lines.append(f"  {exc}")
    if plan.advice is not None:
        lines += ["", "padding"] + [f"  {line}" for line in plan.advice.lines()]
    return "\n".join(lines)
