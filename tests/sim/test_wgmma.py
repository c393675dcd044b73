"""wgmma semantics: operands placed in shared memory with tilemem's CuTe-checked layouts and
descriptors; the simulated accumulators must equal numpy's A @ B^T in the PTX fragment
layout (written out by hand below), for every input type, both majors and several swizzles,
and a wrong descriptor must give other numbers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilemem.sim as sim
from tilemem.dtype import DataType
from tilemem.ir.intrinsics.wgmma import _sim_mma_async
from tilemem.ir.nodes import BufferVar
from tilemem.layout.decode import swizzle_address

from . import simkernels
from .hwfake import FakeContext, place, run

A_BASE, B_BASE = 0x1000, 0x9000  # both on every swizzle period
K_OF = {"bfloat16": 16, "float16": 16, "float32": 8, "float8_e4m3fn": 32, "int8": 32}


def fragment_of(d: np.ndarray, warp: int, n: int) -> np.ndarray:
    """PTX ISA wgmma D fragment, by hand: lane t of warp w, register i holds row
    16w + t//4 + 8((i//2)%2), column 8(i//4) + 2(t%4) + i%2."""
    out = np.zeros((32, n // 2), d.dtype)
    for t in range(32):
        for i in range(n // 2):
            out[t, i] = d[
                16 * warp + t // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (t % 4) + i % 2
            ]
    return out


def simulate(smem, a_desc, b_desc, n, dtype, acc_type="float32", init=None, scale_d=1, **attrs):
    acc = BufferVar("acc", DataType(acc_type), "local", (n // 2,))
    results = []
    for warp in range(4):
        regs = {acc: np.zeros((32, n // 2), np.dtype(acc_type))}
        if init is not None:
            regs[acc][:] = fragment_of(init, warp, n)
        ctx = FakeContext(warp=4 + warp, smem=smem, regs=regs)  # the second warpgroup
        run(
            _sim_mma_async,
            ctx,
            "ptx.wgmma.mma_async",
            (acc, None, None, None),
            [None, a_desc, b_desc, scale_d],
            n=n,
            dtype=dtype,
            b_dtype=dtype,
            trans_a=attrs.get("trans_a", 0),
            trans_b=attrs.get("trans_b", 0),
        )
        assert len(ctx.pending) == 1 and (regs[acc] == (0 if init is None else regs[acc])).all()
        ctx.complete_all()
        results.append(regs[acc])
    return results


def small_ints(rng, shape, lo=-4, hi=5):
    return rng.integers(lo, hi, shape).astype(np.float32)


@pytest.mark.parametrize(
    "dtype, mode, n",
    [
        ("bfloat16", "128B", 64),
        ("float16", "64B", 24),
        ("bfloat16", "none", 16),
        ("float32", "32B", 32),
        ("float8_e4m3fn", "128B", 16),
    ],
)
def test_k_major_matches_numpy(dtype, mode, n):
    rng = np.random.default_rng(n)
    k = K_OF[dtype]
    a, b = small_ints(rng, (64, k)), small_ints(rng, (n, k))
    smem = np.zeros(1 << 17, np.uint8)
    a_desc = place(smem, A_BASE, a, dtype, mode, "K")
    b_desc = place(smem, B_BASE, b, dtype, mode, "K")
    d = a.astype(np.float64) @ b.T.astype(np.float64)
    for warp, regs in enumerate(simulate(smem, a_desc, b_desc, n, dtype)):
        np.testing.assert_array_equal(regs, fragment_of(d, warp, n).astype(np.float32))


def test_mn_major_operands_and_accumulate():
    """f16 A and B read MN-major (transpose bits 1), 64B swizzle, added to prior values."""
    rng = np.random.default_rng(5)
    n, k = 64, 16
    a, b = small_ints(rng, (64, k)), small_ints(rng, (n, k))
    smem = np.zeros(1 << 17, np.uint8)
    a_desc = place(smem, A_BASE, np.ascontiguousarray(a.T), "float16", "64B", "MN")
    b_desc = place(smem, B_BASE, np.ascontiguousarray(b.T), "float16", "64B", "MN")
    init = small_ints(rng, (64, n))
    d = init + a.astype(np.float64) @ b.T
    got = simulate(smem, a_desc, b_desc, n, "float16", init=init, trans_a=1, trans_b=1)
    for warp, regs in enumerate(got):
        np.testing.assert_array_equal(regs, fragment_of(d, warp, n).astype(np.float32))


def test_scale_d_zero_overwrites():
    rng = np.random.default_rng(6)
    a, b = small_ints(rng, (64, 16)), small_ints(rng, (8, 16))
    smem = np.zeros(1 << 17, np.uint8)
    a_desc = place(smem, A_BASE, a, "bfloat16", "128B", "K")
    b_desc = place(smem, B_BASE, b, "bfloat16", "128B", "K")
    init = np.full((64, 8), 1000.0)
    got = simulate(smem, a_desc, b_desc, 8, "bfloat16", init=init, scale_d=0)
    for warp, regs in enumerate(got):
        np.testing.assert_array_equal(regs, fragment_of(a @ b.T, warp, 8))


def test_int8_accumulates_in_int32():
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (64, 32)).astype(np.float32)
    b = rng.integers(-128, 128, (16, 32)).astype(np.float32)
    smem = np.zeros(1 << 17, np.uint8)
    a_desc = place(smem, A_BASE, a, "int8", "none", "K")
    b_desc = place(smem, B_BASE, b, "int8", "none", "K")
    d = a.astype(np.int64) @ b.T.astype(np.int64)
    for warp, regs in enumerate(simulate(smem, a_desc, b_desc, 16, "int8", acc_type="int32")):
        assert regs.dtype == np.int32
        np.testing.assert_array_equal(regs, fragment_of(d, warp, 16))


def test_tf32_ignores_low_mantissa_bits():
    """A float32 word with bits below tf32's 10 mantissa bits set reads as if they were 0."""
    smem = np.zeros(1 << 17, np.uint8)
    a = np.ones((64, 8), np.float32)
    b = np.ones((8, 8), np.float32)
    a_desc = place(smem, A_BASE, a, "float32", "32B", "K")
    b_desc = place(smem, B_BASE, b, "float32", "32B", "K")
    smem[A_BASE] |= 0xFF  # element (0, 0): 1 + 255 * 2^-23, below tf32 precision
    regs = simulate(smem, a_desc, b_desc, 8, "float32")[0]
    assert regs[0, 0] == 8.0


@pytest.mark.parametrize("field, delta", [(16, 1), (32, 8), (62, 1), (49, 1), (0, 8)])
def test_a_wrong_descriptor_field_gives_other_numbers(field, delta):
    """LBO (bit 16), SBO (32), layout (62), base offset (49), start (0) each change what is
    read: the simulator multiplies what the descriptor names, as the hardware does."""
    rng = np.random.default_rng(8)
    a, b = small_ints(rng, (64, 16), 1, 9), small_ints(rng, (16, 16), 1, 9)
    smem = np.zeros(1 << 17, np.uint8)
    a_desc = place(smem, A_BASE, a, "bfloat16", "none" if field == 16 else "128B", "K")
    b_desc = place(smem, B_BASE, b, "bfloat16", "128B", "K")
    right = simulate(smem, a_desc, b_desc, 16, "bfloat16")
    wrong_desc = a_desc ^ (delta << field)
    wrong = simulate(smem, wrong_desc, b_desc, 16, "bfloat16")
    assert any(not np.array_equal(x, y) for x, y in zip(right, wrong))


# -- the descriptor's base offset (bits 49-51) ------------------------------------------------


def test_base_offset_moves_the_pattern_origin_by_hand():
    """PTX ISA 9.0, 9.7.15.5.1.2.2 "Matrix Descriptor Format": base offset 0 when the
    repeating pattern starts on its boundary (128B: 1024 bytes, 32B: 256 bytes), else
    (pattern start >> 7) & 7. 128B, pattern starting at P = 0x580: base offset 11 & 7 = 3;
    its row r (at P + 128 r) has phase r, so chunk 2 of rows 0, 1, 5 sits at chunk 2 ^ r:
    0x580 + 0x20, 0x600 + 0x30, 0x800 + 0x70."""
    unswizzled = np.array([0x5A0, 0x620, 0x820])
    assert swizzle_address(unswizzled, "128B", base_offset=3).tolist() == [0x5A0, 0x630, 0x870]
    # absolute phases (base offset 0, what TMA writes) differ: rows 0, 1, 5 of the pattern
    # at P are absolute rows 3, 4, 0 there, chunk 2 going to 2 ^ 3, 2 ^ 4, 2 ^ 0
    assert swizzle_address(unswizzled, "128B").tolist() == [0x590, 0x660, 0x820]
    # 32B (bit 4 ^= bit 7), pattern at P = 0x480: base offset 9 & 7 = 1; P + 128 is the
    # pattern's second 128 bytes (bit 7 of the phase set), P itself its first
    assert swizzle_address(np.array([0x480, 0x500]), "32B", base_offset=1).tolist() == [
        0x480,
        0x510,
    ]


def _base_offset_run(base_offset: int):
    k = simkernels.wgmma_base_offset()
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (64, 64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    b = rng.integers(-3, 4, (8, 64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    out, where = np.zeros((128, 4), np.float32), np.zeros(2, np.uint32)
    result = sim.run(k, a, b, out, where, base_offset)
    assert result.ok, result.hazards
    d = a[:, :16].astype(np.float32) @ b[:, :16].astype(np.float32).T
    return out, np.concatenate([fragment_of(d, w, 8) for w in range(4)]), where


def test_an_operand_at_a_misaligned_base_reads_right_with_the_ptx_base_offset():
    """The operand's pattern starts at P = 0x400 (dynamic shared memory) + 384 = 0x580; only
    the base offset (P >> 7) & 7 = 3 reads it as written."""
    out, want, where = _base_offset_run(3)
    assert where.tolist() == [3, 0x580]
    np.testing.assert_array_equal(out, want)
    for wrong in (0, 5):  # 0: absolute phases; 5 = -3 mod 8: the phase shifted the other way
        out, want, _ = _base_offset_run(wrong)
        assert not np.array_equal(out, want)


def test_base_offset_kernel_compiles_with_nvrtc():
    """The GPU comparison (tests/cuda/test_sim_vs_gpu.py) runs this kernel on sm_90a."""
    pytest.importorskip("cuda.core", reason="compiling needs the cuda extra (NVRTC)")
    assert simkernels.wgmma_base_offset().compile()[:4] == b"\x7fELF"
