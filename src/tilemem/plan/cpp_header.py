"""A memory plan as a self-contained C++ header, for kernels written in CUDA C++.

One namespace per pool, one per buffer inside it, each holding ``constexpr`` numbers:
SMEM byte offsets, sizes, alignments and swizzle modes; TMEM column offsets, columns and
lanes; the committed sizes; stage views. ``static_assert``\\ s re-check at compile time what
tilemem checked when it planned (alignment, swizzle period, capacity, TMEM's 512 columns),
so a header edited by hand, or a plan from another tilemem, still cannot compile wrong. The
header includes nothing and compiles as plain C++17, with nvcc and with NVRTC.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from ..errors import PlanFileError, PoolStateError, TargetError
from ..layout.tmem import TMEM_COLS, TMEM_MIN_ALLOC_COLS
from ..scopes import TMEM
from ..validate import HEADER_POOL_CONSTANTS, check_name, is_int
from ..version import __version__
from .target import get_target

if TYPE_CHECKING:
    from .data import PlanData as MemoryPlan
    from .data import PlanEntry, PoolPlan, StageViews, TMEMAllocation

SWIZZLE_ATOM_ROWS = 8  # a swizzle atom: 8 rows of 16 << L bytes (PTX ISA, shared memory layouts)
# Every number is a 32-bit ``constexpr unsigned``; kept below 2**31, a sum of two of them (the
# static_asserts add offset and size) cannot wrap around.
MAX_CONSTANT = (1 << 31) - 1


def identifier(name: str, what: str) -> str:
    """``name`` if it is a C++ identifier that generated code may use (the pools' own rule)."""
    return check_name(name, what, error=PlanFileError)


def number(value: int, what: str) -> int:
    """``value`` when a ``constexpr unsigned`` holds it exactly (see ``MAX_CONSTANT``)."""
    if not is_int(value) or not 0 <= value <= MAX_CONSTANT:
        raise PlanFileError(
            f"{what} = {value!r} does not fit the header's 32-bit constants (0..{MAX_CONSTANT}); "
            "no GPU has that much on-chip memory: plan with a target to have it checked"
        )
    return int(value)


def comment(text: object) -> str:
    """``text`` safe inside a ``//`` comment: printable ASCII; a backslash (which would join
    the next line to the comment), '?' (trigraphs) and anything else become '_'."""
    return "".join(c if " " <= c <= "~" and c not in "\\?" else "_" for c in str(text))


def swizzle_bytes(mode: int) -> int:
    """Bytes of one swizzle row: 16 << L for L = 1, 2, 3 (32B, 64B, 128B); 0 without swizzle."""
    return 16 << mode if mode else 0


def swizzle_period(mode: int) -> int:
    """Bytes after which a swizzle pattern repeats: 8 rows x (16 << L) = 256, 512, 1024."""
    return SWIZZLE_ATOM_ROWS * swizzle_bytes(mode)


def _entry_comment(e: PlanEntry) -> str:
    dims = "".join(f"[{d}]" for d in e.shape)
    return comment(f"// {e.name}: {e.dtype}{dims}, {e.layout}")


def _smem_lines(pool: PoolPlan, target: str | None) -> list[str]:
    assert pool.committed is not None  # checked by cpp_header
    name = identifier(pool.name, "SMEM pool")
    out = [
        f"// SMEM pool {pool.name!r}: bytes from the start of the dynamic shared memory",
        f"namespace {name} {{",
        f"constexpr unsigned committed_bytes = {number(pool.committed, f'{name} committed')};"
        "  // launch with this much",
        f"constexpr unsigned high_water = {number(pool.high_water, f'{name} high_water')};",
        "constexpr unsigned region_align = 1024;  // extern __shared__ __align__(1024)",
    ]
    if target:
        limit = get_target(target).max_smem_per_block
        out += [
            f"constexpr unsigned target_max_bytes = {limit};  // {target}, opt-in, per block",
            "static_assert(committed_bytes <= target_max_bytes, "
            f'"{name}: more dynamic shared memory than {target} gives a block");',
        ]
    out.append(
        f'static_assert(high_water <= committed_bytes, "{name}: committed below high-water");'
    )
    for e in pool.entries:
        out += [""] + _smem_buffer_lines(e)
    out.append(f"}}  // namespace {name}")
    return out


def _smem_buffer_lines(e: PlanEntry) -> list[str]:
    name = _buffer_name(e)
    out = [_entry_comment(e), f"namespace {name} {{"]
    out += [
        f"constexpr unsigned offset = {number(e.offset, f'{name} offset')};",
        f"constexpr unsigned bytes = {number(e.length, f'{name} length')};",
        f"constexpr unsigned align = {number(e.align, f'{name} align')};",
        f"constexpr unsigned swizzle_mode = {e.swizzle};  // 0 none, 1 32B, 2 64B, 3 128B",
        f"constexpr unsigned swizzle_bytes = {swizzle_bytes(e.swizzle)};",
        f'static_assert(offset % align == 0, "{name}: offset breaks its alignment");',
        "static_assert(offset + bytes <= committed_bytes, "
        f'"{name}: ends beyond the committed bytes");',
    ]
    if e.swizzle:
        out += [
            f"constexpr unsigned swizzle_period = {swizzle_period(e.swizzle)};",
            "static_assert(offset % swizzle_period == 0, "
            f'"{name}: a swizzled buffer starts on its swizzle period");',
        ]
    out.append(f"}}  // namespace {name}")
    return out


def _stage_lines(views: StageViews, name: str) -> list[str]:
    buffer = identifier(views.buffer, "buffer")
    spans = [
        (number(lo, f"{name} span start"), number(hi, f"{name} span end")) for lo, hi in views.spans
    ]
    if not spans or any(lo >= hi for lo, hi in spans):
        raise PlanFileError(f"stage views {name}: each of at least one stage spans columns")
    firsts = [lo for lo, _ in spans]
    widths = {hi - lo for lo, hi in spans}
    steps = {b - a for a, b in itertools.pairwise(firsts)} or {0}
    last = max(hi for _, hi in spans)
    reach = f'static_assert({last} <= total_cols, "{buffer}: a stage reaches beyond total_cols");'
    out = [f"// stage views over {buffer}", f"namespace {name} {{"]
    out.append(f"constexpr unsigned stages = {len(spans)};")
    if len(widths) == 1 and len(steps) == 1:  # TMEMStages: col_start + s * stride
        out += [
            f"constexpr unsigned first_col = {firsts[0]};",
            f"constexpr unsigned stride_cols = {steps.pop()};",
            f"constexpr unsigned cols = {widths.pop()};  // per stage",
        ]
    out.append(reach)  # every stage, of any width, ends within the pool
    for s, (lo, hi) in enumerate(spans):
        out.append(f"constexpr unsigned stage{s}_col_offset = {lo};")
        out.append(f"constexpr unsigned stage{s}_cols = {hi - lo};")
    out.append(f"}}  // namespace {name}")
    return out


def _tmem_lines(pool: PoolPlan) -> list[str]:
    assert pool.committed is not None  # checked by cpp_header
    name = identifier(pool.name, "TMEM pool")
    out = [
        f"// TMEM pool {pool.name!r}: 32-bit columns from the base address tcgen05.alloc writes",
        "// into the slot; a cell's address is base + (lane << 16) + column",
        f"namespace {name} {{",
        f"constexpr unsigned total_cols = {number(pool.committed, f'{name} committed')};"
        "  // tcgen05.alloc size",
        f"static_assert(total_cols >= {TMEM_MIN_ALLOC_COLS} && total_cols <= {TMEM_COLS} && "
        "(total_cols & (total_cols - 1)) == 0, "
        f'"{name}: tcgen05.alloc takes a power of two of columns in '
        f'[{TMEM_MIN_ALLOC_COLS}, {TMEM_COLS}]");',
        f"constexpr unsigned high_water = {number(pool.high_water, f'{name} high_water')};",
        f'static_assert(high_water <= total_cols, "{name}: buffers beyond total_cols");',
    ]
    if pool.allocation is not None:
        out += _allocation_lines(pool.allocation)
    for e in pool.entries:
        out += [""] + _tmem_buffer_lines(e)
    for views, stem in zip(pool.stages, stage_names(pool)):
        out += [""] + _stage_lines(views, stem)
    out.append(f"}}  // namespace {name}")
    return out


def _allocation_lines(a: TMEMAllocation) -> list[str]:
    slot = identifier(a.slot, "address slot")
    if a.slot_offset is None:
        raise PlanFileError(
            f"address slot {slot!r} has no offset yet: commit the SMEM pool (it has phases, "
            "so it places the slot at commit)"
        )
    return [
        f"constexpr unsigned cta_group = {number(a.cta_group, 'cta_group')};",
        f"constexpr unsigned alloc_warp = {number(a.alloc_warp, 'alloc_warp')};",
        f"constexpr unsigned dealloc_warp = {number(a.dealloc_warp, 'dealloc_warp')};",
        f"constexpr unsigned slot_offset = {number(a.slot_offset, 'slot_offset')};"
        f"  // SMEM bytes: {slot}",
    ]


def _tmem_buffer_lines(e: PlanEntry) -> list[str]:
    name = _buffer_name(e)
    out = [_entry_comment(e), f"namespace {name} {{"]
    out += [
        f"constexpr unsigned col_offset = {number(e.offset, f'{name} offset')};",
        f"constexpr unsigned cols = {number(e.length, f'{name} length')};",
    ]
    lanes = [(number(lo, f"{name} lane"), number(hi, f"{name} lane")) for lo, hi in e.lanes]
    if len(lanes) == 1:
        out += [
            f"constexpr unsigned lane_first = {lanes[0][0]};",
            f"constexpr unsigned lane_end = {lanes[0][1]};",
        ]
    elif lanes:
        runs = ", ".join(f"[{lo}, {hi})" for lo, hi in lanes)
        out.append(f"// lanes {runs}")
    out += [
        f'static_assert(col_offset + cols <= total_cols, "{name}: columns beyond total_cols");',
        f"}}  // namespace {name}",
    ]
    return out


def stage_names(pool: PoolPlan) -> list[str]:
    """The namespace of each stage view of ``pool``: ``<buffer>_stages``, then
    ``<buffer>_stages2``, ... for further views over the same buffer (the names
    ``TMEMPool.stages`` reserves)."""
    seen: dict[str, int] = {}
    out = []
    for views in pool.stages:
        n = seen[views.buffer] = seen.get(views.buffer, 0) + 1
        out.append(stage_namespace(identifier(views.buffer, "buffer"), n))
    return out


def stage_namespace(buffer: str, n: int) -> str:
    """The namespace of the ``n``-th (from 1) stage views over ``buffer``."""
    return f"{buffer}_stages" + (str(n) if n > 1 else "")


def _buffer_name(e: PlanEntry) -> str:
    name = identifier(e.name, "buffer")
    if name in HEADER_POOL_CONSTANTS:
        raise PlanFileError(
            f"buffer {e.name!r} has the name of a pool constant of the header "
            f"({', '.join(sorted(HEADER_POOL_CONSTANTS))}); rename the buffer"
        )
    return name


def _check_namespaces(plan: MemoryPlan) -> None:
    """PlanFileError when two pools, or two names inside one pool's namespace (buffers and
    stage views), are spelled alike: C++ would merge the namespaces and define twice."""
    pools = [identifier(p.name, "pool") for p in plan.pools]
    for name in pools:
        if pools.count(name) > 1:
            raise PlanFileError(
                f"two pools are named {name!r}; each pool is a namespace of the header, so "
                "name them apart"
            )
    for pool in plan.pools:
        names = [_buffer_name(e) for e in pool.entries] + stage_names(pool)
        for name in names:
            if names.count(name) > 1:
                raise PlanFileError(
                    f"pool {pool.name!r} would define {name!r} twice in the header (two buffers, "
                    "or a buffer named like the stage views '<buffer>_stages'): rename a buffer"
                )


def _check_writable(plan: MemoryPlan) -> None:
    for pool in plan.pools:
        if pool.committed is None:
            raise PoolStateError(
                f"pool {pool.name!r} is not committed: a header fixes sizes, so commit() every "
                "pool first (TMEM 'auto' total_cols is fixed at commit)"
            )
    if plan.target is not None:
        try:
            get_target(plan.target)
        except TargetError as exc:
            raise PlanFileError(f"the plan's target: {exc}") from None
    _check_namespaces(plan)


def _preamble(plan: MemoryPlan, outer: str) -> list[str]:
    return [
        f"// Memory plan generated by tilemem {__version__}"
        + (f" for {plan.target}" if plan.target else "")
        + ". Do not edit: regenerate it.",
        "// SMEM offsets are bytes from the start of the kernel's dynamic shared memory;",
        "// TMEM offsets are 32-bit columns from the address tcgen05.alloc returned.",
        "#pragma once",
        "",
        f"namespace {outer} {{",
    ]


def _closing(plan: MemoryPlan, outer: str) -> list[str]:
    lines = []
    if plan.tmem:
        total = " + ".join(f"{identifier(p.name, 'TMEM pool')}::total_cols" for p in plan.tmem)
        lines += [
            "",
            f"static_assert({total} <= {TMEM_COLS}, "
            f'"the TMEM pools of one CTA need more than its {TMEM_COLS} columns");',
        ]
    return lines + ["", f"}}  // namespace {outer}", ""]


def cpp_header(plan: MemoryPlan, namespace: str = "tilemem_plan") -> str:
    """The plan as a C++17 header (see the module docstring). Pools must be committed.

    PlanFileError for a plan no header can spell: names that are not identifiers or clash,
    numbers beyond 32 bits, an unknown target."""
    _check_writable(plan)
    outer = identifier(namespace, "namespace")
    lines = _preamble(plan, outer)
    for pool in plan.pools:
        lines += [""] + (
            _smem_lines(pool, plan.target) if pool.scope != TMEM else _tmem_lines(pool)
        )
    lines += _closing(plan, outer)
    return "\n".join(lines)
