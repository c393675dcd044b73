"""Operand legality against the PTX ISA, both ways: what tcgen05.mma / wgmma accept and refuse.

Sources of the verdicts: PTX ISA "tcgen05.mma" ("Instruction descriptor", "Matrix shape",
block scaling) and "wgmma.mma_async" ("Matrix shape", "Register fragments"); CuTe 4.2's
static_asserts (cute/atom/mma_traits_sm100.hpp: SM100_MMA_F8F6F4_SS N % 8 for a K-major B,
N % 16 for an MN-major one; _2x1SM_SS N % 16 / N % 32; cute/arch/mma_sm100_umma.hpp: VS 16
(scale_vec::4X) with any scale type). Descriptor words are added up by hand from the fields
in :func:`tilemem.layout.operand.instr_descriptor`'s docstring: D format << 4, A format << 7,
B format << 10, A/B major << 15/16, N >> 3 << 17, scale format << 23, M >> 4 << 24,
sfa_id << 29, sfb_id << 4.
"""

from __future__ import annotations

import pytest

from tilemem.errors import LayoutError
from tilemem.layout import TileLayout
from tilemem.layout.operand import instr_descriptor, legal_mn, smem_descriptor, wgmma_k
from tilemem.layout.smem import mma_shared_layout

E4M3, E5M2, E2M1 = "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"
UE8M0, UE4M3 = "float8_e8m0fnu", "float8_e4m3fn"

# -- an MN-major 8-bit B needs N % 16 (cta_group::1) or N % 32 (cta_group::2) --------------


@pytest.mark.parametrize(
    ("kind", "a", "cta_group", "m", "n"),
    [
        ("f8f6f4", E4M3, 1, 128, 24),  # the case: N = 24
        ("f8f6f4", E4M3, 1, 64, 8),
        ("f8f6f4", E5M2, 1, 128, 248),
        ("i8", "int8", 1, 128, 8),  # i8 keeps 8 and 24 only for a K-major B
        ("i8", "uint8", 1, 64, 24),
        ("mxf8f6f4", E4M3, 1, 128, 40),
        ("f8f6f4", E4M3, 2, 256, 48),
        ("f8f6f4", E4M3, 2, 128, 16),
        ("mxf8f6f4", E5M2, 2, 256, 80),
    ],
)
def test_mn_major_8_bit_b_refuses_a_fine_n(kind, a, cta_group, m, n):
    step = 16 if cta_group == 1 else 32
    assert n not in legal_mn(kind, cta_group, "MN")[m]
    assert n in legal_mn(kind, cta_group, "K")[m]  # legal with a K-major B
    with pytest.raises(LayoutError) as err:
        instr_descriptor(kind, m, n, a, a, b_major="MN", cta_group=cta_group)
    assert f"M={m} N={n} is not a legal shape (B read MN-major: N a multiple of {step})" in str(
        err.value
    )


def test_mn_major_8_bit_b_at_n_16_gives_the_hand_made_word():
    # f8f6f4 e4m3 x e4m3 -> f32, M 128, N 16, B MN-major: (1 << 4) | (1 << 16) | (2 << 17)
    # | (8 << 24) = 0x10 + 0x10000 + 0x40000 + 0x8000000 = 0x8050010
    got = instr_descriptor("f8f6f4", 128, 16, E4M3, E4M3, "float32", b_major="MN")
    assert got == 0x8050010


def test_i8_mn_major_b_cta_group_2_is_unchanged():
    # i8 at cta_group::2 already steps by 32: the MN-major B rule removes nothing
    assert legal_mn("i8", 2, "MN") == legal_mn("i8", 2, "K")
    assert legal_mn("i8", 2, "MN")[128] == tuple(range(32, 257, 32))


