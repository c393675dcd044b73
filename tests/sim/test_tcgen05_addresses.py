"""tcgen05 semantics at TMEM addresses and operand bytes the built-in kernels never use: a D,
A or tcgen05.cp address with a nonzero lane field or an odd column, A kept in TMEM as tf32,
a cta_group::2 MMA issued by the even CTA of the second pair of a cluster of 4, a scale-factor
id that scale_vec::2X does not have, fp6 / fp4 operands whose chunk padding must not be read,
and the multicast lane maps, every lane inside TMEM.

Every expectation is worked out by hand from the PTX ISA (9.0) sections named at each test:
"Tensor Memory Addressing" (a TMEM address is lane << 16 | column; TMEM has 128 lanes and 512
32-bit columns per CTA), "Data path layout organization", "tcgen05.cp", "Scale Factor A ID",
and the CUDA driver's packed fp6 / fp4 tensor-map types. The context below is the test fake of
hwfake.py with two checks the real simulator makes by its hazard reports: a TMEM access outside
the 128 x 512 cells fails (the simulator reports it out-of-bounds), and every shared byte an
instruction reads is recorded (the simulator reports an unwritten byte it reads as
uninitialized)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilemem.errors import SimError
from tilemem.ir.intrinsics.tcgen05 import _sim_cp, _sim_mma, _sim_mma_block_scale
from tilemem.ir.nodes import UINT32, Const
from tilemem.layout.operand import instr_descriptor

from .hwfake import FakeContext, place, run

A_BASE, B_BASE, D_COL = 0x2000, 0xA000, 64
LANES, COLUMNS = 128, 512  # per CTA (PTX ISA "Tensor Memory")


class StrictContext(FakeContext):
    """FakeContext that refuses TMEM cells outside 128 lanes x 512 columns (numpy would wrap a
    negative lane around) and records every shared byte read."""

    def __init__(self, warp: int = 1):
        super().__init__(warp=warp)
        self.bytes_read: list[np.ndarray] = []

    def smem_read(self, addrs, nbytes, *, rank=None):
        at = np.asarray(addrs, np.int64)[..., None] + np.arange(nbytes)
        self._cta(rank).bytes_read.append(at.ravel())
        return super().smem_read(addrs, nbytes, rank=rank)

    @staticmethod
    def _inside(lanes, cols) -> None:
        lanes, cols = np.broadcast_arrays(np.asarray(lanes), np.asarray(cols))
        bad = (lanes < 0) | (lanes >= LANES) | (cols < 0) | (cols >= COLUMNS)
        assert not bad.any(), (
            f"TMEM cell lane {lanes[bad][0]} column {cols[bad][0]} is outside the CTA's "
            f"{LANES} lanes x {COLUMNS} columns"
        )

    def tmem_read(self, lanes, cols, *, rank=None):
        self._inside(lanes, cols)
        return super().tmem_read(lanes, cols, rank=rank)

    def tmem_write(self, lanes, cols, data, *, rank=None):
        self._inside(lanes, cols)
        super().tmem_write(lanes, cols, data, rank=rank)


def ints(rng, shape, lo=-4, hi=5):
    return rng.integers(lo, hi, shape).astype(np.float32)


def issue_mma(ctx, d, a, b_desc, idesc, *, kind="f16", a_tmem=False, cta_group=1):
    run(
        _sim_mma,
        ctx,
        "ptx.tcgen05.mma",
        (None, None, None, Const(idesc, UINT32), None),
        [d, a, b_desc, idesc, 0],  # enable_input_d = 0: D = A B^T
        cta_group=cta_group,
        a_tmem=a_tmem,
        kind=kind,
    )


# -- D and A at a nonzero lane field and an odd column --------------------------------------

# M = 64, cta_group::1 is data path layout F: row 16 q + i (i < 16) of D in lane 32 q + i of
# the address's lane, i.e. half of each 32-lane slab; a lane field of 16 moves D to the other
# half, lanes 32 q + 16 + i (TIRx's tmem_datapath_layout("F", 64, n, sub_slab=1) is the same
# placement: lanes (4 x 32, 16 x 1) with lane offset 16). The column field is D's first
# column, column c of D in column col + c.
M64_LANES = np.array([32 * q + 16 + i for q in range(4) for i in range(16)])


def test_m64_d_at_lane_16_and_an_odd_column():
    rng = np.random.default_rng(40)
    a, b = ints(rng, (64, 16)), ints(rng, (16, 16))
    ctx = StrictContext()
    a_desc = place(ctx.smem, A_BASE, a, "bfloat16", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, b, "bfloat16", "128B", "K", "sm_100a")
    d_addr = (16 << 16) | 65  # lane 16, column 65
    issue_mma(ctx, d_addr, a_desc, b_desc, instr_descriptor("f16", 64, 16, "bfloat16", "bfloat16"))
    ctx.complete_all()
    want = np.zeros((LANES, COLUMNS), np.float32)
    want[M64_LANES, 65:81] = a @ b.T  # row 16 q + i of D is row 16 q + i of a @ b.T
    np.testing.assert_array_equal(ctx.tmem.view(np.float32), want)


def test_m64_a_in_tmem_at_lane_16_and_an_odd_column():
    """A kept in TMEM (PTX ISA "tcgen05.mma", the [a_tmem] form): the A row that D row r uses
    lies in the lane D row r is written to (CuTe's "DP-address equivalence in TMEM-A and
    TMEM-C"), K packed two bf16 to a 32-bit column, element k in column a_col + k // 2, low
    half first. A and D both at lane 16: A row 16 q + i in lane 32 q + 16 + i. Every other
    cell of A's columns holds a decoy, so reading A from any other lane or column shows."""
    rng = np.random.default_rng(41)
    a, b = ints(rng, (64, 16)), ints(rng, (16, 16))
    ctx = StrictContext()
    b_desc = place(ctx.smem, B_BASE, b, "bfloat16", "128B", "K", "sm_100a")
    decoy = ints(rng, (LANES, 2 * 12), 5, 9).astype(ml_dtypes.bfloat16)
    ctx.tmem[:, 196:208] = decoy.view(np.uint16).view("<u4")  # decoys in columns 196-207
    a_col = 201
    ctx.tmem[M64_LANES, a_col : a_col + 8] = a.astype(ml_dtypes.bfloat16).view("<u4")
    d_addr, a_addr = (16 << 16) | 300, (16 << 16) | a_col
    idesc = instr_descriptor("f16", 64, 16, "bfloat16", "bfloat16")
    issue_mma(ctx, d_addr, a_addr, b_desc, idesc, a_tmem=True)
    ctx.complete_all()
    np.testing.assert_array_equal(ctx.tmem[M64_LANES, 300:316].view(np.float32), a @ b.T)


def test_tf32_a_in_tmem_one_element_per_column():
    """kind::tf32 with A in TMEM: one 32-bit element per column, A[r, k] in lane r, column
    128 + k (M = 128: data path D, row r in lane r). Small integers are exact in tf32."""
    rng = np.random.default_rng(42)
    a, b = ints(rng, (128, 8)), ints(rng, (16, 8))
    ctx = StrictContext()
    b_desc = place(ctx.smem, B_BASE, b, "float32", "64B", "K", "sm_100a")
    ctx.tmem[:128, 128:136] = a.view(np.uint32)
    idesc = instr_descriptor("tf32", 128, 16, "float32", "float32")
    issue_mma(ctx, D_COL, 128, b_desc, idesc, kind="tf32", a_tmem=True)
    ctx.complete_all()
    np.testing.assert_array_equal(ctx.tmem[:128, D_COL : D_COL + 16].view(np.float32), a @ b.T)


# -- cta_group::2 in the second pair of a cluster of 4 --------------------------------------


def test_cta_pair_2_3_mma_issued_by_rank_2():
    """Cluster ranks 2 and 3 are a CTA pair (their ranks differ only in bit 0, PTX ISA "Peer
    CTA"); the even one, 2, issues. M = 256 is data path layout A: CTA v of the pair supplies A
    rows 128 v .. 128 v + 127 and B rows 16 v .. 16 v + 15 (N = 32) from its own shared memory
    and holds its 128 rows of D, row r in lane r."""
    rng = np.random.default_rng(43)
    a, b = ints(rng, (256, 16)), ints(rng, (32, 16))
    ctas = [StrictContext(), StrictContext()]
    for v, ctx in enumerate(ctas):
        ctx.rank, ctx.cluster_size = 2 + v, 4
        ctx.peers = {2: ctas[0], 3: ctas[1]}
        a_desc = place(ctx.smem, A_BASE, a[128 * v : 128 * v + 128], "bfloat16", "128B", "K",
                       "sm_100a")  # fmt: skip
        b_desc = place(ctx.smem, B_BASE, b[16 * v : 16 * v + 16], "bfloat16", "128B", "K",
                       "sm_100a")  # fmt: skip
    idesc = instr_descriptor("f16", 256, 32, "bfloat16", "bfloat16", cta_group=2)
    issue_mma(ctas[0], D_COL, a_desc, b_desc, idesc, cta_group=2)
    assert not ctas[0].hazards
    ctas[0].complete_all()
    d = a @ b.T
    for v, ctx in enumerate(ctas):
        got = ctx.tmem[:128, D_COL : D_COL + 32].view(np.float32)
        np.testing.assert_array_equal(got, d[128 * v : 128 * v + 128])


def test_cta_pair_mma_issued_by_rank_3_is_refused():
    ctx = StrictContext()
    ctx.rank, ctx.cluster_size = 3, 4
    idesc = instr_descriptor("f16", 256, 32, "bfloat16", "bfloat16", cta_group=2)
    issue_mma(ctx, D_COL, 0, 0, idesc, cta_group=2)
    assert [kind for kind, _ in ctx.hazards] == ["tmem-protocol"]
    assert "odd CTA (rank 3)" in ctx.hazards[0][1] and not ctx.pending


# -- a scale-factor id that scale_vec::2X does not have --------------------------------------


def test_scale_factor_a_id_1_with_scale_vec_2x_is_refused():
    """PTX ISA "Scale Factor A ID": with scale_vec::2X a row's two factors are a byte pair of
    the 32-bit cell, starting at byte 0 or 2, so the id is 0 or 2; the id in bits 29-30 of the
    instruction descriptor set to 1 is no layout the hardware has."""
    ctx = StrictContext()
    a_desc = place(ctx.smem, A_BASE, np.zeros((128, 64)), "float4_e2m1fn", "128B", "K", "sm_100a")
    b_desc = place(ctx.smem, B_BASE, np.zeros((64, 64)), "float4_e2m1fn", "128B", "K", "sm_100a")
    idesc = instr_descriptor(
        "mxf4nvf4", 128, 64, "float4_e2m1fn", "float4_e2m1fn", sf_dtype="float8_e8m0fnu",
        scale_vec=2,
    ) | (1 << 29)  # fmt: skip
    ctx.tmem[:, :20] = 0x7F7F7F7F  # UE8M0 1.0 in every byte
    run(
        _sim_mma_block_scale,
        ctx,
        "ptx.tcgen05.mma_block_scale",
        (None, None, None, Const(idesc, UINT32), None, None, None),
        [D_COL, a_desc, b_desc, idesc, 0, 16, 0],
        cta_group=1,
        kind="mxf4nvf4",
        scale_vec=2,
    )
    with pytest.raises(SimError) as info:
        ctx.complete_all()
    assert str(info.value).startswith("scale-factor id 1 with scale_vec::2X: the ids are 0, 2")


# -- tcgen05.cp at a nonzero lane field and an odd column; the multicast lane maps -------------

BASE, LBO, SBO = 0x3000, 0x80, 0x400  # K-major, no swizzle: row r of 8-row core matrices


def _cp(ctx, rows, row_bytes, taddr, shape, multicast, seed):
    """Source rows (bytes 1-255) at BASE in the no-swizzle K-major core-matrix layout: byte k of
    row r at BASE + (r % 8) * 16 + (r // 8) * SBO + (k // 16) * LBO + k % 16 ("Shared memory
    descriptor": 16-byte core-matrix rows, LBO between K chunks, SBO between 8-row groups)."""
    src = np.random.default_rng(seed).integers(1, 256, (rows, row_bytes), dtype=np.uint8)
    r, k = np.indices(src.shape)
    ctx.smem[BASE + (r % 8) * 16 + (r // 8) * SBO + (k // 16) * LBO + k % 16] = src
    desc = (BASE >> 4) | ((LBO >> 4) << 16) | ((SBO >> 4) << 32) | (1 << 46)
    run(
        _sim_cp,
        ctx,
        "ptx.tcgen05.cp",
        (None, None),
        [taddr, desc],
        shape=shape,
        multicast=multicast,
        cta_group=1,
    )
    ctx.complete_all()
    return src.view("<u4")  # each row as little-endian 32-bit columns


def test_cp_4x256b_at_lane_3_and_an_odd_column():
    """.4x256b: 4 rows of 32 bytes, row i to lane 32 i of the address's lane (one lane in each
    32-lane quarter; CuTe SM100_UTCCP_4dp256bit_1cta), 8 columns from the address's column.
    Address lane 3, column 5: lanes 3, 35, 67, 99, columns 5-12; nothing else written."""
    ctx = StrictContext()
    words = _cp(ctx, 4, 32, (3 << 16) | 5, "4x256b", "", 44)
    want = np.zeros((LANES, COLUMNS), np.uint32)
    for i in range(4):
        want[3 + 32 * i, 5:13] = words[i]
    np.testing.assert_array_equal(ctx.tmem, want)


# rows 0-31 / 32-63 -> the 32-lane quarters they are copied into (PTX ISA "tcgen05.cp",
# multicast qualifiers: .warpx2::02_13 warps 0 and 2, then 1 and 3; .warpx2::01_23 warps 0 and
# 1, then 2 and 3; .warpx4 (32x128b: rows 0-31 only) all four)
MULTICAST = {
    ("64x128b", "warpx2::02_13"): ((0, 2), (1, 3)),
    ("64x128b", "warpx2::01_23"): ((0, 1), (2, 3)),
    ("32x128b", "warpx4"): ((0, 1, 2, 3),),
}


@pytest.mark.parametrize("shape, multicast", sorted(MULTICAST))
def test_cp_multicast_lanes_stay_inside_tmem(shape, multicast):
    ctx = StrictContext()
    rows = int(shape.split("x")[0])
    words = _cp(ctx, rows, 16, 7, shape, multicast, 45)
    want = np.zeros((LANES, COLUMNS), np.uint32)
    for half, quarters in enumerate(MULTICAST[shape, multicast]):
        for q in quarters:
            want[32 * q : 32 * q + 32, 7:11] = words[32 * half : 32 * half + 32]
    np.testing.assert_array_equal(ctx.tmem, want)


# -- fp6 / fp4 operands: the 16-byte chunk's padding is never read ---------------------------

WIDTH = {"float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4}


def _packed(ctx, base, codes, fmt):
    """A K-major operand (rows x 32 codes) as kind::f8f6f4 reads fp6 / fp4: placed in the
    128-byte swizzled 8-bit layout (one code per byte), then each 16-byte chunk rewritten as
    its 16 codes packed little-endian from the chunk's first bit, code j at bits
    [w j, w j + w), followed by padding (the CUDA driver's CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B:
    "16 x U6 packed values ... 4 byte gaps between every 12 byte chunk"; 16U4_ALIGN16B: 8 bytes
    of fp4 and an 8-byte gap). The padding bytes get 0xFF, which no test expects to be read."""
    w = WIDTH[fmt]
    values = codes.view(getattr(ml_dtypes, fmt)).astype(np.float32)
    desc = place(ctx.smem, base, values, "float8_e4m3fn", "128B", "K", "sm_100a", fmt=fmt)
    for chunk in range(base, base + codes.shape[0] * 128, 16):
        stream = 0
        for j in range(16):
            stream |= int(ctx.smem[chunk + j]) << (w * j)
        data = stream.to_bytes(2 * w, "little")  # 16 w bits: 12 bytes (fp6), 8 (fp4)
        ctx.smem[chunk : chunk + 16] = list(data) + [0xFF] * (16 - 2 * w)
    return desc, values


@pytest.mark.parametrize(
    "a_fmt, b_fmt", [("float6_e3m2fn", "float4_e2m1fn"), ("float4_e2m1fn", "float6_e2m3fn")]
)
def test_sub_byte_operands_read_no_padding_byte(a_fmt, b_fmt):
    """kind::f8f6f4, M = 128, N = 64, K = 32, random codes of each format. D is numpy's product
    of ml_dtypes' decoding of the codes (exact in fp32); no byte read lies in a chunk's padding
    (the last 4 bytes of each 16 for fp6, the last 8 for fp4). The codes include every value
    of the chunk's last elements, whose bits end at the chunk's data end."""
    rng = np.random.default_rng(46)
    ctx = StrictContext()
    a_codes = rng.integers(0, 1 << WIDTH[a_fmt], (128, 32)).astype(np.uint8)
    b_codes = rng.integers(0, 1 << WIDTH[b_fmt], (64, 32)).astype(np.uint8)
    a_desc, a = _packed(ctx, A_BASE, a_codes, a_fmt)
    b_desc, b = _packed(ctx, B_BASE, b_codes, b_fmt)
    issue_mma(ctx, D_COL, a_desc, b_desc, instr_descriptor("f8f6f4", 128, 64, a_fmt, b_fmt),
              kind="f8f6f4")  # fmt: skip
    ctx.complete_all()
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(ctx.tmem[:128, D_COL : D_COL + 64].view(np.float32), want,
                               rtol=2**-22)  # fmt: skip
    read = np.concatenate(ctx.bytes_read)
    for base, fmt, rows in ((A_BASE, a_fmt, 128), (B_BASE, b_fmt, 64)):
        mine = read[(read >= base) & (read < base + rows * 128)]
        assert mine.size, fmt
        offset = (mine - base) % 16
        assert offset.max() < 2 * WIDTH[fmt], (
            f"{fmt}: byte {offset.max()} of a 16-byte chunk read; its data ends at byte "
            f"{2 * WIDTH[fmt] - 1}, the rest is padding"
        )


def test_sub_byte_operand_read_mn_major_is_refused():
    """The transpose (MN-major) bit is valid only for E4M3, E5M2, 8-bit integer, F16, BF16 and
    TF32 operands (CuTe UMMA::InstrDescriptor, a_major_ / b_major_); an fp6 B with bit 16 set
    (instr_descriptor refuses to build it, so the bit is set by hand) is refused, not read."""
    ctx = StrictContext()
    codes = np.zeros((128, 32), np.uint8)
    a_desc, _ = _packed(ctx, A_BASE, codes, "float6_e2m3fn")
    b_desc, _ = _packed(ctx, B_BASE, codes[:64], "float6_e2m3fn")
    k_major = instr_descriptor("f8f6f4", 128, 64, "float6_e2m3fn", "float6_e2m3fn")
    issue_mma(ctx, D_COL, a_desc, b_desc, k_major | (1 << 16), kind="f8f6f4")
    with pytest.raises(SimError) as info:
        ctx.complete_all()
    assert str(info.value).startswith(
        "tcgen05.mma reads a float6_e2m3fn operand MN-major (its transpose bit, 15 for A or 16 "
        "for B, is set in the instruction descriptor)"
    )
