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

from ..errors import PlanFileError, PoolStateError
from ..layout.tmem import TMEM_COLS, TMEM_MIN_ALLOC_COLS
from ..scopes import TMEM
from ..validate import check_name
from ..version import __version__
from .target import get_target

if TYPE_CHECKING:
    from .data import PlanData as MemoryPlan
    from .data import PlanEntry, PoolPlan, StageViews

SWIZZLE_ATOM_ROWS = 8  # a swizzle atom: 8 rows of 16 << L bytes (PTX ISA, shared memory layouts)
_POOL_CONSTANTS = frozenset(
    {
        "committed_bytes",
        "high_water",
        "region_align",
        "target_max_bytes",
        "total_cols",
        "cta_group",
        "alloc_warp",
        "dealloc_warp",
        "slot_offset",
    }
)


def identifier(name: str, what: str) -> str:
    """``name`` if it is a C++ identifier that generated code may use (the pools' own rule)."""
    return check_name(name, what, error=PlanFileError)


def swizzle_bytes(mode: int) -> int:
    """Bytes of one swizzle row: 16 << L for L = 1, 2, 3 (32B, 64B, 128B); 0 without swizzle."""
    return 16 << mode if mode else 0


def swizzle_period(mode: int) -> int:
    """Bytes after which a swizzle pattern repeats: 8 rows x (16 << L) = 256, 512, 1024."""
    return SWIZZLE_ATOM_ROWS * swizzle_bytes(mode)


def _entry_comment(e: PlanEntry) -> str:
    dims = "".join(f"[{d}]" for d in e.shape)
    return f"// {e.name}: {e.dtype}{dims}, {e.layout}"


def _smem_lines(pool: PoolPlan, target: str | None) -> list[str]:
    assert pool.committed is not None  # checked by cpp_header
    out = [
        f"// SMEM pool {pool.name!r}: bytes from the start of the dynamic shared memory",
        f"namespace {identifier(pool.name, 'SMEM pool')} {{",
        f"constexpr unsigned committed_bytes = {pool.committed};  // launch with this much",
        f"constexpr unsigned high_water = {pool.high_water};",
        "constexpr unsigned region_align = 1024;  // extern __shared__ __align__(1024)",
    ]
    if target:
        limit = get_target(target).max_smem_per_block
        out += [
            f"constexpr unsigned target_max_bytes = {limit};  // {target}, opt-in, per block",
            "static_assert(committed_bytes <= target_max_bytes, "
            f'"{pool.name}: more dynamic shared memory than {target} gives a block");',
        ]
    out.append(
        f'static_assert(high_water <= committed_bytes, "{pool.name}: committed below high-water");'
    )
    for e in pool.entries:
        out += ["", _entry_comment(e), f"namespace {_buffer_name(e)} {{"]
        out += [
            f"constexpr unsigned offset = {e.offset};",
            f"constexpr unsigned bytes = {e.length};",
            f"constexpr unsigned align = {e.align};",
            f"constexpr unsigned swizzle_mode = {e.swizzle};  // 0 none, 1 32B, 2 64B, 3 128B",
            f"constexpr unsigned swizzle_bytes = {swizzle_bytes(e.swizzle)};",
            f'static_assert(offset % align == 0, "{e.name}: offset breaks its alignment");',
            "static_assert(offset + bytes <= committed_bytes, "
            f'"{e.name}: ends beyond the committed bytes");',
        ]
        if e.swizzle:
            out += [
                f"constexpr unsigned swizzle_period = {swizzle_period(e.swizzle)};",
                "static_assert(offset % swizzle_period == 0, "
                f'"{e.name}: a swizzled buffer starts on its swizzle period");',
            ]
        out.append(f"}}  // namespace {_buffer_name(e)}")
    out.append(f"}}  // namespace {identifier(pool.name, 'SMEM pool')}")
    return out


