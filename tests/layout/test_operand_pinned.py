"""MMA operand descriptors pinned at their boundaries, each value worked out by hand.

Bit layouts: docs/HARDWARE-RULES.md#wgmma-shared-memory-descriptor and
#tcgen05-shared-memory-descriptor (start >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45,
# tcgen05 version
0b001 at 46, layout code at 62 (wgmma: none 0, 128B 1, 64B 2, 32B 3) or 61 (tcgen05: none 0,
128B 2, 64B 4, 32B 6)); the LBO/SBO rules are the table of the module docstring (CuTe's
canonical forms). Instruction descriptors: PTX ISA "Instruction descriptor" (4-5 D format,
7-9 / 10-12 A / B format, 13 / 14 negate, 15 / 16 MN-major, 17-22 N >> 3, 23 scale format,
24-28 M >> 4, 29-30 A scale-factor id). Where the CuTe oracle (tests/oracle) builds the same
tile, its answer is recorded next to the hand-worked one and checked by the last test.
"""

import pytest

from tilemem.errors import LayoutError
from tilemem.layout import ComposeLayout, Iter, TileLayout, swizzle_for
from tilemem.layout.operand import (
    MMA_K,
    check_major,
    instr_descriptor,
    legal_mn,
    smem_descriptor,
    tcgen05_instr_descriptor,
)
from tilemem.layout.smem import mma_shared_layout

VERSION = 1 << 46  # tcgen05 descriptors: fixed 0b001 at bits 46-48

# -- layout codes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "sbo", "lbo", "wgmma_code", "tcgen05_code"),
    [
        # (16, 64) bf16 K-major. Swizzled: LBO unused (field 1), SBO = 8 swizzle rows.
        ("128B", 8 * 128, 16, 1, 2),
        ("64B", 8 * 64, 16, 2, 4),
        ("32B", 8 * 32, 16, 3, 6),
        # no swizzle: 8 x 16-byte core matrices, the 16 rows' first column block first:
        # SBO = 8 rows * 16 B = 128, LBO = next K core matrix = 16 rows * 16 B = 256
        ("none", 128, 256, 0, 0),
    ],
)
def test_layout_code_of_every_swizzle_mode(mode, sbo, lbo, wgmma_code, tcgen05_code):
    layout = mma_shared_layout("bfloat16", mode, (16, 64))
    fields = ((lbo >> 4) << 16) | ((sbo >> 4) << 32)
    assert smem_descriptor(layout, "bfloat16", arch="sm_90a") == fields | (wgmma_code << 62)
    assert smem_descriptor(layout, "bfloat16", arch="sm_100a") == (
        fields | VERSION | (tcgen05_code << 61)
    )


def test_wgmma_64b_code_matches_cute():
    # CuTe make_gmma_desc, query "smem 90 K 2 16 0 64 128 0 0 0 0": 0x8000002000010000,
    # i.e. layout 2 (64B) at bit 62, SBO 512 >> 4 = 0x20, LBO field 1
    layout = mma_shared_layout("bfloat16", "64B", (3, 64, 64))
    assert smem_descriptor(layout, "bfloat16", arch="sm_90a") == 0x8000002000010000


# -- what an operand is --------------------------------------------------------------------


def test_check_major_returns_the_major():
    assert check_major("MN", "a_major") == "MN"
    assert check_major("K") == "K"


def test_operand_needs_a_tile_layout():
    with pytest.raises(LayoutError, match=r"needs a \(swizzled\) TileLayout, got"):
        smem_descriptor(swizzle_for("bfloat16", "128B"), "bfloat16", arch="sm_90a")


def test_a_tile_needs_eight_rows():
    with pytest.raises(LayoutError, match=r"rows >= 8, cols\), got shape \(7, 64\)"):
        # mma_shared_layout refuses 7 rows itself; a hand-made 7-row swizzled tile reaches
        # the descriptor's own check
        seven = ComposeLayout(swizzle_for("bfloat16", "128B"), TileLayout.row_major((7, 64)))
        smem_descriptor(seven, "bfloat16", arch="sm_90a")


