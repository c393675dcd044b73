"""On-GPU checks (marker ``gpu``; skipped without a GPU). scripts/gpu_check.sh runs them on the
device."""

import pytest

from tilemem import T
from tilemem.verify import (
    MODES,
    TMA_LAYOUTS,
    check_tma_load,
    check_tma_store,
    check_wgmma,
)
from tilemem.verify import _row_elems as row_elems

pytestmark = [pytest.mark.gpu, pytest.mark.nvrtc]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("esize", [1, 2, 4])
def test_tma_load_lands_where_the_layout_says(torch, mode, esize):
    row = (16 << MODES.index(mode)) // esize if mode != "none" else 16 // esize
    result = check_tma_load(
        mode,
        esize,
        (3, 32, 2 * row if mode != "none" else 4 * row),
        seed=esize * 7 + MODES.index(mode),
    )
    assert result.ok, result.detail


@pytest.mark.parametrize("mode", MODES)
def test_threads_write_through_the_layout_and_tma_stores_logical_order(torch, mode):
    row = (16 << MODES.index(mode)) // 2 if mode != "none" else 8
    result = check_tma_store(mode, 2, (2, 32, 2 * row), seed=11)
    assert result.ok, result.detail


@pytest.mark.parametrize("mode", TMA_LAYOUTS)
def test_tma_round_trips_a_row_major_buffer_and_every_swizzle_mode(torch, mode):
    """Load: the raw SMEM bytes sit where the layout says. Store: threads write through the
    layout and TMA brings back the logical tile. Both follow tma_fill's boxes."""
    k = 2 * row_elems(mode, 2)
    loaded = check_tma_load(mode, 2, (2, 32, k), pad=1500, seed=21 + TMA_LAYOUTS.index(mode))
    assert loaded.ok, loaded.detail
    stored = check_tma_store(mode, 2, (2, 32, k), seed=31 + TMA_LAYOUTS.index(mode))
    assert stored.ok, stored.detail


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [64, 256])
def test_wgmma_reads_operands_through_tilemem_descriptors(torch, mode, n):
    result = check_wgmma(mode, n, seed=n + MODES.index(mode))
    assert result.ok, result.detail


def scale_kernel(smem_floats):
    @T.kernel(target="sm_90a", block=128, name="scale")
    def kernel(x: T.Buffer(("n",), "float32"), factor: T.float32):
        smem = T.SMEMPool()
        tmp = smem.alloc((smem_floats,), "float32")
        smem.commit()
        i = T.thread_id()
        with T.If(i < x.shape[0]):
            tmp[i] = x[i] * factor
            x[i] = tmp[i] + 1.0

    return kernel


@pytest.mark.parametrize("kind", ["torch", "cupy", "cuda.core"])
def test_launch_accepts_array_kinds_and_binds_sizes(torch, kind):
    from tilemem.cuda.launch import Launcher

    launch = Launcher(scale_kernel(128))
    if kind == "torch":
        x = torch.arange(100, dtype=torch.float32, device="cuda")
        launch(x, 2.0)
        torch.cuda.synchronize()
        assert torch.equal(x, torch.arange(100, device="cuda", dtype=torch.float32) * 2 + 1)
    elif kind == "cupy":
        cupy = pytest.importorskip("cupy")
        x = cupy.arange(64, dtype=cupy.float32)
        launch(x, 3.0)
        cupy.cuda.runtime.deviceSynchronize()
        assert bool((x == cupy.arange(64, dtype=cupy.float32) * 3 + 1).all())
    else:
        cupy = pytest.importorskip("cupy")
        from cuda.core import Device

        @T.kernel(target="sm_90a", block=32, name="iota")
        def iota(out: T.Buffer((32,), "float32"), factor: T.float32):
            out[T.thread_id()] = T.cast(T.thread_id(), "float32") * factor

        dev = Device()
        buf = dev.memory_resource.allocate(4 * 32, stream=dev.default_stream)
        Launcher(iota)(buf, 0.5)
        dev.sync()
        mem = cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(int(buf.handle), 4 * 32, buf), 0)
        got = cupy.ndarray((32,), cupy.float32, mem)
        assert bool((got == cupy.arange(32, dtype=cupy.float32) * 0.5).all())


def test_dynamic_smem_above_48k_raises_the_limit_automatically(torch):
    from tilemem.cuda.launch import Launcher

    kernel = scale_kernel(20_000)  # 80,000 bytes
    assert kernel.dyn_smem_bytes == 80_000
    x = torch.ones(128, device="cuda")
    Launcher(kernel)(x, 5.0)
    torch.cuda.synchronize()
    assert torch.equal(x, torch.full_like(x, 6.0))


def test_blackwell_kernel_on_hopper_says_why(torch):
    from tilemem.cuda.launch import Launcher, LaunchError

    @T.kernel(target="sm_100a", block=32, name="bw")
    def kernel(x: T.Buffer((1,), "float32")):
        x[0] = 1.0

    with pytest.raises(
        LaunchError, match=r"'bw' is built for sm_100a.*compute capability 10.0; this device is 9.0"
    ):
        Launcher(kernel)


def test_hopper_gemm_example_kernel_computes_a_gemm(torch):
    """The built-in hopper-gemm kernel (TMA producer, two wgmma consumer warpgroups, 4-stage
    mbarrier pipeline, epilogue through C_epilogue) gives A @ B^T on fresh random inputs."""
    from tilemem.cuda.launch import Launcher
    from tilemem.cuda.tma import tile_map
    from tilemem.examples import hopper_gemm_bf16
    from tilemem.kernels import hopper_gemm

    m, n, k = 256, 512, 640  # 2 x 2 CTAs, 10 K tiles: the 4-stage ring wraps twice
    plan = hopper_gemm_bf16()  # the same buffers the kernel's pool places
    gen = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda").to(torch.bfloat16)
    maps = [
        tile_map(a, plan.buffer("A")),
        tile_map(b, plan.buffer("B")),
        tile_map(c, plan.buffer("C_epilogue")),
    ]
    Launcher(hopper_gemm())(*maps, k // 64, grid=(n // 256, m // 128))
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    err = float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))
    assert bool(torch.isfinite(c).all()) and err < 1e-2, err
