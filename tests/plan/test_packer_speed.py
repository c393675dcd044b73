"""The packer's fast set-up against plain reference versions written here, and generous
guards on inputs that used to take seconds (not timings: the bounds are 10x or more).

References: classes of cells built phase by phase (one class per phase and lane group,
as the definition reads), the alias check by testing every pair, and first fit by
testing every placed item at every candidate offset.
"""

import random
import time

import pytest

from tilemem.errors import AllocationError
from tilemem.plan.lifetimes import (
    ALL_LANES,
    CHECK_EVERY,
    Item,
    _Instance,
    _Search,
    conflicts,
    pack,
    pack_checked,
)


def random_items(rng: random.Random, count: int, lanes: bool = False):
    phases = tuple(f"p{i}" for i in range(rng.randint(1, 6)))
    items = []
    for n in range(count):
        chosen = rng.sample(phases, rng.randint(0, min(2, len(phases))))
        live = None if rng.random() < 0.2 else frozenset(chosen)
        lane_set = None
        if lanes and rng.random() < 0.7:
            lo = rng.choice((0, 32, 64, 96))
            lane_set = frozenset(range(lo, lo + rng.choice((32, 64))))
        size = rng.choice((0, 8, 100, 1024, 4096, rng.randint(1, 3000)))
        offset = rng.randrange(0, 8192) // 8 * 8 if rng.random() < 0.1 else None
        items.append(Item(f"b{n}", size, rng.choice((1, 8, 128, 1024)) if offset is None else 8,
                          live, lane_set, offset))  # fmt: skip
    return items, phases


def classes_phase_by_phase(items, phases) -> set[frozenset[str]]:
    """One class per phase and lane: the items live in that phase touching the lane. An item
    without lanes touches every lane, also those no lane set names (lane 128 here)."""
    groups = list(range(129)) if any(it.lanes for it in items) else [None]
    found = set()
    for phase in phases or ("(all)",):
        for lane in groups:
            members = frozenset(
                it.name
                for it in items
                if (it.live is None or phase in it.live)
                and (lane is None or it.lanes is None or lane in it.lanes)
            )
            if members:
                found.add(members)
    return found


@pytest.mark.parametrize("seed", range(40))
def test_classes_of_cells_are_the_distinct_phase_by_phase_classes(seed):
    rng = random.Random(seed)
    items, phases = random_items(rng, rng.randint(1, 10), lanes=seed % 2 == 1)
    inst = _Instance(items, phases)
    got = [frozenset(items[r].name for r in c) for c in inst.cell_classes()]
    assert len(got) == len(set(got))  # each member set once
    assert set(got) == classes_phase_by_phase(items, phases)


def clashes_pair_by_pair(items, offsets, phases) -> list[tuple[str, str, tuple[str, ...]]]:
    found = []
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            x, y = items[a], items[b]
            shared = [p for p in phases if (x.live is None or p in x.live)
                      and (y.live is None or p in y.live)]  # fmt: skip
            lanes_meet = x.lanes is None or y.lanes is None or bool(x.lanes & y.lanes)
            start = max(offsets[a], offsets[b])
            end = min(offsets[a] + x.length, offsets[b] + y.length)
            if shared and lanes_meet and start < end:
                found.append((x.name, y.name, tuple(shared)))
    return found


@pytest.mark.parametrize("seed", range(40))
def test_the_alias_check_finds_exactly_the_pairs_that_share_bytes_and_a_phase(seed):
    rng = random.Random(seed)
    items, phases = random_items(rng, rng.randint(1, 12), lanes=seed % 2 == 1)
    offsets = [rng.randrange(0, 6000) for _ in items]
    got = [(o.first, o.second, o.phases) for o in conflicts(items, offsets, phases)]
    assert got == clashes_pair_by_pair(items, offsets, phases)


def first_fit_by_hand(items, order, phases) -> dict[str, int]:
    """Each item at the lowest multiple of its alignment overlapping no placed item it
    shares a phase (and a lane) with; fixed and empty items first, where they are."""
    placed = {it.name: it.offset or 0 for it in items if it.offset is not None or not it.length}
    by_name = {it.name: it for it in items}

    def live_in(it):  # an item without live= is live in every phase (or the only one)
        return set(phases or ("(all)",)) if it.live is None else set(it.live)

    def meet(x, y):
        lanes = x.lanes is None or y.lanes is None or bool(x.lanes & y.lanes)
        return bool(live_in(x) & live_in(y)) and lanes

    for name in order:
        it, x = by_name[name], 0
        # an empty fixed item still blocks the positions strictly inside the candidate
        while any(
            meet(it, by_name[other])
            and ((x < at + by_name[other].length and at < x + it.length) or x < at < x + it.length)
            for other, at in placed.items()
        ):
            x += it.align
        placed[name] = x
    return placed


@pytest.mark.parametrize("seed", range(40))
def test_first_fit_is_the_lowest_clear_position_in_order(seed):
    rng = random.Random(seed)
    items, phases = random_items(rng, rng.randint(1, 9))
    inst = _Instance(items, phases)
    search = _Search(inst, 10, inst.cell_classes())
    offsets = search.first_fit(search.free)
    want = first_fit_by_hand(items, [items[r].name for r in search.free], phases)
    assert {items[r].name: x for r, x in offsets.items()} == want


