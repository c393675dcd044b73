"""The simulator against the hardware (marker ``gpu``): every Hopper kernel the simulator runs is
also launched on the GPU with the same inputs, and the two outputs are compared.

- Copy and integer kernels (the simulator's TMA round trips, the shared-memory exchange) must be
  bit-identical.
- GEMMs on small-integer bf16 inputs must be bit-identical too: every product and every partial
  sum is an integer below 2^24, so fp32 accumulation is exact in any order, and the bf16 result
  is the same rounding of the same value.
- A wgmma reading an operand through a descriptor with each base offset (bits 49-51) must be
  bit-identical too, and only the base offset the PTX ISA prescribes may give A @ B^T.
- GEMMs on random normal inputs may differ only by the order of fp32 accumulation inside wgmma
  (which the PTX ISA leaves unspecified), then rounded to bf16: per element at most one bf16 ulp
  of the result (2^-7 relative) plus the reordering error of fp32 sums, bounded by
  K * 2^-24 * sum_k |a_ik| |b_jk| (which matters only where terms cancel), and nearly all
  elements identical.
A difference beyond that is a simulator bug or a kernel bug; the message prints both values.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

ml_dtypes = pytest.importorskip("ml_dtypes")


def _to_gpu(torch, array: np.ndarray):
    """A CUDA tensor holding the same bits as ``array`` (bf16 via its uint16 bits)."""
    if array.dtype == ml_dtypes.bfloat16:
        bits = torch.from_numpy(np.ascontiguousarray(array).view(np.uint16).view(np.int16))
        return bits.cuda().view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array)).cuda()


def _from_gpu(torch, tensor, like: np.ndarray) -> np.ndarray:
    torch.cuda.synchronize()
    if like.dtype == ml_dtypes.bfloat16:
        return tensor.view(torch.int16).cpu().numpy().view(np.uint16).view(ml_dtypes.bfloat16)
    return tensor.cpu().numpy()


def _operands(m: int, n: int, k: int, seed: int, integers: bool):
    rng = np.random.default_rng(seed)
    if integers:  # |a|, |b| <= 3, k <= 1024: every partial sum is an exact fp32 integer
        a = rng.integers(-3, 4, (m, k)).astype(np.float32)
        b = rng.integers(-3, 4, (n, k)).astype(np.float32)
    else:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((n, k)).astype(np.float32)
    return a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)


def _compare(gpu: np.ndarray, simulated: np.ndarray, exact: bool, a=None, b=None) -> None:
    g = gpu.astype(np.float32)
    s = simulated.astype(np.float32)
    assert np.isfinite(g).all() and np.isfinite(s).all()
    if exact:
        diff = np.argwhere(g != s)
        assert diff.size == 0, (
            f"{len(diff)} elements differ; first at {tuple(diff[0])}: "
            f"gpu {g[tuple(diff[0])]} sim {s[tuple(diff[0])]}"
        )
        return
    # one bf16 ulp of the larger magnitude: 2^(floor(log2|x|) - 7)
    scale = np.maximum(np.abs(g), np.abs(s))
    ulp = np.exp2(np.floor(np.log2(np.maximum(scale, 2.0**-100))) - 7)
    fa, fb = np.abs(a.astype(np.float32)), np.abs(b.astype(np.float32))
    reorder = a.shape[1] * 2.0**-24 * (fa @ fb.T)
    bad = np.abs(g - s) > ulp + reorder
    if bad.any():
        at = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{int(bad.sum())} elements differ by more than the bound; first at {at}: "
            f"gpu {g[at]} sim {s[at]} bound {ulp[at] + reorder[at]}"
        )
    assert (g == s).mean() > 0.9, f"only {(g == s).mean():.3f} of the elements are identical"


# --- the simulator's own small kernels -------------------------------------------------------


def _simkernels():
    from tests.sim import simkernels

    return simkernels


@pytest.mark.parametrize(
    ("swizzle", "cols", "row0", "col0", "shape"),
    [
        ("128B", 32, 0, 0, (64, 32)),
        ("64B", 16, 0, 0, (64, 16)),
        ("32B", 8, 0, 0, (64, 8)),
        ("none", 32, 0, 0, (64, 32)),
        # a box partly outside a 96 x 64 tensor: zero fill on load, clipped store
        ("128B", 32, 64, 48, (96, 64)),
    ],
)
def test_tma_roundtrip_is_bit_identical(torch, swizzle, cols, row0, col0, shape):
    import tilemem.sim as sim
    from tilemem.cuda.launch import Launcher
    from tilemem.cuda.tma import tile_map

    k, buf = _simkernels().tma_roundtrip(swizzle=swizzle, cols=cols)
    a = np.arange(shape[0] * shape[1], dtype=np.float32).reshape(shape)
    out_sim = np.full_like(a, -1.0)
    result = sim.run(k, tile_map(a, buf), tile_map(out_sim, buf), row0, col0)
    assert result.ok, result.hazards

    a_gpu = _to_gpu(torch, a)
    out_gpu = _to_gpu(torch, np.full_like(a, -1.0))
    Launcher(k)(tile_map(a_gpu, buf), tile_map(out_gpu, buf), row0, col0)
    _compare(_from_gpu(torch, out_gpu, a), out_sim, exact=True)


def test_shared_memory_exchange_is_bit_identical(torch):
    import tilemem.sim as sim
    from tilemem.cuda.launch import Launcher

    k = _simkernels().exchange()
    out_sim = np.zeros(64, np.float32)
    assert sim.run(k, out_sim).ok
    out_gpu = _to_gpu(torch, np.zeros(64, np.float32))
    Launcher(k)(out_gpu)
    _compare(_from_gpu(torch, out_gpu, out_sim), out_sim, exact=True)


@pytest.mark.parametrize("lane", [0, 5, 31])
def test_warp_shuffle_is_bit_identical(torch, lane):
    import tilemem.sim as sim
    from tilemem.cuda.launch import Launcher

    k = _simkernels().shuffle(lane)
    out_sim = np.full(128, -1, np.int32)
    assert sim.run(k, out_sim).ok
    out_gpu = _to_gpu(torch, np.full(128, -1, np.int32))
    Launcher(k)(out_gpu)
    _compare(_from_gpu(torch, out_gpu, out_sim), out_sim, exact=True)


# --- the Hopper GEMM example ---------------------------------------------------------------


@functools.lru_cache
def _example():
    from tilemem import examples, kernels

    smem = examples.hopper_gemm_bf16(4, target="sm_90a")  # the kernel's own plan
    return kernels.hopper_gemm(), smem.buffer("A"), smem.buffer("B"), smem.buffer("C_epilogue")


@pytest.mark.parametrize("integers", [True, False], ids=["integer", "normal"])
def test_hopper_gemm_example_matches_the_gpu(torch, integers):
    import tilemem.sim as sim
    from tilemem.cuda.launch import Launcher
    from tilemem.cuda.tma import tile_map

    program, a_buf, b_buf, c_buf = _example()
    m, n, k = 256, 512, 320  # 2 x 2 CTAs, 5 K tiles: the 4-stage ring wraps
    a, b = _operands(m, n, k, 11, integers)
    grid = (n // 256, m // 128)

    c_sim = np.zeros((m, n), ml_dtypes.bfloat16)
    maps = tile_map(a, a_buf), tile_map(b, b_buf), tile_map(c_sim, c_buf)
    result = sim.run(program, *maps, k // 64, grid=grid)
    assert result.ok, result.hazards

    a_gpu, b_gpu = _to_gpu(torch, a), _to_gpu(torch, b)
    c_gpu = _to_gpu(torch, np.full((m, n), np.nan, np.float32).astype(ml_dtypes.bfloat16))
    gmaps = tile_map(a_gpu, a_buf), tile_map(b_gpu, b_buf), tile_map(c_gpu, c_buf)
    Launcher(program)(*gmaps, k // 64, grid=grid)
    _compare(_from_gpu(torch, c_gpu, c_sim), c_sim, exact=integers, a=a, b=b)


# --- the persistent warp-specialised GEMM: clusters with B multicast, ragged edges ----------


@pytest.mark.parametrize("cluster_m", [1, 2])
@pytest.mark.parametrize("integers", [True, False], ids=["integer", "normal"])
def test_persistent_gemm_matches_the_gpu(torch, cluster_m, integers):
    import tilemem.sim as sim
    from tilemem.cuda.launch import Launcher
    from tilemem.cuda.tma import tile_map
    from tilemem.gemm import plan as gemm_plan
    from tilemem.gemm.hopper import hopper_gemm_persistent
    from tilemem.intmath import ceil_div

    program = hopper_gemm_persistent(cluster_m=cluster_m)
    plan = gemm_plan.hopper_gemm_persistent_plan("bfloat16", "sm_90a", 256)
    b_buf = gemm_plan.b_share(cluster_m, "bfloat16", tile_n=256)
    m, n, k = 192, 320, 160  # partial M, N and K tiles
    a, b = _operands(m, n, k, 7 + cluster_m, integers)
    tiles = (ceil_div(m, 128), ceil_div(n, 256), ceil_div(k, 64))
    grid, cluster = (2 * cluster_m,), (cluster_m, 1, 1)

    c_sim = np.zeros((m, n), ml_dtypes.bfloat16)
    maps = (
        tile_map(a, plan.buffer("A")),
        tile_map(b, b_buf),
        tile_map(c_sim, plan.buffer("C_stage")),
    )
    result = sim.run(program, *maps, *tiles, 8, grid=grid, cluster=cluster)
    assert result.ok, result.hazards

    a_gpu, b_gpu = _to_gpu(torch, a), _to_gpu(torch, b)
    c_gpu = _to_gpu(torch, np.full((m, n), np.nan, np.float32).astype(ml_dtypes.bfloat16))
    gmaps = (
        tile_map(a_gpu, plan.buffer("A")),
        tile_map(b_gpu, b_buf),
        tile_map(c_gpu, plan.buffer("C_stage")),
    )
    Launcher(program)(*gmaps, *tiles, 8, grid=grid, cluster=cluster)
    _compare(_from_gpu(torch, c_gpu, c_sim), c_sim, exact=integers, a=a, b=b)


# --- the matrix descriptor's base offset (bits 49-51) ---------------------------------------


def _fragment_of(d: np.ndarray) -> np.ndarray:
    """D (64 x 8) as ``out[t, i]``: thread t's acc[i] is D[16 (t // 32) + (t % 32) // 4 +
    8 (i // 2), 2 (t % 4) + i % 2] (PTX ISA 9.0, wgmma m64nNk16 register fragment of D)."""
    t, i = np.meshgrid(np.arange(128), np.arange(4), indexing="ij")
    return d[16 * (t // 32) + (t % 32) // 4 + 8 * (i // 2), 2 * (t % 4) + i % 2]


def test_wgmma_base_offset_matches_the_gpu(torch):
    """A 128B-swizzled A operand whose pattern starts at P = 0x580 (128-byte, not 1024-byte
    aligned), read by one wgmma m64n8k16 with every base offset 0..7 in its descriptor:
    the simulator and the GPU must agree bit for bit on each (integer bf16 inputs: exact
    fp32 sums), and the one the PTX ISA asks for ((P >> 7) & 7 = 3, "Matrix Descriptor
    Format") must give A @ B^T. The message says which base offsets give A @ B^T on each."""
    import tilemem.sim as sim
    from tilemem.cuda.launch import Launcher

    k = _simkernels().wgmma_base_offset()
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (64, 64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    b = rng.integers(-3, 4, (8, 64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    want = _fragment_of(a[:, :16].astype(np.float32) @ b[:, :16].astype(np.float32).T)
    launch = Launcher(k)
    a_gpu, b_gpu = _to_gpu(torch, a), _to_gpu(torch, b)
    sims, gpus, wheres = {}, {}, {}
    for bo in range(8):
        out, where = np.zeros((128, 4), np.float32), np.zeros(2, np.uint32)
        assert sim.run(k, a, b, out, where, bo).ok
        sims[bo], wheres["sim"] = out, tuple(where.tolist())
        out_gpu = _to_gpu(torch, np.full((128, 4), np.nan, np.float32))
        where_gpu = _to_gpu(torch, np.zeros(2, np.int32))
        launch(a_gpu, b_gpu, out_gpu, where_gpu, bo)
        gpus[bo] = _from_gpu(torch, out_gpu, out)
        wheres["gpu"] = tuple(_from_gpu(torch, where_gpu, where.view(np.int32)).tolist())
    exact_gpu = [bo for bo in range(8) if np.array_equal(gpus[bo], want)]
    exact_sim = [bo for bo in range(8) if np.array_equal(sims[bo], want)]
    differ = [bo for bo in range(8) if not np.array_equal(gpus[bo], sims[bo])]
    assert wheres["sim"] == (3, 0x580) and wheres["gpu"] == wheres["sim"], (
        f"((P >> 7) & 7, P): simulator {wheres['sim']}, GPU {wheres['gpu']}; "
        f"A @ B^T on the GPU at base offsets {exact_gpu}, in the simulator at {exact_sim}"
    )
    assert not differ and exact_gpu == [3], (
        f"simulator and GPU differ at base offsets {differ}; A @ B^T on the GPU at "
        f"{exact_gpu}, in the simulator at {exact_sim} (the PTX ISA formula gives 3)"
    )
