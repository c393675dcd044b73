"""The lifted bound (module docstring of ``tilemem.plan.lifetimes``, *lifted bound*): relaxations
that drop items and cut items conflicting with every other item give lower bounds, checked
against the brute force of ``test_lifetimes.py`` (which uses no lemma); used only to give up
or restart the tight search and to stop the ordinary one, they never change the placement;
and they prove the two hardest instances of ``benchmarks/planning.py``.
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lifetimes import PHASES, brute_force_minimum, clashes, live_sets  # tests/plan
from test_packer_from_the_top import HARD_302, HARD_591, hard

from tilemem.plan import lifetimes
from tilemem.plan.lifetimes import Item, _Instance, _Search, pack


@st.composite
def walled(draw, max_items=5):
    """Items with alignments up to 8 and sizes up to 24 bytes, so that an item conflicting
    with every other one often holds a multiple of the largest alignment to cut."""
    items = []
    for i in range(draw(st.integers(1, max_items))):
        align = draw(st.sampled_from([1, 2, 4, 8]))
        size = draw(st.integers(1, 24))
        items.append(Item(f"b{i}", size, align, draw(live_sets)))
    return items


def prepared(items) -> _Search:
    """A search of ``items`` ready to run relaxations (cliques found, the incumbent set)."""
    inst = _Instance(items, PHASES)
    search = _Search(inst, 10**9, inst.cell_classes())
    search.clique_bound()
    search._prepare()
    search.free_mask = sum(1 << r for r in search.free)
    search.best = search.first_fit(search.free)
    return search


def relaxed_items(items, sizes: dict[int, int]) -> list[Item]:
    return [Item(items[r].name, size, items[r].align, items[r].live) for r, size in sizes.items()]


@given(walled(max_items=4), st.integers(0, 15))
@settings(max_examples=150, deadline=None)
def test_cutting_and_dropping_never_exceed_the_brute_force_minimum(items, drop):
    # any subset of the items, then cut: the relaxed minimum plus the bytes cut is a lower
    # bound; with nothing dropped it is the minimum itself (the converse of the docstring's
    # argument: the bytes cut go back in at the end of the item they were cut from, or, for
    # an item cut to nothing, at the bottom, moving everything above up by a multiple of
    # every alignment)
    least = brute_force_minimum(items)
    search = prepared(items)
    keep = search.free_mask & ~drop
    if not keep:
        return
    sizes, cut = search._cut(keep)
    relaxed = brute_force_minimum(relaxed_items(items, sizes)) + cut
    assert relaxed <= least
    full, cut_all = search._cut(search.free_mask)
    assert brute_force_minimum(relaxed_items(items, full)) + cut_all == least


def test_a_cut_worked_by_hand():
    # g (12 bytes, align 4) is live in both phases, so it conflicts with a and b (4 bytes
    # each, align 4, one phase each), which share nothing: 12 = 3 x 4 bytes are cut and g
    # goes; a and b then pack side by side in 4 bytes: 16 in all, the minimum (g below, a
    # and b beside each other above it). With c (8 bytes, align 8, phase x) the largest
    # alignment is 8: only 8 bytes of g are cut, and 4 stay (align 4). The rest needs 16
    # (phase x holds g's 4, a's 4 and c's 8: c at 0, g at 8, a and b at 12): 24, the minimum
    # (phase x holds 12 + 4 + 8).
    x, y = PHASES[:2]
    g = Item("g", 12, 4, frozenset({x, y}))
    a = Item("a", 4, 4, frozenset({x}))
    b = Item("b", 4, 4, frozenset({y}))
    search = prepared([g, a, b])
    assert search._cut(search.free_mask) == ({1: 4, 2: 4}, 12)
    assert brute_force_minimum([a, b]) + 12 == brute_force_minimum([g, a, b]) == 16
    c = Item("c", 8, 8, frozenset({x}))
    search = prepared([g, a, b, c])
    assert search._cut(search.free_mask) == ({0: 4, 1: 4, 2: 4, 3: 8}, 8)
    rest = [Item("g", 4, 4, g.live), a, b, c]
    assert brute_force_minimum(rest) + 8 == brute_force_minimum([g, a, b, c]) == 24


@given(walled(max_items=4))
@settings(max_examples=80, deadline=None)
def test_every_lifted_bound_is_at_most_the_brute_force_minimum(items):
    least = brute_force_minimum(items)
    search = prepared(items)
    for bound in search._lifted_bounds():
        assert bound <= least


@given(walled(max_items=4))
@settings(max_examples=80, deadline=None)
def test_with_relaxations_everywhere_the_footprint_is_the_brute_force_minimum(items):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 0)
        patch.setattr(lifetimes, "LIFT_LIMIT", 10**6)
        packing = pack(items, PHASES, seconds=None)
    assert packing.exact and clashes(items, packing.offsets) == []
    assert all(x % it.align == 0 for x, it in zip(packing.offsets, items))
    assert packing.footprint == brute_force_minimum(items)


LANE_GROUPS = (None, frozenset(range(64)), frozenset(range(64, 128)))


@given(walled(max_items=4), st.lists(st.sampled_from(LANE_GROUPS), min_size=4))
@settings(max_examples=60, deadline=None)
def test_with_lanes_relaxations_everywhere_keep_the_brute_force_minimum(items, lanes):
    # lanes decide conflicts too: an item cut must conflict with every other on a lane
    items = [Item(it.name, it.length, it.align, it.live, lane) for it, lane in zip(items, lanes)]
    search = prepared(items)
    least = brute_force_minimum(items)
    for bound in search._lifted_bounds():
        assert bound <= least
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 0)
        patch.setattr(lifetimes, "LIFT_LIMIT", 10**6)
        packing = pack(items, PHASES, seconds=None)
    assert packing.exact and clashes(items, packing.offsets) == []
    assert packing.footprint == least


def no_relaxations(self):
    return iter(())  # the search as it was before the lifted bound


def random_items(rng: random.Random, count: int, phases, units: int, aligns) -> list[Item]:
    """Items of random sizes and alignments, one in four live throughout: the relaxations
    raise the bound above the clique bound in a few per cent of such instances (the
    kernel-like ones of ``packer_instances`` rarely have an optimum above it)."""
    items = []
    for i in range(count):
        live = frozenset(rng.sample(phases, rng.randint(1, len(phases) - 1)))
        items.append(
            Item(
                f"b{i}",
                rng.randint(1, units),
                rng.choice(aligns),
                None if rng.random() < 0.25 else live,
            )
        )
    return items


def packed_with_and_without(cases, phases, monkeypatch):
    """Each case packed with relaxations from the first node on (and proofs from the top,
    which share the checkpoint), and without any; and for each, whether a relaxation raised
    the bound above the one the search looked for."""
    lift = _Search._lift
    raised: list[bool] = []

    def lift_and_count(self):
        lift(self)
        raised[-1] = raised[-1] or self.lifted > self.bound

    everywhere = []
    with monkeypatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 0)
        patch.setattr(lifetimes, "LIFT_LIMIT", 10**6)
        patch.setattr(_Search, "_lift", lift_and_count)
        for items in cases:
            raised.append(False)
            everywhere.append(pack(items, phases, node_limit=10**6, seconds=None))
    with monkeypatch.context() as patch:
        patch.setattr(_Search, "_lifted_bounds", no_relaxations)
        without = [pack(items, phases, node_limit=10**6, seconds=None) for items in cases]
    return everywhere, without, raised


def test_where_relaxations_raise_the_bound_the_footprint_is_the_brute_force_minimum(
    monkeypatch,
):
    # the instances of five items where a relaxation shows more than the clique bound (the
    # tight search then runs again at the bound shown): the brute-force minimum and the
    # placement of the search without relaxations
    rng = random.Random(2)
    cases = [random_items(rng, 5, PHASES, 24, (1, 2, 4, 8)) for _ in range(900)]
    everywhere, without, raised = packed_with_and_without(cases, PHASES, monkeypatch)
    hits = [n for n, r in enumerate(raised) if r]
    assert len(hits) >= 5
    for n in hits:
        assert everywhere[n].exact and clashes(cases[n], everywhere[n].offsets) == []
        assert everywhere[n].footprint == brute_force_minimum(cases[n])
        assert everywhere[n].offsets == without[n].offsets


# (size, alignment, phases of p0-p3): instances where a relaxation shows a bound above the
# clique bound but below the optimum, so the tight search at that bound finds nothing and the
# ordinary search follows (found among the random instances of random_items)
SHORT_OF_THE_OPTIMUM = [
    [(39, 8, "0"), (16, 16, "3"), (59, 16, "2"), (13, 16, "123"), (39, 4, "013"), (12, 1, "12")],
    [(44, 2, "02"), (40, 16, "13"), (57, 4, "2"), (35, 8, "012"), (49, 8, "03"), (50, 2, "3"),
     (7, 8, "1")],
]  # fmt: skip


@pytest.mark.parametrize("rows", SHORT_OF_THE_OPTIMUM)
def test_a_relaxation_short_of_the_optimum_leaves_the_ordinary_search_to_find_it(rows, monkeypatch):
    phases = ("p0", "p1", "p2", "p3")
    items = [
        Item(f"b{n}", size, align, frozenset(f"p{c}" for c in live))
        for n, (size, align, live) in enumerate(rows)
    ]
    least = brute_force_minimum(items)
    shown: list[tuple[int, int]] = []  # (clique bound, bound shown) per search
    run = _Search.run

    def run_and_record(self, incumbent, bound):
        best = run(self, incumbent, bound)
        if self.lift:  # (not the searches of the relaxations themselves)
            shown.append((bound, self.lifted))
        return best

    monkeypatch.setattr(_Search, "run", run_and_record)
    everywhere, without, _ = packed_with_and_without([items], phases, monkeypatch)
    (bound, lifted), *_ = shown
    assert bound < lifted < least  # the bound shown is above B, and short of the optimum
    assert everywhere[0].exact and everywhere[0].footprint == least
    assert clashes(items, everywhere[0].offsets) == []
    assert everywhere[0].offsets == without[0].offsets


@given(walled(max_items=4), st.sampled_from([0, 8, 16]))
@settings(max_examples=60, deadline=None)
def test_with_an_item_placed_by_hand_no_relaxation_is_tried(items, offset):
    # the cut moves items, which a fixed offset forbids: with something fixed, the search
    # runs without relaxations, and still reaches the brute-force minimum
    first = items[0]
    items[0] = Item(first.name, first.length, first.align, first.live, None, offset)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 0)
        patch.setattr(lifetimes, "LIFT_LIMIT", 10**6)
        packing = pack(items, PHASES, seconds=None)
    assert packing.offsets[0] == offset
    assert packing.exact and clashes(items, packing.offsets) == []
    assert packing.footprint == brute_force_minimum(items)


def test_with_a_fixed_item_or_a_view_no_relaxation_is_searched(monkeypatch):
    # the first instance above searches relaxations; with one of its items fixed where the
    # optimum puts it, or with a view inside one, it searches none (a fixed item cannot be
    # moved by a cut; views keep the general working form) and still finds the minimum
    phases = ("p0", "p1", "p2", "p3")
    rows = SHORT_OF_THE_OPTIMUM[0]
    items = [
        Item(f"b{n}", size, align, frozenset(f"p{c}" for c in live))
        for n, (size, align, live) in enumerate(rows)
    ]
    searched = []
    inner = lifetimes._pack

    def counted(inst, node_limit, seconds, lift=True):
        searched.append(lift)
        return inner(inst, node_limit, seconds, lift)

    monkeypatch.setattr(lifetimes, "TOP_AFTER", 0)
    monkeypatch.setattr(lifetimes, "LIFT_LIMIT", 10**6)
    monkeypatch.setattr(lifetimes, "_pack", counted)
    plain = pack(items, phases, seconds=None)
    assert False in searched  # relaxations were searched
    x = plain.offsets[4]
    fixed = [*items[:4], Item("b4", 39, 4, items[4].live, None, x), items[5]]
    view = [*items, Item("v", 8, 4, items[4].live, alias_of="b4")]
    for case in (fixed, view):
        searched.clear()
        packing = pack(case, phases, seconds=None)
        assert searched == [True]
        assert packing.exact and clashes(case[:6], packing.offsets[:6]) == []
        assert packing.footprint == brute_force_minimum(items) == plain.footprint


@pytest.mark.parametrize("seed", range(3))
def test_the_relaxations_never_change_the_placement(seed, monkeypatch):
    phases = ("p0", "p1", "p2", "p3")
    rng = random.Random(4400 + seed)
    cases = [random_items(rng, rng.randint(6, 8), phases, 64, (1, 2, 4, 8, 16)) for _ in range(150)]
    everywhere, without, raised = packed_with_and_without(cases, phases, monkeypatch)
    for a, b in zip(everywhere, without):
        assert a.exact and b.exact
        assert a.offsets == b.offsets and a.footprint == b.footprint
    assert any(raised)


# -- the two hardest instances of benchmarks/planning.py ----------------------------------


def test_302_is_proven_with_the_default_budget():
    # optimum 243,472 = the clique bound + 112 (test_packer_from_the_top.py has a placement
    # of it checked by hand; exhaustive searches found nothing lower). Round 5 stopped at
    # its time limit; the exhaustive search took 214,436 nodes. Here 888: the relaxation
    # keeping p3 and the items outside it that can lie only over p3's items 0 and 21 shows
    # the optimum at once, and the tight search at it finds the placement
    items, phases = hard(HARD_302, 8)
    packing = pack(items, phases, seconds=None)
    assert packing.exact and packing.footprint == 243_472
    assert clashes(items, packing.offsets) == []
    assert packing.nodes <= 1_000


def test_591_is_proven_with_the_default_budget():
    # optimum 239,008 = the clique bound + 9,712, found by exhaustive runs (184,197 nodes);
    # here 3,463 nodes (the relaxation below, then the tight search at 239,008)
    items, phases = hard(HARD_591, 6)
    packing = pack(items, phases, seconds=None)
    assert packing.exact and packing.footprint == 239_008
    assert clashes(items, packing.offsets) == []
    assert packing.nodes <= 4_000


def test_591_its_relaxation_worked_by_hand():
    # p0 (the heaviest clique, 229,296 bytes) holds items 1-4, 7-9, 11, 13, 14, 16, 17, 19.
    # Outside it, 10 can lie only over 3; 5 over 14; 0 over 3 and 14; 15 and 18 over 2 and
    # 14: N = {2, 3, 14}, and 6, 12 and 20 (which could lie over 4, 7, 8 or 16 too) are
    # dropped. Every other member of p0 then conflicts with all that is kept, and is cut by
    # the multiples of 1,024 it holds: 17, 4, 7, 8 and 13 entirely (44,032 + 33,792 + 12,288
    # + 5,120 + 3,072), 1, 9 and 19 down to 512, 768 and 896 bytes (30,720 + 2,048 + 3,072
    # cut); 11 (416) and 16 (384) hold none. 134,144 bytes cut, 13 items left.
    items, phases = hard(HARD_591, 6)
    inst = _Instance(items, phases)
    search = _Search(inst, 10**9, inst.cell_classes())
    search.clique_bound()
    search._prepare()
    search.free_mask = sum(1 << r for r in search.free)
    keep = search.free_mask & ~(1 << 6 | 1 << 12 | 1 << 20)
    sizes, cut = search._cut(keep)
    assert cut == 134_144
    assert sizes == {
        0: 56320, 1: 512, 2: 16, 3: 26624, 5: 7168, 9: 768, 10: 26112, 11: 416, 14: 65536,
        15: 12288, 16: 384, 18: 32768, 19: 896,
    }  # fmt: skip
