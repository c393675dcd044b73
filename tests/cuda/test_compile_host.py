"""``compile_cubin`` where cuda-core is missing: a one-line error naming the extra to install,
raised before NVRTC is needed (runs on any machine: the import is made to fail)."""

from __future__ import annotations

import sys

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
