"""Padding advice: bytes lost to alignment, and an allocation order that loses fewer."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..errors import PlanError
from ..validate import is_int
from .data import PaddingAdvice
from .packing import bump_total

if TYPE_CHECKING:  # the model holds advice; advice reads the model
    from .data import PoolPlan

_EXHAUSTIVE_UP_TO = 7  # buffers; 7! = 5040 orders


def best_order(entries) -> tuple[list, int]:
    """(order, high-water) minimising the bump allocator's high-water mark."""
    entries = _entries(entries)
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


def _entries(entries) -> list:
    """Plan entries (anything with integer ``length`` and ``align``), or PlanError."""
    if isinstance(entries, str | bytes) or not hasattr(entries, "__iter__"):
        raise PlanError(f"best_order takes a pool's plan entries, got {entries!r}")
    out = list(entries)
    for e in out:
        if not (is_int(getattr(e, "length", None)) and is_int(getattr(e, "align", None))):
            raise PlanError(f"best_order takes plan entries (PlanEntry), got {e!r}")
    return out


def advise_padding(pool: PoolPlan) -> PaddingAdvice:
    """The padding of ``pool`` and, when one exists, a bump order with a lower high-water."""
    if not all(hasattr(pool, a) for a in ("name", "entries", "moves", "high_water", "padding")):
        raise PlanError(f"padding advice reads a pool's plan (PoolPlan), got {pool!r}")
    if pool.moves:
        return PaddingAdvice(pool.name, pool.padding, pool.high_water, overlays=True)
    order, total = best_order(pool.entries)
    if pool.high_water - total <= 0:
        return PaddingAdvice(pool.name, pool.padding, pool.high_water, overlays=False)
    return PaddingAdvice(
        pool.name, pool.padding, pool.high_water, False, tuple(e.name for e in order), total
    )


def padding_advice(pool: PoolPlan) -> list[str]:
    """Lines for the report: padding lost, and a better order when one exists."""
    return advise_padding(pool).lines()
