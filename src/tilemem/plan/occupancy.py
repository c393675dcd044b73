"""Occupancy: how many CTAs of a plan fit on one SM, which limit binds, and the TMEM hazard.

CTAs per SM are bounded by shared memory (``floor(smem_per_sm / (block_bytes
+ 1 KiB reserve))``), by threads (``floor(max_threads_per_sm / threads)``) and
by the hardware's resident-block limit; registers bound it too but are unknown
before compilation. Tensor memory does not stop a CTA from becoming resident:
``tcgen05.alloc`` blocks instead, so CTAs x columns above 512 is a hazard, not
a limit, and :func:`check_tmem_residency` raises it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CapacityError, TilememWarning
from ..intmath import align_up
from ..layout.tmem import TMEM_COLS, TMEM_MIN_ALLOC_COLS
from ..validate import check_int
from .target import Target, get_target


@dataclass(frozen=True)
class Occupancy:
    """CTAs per SM and every limit behind it."""

    target: str
    threads: int
    smem_bytes: int
    tmem_cols: int
    limits: dict  # name -> CTAs per SM that limit allows
    ctas_per_sm: int
    binding: str

    def __str__(self) -> str:
        """The verdict as a sentence, e.g. "3 CTAs per SM on sm_90a with 384 threads each,
        bound by shared memory (shared memory allows 3, threads 5, block slots 32)." """
        count = f"{self.ctas_per_sm} CTA{'s' if self.ctas_per_sm != 1 else ''}"
        limits = ", ".join(
            f"{name} {'allows ' if i == 0 else ''}{value}"
            for i, (name, value) in enumerate(self.limits.items())
        )
        text = (
            f"{count} per SM on {self.target} with {self.threads} threads each, bound by "
            f"{self.binding} ({limits})"
        )
        if self.tmem_cols:
            total = self.tmem_cols * self.ctas_per_sm
            verdict = "fit" if total <= TMEM_COLS else "exceed, so tcgen05.alloc blocks"
            text += (
                f"; {self.tmem_cols} TMEM columns each, {total} in all, {verdict} the "
                f"{TMEM_COLS} of an SM"
            )
        return text + "."

    def lines(self) -> list[str]:
        out = [
            f"{self.ctas_per_sm} CTA(s) per SM on {self.target} with {self.threads} threads, bound "
            f"by {self.binding}"
        ]
        for name, value in self.limits.items():
            out.append(f"{name:<13} allows {value}")
        if self.tmem_cols:
            tmem_ok = self.tmem_cols * self.ctas_per_sm <= TMEM_COLS
            out.append(
                f"{'tmem columns':<13} {self.tmem_cols} per CTA x {self.ctas_per_sm} = "
                f"{self.tmem_cols * self.ctas_per_sm} of {TMEM_COLS} "
                f"{'(ok)' if tmem_ok else '(tcgen05.alloc would block: see check_tmem_residency)'}"
            )
        return out


def occupancy(smem_bytes: int, threads: int, target: str | Target, tmem_cols: int = 0) -> Occupancy:
    target = get_target(target)
    threads = check_int(threads, "threads", error=CapacityError)
    smem_bytes = check_int(smem_bytes, "smem_bytes", minimum=0, error=CapacityError)
    tmem_cols = check_int(tmem_cols, "tmem_cols", minimum=0, error=CapacityError)
    if threads < 1 or threads > target.max_threads_per_block:
        raise CapacityError(
            f"{threads} threads per block; {target.name} allows 1 to {target.max_threads_per_block}"
        )
    if smem_bytes > target.max_smem_per_block:
        raise CapacityError(
            f"{smem_bytes} bytes of shared memory per block exceed {target.name}'s "
            f"{target.max_smem_per_block}: "
            f"remove at least {smem_bytes - target.max_smem_per_block} bytes"
        )
    per_block = smem_bytes + target.reserved_smem_per_block
    limits = {
        "shared memory": target.smem_per_sm // per_block,
        "threads": target.max_threads_per_sm // threads,
        "block slots": target.max_blocks_per_sm,
    }
    binding = min(limits, key=limits.__getitem__)
    return Occupancy(target.name, threads, smem_bytes, tmem_cols, limits, limits[binding], binding)


