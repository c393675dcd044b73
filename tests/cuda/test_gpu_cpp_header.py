"""On the GPU: a hand-written CUDA C++ kernel TMA-loads a tile into the planned, 128-byte
swizzled buffer, using only the plan's C++ header to find it and to undo the swizzle."""

import ctypes

import pytest

from tilemem import SMEMPool
from tilemem.cuda.compile import compile_cubin

KERNEL = r"""
struct __align__(64) TensorMap { unsigned long long opaque[16]; };

extern "C" __global__ void tma_into_plan(const __grid_constant__ TensorMap tmap,
                                         unsigned short* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  namespace p = plan::smem;
  static_assert(p::tile::swizzle_bytes == 128 && p::tile::offset % 1024 == 0, "planned tile");
  unsigned char* tile = smem + p::tile::offset;
  const unsigned bar = (unsigned)__cvta_generic_to_shared(smem + p::bar::offset);
  const unsigned dst = (unsigned)__cvta_generic_to_shared(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"(p::tile::bytes) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];"
        :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(&tmap)), "r"(0), "r"(0), "r"(bar)
        : "memory");
  }
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_TILE:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      "@!done bra WAIT_TILE;\n"
      "}\n" :: "r"(bar) : "memory");
  // Swizzle<L, 4, 3> on byte offsets: bits [4, 4+L) ^= bits [7, 7+L) (L = swizzle_mode)
  const unsigned mask = (1u << p::tile::swizzle_mode) - 1;
  for (unsigned i = threadIdx.x; i < 64 * 64; i += blockDim.x) {
    const unsigned byte = (i / 64) * p::tile::swizzle_bytes + (i % 64) * 2;
    const unsigned stored = byte ^ (((byte >> 7) & mask) << 4);
    out[i] = *reinterpret_cast<const unsigned short*>(tile + stored);
  }
}
"""


def planned_tile():
    smem = SMEMPool(target="sm_90a")
    smem.alloc((1,), "uint64", name="bar")
    tile = smem.alloc_mma((64, 64), "bfloat16", "128B", name="tile")  # lands at byte 1024
    smem.commit()
    return smem, tile


def source() -> str:
    smem, _ = planned_tile()
    return smem.plan().to_cpp_header("plan") + KERNEL


def test_the_hand_written_kernel_compiles():
    assert compile_cubin(source(), "sm_90a", name="tma_into_plan")[:4] == b"\x7fELF"


@pytest.mark.gpu
def test_tma_lands_in_the_planned_swizzled_buffer_the_header_describes():
    torch = pytest.importorskip("torch")
    from cuda.core import Device

    from tilemem.cuda.device import check, driver
    from tilemem.cuda.tma import tile_map

    device = Device()
    device.set_current()
    smem, tile = planned_tile()
    assert tile.byte_offset == 1024
    data = torch.arange(64 * 64, dtype=torch.int16, device="cuda").reshape(64, 64) * 7 + 3
    out = torch.zeros(64 * 64, dtype=torch.int16, device="cuda")
    tmap = tile_map(data, tile)
    assert tmap.plan.boxes_per_tile == 1 and tmap.plan.box == (64, 64)
    drv = driver()
    module = check(drv.cuModuleLoadData(compile_cubin(source(), "sm_90a")), "load", "k")
    function = check(drv.cuModuleGetFunction(module, b"tma_into_plan"), "get", "k")
    out_ptr = ctypes.c_void_p(out.data_ptr())
    params = (ctypes.c_void_p * 2)(tmap.address, ctypes.addressof(out_ptr))
    committed = smem.plan().smem.committed
    launch = drv.cuLaunchKernel(
        function, 1, 1, 1, 128, 1, 1, committed, 0, ctypes.addressof(params), 0
    )
    check(launch, "launch", "tma_into_plan")
    torch.cuda.synchronize()
    assert torch.equal(out.reshape(64, 64).cpu(), data.cpu())