def test_a_tile_needs_two_dimensions():
    with pytest.raises(LayoutError, match=r"rows >= 8, cols\), got shape \(64,\)"):
        smem_descriptor(TileLayout.row_major((64,)), "bfloat16", arch="sm_90a")


@pytest.mark.parametrize("shape", [(8, 64), (1, 8, 64)])
def test_k_major_tile_of_one_row_group(shape):
    # 8 rows: no second 8-row group; SBO is the pitch the layout would give one, 8 swizzle
    # rows of 128 B = 1024 (field 64); LBO field 1 (unused, K-major swizzled); 128B = code 1.
    # (CuTe encodes an absent group 0 instead; the hardware ignores SBO for one group.)
    layout = mma_shared_layout("bfloat16", "128B", shape)
    want = (1 << 16) | (64 << 32) | (1 << 62)
    assert smem_descriptor(layout, "bfloat16", arch="sm_90a") == want


def test_k_major_sbo_is_the_distance_to_row_8_when_the_tile_has_one():
    # (9, 16) bf16 row-major, no swizzle: row 8 exists, so SBO = its distance, 8 rows of
    # 32 bytes = 256 (field 16), not the 8 x 16-byte core matrix pitch 128 of an 8-row tile;
    # LBO = next 16-byte column = 16 bytes (field 1)
    layout = TileLayout.row_major((9, 16))
    assert smem_descriptor(layout, "bfloat16", arch="sm_90a") == (1 << 16) | (16 << 32)


def test_k_major_tile_of_one_16_byte_column():
    # (64, 8) bf16, no swizzle: one column of core matrices. LBO is the pitch a next K core
    # matrix would have: 64 rows * 16 B = 1024 (field 64); SBO = 8 rows * 16 B = 128 (field 8)
    layout = mma_shared_layout("bfloat16", "none", (64, 8))
    want = (64 << 16) | (8 << 32) | VERSION
    assert smem_descriptor(layout, "bfloat16", arch="sm_100a") == want


def test_contiguous_dimension_must_be_whole_16_byte_chunks():
    # 12 bf16 = 24 bytes: not a multiple of 8 elements (16 bytes)
    layout = mma_shared_layout("bfloat16", "none", (64, 12))
    with pytest.raises(LayoutError, match=r"multiple of 8 elements \(16 bytes\), got 12"):
        smem_descriptor(layout, "bfloat16", arch="sm_90a")


def test_distances_are_measured_from_the_tile_origin():
    # the (16, 16) bf16 core-matrix tile of mma_shared_layout, placed 256 elements in:
    # LBO = (128 + 256) - 256 = 128 elements = 256 B (field 16),
    # SBO = (64 + 256) - 256 = 64 elements = 128 B (field 8)
    tile = TileLayout([Iter(16, 8), Iter(2, 128), Iter(8, 1)], offset={"m": 256}, shape=(16, 16))
    assert smem_descriptor(tile, "bfloat16", arch="sm_90a") == (16 << 16) | (8 << 32)


# -- MN-major: distances the tile does not have are 0 ---------------------------------------


def test_mn_major_one_atom_has_no_next_atom():
    # (K 64, MN 64) bf16 128B read MN-major: one 128-byte atom along MN, so LBO = 0;
    # SBO = next 8-row K group = 8 * 128 B = 1024 (field 64).
    # CuTe make_umma_desc, query "smem 100 MN 3 16 0 64 128 0 0 0 0": 0x4000404000000000
    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    want = (64 << 32) | VERSION | (2 << 61)
    assert want == 0x4000404000000000
    assert smem_descriptor(layout, "bfloat16", arch="sm_100a", major="MN") == want


