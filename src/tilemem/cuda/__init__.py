"""CUDA backend: C++ code generation, NVRTC compilation (and, on a GPU, launching)."""

from .codegen import generate
from .compile import CompileError, compile_cubin
from .kernel import KernelProgram

__all__ = ["CompileError", "KernelProgram", "compile_cubin", "generate"]
