"""The packer's set-up shortcuts against the general code they stand in for, or against
plain reference versions written here (first fit by testing every aligned offset).

- one pass over plain items (no views, nothing fixed) builds the same working form as the
  checks rule by rule;
- kinds of items that conflict with themselves and with the same kinds share one list of
  runs in first fit;
- when bump placement in allocation order meets the heaviest class, it is taken as first fit
  without running first fit: the heaviest class then holds every item and bump placement
  leaves no padding, so each item goes right on top of the one before (module docstring).
"""

import random

import pytest
from test_packer_speed import first_fit_by_hand  # tests/plan is on sys.path

from tilemem.errors import AllocationError
from tilemem.plan.lifetimes import Item, _Instance, _lane_mask, _Search, pack, pack_columns

FIELDS = ("live", "lanes", "parent", "root", "inner", "roots", "pack_live", "pack_lanes",
          "pack_align", "length")  # fmt: skip


def plain_items(rng: random.Random, count: int, phases, lanes: bool):
    items = []
    for n in range(count):
        live = None if rng.random() < 0.3 else frozenset(rng.sample(phases, rng.randint(0, 2)))
        lane_set = None
        if lanes and rng.random() < 0.6:
            lo = rng.choice((0, 64))
            lane_set = frozenset(range(lo, lo + rng.choice((32, 64))))
        size = rng.choice((0, 8, 100, 1024, rng.randint(1, 3000)))
        items.append(Item(f"b{n}", size, rng.choice((1, 8, 128, 1024)), live, lane_set))
    return items


@pytest.mark.parametrize("seed", range(30))
def test_one_pass_over_plain_items_builds_what_the_rule_by_rule_checks_build(seed):
    rng = random.Random(seed)
    phases = ("a", "b", "c", "d")
    items = plain_items(rng, rng.randint(1, 12), phases, lanes=seed % 2 == 1)
    fast = _Instance(items, phases)
    assert fast.plain  # the one-pass path was taken
    slow = _Instance.__new__(_Instance)  # the same start, then the general path
    slow.items = list(items)
    slow._start([it.name for it in items], phases)
    slow._general()
    assert not slow.plain
    for field in FIELDS:
        assert getattr(fast, field) == getattr(slow, field), field


@pytest.mark.parametrize(
    "item",
    [
        Item("x", -1),
        Item("x", 8, 3),
        Item("x", 8, 0),
        Item("x", True),
        Item("x", 8, 8, frozenset({"nope"})),
        Item("x", 8, 8, offset=8),
    ],
)
def test_an_item_that_is_not_plain_takes_the_general_path(item):
    # an invalid item must reach the rule-by-rule checks, which raise; a fixed one is valid
    items = [Item("a", 8), item]
    try:
        inst = _Instance(items, ("a", "b"))
    except ValueError:
        return
    assert not inst.plain


def test_equal_lane_sets_made_apart_give_one_mask():
    first = frozenset(range(128))
    second = frozenset(range(127, -1, -1))  # equal, another object
    assert first is not second
    assert _lane_mask(first) == _lane_mask(second) == (1 << 128) - 1
    assert _lane_mask(frozenset({3, 5})) == 0b101000


A, AB, BC, C = frozenset("a"), frozenset("ab"), frozenset("bc"), frozenset("c")
KIND_SETS = [  # (live, lanes) of each kind
    # a and ab meet themselves and the same kinds (a, ab): one group; c alone
    ((AB, None), (A, None), (C, None)),
    # every kind meets every kind: one group, one list of runs for all
    ((None, None), (A, None), (AB, None)),
    # ab meets bc, bc meets c, c not ab: three groups
    ((AB, None), (BC, None), (C, None)),
    # live in no phase: conflicts with nothing, not even its own kind (two such kinds, on
    # all lanes and on 32 of them, are two groups: a group's items must conflict)
    ((frozenset(), None), (frozenset(), frozenset(range(32))), (A, None)),
]


