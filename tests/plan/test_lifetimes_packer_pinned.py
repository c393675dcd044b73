"""The lifetime packer pinned on instances small enough to solve by hand: the refused
inputs, the lower bound with lanes and without phases, which optimal placement is returned
(the incumbent's order), and the search effort ``Packing.nodes`` reports.

How the nodes are counted (module docstring of ``tilemem.plan.lifetimes``): every visit of a
search state is one node, the root included; a state is expanded unless it is dominated or
its bound reaches the incumbent, and an expanded state visits one child per waiting item
(an item waits for an identical item of lower index). No search runs (0 nodes) when the
incumbent already meets the clique bound. A search that finds ``node_limit`` spent stops at
the node that found it: ``nodes == node_limit + 1``.

*Odd ladders.* Items of distinct odd sizes, alignment 2, all live together: each item ends
on an odd byte, so the next one starts one byte higher, and after placing any set S of them
the top is sum(size + 1 for S) - 1 whatever their order. The clique bound is the sum of the
sizes, every placement costs (n - 1) bytes of padding above it, so the search cannot stop
early. A state with k of n items placed has the bound sum(sizes) + k (the waiting items start
at sum(size + 1 for S) and lie one above another), which reaches the incumbent
sum(sizes) + n - 1 exactly when k = n - 1. The states with k <= n - 2 are each expanded
once (a second visit is dominated: same items left, same heights), so the visits are
1 + sum_{k <= n - 2} C(n, k) (n - k) = 1 + n 2^(n - 1) - n.
"""

import pytest

from tilemem.errors import AllocationError
from tilemem.plan.lifetimes import Item, conflicts, lower_bound, pack


def odd_ladder(n: int, live=None) -> list[Item]:
    """n items of sizes 1, 3, 5, ... (2n - 1), alignment 2."""
    return [Item(f"o{2 * i + 1}", 2 * i + 1, 2, live) for i in range(n)]


# -- refused items ---------------------------------------------------------------------


def test_two_items_with_one_name_are_refused():
    with pytest.raises(AllocationError, match="item names must be unique"):
        pack([Item("a", 8), Item("a", 16)])


@pytest.mark.parametrize("length", [-1, True, 2.5])
def test_a_length_that_is_no_integer_at_least_zero_is_refused(length):
    with pytest.raises(AllocationError, match=f"a: length must be an integer >= 0, got {length}"):
        pack([Item("a", length)])


def test_a_zero_length_item_is_accepted_and_takes_no_space():
    packing = pack([Item("empty", 0), Item("a", 8)])
    assert packing.offsets == (0, 0)  # the empty item stays at 0 and blocks nothing
    assert packing.footprint == 8


def test_a_fixed_offset_off_its_alignment_is_refused():
    with pytest.raises(AllocationError, match="a: offset 2 is not a multiple of its alignment 4"):
        pack([Item("a", 8, align=4, offset=2)])


def test_a_view_is_measured_from_its_offset_inside_the_parent():
    # 8 + 60 = 68 > 64: the view sticks out of its parent by 4 bytes
    with pytest.raises(AllocationError, match=r"view v at \[8, 68\) does not fit inside p's 64"):
        pack([Item("p", 64), Item("v", 60, alias_of="p", offset=8)])


def test_a_view_without_offset_starts_at_its_parent_and_may_fill_it():
    packing = pack([Item("p", 64), Item("v", 64, alias_of="p")])
    assert packing.offsets == (0, 0)
    assert packing.footprint == 64


def test_an_alias_cycle_reached_through_a_chain_is_refused():
    # c -> a -> b -> a: the walk from c enters the cycle a <-> b; it is found at b
    items = [Item("c", 64, alias_of="a"), Item("a", 64, alias_of="b"), Item("b", 64, alias_of="a")]
    with pytest.raises(AllocationError, match="b: alias_of forms a cycle"):
        pack(items)


def test_a_view_of_a_view_is_aligned_at_its_offset_from_the_root():
    # v1 sits 2 bytes into r (align 2: fine); v2 sits 4 bytes into v1 (align 4: fine on
    # its own), but 2 + 4 = 6 bytes into r, and 6 is not a multiple of 4
    items = [
        Item("r", 64),
        Item("v1", 32, align=2, alias_of="r", offset=2),
        Item("v2", 8, align=4, alias_of="v1", offset=4),
    ]
    with pytest.raises(AllocationError, match="view v2 at offset 6 inside r is not a multiple of"):
        pack(items)