@pytest.mark.parametrize(
    ("kind", "a"), [("f16", "bfloat16"), ("f16", "float16"), ("tf32", "float32")]
)
def test_a_16_or_32_bit_mn_major_b_keeps_n_step_8(kind, a):
    assert legal_mn(kind, 1, "MN")[64] == tuple(range(8, 257, 8))
    instr_descriptor(kind, 64, 24, a, a, b_major="MN")  # legal: no raise


def test_legal_mn_counts():
    # f8f6f4 cta_group::1 MN-major B: 16..256 step 16 = 16 values; K-major: 8..256 step 8 = 32
    assert len(legal_mn("f8f6f4", 1, "MN")[128]) == 16
    assert len(legal_mn("f8f6f4", 1, "K")[128]) == 32
    # cta_group::2 MN-major: 32..256 step 32 = 8 values
    assert legal_mn("f8f6f4", 2, "MN")[256] == (32, 64, 96, 128, 160, 192, 224, 256)


@pytest.mark.parametrize("cta_group", [2.0, True, "1", 0, 3])
def test_legal_mn_cta_group_is_an_int(cta_group):
    with pytest.raises(LayoutError, match="cta_group must be 1 or 2"):
        legal_mn("f16", cta_group)


@pytest.mark.parametrize("major", ["mn", "N", "", None])
def test_legal_mn_b_major_is_checked(major):
    with pytest.raises(LayoutError, match="b_major must be 'K' or 'MN'"):
        legal_mn("f16", 1, major)


# -- kind::f16 accumulates into f16 only from f16 x f16 ------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [("bfloat16", "bfloat16"), ("float16", "bfloat16"), ("bfloat16", "float16")],
)
def test_f16_accumulator_needs_f16_inputs(a, b):
    with pytest.raises(LayoutError) as err:
        instr_descriptor("f16", 128, 64, a, b, "float16")
    assert f"A {a} x B {b} needs a float32 accumulator" in str(err.value)


@pytest.mark.parametrize(
    ("a", "b", "d", "want"),
    [
        # f16 x f16 -> f16: D 0, A 0, B 0, N 64 -> 8 << 17, M 128 -> 8 << 24 = 0x8100000
        ("float16", "float16", "float16", 0x8100000),
        # bf16 x bf16 -> f32: D 1 << 4, A 1 << 7, B 1 << 10: 0x8100000 + 0x10 + 0x80 + 0x400
        ("bfloat16", "bfloat16", "float32", 0x8100490),
        # f16 x bf16 -> f32: 0x8100000 + 0x10 + 0x400 = 0x8100410
        ("float16", "bfloat16", "float32", 0x8100410),
    ],
)
def test_legal_f16_kinds_give_the_hand_made_word(a, b, d, want):
    assert instr_descriptor("f16", 128, 64, a, b, d) == want


# -- scale-factor ids follow the scale vector ----------------------------------------------


@pytest.mark.parametrize(
    ("kind", "sf", "vec", "which", "sf_id", "allowed"),
    [
        ("mxf4", UE8M0, 2, "sfa_id", 1, "(0, 2)"),
        ("mxf4", UE8M0, 2, "sfb_id", 3, "(0, 2)"),
        ("mxf4", UE8M0, None, "sfa_id", 1, "(0, 2)"),  # the default vector of mxf4 is 2X
        ("mxf4nvf4", UE8M0, 2, "sfb_id", 1, "(0, 2)"),
        ("mxf4nvf4", UE4M3, 4, "sfa_id", 1, "(0,)"),
        ("mxf4nvf4", UE4M3, 4, "sfa_id", 2, "(0,)"),
        ("mxf4nvf4", UE4M3, 4, "sfb_id", 3, "(0,)"),
        ("mxf4nvf4", UE8M0, 4, "sfb_id", 2, "(0,)"),
    ],
)
def test_scale_factor_ids_outside_the_vector_are_refused(kind, sf, vec, which, sf_id, allowed):
    with pytest.raises(LayoutError) as err:
        instr_descriptor(kind, 128, 128, E2M1, E2M1, sf_dtype=sf, scale_vec=vec, **{which: sf_id})
    shown = vec or 2
    assert f"{which}={sf_id} with scale_vec::{shown}X" in str(err.value)
    assert f"must be one of {allowed}" in str(err.value)


