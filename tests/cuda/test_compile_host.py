"""``compile_cubin`` where cuda-core is missing: a one-line error naming the extra to install,
raised before NVRTC is needed (runs on any machine: the import is made to fail)."""

from __future__ import annotations

import sys
import types

import pytest

from tilemem.cuda import CompileError, compile_cubin


def test_compiling_without_cuda_core_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.core", None)  # import raises ImportError
    with pytest.raises(CompileError) as err:
        compile_cubin('extern "C" __global__ void k() {}', "sm_90a", name="k")
    assert str(err.value) == (
        "compiling needs the cuda extra: pip install 'tilemem[cuda]' (cuda-core, "
        "cuda-bindings, nvidia-cuda-nvrtc)"
    )
    assert isinstance(err.value.__cause__, ImportError)


def test_an_nvrtc_failure_quotes_the_log_and_the_source_around_its_line(monkeypatch):
    """NVRTC reports ``NAME.cu(LINE): error: ...``; the error quotes the log and three lines
    either side of LINE, marked with ``>`` (a fake ``cuda.core.Program`` fails the way NVRTC
    does, so this runs without NVRTC)."""
    log = 'k.cu(5): error: identifier "oops" is undefined\n1 error detected'

    class Program:
        def __init__(self, source, code_type, options):
            assert (code_type, options) == ("c++", ("sm_90a", "c++17", "k.cu"))

        def compile(self, target):
            raise RuntimeError(log)

    core = types.ModuleType("cuda.core")
    core.Program = Program  # type: ignore[attr-defined]
    core.ProgramOptions = lambda arch, std, name: (arch, std, name)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda.core", core)
    source = "\n".join(f"line{i}" for i in range(1, 11))
    with pytest.raises(CompileError) as err:
        compile_cubin(source, "sm_90a", name="k")
    assert str(err.value) == (
        f"NVRTC could not compile kernel 'k' for sm_90a:\n{log}\n\n"
        "generated source around the error:\n"
        "     2 | line2\n     3 | line3\n     4 | line4\n>    5 | line5\n"
        "     6 | line6\n     7 | line7\n     8 | line8"
    )