def test_mn_major_tile_of_eight_k_rows_has_no_next_k_group():
    # (K 8, MN 64) bf16 128B: one atom (LBO 0) and no row 8 (SBO 0)
    layout = mma_shared_layout("bfloat16", "128B", (8, 64))
    want = VERSION | (2 << 61)
    assert smem_descriptor(layout, "bfloat16", arch="sm_100a", major="MN") == want


def test_mn_major_32_bit_k_pitch_is_zero():
    # one MMA reads 32 bytes of K = 8 fp32 rows: a single 8-row K group, pitch encoded 0.
    # On sm_100a an MN-major tf32 operand is legal only with 128B swizzling with 32-byte
    # atomicity (PTX ISA tcgen05 "Shared memory descriptor", layout 1), a mode tilemem does
    # not lay out, so the plain modes CuTe's make_umma_desc would encode are refused.
    layout = mma_shared_layout("float32", "none", (64, 32))
    with pytest.raises(LayoutError, match=r"MN-major 32-bit \(tf32\) tcgen05 operand"):
        smem_descriptor(layout, "float32", arch="sm_100a", major="MN")
    # 128B, one atom of 32 fp32: LBO 0 and SBO 0, layout code 1 at bit 62.
    # CuTe make_gmma_desc, query "smem 90 MN 3 32 0 64 128 0 0 0 0": 0x4000000000000000
    layout = mma_shared_layout("float32", "128B", (64, 32))
    assert smem_descriptor(layout, "float32", arch="sm_90a", major="MN") == 0x4000000000000000


# -- the 14-bit fields -----------------------------------------------------------------------


def test_largest_lbo_fits_14_bits():
    # (16383, 8) bf16 no swizzle: LBO = 16383 rows * 16 B = 2**18 - 16, field 0x3FFF
    layout = TileLayout.row_major((16383, 8))  # mma_shared_layout wants whole 8-row atoms
    want = (0x3FFF << 16) | (8 << 32)
    assert smem_descriptor(layout, "bfloat16", arch="sm_90a") == want


def test_lbo_of_2_to_the_18_is_refused():
    # (16384, 8): LBO = 16384 * 16 = 2**18 = 262144, field 2**14 does not fit
    layout = mma_shared_layout("bfloat16", "none", (16384, 8))
    with pytest.raises(LayoutError, match="LBO 262144 bytes must be a multiple of 16 below 262144"):
        smem_descriptor(layout, "bfloat16", arch="sm_90a")


def test_sbo_not_a_multiple_of_16_is_refused():
    # uint8 rows padded to 17 bytes: SBO = 8 * 17 = 136 bytes, 136 % 16 = 8
    layout = TileLayout.of((16, 16), (17, 1))
    with pytest.raises(LayoutError, match="SBO 136 bytes must be a multiple of 16"):
        smem_descriptor(layout, "uint8", arch="sm_90a")


# -- start address ---------------------------------------------------------------------------

# (64, 64) bf16 128B K-major: LBO field 1, SBO 1024 (field 64), wgmma code 1
HIGH_128B = (1 << 16) | (64 << 32) | (1 << 62)


@pytest.mark.parametrize(
    ("start", "low"),
    [(0, 0), (16, 1), (1 << 17, 1 << 13), ((1 << 18) - 16, 0x3FFF)],
)
def test_start_address_field(start, low):
    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    got = smem_descriptor(layout, "bfloat16", arch="sm_90a", start_address=start)
    assert got == HIGH_128B | low


@pytest.mark.parametrize(
    ("start", "message"),
    [
        (1 << 18, r"start_address 262144 must be a multiple of 16 in \[0, 262144\)"),
        (-16, r"start_address -16 must be a multiple of 16"),
        (True, "start_address must be an integer, got True"),
        (16.0, "start_address must be an integer, got 16.0"),
    ],
)
def test_start_address_refused(start, message):
    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    with pytest.raises(LayoutError, match=message):
        smem_descriptor(layout, "bfloat16", arch="sm_90a", start_address=start)


# -- tcgen05 shapes ----------------------------------------------------------------------------


