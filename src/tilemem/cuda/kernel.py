"""A built kernel: its IR, CUDA C++ source, and cubin."""

from __future__ import annotations

from functools import cached_property

from ..ir.nodes import Kernel
from .codegen import generate
from .compile import compile_cubin


class KernelProgram:
    """What ``@T.kernel`` returns: ``.ir`` (printable), ``.source`` (CUDA C++), ``.compile()``
    (cubin)."""

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