@pytest.mark.parametrize(
    ("kind", "a", "sf", "vec", "sfa", "sfb", "want"),
    [
        # mxf8f6f4 e4m3 (format 0), UE8M0 1X, ids 3 and 1, M 128 N 128:
        # (1 << 4) + (16 << 17) + (1 << 23) + (8 << 24) + (3 << 29)
        # = 0x10 + 0x200000 + 0x800000 + 0x8000000 + 0x60000000 = 0x68A00010
        ("mxf8f6f4", E4M3, UE8M0, 1, 3, 1, 0x68A00010),
        # mxf4 e2m1 (format 1: A 0x80, B 0x400), UE8M0 2X, ids 2 and 2:
        # 0x80 + 0x400 + (2 << 4) + 0x200000 + 0x800000 + 0x8000000 + (2 << 29) = 0x48A004A0
        ("mxf4", E2M1, UE8M0, 2, 2, 2, 0x48A004A0),
        # mxf4nvf4 UE4M3 4X, ids 0: 0x80 + 0x400 + 0x200000 + 0x8000000 = 0x8200480
        ("mxf4nvf4", E2M1, UE4M3, 4, 0, 0, 0x8200480),
        # mxf4nvf4 UE8M0 4X is legal (PTX ISA; CuTe VS == 16 takes any scale type):
        # 0x8200480 + (1 << 23) = 0x8A00480
        ("mxf4nvf4", E2M1, UE8M0, 4, 0, 0, 0x8A00480),
        # mxf4nvf4 UE8M0 2X, ids 2 and 0: 0x8A00480 + (2 << 29) = 0x48A00480
        ("mxf4nvf4", E2M1, UE8M0, 2, 2, 0, 0x48A00480),
    ],
)
def test_legal_block_scaled_words(kind, a, sf, vec, sfa, sfb, want):
    got = instr_descriptor(kind, 128, 128, a, a, sf_dtype=sf, scale_vec=vec, sfa_id=sfa, sfb_id=sfb)
    assert got == want


@pytest.mark.parametrize(
    ("kind", "sf", "vec", "words"),
    [
        ("mxf4nvf4", UE8M0, 1, "uses scale_vec::2X or scale_vec::4X, got scale_vec::1X"),
        ("mxf4nvf4", UE4M3, 2, "uses scale_vec::4X, got scale_vec::2X"),
        ("mxf4", UE8M0, 4, "uses scale_vec::2X, got scale_vec::4X"),
        ("mxf4", UE4M3, 2, "takes scale factors in float8_e8m0fnu, got float8_e4m3fn"),
        ("mxf8f6f4", UE8M0, 2, "uses scale_vec::1X, got scale_vec::2X"),
    ],
)
def test_scale_vector_against_kind_and_type(kind, sf, vec, words):
    a = E4M3 if kind == "mxf8f6f4" else E2M1
    with pytest.raises(LayoutError) as err:
        instr_descriptor(kind, 128, 128, a, a, sf_dtype=sf, scale_vec=vec)
    assert words in str(err.value)


# -- MN-major tf32 on tcgen05 needs 128B swizzling with 32-byte atomicity ------------------


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_mn_major_tf32_on_tcgen05_is_refused_in_every_tilemem_mode(mode, arch):
    layout = mma_shared_layout("float32", mode, (32, 64))
    with pytest.raises(LayoutError) as err:
        smem_descriptor(layout, "float32", arch=arch, major="MN")
    assert "128B swizzling with 32-byte atomicity" in str(err.value)
    assert "store the operand K-major" in str(err.value)


@pytest.mark.parametrize("mode", ["none", "128B"])
def test_k_major_tf32_on_tcgen05_is_encoded(mode):
    layout = mma_shared_layout("float32", mode, (64, 32))
    assert smem_descriptor(layout, "float32", arch="sm_100a") >> 46 & 0b111 == 0b001


