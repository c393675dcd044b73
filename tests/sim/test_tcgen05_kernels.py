"""The Blackwell GEMM (tilemem.kernels) executed by the simulator: right numbers and no
hazards in every schedule, and each planted bug of the tensor-core path caught, either as
wrong numbers (descriptor and instruction-descriptor bits: the hardware would compute
garbage silently) or as the hazard kind the bug is.

Reference: numpy in float64 of the bf16 inputs, rounded to bf16 like the kernel's output.
With small-integer inputs every fp32 partial sum is exact whatever the order, so the output
must match exactly; with normal inputs the kernel's fp32 sum may differ from float64 by a
few fp32 ulps before the bf16 rounding, so one bf16 ulp (relative 2^-7) is allowed.
"""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T, examples, kernels
from tilemem.cuda.tma import tile_map
from tilemem.ir.nodes import UINT64, Const

BF16 = ml_dtypes.bfloat16
M, N = 128, 256


def _buffers():
    smem = examples.blackwell_gemm_bf16(4, target="sm_100a")
    return smem.buffer("A"), smem.buffer("B"), smem.buffer("C_epilogue")


def run_gemm(program, k_tiles=1, schedule="random", seed=0, normal=False):
    rng = np.random.default_rng(seed)
    k = 64 * k_tiles
    if normal:
        a, b = rng.standard_normal((M, k)).astype(BF16), rng.standard_normal((N, k)).astype(BF16)
    else:
        a, b = rng.integers(-3, 4, (M, k)).astype(BF16), rng.integers(-3, 4, (N, k)).astype(BF16)
    c = np.zeros((M, N), BF16)
    a_buf, b_buf, c_buf = _buffers()
    maps = tile_map(a, a_buf), tile_map(b, b_buf), tile_map(c, c_buf)
    result = sim.run(program, *maps, k_tiles, schedule=schedule, seed=seed)
    ref = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32).astype(BF16)
    return result, c.astype(np.float32), ref.astype(np.float32)


@pytest.fixture(scope="module")
def gemm():
    return kernels.blackwell_gemm()


def test_blackwell_gemm_is_exact_without_hazards(gemm):
    """Every asynchronous operation completing as late as the program allows."""
    result, c, ref = run_gemm(gemm, 1, "adversarial", 1)
    assert result.hazards == ()
    np.testing.assert_array_equal(c, ref)


def test_blackwell_gemm_normal_inputs_within_one_bf16_ulp(gemm):
    """Two K tiles through the 4-stage pipeline, warps interleaved at random."""
    result, c, ref = run_gemm(gemm, 2, "random", 5, normal=True)
    assert result.hazards == ()
    np.testing.assert_allclose(c, ref, rtol=2**-7, atol=1e-6)


def _build(monkeypatch, owner, name, fn):
    """The Blackwell GEMM built with one kernel-language function replaced."""
    monkeypatch.setattr(owner, name, fn)
    program = kernels.blackwell_gemm()
    _ = program.ir
    monkeypatch.undo()
    return program


def _xor_desc(bits: int):
    """A's descriptors with ``bits`` flipped (B's stay right)."""
    original = T.ptx.tcgen05.desc

    def desc(buf, *args, **kwargs):
        right = original(buf, *args, **kwargs)
        return right ^ Const(bits, UINT64) if buf.name == "A" else right

    return desc


@pytest.mark.parametrize(
    "what, bits",
    [
        ("SBO", 8 << 32),  # 8-row groups 1024 -> 1152 bytes apart
        ("base offset", 1 << 49),
        ("swizzle 128B -> 64B", 6 << 61),  # layout 2 -> 4
    ],
)
def test_a_wrong_descriptor_gives_wrong_numbers(monkeypatch, what, bits):
    """(A wrong LBO changes nothing here: K-major swizzled operands do not use it, on the GPU
    either; tests/sim/test_wgmma.py and tests/layout/test_decode.py cover it.)"""
    program = _build(monkeypatch, T.ptx.tcgen05, "desc", _xor_desc(bits))
    _, c, ref = run_gemm(program)
    assert not np.array_equal(c, ref), what


@pytest.mark.parametrize("change", [{"n": 128}, {"b_major": "MN"}])
def test_a_wrong_instruction_descriptor_is_caught(monkeypatch, change):
    original = kernels.instr_descriptor

    def idesc(kind, m, n, *args, **kwargs):
        n = change.get("n", n)
        kwargs.update({k: v for k, v in change.items() if k != "n"})
        return original(kind, m, n, *args, **kwargs)

    program = _build(monkeypatch, kernels, "instr_descriptor", idesc)
    result, c, ref = run_gemm(program)
    # N=128 leaves half the accumulator unwritten (read uninitialised); MN-major B misreads
    assert not np.array_equal(c, ref) or not result.ok


def _ld_line() -> str:
    src, first = inspect.getsourcelines(kernels._drain_accumulator)
    n = next(i for i, line in enumerate(src) if "tcgen05.ld(" in line)
    return f"kernels.py:{first + n}"


def test_ld_from_the_wrong_lane_quarter(monkeypatch):
    original = T.tmem_addr

    def shifted(buf, lane=0, col=0):
        return original(buf, lane=lane + 32, col=col)  # the next warp's quarter

    program = _build(monkeypatch, T, "tmem_addr", shifted)
    result, _, _ = run_gemm(program)
    kinds = {h.kind for h in result.hazards}
    assert "out-of-bounds" in kinds
    h = next(h for h in result.hazards if h.kind == "out-of-bounds")
    assert h.space == "tmem" and any(_ld_line() in a.source for a in h.accesses)


def test_registers_read_before_wait_ld(monkeypatch):
    program = _build(monkeypatch, T.ptx.tcgen05, "wait_ld", lambda: None)
    result, c, ref = run_gemm(program, schedule="random")
    race = next(h for h in result.hazards if h.kind == "race")
    assert race.space == "registers" and race.buffer == "regs"
    assert any(_ld_line() in a.source for a in race.accesses)
    assert not np.array_equal(c, ref)


def test_dealloc_before_the_last_ld(monkeypatch):
    """The dealloc warp frees TMEM without the fence + barrier that orders it after the
    drain warps' loads."""
    program = _build(monkeypatch, kernels, "_release_tmem", lambda tmem: tmem.dealloc())
    result, _, _ = run_gemm(program, schedule="adversarial")
    kinds = {h.kind for h in result.hazards}
    assert kinds & {"tmem-protocol", "race"}, kinds
