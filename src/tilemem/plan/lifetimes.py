"""Lifetime packing: offsets for buffers that are live in named phases (docs/DESIGN.md#lifetimes).

The problem
-----------
Each item has a length (bytes, or TMEM columns), an alignment (a power of two; for an MMA
operand tile it includes the swizzle period, 256/512/1024 bytes), a live set of phases,
and, for TMEM, the set of lanes its layout touches. Two items **conflict** when their live
sets intersect and (TMEM) their lane sets intersect; conflicting items must occupy disjoint
ranges ``[offset, offset + length)``. Minimise the footprint ``max(offset + length)``.

This is dynamic storage allocation (Garey & Johnson, *Computers and Intractability*,
problem SR2; NP-complete even with interval lifetimes) generalised from intervals to
arbitrary live *sets*: in a persistent warp-specialised kernel the epilogue of tile i and
the mainloop of tile i+1 hold at once, so lifetimes are not intervals. With interval
lifetimes it is interval-graph colouring with sizes, where the max-over-time load is a
lower bound that first fit can miss by a constant factor (Kierstead 1988; Gergov,
"Algorithms for compile-time memory optimization", SODA 1999). Triton's shared-memory
allocator solves the interval case with Gergov-style greedy offset assignment over an
interference graph: a heuristic without an optimality claim. Here the instances are small
(a pool has a handful to ~16 buffers), so we search exactly.

The algorithm
-------------
*Greedy placement.* Placing an item "at its lowest position" means the lowest offset that
is a multiple of its alignment and disjoint from every already placed item it conflicts with.
*Classes of cells*: one phase x one group of TMEM lanes that every item either covers or
misses; two items conflict exactly when they share a class.

*Normalisation lemma.* Take any feasible placement and re-place its items one by one, in
order of their offsets, each at its lowest position. Each item lands at or below where it
was (every conflicting item placed before it lay entirely below it and has only moved
down), so the result is feasible and no larger. Repeating until nothing moves gives an
optimal placement that is reproduced exactly by greedy placement in order of offsets.

*Skyline lemma.* In that order every item placed so far starts at or below the current
one, so in each class of cells the placed items cover one interval from the last offset
up to the class's *height* (the highest end there), and the next item's lowest position
is its *skyline slot*: the lowest multiple of its alignment at or above the heights of its
classes, clear of the fixed items. Placing items in any order, each at its skyline slot,
then raising its classes' heights to its end and every other height to at least its
offset, is feasible (an item lies above everything placed that it conflicts with), and
the order of an optimal normal placement reproduces it; so the minimum over orders is the
optimum. What is left to do depends only on the *state*: the set of unplaced items and
the heights, a vector of (phases x lane groups) numbers.

*Search.* Depth-first branch-and-bound over the next item, seeded with the best of first
fit in allocation order and in four fixed orders (by decreasing size; alignment; number of
phases; first phase, then alignment and size) as the incumbent; children in
order of slot, then larger alignment, then larger size. A state is pruned when

- its bound reaches the incumbent. The maximal cliques of conflicting items are found once
  (Bron-Kerbosch); the waiting items of a clique lie one above another, each at or above
  its slot, so for every slot value t those with slots >= t end at or above t plus their
  total size (one machine with release dates). Each class of cells lies in a clique.
  *Padding*: for a power of two g, call an item *coarse* if its alignment is at least g
  and its size a multiple of g. If a clique's waiting items start at or above s (their
  lowest slot) and weigh w, the lowest coarse one starts on a multiple of g, and only
  items that are not coarse (a set S) lie below it: it starts at or above s + size(S)
  rounded up to a multiple of g, and the rest lie above it. So no completion ends below
  s + w + the least padding (-(s + size(S))) mod g over the sets S of waiting items
  that are not coarse (the residues reached are the set bits of an int, rotated by each
  size). This sees a tight clique whose small items (barriers, odd arrays) can no longer
  all find places that keep the tiles above them aligned. It is worked out for the
  ``PADDED_CLIQUES`` cliques whose waiting items come nearest the incumbent, and only
  where the largest alignment could make up the difference;
- it is dominated: a state with the same unplaced items, the slot of each no higher and
  a highest end so far no higher was searched already. What follows a state depends on its
  heights only through the slots of its waiting items: placing r at x moves a waiting
  item's slot to the lowest allowed position at or above its old slot, x, and (if they
  share a class of cells) r's end, which only grows with the old slot. So every
  completion of this state is matched, item for item no higher, from the one searched,
  and the incumbent only shrinks: it cannot do better. (Comparing slots rather than the
  heights of all classes also sees states whose heights differ only where no waiting
  item is, or below where alignment puts the slots anyway);
- it would place an item before an identical one (same size, alignment, phases, lanes)
  of lower index;
- (*exchange*) it would place an item ``r`` at or above the end of another waiting item
  ``s`` put at its slot. Placing ``s`` there first leaves ``r``'s slot where it was and,
  once ``r`` is placed, the same heights (every height is raised to ``r``'s offset
  anyway) with ``s`` done; slots only grow with the heights, so every completion through
  ``r`` is matched, item for item no higher, through the sibling ``s``, which is searched
  first (its slot is lower).

The search stops as soon as the incumbent meets the clique bound B (the heaviest clique;
with live *sets* it can exceed the busiest phase: buffers live in {a, b}, {b, c}, {a, c}).
It does not start when the incumbent meets it already (``Packing.nodes`` is then 0).

*Tight first.* The search runs first as if the incumbent were B + 1, so it prunes every
state whose bound exceeds B: no completion of such a state meets B, so a placement of
footprint B, if there is one, lies in what is left, and the first one found ends the
work (no placement is smaller). Most hard instances have optimum B, and this finds it
without first visiting the states that only improve on the incumbent a little. If that
search is exhausted without one, the optimum exceeds B and the ordinary search runs from
the incumbent; the memo of dominated states starts afresh, because the first search cut
its states against B + 1, which proves nothing against a larger incumbent.

*From the top.* A placement ends at or below L exactly when its mirror image does: item r
at ``y = L - x - length`` lies in ``[0, L)`` with ``y`` congruent to ``L - length`` modulo its
alignment, conflicting items still disjoint. The lemmas above hold for such congruences as
for multiples (an item's lowest position at or above a height is still unique and only
grows with it), so the same search over the mirror images, its pruning rules included,
decides whether a placement ending at or below L exists (for the padding bound a coarse
item there starts congruent to L, not to 0, modulo g). It sees the other end: where the
top of a tight clique admits few items (their alignments), it fails at once where the search
from the bottom meets the contradiction only after placing everything below. It serves as a
proof only, never as a placement: once a search has visited ``TOP_AFTER`` nodes, the tight
search is given up when the search from the top shows in ``TOP_LIMIT`` nodes (scaled as
``node_limit``) that nothing meets B, and the ordinary search ends with its best when the
search from the top shows nothing lies below it (tried for the incumbent and for each new
best). Either way the placement returned is the one the search would have returned: a
given-up tight search would have found nothing, and the ordinary search replaces its best
only by a smaller one, which does not exist. Only the work (``Packing.nodes``, which counts
these nodes too, against the same budget) changes. Not tried when something of any size is
fixed.

*Lifted bound.* Two relaxations give lower bounds on the optimum. Dropping items: a
placement of all items is one of any subset, no larger. Cutting: if an item g conflicts with
every other item and A is the largest alignment, cutting ``k * A`` bytes (at most its length)
out of g lowers the optimum by at least ``k * A``. In any placement no item overlaps g, so
each lies below g's start or at or above its end; moving those above down by ``k * A`` (a
multiple of every alignment, all powers of two up to A) and shortening g as much keeps every
item aligned and every conflicting pair apart, and lowers every end above g's start by
``k * A``, while the ends below are at most g's start, itself at most the footprint less g's
length. Dropping items can make others conflict with all that is left, so cutting repeats;
an item cut to nothing is dropped. Which items to drop: with K the heaviest clique, an item
outside K lies only over members of K it does not conflict with, or where no member is.
Taking the items outside K in order of how many such members they have (fewest first), N
the members met so far, each relaxation keeps K and the items outside K whose such members
all lie in N: every member of K outside N then conflicts with everything kept, so it is
cut (by the largest multiple of A it holds). Where a few items outside K can lie over few
members of K, the distance of the optimum from B is about which of those members are next
to which, which the clique bounds of the search see only once they are placed, while the
small relaxed instance is searched to the end in few nodes. Only relaxations left with at
most two thirds of the free items are searched (smaller ones search faster), without
relaxations of their own, within ``LIFT_LIMIT`` nodes in all, from the first checkpoint
(``TOP_AFTER`` nodes) on, one after another only until one shows more than the bound the
search looks for (at the checkpoints of the tight search, after it finds nothing, and at
the ordinary search's checkpoint).
When a relaxation shows that nothing lies below L > B, the tight search is given up (nothing
meets B) and runs again as if the incumbent were L + 1. It then returns the first placement
meeting L in the search order; nothing is smaller, so that is the first placement of least
footprint, which the ordinary search would have returned (*which placement*, below), unless
the incumbent meets L already: then it is returned, as the ordinary search would, finding
nothing smaller. If none meets L (the relaxations can be weaker than the optimum), the next
relaxations are tried, and in the end the ordinary search runs as before, stopping if its
best meets the highest bound shown. As with the proofs from the top, the placement returned
is the one the search would return without the relaxations; ``nodes`` counts theirs.

*Set-up cost.* The orders are tried lazily: first fit in allocation order first, and a
further order only while the incumbent is above a bound (the heaviest class of cells,
then the clique bound), since no order can then do strictly better; the result is the
same as trying all five. First fit keeps the placed items sorted by offset and tests
conflicts as bit masks, computed once per kind of root (same phases and lanes); with few
kinds (a kernel's pools: kinds^2 <= items) it keeps each kind's positions as merged runs
instead and bisects the runs of the kinds that block an item, about n log n; kinds that
conflict with themselves and with the same kinds block the same items, so they share one
list of runs. First fit is not run when bump placement in allocation order (computed anyway:
it is ``Packing.bump``) meets the heaviest class of cells and nothing of any size is fixed:
that class weighs at most the sum of all sizes and bump placement at least that, so the
class holds every item (all conflict) and bump placement leaves no padding; each item then
lies right on the one before, which is where first fit puts it too (everything below is
taken by items it conflicts with). Plain items (no views, nothing fixed, the usual case)
are read and checked column by column, with the items in error left to the checks rule by
rule, which raise in their order. Classes
of cells with the same members are kept once, and the phases are split by the roots'
live masks rather than visited one by one, so many phases cost little. Bron-Kerbosch
stops after ``CLIQUE_LIMIT`` steps (there can be 3^(n/3) maximal cliques); the cliques
found so far and the classes of cells then give the bounds, valid but weaker.

*Which placement.* The incumbent is the first of the five first-fit orders above with the
smallest footprint; the search replaces it only by a strictly smaller one, so the result
is the incumbent when that is optimal, else the first placement meeting B in the search
order, or (optimum above B) the first placement of least footprint in the order of the
ordinary search. ``Packing.nodes`` counts the visited states of both searches, the root
included (and those of the searches from the top and of the relaxations); a search
that finds its budget spent (``node_limit``, scaled down as ``pack`` says) stops at that
state, so ``nodes`` is the budget plus one.

*Guarantee.* When the search finishes (``Packing.exact``), the footprint is the minimum
over all feasible placements. Every plan of the real-kernel corpus in
``benchmarks/packing.py`` is proven so in under a millisecond, and nearly every random
kernel-like instance of up to 24 buffers in ``benchmarks/planning.py`` (docs/PERFORMANCE.md
has the measured rates and times). The problem stays NP-hard and the search exponential
in the worst case, so a pool can exceed ``node_limit`` (50,000 nodes by default; fewer
for pools with more items and cliques, see ``pack``) or the CPU time ``pack`` allows
(``SEARCH_SECONDS``, looked at every ``CHECK_EVERY`` nodes). Then the best placement found
so far is returned, and ``exact`` is False unless it meets the clique bound. In every
case the footprint is at most that of first fit in allocation order, which by the lemma
is at most bump placement in allocation order. The search visits items in a fixed order
and keys its memo by integers and tuples only, so the same items give the same offsets,
unless the time limit (which depends on the machine) ended the search.

*Lower bound.* ``max`` over phases (and TMEM lane groups) of the total size of the items
live there: no placement can do better, so a reader sees how far a footprint is from it.

Views (``alias_of``) take no space: a view lies at a fixed offset inside its parent (a
chain of views resolves to one root). For packing, a root inherits its views' phases,
lanes and alignments; the alias check (``conflicts``) is exact per view, exempting a view
only from conflicts with its ancestors. Items with a fixed ``offset`` stay where they are;
the others are placed around them.
"""

