"""The memo of searched states (module docstring of ``tilemem.plan.lifetimes``, *dominated*):
a state is cut when one with the same items waiting, each slot no higher and the highest end
so far no higher, was searched already. Checked against the brute force of
``test_lifetimes.py`` (which uses no lemma), against the search without any memo (the same
placements), and on the two hardest instances of ``benchmarks/planning.py``, whose optima
are known independently (``test_packer_from_the_top.py``).
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lifetimes import PHASES, brute_force_minimum, clashes, instances  # tests/plan
from test_packer_from_the_top import HARD_302, HARD_591, hard, kernel_like

from tilemem.plan import lifetimes
from tilemem.plan.lifetimes import Item, _Instance, _Search, pack


def no_memo(self, unplaced, key):
    return False  # every state searched: the search without the memo


def searched_from_bump(items) -> list[int]:
    """The search run from the worst start, every free item stacked in order above the fixed
    ones (no first-fit order to find the optimum for it): the offsets it returns."""
    inst = _Instance(items, PHASES)
    search = _Search(inst, 10**7, inst.cell_classes())
    start, top = dict(search.fixed), search.fixed_end
    for r in search.free:
        start[r] = -(-top // items[r].align) * items[r].align
        top = start[r] + items[r].length
    best = search.run(start, search.clique_bound())
    assert search.complete
    return [best[r] for r in range(len(items))]


def check_minimum(items) -> None:
    offsets = searched_from_bump(items)
    assert clashes(items, offsets) == []
    assert all(x % it.align == 0 for x, it in zip(offsets, items))
    assert all(x == it.offset for x, it in zip(offsets, items) if it.offset is not None)
    assert max(x + it.length for x, it in zip(offsets, items)) == brute_force_minimum(items)


@given(instances(max_items=5, max_units=9))
@settings(max_examples=300, deadline=None)
def test_with_the_memo_the_search_reaches_the_brute_force_minimum(items):
    check_minimum(items)


@given(instances(max_items=5, max_units=9))
@settings(max_examples=60, deadline=None)
def test_the_memo_alone_never_cuts_an_optimum(items):
    # no proofs from the top: the searches from the bottom and their memos alone decide
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 1 << 62)
        check_minimum(items)


LANE_GROUPS = (None, frozenset(range(64)), frozenset(range(64, 128)))


@given(instances(max_items=5, max_units=9), st.lists(st.sampled_from(LANE_GROUPS), min_size=5))
@settings(max_examples=40, deadline=None)
def test_with_lanes_and_fixed_items_the_memo_keeps_the_minimum(items, lanes):
    # lanes split the classes of cells; a fixed item gives the slots obstacles to clear
    items = [Item(it.name, it.length, it.align, it.live, lane) for it, lane in zip(items, lanes)]
    if len(items) > 1:
        first = items[0]
        items[0] = Item(first.name, first.length, first.align, first.live, first.lanes, 16)
    check_minimum(items)


@pytest.mark.parametrize("seed", range(4))
def test_the_memo_never_changes_the_placement(seed, monkeypatch):
    # a memo only cuts states whose completions an earlier state matches item for item no
    # higher, so the incumbents found, and the placement returned, are those of the search
    # without it
    rng = random.Random(9300 + seed)
    cases = [kernel_like(rng, rng.randint(12, 16)) for _ in range(60)]
    with_memo = [pack(items, phases, node_limit=10**6, seconds=None) for items, phases in cases]
    with monkeypatch.context() as patch:
        patch.setattr(lifetimes._Search, "_dominated", no_memo)
        without = [pack(items, phases, node_limit=10**6, seconds=None) for items, phases in cases]
    searched = 0
    for a, b in zip(with_memo, without):
        assert a.exact and b.exact
        assert a.offsets == b.offsets and a.footprint == b.footprint
        assert a.nodes <= b.nodes
        searched += a.nodes > 0
    assert searched  # the cases do reach the search


def test_302_is_proven_at_243_472_bytes_without_a_time_limit():
    # the optimum, 112 bytes above the heaviest phase: a placement of 243,472 bytes is
    # checked by hand in test_packer_from_the_top.py, and the round-4 search exhausted
    # everything below it in 575,627 nodes; round 5 took 294,631 nodes (docs/PERFORMANCE.md)
    items, phases = hard(HARD_302, 8)
    packing = pack(items, phases, node_limit=10**6, seconds=None)
    assert packing.exact and packing.footprint == 243_472
    assert clashes(items, packing.offsets) == []
    assert all(x % it.align == 0 for x, it in zip(packing.offsets, items))
    assert packing.nodes < 294_631


def test_591_needs_fewer_nodes_than_with_the_heights_of_every_class():
    # round 5, whose memo compared the heights of every class, proved 239,008 bytes in
    # 246,551 nodes (docs/PERFORMANCE.md)
    items, phases = hard(HARD_591, 6)
    packing = pack(items, phases, node_limit=10**6, seconds=None)
    assert packing.exact and packing.footprint == 239_008
    assert packing.nodes < 246_551
