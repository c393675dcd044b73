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


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_plan_header_compiles_in_an_nvcc_build(tmp_path):
    from tilemem.examples import EXAMPLES

    plan = EXAMPLES["blackwell-gemm"].build().plan()
    (tmp_path / "plan.h").write_text(plan.to_cpp_header("plan"))
    source = tmp_path / "use.cu"
    source.write_text(
        '#include "plan.h"\n'
        "__global__ void k(unsigned* out) { out[0] = plan::tmem::acc::col_offset"
        " + plan::smem::committed_bytes; }\n"
    )
    result = subprocess.run(
        [NVCC, "-cubin", "-arch=sm_100a", str(source), "-o", str(tmp_path / "use.cubin")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
