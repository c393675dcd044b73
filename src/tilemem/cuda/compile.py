"""Compile generated CUDA C++ to a cubin with NVRTC (through ``cuda.core``); no GPU needed."""

from __future__ import annotations

import re

from ..errors import CompileError

_LINE = re.compile(r"\((\d+)\): (?:error|catastrophic error)")
_PTXAS_LINE = re.compile(r"ptxas[^\n]*line (\d+)")


def _context(source: str, log: str, radius: int = 3) -> str:
    lines = source.splitlines()
    marks = sorted({int(m) for m in _LINE.findall(log)})
    chunks = []
    for n in marks[:3]:
        lo, hi = max(1, n - radius), min(len(lines), n + radius)
        chunk = [f"{'>' if i == n else ' '}{i:5d} | {lines[i - 1]}" for i in range(lo, hi + 1)]
        chunks.append("\n".join(chunk))
    return "\n...\n".join(chunks)


def compile_cubin(source: str, arch: str, *, name: str = "kernel") -> bytes:
    """Compile ``source`` for ``arch`` (``sm_90a`` ...) and return the cubin bytes."""
    try:
        from cuda.core import Program, ProgramOptions
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CompileError(
            "compiling needs the cuda extra: pip install 'tilemem[cuda]' (cuda-core, "
            "cuda-bindings, nvidia-cuda-nvrtc)"
        ) from exc
    options = ProgramOptions(arch=arch, std="c++17", name=f"{name}.cu")
    try:
        program = Program(source, "c++", options)
        module = program.compile("cubin")
    except Exception as exc:  # NVRTC reports through a generic exception with the log in its text
        log = str(exc)
        context = _context(source, log)
        raise CompileError(
            f"NVRTC could not compile kernel {name!r} for {arch}:\n{log.strip()}"
            + (f"\n\ngenerated source around the error:\n{context}" if context else "")
        ) from None
    return bytes(module.code) if hasattr(module, "code") else module
