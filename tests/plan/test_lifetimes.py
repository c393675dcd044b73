"""The lifetime packer: conflicting items never overlap, alignment holds, the footprint is
minimal where claimed, never above bump placement, and the same items give the same plan."""

import functools
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tilemem.errors import AllocationError
from tilemem.plan.lifetimes import Item, conflicts, lower_bound, pack

PHASES = ("load", "mma", "epilogue")
QUICK = 300  # search nodes: the laws below hold however early the search stops


def live_together(a: Item, b: Item) -> bool:
    shared_phase = a.live is None or b.live is None or bool(a.live & b.live)
    shared_lane = a.lanes is None or b.lanes is None or bool(a.lanes & b.lanes)
    return shared_phase and shared_lane


def clashes(items, offsets) -> list[tuple[str, str]]:
    """Co-live pairs sharing a position: written here, independently of the packer."""
    bad = []
    for i, a in enumerate(items):
        for j in range(i + 1, len(items)):
            b = items[j]
            apart = offsets[i] + a.length <= offsets[j] or offsets[j] + b.length <= offsets[i]
            if live_together(a, b) and not apart:
                bad.append((a.name, b.name))
    return bad


def naive_lower_bound(items) -> int:
    return max(
        sum(it.length for it in items if it.live is None or phase in it.live) for phase in PHASES
    )


