"""Padding advice pinned: exhaustive search up to 7 buffers, widest-alignment-first above,
the exact saving, and what it refuses. Totals are bump placements worked out by hand
(docs/DESIGN.md#smem-pools: round the cursor up to the alignment, advance by the size).
"""

from types import SimpleNamespace

import pytest

from tilemem import SMEMPool
from tilemem.errors import PlanError
from tilemem.plan import best_order
from tilemem.plan.advice import PaddingAdvice, advise_padding


def _entry(name, length, align):
    return SimpleNamespace(name=name, length=length, align=align)


def _entries(ones):
    """X, Y: 5 bytes aligned to 8; Z: 2 bytes; then ``ones`` 1-byte buffers (align 1)."""
    return [_entry("X", 5, 8), _entry("Y", 5, 8), _entry("Z", 2, 1)] + [
        _entry(f"W{i}", 1, 1) for i in range(ones)
    ]


def test_seven_buffers_are_searched_exhaustively():
    # best: X 0-5, Z 5-7, W 7-8, Y 8-13, 3 W 13-16 -> 16 (widest first would give 19)
    order, total = best_order(_entries(4))
    assert total == 16
    assert sum(e.length for e in order) == total  # no padding left at all


def test_eight_buffers_are_placed_widest_alignment_first():
    # given W4..W0, Z, Y, X: 5 W 0-5, Z 5-7, Y 8-13, X 16-21 -> 21. Widest first, ties in the
    # given order: Y 0-5, X 8-13, 5 W 13-18, Z 18-20 -> 20 (the optimum, 17, is not searched
    # for above 7 buffers)
    order, total = best_order(list(reversed(_entries(5))))
    assert total == 20
    assert [e.name for e in order] == ["Y", "X", "W4", "W3", "W2", "W1", "W0", "Z"]


def test_given_order_is_kept_when_nothing_is_better():
    entries = [_entry("A", 8, 8), _entry("B", 4, 4)]
    order, total = best_order(entries)
    assert (order, total) == (entries, 12)


@pytest.mark.parametrize("entries", ["AB", 5, None])
def test_best_order_takes_entries(entries):
    with pytest.raises(PlanError, match="best_order takes a pool's plan entries, got"):
        best_order(entries)


@pytest.mark.parametrize(
    "entry", [_entry("A", 4, None), _entry("A", None, 4), _entry("A", 4.0, 4), "A"]
)
def test_every_entry_needs_integer_length_and_align(entry):
    with pytest.raises(PlanError, match=r"best_order takes plan entries \(PlanEntry\), got"):
        best_order([entry])


def test_a_saving_of_one_byte_is_reported():
    # A (1 B) then B (uint16, align 2): A 0-1, B 2-4 = 4; B then A: 0-2, 2-3 = 3
    pool = SMEMPool()
    pool.alloc((1,), "uint8", name="A")
    pool.alloc((1,), "uint16", name="B")
    advice = advise_padding(pool.plan().smem)
    assert (advice.order, advice.best_high_water, advice.saved) == (("B", "A"), 3, 1)
    assert advice.lines() == [
        "1 bytes lost to alignment padding",
        "allocating in the order B, A saves 1 bytes (high-water 4 -> 3)",
    ]


def test_no_saving_means_no_order():
    pool = SMEMPool()
    pool.alloc((1,), "uint16", name="B")
    pool.alloc((1,), "uint8", name="A")
    advice = advise_padding(pool.plan().smem)
    assert (advice.order, advice.best_high_water, advice.saved, advice.overlays) == (
        (),
        None,
        0,
        False,
    )
    assert advice.lines() == [
        "0 bytes lost to alignment padding",
        "no allocation order saves bytes",
    ]


def test_overlays_are_not_reordered():
    pool = SMEMPool()
    pool.alloc((1,), "uint8", name="A")
    pool.alloc((1,), "uint16", name="B")
    pool.move_base_to(0)
    pool.alloc((2,), "uint8", name="C")
    advice = advise_padding(pool.plan().smem)
    assert (advice.overlays, advice.order, advice.high_water, advice.padding) == (True, (), 4, 1)
    assert advice.lines() == [
        "1 bytes lost to alignment padding",
        "pool uses move_base_to; reordering is not suggested for overlays",
    ]


def test_saved_is_zero_without_a_better_order():
    assert PaddingAdvice("p", 0, 100, False).saved == 0
    assert PaddingAdvice("p", 0, 100, False, ("a",), 90).saved == 10


@pytest.mark.parametrize("pool", [SimpleNamespace(name="p"), "smem", None])
def test_advice_reads_a_pool_plan(pool):
    with pytest.raises(PlanError, match=r"padding advice reads a pool's plan \(PoolPlan\), got"):
        advise_padding(pool)
