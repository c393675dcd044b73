"""tcgen05 semantics: operands placed with tilemem's CuTe-checked layouts, descriptors and
instruction descriptors; the simulated TMEM must hold numpy's A @ B^T where the PTX data-path
layouts put it (row r of an M=128 result in lane r, by hand below), ld/st must move the cells
the 32x32b shape names, and wrong descriptor bits or lanes must show."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilemem.dtype import DataType, bits_to_float32, float32_to_bits
from tilemem.errors import SimError
from tilemem.ir.intrinsics.tcgen05 import (
    _sim_alloc,
    _sim_commit,
    _sim_cp,
    _sim_ld,
    _sim_mma,
    _sim_mma_block_scale,
    _sim_st,
)
from tilemem.ir.nodes import UINT32, BufferVar, Const
from tilemem.layout.operand import instr_descriptor
from tilemem.layout.tmem import sf_tmem_layout

from .hwfake import FakeContext, place, run

A_BASE, B_BASE = 0x2000, 0xA000
D_COL = 64  # the accumulator's first TMEM column


def ints(rng, shape, lo=-4, hi=5):
    return rng.integers(lo, hi, shape).astype(np.float32)


def mma(ctx, a, b_desc, idesc, accumulate=1, kind="f16", a_tmem=False, d=D_COL):
    args = (None, None, None, Const(idesc, UINT32), None)
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        args,
        [d, a, b_desc, idesc, accumulate],
        cta_group=1,
        a_tmem=a_tmem,
        kind=kind,
    )
    ctx.complete_all()


def d_cells(ctx, m, n, fmt="float32"):
    """The accumulator as data path D puts it (PTX ISA "Data path layout organization",
    M=128: row r in lane r, column c in column D_COL + c)."""
    cells = ctx.tmem[:m, D_COL : D_COL + n]
    return cells.view(np.int32) if fmt == "int32" else cells.view(np.float32)


@pytest.mark.parametrize(
    "dtype, mode, n", [("bfloat16", "128B", 64), ("float16", "32B", 8), ("float32", "64B", 16)]
)
def test_k_major_mma_matches_numpy(dtype, mode, n):
    rng = np.random.default_rng(n)
    k = 8 if dtype == "float32" else 16
    a, b = ints(rng, (128, k)), ints(rng, (n, k))
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, dtype, mode, "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, dtype, mode, "K", "sm_100a")
    kind = "tf32" if dtype == "float32" else "f16"
    mma(ctx, a_desc, b_desc, instr_descriptor(kind, 128, n, dtype, dtype), 0, kind)
    np.testing.assert_array_equal(d_cells(ctx, 128, n), a @ b.T)


def test_accumulate_adds_and_the_mma_is_asynchronous():
    rng = np.random.default_rng(1)
    a, b = ints(rng, (128, 16)), ints(rng, (32, 16))
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "bfloat16", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "bfloat16", "128B", "K", "sm_100a")
    idesc = instr_descriptor("f16", 128, 32, "bfloat16", "bfloat16")
    old = ints(rng, (128, 32))
    ctx.tmem[:128, D_COL : D_COL + 32] = old.view(np.uint32)
    args = (None, None, None, Const(idesc, UINT32), None)
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        args,
        [D_COL, a_desc, b_desc, idesc, 1],
        cta_group=1,
        a_tmem=False,
        kind="f16",
    )
    np.testing.assert_array_equal(d_cells(ctx, 128, 32), old)  # nothing before completion
    ctx.complete_all()
    np.testing.assert_array_equal(d_cells(ctx, 128, 32), old + a @ b.T)


def test_m64_lands_in_data_path_f():
    # data path F: rows 16q .. 16q+15 in lanes 32q .. 32q+15
    rng = np.random.default_rng(2)
    a, b = ints(rng, (64, 16)), ints(rng, (16, 16))
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "bfloat16", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "bfloat16", "128B", "K", "sm_100a")
    mma(ctx, a_desc, b_desc, instr_descriptor("f16", 64, 16, "bfloat16", "bfloat16"), 0)
    d = a @ b.T
    for q in range(4):
        got = ctx.tmem[32 * q : 32 * q + 16, D_COL : D_COL + 16].view(np.float32)
        np.testing.assert_array_equal(got, d[16 * q : 16 * q + 16])
    assert not ctx.tmem[16:32].any()


def test_mn_major_b_and_negate_a():
    rng = np.random.default_rng(3)
    a, b = ints(rng, (128, 16)), ints(rng, (64, 16))
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "float16", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, np.ascontiguousarray(b.T), "float16", "128B", "MN", "sm_100a")
    idesc = instr_descriptor("f16", 128, 64, "float16", "float16", b_major="MN", negate_a=True)
    mma(ctx, a_desc, b_desc, idesc, 0)
    np.testing.assert_array_equal(d_cells(ctx, 128, 64), -(a @ b.T))


def test_i8_accumulates_in_int32():
    rng = np.random.default_rng(4)
    a, b = ints(rng, (128, 32), -128, 128), ints(rng, (16, 32), -128, 128)
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "int8", "none", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "int8", "none", "K", "sm_100a")
    idesc = instr_descriptor("i8", 128, 16, "int8", "int8", "int32")
    mma(ctx, a_desc, b_desc, idesc, 0, "i8")
    np.testing.assert_array_equal(d_cells(ctx, 128, 16, "int32"), a.astype(np.int64) @ b.T)


def test_a_from_tmem_packed_bf16():
    """A in TMEM: row r in lane r, 16-bit values two per column, the lower K index in the low
    half (as T.pack_bf16x2 packs P in the attention kernel)."""
    rng = np.random.default_rng(5)
    a, b = ints(rng, (128, 16)), ints(rng, (32, 16))
    ctx = FakeContext(warp=1)
    bits = float32_to_bits(a, "bfloat16").astype(np.uint32)
    a_col = 8
    ctx.tmem[:128, a_col : a_col + 8] = bits[:, 0::2] | (bits[:, 1::2] << 16)
    b_desc = place(ctx.smem, B_BASE, b, "bfloat16", "128B", "K", "sm_100a")
    idesc = instr_descriptor("f16", 128, 32, "bfloat16", "bfloat16")
    mma(ctx, a_col, b_desc, idesc, 0, a_tmem=True)
    np.testing.assert_array_equal(d_cells(ctx, 128, 32), a @ b.T)


@pytest.mark.parametrize("wrong", ["n", "b_major", "a_dtype"])
def test_a_wrong_instruction_descriptor_gives_other_numbers(wrong):
    rng = np.random.default_rng(6)
    a, b = ints(rng, (128, 16), 1, 9), ints(rng, (64, 16), 1, 9)
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "bfloat16", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "bfloat16", "128B", "K", "sm_100a")
    kwargs = {"n": 32} if wrong == "n" else {}
    idesc = instr_descriptor(
        "f16",
        128,
        kwargs.get("n", 64),
        "float16" if wrong == "a_dtype" else "bfloat16",
        "bfloat16",
        b_major="MN" if wrong == "b_major" else "K",
    )
    mma(ctx, a_desc, b_desc, idesc, 0)
    assert not np.array_equal(d_cells(ctx, 128, 64), a @ b.T)


@pytest.mark.parametrize("fmt", ["float6_e2m3fn", "float6_e3m2fn"])
def test_fp6_codes_decode_and_encode_as_ml_dtypes(fmt):
    codes = np.arange(64, dtype=np.uint8)
    theirs = codes.view(getattr(ml_dtypes, fmt)).astype(np.float32)
    np.testing.assert_array_equal(bits_to_float32(codes, fmt), theirs)
    x = np.random.default_rng(1).standard_normal(512).astype(np.float32) * 12
    want = x.astype(getattr(ml_dtypes, fmt)).view(np.uint8)  # nearest even, saturating
    np.testing.assert_array_equal(float32_to_bits(x, fmt), want)


def pack_chunks(smem, start: int, nbytes: int, width: int) -> None:
    """Repack ``[start, start + nbytes)``, written one code per byte, as kind::f8f6f4 reads
    fp6 / fp4: in each 16-byte chunk the 16 codes as one little-endian bit string, code j at
    bit ``width * j``, then zero padding (12 + 4 bytes for fp6, 8 + 8 for fp4). Source: the
    CUDA driver API's cuTensorMapEncodeTiled, "CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B copies
    16 x U6 packed values to memory aligned as 16 bytes. There are 4 byte gaps between every
    12 byte chunk" (16U4_ALIGN16B: 8-byte gaps after 8 bytes); CUTLASS loads f8f6f4 fp6 / fp4
    operands with exactly those types (cute/arch/copy_sm90_desc.hpp: float_e2m3_unpacksmem_t,
    float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t), packed LSB first as its
    subbyte_reference.h stores sub-byte elements."""
    for chunk in range(start, start + nbytes, 16):
        stream = sum(int(c) << (width * j) for j, c in enumerate(smem[chunk : chunk + 16]))
        smem[chunk : chunk + 16] = list(stream.to_bytes(16, "little"))


@pytest.mark.parametrize(
    "a_fmt, b_fmt",
    [
        ("float6_e2m3fn", "float6_e3m2fn"),
        ("float6_e3m2fn", "float8_e4m3fn"),
        ("float4_e2m1fn", "float6_e2m3fn"),
    ],
)
def test_sub_byte_operands_of_kind_f8f6f4(a_fmt, b_fmt):
    """kind::f8f6f4 (K = 32) with fp6 / fp4 operands packed 16 to a 16-byte chunk (see
    pack_chunks). Golden: the values are ml_dtypes' own decoding of random codes of each
    format, multiplied in float64."""
    rng = np.random.default_rng(6)
    width = {"float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4, "float8_e4m3fn": 8}

    def codes(fmt, shape):
        top = {"float8_e4m3fn": 0x70}.get(fmt, 1 << width[fmt])  # (e4m3: finite, |x| <= 240)
        bits = rng.integers(0, top, shape).astype(np.uint8)
        return bits.view(getattr(ml_dtypes, fmt)).astype(np.float32)

    a, b = codes(a_fmt, (128, 32)), codes(b_fmt, (64, 32))
    ctx = FakeContext(warp=1)
    for base, x, fmt in ((A_BASE, a, a_fmt), (B_BASE, b, b_fmt)):
        desc = place(ctx.smem, base, x, "float8_e4m3fn", "128B", "K", "sm_100a", fmt=fmt)
        if width[fmt] < 8:  # 128 rows x 128 bytes (32 codes padded to the 128-byte row)
            pack_chunks(ctx.smem, base, x.shape[0] * 128, width[fmt])
        if base == A_BASE:
            a_desc = desc
        else:
            b_desc = desc
    idesc = instr_descriptor("f8f6f4", 128, 64, a_fmt, b_fmt)
    mma(ctx, a_desc, b_desc, idesc, 0, "f8f6f4")
    want = a.astype(np.float64) @ b.astype(np.float64).T  # every product exact in fp32
    np.testing.assert_allclose(d_cells(ctx, 128, 64), want, rtol=2**-22)


def test_nvfp4_block_scaled_mma():
    """kind::mxf4nvf4 scale_vec::4X: K=64 packed fp4, one UE4M3 factor per 16 elements of
    each row of A and B, the factors in TMEM where sf_tmem_layout puts them."""
    rng = np.random.default_rng(7)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -2, -6], np.float32)
    a, b = rng.choice(grid, (128, 64)), rng.choice(grid, (64, 64))
    sfa = rng.choice(np.array([0.5, 1, 2, 4], np.float32), (128, 4))
    sfb = rng.choice(np.array([0.25, 1, 2], np.float32), (64, 4))
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, a, "float4_e2m1fn", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "float4_e2m1fn", "128B", "K", "sm_100a")
    sf_cols = {}
    for name, values, col0 in (("a", sfa, 0), ("b", sfb, 16)):
        layout = sf_tmem_layout(max(32, values.shape[0]), 4, 4)
        codes = float32_to_bits(values, "ue4m3")
        tmem_bytes = ctx.tmem.view(np.uint8).reshape(128, 512, 4)
        for (r, j), code in np.ndenumerate(codes):
            pos = layout.apply(r, j)
            for q in range(4):  # every lane quarter holds a copy
                lane = pos["TLane"] + 32 * q
                tmem_bytes[lane, col0 + pos["TCol"] // 4, pos["TCol"] % 4] = code
        sf_cols[name] = col0
    idesc = instr_descriptor(
        "mxf4nvf4",
        128,
        64,
        "float4_e2m1fn",
        "float4_e2m1fn",
        sf_dtype="float8_e4m3fn",
        scale_vec=4,
    )
    args = (None, None, None, Const(idesc, UINT32), None, None, None)
    run(
        _sim_mma_block_scale,
        ctx,
        "ptx.tcgen05.mma_block_scale",
        args,
        [D_COL, a_desc, b_desc, idesc, sf_cols["a"], sf_cols["b"], 0],
        cta_group=1,
        kind="mxf4nvf4",
        scale_vec=4,
    )
    ctx.complete_all()
    want = (a * np.repeat(sfa, 16, axis=1)) @ (b * np.repeat(sfb, 16, axis=1)).T
    np.testing.assert_array_equal(d_cells(ctx, 128, 64), want)


def regs_var(n=32, dtype="float32"):
    return BufferVar("regs", DataType(dtype), "local", (n,))


def test_ld_32x32b_moves_lane_t_columns_after_wait():
    # PTX ISA tcgen05 32x32b: lane t of warp w reads TMEM lane 32 (w % 4) + t, num columns
    ctx = FakeContext(warp=6)  # quarter 2: lanes 64-95
    ctx.tmem[:] = np.arange(128 * 512, dtype=np.uint32).reshape(128, 512)
    var = regs_var()
    ctx.regs[var] = np.zeros((32, 32), np.float32)
    taddr = (64 << 16) | 40
    run(_sim_ld, ctx, "ptx.tcgen05.ld", (var, None), [None, taddr], num=32)
    assert not ctx.regs[var].any()  # asynchronous: nothing before tcgen05.wait::ld
    ctx.complete_all()
    want = ctx.tmem[64:96, 40:72]
    np.testing.assert_array_equal(ctx.regs[var].view(np.uint32), want)


def test_ld_outside_the_warps_quarter_is_reported():
    ctx = FakeContext(warp=5)  # quarter 1: lanes 32-63
    var = regs_var()
    ctx.regs[var] = np.zeros((32, 32), np.float32)
    run(_sim_ld, ctx, "ptx.tcgen05.ld", (var, None), [None, 0], num=32)
    assert [k for k, _ in ctx.hazards] == ["out-of-bounds"]
    assert "lanes 32-63" in ctx.hazards[0][1]
    assert not ctx.pending


def test_st_reads_registers_at_issue_and_writes_tmem_later():
    ctx = FakeContext(warp=3)
    var = regs_var(16)
    ctx.regs[var] = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    taddr = (96 << 16) | 100
    run(_sim_st, ctx, "ptx.tcgen05.st", (None, var), [taddr, None], num=16)
    want = ctx.regs[var].copy()
    ctx.regs[var][:] = -1  # registers reused before the wait: the store already has them
    assert not ctx.tmem.any()
    ctx.complete_all()
    np.testing.assert_array_equal(ctx.tmem[96:128, 100:116].view(np.float32), want)


def test_cp_32x128b_warpx4_fills_every_quarter():
    """32 rows of 16 bytes (no swizzle, K-major core matrices: row r at (r%8)*16 + (r//8)*SBO)
    land in lanes 32q + r of every quarter, 4 columns from the address, low byte first."""
    ctx = FakeContext(warp=1)
    base, sbo = 0x3000, 128
    rows = np.arange(32 * 16, dtype=np.uint8).reshape(32, 16)
    for r in range(32):
        ctx.smem[base + (r % 8) * 16 + (r // 8) * sbo + np.arange(16)] = rows[r]
    desc = (base >> 4) | (1 << 16) | ((sbo >> 4) << 32) | (1 << 46)
    run(
        _sim_cp,
        ctx,
        "ptx.tcgen05.cp",
        (None, None),
        [200, desc],
        shape="32x128b",
        multicast="warpx4",
        cta_group=1,
    )
    ctx.complete_all()
    want = rows.view("<u4")  # (32, 4) little-endian words
    for q in range(4):
        np.testing.assert_array_equal(ctx.tmem[32 * q : 32 * q + 32, 200:204], want)


def test_commit_arrives_after_the_mmas_before_it():
    ctx = FakeContext(warp=1)
    run(_sim_commit, ctx, "ptx.tcgen05.commit", (None,), [0x40])
    assert ctx.pending[0][0] == "tcgen05" and not ctx.groups
    ctx.complete_all()
    assert ctx.groups == [("arrive", 0x40, 1)]


def test_alloc_delegates_to_the_protocol():
    ctx = FakeContext(warp=1)
    gen = run(_sim_alloc, ctx, "ptx.tcgen05.alloc", (None, None), [0x80, 256], cta_group=1)
    assert next(gen) == ("alloc", 0x80, 256, 1)


@pytest.mark.parametrize("m", [256, 128])
def test_cta_pair_mma(m):
    """cta_group::2: the even CTA issues; each CTA holds M/2 rows of A and N/2 rows of B at the
    same shared addresses and receives its M/2 rows of D (M=256: data path A, row r in lane
    r; M=128: data path B, 64 rows with N's right half on lanes 64-127)."""
    rng = np.random.default_rng(m)
    n, half = 64, m // 2
    a, b = ints(rng, (m, 16)), ints(rng, (n, 16))
    ctas = [FakeContext(warp=1), FakeContext(warp=1)]
    ctas[1].rank = 1
    for rank, ctx in enumerate(ctas):
        ctx.peers = {0: ctas[0], 1: ctas[1]}
        a_desc = place(
            ctx.smem, A_BASE, a[rank * half : (rank + 1) * half], "bfloat16", "128B", "K", "sm_100a"
        )
        b_desc = place(
            ctx.smem, B_BASE, b[rank * 32 : rank * 32 + 32], "bfloat16", "128B", "K", "sm_100a"
        )
    idesc = instr_descriptor("f16", m, n, "bfloat16", "bfloat16", cta_group=2)
    args = (None, None, None, Const(idesc, UINT32), None)
    run(
        _sim_mma,
        ctas[0],
        "ptx.tcgen05.mma",
        args,
        [D_COL, a_desc, b_desc, idesc, 0],
        cta_group=2,
        a_tmem=False,
        kind="f16",
    )
    ctas[0].complete_all()
    d = a @ b.T
    for rank, ctx in enumerate(ctas):
        rows = d[rank * half : (rank + 1) * half]
        if m == 256:
            np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + n].view(np.float32), rows)
        else:
            got = ctx.tmem[:, D_COL : D_COL + n // 2].view(np.float32)
            np.testing.assert_array_equal(got[:64], rows[:, : n // 2])
            np.testing.assert_array_equal(got[64:], rows[:, n // 2 :])


def test_cta_pair_mma_from_the_odd_cta_is_reported():
    ctx = FakeContext(warp=1)
    ctx.rank = 1
    idesc = instr_descriptor("f16", 256, 64, "bfloat16", "bfloat16", cta_group=2)
    args = (None, None, None, Const(idesc, UINT32), None)
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        args,
        [D_COL, 0, 0, idesc, 0],
        cta_group=2,
        a_tmem=False,
        kind="f16",
    )
    assert [k for k, _ in ctx.hazards] == ["tmem-protocol"] and not ctx.pending


def test_a_descriptor_without_the_version_bits_is_refused():
    """PTX ISA tcgen05 "Shared Memory Descriptor": bits 46-48 must hold 0b001 (a wgmma-style
    descriptor passed to tcgen05 lacks them)."""
    rng = np.random.default_rng(9)
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, ints(rng, (128, 16)), "bfloat16", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, ints(rng, (16, 16)), "bfloat16", "128B", "K", "sm_100a")
    idesc = instr_descriptor("f16", 128, 16, "bfloat16", "bfloat16")
    with pytest.raises(SimError, match="version bits 46-48"):
        mma(ctx, a_desc & ~(7 << 46), b_desc, idesc, 0)


def test_lbo_mode_1_and_the_sparsity_bit_are_refused_with_the_reason():
    """What the simulator cannot check against a source it refuses: LBO mode 1 (descriptor
    bit 52, PTX ISA "Shared Memory Descriptor": an absolute leading-dimension address, on
    sm_103a) and a dense tcgen05.mma whose instruction descriptor sets the sparsity bit 2."""
    rng = np.random.default_rng(9)
    ctx = FakeContext(warp=1)
    a_desc = place(ctx.smem, A_BASE, ints(rng, (128, 16)), "bfloat16", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, ints(rng, (16, 16)), "bfloat16", "128B", "K", "sm_100a")
    idesc = instr_descriptor("f16", 128, 16, "bfloat16", "bfloat16")
    with pytest.raises(SimError, match=r"LBO mode 1 \(bit 52.*clear bit 52"):
        mma(ctx, a_desc | (1 << 52), b_desc, idesc, 0)
    with pytest.raises(SimError, match=r"sparsity bit \(2\) set.*no \.sp"):
        mma(ctx, a_desc, b_desc, idesc | (1 << 2), 0)