from __future__ import annotations

import functools
import time
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import add, attrgetter, le

from ..errors import AllocationError
from ..intmath import align_up, is_power_of_two
from .packing import overlapping_index_pairs

ALL_LANES = -1  # lane mask of an item without lanes: conflicts on every lane
NODE_LIMIT = 50_000  # search nodes before the best placement found so far is returned
NODE_COST = 128  # items x (cliques + 1) up to which a node costs one node of the budget
CLIQUE_LIMIT = 2_000  # Bron-Kerbosch steps before the cliques found so far are used
SEARCH_SECONDS = 0.8  # CPU seconds of search after which pack() returns its best placement
CHECK_EVERY = 64  # nodes between two looks at the clock
TOP_LIMIT = 2_000  # nodes of one search from the top (a proof that no placement is lower)
PADDED_CLIQUES = 3  # cliques per state given the padding bound (those nearest the incumbent)
TOP_AFTER = 512  # nodes of a search before the searches from the top start
LIFT_LIMIT = 4_000  # nodes of the searches of relaxations (*lifted bound*), all of them


@dataclass(frozen=True, init=False)
class Item:
    """A buffer to place.

    ``live``: phase names the buffer is live in (None: every phase). ``lanes``: TMEM
    lanes its layout touches (None: all). ``offset``: a fixed position; for a view
    (``alias_of`` names its parent) the position inside the parent (default 0).
    """

    name: str
    length: int
    align: int = 1
    live: frozenset[str] | None = None
    lanes: frozenset[int] | None = None
    offset: int | None = None
    alias_of: str | None = None

    def __init__(
        self,
        name: str,
        length: int,
        align: int = 1,
        live: frozenset[str] | None = None,
        lanes: frozenset[int] | None = None,
        offset: int | None = None,
        alias_of: str | None = None,
    ) -> None:
        # the fields in one step: a frozen dataclass's own __init__ sets each through
        # object.__setattr__, and a pool makes an item per buffer at every commit
        fields = {
            "name": name,
            "length": length,
            "align": align,
            "live": live,
            "lanes": lanes,
            "offset": offset,
            "alias_of": alias_of,
        }
        object.__setattr__(self, "__dict__", fields)


@dataclass(frozen=True)
class Packing:
    """Offsets (in item order), the footprint and its yardsticks."""

    offsets: tuple[int, ...]
    footprint: int
    lower_bound: int
    bump: int  # bump placement in allocation order, lifetimes ignored
    first_fit: int  # first fit in allocation order
    exact: bool  # the footprint is proven minimal
    nodes: int  # search states visited (0: no search; the budget + 1: budget spent)


@dataclass(frozen=True)
class Overlap:
    """Two items that share positions and a phase: what ``AliasError`` reports."""

    first: str
    second: str
    phases: tuple[str, ...]
    start: int
    end: int
    lanes: tuple[int, int] | None = None  # (lowest, highest) shared TMEM lane, None: all


def phase_universe(items: Sequence[Item], phases: Sequence[str] | None) -> tuple[str, ...]:
    """The phases in order: ``phases`` when given, else the sorted names the items use."""
    if phases is not None:
        return tuple(phases)
    return tuple(sorted({p for it in items if it.live is not None for p in it.live}))


