"""Every built-in example exists as a kernel and compiles for its target."""

import pytest

from tilemem.examples import EXAMPLES
from tilemem.kernels import KERNELS


def test_every_plan_example_has_a_kernel():
    assert set(KERNELS) == set(EXAMPLES)


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.nvrtc
def test_example_kernel_compiles_for_its_target(name):
    program = KERNELS[name]()
    assert program.target == EXAMPLES[name].target
    plan_smem = EXAMPLES[name].build().plan().smem.committed
    assert program.dyn_smem_bytes == plan_smem
    assert program.compile()[:4] == b"\x7fELF"


def test_emit_writes_the_source(tmp_path, capsys):
    from tilemem.cli import main

    out = tmp_path / "k.cu"
    assert main(["emit", "--example", "blackwell-gemm", "-o", str(out)]) == 0
    text = out.read_text()
    assert "tcgen05.alloc.cta_group::1" in text and 'extern "C" __global__' in text
