"""Element bits <-> float32 against ml_dtypes (an independent implementation of every OCP
format and bfloat16), numpy's float16, and the PTX ISA's saturation rules ("cvt")."""

from __future__ import annotations

import numpy as np
import pytest

from tilemem.dtype import as_bits, bits_to_float32, float32_to_bits, format_bits
from tilemem.errors import DTypeError

ml_dtypes = pytest.importorskip("ml_dtypes")

# (tilemem format, ml_dtypes type, number of codes)
OCP = [
    ("float8_e4m3fn", "float8_e4m3fn", 256),
    ("float8_e5m2", "float8_e5m2", 256),
    ("float4_e2m1fn", "float4_e2m1fn", 16),
    ("float8_e8m0fnu", "float8_e8m0fnu", 256),
    ("bfloat16", "bfloat16", 1 << 16),
]


def _ml(name: str):
    return np.dtype(getattr(ml_dtypes, name))


@pytest.mark.parametrize("fmt, ml, codes", OCP)
def test_every_code_decodes_as_ml_dtypes(fmt, ml, codes):
    bits = np.arange(codes, dtype=np.uint16 if codes > 256 else np.uint8)
    want = bits.view(_ml(ml)).astype(np.float32)
    np.testing.assert_array_equal(bits_to_float32(bits, fmt), want)


def test_every_f16_code_decodes_as_numpy():
    bits = np.arange(1 << 16, dtype=np.uint16)
    want = bits.view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(bits_to_float32(bits, "float16"), want)


def _probe_values(grid: np.ndarray, seed: int) -> np.ndarray:
    """Every finite value of a format, the midpoints between neighbours (the ties), points a
    quarter off them, and random values in its range."""
    g = np.unique(grid[np.isfinite(grid)].astype(np.float64))
    mids = (g[:-1] + g[1:]) / 2
    quarter = (g[:-1] + 3 * g[1:]) / 4
    rng = np.random.default_rng(seed)
    rand = rng.uniform(g[0], g[-1], 4000)
    return np.concatenate([g, mids, quarter, rand]).astype(np.float32)


@pytest.mark.parametrize("fmt, ml, codes", OCP)
def test_rounding_matches_ml_dtypes_inside_the_range(fmt, ml, codes):
    """Round to nearest even; ml_dtypes does not saturate, so values stay within +-max."""
    bits = np.arange(codes, dtype=np.uint16 if codes > 256 else np.uint8)
    grid = bits.view(_ml(ml)).astype(np.float32)
    x = _probe_values(grid, seed=codes)
    if fmt == "float8_e8m0fnu":
        x = x[x > 0]  # no zero, no sign
    want = x.astype(_ml(ml)).view(bits.dtype)
    got = float32_to_bits(x, fmt)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{fmt}: {x[bad[:5]]} -> {got[bad[:5]]}, ml_dtypes {want[bad[:5]]}"


def test_f16_rounding_matches_numpy():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(5000) * 1000, rng.standard_normal(500) * 1e-6])
    x = x.astype(np.float32)
    want = x.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(float32_to_bits(x, "float16"), want)


def test_bf16_overflow_and_nan_match_ml_dtypes():
    x = np.array([3.4e38, -3.4e38, np.inf, -np.inf, 3.3895e38], np.float32)
    want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(float32_to_bits(x, "bfloat16"), want)
    assert np.isnan(bits_to_float32(float32_to_bits(np.float32("nan"), "bfloat16"), "bfloat16"))


# PTX ISA "cvt": e4m3x2 / e5m2x2 / e2m1x2 conversions exist only with .satfinite: a value
# beyond the largest finite one (infinity included) becomes that value with its sign; NaN
# becomes NaN. e4m3 max 448 = 0x7E (0 1111 110), e5m2 max 57344 = 0x7B (0 11110 11), e2m1
# max 6 = 0x7 (0 11 1).
SATURATION = [
    ("float8_e4m3fn", [1000.0, np.inf, -np.inf, -449.0, 464.0], [0x7E, 0x7E, 0xFE, 0xFE, 0x7E]),
    ("float8_e5m2", [1e6, np.inf, -np.inf, 61440.0], [0x7B, 0x7B, 0xFB, 0x7B]),
    ("float4_e2m1fn", [7.0, 100.0, -np.inf, 5.0, 2.5], [0x7, 0x7, 0xF, 0x6, 0x4]),
    # ue8m0 (exponent only): 2^127 = 0xFE is the largest; 2^-127 = 0x00 the smallest
    ("float8_e8m0fnu", [np.inf, 1e38 * 3, 1e-40, 0.0, -1.0], [0xFE, 0xFE, 0x00, 0xFF, 0xFF]),
]


@pytest.mark.parametrize("fmt, values, codes", SATURATION)
def test_satfinite(fmt, values, codes):
    got = float32_to_bits(np.array(values, np.float32), fmt)
    assert got.tolist() == codes