_NAME, _LENGTH, _ALIGN = attrgetter("name"), attrgetter("length"), attrgetter("align")
_LIVE, _LANES = attrgetter("live"), attrgetter("lanes")
_FIXED_OR_VIEW = attrgetter("offset", "alias_of")


class _Instance:
    """Items resolved to bit masks: the packer's working form."""

    def __init__(self, items: Sequence[Item], phases: Sequence[str] | None):
        self.items = list(items)
        self._start(list(map(_NAME, self.items)), phase_universe(self.items, phases))
        if set(map(_FIXED_OR_VIEW, self.items)) != {(None, None)} or not self._plain(
            *(list(map(column, self.items)) for column in (_LENGTH, _ALIGN, _LIVE, _LANES))
        ):
            self._general()

    @classmethod
    def of_columns(
        cls,
        names: list[str],
        lengths: list[int],
        aligns: list[int],
        lives: list[frozenset[str] | None],
        lanes: list[frozenset[int] | None],
        phases: Sequence[str],
    ) -> _Instance:
        """The working form of items with no view and nothing fixed, given column by column
        (what a pool without views, offsets or moves has), without making the items; if a
        value is not valid, the items are made and checked as :meth:`__init__` does."""
        inst = cls.__new__(cls)
        inst._start(names, tuple(phases))
        if inst._plain(lengths, aligns, lives, lanes):
            return inst
        return cls(list(map(Item, names, lengths, aligns, lives, lanes)), phases)

    @functools.cached_property
    def items(self) -> list[Item]:
        """The items of an instance made from columns (only its error messages and the
        alias check read them): made when first needed."""
        columns = (self.names, self.length, self.pack_align, self.phase_sets, self.lane_sets)
        return list(map(Item, *columns))

    def _start(self, names: list[str], phases: tuple[str, ...]) -> None:
        self.names, self.phases = names, phases
        self.phase_index = {p: i for i, p in enumerate(self.phases)}
        self.index = dict(zip(names, range(len(names))))
        if len(self.index) != len(names):
            raise AllocationError("item names must be unique")
        self._all_phases = (1 << max(1, len(self.phases))) - 1
        self._masks: dict[frozenset[str], int] = {}  # live set -> phase mask, once per set

    def _plain(
        self,
        lengths: list[int],
        aligns: list[int],
        phase_sets: list[frozenset[str] | None],
        lane_sets: list[frozenset[int] | None],
    ) -> bool:
        """The working form when every length, alignment and phase is valid (items with no
        view and nothing fixed: a pool's usual ones), checked column by column with builtins
        (a pool commits at every plan, so this runs often). False, with nothing kept,
        otherwise: :meth:`_general` then checks everything in its order and raises."""
        n, all_phases = len(lengths), self._all_phases
        if not (
            set(map(type, lengths)) | set(map(type, aligns)) <= {int}
            and min(lengths, default=0) >= 0
            and min(aligns, default=1) > 0
            and not any(map(int.__and__, aligns, map((-1).__add__, aligns)))  # powers of two
        ):
            return False
        mask_of: dict[frozenset[str] | None, int] = {None: all_phases}
        for phase_set in dict.fromkeys(phase_sets):  # each distinct set once, in order
            if phase_set is not None:
                if not all(p in self.phase_index for p in phase_set):
                    return False
                mask_of[phase_set] = _bit_mask(self.phase_index[p] for p in phase_set)
        self._masks.update((k, v) for k, v in mask_of.items() if k is not None)
        self.live = list(map(mask_of.__getitem__, phase_sets))
        self.phase_sets, self.lane_sets = phase_sets, lane_sets  # for ``items``
        if lane_sets.count(None) == n:
            self.lanes = [ALL_LANES] * n
        else:
            self.lanes = [ALL_LANES if x is None else _lane_mask(x) for x in lane_sets]
        self.length = lengths
        self.pack_live, self.pack_lanes, self.pack_align = list(self.live), list(self.lanes), aligns
        self.parent: list[int | None] = [None] * n
        self.root, self.roots, self.inner = list(range(n)), list(range(n)), [0] * n
        self.plain = True
        return True

    def _general(self) -> None:
        """The working form of any items, each rule checked over all items in turn."""
        self.plain = False
        self.live = [self._phase_mask(it, self._all_phases) for it in self.items]
        self.lanes = [ALL_LANES if it.lanes is None else _lane_mask(it.lanes) for it in self.items]
        self.parent = [self._parent(it) for it in self.items]
        if any(p is not None for p in self.parent):
            self.root = [self._root(n) for n in range(len(self.items))]
            self.inner = [self._inner_offset(n) for n in range(len(self.items))]
        else:  # no views: every item is its own root
            self.root = list(range(len(self.items)))
            self.inner = [0] * len(self.items)
        self.roots = [n for n in range(len(self.items)) if self.parent[n] is None]
        self._inherit_views()
        self.length = [it.length for it in self.items]

    def _phase_mask(self, item: Item, all_phases: int) -> int:
        if item.live is None:
            return all_phases
        mask = self._masks.get(item.live)
        if mask is None:
            mask = self._masks[item.live] = self._new_phase_mask(item)
        return mask

    def _new_phase_mask(self, item: Item) -> int:
        assert item.live is not None
        index = self.phase_index
        unknown = sorted(p for p in item.live if p not in index)
        if unknown:
            raise AllocationError(
                f"{item.name}: unknown phases {unknown}; the phases are {list(self.phases)}"
            )
        return _bit_mask(index[p] for p in item.live)

    def _parent(self, item: Item) -> int | None:
        length, align = item.length, item.align
        if not (
            type(length) is int
            and length >= 0
            and type(align) is int
            and align > 0
            and not align & (align - 1)
        ):
            for label, value in (("length", length), ("align", align)):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise AllocationError(
                        f"{item.name}: {label} must be an integer >= 0, got {value}"
                    )
            if not is_power_of_two(align):
                raise AllocationError(
                    f"{item.name}: align must be a power of two, got {item.align}"
                )
        if item.offset is not None and item.offset % item.align:
            raise AllocationError(
                f"{item.name}: offset {item.offset} is not a multiple of its alignment {item.align}"
            )
        if item.alias_of is None:
            return None
        if item.alias_of not in self.index:
            raise AllocationError(f"{item.name}: alias_of names no item: {item.alias_of!r}")
        parent = self.items[self.index[item.alias_of]]
        start = item.offset or 0
        if start + item.length > parent.length:
            raise AllocationError(
                f"view {item.name} at [{start}, {start + item.length}) does not fit inside "
                f"{parent.name}'s {parent.length}"
            )
        return self.index[item.alias_of]

    def _root(self, n: int) -> int:
        seen = {n}
        parent = self.parent[n]
        while parent is not None:
            if parent in seen:
                raise AllocationError(f"{self.items[n].name}: alias_of forms a cycle")
            seen.add(parent)
            n, parent = parent, self.parent[parent]
        return n

    def _inner_offset(self, n: int) -> int:
        """A view's offset from its root (the sum of offsets along the alias_of chain)."""
        total = 0
        parent = self.parent[n]
        while parent is not None:
            total += self.items[n].offset or 0
            n, parent = parent, self.parent[parent]
        return total

    def _inherit_views(self) -> None:
        """A root takes its views' phases, lanes and alignments (for packing only)."""
        self.pack_live = list(self.live)
        self.pack_lanes = list(self.lanes)
        self.pack_align = [it.align for it in self.items]
        for n, it in enumerate(self.items):
            r = self.root[n]
            if r == n:
                continue
            if self.inner[n] % it.align:
                raise AllocationError(
                    f"view {it.name} at offset {self.inner[n]} inside {self.items[r].name} is "
                    f"not a multiple of its alignment {it.align}"
                )
            self.pack_live[r] |= self.live[n]
            self.pack_lanes[r] |= self.lanes[n]
            self.pack_align[r] = max(self.pack_align[r], it.align)
        for r in self.roots:
            fixed = self.items[r].offset
            if fixed is not None and fixed % self.pack_align[r]:
                raise AllocationError(
                    f"{self.items[r].name}: offset {fixed} is not a multiple of "
                    f"{self.pack_align[r]}, the alignment its views need"
                )

    def conflict(self, a: int, b: int) -> bool:
        return bool(
            self.pack_live[a] & self.pack_live[b] and self.pack_lanes[a] & self.pack_lanes[b]
        )

    @functools.cached_property
    def kinds(self) -> dict[tuple[int, int], int]:
        """The roots of each kind (the same phases and lanes: they conflict with the same
        roots) as a bit mask, per (phase mask, lane mask), kinds in order of their first root;
        and ``keys``, each item's (phase mask, lane mask)."""
        self.keys = keys = list(zip(self.pack_live, self.pack_lanes))
        kinds = dict.fromkeys(keys if self.plain else [keys[r] for r in self.roots], 0)
        for r in self.roots:
            kinds[keys[r]] |= 1 << r
        return kinds

    def cell_classes(self) -> list[list[int]]:
        """Roots per class of cells: one phase x one group of lanes no root splits.

        Cells with the same roots form one class (the heights of such cells are always
        equal), so the count is bounded by the distinct member sets, not by the number of
        phases: the phases are split into parts no root's live set cuts (bit operations on
        the phase masks), and each part gives one row of classes.
        """
        kinds = self.kinds
        masks = {lanes for _, lanes in kinds}
        groups = {ALL_LANES}
        for mask in masks:
            if mask == ALL_LANES:
                continue
            groups = {g & m for g in groups for m in (mask, ~mask)} - {0}
        in_group = [
            _union(roots for (_, lanes), roots in kinds.items() if lanes & group)
            for group in sorted(groups)
        ]
        parts = [(1 << max(1, len(self.phases))) - 1]  # phases no root tells apart
        for live in {live for live, _ in kinds}:
            parts = [half for part in parts for half in (part & live, part & ~live) if half]
        seen: set[int] = set()
        classes = []
        for part in parts:
            row = _union(roots for (live, _), roots in kinds.items() if live & part)
            for group_mask in in_group:
                members = row & group_mask
                if members and members not in seen:
                    seen.add(members)
                    classes.append(_bits(members))
        return classes


