"""The proofs from the top inside the search (module docstring of ``tilemem.plan.lifetimes``,
*from the top*), run at every chance on instances small enough for the brute force of
``test_lifetimes.py`` (which uses no lemma): with the thresholds lowered, a proof runs at
the incumbent, at each new best and at the checkpoint, and is cut short by its own budget,
by the search's node budget or by the clock. Whatever happens, ``exact`` is True only for a
footprint the brute force finds minimal, a search stopped by the clock is not called
complete, the node count stays within the budget, and a search that runs to its end
returns the placement it returns without the proofs.
"""

import functools
import itertools

import pytest
from test_lifetimes import brute_force_minimum, clashes, live_together  # tests/plan

from tilemem.plan import lifetimes
from tilemem.plan.lifetimes import Item, pack

PHASES = ("p0", "p1", "p2", "p3")

# "size/alignment/live phases" per item: random instances kept because the search runs on them
# (first fit misses the minimum, which lies above the heaviest clique), so the ordinary
# search runs after the tight one and finds new bests
CASES = [
    "3/1/3 2/1/01 4/4/2 8/8/0 1/1/01 8/8/012 6/2/123",
    "4/4/123 4/4/2 4/4/1 3/1/023 4/4/123 2/1/01 1/1/012",
    "8/8/3 4/4/1 8/4/013 4/4/013 6/2/01",
    "4/4/03 6/2/012 1/1/013 8/4/3 4/2/23 1/1/23 8/4/2",
    "3/1/3 4/2/023 16/8/23 6/2/13 8/8/02",
    "16/8/1 16/8/0 1/1/03 8/8/3 3/1/12 4/2/023 4/2/012",
    "6/2/23 1/1/013 2/1/012 8/8/2 8/4/3 2/1/03 1/1/023",
    "2/1/0 8/8/01 4/4/13 2/2/023 3/1/0 4/2/023 1/1/1",
    "3/1/23 4/4/012 8/4/123 2/1/03 3/1/013 8/4/3 8/8/1",
    "4/4/012 2/2/013 4/2/02 4/4/123 16/8/1 16/8/2",
]


def items_of(row: str) -> list[Item]:
    return [
        Item(f"b{i}", int(size), int(align), frozenset(f"p{c}" for c in live))
        for i, (size, align, live) in enumerate(item.split("/") for item in row.split())
    ]


def case(n: int) -> list[Item]:
    return items_of(CASES[n])


@functools.cache
def minimum(n: int | str) -> int:
    """The brute-force minimum of ``CASES[n]`` (or of the row ``n``)."""
    return brute_force_minimum(items_of(n if isinstance(n, str) else CASES[n]))


@functools.cache
def heaviest_clique(n: int | str) -> int:
    """The heaviest set of pairwise co-live items, by trying every subset."""
    items = items_of(n if isinstance(n, str) else CASES[n])
    best = 0
    for mask in range(1, 1 << len(items)):
        chosen = [it for i, it in enumerate(items) if mask >> i & 1]
        if all(live_together(a, b) for a, b in itertools.combinations(chosen, 2)):
            best = max(best, sum(it.length for it in chosen))
    return best


def test_the_cases_need_the_ordinary_search():
    # the premise of the tests below, from the brute force: the minimum lies above the
    # heaviest clique (the tight search fails), and first fit misses it (new bests occur)
    for n in range(len(CASES)):
        assert minimum(n) > heaviest_clique(n)
        assert pack(case(n), PHASES, seconds=None).first_fit > minimum(n)


def valid(items, packing) -> None:
    assert clashes(items, packing.offsets) == []
    assert all(x >= 0 and x % it.align == 0 for x, it in zip(packing.offsets, items))
    assert packing.footprint == max(x + it.length for x, it in zip(packing.offsets, items))
    assert packing.footprint >= packing.lower_bound


class Counter:
    """Counts the states visited (calls of ``_dfs``, both searches) and the searches from
    the top started, around the real methods."""

    def __init__(self, patch):
        self.calls = self.tops = 0
        dfs, init = lifetimes._Search._dfs, lifetimes._TopDown.__init__

        def counted_dfs(search, *args):
            self.calls += 1
            return dfs(search, *args)

        def counted_init(top, *args):
            self.tops += 1
            return init(top, *args)

        patch.setattr(lifetimes._Search, "_dfs", counted_dfs)
        patch.setattr(lifetimes._TopDown, "__init__", counted_init)


@pytest.mark.parametrize("n", range(len(CASES)))
def test_proofs_at_every_chance_keep_the_placement_and_prove_the_minimum(n, monkeypatch):
    items = case(n)
    with monkeypatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 1 << 62)  # no proof from the top
        without = pack(items, PHASES, seconds=None)
    assert without.exact and without.footprint == minimum(n)
    # from the first node, at the checkpoint a few nodes on, and (past the tight search's
    # end) at the checkpoint of the ordinary search, with budgets from one node (a proof
    # never finishes) to plenty
    for top_after in (*range(12), 16, 24, 32, 48, 64, 96):
        for top_limit in (1, 2, 3, 5, 10**6):
            with monkeypatch.context() as patch:
                patch.setattr(lifetimes, "TOP_AFTER", top_after)
                patch.setattr(lifetimes, "TOP_LIMIT", top_limit)
                count = Counter(patch)
                packing = pack(items, PHASES, seconds=None)
            valid(items, packing)
            assert packing.exact and packing.footprint == minimum(n)
            assert packing.offsets == without.offsets
            # Packing.nodes counts the states of both searches; a search from the top
            # stopped by its budget counts its budget, not the state where it stopped
            assert count.calls - count.tops <= packing.nodes <= count.calls