def _stage_lines(views: StageViews, name: str) -> list[str]:
    firsts = [lo for lo, _ in views.spans]
    widths = {hi - lo for lo, hi in views.spans}
    steps = {b - a for a, b in itertools.pairwise(firsts)} or {0}
    out = [f"// stage views over {views.buffer}", f"namespace {name} {{"]
    out.append(f"constexpr unsigned stages = {len(views.spans)};")
    if len(widths) == 1 and len(steps) == 1:  # TMEMStages: col_start + s * stride
        last = views.spans[-1][1]
        out += [
            f"constexpr unsigned first_col = {firsts[0]};",
            f"constexpr unsigned stride_cols = {steps.pop()};",
            f"constexpr unsigned cols = {widths.pop()};  // per stage",
            f"static_assert({last} <= total_cols, "
            f'"{views.buffer}: a stage reaches beyond total_cols");',
        ]
    for s, (lo, hi) in enumerate(views.spans):
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
        f"constexpr unsigned total_cols = {pool.committed};  // tcgen05.alloc size",
        f"static_assert(total_cols >= {TMEM_MIN_ALLOC_COLS} && total_cols <= {TMEM_COLS} && "
        "(total_cols & (total_cols - 1)) == 0, "
        f'"{pool.name}: tcgen05.alloc takes a power of two of columns in '
        f'[{TMEM_MIN_ALLOC_COLS}, {TMEM_COLS}]");',
        f"constexpr unsigned high_water = {pool.high_water};",
        f'static_assert(high_water <= total_cols, "{pool.name}: buffers beyond total_cols");',
    ]
    if pool.allocation is not None:
        a = pool.allocation
        out += [
            f"constexpr unsigned cta_group = {a.cta_group};",
            f"constexpr unsigned alloc_warp = {a.alloc_warp};",
            f"constexpr unsigned dealloc_warp = {a.dealloc_warp};",
            f"constexpr unsigned slot_offset = {a.slot_offset};  // SMEM bytes: {a.slot}",
        ]
    for e in pool.entries:
        out += ["", _entry_comment(e), f"namespace {_buffer_name(e)} {{"]
        out += [
            f"constexpr unsigned col_offset = {e.offset};",
            f"constexpr unsigned cols = {e.length};",
        ]
        if len(e.lanes) == 1:
            out += [
                f"constexpr unsigned lane_first = {e.lanes[0][0]};",
                f"constexpr unsigned lane_end = {e.lanes[0][1]};",
            ]
        elif e.lanes:
            runs = ", ".join(f"[{lo}, {hi})" for lo, hi in e.lanes)
            out.append(f"// lanes {runs}")
        out += [
            "static_assert(col_offset + cols <= total_cols, "
            f'"{e.name}: columns beyond total_cols");',
            f"}}  // namespace {_buffer_name(e)}",
        ]
    seen: dict[str, int] = {}
    for views in pool.stages:
        n = seen[views.buffer] = seen.get(views.buffer, 0) + 1
        stem = f"{identifier(views.buffer, 'buffer')}_stages"
        out += [""] + _stage_lines(views, stem if n == 1 else f"{stem}{n}")
    out.append(f"}}  // namespace {name}")
    return out


def _buffer_name(e: PlanEntry) -> str:
    name = identifier(e.name, "buffer")
    if name in _POOL_CONSTANTS:
        raise PlanFileError(
            f"buffer {e.name!r} has the name of a pool constant of the header "
            f"({', '.join(sorted(_POOL_CONSTANTS))}); rename the buffer"
        )
    return name


def cpp_header(plan: MemoryPlan, namespace: str = "tilemem_plan") -> str:
    """The plan as a C++17 header (see the module docstring). Pools must be committed."""
    for pool in plan.pools:
        if pool.committed is None:
            raise PoolStateError(
                f"pool {pool.name!r} is not committed: a header fixes sizes, so commit() every "
                "pool first (TMEM 'auto' total_cols is fixed at commit)"
            )
    outer = identifier(namespace, "namespace")
    lines = [
        f"// Memory plan generated by tilemem {__version__}"
        + (f" for {plan.target}" if plan.target else "")
        + ". Do not edit: regenerate it.",
        "// SMEM offsets are bytes from the start of the kernel's dynamic shared memory;",
        "// TMEM offsets are 32-bit columns from the address tcgen05.alloc returned.",
        "#pragma once",
        "",
        f"namespace {outer} {{",
    ]
    for pool in plan.pools:
        lines += [""] + (
            _smem_lines(pool, plan.target) if pool.scope != TMEM else _tmem_lines(pool)
        )
    if plan.tmem:
        total = " + ".join(f"{identifier(p.name, 'TMEM pool')}::total_cols" for p in plan.tmem)
        lines += [
            "",
            f"static_assert({total} <= {TMEM_COLS}, "
            f'"the TMEM pools of one CTA need more than its {TMEM_COLS} columns");',
        ]
    lines += ["", f"}}  // namespace {outer}", ""]
    return "\n".join(lines)
