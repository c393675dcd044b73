"""Padding advice: bytes lost to alignment, and an allocation order that loses fewer."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from .model import PoolPlan
from .packing import bump_total

_EXHAUSTIVE_UP_TO = 7  # buffers; 7! = 5040 orders


def best_order(entries) -> tuple[list, int]:
    """(order, high-water) minimising the bump allocator's high-water mark."""
    entries = list(entries)
    candidates: Iterable[Sequence]
    if len(entries) <= _EXHAUSTIVE_UP_TO:
        candidates = itertools.permutations(entries)
    else:  # widest alignment first keeps every cursor aligned for what follows
        candidates = [sorted(entries, key=lambda e: -e.align)]
    best, best_total = entries, bump_total((e.length, e.align) for e in entries)[0]
    for order in candidates:
        total = bump_total((e.length, e.align) for e in order)[0]
        if total < best_total:
            best, best_total = list(order), total
    return best, best_total


def padding_advice(pool: PoolPlan) -> list[str]:
    """Lines for the report: padding lost, and a better order when one exists."""
    lines = [f"{pool.padding} bytes lost to alignment padding"]
    if pool.moves:
        lines.append("pool uses move_base_to; reordering is not suggested for overlays")
        return lines
    order, total = best_order(pool.entries)
    saved = pool.high_water - total
    if saved > 0:
        lines.append(
            f"allocating in the order {', '.join(e.name for e in order)} saves {saved} bytes "
            f"(high-water {pool.high_water} -> {total})"
        )
    else:
        lines.append("no allocation order saves bytes")
    return lines