def naive_bump(items) -> int:
    cursor = 0
    for it in items:
        cursor = -(-cursor // it.align) * it.align + it.length
    return cursor


def brute_force_minimum(items) -> int:
    """Every aligned offset below the bump footprint, tried exhaustively (no lemma used); an
    item with a fixed ``offset`` tries only that one."""
    cursor = max([it.offset + it.length for it in items if it.offset is not None], default=0)
    for it in items:  # bump placement above the fixed items: feasible, so a valid limit
        if it.offset is None:
            cursor = -(-cursor // it.align) * it.align + it.length
    limit = cursor
    best = [limit]

    def place(n: int, offsets: list[int], end: int) -> None:
        if end >= best[0]:
            return
        if n == len(items):
            best[0] = end
            return
        it = items[n]
        tries = [it.offset] if it.offset is not None else range(0, limit - it.length + 1, it.align)
        for x in tries:
            trial = [*offsets, x]
            if not clashes(items[: n + 1], trial):
                place(n + 1, trial, max(end, x + it.length))

    place(0, [], 0)
    return best[0]


live_sets = st.one_of(st.none(), st.sets(st.sampled_from(PHASES), min_size=1).map(frozenset))


@st.composite
def instances(draw, max_items=12, max_units=64):
    n = draw(st.integers(1, max_items))
    items = []
    for i in range(n):
        align = draw(st.sampled_from([1, 2, 4, 8, 16]))
        size = draw(st.integers(1, max_units))
        items.append(Item(f"b{i}", size, align, draw(live_sets)))
    return items


@given(instances())
@settings(max_examples=60, deadline=None)
def test_co_live_items_never_share_a_position(items):
    packing = pack(items, PHASES, node_limit=QUICK)
    assert clashes(items, packing.offsets) == []


@given(instances())
@settings(max_examples=60, deadline=None)
def test_every_item_starts_on_its_alignment(items):
    packing = pack(items, PHASES, node_limit=QUICK)
    assert all(off % it.align == 0 for off, it in zip(packing.offsets, items))


@given(instances())
@settings(max_examples=60, deadline=None)
def test_footprint_between_lower_bound_and_bump(items):
    packing = pack(items, PHASES, node_limit=QUICK)
    ends = max(off + it.length for off, it in zip(packing.offsets, items))
    assert packing.footprint == ends
    assert naive_lower_bound(items) == packing.lower_bound <= packing.footprint
    assert packing.footprint <= packing.first_fit <= naive_bump(items) == packing.bump


@given(instances())
@settings(max_examples=40, deadline=None)
def test_same_items_give_the_same_offsets(items):
    copy = [Item(it.name, it.length, it.align, it.live) for it in items]
    assert pack(items, PHASES, node_limit=QUICK) == pack(copy, PHASES, node_limit=QUICK)


@functools.cache
def _minimum(key) -> int:
    return brute_force_minimum([Item(*fields) for fields in key])


@given(instances(max_items=5, max_units=9))
@settings(max_examples=60, deadline=None)
def test_footprint_is_the_brute_force_minimum(items):
    packing = pack(items, PHASES)
    assert packing.exact
    key = tuple((it.name, it.length, it.align, it.live) for it in items)
    assert packing.footprint == _minimum(key)


LANE_GROUPS = (None, frozenset(range(64)), frozenset(range(64, 128)))  # TMEM: all, halves


@given(instances(max_items=5, max_units=9), st.lists(st.sampled_from(LANE_GROUPS), min_size=5))
@settings(max_examples=40, deadline=None)
def test_footprint_with_lanes_is_the_brute_force_minimum(items, lanes):
    items = [Item(it.name, it.length, it.align, it.live, lane) for it, lane in zip(items, lanes)]
    packing = pack(items, PHASES)
    assert packing.exact and clashes(items, packing.offsets) == []
    assert packing.footprint == brute_force_minimum(items)


@given(instances(max_items=5, max_units=9), st.lists(st.integers(0, 12), min_size=5))
@settings(max_examples=40, deadline=None)
def test_footprint_around_fixed_items_is_the_brute_force_minimum(items, spots):
    # every other item pinned at an aligned spot; the rest are placed around them
    items = [
        Item(it.name, it.length, it.align, it.live, offset=spot * it.align if n % 2 else None)
        for n, (it, spot) in enumerate(zip(items, spots))
    ]
    pinned = [it for it in items if it.offset is not None]
    assume(clashes(pinned, [it.offset for it in pinned]) == [])
    packing = pack(items, PHASES)
    assert packing.exact and clashes(items, packing.offsets) == []
    assert all(p == it.offset for p, it in zip(packing.offsets, items) if it.offset is not None)
    assert packing.footprint == brute_force_minimum(items)


@st.composite
def tight_instances(draw):
    """Items whose minimum is known by construction: the first phase is tiled without a gap
    by items (each also live in random other phases), so its load is both a lower bound and
    reached; items of the other phases are planted in free places. Shuffled."""
    placed: list[tuple[Item, int]] = []
    top = 0
    for n in range(draw(st.integers(1, 8))):
        size = 8 * draw(st.integers(1, 64))
        align = min(64, top & -top or 64, 8 * (size // 8 & -(size // 8)))
        others = draw(st.sets(st.sampled_from(PHASES[1:])))
        placed.append((Item(f"t{n}", size, align, frozenset({PHASES[0], *others})), top))
        top += size
    for n in range(draw(st.integers(0, 6))):
        live = frozenset(draw(st.sets(st.sampled_from(PHASES[1:]), min_size=1)))
        start = 8 * draw(st.integers(0, top // 8 - 1))
        item = Item(f"x{n}", min(top - start, 8 * draw(st.integers(1, 16))), 8, live)
        if not clashes([it for it, _ in placed] + [item], [o for _, o in placed] + [start]):
            placed.append((item, start))
    items = draw(st.permutations([it for it, _ in placed]))
    return items, top


@given(tight_instances())
@settings(max_examples=60, deadline=None)
def test_footprint_meets_the_lower_bound_where_it_is_reachable(case):
    items, reachable = case
    packing = pack(items, PHASES)
    assert packing.lower_bound == reachable == packing.footprint
    assert packing.exact and clashes(items, packing.offsets) == []


def kernel_like(seed: int) -> list[Item]:
    """16 buffers: swizzled tiles, mbarrier groups, small arrays, over 4 phases."""
    rng = random.Random(seed)
    phases = ("p0", "p1", "p2", "p3")
    items = []
    for n in range(16):
        align = rng.choice((8, 16, 128, 256, 512, 1024))
        size = align * rng.randint(1, 64 if align >= 256 else 8)
        live = frozenset(rng.sample(phases, rng.randint(1, 4)))
        items.append(Item(f"b{n}", size, align, live))
    return items


@pytest.mark.parametrize("seed", range(6))
def test_sixteen_buffers_are_proven_minimal(seed):
    items = kernel_like(seed)
    packing = pack(items)
    assert packing.exact and clashes(items, packing.offsets) == []
    assert packing.footprint <= packing.first_fit


def test_epilogue_tile_goes_over_drained_stages():
    # 4 stages of A (16 KiB) + B (32 KiB) in the mainloop; a 32 KiB epilogue tile afterwards.
    items = [
        Item("A", 4 * 16384, 1024, frozenset({"load", "mma"})),
        Item("B", 4 * 32768, 1024, frozenset({"load", "mma"})),
        Item("C", 32768, 1024, frozenset({"epilogue"})),
        Item("bars", 64, 8),
    ]
    packing = pack(items, PHASES)
    assert packing.footprint == 4 * 49152 + 64 == packing.lower_bound
    assert packing.bump == 4 * 49152 + 32768 + 64
    assert packing.exact


def test_tmem_buffers_on_disjoint_lanes_share_columns():
    upper = frozenset(range(64))
    lower = frozenset(range(64, 128))
    items = [
        Item("acc0", 128, lanes=upper, live=frozenset({"mma"})),
        Item("acc1", 128, lanes=lower, live=frozenset({"mma"})),
        Item("sf", 16, live=frozenset({"mma"})),
    ]
    packing = pack(items, PHASES)
    assert packing.footprint == 144
    assert packing.offsets[0] == packing.offsets[1]


def test_a_view_lies_inside_its_parent_and_takes_no_space():
    items = [
        Item("S", 128, live=frozenset({"mma"})),
        Item("P", 64, live=frozenset({"epilogue"}), alias_of="S", offset=64),
        Item("O", 128, live=frozenset({"epilogue"})),
    ]
    packing = pack(items, PHASES)
    s, p, o = packing.offsets
    assert p == s + 64
    assert o >= s + 128 or o + 128 <= s
    assert packing.footprint == 256  # S inherits P's epilogue phase, so O cannot go over S


def test_fixed_offsets_stay_and_others_avoid_them():
    items = [Item("pinned", 100, live=frozenset({"mma"}), offset=0), Item("x", 50, live=None)]
    assert pack(items, PHASES).offsets == (0, 100)


def test_conflicts_name_both_buffers_the_shared_phases_and_the_range():
    items = [
        Item("Q", 100, live=frozenset({"load", "mma"})),
        Item("O", 60, live=frozenset({"mma", "epilogue"})),
    ]
    (found,) = conflicts(items, [0, 40], PHASES)
    assert (found.first, found.second, found.phases, found.start, found.end) == (
        "Q",
        "O",
        ("mma",),
        40,
        100,
    )


def test_a_view_is_exempt_from_its_parent_only():
    items = [
        Item("S", 128, live=frozenset({"mma"})),
        Item("P", 64, live=frozenset({"mma"}), alias_of="S", offset=64),
        Item("P2", 32, live=frozenset({"mma"}), alias_of="S", offset=96),
    ]
    (found,) = conflicts(items, [0, 64, 96], PHASES)
    assert (found.first, found.second, found.start, found.end) == ("P", "P2", 96, 128)


def test_disjoint_lifetimes_overlay_without_conflict():
    items = [Item("Q", 100, live=frozenset({"load"})), Item("O", 100, live=frozenset({"epilogue"}))]
    assert conflicts(items, [0, 0], PHASES) == []


def test_lower_bound_is_the_busiest_phase():
    items = [
        Item("a", 10, live=frozenset({"load"})),
        Item("b", 30, live=frozenset({"mma"})),
        Item("c", 5),
    ]
    assert lower_bound(items, PHASES) == 35


@pytest.mark.parametrize(
    "item, message",
    [
        (Item("v", 10, alias_of="nope"), "alias_of names no item"),
        (Item("v", 100, alias_of="a", offset=10), "does not fit inside"),
        (Item("v", 4, live=frozenset({"bogus"})), "unknown phases"),
        (Item("v", 4, align=3), "power of two"),
    ],
)
def test_bad_items_are_refused(item, message):
    with pytest.raises(AllocationError, match=message):
        pack([Item("a", 64), item], PHASES)