def test_identical_classes_are_kept_once_however_many_phases():
    # 12 buffers, each live from phase 4000 i on: the phases fall into 12 runs that no
    # buffer cuts, so there are 12 classes (not 50,000), and packing is far under 10 s
    phases = tuple(f"p{i}" for i in range(50_000))
    items = [Item(f"b{i}", 1024, 1024, frozenset(phases[i * 4000 :])) for i in range(12)]
    assert len(_Instance(items, phases).cell_classes()) == 12
    start = time.process_time()
    packing = pack(items, phases)
    assert time.process_time() - start < 10
    # run k holds buffers 0..k: the last run holds all 12, one above another
    assert packing.footprint == packing.lower_bound == 12 * 1024 and packing.exact


def test_many_maximal_cliques_are_cut_off_and_the_placement_stays_valid():
    # 3 x 8 buffers; two conflict unless they share a triple: 3^8 = 6,561 maximal cliques
    triples = 8
    buffers = [(t, k) for t in range(triples) for k in range(3)]
    live: dict[tuple[int, int], set[str]] = {b: set() for b in buffers}
    count = 0
    for i, a in enumerate(buffers):
        for b in buffers[i + 1 :]:
            if a[0] != b[0]:
                live[a].add(f"x{count}"), live[b].add(f"x{count}")
                count += 1
    phases = tuple(f"x{i}" for i in range(count))
    items = [Item(f"t{t}_{k}", 1024 * (k + 1), 1024, frozenset(live[t, k])) for t, k in buffers]
    inst = _Instance(items, phases)
    search = _Search(inst, 50_000, inst.cell_classes())
    search.find_cliques()
    assert search.cliques is not None and len(search.cliques) < 3**triples  # cut off
    start = time.process_time()
    packing = pack(items, phases)
    assert time.process_time() - start < 20
    assert clashes_pair_by_pair(items, packing.offsets, phases) == []
    # the heaviest clique takes the largest buffer of every triple: 8 x 3072
    assert packing.footprint >= 8 * 3072


def test_all_lanes_mask_is_every_lane():
    assert ALL_LANES & (1 << 127) and ALL_LANES & 1


def test_a_search_out_of_time_returns_its_best_placement_unproven():
    # a ladder of 16 needs 1 + 16 * 2^15 - 16 = 524,273 nodes (test_lifetimes_packer_pinned):
    # with 20 ms of CPU time it stops long before its 50,000-node budget, checking the clock
    # every CHECK_EVERY nodes; every placement of a ladder takes the sizes plus one odd
    # byte between neighbours. The count is not a multiple of CHECK_EVERY when a proof
    # from the top ran first: its nodes count against the budget too (lifetimes.py)
    items = [Item(f"o{2 * i + 1}", 2 * i + 1, 2) for i in range(16)]
    start = time.thread_time()
    packing = pack(items, seconds=0.02)
    assert time.thread_time() - start < 2  # 100x the limit: set-up and one check interval
    assert not packing.exact
    assert CHECK_EVERY <= packing.nodes < 50_000
    assert packing.footprint == 16 * 16 + 15  # sizes 1, 3, ..., 31 sum to 256
    assert clashes_pair_by_pair(items, packing.offsets, ()) == []


def test_without_a_time_limit_the_node_budget_alone_stops_the_search():
    items = [Item(f"o{2 * i + 1}", 2 * i + 1, 2) for i in range(16)]
    assert pack(items, seconds=None, node_limit=300).nodes == 301


@pytest.mark.parametrize("seconds", [0, -1.5, True, "1", float("nan")])
def test_a_time_limit_that_is_no_positive_number_is_refused(seconds):
    with pytest.raises(AllocationError, match="seconds must be a number > 0 or None"):
        pack([Item("a", 8)], seconds=seconds)


@pytest.mark.parametrize("seed", range(30))
def test_pack_checked_is_pack_and_the_alias_check_of_its_offsets(seed):
    # pack_checked skips the alias check when nothing is placed by hand; the reference
    # checks every pair of the packed offsets (clashes_pair_by_pair) and finds nothing then
    rng = random.Random(seed)
    items, phases = random_items(rng, rng.randint(1, 10), lanes=seed % 2 == 1)
    if seed % 3 == 0:  # no fixed offsets: nothing placed by hand
        items = [Item(it.name, it.length, it.align, it.live, it.lanes) for it in items]
    packing, found = pack_checked(items, phases)
    assert packing == pack(items, phases)
    assert found == conflicts(items, packing.offsets, phases)
    if all(it.offset is None for it in items):
        assert clashes_pair_by_pair(items, packing.offsets, phases) == []


@pytest.mark.parametrize("seed", range(30))
def test_first_fit_by_kind_is_the_lowest_clear_position_in_order(seed):
    # few kinds (two or three live sets, some on lane halves) and many items: first fit
    # keeps each kind's positions as runs; the reference tries every aligned offset
    rng = random.Random(seed)
    phases = ("a", "b", "c")
    kinds = [(frozenset("ab"), None), (frozenset("bc"), frozenset(range(64))),
             (frozenset("c"), None)][: rng.randint(2, 3)]  # fmt: skip
    items = []
    for n in range(rng.randint(9, 16)):
        live, lanes = rng.choice(kinds)
        align = rng.choice((8, 16, 128, 1024))
        items.append(Item(f"b{n}", rng.choice((8, 100, 1024, rng.randint(1, 1500))), align,
                          live, lanes))  # fmt: skip
    inst = _Instance(items, phases)
    search = _Search(inst, 10, inst.cell_classes())
    order = sorted(search.free, key=lambda r: rng.random())
    assert len(search.kind_table[1]) ** 2 <= len(order)  # the path by kind is the one taken
    offsets = search.first_fit(order)
    want = first_fit_by_hand(items, [items[r].name for r in order], phases)
    assert {items[r].name: x for r, x in offsets.items()} == want
