"""tcgen05 semantics in the simulator (tilemem.ir.intrinsics.tcgen05) that the other tcgen05
tests leave out: tcgen05.cp's warpx2 multicasts, f16 and s32 accumulators added to prior
values.

Expected values by hand from PTX ISA 9.0: "tcgen05.cp" (.64x128b with .warpx2::02_13 copies
rows 0-31 into the lane quarters of warps 0 and 2 and rows 32-63 into those of warps 1 and 3;
.warpx2::01_23 rows 0-31 into warps 0 and 1, rows 32-63 into warps 2 and 3), "tcgen05.mma"
(D = A B^T + D with enable_input_d)
and "Data path layout organization" (M = 128: row r in lane r, column c in column d + c; an
f16 accumulator in the low half of its 32-bit cell), with numpy and ml_dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from tilemem.dtype import float32_to_bits
from tilemem.ir.intrinsics.tcgen05 import _sim_cp, _sim_mma, _sim_mma_block_scale
from tilemem.ir.nodes import UINT32, Const
from tilemem.layout.operand import instr_descriptor

from .hwfake import FakeContext, place, run

A_BASE, B_BASE, D_COL = 0x2000, 0xA000, 64

# lane quarters that rows 0-31 and rows 32-63 land in
QUARTERS = {"warpx2::02_13": ((0, 2), (1, 3)), "warpx2::01_23": ((0, 1), (2, 3))}


@pytest.mark.parametrize("multicast", sorted(QUARTERS))
def test_cp_64x128b_warpx2_sends_each_half_to_its_quarters(multicast):
    """64 rows of 16 bytes, no swizzle, K-major core matrices (row r at (r % 8) * 16 +
    (r // 8) * SBO): each row becomes 4 little-endian 32-bit columns from column 200."""
    ctx = FakeContext(warp=1)
    base, sbo = 0x3000, 128
    rows = (np.arange(64 * 16) * 7 % 251).astype(np.uint8).reshape(64, 16)
    for r in range(64):
        ctx.smem[base + (r % 8) * 16 + (r // 8) * sbo + np.arange(16)] = rows[r]
    # start address >> 4 in bits 0-13, LBO 16 bytes (>> 4) in 16-29, SBO >> 4 in 32-45,
    # version 0b001 in bits 46-48 ("Shared memory descriptor")
    desc = (base >> 4) | (1 << 16) | ((sbo >> 4) << 32) | (1 << 46)
    run(
        _sim_cp,
        ctx,
        "ptx.tcgen05.cp",
        (None, None),
        [200, desc],
        shape="64x128b",
        multicast=multicast,
        cta_group=1,
    )
    assert not ctx.tmem.any()  # asynchronous: nothing lands before completion
    ctx.complete_all()
    words = rows.view("<u4")  # (64, 4)
    for half, quarters in enumerate(QUARTERS[multicast]):
        for q in quarters:
            np.testing.assert_array_equal(
                ctx.tmem[32 * q : 32 * q + 32, 200:204], words[32 * half : 32 * half + 32]
            )
    assert not ctx.tmem[:, :200].any() and not ctx.tmem[:, 204:].any()


def _small_operands(rng, dtype: str):
    """Integer A (128 x 16) and B (32 x 16) in [-3, 3], placed K-major with the 128-byte swizzle
    in a fresh context: (ctx, a, b, a_desc, b_desc)."""
    a = rng.integers(-3, 4, (128, 16)).astype(np.float32)
    b = rng.integers(-3, 4, (32, 16)).astype(np.float32)
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, dtype, "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, dtype, "128B", "K", "sm_100a")
    return ctx, a, b, a_desc, b_desc


def _mma(ctx, a_desc, b_desc, idesc, kind, accumulate):
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        (None, None, None, Const(idesc, UINT32), None),
        [D_COL, a_desc, b_desc, idesc, accumulate],
        cta_group=1,
        a_tmem=False,
        kind=kind,
    )
    ctx.complete_all()


def test_an_f16_accumulator_adds_to_the_low_half_of_its_cells():
    """f16 x f16 -> f16, enable_input_d = 1: D = A B^T + D with D's old f16 bits in the low
    half of each cell (the high half holds 0xABCD, which must not leak in) and the new f16
    bits written back with a zero high half. A and B hold small integers; D's old values are
    in [1, 2) with all 10 mantissa bits random (the lowest one too), so the sums round to f16
    once, as numpy rounds the exact float32 sum (round to nearest even, "cvt.rn.f16.f32")."""
    rng = np.random.default_rng(13)
    ctx, a, b, a_desc, b_desc = _small_operands(rng, "float16")
    sign = rng.choice(np.array([-1.0, 1.0]), (128, 32))
    init = (sign * rng.integers(1024, 2048, (128, 32)) / 1024).astype(np.float32)
    old = init.astype(np.float16).view(np.uint16).astype(np.uint32) | np.uint32(0xABCD0000)
    ctx.tmem[:128, D_COL : D_COL + 32] = old
    idesc = instr_descriptor("f16", 128, 32, "float16", "float16", "float16")
    _mma(ctx, a_desc, b_desc, idesc, "f16", 1)
    want = (init + a @ b.T).astype(np.float16).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + 32], want)


def test_an_s32_accumulator_adds_signed_values():
    """s8 x s8 -> s32, enable_input_d = 1, prior D negative and positive: D = A B^T + D in
    two's complement."""
    rng = np.random.default_rng(14)
    a = rng.integers(-128, 128, (128, 32)).astype(np.float32)
    b = rng.integers(-128, 128, (16, 32)).astype(np.float32)
    init = rng.integers(-(2**20), 2**20, (128, 16))
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "int8", "none", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "int8", "none", "K", "sm_100a")
    ctx.tmem[:128, D_COL : D_COL + 16] = init.astype(np.int32).view(np.uint32)
    _mma(ctx, a_desc, b_desc, instr_descriptor("i8", 128, 16, "int8", "int8", "int32"), "i8", 1)
    want = init + a.astype(np.int64) @ b.astype(np.int64).T
    np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + 16].view(np.int32), want)


