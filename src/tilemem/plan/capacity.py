"""Capacity checks: does a plan fit the target's shared memory and tensor memory?"""

from __future__ import annotations

from ..errors import CapacityError, TargetError
from ..text import table
from .model import PoolPlan
from .stages import BufferRequest, deepest_stages, per_stage_bytes
from .target import Target


def _buffer_lines(pool: PoolPlan) -> str:
    rows = [
        [e.name, f"{e.length} B", "at", str(e.offset), f"(+{e.padding} B padding before)"]
        if e.padding
        else [e.name, f"{e.length} B", "at", str(e.offset), ""]
        for e in pool.entries
    ]
    return "\n".join(table(rows, right={1, 3}, header=False, indent="  "))


def staged_entries(pool: PoolPlan) -> tuple[int, list]:
    """The pipeline stage count S and the buffers indexed by it.

    A buffer is stage-indexed when its leading extent is S and it has a tile
    behind it (rank >= 3, e.g. ``(stages, rows, K)``) or it is a barrier array
    ``(S,)`` of 8-byte words. S is the most common leading extent of the
    rank >= 3 buffers; (0, []) when there is none.
    """
    leads = [e.shape[0] for e in pool.entries if len(e.shape) >= 3 and e.shape[0] > 1]
    if not leads:
        return 0, []
    stages = max(set(leads), key=leads.count)
    staged = [
        e
        for e in pool.entries
        if e.shape[0] == stages
        and (len(e.shape) >= 3 or (len(e.shape) == 1 and e.dtype in ("uint64", "int64")))
    ]
    return stages, staged


def stages_that_fit(pool: PoolPlan, limit: int) -> tuple[int, int] | None:
    """(stages that fit under ``limit`` bytes, bytes per stage), re-placing buffers in order.

    The pool's buffers become :class:`~tilemem.plan.stages.BufferRequest` objects (the
    stage-indexed ones per stage) and go through the stage solver's
    :func:`~tilemem.plan.stages.deepest_stages`. None when the pool has no stage-indexed
    buffers or uses move_base_to or views (overlays make re-placement ambiguous). In a pool
    with phases each request keeps its buffer's phases, so the solver packs by lifetime; an
    entry without phases is live in every phase.
    """
    stages, staged = staged_entries(pool)
    if not stages or pool.moves or any(e.alias_of for e in pool.entries):
        return None
    staged_names = {e.name for e in staged}
    requests = [
        BufferRequest(
            e.name,
            e.shape[1:] if e.name in staged_names else e.shape,
            e.dtype,
            align=e.align,
            per_stage=e.name in staged_names,
            live=frozenset(e.phases) if e.phases else None,  # no phases: live throughout
        )
        for e in pool.entries
    ]
    return deepest_stages(requests, limit, stages), per_stage_bytes(requests)


def check_smem_capacity(pool: PoolPlan, target: Target) -> None:
    """Raise CapacityError when the committed region exceeds the target's per-block maximum."""
    size = pool.used
    limit = target.max_smem_per_block
    if size <= limit:
        return
    excess = size - limit
    message = (
        f"SMEM pool {pool.name!r} needs {size} bytes but {target.name} allows at most {limit} "
        "bytes "
        f"of dynamic shared memory per block: remove at least {excess} bytes.\n"
        f"buffers:\n{_buffer_lines(pool)}\n"
        f"padding lost to alignment: {pool.padding} bytes; total {size} bytes; limit {limit} bytes"
    )
    message += peak_phase_text(pool, "B")
    fit = stages_that_fit(pool, limit)
    if fit is not None:
        stages, _ = staged_entries(pool)
        fits, per_stage = fit
        message += (
            f"\npipeline: {stages} stages of {per_stage} bytes each; {fits} stage"
            f"{'s' if fits != 1 else ''} would fit on {target.name}"
        )
    raise CapacityError(message)


def peak_phase(pool: PoolPlan) -> tuple[str, int, list] | None:
    """(phase, units live in it, its entries) of the phase whose live buffers take the most
    space, the first in program order on a tie; None for a pool without phases.

    Views (``alias_of``) lie inside their parents and are not counted again. The packed
    footprint is at least this load (the buffers live in one phase must not overlap).
    """
    if not pool.phases:
        return None
    best: tuple[str, int, list] | None = None
    for phase in pool.phases:
        live = [e for e in pool.entries if not e.alias_of and phase in e.phases]
        load = sum(e.length for e in live)
        if best is None or load > best[1]:
            best = (phase, load, live)
    return best


def peak_phase_text(pool: PoolPlan, unit: str) -> str:
    """The capacity message's line on the peak phase ('' without phases)."""
    peak = peak_phase(pool)
    if peak is None:
        return ""
    phase, load, live = peak
    names = ", ".join(f"{e.name} ({e.length} {unit})" for e in live) or "none"
    return (
        f"\npeak phase {phase!r}: {load} {unit} live at once in {len(live)} buffer"
        f"{'s' if len(live) != 1 else ''}: {names}"
    )


def check_tmem_target(target: Target, pool_name: str) -> None:
    """TargetError unless code built for ``target`` may use TMEM (plan-only and kernels alike)."""
    if target.has_tmem:
        return
    if target.tmem_cols:
        raise TargetError(
            f"TMEM pool {pool_name!r}: code built for {target.name} cannot use tensor memory; "
            "tcgen05 exists only in arch-specific code (docs/HARDWARE-RULES.md): target sm_100a"
        )
    raise TargetError(
        f"TMEM pool {pool_name!r}: {target.name} has no tensor memory; TMEM and tcgen05 exist on "
        "sm_100a (Blackwell datacenter). Keep accumulators in registers on this target, or "
        "target sm_100a"
    )