@pytest.mark.parametrize("fmt, nan_code", [("float8_e4m3fn", 0x7F), ("float8_e5m2", 0x7F)])
def test_nan_becomes_the_canonical_nan(fmt, nan_code):
    got = float32_to_bits(np.array([np.nan, -np.nan], np.float32), fmt)
    assert got.tolist() == [nan_code, nan_code]
    assert np.isnan(bits_to_float32(got, fmt)).all()


def test_e2m1_refuses_nan():
    with pytest.raises(DTypeError, match="NaN"):
        float32_to_bits(np.array([1.0, np.nan], np.float32), "float4_e2m1fn")


def test_ue4m3_is_e4m3_without_its_sign():
    codes = np.arange(128, dtype=np.uint8)
    e4m3 = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    np.testing.assert_array_equal(bits_to_float32(codes, "ue4m3"), e4m3)
    finite = e4m3[np.isfinite(e4m3)]
    x = _probe_values(finite, seed=7)
    want = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    np.testing.assert_array_equal(float32_to_bits(x, "ue4m3"), want)
    # bit 7 is not a sign: ignored on reading; negatives clamp to 0, overflow to 448 (0x7E)
    assert bits_to_float32(np.array([0x80 | 0x38], np.uint8), "ue4m3").tolist() == [1.0]
    assert float32_to_bits(np.array([-3.0, 1e9], np.float32), "ue4m3").tolist() == [0, 0x7E]


def test_tf32_ignores_the_low_13_bits():
    # 1 + 2^-23 (mantissa bit 0) and 1 + 2^-10 (bit 13, the lowest tf32 bit)
    words = np.array([0x3F800001, 0x3F802000, 0x3F801FFF], np.uint32)
    assert bits_to_float32(words, "tf32").tolist() == [1.0, 1 + 2**-10, 1.0]


def test_tf32_rounds_to_nearest_even():
    # by hand: ulp(1) in tf32 is 2^-10. 1 + 2^-11 ties between 1 (even) and 1 + 2^-10 (odd)
    # -> 1; 1 + 3 * 2^-11 ties between 1 + 2^-10 (odd) and 1 + 2^-9 (even) -> 1 + 2^-9
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-20, -(1 + 3 * 2**-11)], np.float32)
    got = bits_to_float32(float32_to_bits(x, "tf32"), "tf32").tolist()
    assert got == [1.0, 1 + 2**-9, 1 + 2**-10, -(1 + 2**-9)]


def test_tf32_rounding_matches_frexp_rint():
    """An independent formula for normal values: 11 significant bits, np.rint (ties to even)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(20000) * 10.0 ** rng.integers(-20, 20, 20000)).astype(np.float32)
    m, e = np.frexp(x.astype(np.float64))
    want = np.ldexp(np.rint(np.ldexp(m, 11)), e - 11).astype(np.float32)
    np.testing.assert_array_equal(bits_to_float32(float32_to_bits(x, "tf32"), "tf32"), want)


def test_int8_rounds_to_even_and_saturates():
    # cvt.rni.sat.s8.f32: nearest even, clamp to [-128, 127], NaN -> 0
    x = np.array([2.5, 3.5, -2.5, 200.0, -200.0, np.nan, -0.4], np.float32)
    got = float32_to_bits(x, "int8")
    assert got.tolist() == [2, 4, 0xFE, 0x7F, 0x80, 0, 0]
    assert bits_to_float32(got, "int8").tolist() == [2, 4, -2, 127, -128, 0, 0]
    assert float32_to_bits(np.array([-3.0, 300.0, 2.5]), "uint8").tolist() == [0, 255, 2]


def test_every_int8_code_decodes_as_twos_complement():
    codes = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(bits_to_float32(codes, "int8"), codes.view(np.int8))
    np.testing.assert_array_equal(bits_to_float32(codes, "uint8"), codes)


def test_ml_dtypes_arrays_are_read_as_their_bits():
    a = np.array([1.5, -2.0], dtype=ml_dtypes.float8_e4m3fn)
    assert as_bits(a, "float8_e4m3fn").tolist() == [0x3C, 0xC0]
    assert bits_to_float32(a, "float8_e4m3fn").tolist() == [1.5, -2.0]
    b = np.array([3.0], dtype=ml_dtypes.bfloat16)
    assert bits_to_float32(b, "bfloat16").tolist() == [3.0]


def test_a_float64_array_is_refused_with_the_fix():
    with pytest.raises(DTypeError, match="unsigned-integer array"):
        as_bits(np.zeros(3), "bfloat16")
    with pytest.raises(DTypeError, match="formats"):
        float32_to_bits([1.0], "float7")


def test_format_bits():
    assert [format_bits(f) for f in ("tf32", "bfloat16", "float4_e2m1fn", "ue8m0", "int8")] == [
        32,
        16,
        4,
        8,
        8,
    ]
