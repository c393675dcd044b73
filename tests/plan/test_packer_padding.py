"""The padding bound of the lifetime packer (module docstring of ``tilemem.plan.lifetimes``,
*padding*): never above the least end of a clique's items stacked by hand, never cutting
an optimal placement (the brute force of ``test_lifetimes.py``), and never changing the
placement the packer returns.
"""

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packer_instances import kernel_like  # tests/plan
from test_lifetimes import PHASES, brute_force_minimum, clashes, instances  # tests/plan

from tilemem.plan import lifetimes
from tilemem.plan.lifetimes import Item, _Instance, _Search, pack


def clique_search(items: list[Item]) -> _Search:
    """The search's working form of items that all conflict (one phase), ready to bound."""
    inst = _Instance(items, ("x",))
    search = _Search(inst, 10**9, inst.cell_classes())
    search.clique_bound()
    search._prepare()
    return search


def stacked_by_hand(items: list[Item], start: int) -> int:
    """The least end of the items one above another from ``start``, over every order, each
    at the lowest multiple of its alignment at or above the end of the one before."""
    best = None
    for order in itertools.permutations(items):
        top = start
        for it in order:
            top = -(-top // it.align) * it.align + it.length
        best = top if best is None else min(best, top)
    assert best is not None
    return best


sizes_and_aligns = st.lists(
    st.tuples(st.integers(1, 40), st.sampled_from([1, 2, 4, 8, 16])), min_size=1, max_size=6
)


@given(sizes_and_aligns, st.integers(0, 40))
@settings(max_examples=200, deadline=None)
def test_the_padded_bound_never_exceeds_the_best_stacking_by_hand(rows, start):
    # items of sizes often multiples of their alignment (so that some are coarse)
    items = [
        Item(f"b{n}", size * (align if n % 2 else 1), align, frozenset("x"))
        for n, (size, align) in enumerate(rows)
    ]
    search = clique_search(items)
    assert len(search.cliques) == 1
    # every item waiting, each with a slot at or above start (its own alignment)
    slot = {r: -(-start // it.align) * it.align for r, it in enumerate(items)}
    low = min(slot.values())
    total = sum(it.length for it in items)
    # asked to reach one past the bound without padding, so that every modulus is tried
    bound = search._padded(0, slot, low, total, low + total + 1)
    assert low + total <= bound <= stacked_by_hand(items, start)


def test_a_tile_above_an_odd_array_is_padded_to_its_alignment():
    # A (8 bytes, align 8) and B (3 bytes) from 1: B at 1 ends at 4, A then at 8: 16; A
    # first at 8, B at 16: 19. The bound: residues from 1 are {1, 1 + 3 = 4}; the nearest
    # to a multiple of 8 is 4, so 4 bytes of padding: 1 + 11 + 4 = 16, the true least end
    items = [Item("A", 8, 8, frozenset("x")), Item("B", 3, 1, frozenset("x"))]
    search = clique_search(items)
    assert search._padded(0, {0: 8, 1: 1}, 1, 11, 13) == 16 == stacked_by_hand(items, 1)
    # a modulus whose largest padding (7) cannot reach what is asked is not tried
    assert search._padded(0, {0: 8, 1: 1}, 1, 11, 20) == 12


def test_no_coarse_item_no_padding():
    # sizes 3 and 5 with alignment 4: neither a multiple of 4, so nothing is coarse
    items = [Item("A", 3, 4, frozenset("x")), Item("B", 5, 4, frozenset("x"))]
    search = clique_search(items)
    assert search._padded(0, {0: 4, 1: 4}, 1, 8, 10) == 9


@given(instances(max_items=5, max_units=9))
@settings(max_examples=80, deadline=None)
def test_without_the_padding_bound_the_same_placement(items):
    with_bound = pack(items, PHASES, seconds=None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lifetimes, "PADDED_CLIQUES", 0)
        without = pack(items, PHASES, seconds=None)
    assert with_bound.offsets == without.offsets and with_bound.exact == without.exact
    assert with_bound.nodes <= without.nodes
    assert with_bound.footprint == brute_force_minimum(items)
    assert clashes(items, with_bound.offsets) == []


def test_the_padding_bound_and_the_proofs_from_the_top_keep_the_placements(monkeypatch):
    # the search as it was before both (no padding bound, no proof from the top) against
    # the search as it is, on 300 instances of 10-18 items (28 of them searched, one for
    # 25,543 nodes before): the same offsets, footprint and verdict, never more nodes
    rng = random.Random(9300)
    cases = [kernel_like(rng, rng.randint(10, 18), (4, 6, 8)) for _ in range(300)]
    with monkeypatch.context() as patch:
        patch.setattr(lifetimes, "PADDED_CLIQUES", 0)
        patch.setattr(lifetimes, "TOP_AFTER", 1 << 62)
        before = [pack(items, phases, seconds=None) for items, phases in cases]
    now = [pack(items, phases, seconds=None) for items, phases in cases]
    for a, b in zip(before, now):
        assert (a.offsets, a.footprint, a.exact) == (b.offsets, b.footprint, b.exact)
        assert b.nodes <= a.nodes
    assert sum(b.nodes for b in now) < sum(a.nodes for a in before) // 2  # the rules act
