"""What the pools emit into kernels, and that it compiles (NVRTC, no GPU)."""

import re

import pytest

from tilemem import T
from tilemem.errors import CapacityError, TilememWarning


def simple_smem_kernel():
    @T.kernel(target="sm_90a", block=128)
    def k(x: T.Buffer((128,), "float32")):
        smem = T.SMEMPool()
        flags = smem.alloc((3,), "uint8", name="flags")
        tile = smem.alloc_mma((2, 64, 64), "bfloat16", name="tile")
        smem.commit()
        tile[1, T.thread_id() % 64, 5] = x[T.thread_id()]
        flags[0] = 1

    return k


def test_region_is_declared_1024_aligned_and_buffers_are_typed_pointers():
    src = simple_smem_kernel().source
    assert "extern __shared__ __align__(1024) uint8_t smem[];" in src
    assert "uint8_t* flags = reinterpret_cast<uint8_t*>(smem + 0);" in src
    assert "tm_bf16* tile = reinterpret_cast<tm_bf16*>(smem + 1024);" in src


def test_committed_size_is_the_kernels_dynamic_smem():
    k = simple_smem_kernel()
    assert k.dyn_smem_bytes == 1024 + 2 * 64 * 64 * 2


def test_swizzle_xor_appears_in_the_store_index():
    src = simple_smem_kernel().source
    store = next(line for line in src.splitlines() if line.strip().startswith("tile["))
    # 128B swizzle on bf16 element offsets: bits [3, 6) of the 16-byte chunk index, 0b111000
    assert "^" in store and "& 0x38" in store


def tmem_kernel(cta_group=1, sync=True, total=128):
    @T.kernel(target="sm_100a", block=128)
    def k(x: T.Buffer((128,), "float32")):
        smem = T.SMEMPool()
        tmem = T.TMEMPool(
            smem, total, cta_group=cta_group, alloc_warp=2, dealloc_warp=3, sync_after_alloc=sync
        )
        acc = tmem.alloc((128, 64), name="acc")
        smem.commit(
            100_000
        )  # at most 2 CTAs per SM, so 2 x 128 TMEM columns never block tcgen05.alloc
        tmem.commit()
        T.tmem_base(tmem)
        regs = T.alloc_local(32, "float32")
        T.ptx.tcgen05.ld(regs, T.tmem_addr(acc, lane=(T.warp_id() % 4) * 32, col=32), num=32)
        T.ptx.tcgen05.wait_ld()
        x[T.thread_id()] = regs[0]
        T.ptx.tcgen05.fence_before_thread_sync()
        T.cuda.syncthreads()
        tmem.dealloc()

    return k


def _guarded(src: str, warp: int) -> str:
    match = re.search(
        rf"if \(\(\(\(int\)threadIdx\.x / 32\) == {warp}\)\) \{{(.*?)\n  \}}", src, re.S
    )
    assert match, f"no warp-{warp} guard"
    return match.group(1)


@pytest.mark.parametrize("cta_group", [1, 2])
def test_tmem_alloc_and_dealloc_under_their_warp_guards(cta_group):
    src = tmem_kernel(cta_group).source
    alloc = _guarded(src, 2)
    assert (
        f"tcgen05.alloc.cta_group::{cta_group}.sync.aligned.shared::cta.b32" in alloc
        and '"r"(128u)' in alloc
    )
    assert "__syncwarp" in alloc
    dealloc = _guarded(src, 3)
    assert dealloc.index("relinquish_alloc_permit") < dealloc.index("tcgen05.dealloc")
    assert f"tcgen05.dealloc.cta_group::{cta_group}" in dealloc and "tmem_addr[0]" in dealloc


def test_no_syncwarp_when_not_asked():
    assert "__syncwarp" not in _guarded(tmem_kernel(sync=False).source, 2)


def test_tmem_base_is_read_after_fence_barrier_fence_and_added_to_addresses():
    src = tmem_kernel().source
    fence_b = src.index("tcgen05.fence::before_thread_sync")
    barrier = src.index("__syncthreads", fence_b)
    fence_a = src.index("tcgen05.fence::after_thread_sync", barrier)
    read = src.index("uint32_t tmem_base = tmem_addr[0];", fence_a)
    load = src.index("tcgen05.ld.sync.aligned.32x32b.x32.b32")
    assert fence_b < barrier < fence_a < read < load
    ld_line = src[load : src.index("\n", load)]
    assert "tmem_base" in ld_line and "<< 16" in ld_line and "32" in ld_line


@pytest.mark.parametrize("cta_group", [1, 2])
@pytest.mark.nvrtc
def test_tmem_kernels_compile_for_sm100a(cta_group):
    assert len(tmem_kernel(cta_group).compile()) > 1000


@pytest.mark.nvrtc
def test_smem_kernel_compiles_for_sm90a():
    assert simple_smem_kernel().compile()[:4] == b"\x7fELF"


def test_tmem_oversubscription_warns_without_a_cluster():
    # block=128 with no SMEM: 16 CTAs per SM (2048 threads // 128) x 256 columns = 4096 > 512.
    # tcgen05.alloc waits until a CTA frees columns; no CTA waits on another, so it runs
    # (docs/DESIGN.md#capacity-and-residency).
    with pytest.warns(TilememWarning, match=r"16 CTAs .* 16 x 256 = 4096 > 512"):

        @T.kernel(target="sm_100a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 256)
            smem.commit()
            tmem.commit()
            tmem.dealloc()


def test_tmem_oversubscription_in_a_cluster_is_refused_with_its_class():
    # CTAs of a cluster wait on each other: a CTA holding columns can wait forever
    # (docs/DESIGN.md#capacity-and-residency).
    with pytest.raises(CapacityError) as exc:

        @T.kernel(target="sm_100a", block=128, cluster=2)
        def k(x: T.Buffer((1,), "float32")):
            smem = T.SMEMPool()
            tmem = T.TMEMPool(smem, 256)
            smem.commit()
            tmem.commit()
            tmem.dealloc()

    msg = str(exc.value)
    assert "test_emission.py:" in msg and "16 x 256 = 4096 > 512" in msg
    assert "wait on each other" in msg and "at most 32 columns per CTA" in msg


def test_descriptors_and_masks_print_in_hex():
    # sm_90a wgmma descriptor of a 128B-swizzled K-major bf16 tile: layout type 1 (128B) in
    # bits 62-63, stride byte offset 1024 >> 4 = 64 in bits 32-45, leading byte offset 1 in
    # bits 16-29 (PTX ISA "Matrix Descriptor Format"): 0x4000004000010000
    @T.kernel(target="sm_90a", grid=1, block=128)
    def k():
        smem = T.SMEMPool()
        a = smem.alloc_mma((64, 64), "bfloat16", "128B")
        smem.commit()
        T.cuda.syncwarp()
        T.evaluate(T.ptx.wgmma.desc(a))

    assert "0x4000004000010000ull |" in k.source
    assert "__syncwarp(0xffffffffu);" in k.source
    assert "& 0x3fffu" in k.source  # the 14-bit start-address field