class _Search:
    """Branch-and-bound over placement orders on the skyline (see the module docstring)."""

    def __init__(self, inst: _Instance, node_limit: int, classes: list[list[int]]):
        self.inst = inst
        self.length = length = inst.length
        self.align = inst.pack_align
        self.node_limit = node_limit
        empty = 0 in length
        if inst.plain:  # nothing placed by hand: only empty items are fixed, at 0
            self.fixed = {r: 0 for r, size in enumerate(length) if not size} if empty else {}
        else:
            self.fixed = {
                r: inst.items[r].offset or 0
                for r in inst.roots
                if inst.items[r].offset is not None or length[r] == 0
            }
        self.free = [r for r in inst.roots if r not in self.fixed] if self.fixed else inst.roots
        self.fixed_end = max(map(add, self.fixed.values(), map(length.__getitem__, self.fixed)),
                             default=0)  # fmt: skip
        self.classes = [[r for r in c if length[r]] for c in classes] if empty else classes
        # per class, the total size of its roots (fixed ones included)
        self.weights = [sum(map(length.__getitem__, c)) for c in self.classes]
        self.cliques: list[int] | None = None
        self.nodes = 0
        self.complete = True
        self.seconds: float | None = None  # the search's CPU time (None: no limit)
        self.deadline: float | None = None  # this thread's CPU time at which it stops
        self.top_limit = TOP_LIMIT  # nodes of one search from the top (scaled as node_limit)
        self.zero = 0  # where coarse items start, modulo their alignment (*padding*)
        self.proving = False  # the ordinary search (each new best is tried from the top)
        self.given_up = False  # the tight search: shown from the top to find nothing
        self.next_check = TOP_AFTER  # the nodes at which the next search from the top runs
        self.refuted_to = -1  # the highest limit no placement meets, shown from the top
        self.reached_at = 1 << 62  # the lowest footprint a search from the top reached
        self.tried: set[int] = set()  # limits tried from the top
        self.lift = True  # whether relaxations are tried (*lifted bound*)
        self.lifts: Iterator[int] = iter(())  # the bounds they show, one per relaxation
        self.lifted = 0  # the highest of them so far (0: none)

    @functools.cached_property
    def kind_table(self) -> tuple[list[int], list[list[int]], list[int]]:
        """Roots of one kind (the same phases and lanes) conflict with the same roots: the
        kind of each item (-1 for views), per kind the kinds whose items it conflicts with
        (so that pairs are tested once per pair of kinds), and per kind its roots as a bit
        mask. Built only when first fit or the search needs it."""
        inst = self.inst
        kinds = inst.kinds
        number = {key: k for k, key in enumerate(kinds)}
        if inst.plain:  # every item is a root
            kind_of = list(map(number.__getitem__, inst.keys))
        else:
            kind_of = [number.get(key, -1) for key in inst.keys]
        blocking = [
            [number[other] for other in kinds if live & other[0] and lanes & other[1]]
            for live, lanes in kinds
        ]
        return kind_of, blocking, list(kinds.values())

    @functools.cached_property
    def conflict_mask(self) -> list[int]:
        """Per root, the roots it conflicts with, as a bit mask (0 for views): the members of
        the kinds its kind meets, itself excepted. About linear in the items when the kinds
        are few; built only when first fit or the search needs it."""
        kind_of, blocking, members = self.kind_table
        reach = [0] * len(blocking)
        for k, others in enumerate(blocking):
            for other in others:
                reach[k] |= members[other]
        masks = [0] * len(kind_of)
        for r in self.inst.roots:
            masks[r] = reach[kind_of[r]] & ~(1 << r)
        return masks

    def _prepare(self) -> None:
        """What only the search reads: the classes of cells each item covers, each item's
        fixed obstacles sorted by start, identical items, and a bit no item has."""
        n = len(self.length)
        cells: list[list[int]] = [[] for _ in range(n)]  # the classes of cells each item covers
        for k, members in enumerate(self.classes):
            for r in members:
                cells[r].append(k)
        self.cells = [tuple(c) for c in cells]
        solid = _bit_mask(r for r in self.fixed if self.length[r])
        self.obstacles = [
            sorted((self.fixed[b], self.fixed[b] + self.length[b])
                   for b in _bits(self.conflict_mask[r] & solid))
            for r in range(n)
        ] if solid else [[]] * n  # fmt: skip
        self.residue = [0] * n  # slots are multiples of the alignment (*from the top*: not)
        self.twin_before = self._twins()
        self.none = n  # a bit no item has
        # per clique, its members and the alignments (largest first) for which one of them
        # is *coarse* (aligned to it, its size a multiple of it): the moduli of the padding
        # bound, found when a state first needs them
        steps = sorted({a for a in self.align if a > 1}, reverse=True)
        self.coarse_for = [
            [g for g in steps if self.align[r] >= g and not self.length[r] % g] for r in range(n)
        ]
        self.step_max = steps[0] if steps else 0
        self.moduli: list[list[int] | None] = [None] * len(self.cliques or ())
        self.clique_members: dict[int, list[int]] = {}

    def find_cliques(self) -> None:
        """The maximal cliques (once), and the node budget they set."""
        if self.cliques is None:
            self.cliques = self._cliques()
            self.member_of: list[list[int]] = [[] for _ in self.length]  # cliques per item
            for c, clique in enumerate(self.cliques):
                for r in _bits(clique):
                    self.member_of[r].append(c)
            cost = len(self.free) * (len(self.cliques) + 1)  # the work per node grows with both
            self.node_limit = self.node_limit * NODE_COST // max(NODE_COST, cost)
            self.top_limit = self.top_limit * NODE_COST // max(NODE_COST, cost)

    def _twins(self) -> dict[int, int]:
        """For each free item, the previous free item identical to it (placed first)."""
        inst = self.inst
        seen: dict[tuple[int, int, int, int], int] = {}
        before: dict[int, int] = {}
        for r in self.free:
            key = (self.length[r], self.align[r], inst.pack_live[r], inst.pack_lanes[r])
            if key in seen:
                before[r] = seen[key]
            seen[key] = r
        return before

    def _cliques(self) -> list[int]:
        """Bit masks of the maximal sets of pairwise conflicting free items (Bron-Kerbosch
        with pivoting). There can be 3^(n/3) of them, so the enumeration stops after
        ``CLIQUE_LIMIT`` steps; the cliques found so far and every class of cells (each a
        set of pairwise conflicting items) then stand in for the rest: any sets of pairwise
        conflicting items give valid bounds, only weaker ones."""
        free = _bit_mask(self.free)
        adj = [m & free for m in self.conflict_mask]
        found: list[int] = []
        steps = 0

        def extend(clique: int, cand: int, done: int) -> bool:
            nonlocal steps
            steps += 1
            if steps > CLIQUE_LIMIT:
                return False
            if not cand and not done:
                found.append(clique)
                return True
            pivot = max(_bits(cand | done), key=lambda r: (adj[r] & cand).bit_count())
            for r in _bits(cand & ~adj[pivot]):
                if not extend(clique | 1 << r, cand & adj[r], done & adj[r]):
                    return False
                cand &= ~(1 << r)
                done |= 1 << r
            return True

        if free and not extend(0, free, 0):
            cells = {_bit_mask(c) & free for c in self.classes} - {0}
            found.extend(sorted(cells - set(found)))
        return found

    def first_fit(self, order: Sequence[int]) -> dict[int, int]:
        """Each item of ``order`` in turn at its lowest position: the lowest multiple of its
        alignment clear of every placed item it conflicts with."""
        if len(self.kind_table[1]) ** 2 <= len(order) and not any(
            self.length[r] or x for r, x in self.fixed.items()
        ):
            return self._first_fit_by_kind(order)
        offsets = dict(self.fixed)
        placed = sorted((x, x + self.length[r], r) for r, x in offsets.items())
        for r in order:
            size, align, mask = self.length[r], self.align[r], self.conflict_mask[r]
            x = 0
            for lo, hi, b in placed:  # by start: one pass suffices (see _clear)
                if lo >= x + size:
                    break
                if x < hi and mask >> b & 1:
                    x = -(-hi // align) * align
            offsets[r] = x
            insort(placed, (x, x + size, r))
        return offsets

    def _first_fit_by_kind(self, order: Sequence[int]) -> dict[int, int]:
        """:meth:`first_fit` for few kinds of items (same phases and lanes) and nothing fixed
        that blocks (only empty items at 0). The positions taken by each group of kinds (see
        :meth:`_groups`) are kept as sorted disjoint runs, so an item looks only at the runs
        of the groups it conflicts with, one bisection each, until a pass moves it no more:
        about ``n log n`` for kernel-like pools, where scanning every placed item is ``n^2``.
        An item that meets one group only (every item, when all conflict) needs no second pass:
        moved above a run, it bisects the runs after it."""
        offsets = dict(self.fixed)
        group_of, group_meets = self._groups()
        # per group, the starts and ends of its runs, and the pairs of those lists it meets
        runs: list[tuple[list[int], list[int]]] = [([], []) for _ in group_meets]
        meets = [[runs[g] for g in others] for others in group_meets]
        length, align_of, kind_of = self.length, self.align, self.kind_table[0]
        for r in order:
            size, align, group = length[r], align_of[r], group_of[kind_of[r]]
            x, lists = 0, meets[group]
            if len(lists) == 1:
                starts, ends = lists[0]
                i, count = bisect_right(ends, 0), len(ends)  # the first run ending above x
                while i < count and starts[i] < x + size:
                    x = -(-ends[i] // align) * align
                    i = bisect_right(ends, x, i + 1)
            else:
                moved = True
                while moved:
                    moved = False
                    for starts, ends in lists:
                        i = bisect_right(ends, x)  # the first run ending above x
                        if i < len(ends) and starts[i] < x + size:
                            x, moved = -(-ends[i] // align) * align, True
            offsets[r] = x
            starts, ends = runs[group]
            end = x + size
            lo, hi = bisect_left(ends, x), bisect_right(starts, end)
            if hi == lo + 1:  # it touches one run: that run grows
                if x < starts[lo]:
                    starts[lo] = x
                if end > ends[lo]:
                    ends[lo] = end
            elif lo < hi:  # merged with the runs it touches
                starts[lo:hi], ends[lo:hi] = [min(x, starts[lo])], [max(end, ends[hi - 1])]
            else:
                starts.insert(lo, x)
                ends.insert(lo, end)
        return offsets

    def _groups(self) -> tuple[list[int], list[list[int]]]:
        """Kinds that conflict with themselves and with the same kinds block exactly the same
        items, so first fit keeps their positions in one list of runs: the group of each kind
        and, per group, the groups it conflicts with. A kernel's SMEM pool whose buffers are
        live in the mainloop or throughout is one group (every pair conflicts)."""
        blocking = self.kind_table[1]
        number: dict[tuple[int, ...], int] = {}
        group_of = []
        for k, others in enumerate(blocking):
            key = tuple(others) if k in others else (-1 - k,)  # alone if it meets itself not
            group_of.append(number.setdefault(key, len(number)))
        group_meets: list[list[int]] = [[] for _ in number]
        for k, others in enumerate(blocking):
            if not group_meets[group_of[k]]:
                group_meets[group_of[k]] = sorted({group_of[o] for o in others})
        return group_of, group_meets

    def footprint(self, offsets: dict[int, int]) -> int:
        return max(map(add, offsets.values(), map(self.length.__getitem__, offsets)), default=0)

    def class_bound(self) -> int:
        """The heaviest class of cells (its free items lie one above another), or the end of
        the fixed items: no larger than the clique bound, and found without the cliques."""
        if self.fixed_end:  # fixed items of some size: only the free ones count
            weight = max((sum(self.length[r] for r in c if r not in self.fixed)
                          for c in self.classes), default=0)  # fmt: skip
        else:  # only empty items are fixed
            weight = max(self.weights, default=0)
        return max(weight, self.fixed_end)

    def clique_bound(self) -> int:
        """The heaviest set of pairwise conflicting items: they lie one above another."""
        self.find_cliques()
        assert self.cliques is not None
        weight = max(
            (sum(self.length[r] for r in _bits(c)) for c in self.cliques),
            default=0,
        )
        return max(weight, self.fixed_end)

    def run(self, incumbent: dict[int, int], bound: int) -> dict[int, int]:
        """The best placement found from ``incumbent``; ``bound``: the clique bound."""
        self.best = incumbent
        self.best_end = self.footprint(incumbent)
        self.bound = bound
        self.path: list[tuple[int, int]] = []
        self.seen: dict[int, list[tuple[int, ...]]] = {}
        if self.best_end > self.bound:
            self._prepare()
            if self.seconds is not None:  # the clock is read only when a search runs
                self.deadline = time.thread_time() + self.seconds
            unplaced = sum(1 << r for r in self.free)
            start = (0,) * len(self.classes)
            # first a placement that meets the bound, pruning every state that cannot
            # (*tight first*), unless the search from the top shows there is none; only
            # when there is none, any placement better than the incumbent
            self.free_mask = unplaced
            self.best_end = self.bound + 1
            if self.lift and not self.fixed_end and self.inst.plain:
                self.lifts = self._lifted_bounds()
            self._dfs(unplaced, start, self.fixed_end)
            while self.best_end > self.bound and self.complete:
                # nothing meets the bound; if a relaxation shows nothing lies below a higher
                # one, the incumbent is optimal when it meets that, else the tight search
                # runs again at that bound (*lifted bound*)
                self._lift()
                if self.lifted <= self.bound:
                    break
                if self.lifted >= self.footprint(incumbent):
                    self.best, self.bound = incumbent, self.footprint(incumbent)
                    self.best_end = self.bound
                    break
                self.bound, self.best_end, self.seen = self.lifted, self.lifted + 1, {}
                self.given_up, self.next_check = False, self.nodes + TOP_AFTER
                self._dfs(unplaced, start, self.fixed_end)
            if self.best_end > self.bound:
                self.best, self.best_end, self.seen = incumbent, self.footprint(incumbent), {}
                self.proving, self.given_up = True, False  # each new best is tried from the top
                self.next_check = TOP_AFTER if self.nodes < TOP_AFTER else 1 << 62
                if self.complete and not self._refuted(self.best_end - 1, self.top_limit):
                    self._dfs(unplaced, start, self.fixed_end)
        return self.best

    def _checkpoint(self) -> None:
        """Once the search has visited ``TOP_AFTER`` nodes: try to show from the top, in at
        most ``TOP_LIMIT`` nodes (scaled as the budget is), that what it looks for does not
        exist (a placement meeting the clique bound in the tight search; one below the
        best found in the ordinary search). If so, the tight search is given up, or the
        ordinary one ends with its best. In the ordinary search each new best is tried so
        too. Before that, relaxations until one shows more than the bound (*lifted bound*):
        such a bound gives up the tight search, and in the ordinary search it becomes the
        bound at which the search stops."""
        self.next_check = 1 << 62
        self._lift()
        if not self.proving:
            self.given_up = self.lifted > self.bound or self._refuted(self.bound, self.top_limit)
        elif self.lifted >= self.best_end or self._refuted(self.best_end - 1, self.top_limit):
            self.bound = self.best_end
        elif self.lifted > self.bound:
            self.bound = self.lifted

    def _lift(self) -> None:
        """Searches relaxations until one shows a bound above the current one (kept in
        ``lifted``) or none is left; none before the search has visited ``TOP_AFTER`` nodes."""
        if self.lifted > self.bound or self.nodes < TOP_AFTER:
            return
        for value in self.lifts:
            if value > self.lifted:
                self.lifted = value
                if value > self.bound:
                    return

    def _lifted_bounds(self) -> Iterator[int]:
        """Lower bounds on the footprint from relaxations (the module docstring, *lifted
        bound*), one per relaxation searched to the end. With K the heaviest clique, the
        items outside it are taken in order of the members of K they do not conflict with
        (fewest first); the members met so far are N, and each relaxation keeps K and the
        items outside K that conflict with every member of K outside N, then cuts the items
        that conflict with every other item. Only those left with at most two thirds of the
        free items are searched, each within what is left of ``LIFT_LIMIT`` nodes (never
        past this search's budget); the first not finished ends the tries, and so does a
        bound that reaches the incumbent."""
        length, conflicts = self.length, self.conflict_mask
        assert self.cliques is not None
        heaviest = max(self.cliques, key=lambda c: sum(map(length.__getitem__, _bits(c))))
        room = {r: heaviest & ~conflicts[r] for r in self.free if not heaviest >> r & 1}
        outside = sorted(room, key=lambda r: (room[r].bit_count(), -length[r], r))
        budget = min(LIFT_LIMIT, self.node_limit - self.nodes)
        enough = self.footprint(self.best)  # the incumbent: no bound can pass it
        best, near, tried = 0, 0, set()
        for r in outside:
            near |= room[r]
            keep = self.free_mask & ~_bit_mask(q for q in outside if room[q] & ~near)
            if keep in tried:
                continue
            tried.add(keep)
            sizes, cut = self._cut(keep)
            if 3 * len(sizes) > 2 * len(self.free):  # too close to the instance itself
                continue
            packing = _pack(self._relaxed(sizes), budget, None, lift=False)
            self.nodes += min(packing.nodes, budget)
            budget -= packing.nodes
            if not packing.exact:
                return
            best = max(best, packing.footprint + cut)
            yield best
            if best >= enough or budget <= 0:
                return

    def _cut(self, keep: int) -> tuple[dict[int, int], int]:
        """The items of ``keep`` (a bit mask) with every item that conflicts with all the
        others cut down by the largest multiple of the largest alignment that it holds,
        repeated while anything is cut (items cut to nothing are dropped): their sizes, and
        the bytes cut (the module docstring, *lifted bound*)."""
        sizes = {r: self.length[r] for r in _bits(keep)}
        cut, conflicts = 0, self.conflict_mask
        while True:
            rest = _bit_mask(sizes)
            step = max(map(self.align.__getitem__, sizes))
            gained = 0
            for r in list(sizes):
                if rest & ~conflicts[r] == 1 << r:  # conflicts with every other item
                    whole = sizes[r] // step * step
                    gained += whole
                    if whole == sizes[r]:
                        del sizes[r]
                    else:
                        sizes[r] -= whole
            if not gained or not sizes:
                return sizes, cut + gained
            cut += gained

    def _relaxed(self, sizes: dict[int, int]) -> _Instance:
        """The working form of the items ``sizes`` names, with those sizes."""
        inst = self.inst
        columns = (
            [inst.names[r] for r in sizes],
            list(sizes.values()),
            [self.align[r] for r in sizes],
            [inst.phase_sets[r] for r in sizes],
            [inst.lane_sets[r] for r in sizes],
        )
        return _Instance.of_columns(*columns, inst.phases)

    def _refuted(self, limit: int, budget: int) -> bool:
        """True if no placement of the free items ends at or below ``limit``, shown by the
        search from the top (the module docstring, *from the top*) in at most ``budget``
        nodes (never past what is left of this search's). False when it finds such a
        placement or cannot tell. Tried only when nothing of any size is fixed."""
        if limit < self.bound:  # below the clique bound
            return True
        if self.fixed_end or limit >= self.reached_at or self.nodes < TOP_AFTER:
            return False
        if limit <= self.refuted_to:  # at or below a limit refuted already
            return True
        if limit in self.tried:  # the search from the top could not tell
            return False
        self.tried.add(limit)
        budget = min(budget, self.node_limit - self.nodes)
        if budget <= 0:
            return False
        top = _TopDown(self, limit, budget)
        top._dfs(self.free_mask, (0,) * len(self.classes), 0)
        self.nodes += min(top.nodes, budget)  # its nodes count against this search's budget
        if top.nodes > budget:
            return False
        if not top.complete:  # the clock: this search stops too
            self.complete = False
            return False
        if top.best_end <= limit:
            self.reached_at = top.best_end
            return False
        self.refuted_to = limit
        return True

    def _slots(self, unplaced: int, heights: tuple[int, ...]) -> dict[int, int]:
        """Where each waiting item goes next, its skyline slot: the lowest position at or
        above the heights of its cells that is congruent to its ``residue`` modulo its
        alignment (0 here: a multiple of it; the search from the top sets its own), clear of
        the fixed items (none from the top). Items over the same cells share the skyline
        under them, which is found once."""
        under: dict[tuple[int, ...], int] = {}
        slot = {}
        cells, align, residue, obstacles = self.cells, self.align, self.residue, self.obstacles
        rest = unplaced
        while rest:  # the set bits, lowest first (as _bits, without the list)
            low = rest & -rest
            rest ^= low
            r = low.bit_length() - 1
            over = cells[r]
            base = under.get(over)
            if base is None:
                base = 0
                for k in over:
                    if heights[k] > base:
                        base = heights[k]
                under[over] = base
            step = align[r]
            x = base + (residue[r] - base) % step
            slot[r] = _clear(obstacles[r], x, self.length[r], step) if obstacles[r] else x
        return slot

    def _dominated(self, unplaced: int, key: tuple[int, ...]) -> bool:
        """True if this state, or one at most as high everywhere, was searched already: ``key``
        is the highest end so far and the slots of the waiting items, lowest item first (the
        module docstring, *dominated*)."""
        known = self.seen.setdefault(unplaced, [])
        for other in known:
            if all(map(le, other, key)):
                return True
        known.append(key)
        return False

    def _dfs(self, unplaced: int, heights: tuple[int, ...], top: int) -> None:
        """Search from the state: ``unplaced`` items, the classes' ``heights`` and ``top``,
        the highest end placed so far (the fixed items' included)."""
        self.nodes += 1
        if self.nodes > self.node_limit or (
            not self.nodes % CHECK_EVERY
            and self.deadline is not None
            and time.thread_time() > self.deadline
        ):
            self.complete = False
            return
        if self.nodes >= self.next_check:
            self._checkpoint()
            if self.given_up or self.best_end <= self.bound:
                return
        if not unplaced:
            if top < self.best_end:
                self.best = {**self.fixed, **dict(self.path)}
                self.best_end = top
                if self.proving and self._refuted(top - 1, self.top_limit):
                    self.bound = top  # nothing is smaller: the search stops here
            return
        slot = self._slots(unplaced, heights)
        if self._dominated(unplaced, (top, *slot.values())):
            return
        if self._state_bound(slot, self.best_end) >= self.best_end:
            return
        # an item going at or above the end of another waiting item's slot leaves that
        # item's whole range free below it: the order placing that item first does at least
        # as well (the module docstring, *exchange*), so such children are not tried
        low_end = min(x + self.length[r] for r, x in slot.items())
        children = sorted(
            (x, -self.align[r], -self.length[r], r)
            for r, x in slot.items()
            if x < low_end
            and not unplaced >> self.twin_before.get(r, self.none) & 1  # identical items in order
        )
        for x, _, _, r in children:
            end = x + self.length[r]
            if end >= self.best_end:  # every completion through this child reaches ``end``
                continue
            raised = [h if h > x else x for h in heights]  # later items go at or above x
            for k in self.cells[r]:
                raised[k] = end
            self.path.append((r, x))
            self._dfs(unplaced & ~(1 << r), tuple(raised), max(top, end))
            self.path.pop()
            if self.best_end <= self.bound or not self.complete or self.given_up:
                return

    def _state_bound(self, slot: dict[int, int], enough: int) -> int:
        """A footprint no completion of this state can beat.

        The waiting items of a clique of conflicts lie one above another, each at or above
        its slot; so for every slot value t the ones whose slots are at or above t end at
        or above t plus their total size (one machine with release dates). Every class of
        cells lies inside a maximal clique, and every item in one. One pass over the
        waiting items from the highest slot down serves every clique at once (equal slots
        in any order: the largest sum over them is reached after the last). Stops once the
        bound reaches ``enough``, where the state is pruned anyway.
        """
        best = 0
        above = [0] * len(self.cliques or ())
        low = above[:]  # per clique, the lowest slot of its waiting items
        length, member_of = self.length, self.member_of
        for x, r in sorted([(x, r) for r, x in slot.items()], reverse=True):
            size, top = length[r], 0
            for c in member_of[r]:
                total = above[c] = above[c] + size
                low[c] = x
                if total > top:
                    top = total
            top += x
            if top > best:
                best = top
                if best >= enough:
                    return best
        reach = enough - self.step_max  # the padding adds less than the largest alignment
        near = [(low[c] + total, c) for c, total in enumerate(above) if low[c] + total > reach]
        if len(near) > PADDED_CLIQUES:  # the tightest few: most prunes, bounded work
            near = sorted(near, reverse=True)[:PADDED_CLIQUES]
        for _, c in near:
            padded = self._padded(c, slot, low[c], above[c], enough)
            if padded > best:
                best = padded
                if best >= enough:
                    return best
        return best

    def _padded(self, c: int, slot: dict[int, int], start: int, total: int, enough: int) -> int:
        """The bound of clique ``c`` with the padding its alignments force (*padding*, the
        module docstring): its waiting items lie at or above ``start`` (their lowest slot)
        and weigh ``total``. For a modulus g, the lowest item that is aligned to g with a
        size a multiple of g starts on a multiple of g (from the top: congruent to the
        limit), and only the other items lie below it, so the padding under it is at least
        the least distance from ``start`` plus the sizes of some set of those items up to
        such a start. The residues reached are kept as the bits of an int (bit x: residue
        x); moduli that cannot reach ``enough`` are skipped."""
        moduli = self.moduli[c]
        members = self._members(c)
        if moduli is None:
            coarse_for = self.coarse_for
            moduli = self.moduli[c] = sorted({g for r in members for g in coarse_for[r]},
                                             reverse=True)  # fmt: skip
        best = start + total
        length, align = self.length, self.align
        waiting = [r for r in members if r in slot]
        for g in moduli:
            if start + total + g <= enough:
                break  # (smaller moduli pad less)
            full = (1 << g) - 1
            reach = 1 << (start - self.zero) % g  # start plus sizes below, less the residue
            coarse = False
            for r in waiting:
                rest = length[r] % g
                if not rest:
                    coarse = coarse or align[r] >= g
                elif not reach & 1:  # (once 0 is reached nothing pads)
                    reach |= (reach << rest | reach >> (g - rest)) & full
            if coarse and not reach & 1:
                padded = start + total + g - (reach.bit_length() - 1)
                if padded > best:
                    best = padded
                    if best >= enough:
                        return best
        return best

    def _members(self, c: int) -> list[int]:
        """The items of clique ``c``, lowest first (kept once found)."""
        found = self.clique_members.get(c)
        if found is None:
            found = self.clique_members[c] = _bits(self.cliques[c])  # type: ignore[index]
        return found


class _TopDown(_Search):
    """The search of a placement ending at or below ``limit``, from the top: offsets are
    measured down from ``limit`` (an item at ``y`` lies at ``limit - y - length``), so an
    item's slot is the lowest ``y`` at or above the heights of its cells that is congruent
    to ``limit - length`` modulo its alignment. Nothing of any size is fixed. It shares the
    classes, cliques and identical items of the search it serves (see the module docstring,
    *from the top*)."""

    def __init__(self, search: _Search, limit: int, budget: int):  # shares the search's state
        self.__dict__.update(search.__dict__)
        self.residue = [(limit - n) % a for n, a in zip(self.length, self.align)]
        self.zero = limit  # an item of a size multiple of g starts congruent to it modulo g
        self.node_limit, self.nodes, self.complete = budget, 0, True
        self.best, self.best_end, self.bound = {}, limit + 1, limit
        self.path, self.seen, self.proving = [], {}, False
        self.next_check = 1 << 62  # (no search from the top within one)
        self.given_up = False


def _clear(spans: Sequence[tuple[int, int]], x: int, size: int, align: int) -> int:
    """The lowest multiple of ``align`` >= x (itself aligned) whose ``[x, x + size)`` misses
    every span. ``spans`` are sorted by start, so one pass suffices: x only moves up, so a
    span passed below x stays clear; a span passed above ``x + size`` is followed only by
    spans that start no lower, so x moves no more."""
    for lo, hi in spans:
        if lo < x + size and x < hi:
            x = align_up(hi, align)
    return x


def lower_bound(items: Sequence[Item], phases: Sequence[str] | None = None) -> int:
    """Max over phases (and TMEM lane groups) of the total size of the roots live there."""
    return _lower_bound(_Instance(items, phases))


def _lower_bound(inst: _Instance) -> int:
    return _class_bound(inst, inst.cell_classes())


def _class_bound(inst: _Instance, classes: list[list[int]]) -> int:
    return max((sum(inst.items[r].length for r in c) for c in classes), default=0)


def _bit_mask(indices: Iterable[int]) -> int:
    """The int with bits ``indices`` set (distinct indices): built through bytes, so linear
    in the highest index rather than quadratic."""
    chosen = list(indices)
    if len(chosen) < 64 or min(chosen) < 0:  # (a negative shift raises, as it should)
        return sum(1 << i for i in chosen)
    raw = bytearray(max(chosen) // 8 + 1)
    for i in chosen:
        raw[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(raw, "little")


_LANE_MASKS: dict[int, tuple[frozenset[int], int]] = {}  # id(lane set) -> (the set, its mask)
LANE_MASKS_KEPT = 1024


def _lane_mask(lanes: frozenset[int]) -> int:
    """The bit mask of a lane set, kept per set object: pools keep a lane set per layout, so
    the same objects recur, while looking up an equal set of 128 lanes made elsewhere
    compares them lane by lane. The entry holds the set, so its id is not reused."""
    hit = _LANE_MASKS.get(id(lanes))
    if hit is not None and hit[0] is lanes:
        return hit[1]
    mask = _bit_mask(lanes)
    if len(_LANE_MASKS) >= LANE_MASKS_KEPT:
        _LANE_MASKS.clear()
    _LANE_MASKS[id(lanes)] = (lanes, mask)
    return mask


def _union(masks: Iterable[int]) -> int:
    """The bitwise or of ``masks`` (0 for none)."""
    total = 0
    for mask in masks:
        total |= mask
    return total


def _bits(mask: int) -> list[int]:
    """The indices of the set bits of ``mask`` (>= 0), lowest first: found in its binary
    digits, lowest first, one search per set bit."""
    digits = bin(mask)[:1:-1]
    found = []
    i = digits.find("1")
    while i >= 0:
        found.append(i)
        i = digits.find("1", i + 1)
    return found


def pack(
    items: Sequence[Item],
    phases: Sequence[str] | None = None,
    *,
    node_limit: int = NODE_LIMIT,
    seconds: float | None = SEARCH_SECONDS,
) -> Packing:
    """Offsets for ``items`` with conflicting items disjoint and the footprint minimal.

    See the module docstring for the algorithm and its guarantee. ``phases`` orders the
    phase names (default: the names the items use, sorted). ``node_limit`` bounds the
    search; a pool whose nodes cost more (more than ``NODE_COST`` items x (cliques + 1))
    gets proportionally fewer, so the planning time stays about the same. ``seconds``
    bounds the CPU time of the search (this thread's, from its first node; the set-up
    before it is bounded by ``CLIQUE_LIMIT`` and the five first-fit orders): a search
    still running then stops at the next check (every ``CHECK_EVERY`` nodes) with the
    best placement found, and ``exact`` says whether it is proven. Where the time limit
    ends a search the result depends on the machine's speed; ``seconds=None`` leaves only
    ``node_limit``, so the same items always give the same offsets.
    """
    seconds = _check_seconds(seconds)
    return _pack(_Instance(items, phases), node_limit, seconds)


def pack_checked(
    items: Sequence[Item],
    phases: Sequence[str] | None = None,
    *,
    node_limit: int = NODE_LIMIT,
    seconds: float | None = SEARCH_SECONDS,
) -> tuple[Packing, list[Overlap]]:
    """:func:`pack` and :func:`conflicts` of its offsets, from one working form of the items
    (what a pool does at commit). Only items placed by hand (a fixed ``offset``, or a view
    of another) can conflict: the packer keeps every other pair that conflicts apart."""
    seconds = _check_seconds(seconds)
    inst = _Instance(items, phases)
    packing = _pack(inst, node_limit, seconds)
    by_hand = not inst.plain and any(
        it.offset is not None or it.alias_of is not None for it in inst.items
    )
    return packing, _conflicts(inst, packing.offsets) if by_hand else []


def pack_columns(
    names: list[str],
    lengths: list[int],
    aligns: list[int],
    lives: list[frozenset[str] | None],
    lanes: list[frozenset[int] | None],
    phases: Sequence[str],
    *,
    node_limit: int = NODE_LIMIT,
    seconds: float | None = SEARCH_SECONDS,
) -> Packing:
    """:func:`pack` of items with no view and nothing fixed, given column by column: the
    same result as ``pack([Item(*row) for row in zip(names, lengths, aligns, lives,
    lanes)], phases)`` without making the items. What a pool does at commit when no buffer
    is placed by hand (nothing can then overlap while live together: no alias check)."""
    seconds = _check_seconds(seconds)
    inst = _Instance.of_columns(names, lengths, aligns, lives, lanes, phases)
    return _pack(inst, node_limit, seconds)


def _check_seconds(seconds: float | None) -> float | None:
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0
    ):
        raise AllocationError(f"seconds must be a number > 0 or None, got {seconds!r}")
    return seconds


def _pack(inst: _Instance, node_limit: int, seconds: float | None, lift: bool = True) -> Packing:
    classes = inst.cell_classes()
    search = _Search(inst, node_limit, classes)
    search.seconds = seconds
    search.lift = lift  # (the searches of relaxations try none of their own)
    bump_at, free_end = {}, 0  # bump placement of the free items in allocation order
    length, align = search.length, search.align
    for r in search.free:
        step = align[r]
        bump_at[r] = x = -(-free_end // step) * step
        free_end = x + length[r]
    bound = search.class_bound()  # no placement is smaller: an order meeting it ends the work
    if free_end == bound and not search.fixed_end:  # bump placement is first fit (*set-up cost*)
        alloc_order = {**search.fixed, **bump_at}
    else:
        alloc_order = search.first_fit(search.free)
    best, best_end = alloc_order, search.footprint(alloc_order)
    first_fit = best_end
    if best_end > bound:
        bound = search.clique_bound()
        size, align, live = search.length, search.align, inst.pack_live
        orders = (
            lambda r: (-size[r], -align[r], r),
            lambda r: (-align[r], -size[r], r),
            lambda r: (-live[r].bit_count(), -align[r], -size[r], r),
            lambda r: ((live[r] & -live[r]).bit_length(), -align[r], -size[r], r),
        )
        for key in orders:  # the first order of least footprint; none beats the bound
            if best_end <= bound:
                break
            candidate = search.first_fit(sorted(search.free, key=key))
            end = search.footprint(candidate)
            if end < best_end:
                best, best_end = candidate, end
        best = search.run(best, search.clique_bound())
        best_end = search.footprint(best)
    footprint = best_end
    if inst.plain:  # every item is a root
        offsets = tuple(map(best.__getitem__, range(len(search.length))))
    else:
        offsets = tuple(best[inst.root[n]] + inst.inner[n] for n in range(len(inst.items)))
    return Packing(
        offsets=offsets,
        footprint=footprint,
        lower_bound=max(search.weights, default=0),
        bump=max(free_end, search.fixed_end),
        first_fit=first_fit,
        exact=search.complete or footprint <= bound,
        nodes=search.nodes,
    )


def conflicts(
    items: Sequence[Item], offsets: Sequence[int], phases: Sequence[str] | None = None
) -> list[Overlap]:
    """Pairs that share positions (TMEM: lanes too) and a phase; a view is exempt from its
    ancestors only. Offsets are absolute, in item order."""
    return _conflicts(_Instance(items, phases), offsets)


def _conflicts(inst: _Instance, offsets: Sequence[int]) -> list[Overlap]:
    ranges = [(x, x + it.length) for x, it in zip(offsets, inst.items)]
    found = []
    for a, b in overlapping_index_pairs(ranges):
        overlap = _overlap(inst, offsets, a, b)
        if overlap is not None:
            found.append(overlap)
    return found


def _ancestor(inst: _Instance, a: int, b: int) -> bool:
    n: int | None = b
    while n is not None:
        n = inst.parent[n]
        if n == a:
            return True
    return False


def _overlap(inst: _Instance, offsets: Sequence[int], a: int, b: int) -> Overlap | None:
    shared_live, shared_lanes = inst.live[a] & inst.live[b], inst.lanes[a] & inst.lanes[b]
    start = max(offsets[a], offsets[b])
    end = min(offsets[a] + inst.items[a].length, offsets[b] + inst.items[b].length)
    if not (shared_live and shared_lanes and start < end):
        return None
    if _ancestor(inst, a, b) or _ancestor(inst, b, a):
        return None
    names = inst.phases or ("(all)",)
    lanes = None
    if shared_lanes != ALL_LANES:
        lanes = ((shared_lanes & -shared_lanes).bit_length() - 1, shared_lanes.bit_length() - 1)
    return Overlap(
        inst.items[a].name,
        inst.items[b].name,
        tuple(p for i, p in enumerate(names) if shared_live >> i & 1),
        start,
        end,
        lanes,
    )