def _block_scaled(scale_vec, sf_dtype, sf_id, n, sfb_col, seed):
    """kind::mxf4nvf4 (K = 64, packed e2m1) M = 128 x N with factors in TMEM: row r's
    ``scale_vec`` factors are bytes ``sf_id`` .. ``sf_id + scale_vec - 1`` of the cell (lane
    r % 128, column col0 + r // 32), A's from column 0, B's from ``sfb_col``; the other bytes
    hold 16.0. D starts at 1.0 and enable_input_d is 0. Returns the simulated D and numpy's."""
    rng = np.random.default_rng(seed)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -2, -6], np.float32)
    a, b = rng.choice(grid, (128, 64)), rng.choice(grid, (n, 64))
    sfa = rng.choice(np.array([0.5, 1, 2, 4], np.float32), (128, scale_vec))
    sfb = rng.choice(np.array([0.25, 1, 2], np.float32), (n, scale_vec))
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "float4_e2m1fn", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "float4_e2m1fn", "128B", "K", "sm_100a")
    tmem_bytes = ctx.tmem.view(np.uint8).reshape(128, 512, 4)
    fmt = {"float8_e8m0fnu": "ue8m0", "float8_e4m3fn": "ue4m3"}[sf_dtype]
    decoy = float32_to_bits(np.float32(16.0), fmt)
    for values, col0 in ((sfa, 0), (sfb, sfb_col)):
        codes = float32_to_bits(values, fmt)
        for r in range(values.shape[0]):
            cell = tmem_bytes[r % 128, col0 + r // 32]
            cell[:] = decoy
            cell[sf_id : sf_id + scale_vec] = codes[r]
    ctx.tmem[:128, D_COL : D_COL + n] = 0x3F800000  # 1.0: overwritten (enable_input_d = 0)
    idesc = instr_descriptor(
        "mxf4nvf4",
        128,
        n,
        "float4_e2m1fn",
        "float4_e2m1fn",
        sf_dtype=sf_dtype,
        scale_vec=scale_vec,
        sfa_id=sf_id,
        sfb_id=sf_id,
    )
    run(
        _sim_mma_block_scale,
        ctx,
        "ptx.tcgen05.mma_block_scale",
        (None, None, None, Const(idesc, UINT32), None, None, None),
        [D_COL, a_desc, b_desc, idesc, 0, sfb_col, 0],
        cta_group=1,
        kind="mxf4nvf4",
        scale_vec=scale_vec,
    )
    ctx.complete_all()
    per = 64 // scale_vec
    want = (a * np.repeat(sfa, per, axis=1)) @ (b * np.repeat(sfb, per, axis=1)).T
    return ctx.tmem[:128, D_COL : D_COL + n].view(np.float32), want


@pytest.mark.parametrize("scale_vec, sf_dtype", [(2, "float8_e8m0fnu"), (4, "float8_e4m3fn")])
def test_block_scaled_n256_reads_each_row_s_factors(scale_vec, sf_dtype):
    """N = 256: B's rows 128-255 take their factors from lanes 0-127 again, columns 4-7 of B's
    factors; B's factors start at the odd column 17. UE8M0 (2X) and UE4M3 (4X) codes."""
    got, want = _block_scaled(scale_vec, sf_dtype, 0, 256, 17, 16)
    np.testing.assert_array_equal(got, want)


def test_scale_factor_id_2_of_scale_vec_2x_reads_bytes_2_and_3():
    """kind::mxf4nvf4 .scale_vec::2X with UE8M0 factors and sfa_id = sfb_id = 2. The id is the
    byte slot of the 32-bit TMEM cell where this MMA's factors start (PTX ISA "Instruction
    descriptor" for the block-scaled kinds: 2X takes ids 0 and 2, 4X only 0; tilemem's
    instr_descriptor says the same, "which 8-bit slot"), so row r's two factors (one per 32
    elements of K = 64) are bytes 2 and 3 of cell (lane r, column r // 32). Bytes 0 and 1
    hold other factors (16) that must not be read."""
    got, want = _block_scaled(2, "float8_e8m0fnu", 2, 64, 16, 15)
    np.testing.assert_array_equal(got, want)


def test_enable_input_d_0_overwrites_the_accumulator():
    """bf16 M = 128, N = 32 with enable_input_d = 0 over a D holding 1.0: D = A B^T."""
    ctx, a, b, a_desc, b_desc = _small_operands(np.random.default_rng(17), "bfloat16")
    ctx.tmem[:128, D_COL : D_COL + 32] = 0x3F800000
    _mma(ctx, a_desc, b_desc, instr_descriptor("f16", 128, 32, "bfloat16", "bfloat16"), "f16", 0)
    np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + 32].view(np.float32), a @ b.T)


def test_negate_b_negates_the_product():
    """Instruction descriptor bit 14 (negate B): D = A (-B)^T."""
    ctx, a, b, a_desc, b_desc = _small_operands(np.random.default_rng(18), "float16")
    idesc = instr_descriptor("f16", 128, 32, "float16", "float16", negate_b=True)
    assert idesc >> 14 & 1 and not idesc >> 13 & 1
    _mma(ctx, a_desc, b_desc, idesc, "f16", 0)
    np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + 32].view(np.float32), -(a @ b.T))