@pytest.mark.parametrize("seed", range(40))
def test_first_fit_with_kinds_in_groups_is_the_lowest_clear_position_in_order(seed):
    rng = random.Random(seed)
    phases = ("a", "b", "c")
    kinds = KIND_SETS[seed % len(KIND_SETS)]
    items = [
        Item(f"b{n}", rng.choice((8, 100, 1024, rng.randint(1, 1500))),
             rng.choice((8, 16, 128, 1024)), *rng.choice(kinds))
        for n in range(rng.randint(9, 20))
    ]  # fmt: skip
    inst = _Instance(items, phases)
    search = _Search(inst, 10, inst.cell_classes())
    order = sorted(search.free, key=lambda r: rng.random())
    assert len(search.kind_table[1]) ** 2 <= len(order)  # the path by kind is the one taken
    offsets = search.first_fit(order)
    want = first_fit_by_hand(items, [items[r].name for r in order], phases)
    assert {items[r].name: x for r, x in offsets.items()} == want


def test_the_groups_of_the_kind_sets():
    # the groups the test above relies on, worked by hand from the live sets
    phases = ("a", "b", "c")
    expected = [
        ([0, 0, 1], [[0], [1]]),  # {ab, a} meet each other only; c itself only
        ([0, 0, 0], [[0]]),
        ([0, 1, 2], [[0, 1], [0, 1, 2], [1, 2]]),
        ([0, 1, 2], [[], [], [2]]),  # no phase: meets nothing, not even itself
    ]
    for kinds, want in zip(KIND_SETS, expected):
        items = [Item(f"k{n}", 8, 8, *kind) for n, kind in enumerate(kinds)]
        search = _Search(_Instance(items, phases), 10, [])
        assert search._groups() == want, kinds


@pytest.mark.parametrize("seed", range(40))
def test_bump_placement_meeting_the_heaviest_class_is_first_fit(seed):
    # every item is live in phase a (so all conflict) and sizes are multiples of the
    # alignments that follow them, or not: pack() returns first fit in allocation order
    # (the reference tries every offset) and proves it when it meets the heaviest class
    rng = random.Random(seed)
    phases = ("a", "b")
    items = []
    for n in range(rng.randint(1, 12)):
        align = rng.choice((8, 128, 1024))
        size = align * rng.randint(1, 4) if seed % 2 else rng.choice((8, 96, 1024, 1032))
        items.append(
            Item(f"b{n}", size, align, rng.choice((None, frozenset("a"), frozenset("ab"))))
        )
    packing = pack(items, phases, seconds=None)
    want = first_fit_by_hand(items, [it.name for it in items], phases)
    total = sum(it.length for it in items)
    if packing.first_fit == total:  # no padding: the shortcut's case
        assert dict(zip([it.name for it in items], packing.offsets)) == want
        assert packing.exact and packing.nodes == 0 and packing.footprint == total
    assert packing.first_fit == max(want[it.name] + it.length for it in items)


def columns(items):
    return [[getattr(it, f) for it in items] for f in ("name", "length", "align", "live", "lanes")]


@pytest.mark.parametrize("seed", range(30))
def test_packing_columns_is_packing_the_items(seed):
    rng = random.Random(seed)
    phases = ("a", "b", "c", "d")
    items = plain_items(rng, rng.randint(1, 12), phases, lanes=seed % 2 == 1)
    assert pack_columns(*columns(items), phases, seconds=None) == pack(items, phases, seconds=None)
    inst = _Instance.of_columns(*columns(items), phases)
    assert inst.plain and "items" not in vars(inst)  # no items made
    assert inst.items == items  # made when asked for, equal to the ones described


@pytest.mark.parametrize(
    "bad, message",
    [
        (Item("x", -1), "x: length must be an integer >= 0, got -1"),
        (Item("x", 8, 3), "x: align must be a power of two, got 3"),
        (Item("x", 8, 8, frozenset({"nope"})), r"x: unknown phases \['nope'\]"),
        (Item("a", 8), "item names must be unique"),
    ],
)
def test_columns_that_are_not_valid_are_refused_as_the_items_are(bad, message):
    items = [Item("a", 8), bad]
    for call in (
        lambda: pack(items, ("a", "b")),
        lambda: pack_columns(*columns(items), ("a", "b")),
    ):
        with pytest.raises(AllocationError, match=message):
            call()