@pytest.mark.parametrize("n", range(len(CASES)))
def test_a_node_budget_cut_never_claims_an_unproven_minimum(n, monkeypatch):
    items = case(n)
    for top_after, top_limit in ((0, 10**6), (0, 2), (3, 10**6), (24, 10**6)):
        for node_limit in range(1, 80):
            with monkeypatch.context() as patch:
                patch.setattr(lifetimes, "TOP_AFTER", top_after)
                patch.setattr(lifetimes, "TOP_LIMIT", top_limit)
                packing = pack(items, PHASES, node_limit=node_limit, seconds=None)
            valid(items, packing)
            assert packing.footprint >= minimum(n)
            if packing.exact:
                assert packing.footprint == minimum(n)
            # the proofs' nodes count against the same budget (the cases are small: the
            # budget is not scaled down), and a search stops at the state past it
            assert packing.nodes <= node_limit + 1
            assert packing.footprint <= packing.first_fit


class Clock:
    """``time.thread_time`` that advances one unit per look: with ``CHECK_EVERY`` = 1 and
    ``seconds`` = s the search (and a search from the top within it) stops at the look
    after s more, wherever that falls. The first look sets the deadline."""

    def __init__(self):
        self.looks: list[int] = []

    def thread_time(self) -> float:
        self.looks.append(len(self.looks))
        return float(self.looks[-1])


@pytest.mark.parametrize("n", range(len(CASES)))
def test_a_search_stopped_by_the_clock_is_not_called_complete(n, monkeypatch):
    items = case(n)
    stops = 0
    for top_after, top_limit in ((0, 10**6), (2, 10**6), (0, 3)):
        for seconds in range(1, 120):
            clock = Clock()
            with monkeypatch.context() as patch:
                patch.setattr(lifetimes, "TOP_AFTER", top_after)
                patch.setattr(lifetimes, "TOP_LIMIT", top_limit)
                patch.setattr(lifetimes, "CHECK_EVERY", 1)
                patch.setattr(lifetimes, "time", clock)
                packing = pack(items, PHASES, seconds=seconds)
            valid(items, packing)
            assert packing.footprint >= minimum(n)
            if packing.exact:
                assert packing.footprint == minimum(n)
            if clock.looks and clock.looks[-1] > clock.looks[0] + seconds:
                # the clock stopped a search (the ordinary one or one from the top in it):
                # the result is exact only where it meets the heaviest clique
                stops += 1
                assert packing.exact == (packing.footprint <= heaviest_clique(n))
    assert stops  # the clock did stop searches


# instances whose minimum (brute force) is one above the heaviest clique and is met by
# first fit already: the tight search's proof that nothing meets the clique is the whole proof
ONE_ABOVE = [
    "6/2/01 16/8/3 3/1/023 16/8/1 2/1/0 4/2/023 1/1/13",
    "6/2/123 4/2/02 3/1/2 8/4/1 16/8/123 2/2/02",
    "8/4/013 2/2/12 6/2/23 4/4/3 3/1/012 3/1/1 4/2/023",
    "3/1/023 2/2/012 8/4/13 2/2/023 4/2/123 4/4/1",
    "2/2/023 6/2/013 16/8/3 4/4/2 16/8/1 1/1/012",
    "16/8/2 8/8/1 4/4/13 3/1/02 4/4/2 2/1/01 8/8/1",
]


@pytest.mark.parametrize("row", ONE_ABOVE)
def test_a_refuted_clique_proves_an_incumbent_one_above_it(row, monkeypatch):
    # the search from the top shows in the tight search that nothing ends at the clique
    # bound B; the incumbent ends at B + 1, so nothing lies below it either: the ordinary
    # search must not start (it used to re-prove B, the limit being "tried" already)
    items = items_of(row)
    assert minimum(row) == heaviest_clique(row) + 1
    with monkeypatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 1 << 62)
        without = pack(items, PHASES, seconds=None)
    ordinary = []
    dfs = lifetimes._Search._dfs

    def counted_dfs(search, *args):
        if type(search) is lifetimes._Search and search.proving:
            ordinary.append(args)
        return dfs(search, *args)

    with monkeypatch.context() as patch:
        patch.setattr(lifetimes, "TOP_AFTER", 0)
        patch.setattr(lifetimes._Search, "_dfs", counted_dfs)
        packing = pack(items, PHASES, seconds=None)
    assert packing.first_fit == packing.footprint == heaviest_clique(row) + 1
    assert packing.exact and packing.offsets == without.offsets
    assert ordinary == []
    assert packing.nodes < without.nodes
