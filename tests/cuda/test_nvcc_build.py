"""Generated kernels compile in a C++ project's nvcc build as well as with NVRTC."""

import shutil
import subprocess

import pytest

from tilemem.cuda.compile import compile_cubin
from tilemem.kernels import KERNELS

pytestmark = pytest.mark.nvrtc

NVCC = shutil.which("nvcc") or shutil.which("/usr/local/bin/nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", ["hopper-gemm", "blackwell-gemm"])
def test_emitted_kernel_compiles_with_nvcc_and_nvrtc(name, tmp_path):
    program = KERNELS[name]()
    source = tmp_path / f"{name}.cu"
    source.write_text(program.source)
    cubin = tmp_path / f"{name}.cubin"
    # nvcc brings the host's <stdint.h> (int64_t is long there); NVRTC brings none
    result = subprocess.run(
        [NVCC, "-cubin", f"-arch={program.target}", str(source), "-o", str(cubin)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert cubin.read_bytes()[:4] == b"\x7fELF"
    assert compile_cubin(program.source, program.target, name=name)[:4] == b"\x7fELF"
