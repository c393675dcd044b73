"""Lifetimes in pools (docs/DESIGN.md#lifetimes): phases, ``live=``, ``alias_of=`` views, explicit
offsets, packing at commit and the alias check.

A pool made with ``phases=`` places its buffers at ``commit()`` with
:func:`tilemem.plan.lifetimes.pack` (its columns as they are, ``pack_columns``, when no buffer is
placed by hand); until then they have no offset. A pool that also uses
``move_base_to`` keeps every buffer where the cursor put it and only checks the overlays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from ..errors import AliasError, AlignmentError, AllocationError
from ..plan.lifetimes import Item, Overlap, Packing, pack_checked, pack_columns
from ..validate import check_int, check_name
from .buffer import Buffer

Lifetime = tuple[frozenset[str] | None, Buffer | None, int | None]  # live, alias_of, offset
# Where a pool puts a buffer, in its unit: (offset, length, align, padding), the fields of
# tilemem.plan.packing.Placement. A pool keeps one per buffer, as a plain tuple: one small
# object (that the cyclic GC stops tracking) where a dataclass instance is two.
Spot = tuple[int, int, int, int]
_NO_LIFETIME: Lifetime = (None, None, None)


def check_phases(phases) -> tuple[str, ...] | None:
    """``phases`` as a tuple of distinct names in program order, or None."""
    if phases is None:
        return None
    if isinstance(phases, str) or not hasattr(phases, "__iter__"):
        raise AllocationError(
            f"phases must be a sequence of phase names in program order, got {phases!r}"
        )
    if isinstance(phases, AbstractSet | Mapping):
        raise AllocationError(
            f"phases={phases!r} has no order, but phases run in program order (a set iterates "
            "in a hash-dependent order): pass a list or tuple, e.g. ('mainloop', 'epilogue')"
        )
    names = tuple(check_name(p, "phase name") for p in phases)
    if not names or len(set(names)) != len(names):
        raise AllocationError(f"phases must name at least one phase, each once, got {names}")
    return names


class LifetimePool:
    """Lifetime bookkeeping of a pool (mixed into SMEMPool and TMEMPool)."""

    name: str
    phases: tuple[str, ...] | None
    _buffers: list[Buffer]
    _moves: list[tuple[int, int]]
    _cursor: int
    _high_water: int

    def _init_lifetimes(self, phases: tuple[str, ...] | None) -> None:
        """``phases`` as :func:`check_phases` answered it: the pools check their arguments
        before any state is set, and the answer is not checked twice."""
        self.phases = phases
        # each phase name -> the live set of that phase alone (``live="mainloop"``)
        self._single = {p: frozenset((p,)) for p in self.phases or ()}
        self._lifetimes: list[Lifetime] = []
        self._by_hand = False  # a buffer placed by hand (a view or an offset=)
        self._packing: Packing | None = None
        self._provisional: Packing | None = None  # the latest packing computed

    @property
    def committed(self) -> bool:
        raise NotImplementedError

    @property
    def places_at_commit(self) -> bool:
        """True while this pool's buffers wait for commit() to get their offsets."""
        return self.phases is not None and not self.committed

    def _high_water_with(self, ends: Iterable[int]) -> int:
        """The high-water mark over placements ending at ``ends``: at least the bump cursor's
        mark in a pool without phases, and in any pool at least the farthest ``move_base_to``
        (``move_base_to(end); commit()`` reserves ``end``, phases or not;
        docs/DESIGN.md#smem-pools)."""
        if self.phases is None:  # every bump placement and every move raised the mark
            return self._high_water
        moved = max((to for _, to in self._moves), default=0)
        return max([moved, *ends])

    def _live_throughout(self, buf: Buffer) -> None:
        """Make ``buf`` live in every phase, whatever ``live=`` it was given: the TMEM address
        slot is written by ``tcgen05.alloc`` before any phase and read by ``tcgen05.dealloc``
        after the last, so nothing may share its bytes. Checked by :meth:`check_live_throughout`."""
        if self.phases is None:
            return
        index = next(i for i, b in enumerate(self._buffers) if b is buf)
        _, parent, offset = self._lifetimes[index]
        self._lifetimes[index] = (None, parent, offset)

    def check_live_throughout(self, buf: Buffer, role: str) -> None:
        """AllocationError when ``buf`` cannot be made live in every phase: it is a view of a
        buffer live in fewer phases (widening the view alone would leave its bytes shared)."""
        if self.phases is None:
            return
        index = next(i for i, b in enumerate(self._buffers) if b is buf)
        parent = self._lifetimes[index][1]
        while parent is not None:
            at = next(i for i, b in enumerate(self._buffers) if b is parent)
            live, above, _ = self._lifetimes[at]
            if live is not None and set(live) != set(self.phases):
                raise AllocationError(
                    f"{role} {buf.name!r} must be live in every phase {list(self.phases)}, but it "
                    f"is a view (alias_of) of {parent.name!r}, live only in "
                    f"{[p for p in self.phases if p in live]}: give it its own bytes"
                )
            parent = above

    def live_phases(self, buf: Buffer) -> tuple[str, ...] | None:
        """The phases ``buf`` is live in, in program order (None in a pool without phases)."""
        if self.phases is None:
            return None
        live = next(lt[0] for b, lt in zip(self._buffers, self._lifetimes) if b is buf)
        return self.phases if live is None else tuple(p for p in self.phases if p in live)

    @property
    def packing(self) -> Packing | None:
        """The committed placement of a pool with phases (footprint, lower bound, bump)."""
        return self._packing

    def _check_lifetime(self, live, alias_of, offset, unit: str) -> Lifetime:
        """Validate ``live=``, ``alias_of=`` and ``offset=`` before any state changes."""
        if live is None and alias_of is None and offset is None:
            return _NO_LIFETIME  # the common case: live throughout, placed by the pool
        live_set = self._single.get(live) if type(live) is str else None  # one known phase
        if live_set is None and live is not None:
            if self.phases is None:
                raise AllocationError(
                    f"live={live!r} needs a pool with phases: pass phases=(...) to the pool "
                    f"{self.name!r} (docs/DESIGN.md#lifetimes)"
                )
            names = [live] if isinstance(live, str) else live
            if isinstance(live, Mapping):
                raise AllocationError(
                    f"live={live!r} is a dict; live takes a phase name or a set of them (the "
                    "phases the buffer is live in), e.g. live={'epilogue'}"
                )
            if not hasattr(names, "__iter__") or isinstance(names, bytes):
                raise AllocationError(f"live must be a phase name or a set of them, got {live!r}")
            names = list(names)
            if not all(isinstance(p, str) for p in names):
                raise AllocationError(f"live names phases by their names (str), got {live!r}")
            live_set = frozenset(names)
            unknown = sorted(str(p) for p in live_set.difference(self._single))
            if not live_set or unknown:
                raise AllocationError(
                    f"live={live!r}: unknown phases {unknown}; pool {self.name!r} has phases "
                    f"{list(self.phases)}"
                    if unknown
                    else f"live= must name at least one phase of {list(self.phases)}"
                )
        if alias_of is not None and (not isinstance(alias_of, Buffer) or alias_of.pool is not self):
            raise AllocationError(
                f"alias_of must be a buffer of pool {self.name!r}, got {alias_of!r}"
            )
        if offset is not None:
            offset = check_int(offset, f"offset ({unit})", minimum=0, maximum=1 << 40)
        return live_set, alias_of, offset

    def _spot(self, size: int, align: int, lifetime: Lifetime, unit: str) -> Spot:
        """Where a new buffer goes before commit: the cursor (bump), inside its parent (a
        view) or at its explicit offset. Raises before any state changes."""
        _, parent, offset = lifetime
        if parent is not None:
            inner = offset or 0
            parent_size = self._size_of(parent)
            if inner + size > parent_size:
                raise AllocationError(
                    f"a view of {parent.name!r} at {unit} [{inner}, {inner + size}) does not "
                    f"fit inside its {parent_size} {unit}: use a smaller view or offset"
                )
            if inner % align:
                raise AlignmentError(
                    f"a view at offset {inner} {unit} inside {parent.name!r} breaks its "
                    f"alignment {align}: use a multiple of {align}"
                )
            start = self._offset_in_pool(parent)  # None: the packer aligns it at commit
            if start is not None and start % align:
                raise AlignmentError(
                    f"a view at offset {inner} {unit} inside {parent.name!r} would start "
                    f"{start + inner} {unit} into the pool, not a multiple of its alignment "
                    f"{align}: allocate {parent.name!r} with align={align}"
                )
            return (inner if start is None else start + inner, size, align, 0)
        if offset is not None:
            if offset % align:
                raise AlignmentError(
                    f"offset={offset} {unit} is not a multiple of the buffer's alignment {align}"
                )
            return (offset, size, align, 0)
        # bump: place() without its argument checks (size and align are the pool's checked
        # ints), the cursor rounded up to a multiple of align
        cursor = self._cursor
        start = -(-cursor // align) * align
        return (start, size, align, start - cursor)

    def _keep(self, buf: Buffer, spot: Spot, lifetime: Lifetime) -> None:
        """Record a buffer: bump placement advances the cursor, views and pins do not."""
        self._lifetimes.append(lifetime)
        self._buffers.append(buf)
        start, length, _, _ = spot
        end = start + length
        if lifetime[1] is None and lifetime[2] is None:
            self._cursor = end
        else:
            self._by_hand = True
        if end > self._high_water:
            self._high_water = end

    def _items(self, sizes: Sequence[int], aligns: Sequence[int], lanes, spots) -> list[Item]:
        """The packer's view of this pool; with move_base_to every buffer stays put."""
        manual = bool(self._moves)
        items = []
        for buf, size, align, lane_set, (start, _, _, _), (live, parent, offset) in zip(
            self._buffers, sizes, aligns, lanes, spots, self._lifetimes
        ):
            if parent is not None:
                fixed = offset or 0
            else:
                fixed = start if manual or offset is not None else None
            items.append(Item(buf.name, size, align, live, lane_set, fixed, parent and parent.name))
        return items

    def _pack(
        self, sizes: Sequence[int], aligns: Sequence[int], lanes, spots, unit: str
    ) -> Packing:
        """Offsets for every buffer; AliasError when fixed buffers overlap while live together.
        Without buffers placed by hand (a view, an offset, a move) the packer takes the
        columns as they are: there are no items to make and no overlays to check."""
        if self._moves or self._by_hand:
            packing, found = pack_checked(self._items(sizes, aligns, lanes, spots), self.phases)
            if found:
                raise AliasError(_alias_message(self.name, found, unit))
        else:
            assert self.phases is not None  # only pools with phases pack by lifetime
            names = [buf.name for buf in self._buffers]
            live = [lifetime[0] for lifetime in self._lifetimes]
            packing = pack_columns(names, list(sizes), list(aligns), live, list(lanes), self.phases)
        self._provisional = packing
        return packing

    def _may_overlap(self) -> bool:
        """Whether two buffers can share positions. Not in a pool without phases, moves or
        buffers placed by hand: each buffer starts at the cursor rounded up, at or above the
        end of the one before it."""
        return self.phases is not None or bool(self._moves) or self._by_hand

    def _lifetime_fields(self) -> list[tuple[tuple[str, ...], str | None]]:
        """Per buffer, the plan's ``phases`` (the phases it is live in, in program order; none
        in a pool without phases) and ``alias_of`` (the parent of a view)."""
        phases = self.phases
        if phases is None and not self._by_hand:  # no phases and no views: the same for all
            return [((), None)] * len(self._lifetimes)
        in_order: dict[frozenset[str], tuple[str, ...]] = {}
        fields = []
        for live, parent, _ in self._lifetimes:
            kept: tuple[str, ...] = ()
            if phases is not None:
                kept = phases if live is None else in_order.get(live, ())
                if live is not None and live not in in_order:
                    kept = in_order[live] = tuple(p for p in phases if p in live)
            fields.append((kept, None if parent is None else parent.name))
        return fields

    def _plan_totals(self, packing: Packing | None) -> dict:
        """The PoolPlan fields of a pool with phases: its phases, lower bound and bump."""
        if self.phases is None or packing is None:
            return {}
        return {"phases": self.phases, "lower_bound": packing.lower_bound, "bump": packing.bump}

    def _size_of(self, buf: Buffer) -> int:
        raise NotImplementedError

    def _offset_in_pool(self, buf: Buffer) -> int | None:
        raise NotImplementedError


def _alias_message(pool: str, found: list[Overlap], unit: str) -> str:
    lines = [f"pool {pool!r}: buffers overlaid by hand are live at the same time:"]
    for o in found:
        lanes = "" if o.lanes is None else f" on lanes {o.lanes[0]}..{o.lanes[1]}"
        lines.append(
            f"  {o.first!r} and {o.second!r} share {unit} [{o.start}, {o.end}){lanes} in "
            f"phases {', '.join(o.phases)}"
        )
    lines.append(
        "give them disjoint live= sets, drop move_base_to/offset= and let commit() place them, "
        "or declare an intended view with alias_of="
    )
    return "\n".join(lines)
