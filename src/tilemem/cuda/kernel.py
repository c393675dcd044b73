"""A built kernel: its IR, CUDA C++ source, and cubin."""

from __future__ import annotations

import math
from functools import cached_property

from ..errors import PlanError
from ..ir.nodes import Kernel
from ..plan.model import MemoryPlan
from ..pool import SMEMPool
from ..pool.buffer import Buffer
from .codegen import generate
from .compile import compile_cubin


class KernelProgram:
    """What ``@T.kernel`` returns: ``.ir`` (printable), ``.source`` (CUDA C++), ``.compile()``
    (cubin), and the memory the kernel planned: ``.plan`` and ``.buffer(name)``."""

    def __init__(self, ir: Kernel):
        self.ir = ir

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def target(self) -> str:
        return self.ir.target

    @property
    def dyn_smem_bytes(self) -> int:
        return self.ir.dyn_smem_bytes

    @property
    def plan(self) -> MemoryPlan | None:
        """The memory plan of the kernel's SMEM pool and its TMEM pools, for blocks of the
        kernel's threads (None when the kernel made no pool): the offsets the source uses."""
        smem = [p for p in self.ir.pools if isinstance(p, SMEMPool)]
        if not smem:
            return None
        return smem[0].plan().with_threads(math.prod(self.ir.block))

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """Every buffer of the kernel's pools, in allocation order per pool."""
        return tuple(b for pool in self.ir.pools for b in pool.buffers)

    def buffer(self, name: str) -> Buffer:
        """The pool buffer called ``name``: its layout, offset and shape, for host code such as
        a TMA tensor map (``tilemem.cuda.tma.tile_map(tensor, kernel.buffer("A"))``)."""
        for buf in self.buffers:
            if buf.name == name:
                return buf
        names = [b.name for b in self.buffers]
        raise PlanError(f"kernel {self.name!r} has no buffer named {name!r}; it has {names}")

    @cached_property
    def source(self) -> str:
        return generate(self.ir)

    def compile(self) -> bytes:
        """The cubin for the kernel's target (compiled once, then cached)."""
        if "_cubin" not in self.__dict__:
            self.__dict__["_cubin"] = compile_cubin(self.source, self.ir.target, name=self.ir.name)
        return self.__dict__["_cubin"]

    def __repr__(self) -> str:
        return (
            f"<KernelProgram {self.name} for {self.target}, {self.dyn_smem_bytes} B dynamic SMEM>"
        )