def test_a_fixed_root_must_honour_the_alignment_of_its_views():
    items = [Item("r", 64, offset=8), Item("v", 16, align=16, alias_of="r")]
    with pytest.raises(AllocationError, match="r: offset 8 is not a multiple of 16"):
        pack(items)


# -- defaults, views and lanes -----------------------------------------------------------


def test_without_phases_every_item_is_live_throughout_and_unaligned_by_default():
    # align defaults to 1, so b starts right after a; no phases means one phase for all
    packing = pack([Item("a", 3), Item("b", 5)])
    assert packing.offsets == (0, 3)
    assert packing.footprint == 8 == packing.lower_bound


def test_a_root_takes_the_alignment_of_its_view():
    # r (32 bytes, align 1) carries a view v that needs 16: r itself must start on 16.
    # First fit in allocation order puts a at 0 and r at 16 (48 bytes); by decreasing
    # size r goes first, at 0, and a follows at 32: 33 bytes, the minimum (a + r).
    items = [Item("a", 1), Item("r", 32), Item("v", 16, align=16, alias_of="r")]
    packing = pack(items)
    assert packing.offsets == (32, 0, 0)
    assert packing.footprint == 33


def test_a_root_takes_the_lanes_of_its_view():
    # r covers TMEM lanes 0-63, its view v lanes 64-127 (both live in mma); x on lanes
    # 64-127 therefore conflicts with r's columns, and goes above them: 128 + 128
    upper, lower = frozenset(range(64)), frozenset(range(64, 128))
    mma = frozenset({"mma"})
    items = [
        Item("r", 128, live=mma, lanes=upper),
        Item("v", 64, live=mma, lanes=lower, alias_of="r"),
        Item("x", 128, live=mma, lanes=lower),
    ]
    assert pack(items, ("mma",)).footprint == 256


def test_an_item_without_lanes_conflicts_on_every_lane_even_lane_0():
    items = [Item("lane0", 4, lanes=frozenset({0})), Item("all", 4)]
    assert pack(items).offsets == (0, 4)
    (found,) = conflicts(items, [0, 0])
    assert (found.start, found.end, found.lanes) == (0, 4, (0, 0))


def test_an_overlap_names_its_lowest_and_highest_shared_lane():
    items = [Item("a", 4, lanes=frozenset({2, 3})), Item("b", 4, lanes=frozenset({2, 3, 4}))]
    (found,) = conflicts(items, [0, 0])
    assert found.lanes == (2, 3)  # lanes 2 and 3 are shared, lane 4 only b's


def test_an_item_fits_exactly_below_a_fixed_one():
    # F holds [10, 20); x (10 bytes) fits in [0, 10), touching F without sharing a byte
    packing = pack([Item("F", 10, offset=10), Item("x", 10)])
    assert packing.offsets == (10, 0)
    assert packing.footprint == 20


# -- the lower bound -----------------------------------------------------------------------


def test_nothing_to_place_has_footprint_bound_and_bump_zero():
    packing = pack([])
    assert (packing.footprint, packing.lower_bound, packing.bump, packing.first_fit) == (0, 0, 0, 0)
    assert packing.exact and packing.nodes == 0
    assert lower_bound([]) == 0


def test_lower_bound_without_phases_is_the_total_size():
    assert lower_bound([Item("a", 10), Item("b", 20)]) == 30


def test_lower_bound_counts_disjoint_lane_groups_apart():
    upper, lower = frozenset(range(64)), frozenset(range(64, 128))
    items = [Item("acc0", 128, lanes=upper), Item("acc1", 128, lanes=lower), Item("sf", 16)]
    # each lane holds one accumulator and sf: 128 + 16, not 128 + 128 + 16
    assert lower_bound(items) == 144


def test_lower_bound_keeps_a_group_of_lane_0_alone():
    # lane 0 holds a (10 columns), lane 1 holds b (5): the busiest lane has 10
    items = [Item("a", 10, lanes=frozenset({0})), Item("b", 5, lanes=frozenset({1}))]
    assert lower_bound(items) == 10


# -- which placement is returned: the incumbent ------------------------------------------
# The incumbent is the first of: first fit in allocation order, by decreasing size (then
# alignment), by decreasing alignment (then size), by more phases (then alignment, size),
# by earliest first phase (then alignment, size) whose footprint is smallest. When it
# meets the clique bound no search runs.


