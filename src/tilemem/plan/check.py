"""The rules every plan the pools make satisfies, checked on a plan read from JSON.

``MemoryPlan.from_dict`` rebuilds the dataclasses field by field; :func:`check_plan` then
refuses any plan that tilemem could not have made, naming the rule and where it breaks
(``plan.pools[0].entries[2]: ...``). The rules, as the pools produce plans:

- one SMEM pool first, then the TMEM pools whose address slots it holds; pool and buffer
  names are C++ identifiers, distinct in the plan (one header names them all);
- scopes and units are ``shared.dyn``/``bytes`` or ``tmem``/``cols``; dtypes are known;
  shapes are positive; a layout label matches its kind (``mma 128B`` with swizzle 3);
- SMEM: ``align`` is a power of two at least the dtype's natural alignment, the offset is
  a multiple of it, ``padding`` is below it and at most the offset, a swizzled buffer
  starts on its swizzle period (8 rows of 16 << L bytes), a buffer holds its elements;
- TMEM: columns within 512, lanes sorted runs within 128, align 1, no padding;
- ``overlaps`` lists exactly the entries sharing a position; in a pool with phases, two
  overlapping buffers share no phase (TMEM: or no lane) unless one is a view of the other;
- ``phases`` of an entry are the pool's, in order; ``alias_of`` names an earlier buffer
  that contains the view; ``high_water`` is the furthest end (or ``move_base_to``
  target); ``committed`` holds it and fits the target (TMEM: a power of two in [32, 512],
  512 for all pools of a CTA together);
- a TMEM pool's address slot is a 32-bit SMEM buffer at the recorded offset; stage views
  lie inside their 2-D buffer; padding advice describes the SMEM pool.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ..dtype import DataType, known_dtypes
from ..errors import LayoutError, PlanFileError
from ..intmath import is_power_of_two
from ..layout.smem import SwizzleMode, check_mma_tile
from ..layout.tmem import DATAPATH_ROWS, TMEM_COLS, TMEM_LANES, TMEM_MIN_ALLOC_COLS
from ..scopes import SMEM, TMEM
from ..validate import MAX_ELEMENTS, check_buffer_name, check_name, check_shape
from .cpp_header import stage_names
from .target import TARGETS

if TYPE_CHECKING:
    from .data import PlanData, PlanEntry, PoolPlan

Plan = TypeVar("Plan", bound="PlanData")

UNITS = {SMEM: "bytes", TMEM: "cols"}
MAX_SMEM_BYTES = MAX_ELEMENTS * 8  # the largest buffer a pool accepts: 2**40 elements of 8 B
MAX_WARP = 31  # 1024 threads per block
MAX_TEXT = 1000  # characters of a plan's name or summary
# what each memory's pools label their layouts with (LayoutKind values)
KINDS = {
    SMEM: ("row-major", "strided", "mma", "custom"),
    TMEM: ("datapath", "lane=row", "scale-factor", "custom"),
}
_SWIZZLE_LABELS = {m.label: m for m in SwizzleMode}
_LABEL_RULES = {
    "row-major": re.compile(r"row-major"),
    "lane=row": re.compile(r"lane=row"),
    "strided": re.compile(r"strided \((\d+(?:, \d+)*),?\)"),
    "mma": re.compile(r"mma (none|32B|64B|128B)"),
    "datapath": re.compile(rf"datapath [{''.join(DATAPATH_ROWS)}]"),
    "scale-factor": re.compile(r"sf x[1-9]\d*/mma"),
    "custom": re.compile(r"[ -\[\]-~]*"),  # printable ASCII but the backslash
}


def _fail(path: str, message: str) -> PlanFileError:
    return PlanFileError(f"{path}: {message}")


def check_plan(plan: Plan) -> Plan:
    """``plan`` when every rule of the module docstring holds; PlanFileError naming the first
    rule broken and its path otherwise."""
    _check_text(plan.name, "plan.name", "name")
    _check_text(plan.summary, "plan.summary", "summary")
    if plan.target is not None and plan.target not in TARGETS:
        raise _fail("plan.target", f"unknown target {plan.target!r}; known: {', '.join(TARGETS)}")
    _check_pool_order(plan)
    _check_names(plan)
    for i, pool in enumerate(plan.pools):
        _check_pool(plan, pool, f"plan.pools[{i}]")
    for i, pool in enumerate(plan.tmem, start=1):
        if pool.allocation is not None:
            _check_slot(plan, pool, f"plan.pools[{i}].allocation")
    committed = [(p.name, p.committed) for p in plan.tmem if p.committed is not None]
    if sum(c for _, c in committed) > TMEM_COLS:
        raise _fail(
            "plan.pools",
            f"the TMEM pools {committed} commit {sum(c for _, c in committed)} columns together, "
            f"more than the {TMEM_COLS} of one CTA",
        )
    if plan.advice is not None:
        _check_advice(plan)
    return plan


def _check_text(value: str | None, path: str, what: str) -> None:
    if value is None:
        return
    if not value or len(value) > MAX_TEXT or not value.isprintable():
        raise _fail(
            path,
            f"a plan's {what} is one line of 1 to {MAX_TEXT} printable characters, got "
            f"{value[:80]!r}" + ("..." if len(value) > 80 else ""),
        )


def _check_pool_order(plan: PlanData) -> None:
    scopes = [p.scope for p in plan.pools]
    for i, scope in enumerate(scopes):
        if scope not in UNITS:
            raise _fail(
                f"plan.pools[{i}].scope",
                f"scope {scope!r} is not a memory tilemem plans; use {SMEM!r} or {TMEM!r}",
            )
    if not scopes or scopes[0] != SMEM or SMEM in scopes[1:]:
        raise _fail(
            "plan.pools",
            f"a plan has one SMEM pool first, then the TMEM pools whose slots it holds; got "
            f"scopes {scopes}",
        )
    if TMEM in scopes and plan.target is not None and not TARGETS[plan.target].has_tmem:
        raise _fail(
            "plan.target",
            f"{plan.target} has no tensor memory that its code can reach, yet the plan has "
            "TMEM pools; target sm_100a",
        )


def _check_names(plan: PlanData) -> None:
    pools: dict[str, str] = {}
    buffers: dict[str, str] = {}
    for i, pool in enumerate(plan.pools):
        path = f"plan.pools[{i}].name"
        if pool.name in pools:
            raise _fail(path, f"pool name {pool.name!r} is also {pools[pool.name]}'s")
        pools[pool.name] = path
        for j, e in enumerate(pool.entries):
            path = f"plan.pools[{i}].entries[{j}].name"
            if e.name in buffers:
                raise _fail(
                    path,
                    f"buffer name {e.name!r} is also {buffers[e.name]}'s: the buffers of a CTA "
                    "share one namespace",
                )
            buffers[e.name] = path
    for i, pool in enumerate(plan.pools):
        try:
            stems = stage_names(pool)
        except PlanFileError as exc:  # a stage view over a name no header can spell
            raise _fail(f"plan.pools[{i}].stages", str(exc)) from None
        for k, stem in enumerate(stems):
            if stem in buffers:
                raise _fail(
                    buffers[stem],
                    f"buffer name {stem!r} is the header's name of the stage views "
                    f"plan.pools[{i}].stages[{k}] over {pool.stages[k].buffer!r}",
                )


def _check_pool(plan: PlanData, pool: PoolPlan, path: str) -> None:
    _checked(check_name, pool.name, f"{path}.name", "pool name")
    if pool.unit != UNITS[pool.scope]:
        raise _fail(
            f"{path}.unit",
            f"a {pool.scope} pool counts {UNITS[pool.scope]}, got unit {pool.unit!r}",
        )
    _check_phases(pool, path)
    names = {e.name: n for n, e in enumerate(pool.entries)}
    for j, e in enumerate(pool.entries):
        _check_entry(pool, e, names, j, f"{path}.entries[{j}]")
    _check_overlaps(pool, path)
    _check_extent(plan, pool, path)
    if pool.scope == SMEM:
        if pool.allocation is not None or pool.stages:
            raise _fail(path, "an SMEM pool has no TMEM allocation and no stage views")
    elif pool.allocation is None:
        raise _fail(f"{path}.allocation", "a TMEM pool records its tcgen05.alloc (allocation)")
    else:
        _check_stages(pool, names, path)


def _checked(check: Any, value: Any, path: str, what: str) -> Any:
    try:
        return check(value, what, error=PlanFileError)
    except PlanFileError as exc:
        raise _fail(path, str(exc)) from None


def _check_phases(pool: PoolPlan, path: str) -> None:
    for k, phase in enumerate(pool.phases):
        _checked(check_name, phase, f"{path}.phases[{k}]", "phase name")
    if len(set(pool.phases)) != len(pool.phases):
        raise _fail(f"{path}.phases", f"phases name each phase once, got {list(pool.phases)}")
    totals = (pool.lower_bound is not None, pool.bump is not None)
    if totals != (bool(pool.phases),) * 2:
        raise _fail(
            path,
            "lower_bound and bump are recorded for a pool with phases, and only for one "
            f"(phases {list(pool.phases)}, lower_bound {pool.lower_bound}, bump {pool.bump})",
        )


def _check_entry(pool: PoolPlan, e: PlanEntry, names: dict[str, int], j: int, path: str) -> None:
    _checked(check_buffer_name, e.name, f"{path}.name", "buffer name")
    if e.scope != pool.scope:
        raise _fail(f"{path}.scope", f"scope {e.scope!r} in a {pool.scope} pool")
    if e.dtype not in known_dtypes():
        raise _fail(f"{path}.dtype", f"unknown dtype {e.dtype!r}")
    _checked(check_shape, e.shape, f"{path}.shape", "shape")
    _check_layout(pool, e, path)
    if pool.scope == SMEM:
        _check_smem_entry(e, path)
    else:
        _check_tmem_entry(e, path)
    if pool.phases:
        live = set(e.phases)
        if not e.phases or e.phases != tuple(p for p in pool.phases if p in live):
            raise _fail(
                f"{path}.phases",
                f"phases {list(e.phases)} are not some of the pool's phases "
                f"{list(pool.phases)}, in that order, at least one",
            )
    elif e.phases:
        raise _fail(f"{path}.phases", f"phases {list(e.phases)} in a pool without phases")
    if e.padding and (pool.phases or e.alias_of is not None):
        raise _fail(
            f"{path}.padding",
            f"padding {e.padding}: buffers placed by lifetime, and views, skip no bytes",
        )
    if e.alias_of is not None:
        parent = names.get(e.alias_of)
        if parent is None or parent >= j:
            raise _fail(
                f"{path}.alias_of",
                f"alias_of {e.alias_of!r} names no buffer allocated before {e.name!r} in pool "
                f"{pool.name!r}",
            )
        outer = pool.entries[parent]
        if not (outer.offset <= e.offset and e.end <= outer.end):
            raise _fail(
                f"{path}.alias_of",
                f"the view {e.name!r} at [{e.offset}, {e.end}) is not inside {outer.name!r} "
                f"at [{outer.offset}, {outer.end})",
            )


def _check_layout(pool: PoolPlan, e: PlanEntry, path: str) -> None:
    kind = e.layout_kind.value
    if kind not in KINDS[pool.scope]:
        raise _fail(
            f"{path}.layout_kind",
            f"{pool.scope} pools label layouts {', '.join(KINDS[pool.scope])}, not {kind!r}",
        )
    match = _LABEL_RULES[kind].fullmatch(e.layout)
    if match is None:
        raise _fail(f"{path}.layout", f"layout {e.layout!r} is no label of a {kind!r} layout")
    if kind == "strided" and len(match[1].split(",")) != len(e.shape):
        raise _fail(f"{path}.layout", f"{e.layout!r} has no stride per dimension of {e.shape}")
    if kind == "mma" and _SWIZZLE_LABELS[match[1]] != e.swizzle:
        raise _fail(
            f"{path}.swizzle",
            f"swizzle {e.swizzle} but the layout is {e.layout!r} (swizzle "
            f"{int(_SWIZZLE_LABELS[match[1]])})",
        )
    if kind == "mma":
        try:
            check_mma_tile(e.shape, e.dtype, _SWIZZLE_LABELS[match[1]])
        except LayoutError as exc:
            raise _fail(f"{path}.shape", f"no MMA operand tile: {exc}") from None
    if e.swizzle and kind not in ("mma", "custom"):
        raise _fail(f"{path}.swizzle", f"a {kind!r} layout has no swizzle, got {e.swizzle}")


def _check_smem_entry(e: PlanEntry, path: str) -> None:
    dtype = DataType(e.dtype)
    if not is_power_of_two(e.align) or not dtype.natural_align <= e.align <= 1 << 30:
        raise _fail(
            f"{path}.align",
            f"align {e.align} is not a power of two in [{dtype.natural_align}, {1 << 30}] "
            f"({e.dtype}'s natural alignment is {dtype.natural_align} bytes)",
        )
    if e.offset % e.align:
        raise _fail(f"{path}.offset", f"offset {e.offset} is not a multiple of align {e.align}")
    if e.padding >= e.align or e.padding > e.offset:
        raise _fail(
            f"{path}.padding",
            f"padding {e.padding} bytes: alignment skips fewer than align {e.align} bytes, "
            f"and at most the offset {e.offset}",
        )
    need = dtype.storage_bytes(_elements(e))
    exact = e.layout_kind.value in ("row-major", "strided", "mma")  # a layout the pool built
    fits = e.length == need if exact else need <= e.length <= MAX_SMEM_BYTES
    if not fits:
        raise _fail(
            f"{path}.length",
            f"{e.length} bytes, but {e.dtype}{list(e.shape)} in a {e.layout_kind.value!r} layout "
            f"takes {need} bytes" + ("" if exact else " or more"),
        )
    if e.swizzle:
        period = 8 * (16 << e.swizzle)  # 8 rows of 16 << L bytes: 256, 512, 1024
        if e.offset % period or e.align < period:
            raise _fail(
                f"{path}.offset",
                f"a {16 << e.swizzle}B-swizzled buffer starts on a multiple of its {period}-byte "
                f"period (the hardware swizzles addresses), got offset {e.offset}, align "
                f"{e.align}",
            )
    if e.lanes:
        raise _fail(f"{path}.lanes", "an SMEM buffer has no TMEM lanes")


def _elements(e: PlanEntry) -> int:
    """Elements a buffer's bytes cover: the shape's, or a strided layout's span when wider
    (span = 1 + sum((extent - 1) * stride))."""
    count = math.prod(e.shape)
    match = _LABEL_RULES["strided"].fullmatch(e.layout)
    if e.layout_kind.value == "strided" and match is not None:
        strides = [int(s) for s in match[1].split(",")]
        count = max(count, 1 + sum((n - 1) * s for n, s in zip(e.shape, strides)))
    return count


def _check_tmem_entry(e: PlanEntry, path: str) -> None:
    if not 1 <= e.length <= TMEM_COLS or e.end > TMEM_COLS:
        raise _fail(
            f"{path}.length",
            f"columns [{e.offset}, {e.end}) are not within the {TMEM_COLS} TMEM columns",
        )
    if e.align != 1 or e.padding:
        raise _fail(path, f"TMEM buffers have align 1 and no padding, got {e.align}, {e.padding}")
    if e.swizzle:
        raise _fail(f"{path}.swizzle", f"TMEM buffers are not swizzled, got {e.swizzle}")
    end = -1  # the previous run's end
    for k, (lo, hi) in enumerate(e.lanes):
        if not end < lo < hi <= TMEM_LANES:  # sorted, merged runs: a gap between two
            raise _fail(
                f"{path}.lanes[{k}]",
                f"lanes [{lo}, {hi}) are not a run after the previous one within the "
                f"{TMEM_LANES} TMEM lanes",
            )
        end = hi
    if not e.lanes:
        raise _fail(f"{path}.lanes", "a TMEM buffer touches at least one lane")


def _partners(entries: Iterable[PlanEntry]) -> dict[str, set[str]]:
    """{name: names of the entries sharing a position}: a sweep in order of offset (entries
    are at least one unit long, so the scan stops at the first that starts after the end)."""
    spans = sorted(entries, key=lambda e: (e.offset, e.end))
    out: dict[str, set[str]] = {e.name: set() for e in spans}
    for n, a in enumerate(spans):
        k = n + 1
        while k < len(spans) and spans[k].offset < a.end:
            out[a.name].add(spans[k].name)
            out[spans[k].name].add(a.name)
            k += 1
    return out


def _check_overlaps(pool: PoolPlan, path: str) -> None:
    partners = _partners(pool.entries)
    for j, e in enumerate(pool.entries):
        listed, actual = set(e.overlaps), partners[e.name]
        if len(listed) != len(e.overlaps) or listed != actual:
            raise _fail(
                f"{path}.entries[{j}].overlaps",
                f"{e.name!r} at [{e.offset}, {e.end}) overlaps {sorted(actual)}, but the plan "
                f"lists {list(e.overlaps)}",
            )
    if not pool.phases:
        return
    parents = {e.name: e.alias_of for e in pool.entries}
    index = {e.name: n for n, e in enumerate(pool.entries)}
    for j, second in enumerate(pool.entries):
        for name in sorted(partners[second.name], key=index.__getitem__):
            first = pool.entries[index[name]]
            if index[name] > j or _related(parents, name, second.name):
                continue
            phases = [p for p in first.phases if p in second.phases]
            lanes = _shared_lanes(first, second) if pool.scope == TMEM else True
            if phases and lanes:
                raise _fail(
                    f"{path}.entries[{j}]",
                    f"{first.name!r} and {second.name!r} share {pool.unit} "
                    f"[{max(first.offset, second.offset)}, {min(first.end, second.end)}) while "
                    f"both are live in {phases}; neither is a view (alias_of) of the other",
                )


def _related(parents: dict[str, str | None], a: str, b: str) -> bool:
    for child, ancestor in ((a, b), (b, a)):
        seen: set[str] = set()
        n = parents.get(child)
        while n is not None and n not in seen:
            if n == ancestor:
                return True
            seen.add(n)
            n = parents.get(n)
    return False


def _shared_lanes(a: PlanEntry, b: PlanEntry) -> bool:
    return any(lo < hi2 and lo2 < hi for lo, hi in a.lanes for lo2, hi2 in b.lanes)


def _check_extent(plan: PlanData, pool: PoolPlan, path: str) -> None:
    ends = [e.end for e in pool.entries]
    if not pool.phases:
        ends += [after for _, after in pool.moves]
    high_water = max(ends, default=0)
    if pool.high_water != high_water:
        raise _fail(
            f"{path}.high_water",
            f"high_water {pool.high_water} {pool.unit}, but the buffers"
            + ("" if pool.phases else " and moves")
            + f" reach {high_water}",
        )
    limit = MAX_SMEM_BYTES if pool.scope == SMEM else TMEM_COLS
    for k, (before, after) in enumerate(pool.moves):
        if before > limit or after > limit:
            raise _fail(f"{path}.moves[{k}]", f"move ({before}, {after}) is beyond {limit}")
    if pool.committed is None:
        return
    if pool.scope == TMEM:
        ok = is_power_of_two(pool.committed) and pool.committed >= TMEM_MIN_ALLOC_COLS
        if not ok or pool.committed > TMEM_COLS:
            raise _fail(
                f"{path}.committed",
                f"tcgen05.alloc takes a power of two of columns in [{TMEM_MIN_ALLOC_COLS}, "
                f"{TMEM_COLS}], got {pool.committed}",
            )
    if pool.committed < high_water:
        raise _fail(
            f"{path}.committed",
            f"committed {pool.committed} {pool.unit} is below the high-water mark {high_water}",
        )
    if pool.scope == SMEM and plan.target is not None:
        limit = TARGETS[plan.target].max_smem_per_block
        if pool.committed > limit:
            raise _fail(
                f"{path}.committed",
                f"{pool.committed} bytes of shared memory, but {plan.target} gives a block at "
                f"most {limit}",
            )
    elif pool.scope == SMEM and pool.committed > MAX_SMEM_BYTES:
        raise _fail(f"{path}.committed", f"{pool.committed} bytes is beyond any pool's size")


def _check_stages(pool: PoolPlan, names: dict[str, int], path: str) -> None:
    for k, views in enumerate(pool.stages):
        where = f"{path}.stages[{k}]"
        n = names.get(views.buffer)
        if n is None:
            raise _fail(
                f"{where}.buffer",
                f"stage views over {views.buffer!r}, which is no buffer of pool {pool.name!r}",
            )
        e = pool.entries[n]
        if len(e.shape) != 2 or not views.spans:
            raise _fail(where, f"stage views cover a 2-D buffer with at least one stage: {e.name}")
        for s, (lo, hi) in enumerate(views.spans):
            if not e.offset <= lo < hi <= e.end:
                raise _fail(
                    f"{where}.spans[{s}]",
                    f"stage {s} at columns [{lo}, {hi}) is not inside {e.name!r} at "
                    f"[{e.offset}, {e.end})",
                )


def _check_slot(plan: PlanData, pool: PoolPlan, path: str) -> None:
    a = pool.allocation
    assert a is not None and plan.smem is not None  # checked before
    if a.cta_group not in (1, 2):
        raise _fail(f"{path}.cta_group", f"cta_group is 1 or 2, got {a.cta_group}")
    for what, warp in (("alloc_warp", a.alloc_warp), ("dealloc_warp", a.dealloc_warp)):
        if warp > MAX_WARP:
            raise _fail(f"{path}.{what}", f"warp {warp} is beyond a block's {MAX_WARP + 1} warps")
    slot = next((e for e in plan.smem.entries if e.name == a.slot), None)
    if slot is None or DataType(slot.dtype).bits != 32:
        raise _fail(
            f"{path}.slot",
            f"the address slot {a.slot!r} is no 32-bit buffer of SMEM pool {plan.smem.name!r}",
        )
    unplaced = bool(plan.smem.phases) and plan.smem.committed is None
    if a.slot_offset != slot.offset and not (a.slot_offset is None and unplaced):
        raise _fail(
            f"{path}.slot_offset",
            f"slot_offset {a.slot_offset}, but the slot {a.slot!r} is at byte {slot.offset}",
        )


def _check_advice(plan: PlanData) -> None:
    advice, smem = plan.advice, plan.smem
    assert advice is not None and smem is not None
    names = sorted(e.name for e in smem.entries)
    facts = (advice.pool, advice.padding, advice.high_water, advice.overlays)
    if facts != (smem.name, smem.padding, smem.high_water, bool(smem.moves)):
        raise _fail(
            "plan.advice",
            f"advice for pool {advice.pool!r} (padding {advice.padding}, high-water "
            f"{advice.high_water}, overlays {advice.overlays}) does not describe SMEM pool "
            f"{smem.name!r} (padding {smem.padding}, high-water {smem.high_water}, overlays "
            f"{bool(smem.moves)})",
        )
    better = advice.best_high_water
    if advice.order and (sorted(advice.order) != names or better is None or better < 0):
        raise _fail("plan.advice.order", f"order {list(advice.order)} is no order of {names}")
    if advice.order and better is not None and better >= smem.high_water:
        raise _fail("plan.advice.best_high_water", f"{better} saves nothing")
    if not advice.order and better is not None:
        raise _fail("plan.advice.best_high_water", "a better high-water mark without an order")