def test_mma_k_is_32_bytes_of_k():
    # PTX ISA tcgen05 "Matrix Shape": dense K = 32 bytes of the A/B type (f16 16, tf32 8,
    # 8-bit 32); f6/f4 values of f8f6f4 sit in 8-bit containers; mxf4 packs 4 bits: 64
    assert MMA_K == {
        "f16": 16,
        "tf32": 8,
        "f8f6f4": 32,
        "i8": 32,
        "mxf8f6f4": 32,
        "mxf4": 64,
        "mxf4nvf4": 64,
    }


STEP_8 = tuple(8 * i for i in range(1, 33))  # 8, 16, ..., 256
STEP_16 = tuple(16 * i for i in range(1, 17))  # 16, 32, ..., 256
STEP_32 = (32, 64, 96, 128, 160, 192, 224, 256)


def test_legal_shapes_of_dense_kinds():
    # cta_group::1: M 64/128, N multiple of 8 in [8, 256]; cta_group::2: M 128/256, N
    # multiple of 16 in [16, 256] (CuTe SM100_MMA_F16BF16_SS / _2x1SM_SS static_asserts)
    assert legal_mn("f16") == {64: STEP_8, 128: STEP_8}
    assert legal_mn("tf32", 2) == {128: STEP_16, 256: STEP_16}


def test_legal_shapes_of_i8():
    # cta_group::1: N 8, 24 and multiples of 16 in [16, 256] (TIRx's shape rules);
    # cta_group::2: multiples of 32 in [32, 256] (CuTe SM100_MMA_S8_2x1SM_SS)
    ns = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)
    assert legal_mn("i8", 1) == {64: ns, 128: ns}
    assert legal_mn("i8", 2) == {128: STEP_32, 256: STEP_32}


def test_legal_shapes_of_block_scaled_kinds():
    # one CTA: M 128 only (CuTe SM100_MMA_MXF4_SS: "M-mode size should be 128")
    assert legal_mn("mxf4") == {128: STEP_8}
    assert legal_mn("mxf8f6f4", 2) == {128: STEP_16, 256: STEP_16}


def test_legal_shapes_refuse_unknown_kind_and_cta_group():
    with pytest.raises(LayoutError, match="unknown tcgen05 kind 'f32'; known: f16, tf32"):
        legal_mn("f32")
    with pytest.raises(LayoutError, match="cta_group must be 1 or 2, got 3"):
        legal_mn("f16", 3)
    with pytest.raises(LayoutError, match="cta_group must be 1 or 2, got 0"):
        instr_descriptor("f16", 128, 128, "bfloat16", "bfloat16", cta_group=0)


# -- instruction descriptors -------------------------------------------------------------------


def test_b_major_is_checked():
    with pytest.raises(LayoutError, match="b_major must be 'K' or 'MN', got 'M'"):
        instr_descriptor("f16", 128, 128, "bfloat16", "bfloat16", b_major="M")


def test_six_bit_operand_is_k_major_only():
    with pytest.raises(LayoutError, match=r"A \(float6_e2m3fn\) can only be read K-major"):
        instr_descriptor("f8f6f4", 128, 128, "float6_e2m3fn", "float8_e4m3fn", a_major="MN")


@pytest.mark.parametrize("negate", [{"negate_a": True}, {"negate_b": True}])
def test_i8_has_no_negate(negate):
    with pytest.raises(LayoutError, match="kind::i8 has no negate"):
        instr_descriptor("i8", 128, 128, "int8", "int8", "int32", **negate)


# M = 128: 8 << 24; N = 128: 16 << 17; N = 256: 32 << 17; UE8M0: 1 << 23
M128 = 8 << 24
UE8M0 = 1 << 23