def test_no_search_runs_when_first_fit_meets_the_heaviest_clique():
    # a and b are never live together: two cliques of 10 and 20 bytes. First fit puts
    # both at 0: 20 bytes, the heavier clique, so it is proven without a node.
    items = [Item("a", 10, live=frozenset({"x"})), Item("b", 20, live=frozenset({"y"}))]
    packing = pack(items, ("x", "y"))
    assert packing.offsets == (0, 0)
    assert packing.exact and packing.nodes == 0


def test_by_size_order_puts_the_larger_alignment_first_among_equal_sizes():
    # a (1), b (1, align 2), c (2), all live together; bound 1 + 1 + 2 = 4.
    #   allocation order: a [0,1), b [2,3), c [3,5): 5
    #   by size: c [0,2), then b before a (same size, larger alignment): b [2,3), a [3,4): 4
    items = [Item("a", 1), Item("b", 1, align=2), Item("c", 2)]
    packing = pack(items)
    assert packing.offsets == (3, 2, 0)
    assert packing.nodes == 0


def test_by_alignment_order_puts_the_larger_alignment_first():
    # a (2 bytes, phases x y), b (1 byte, align 4, phase y): bound 3.
    #   allocation, by size, by more phases, by first phase (x before y) all start with
    #   a: a [0,2), b [4,5): 5. By alignment b goes first: b [0,1), a [1,3): 3.
    items = [Item("a", 2, live=frozenset({"x", "y"})), Item("b", 1, align=4, live=frozenset("y"))]
    packing = pack(items, ("x", "y"))
    assert packing.offsets == (1, 0)
    assert packing.nodes == 0


def test_by_phase_count_order_puts_the_item_of_more_phases_first():
    # a (3, align 2, phases x z), b (2, align 2, phases x y z): bound 5.
    #   allocation, by size, by alignment (tie, then size), by first phase (tie: both x,
    #   then alignment, then size) all put a first: a [0,3), b [4,6): 6.
    #   By more phases b goes first: b [0,2), a [2,5): 5.
    items = [
        Item("a", 3, align=2, live=frozenset({"x", "z"})),
        Item("b", 2, align=2, live=frozenset({"x", "y", "z"})),
    ]
    packing = pack(items, ("x", "y", "z"))
    assert packing.offsets == (2, 0)
    assert packing.nodes == 0


def test_two_items_of_one_alignment_need_the_search_to_put_the_smaller_first():
    # a (3, align 2), b (2, align 2): every first-fit order puts a first (larger size, or
    # the same phases): a [0,3), b [4,6): 6. The bound is 5 = b [0,2), a [2,5).
    # Search (children by slot, then larger alignment, then larger size):
    #   1 root: both slots 0, bound 0 + 3 + 2 = 5 < 6
    #   2   a at 0: b's slot 4, bound 6: pruned
    #   3   b at 0: a's slot 2, bound 5 < 6
    #   4     a at 2: done, 5 < 6, and 5 meets the clique bound: stop
    for live in (None, frozenset({"x", "y", "z"})):
        items = [Item("a", 3, align=2, live=live), Item("b", 2, align=2, live=frozenset("xy"))]
        packing = pack(items, ("x", "y", "z"))
        assert packing.offsets == (2, 0)
        assert packing.nodes == 4 and packing.exact


def test_the_search_tries_the_larger_alignment_first_on_a_shared_slot():
    # a (5, align 4), b (4, align 2): every first-fit order puts a first (larger size,
    # larger alignment): a [0,5), b [6,10): 10. The bound is 9 = b [0,4), a [4,9).
    #   1 root: both slots 0, bound 9 < 10; a before b (larger alignment)
    #   2   a at 0: b's slot 6, bound 10: pruned
    #   3   b at 0: a's slot 4, bound 9
    #   4     a at 4: done, 9 meets the bound
    packing = pack([Item("a", 5, align=4), Item("b", 4, align=2)])
    assert packing.offsets == (4, 0)
    assert packing.nodes == 4 and packing.exact