def test_mn_major_16_bit_on_tcgen05_is_still_encoded():
    # (K 8, MN 64) bf16 128B: one atom, no second K group; version 1 << 46, 128B = 2 << 61
    layout = mma_shared_layout("bfloat16", "128B", (8, 64))
    assert smem_descriptor(layout, "bfloat16", arch="sm_100a", major="MN") == (1 << 46) | (2 << 61)


# -- wgmma types, accumulators and N --------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "d", "n", "k"),
    [
        ("float16", "float16", "float16", 256, 16),  # the f16 accumulator choice
        ("float16", "float16", "float32", 8, 16),
        ("bfloat16", "bfloat16", "float32", 64, 16),
        ("float32", "float32", "float32", 128, 8),
        (E4M3, E5M2, "float16", 24, 32),
        (E5M2, E5M2, "float32", 256, 32),
        ("int8", "uint8", "int32", 24, 32),
        ("uint8", "uint8", "int32", 48, 32),
    ],
)
def test_wgmma_accepts(a, b, d, n, k):
    assert wgmma_k(a, b, d, n) == k


@pytest.mark.parametrize(
    ("a", "b", "d", "n", "kw", "words"),
    [
        ("bfloat16", "bfloat16", "float16", 64, {}, "accumulates into float32, got float16"),
        ("float32", "float32", "float16", 64, {}, "accumulates into float32, got float16"),
        ("int8", "int8", "float32", 64, {}, "accumulates into int32, got float32"),
        ("float16", "bfloat16", "float32", 64, {}, "takes B in float16, got bfloat16"),
        (E4M3, "int8", "float32", 64, {}, "takes B in float8_e4m3fn, float8_e5m2, got int8"),
        ("float64", "float64", "float64", 64, {}, "wgmma takes A in"),
        ("float16", "float16", "float32", 12, {}, "N=12 is not legal"),
        ("float16", "float16", "float32", 264, {}, "N=264 is not legal"),
        ("int8", "int8", "int32", 40, {}, "N=40 is not legal; N in {8, 16, 24, ..., 256}"),
        ("float16", "float16", "float32", 64.0, {}, "N=64.0 is not legal"),
        (E4M3, E4M3, "float32", 64, {"b_major": "MN"}, "reads B (float8_e4m3fn) K-major only"),
        ("float32", "float32", "float32", 64, {"a_major": "MN"}, "reads A (float32) K-major"),
        ("float16", "float16", "float32", 64, {"a_major": "M"}, "a_major must be 'K' or 'MN'"),
    ],
)
def test_wgmma_refuses(a, b, d, n, kw, words):
    with pytest.raises(LayoutError) as err:
        wgmma_k(a, b, d, n, **kw)
    assert words in str(err.value)


def test_wgmma_16_bit_operands_may_be_mn_major():
    assert wgmma_k("bfloat16", "bfloat16", "float32", 64, a_major="MN", b_major="MN") == 16


# -- operand tiles ----------------------------------------------------------------------------


@pytest.mark.parametrize("rows", [1, 7, 9, 12, 127])
@pytest.mark.parametrize("mode", ["none", "128B"])
def test_mma_shared_layout_refuses_partial_8_row_atoms(rows, mode):
    want = (rows + 7) // 8 * 8
    with pytest.raises(LayoutError) as err:
        mma_shared_layout("bfloat16", mode, (rows, 64))
    assert f"{rows} rows" in str(err.value) and f"(use {want})" in str(err.value)


def test_a_ragged_unswizzled_tile_is_still_plain_row_major():
    # (8, 12) bf16 none: 24-byte rows hold no 16-byte core matrix column, so row-major
    want = TileLayout.row_major((8, 12)).canonicalize()
    assert mma_shared_layout("bfloat16", "none", (8, 12)) == want
