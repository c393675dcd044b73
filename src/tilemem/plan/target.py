"""GPU targets: shared-memory and tensor-memory capacity, thread limits, instructions.

Numbers from the CUDA C++ Programming Guide (compute-capability tables) and
PTX ISA 9.0, as collected in docs/HARDWARE-RULES.md. KB here means 1024 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import TargetError
from ..layout.tmem import TMEM_COLS

KB = 1024


@dataclass(frozen=True)
class Target:
    """One compilation target and the per-SM / per-block limits that planning needs."""

    name: str
    smem_per_sm: int
    max_smem_per_block: int  # opt-in maximum of dynamic shared memory per block
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int = 1024
    reserved_smem_per_block: int = 1 * KB  # taken by the system for every resident block
    tmem_cols: int = 0  # 32-bit TMEM columns per SM (x 128 lanes); 0 = no tensor memory
    instructions: frozenset = field(default_factory=frozenset)

    @property
    def has_tmem(self) -> bool:
        """Whether code built for this target may use TMEM: the SM has it and the target has
        tcgen05 (plain sm_100 has the memory but only arch-specific sm_100a code reaches it)."""
        return self.tmem_cols > 0 and "tcgen05" in self.instructions

    @property
    def arch(self) -> str:
        """The NVRTC/ptxas architecture name, e.g. ``sm_90a``."""
        return self.name

    def supports(self, instruction: str) -> bool:
        return instruction in self.instructions

    def require(self, feature: str, instruction: str | None = None) -> None:
        """TargetError naming the instruction, this target and the targets that have it."""
        if feature not in self.instructions:
            owners = [t.name for t in TARGETS.values() if feature in t.instructions]
            fix = f"; build for target={owners[-1]!r}" if owners else ""
            raise TargetError(
                f"{instruction or feature} does not exist on {self.name}; it needs one of: "
                f"{', '.join(owners) or 'no known target'}{fix}"
            )


_AMPERE = frozenset({"cp.async", "mbarrier", "ldmatrix", "mma.sync"})
_HOPPER_BASE = _AMPERE | {
    "cp.async.bulk",
    "tma",
    "cluster",
    "stmatrix",
    "elect.sync",
    "mbarrier.tx",
    "fence.proxy.async",
    "griddepcontrol",
}
_HOPPER = _HOPPER_BASE | {"wgmma", "setmaxnreg"}
_BLACKWELL_BASE = _HOPPER_BASE
_BLACKWELL = _BLACKWELL_BASE | {"tcgen05", "setmaxnreg"}

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("sm_80", 164 * KB, 163 * KB, 2048, 32, instructions=_AMPERE),
        Target("sm_86", 100 * KB, 99 * KB, 1536, 16, instructions=_AMPERE),
        Target("sm_87", 164 * KB, 163 * KB, 1536, 16, instructions=_AMPERE),
        Target("sm_89", 100 * KB, 99 * KB, 1536, 24, instructions=_AMPERE),
        Target("sm_90", 228 * KB, 227 * KB, 2048, 32, instructions=_HOPPER_BASE),
        Target("sm_90a", 228 * KB, 227 * KB, 2048, 32, instructions=_HOPPER),
        Target(
            "sm_100",
            228 * KB,
            227 * KB,
            2048,
            32,
            tmem_cols=TMEM_COLS,
            instructions=_BLACKWELL_BASE,
        ),
        Target(
            "sm_100a", 228 * KB, 227 * KB, 2048, 32, tmem_cols=TMEM_COLS, instructions=_BLACKWELL
        ),
        Target("sm_120", 100 * KB, 99 * KB, 1536, 32, instructions=_HOPPER_BASE),
    )
}


def get_target(target: str | Target) -> Target:
    """Look a target up by name (``"sm_90a"``); a :class:`Target` passes through."""
    if isinstance(target, Target):
        return target
    if isinstance(target, str) and target in TARGETS:
        return TARGETS[target]
    raise TargetError(f"unknown target {target!r}; known targets: {', '.join(TARGETS)}")
