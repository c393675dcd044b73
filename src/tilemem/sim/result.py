"""What a simulated run returns: its hazards and instruction counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..errors import HazardError

KINDS = (
    "race",
    "proxy",
    "uninitialized",
    "out-of-bounds",
    "lifetime",
    "tmem-protocol",
    "mbarrier",
    "deadlock",
)


@dataclass(frozen=True)
class Access:
    """One side of a hazard: the instruction, where it ran, and the user's source line."""

    op: str
    cta: tuple
    warp: int
    lanes: str
    phase: str | None
    source: str

    def __str__(self) -> str:
        phase = f", phase {self.phase}" if self.phase else ""
        who = f"CTA {self.cta} warp {self.warp} lanes {self.lanes}"
        return f"{self.op} by {who}{phase} at {self.source}"


@dataclass(frozen=True)
class Hazard:
    """A bug the hardware would run silently (or hang on).

    ``kind`` is one of :data:`KINDS`; ``space`` the memory ("shared", "global", "tmem",
    "registers", "mbarrier", ""); ``buffer`` the buffer's name; ``where`` the byte range
    (or lanes x columns); ``accesses`` the instructions involved, the later one first;
    ``message`` what happened and the usual fix.
    """

    kind: str
    space: str
    buffer: str
    where: str
    accesses: tuple
    message: str

    def __str__(self) -> str:
        head = f"{self.kind}"
        if self.buffer or self.where:
            head += f" on {self.space} {self.buffer} {self.where}".rstrip()
        lines = [f"{head}: {self.message}"] + [f"    {a}" for a in self.accesses]
        return "\n".join(lines)


@dataclass(frozen=True)
class SimResult:
    """``hazards`` found, ``instructions`` executed (per op, counted per warp)."""

    hazards: tuple
    instructions: Counter = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.hazards

    def raise_for_hazards(self) -> None:
        """Raise :class:`HazardError` listing every hazard (nothing when there is none)."""
        if self.hazards:
            text = "\n".join(str(h) for h in self.hazards)
            raise HazardError(f"{len(self.hazards)} hazard(s) in the simulated run:\n{text}")

    def of_kind(self, kind: str) -> tuple:
        return tuple(h for h in self.hazards if h.kind == kind)
