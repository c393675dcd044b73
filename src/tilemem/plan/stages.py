"""Stage solving: the deepest pipeline that fits the target's shared memory.

Buffers are given in allocation order as :class:`BufferRequest`; per-stage
requests get a leading stage dimension. Placement is the pools' bump rule
(round the cursor up to the alignment, advance by the size), so the answer
equals what an SMEMPool allocating the same requests would reach. When a request
names the phases it is live in (``live``), placement is the lifetime packer's
instead, as in an SMEMPool made with ``phases=`` (docs/DESIGN.md#lifetimes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..dtype import DTypeLike, as_dtype
from ..errors import CapacityError
from ..layout.smem import SwizzleMode, SwizzleModeLike, check_mma_tile, widest_swizzle
from ..validate import check_int, check_name, is_int
from .lifetimes import Item, pack
from .packing import bump_total, check_align
from .target import Target, get_target

_MMA_DEFAULT_ALIGN = 1024


@dataclass(frozen=True)
class BufferRequest:
    """One buffer: ``swizzle`` set (a mode or ``"auto"``) means an MMA operand tile
    (``alloc_mma``). ``swizzle_mode=`` is accepted as another spelling of ``swizzle=`` (the
    name of ``SMEMPool.alloc_mma``'s older parameter); give one of them.

    ``live`` is the set of phases the buffer is live in (None: every phase); it must name at
    least one phase, since a buffer live in none would take no bytes at all.
    """

    name: str
    shape: tuple
    dtype: DTypeLike = "float32"
    swizzle: SwizzleModeLike | None = None
    align: int = 0
    per_stage: bool = False
    live: frozenset[str] | None = None  # phases the buffer is live in (None: every phase)
    swizzle_mode: SwizzleModeLike | None = field(
        default=None, kw_only=True, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        """Checked here, so a bad request fails where it is written, not inside a solver."""
        check_name(self.name, "BufferRequest name", error=CapacityError)
        if self.swizzle_mode is not None:
            if self.swizzle is not None:
                raise CapacityError(
                    f"BufferRequest {self.name!r}: swizzle={self.swizzle!r} and swizzle_mode="
                    f"{self.swizzle_mode!r} spell one setting twice; give swizzle= only"
                )
            object.__setattr__(self, "swizzle", self.swizzle_mode)
            object.__setattr__(self, "swizzle_mode", None)
        shape = self.shape
        if not isinstance(shape, tuple | list) or any(not is_int(s) or s < 1 for s in shape):
            raise CapacityError(
                f"BufferRequest {self.name!r}: shape must be a tuple of positive integers "
                f"(() for one element per stage), got {shape!r}"
            )
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        as_dtype(self.dtype)
        check_align(self.align)
        if not isinstance(self.per_stage, bool):
            raise CapacityError(
                f"BufferRequest per_stage must be True or False, got {self.per_stage!r}"
            )
        if self.swizzle is not None and self.swizzle != "auto":
            SwizzleMode.parse(self.swizzle)
        if self.live is not None:
            live = self.live
            if isinstance(live, str | bytes) or not isinstance(
                live, set | frozenset | tuple | list
            ):
                raise CapacityError(
                    f"BufferRequest {self.name!r}: live must be a set of phase names, got {live!r}"
                )
            if not live:
                raise CapacityError(
                    f"BufferRequest {self.name!r}: live={live!r} names no phase, so the buffer "
                    "would be live nowhere and share its bytes with everything; name the phases "
                    "it is live in, or pass live=None for every phase"
                )
            for phase in live:
                check_name(phase, f"BufferRequest {self.name!r} phase", error=CapacityError)
            object.__setattr__(self, "live", frozenset(live))

    def placement(self, stages: int) -> tuple[int, int]:
        """(bytes, alignment) of this request for ``stages`` pipeline stages."""
        dtype = as_dtype(self.dtype)
        shape = ((stages,) + tuple(self.shape)) if self.per_stage else tuple(self.shape)
        align = check_align(self.align)
        if self.swizzle is not None:
            mode = (
                widest_swizzle(dtype, shape[-1])
                if self.swizzle == "auto"
                else SwizzleMode.parse(self.swizzle)
            )
            check_mma_tile(shape, dtype, mode)
            align = max(align or _MMA_DEFAULT_ALIGN, mode.period_bytes)
        return dtype.storage_bytes(math.prod(shape)), max(align, dtype.natural_align)


@dataclass(frozen=True)
class StageSolution:
    stages: int
    bytes_used: int
    bytes_left: int
    limit: int  # bytes per CTA allowed for the wanted CTAs per SM
    per_stage_bytes: int

    def __str__(self) -> str:
        return (
            f"{self.stages} stage{'s' if self.stages != 1 else ''}: {self.bytes_used} of "
            f"{self.limit} bytes used, {self.bytes_left} left "
            f"({self.per_stage_bytes} bytes per stage)"
        )


def smem_limit(target: str | Target, ctas_per_sm: int = 1) -> int:
    """Bytes of dynamic shared memory one CTA may use so that ``ctas_per_sm`` CTAs are resident."""
    target = get_target(target)
    ctas_per_sm = check_int(
        ctas_per_sm, "ctas_per_sm", minimum=1, maximum=target.max_blocks_per_sm, error=CapacityError
    )
    share = target.smem_per_sm // ctas_per_sm - target.reserved_smem_per_block
    return min(target.max_smem_per_block, share)


def bytes_for(requests, stages: int) -> int:
    """Bytes ``requests`` take with ``stages`` stages: bump placement in order, or, when
    any request says when it is live, the lifetime packer's footprint."""
    placements = [r.placement(stages) for r in requests]
    if all(r.live is None for r in requests):
        return bump_total(placements)[0]
    items = [
        Item(str(n), size, align, r.live)
        for n, (r, (size, align)) in enumerate(zip(requests, placements))
    ]
    return pack(items).footprint


def deepest_stages(requests, limit: int, max_stages: int) -> int:
    """The most stages in ``[0, max_stages]`` whose bump placement fits ``limit`` bytes.

    Bump placement only grows when a size grows, and so does the least footprint of a
    lifetime packing (shrinking items keeps a placement feasible), so the total grows with
    the stage count: bisect for the last count that fits (0 when even one stage does not).
    Every count returned was checked to fit.
    """
    low, high = 0, max_stages
    while low < high:
        mid = (low + high + 1) // 2
        if bytes_for(requests, mid) <= limit:
            low = mid
        else:
            high = mid - 1
    return low


def solve_stages(
    requests, target: str | Target, ctas_per_sm: int = 1, max_stages: int = 64
) -> StageSolution:
    """The most stages (up to ``max_stages``) whose buffers fit ``ctas_per_sm`` CTAs on one SM."""
    if isinstance(requests, str | bytes | BufferRequest) or not hasattr(requests, "__iter__"):
        raise CapacityError(f"solve_stages takes a list of BufferRequest, got {requests!r}")
    requests = list(requests)
    if not all(isinstance(r, BufferRequest) for r in requests):
        raise CapacityError(f"solve_stages takes BufferRequest objects, got {requests!r}")
    max_stages = check_int(
        max_stages, "max_stages", minimum=1, maximum=1 << 20, error=CapacityError
    )
    if not any(r.per_stage for r in requests):
        raise CapacityError("solve_stages needs at least one per_stage=True buffer")
    limit = smem_limit(target, ctas_per_sm)
    stages = deepest_stages(requests, limit, max_stages)
    if stages == 0:
        used = bytes_for(requests, 1)
        raise CapacityError(
            f"even 1 stage needs {used} bytes but {get_target(target).name} with {ctas_per_sm} "
            "CTA(s) per SM "
            f"allows {limit} per CTA: remove at least {used - limit} bytes"
        )
    used = bytes_for(requests, stages)
    return StageSolution(stages, used, limit - used, limit, per_stage_bytes(requests))


def per_stage_bytes(requests) -> int:
    """Bytes one more stage adds to the per-stage buffers (their padding aside)."""
    return sum(r.placement(1)[0] for r in requests if r.per_stage)
