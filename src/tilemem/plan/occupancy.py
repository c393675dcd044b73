"""Occupancy: how many CTAs of a plan fit on one SM, which limit binds, and the TMEM hazard.

CTAs per SM are bounded by shared memory (``floor(smem_per_sm / (block_bytes
+ 1 KiB reserve))``), by threads (``floor(max_threads_per_sm / threads)``) and
by the hardware's resident-block limit; registers bound it too but are unknown
before compilation. Tensor memory does not stop a CTA from becoming resident:
``tcgen05.alloc`` blocks instead, so CTAs x columns above 512 is a hazard, not
a limit, and :func:`check_tmem_residency` raises it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CapacityError
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

    def lines(self) -> list[str]:
        out = [
            f"{self.ctas_per_sm} CTA(s) per SM on {self.target} with {self.threads} threads, bound "
            f"by {self.binding}"
        ]
        for name, value in self.limits.items():
            out.append(f"{name:<13} allows {value}")
        if self.tmem_cols:
            tmem_ok = self.tmem_cols * self.ctas_per_sm <= 512
            out.append(
                f"{'tmem columns':<13} {self.tmem_cols} per CTA x {self.ctas_per_sm} = "
                f"{self.tmem_cols * self.ctas_per_sm} "
                "of 512 "
                f"{'(ok)' if tmem_ok else '(tcgen05.alloc would block: see check_tmem_residency)'}"
            )
        return out


def occupancy(smem_bytes: int, threads: int, target: str | Target, tmem_cols: int = 0) -> Occupancy:
    target = get_target(target)
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


def check_tmem_residency(occ: Occupancy) -> None:
    """TMEM columns per CTA x co-resident CTAs must stay <= 512, or tcgen05.alloc waits forever."""
    if occ.tmem_cols and occ.tmem_cols * occ.ctas_per_sm > 512:
        fit = 512 // occ.tmem_cols
        target = get_target(occ.target)
        # smallest block size b with smem_per_sm // (b + reserve) <= fit
        need_smem = target.smem_per_sm // (fit + 1) + 1 - target.reserved_smem_per_block
        raise CapacityError(
            f"{occ.ctas_per_sm} CTAs of this kernel fit on one {occ.target} SM (bound by "
            f"{occ.binding}) and each "
            f"allocates {occ.tmem_cols} TMEM columns: {occ.ctas_per_sm * occ.tmem_cols} > 512. "
            "tcgen05.alloc blocks "
            "until columns are free, so co-resident CTAs can wait on each other forever. Fix: "
            "allocate at most "
            f"{512 // occ.ctas_per_sm} columns per CTA, or keep at most {fit} CTA(s) per SM "
            f"(e.g. use at least {need_smem} bytes of shared memory per CTA, or more threads)"
        )
