"""A hand-written CUDA C++ kernel that uses a plan's header compiles with NVRTC."""

import pytest

from tilemem.cuda.compile import CompileError, compile_cubin
from tilemem.examples import EXAMPLES

HOPPER_KERNEL = r"""
extern "C" __global__ void use_plan(unsigned* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  using namespace plan::smem;
  static_assert(B::swizzle_bytes == 128, "the B tile is 128-byte swizzled");
  unsigned char* b_tile = smem + B::offset;
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + full_bar::offset);
  b_tile[threadIdx.x] = (unsigned char)threadIdx.x;
  full[0] = 0;
  __syncthreads();
  out[threadIdx.x] = b_tile[threadIdx.x ^ 1] + committed_bytes;
}
"""

BLACKWELL_KERNEL = r"""
extern "C" __global__ void use_plan(unsigned* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const unsigned base = *reinterpret_cast<unsigned*>(smem + plan::tmem::slot_offset);
  // stage s of the accumulator: base + column, lanes in the high half-word
  const unsigned stage = threadIdx.x % plan::tmem::acc_stages::stages;
  const unsigned column = plan::tmem::acc_stages::first_col
                          + stage * plan::tmem::acc_stages::stride_cols;
  out[threadIdx.x] = base + (plan::tmem::acc::lane_first << 16) + column;
}
"""


@pytest.mark.parametrize(
    ("example", "kernel"), [("hopper-gemm", HOPPER_KERNEL), ("blackwell-gemm", BLACKWELL_KERNEL)]
)
def test_kernel_using_the_header_compiles(example, kernel):
    plan = EXAMPLES[example].build().plan()
    source = plan.to_cpp_header("plan") + kernel
    assert compile_cubin(source, plan.target, name="use_plan")[:4] == b"\x7fELF"


def test_nvrtc_reports_the_static_assert_of_a_broken_plan():
    import dataclasses

    plan = EXAMPLES["hopper-gemm"].build().plan()
    smem = plan.smem
    entries = tuple(
        dataclasses.replace(e, offset=e.offset + 256) if e.name == "C_epilogue" else e
        for e in smem.entries
    )
    broken = dataclasses.replace(plan, pools=(dataclasses.replace(smem, entries=entries),))
    with pytest.raises(CompileError, match="C_epilogue: a swizzled buffer starts on its swizzle"):
        compile_cubin(broken.to_cpp_header("plan") + HOPPER_KERNEL, "sm_90a", name="use_plan")