def check_tmem_per_cta(pools: Sequence[tuple[str, int]]) -> int:
    """The columns of one CTA's TMEM pools ``(name, total_cols)``; CapacityError above 512.

    After the first ``tcgen05.alloc`` holds its columns, a second that does not fit
    in the rest could never succeed (PTX ISA 9.0, tcgen05.alloc): the CTA waits on
    itself.
    """
    per_cta = sum(cols for _, cols in pools)
    if per_cta > TMEM_COLS:
        parts = " + ".join(f"{name} ({cols})" for name, cols in pools)
        raise CapacityError(
            f"TMEM pools {parts} = {per_cta} columns in one CTA, but tensor memory has "
            f"{TMEM_COLS}: once the first tcgen05.alloc holds its columns the next could never "
            f"succeed. Shrink total_cols so the pools sum to at most {TMEM_COLS}, or carve the "
            "buffers out of one pool"
        )
    return per_cta


def check_tmem_residency(
    pools: Sequence[tuple[str, int]],
    *,
    smem_bytes: int,
    threads: int | None,
    target: str | Target,
    cooperative: bool,
    lowest_threads: int = 32,
) -> None:
    """The TMEM residency rule over every TMEM pool ``(name, total_cols)`` of a CTA
    (docs/DESIGN.md#capacity-and-residency).

    - The pools of one CTA together must fit the 512 columns: after the first
      allocation takes its columns a second ``tcgen05.alloc`` could never succeed
      (PTX ISA 9.0, tcgen05.alloc). CapacityError.
    - Co-resident CTAs x columns per CTA above 512 makes ``tcgen05.alloc`` block
      until another CTA frees columns. When CTAs wait on each other (a cluster
      launch, cta_group::2: ``cooperative``) a CTA holding columns may wait for a
      peer that cannot get any: CapacityError. Otherwise the kernel runs with
      fewer CTAs active than occupancy suggests: TilememWarning.

    ``threads=None`` estimates CTAs per SM from ``lowest_threads`` (the fewest
    threads that reach the pools' warps), an upper bound on residency, and only
    warns.
    """
    target = get_target(target)
    per_cta = check_tmem_per_cta(pools)
    if not per_cta:
        return
    occ = occupancy(smem_bytes, threads or lowest_threads, target, per_cta)
    if per_cta * occ.ctas_per_sm <= TMEM_COLS:
        return
    estimate = "" if threads else f" (threads unknown: at least {lowest_threads} assumed)"
    message = (
        f"{occ.ctas_per_sm} CTAs of this kernel fit on one {target.name} SM (bound by "
        f"{occ.binding}){estimate} and each allocates {per_cta} TMEM columns: "
        f"{occ.ctas_per_sm} x {per_cta} = {occ.ctas_per_sm * per_cta} > {TMEM_COLS}. "
        "tcgen05.alloc blocks until another CTA frees columns"
    )
    fixes = "; ".join(_residency_fixes(occ, target, per_cta))
    if cooperative and threads:
        raise CapacityError(
            f"{message}, and these CTAs wait on each other (cluster launch or cta_group::2), so "
            f"a CTA holding columns can wait forever for a peer that cannot get any. Fix: {fixes}"
        )
    warnings.warn(
        f"{message}: the kernel runs, with fewer CTAs active than occupancy suggests. To keep "
        f"them all active: {fixes}",
        TilememWarning,
        stacklevel=4,
    )


def _residency_fixes(occ: Occupancy, target: Target, per_cta: int) -> list[str]:
    """Changes that bring CTAs x columns within 512; only ones the target allows."""
    fit = TMEM_COLS // per_cta  # >= 1: the per-CTA sum is within 512
    fixes = []
    cols = TMEM_COLS // occ.ctas_per_sm
    cols = 1 << (cols.bit_length() - 1) if cols else 0  # allocations are powers of two
    if cols >= TMEM_MIN_ALLOC_COLS:
        fixes.append(f"allocate at most {cols} columns per CTA")
    # smallest block size b with smem_per_sm // (b + reserve) <= fit
    smem = target.smem_per_sm // (fit + 1) + 1 - target.reserved_smem_per_block
    if occ.smem_bytes < smem <= target.max_smem_per_block:
        fixes.append(f"use at least {smem} bytes of shared memory per CTA")
    # smallest whole-warp block size t with max_threads_per_sm // t <= fit
    threads = align_up(target.max_threads_per_sm // (fit + 1) + 1, 32)
    if occ.threads < threads <= target.max_threads_per_block:
        fixes.append(f"use at least {threads} threads per CTA")
    return fixes or [f"keep at most {fit} CTA(s) per SM"]