def test_the_search_stops_at_the_first_placement_meeting_the_clique_bound():
    # a (3), b (1, align 2), c (1, align 2), all live in phase x; bound 5.
    #   allocation, by size: a [0,3), b [4,5), c [6,7): 7
    #   by alignment, phases, first phase: b [0,1), c [2,3), a [3,6): 6  <- incumbent
    # Search; e is live in no phase, conflicts with nothing and covers no cell.
    #   1 root: slots 0; order b, c (align 2), a, e (align 1, larger size first)
    #   2   b at 0: slots e 0, a 1, c 2; bound a + c from 1 = 5 < 6
    #   3     e at 0
    #   4       a at 1: c's slot 4, bound 5
    #   5         c at 4: done, 5 < 6 and 5 meets the bound: stop (b's sibling c untried)
    items = [
        Item("a", 3, live=frozenset("x")),
        Item("b", 1, align=2, live=frozenset("xz")),
        Item("c", 1, align=2, live=frozenset("xy")),
        Item("e", 1, live=frozenset()),
    ]
    packing = pack(items, ("x", "y", "z"))
    assert packing.offsets == (1, 0, 4, 0)
    assert packing.nodes == 5 and packing.exact


def test_an_item_apart_from_a_clique_is_not_counted_in_its_bound():
    # z (2, phase y) conflicts with nobody; a (3, align 2) and b (2, align 2) share x.
    # Cliques {z}: 2 and {a, b}: 5, so the bound is 5. Every first-fit order puts z at 0
    # and a before b (size, or ties broken by size): a [0,3), b [4,6): 6.
    # Search, heights (x, y):
    #   1 root: slots 0; bound 5 < 6; order a, b (align 2, larger first), z
    #   2   a at 0: b's slot 4, bound 6: pruned
    #   3   b at 0: a's slot 2, bound 5; order z (slot 0), a
    #   4     z at 0: a's slot 2
    #   5       a at 2: done, 5 meets the bound
    # Counting z with a and b would give a bound of 7 and keep the 6.
    items = [
        Item("z", 2, live=frozenset("y")),
        Item("a", 3, align=2, live=frozenset("x")),
        Item("b", 2, align=2, live=frozenset("x")),
    ]
    packing = pack(items, ("x", "y"))
    assert packing.offsets == (0, 2, 0)
    assert packing.footprint == 5 and packing.nodes == 5 and packing.exact


def test_a_later_placement_of_the_same_footprint_does_not_replace_the_first():
    # a (1, phase x) conflicts with nobody else; b (6, align 4) and c (3, align 4) share
    # y. Cliques {a}: 1, {b, c}: 9. b first puts c at 8 (11); c first puts b at 4 (10):
    # the minimum is 10. Every first-fit order puts b before c: incumbent (0, 0, 8), 11.
    # Tight first (as if the incumbent were 10, the bound + 1), heights (x, y):
    #   1 root: slots 0, bound 9; order b, c (align 4, larger first), a
    #   2   b at 0: c's slot 8, bound 11: pruned
    #   3   c at 0 -> (0,3): b's slot 4, bound 10: pruned
    #   4   a at 0 -> (1,0): 5 b at 0: bound 11, 6 c at 0: bound 10: both pruned
    # nothing meets 9, so the ordinary search from the incumbent (11) follows:
    #   1 root: slots 0, bound 9; order b, c (align 4, larger first), a
    #   2   b at 0: c's slot 8, bound 11: pruned
    #   3   c at 0 -> (0,3): a's slot 0, b's 4; bound 10; only a: b at 4 would leave a's
    #       range [0, 1) free below it, and a before b does at least as well (exchange)
    #   4     a at 0 -> (1,3): b's slot 4
    #   5       b at 4: done, 10 < 11: the new best (a 0, b 4, c 0); 10 > 9, go on
    #   6   a at 0 -> (1,0): both slots 0, bound 9; 7 b at 0: pruned; 8 c at 0 -> (1,3):
    #       b alone at heights (1,3), as in node 4: dominated
    # 6 + 8 = 14 nodes (before the exchange rule, b at 4 under node 3 of the ordinary
    # search was tried too: 10 nodes in that search)
    items = [
        Item("a", 1, live=frozenset("x")),
        Item("b", 6, align=4, live=frozenset("y")),
        Item("c", 3, align=4, live=frozenset("y")),
    ]
    packing = pack(items, ("x", "y"))
    assert packing.offsets == (0, 4, 0)
    assert packing.footprint == 10 and packing.nodes == 14 and packing.exact


