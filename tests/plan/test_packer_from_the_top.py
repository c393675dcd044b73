"""The search from the top (module docstring of ``tilemem.plan.lifetimes``, *from the top*):
it decides whether a placement ends at or below a limit, checked against the brute force of
``test_lifetimes.py`` (which uses no lemma), and, used only as a proof, it never changes the
placement the packer returns.
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packer_instances import kernel_like  # tests/plan
from test_lifetimes import PHASES, brute_force_minimum, clashes, instances  # tests/plan

from tilemem.plan import lifetimes
from tilemem.plan.lifetimes import Item, _bit_mask, _Instance, _Search, _TopDown, pack


def from_the_top(items, phases, limit: int, budget: int = 10**6):
    """(found, offsets, nodes): whether the search from the top finds a placement ending at
    or below ``limit``, that placement turned back into offsets, and the nodes it took."""
    inst = _Instance(items, phases)
    search = _Search(inst, 10**9, inst.cell_classes())
    search.clique_bound()  # the cliques, which the bound of every state reads
    search._prepare()
    top = _TopDown(search, limit, budget)
    top._dfs(_bit_mask(search.free), (0,) * len(search.classes), 0)
    assert top.complete, "the budget of the test is too small"
    found = top.best_end <= limit
    offsets = None
    if found:
        mirror = top.best
        offsets = [limit - mirror.get(r, limit) - it.length for r, it in enumerate(items)]
    return found, offsets, top.nodes


@given(instances(max_items=5, max_units=9))
@settings(max_examples=80, deadline=None)
def test_from_the_top_finds_a_placement_exactly_down_to_the_brute_force_minimum(items):
    least = brute_force_minimum(items)
    found, offsets, _ = from_the_top(items, PHASES, least)
    assert found
    assert clashes(items, offsets) == []
    assert all(x >= 0 and x % it.align == 0 for x, it in zip(offsets, items))
    assert max(x + it.length for x, it in zip(offsets, items)) <= least
    assert not from_the_top(items, PHASES, least - 1)[0]


LANE_GROUPS = (None, frozenset(range(64)), frozenset(range(64, 128)))


@given(instances(max_items=5, max_units=9), st.lists(st.sampled_from(LANE_GROUPS), min_size=5))
@settings(max_examples=40, deadline=None)
def test_from_the_top_with_lanes_matches_the_brute_force(items, lanes):
    items = [Item(it.name, it.length, it.align, it.live, lane) for it, lane in zip(items, lanes)]
    least = brute_force_minimum(items)
    found, offsets, _ = from_the_top(items, PHASES, least)
    assert found and clashes(items, offsets) == []
    assert not from_the_top(items, PHASES, least - 1)[0]


@given(instances(max_items=5, max_units=9))
@settings(max_examples=60, deadline=None)
def test_with_proofs_everywhere_the_footprint_is_the_brute_force_minimum(items):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 0)
        patch.setattr(lifetimes, "TOP_LIMIT", 10**6)
        packing = pack(items, PHASES)
    assert packing.exact and clashes(items, packing.offsets) == []
    assert packing.footprint == brute_force_minimum(items)


@pytest.mark.parametrize("seed", range(6))
def test_the_proofs_from_the_top_never_change_the_placement(seed, monkeypatch):
    # the packer with the proofs tried at every chance, and without them (the search as it
    # was before them): the same offsets, footprint and verdict on every instance
    rng = random.Random(7100 + seed)
    cases = [kernel_like(rng, rng.randint(6, 14)) for _ in range(40)]
    with monkeypatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 1 << 62)
        without = [pack(items, phases, seconds=None) for items, phases in cases]
    with monkeypatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 0)
        patch.setattr(lifetimes, "TOP_LIMIT", 10**6)
        everywhere = [pack(items, phases, seconds=None) for items, phases in cases]
    default = [pack(items, phases, seconds=None) for items, phases in cases]
    for a, b, c in zip(without, everywhere, default):
        assert a.offsets == b.offsets == c.offsets
        assert a.footprint == b.footprint == c.footprint
        assert a.exact == b.exact == c.exact


# -- the two hardest instances of benchmarks/planning.py (round 4) ----------------------

# (size, alignment, live phases; None: every phase), "8 phases #302" and "6 phases #591"
HARD_302 = [
    (26624, 512, "3"), (14080, 256, "0134567"), (3584, 256, None), (4352, 256, None),
    (1536, 512, "267"), (62464, 1024, "12347"), (56, 8, "045"), (16896, 512, "024567"),
    (3072, 128, "45"), (272, 16, "0123457"), (8192, 512, "0123467"), (40, 8, "17"),
    (17408, 1024, "01234567"), (7168, 1024, "01234567"), (5120, 512, "234"),
    (54272, 1024, "0234567"), (26112, 512, "0367"), (7168, 1024, None), (8192, 512, "47"),
    (256, 16, "0246"), (6144, 1024, "013456"), (400, 16, "035"),
]  # fmt: skip
HARD_591 = [
    (56320, 1024, "14"), (31232, 512, "012345"), (16, 8, "04"), (26624, 1024, "03"),
    (33792, 1024, "0134"), (7168, 1024, "134"), (4864, 256, "1"), (12288, 1024, "0125"),
    (5120, 512, "0345"), (2816, 256, None), (26112, 512, "45"), (416, 16, None),
    (8, 8, "4"), (3072, 1024, "01234"), (65536, 1024, "05"), (12288, 256, "13"),
    (384, 128, "02345"), (44032, 1024, None), (32768, 512, "23"), (3968, 128, "012345"),
    (40, 8, "2"),
]  # fmt: skip


def hard(rows, phase_count: int):
    phases = tuple(f"p{i}" for i in range(phase_count))
    items = [
        Item(f"b{n}", size, align, None if live is None else frozenset(f"p{c}" for c in live))
        for n, (size, align, live) in enumerate(rows)
    ]
    return items, phases


def heaviest_phase(items, phases) -> int:
    return max(sum(it.length for it in items if it.live is None or p in it.live) for p in phases)


def test_302_nothing_meets_its_heaviest_phase_shown_from_the_top_in_few_nodes():
    # phase p3 holds 243,360 bytes, all but two items (272 and 400 bytes, alignment 16)
    # multiples of 256 aligned to 256 or more: with no byte to spare those two must be the
    # top of p3, which the search from the top tries first. The search from the bottom
    # needs about 247,000 nodes to find the same (round 4).
    items, phases = hard(HARD_302, 8)
    assert heaviest_phase(items, phases) == 243_360
    found, _, nodes = from_the_top(items, phases, 243_360)
    assert not found and nodes <= 100


def test_302_a_placement_of_243_472_bytes_exists():
    # the optimum found by exhaustive runs without a time limit (575,627 nodes with the
    # round-4 search): checked here as a placement, independently of the packer
    items, phases = hard(HARD_302, 8)
    offsets = [154624, 221184, 239616, 235264, 180224, 0, 179968, 154624, 181760, 243200,
               207872, 179712, 116736, 134144, 216064, 62464, 181760, 141312, 171520,
               179712, 148480, 181248]  # fmt: skip
    assert clashes(items, offsets) == []
    assert all(x % it.align == 0 for x, it in zip(offsets, items))
    assert max(x + it.length for x, it in zip(offsets, items)) == 243_472
    assert from_the_top(items, phases, 243_472)[0]


def test_302_is_packed_validly_and_never_claimed_below_its_optimum():
    items, phases = hard(HARD_302, 8)
    packing = pack(items, phases)
    assert clashes(items, packing.offsets) == []
    assert packing.footprint >= 243_472
    assert packing.footprint == 243_472 or not packing.exact


def test_591_is_proven_at_239_008_bytes_without_a_time_limit():
    # the heaviest phase p0 holds 229,296 bytes; the optimum is 9,712 bytes above it
    items, phases = hard(HARD_591, 6)
    assert heaviest_phase(items, phases) == 229_296
    packing = pack(items, phases, node_limit=10**6, seconds=None)
    assert packing.exact and packing.footprint == 239_008
    assert clashes(items, packing.offsets) == []
    assert all(x % it.align == 0 for x, it in zip(packing.offsets, items))