def test_scale_vec_1x_for_mxf8f6f4():
    # e4m3 x e4m3: formats 0, 0; UE8M0 scale factors with scale_vec::1X
    got = instr_descriptor("mxf8f6f4", 128, 128, "float8_e4m3fn", "float8_e4m3fn", scale_vec=1)
    assert got == M128 | (16 << 17) | UE8M0 == 0x08A00000
    with pytest.raises(LayoutError, match="uses scale_vec::1X, got scale_vec::2X"):
        instr_descriptor("mxf8f6f4", 128, 128, "float8_e4m3fn", "float8_e4m3fn", scale_vec=2)


FP4 = "float4_e2m1fn"
# mxf4nvf4, e2m1 x e2m1 (format 1 at bits 7 and 10), M 128, N 256, K-major, ids 0
NVF4 = M128 | (32 << 17) | (1 << 10) | (1 << 7)


def test_mxf4nvf4_scale_factor_defaults():
    # no scale_vec, or 2X: UE8M0 (bit 23 set); 4X: UE4M3 (bit 23 clear)
    assert instr_descriptor("mxf4nvf4", 128, 256, FP4, FP4) == NVF4 | UE8M0 == 0x08C00480
    assert instr_descriptor("mxf4nvf4", 128, 256, FP4, FP4, scale_vec=2) == NVF4 | UE8M0
    assert instr_descriptor("mxf4nvf4", 128, 256, FP4, FP4, scale_vec=4) == NVF4 == 0x08400480


@pytest.mark.parametrize(
    ("kind", "sf_dtype", "scale_vec", "message"),
    [
        # (mxf4nvf4 with UE8M0 at scale_vec::4X is legal: tests/layout/test_operand_legality.py)
        ("mxf4nvf4", "float8_e8m0fnu", 1, "uses scale_vec::2X or scale_vec::4X, got"),
        ("mxf4nvf4", "float8_e4m3fn", 2, "uses scale_vec::4X, got scale_vec::2X"),
        # mxf4 defaults to UE8M0 whatever scale_vec says, and UE8M0 goes with 2X only
        ("mxf4", None, 4, "uses scale_vec::2X, got scale_vec::4X"),
    ],
)
def test_scale_vec_must_match_the_scale_type(kind, sf_dtype, scale_vec, message):
    with pytest.raises(LayoutError, match=message):
        instr_descriptor(kind, 128, 256, FP4, FP4, sf_dtype=sf_dtype, scale_vec=scale_vec)


def test_tcgen05_instr_descriptor_shorthand():
    # kind::f16, bf16 x bf16 (format 1 at bits 7 and 10) into f32 (1 at bit 4), M 128, N 256:
    # 0x08000000 | 0x00400000 | 0x400 | 0x80 | 0x10; MN-major A sets bit 15, B bit 16.
    # CuTe make_instr_desc, query "instr f16 bfloat16 bfloat16 float32 0 1 128 256 0 0 0":
    # 0x08410490 (B MN-major)
    assert tcgen05_instr_descriptor(128, 256) == 0x08400490
    assert tcgen05_instr_descriptor(128, 256, a_mn_major=True) == 0x08408490
    assert tcgen05_instr_descriptor(128, 256, b_mn_major=True) == 0x08410490


# -- the CuTe answers quoted above are current -------------------------------------------------


@pytest.mark.cute_oracle
def test_quoted_cute_answers_are_current():
    from oracle import cute

    try:
        exe = cute.build()
    except cute.OracleUnavailable as e:
        pytest.skip(f"CuTe oracle unavailable: {e}")
    queries = {
        "smem 90 K 2 16 0 64 128 0 0 0 0": 0x8000002000010000,
        "smem 100 MN 3 16 0 64 128 0 0 0 0": 0x4000404000000000,
        "smem 100 MN 0 32 0 64 128 0 0 0 0": 0x0000404000000000,
        "smem 90 MN 3 32 0 64 128 0 0 0 0": 0x4000000000000000,
        "instr f16 bfloat16 bfloat16 float32 0 1 128 256 0 0 0": 0x08410490 << 32,
    }
    assert cute.run(exe, list(queries)) == list(queries.values())