def test_a_state_is_dominated_only_by_one_no_higher_in_every_class():
    # a (2), b (1, align 4), c (4, align 2); a and b live in x y z, c in x y. Bound 7.
    #   allocation: a [0,2), b [4,5), c [6,10): 10; by size: c, a, b: 9;
    #   by alignment: b [0,1), c [2,6), a [6,8): 8  <- incumbent (phases: the same)
    # Search, heights (x, y, z):
    #   1 root: order b (align 4), c, a
    #   2   b at 0 -> (1,1,1): a's slot 1, c's 2; bound 7 without padding, but c (even
    #       size, align 2) starts on an even offset with only a (2 bytes) below it, and
    #       1 + 2 is odd: 1 byte of padding, bound 8: pruned (*padding*)
    #   3   c at 0 -> (4,4,0): a's slot 4, b's 4; bound 7; order b, a
    #   4     b at 4 -> (5,5,5): only a left
    #   5       a at 5: done, 7 meets the bound
    # (before the padding bound, node 2 had two children, a at 1 and c at 2 -> (6,6,2),
    # each pruned at bound 8, and the state of b at 4 was compared with that of c at 2,
    # only a left but higher in x and y: not dominated; 7 nodes)
    items = [
        Item("a", 2, live=frozenset("xyz")),
        Item("b", 1, align=4, live=frozenset("xyz")),
        Item("c", 4, align=2, live=frozenset("xy")),
    ]
    packing = pack(items, ("x", "y", "z"))
    assert packing.footprint == 7 == packing.lower_bound
    assert packing.offsets == (5, 4, 0)
    assert packing.nodes == 5 and packing.exact


# -- search effort -----------------------------------------------------------------------


def test_an_odd_ladder_of_four_is_proven_in_34_nodes():
    # sizes 1 3 5 7: bound 16, every placement 16 + 3 = 19. Tight first: the root and its
    # four children, each of bound above 16 (5 nodes); then the ordinary search,
    # 1 + 4 * 8 - 4 = 29 nodes
    packing = pack(odd_ladder(4))
    assert packing.footprint == 19 and packing.exact
    assert packing.nodes == 5 + 29


def test_identical_items_are_placed_in_index_order_only():
    # a and b are identical (1 byte, align 2, live in the one phase: None and {"main"}
    # are the same set here), c has 3 bytes: bound 5, every placement 4 + 2 + 2 - 1 = 7;
    # first fit in allocation order: c [0,3), a [4,5), b [6,7).
    #   1 root: c and a (b waits for a); c first (larger)
    #   2   c: a (b waits); 3 c, a: one left, bound 7: pruned
    #   4   a: b and c; 5 a, c: pruned; 6 a, b: pruned
    # (without the rule it would be the ladder count 1 + 3 * 4 - 3 = 10). Before that, tight
    # first (as if the incumbent were 6): 1 root; 2 c: a's slot 4, bound 4 + 2 = 6 and
    # 3 a: slots 2, bound 2 + 3 + 1 = 6, both pruned: 3 + 6 = 9 nodes
    items = [Item("c", 3, 2), Item("a", 1, 2), Item("b", 1, 2, frozenset({"main"}))]
    packing = pack(items, ("main",))
    assert packing.offsets == (0, 4, 6)
    assert packing.nodes == 3 + 6 and packing.exact


def test_a_spent_budget_is_reported_and_the_incumbent_kept():
    # the ladder of four needs 5 + 29 nodes; with 10 the 11th finds the budget spent
    packing = pack(odd_ladder(4), node_limit=10)
    assert packing.nodes == 11
    assert not packing.exact  # 19 is above the clique bound 16 and the search stopped
    assert packing.offsets == (0, 2, 6, 12)  # first fit: o1 [0,1), o3 [2,5), o5, o7


def test_the_default_budget_is_50_000_nodes():
    # a ladder of 13 needs 1 + 13 * 4096 - 13 = 53,236 nodes, more than 50,000 (the
    # documented default for a pool whose nodes are cheap: 13 x (1 clique + 1) <= 128);
    # no time limit, so a slow machine stops at the same node
    packing = pack(odd_ladder(13), seconds=None)
    assert packing.nodes == 50_001
    assert not packing.exact


def test_a_pool_of_costly_nodes_gets_a_proportionally_smaller_budget():
    # 65 ladder items live in x (one clique) and two items in y (another): 67 items x
    # (2 cliques + 1) = 201 > 128, so node_limit 201 becomes 201 * 128 // 201 = 128.
    # The ladder is never proven (4225 + 64 bytes above its bound 4225), and the root
    # (1), its 67 children and the 66 children of its first child are 134 > 128 nodes,
    # so the search stops at node 129.
    items = [*odd_ladder(65, frozenset("x")), Item("p", 1, live=frozenset("y"))]
    items.append(Item("q", 2, live=frozenset("y")))
    packing = pack(items, ("x", "y"), node_limit=201)
    assert packing.nodes == 129
    assert not packing.exact
