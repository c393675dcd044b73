"""Element data types: name, width in bits, the CUDA C++ spelling and per-type codes.

Bits are the truth: sub-byte types (fp4, fp6) have fractional ``bytes``, and
every size computation in tilemem counts bits and rounds up once at the end.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .errors import DTypeError
from .intmath import ceil_div


@dataclass(frozen=True)
class _Facts:
    """What each layer needs to know about one element type, kept in one table."""

    bits: int
    cuda_type: str  # the C++ spelling in generated code
    tma_code: int | None = None  # CUtensorMapDataType (cuda.h); None: TMA has no such type
    host: str | None = None  # numpy dtype of a scalar kernel argument; None: not a scalar
    literal_suffix: str = ""  # C++ integer literal suffix


# CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5, FLOAT16 6,
# FLOAT32 7, FLOAT64 8, BFLOAT16 9, FLOAT32_FTZ 10, TFLOAT32 11, TFLOAT32_FTZ 12,
# 16U4_ALIGN8B 13, 16U4_ALIGN16B 14, 16U6_ALIGN16B 15 (cuda.h). TMA copies bits, so 8-bit floats
# and int8 move as UINT8 and int16 as UINT16. e2m1 moves as 16U4_ALIGN8B: 4-bit elements packed
# two per byte with no gaps in shared memory, what tcgen05.mma kind::mxf4nvf4 reads (ALIGN16B
# pads every 8 bytes to 16, the layout kind::f8f6f4 reads). Generated kernels include no CUDA
# headers (NVRTC from pip ships none), so 16- and 8-bit floats are storage types defined in
# the kernel prelude (cuda/prelude.py); sub-byte types name a packed byte.
_TYPES: dict[str, _Facts] = {
    "bool": _Facts(8, "bool", 0, "bool"),
    "int8": _Facts(8, "int8_t", 0, "int8"),
    "int16": _Facts(16, "int16_t", 1, "int16"),
    "int32": _Facts(32, "int32_t", 3, "int32"),
    "int64": _Facts(64, "int64_t", 5, "int64", "ll"),
    "uint8": _Facts(8, "uint8_t", 0, "uint8"),
    "uint16": _Facts(16, "uint16_t", 1, "uint16"),
    "uint32": _Facts(32, "uint32_t", 2, "uint32", "u"),
    "uint64": _Facts(64, "uint64_t", 4, "uint64", "ull"),
    "float16": _Facts(16, "tm_f16", 6),
    "bfloat16": _Facts(16, "tm_bf16", 9),
    "float32": _Facts(32, "float", 7, "float32"),
    "float64": _Facts(64, "double", 8, "float64"),
    "float8_e4m3fn": _Facts(8, "tm_fp8_e4m3", 0),
    "float8_e5m2": _Facts(8, "tm_fp8_e5m2", 0),
    "float8_e8m0fnu": _Facts(8, "tm_fp8_e8m0", 0),
    "float6_e2m3fn": _Facts(6, "tm_fp6x4_e2m3"),
    "float6_e3m2fn": _Facts(6, "tm_fp6x4_e3m2"),
    "float4_e2m1fn": _Facts(4, "tm_fp4x2_e2m1", 13),
}


@dataclass(frozen=True)
class DataType:
    """An element type, e.g. ``DataType("bfloat16")``.

    >>> DataType("float4_e2m1fn").bits, DataType("float4_e2m1fn").bytes
    (4, 0.5)
    """

    name: str

    def __post_init__(self) -> None:
        if isinstance(self.name, DataType):  # DataType(DataType("x")) is DataType("x")
            object.__setattr__(self, "name", self.name.name)
        if not isinstance(self.name, str) or self.name not in _TYPES:
            raise DTypeError(f"unknown dtype {self.name!r}; known dtypes: {', '.join(_TYPES)}")

    @property
    def bits(self) -> int:
        return _TYPES[self.name].bits

    @property
    def bytes(self) -> float:
        """Bytes per element; fractional for sub-byte types (use ``bits`` to compute)."""
        b = self.bits
        return b // 8 if b % 8 == 0 else b / 8

    @property
    def cuda_type(self) -> str:
        return _TYPES[self.name].cuda_type

    @property
    def tma_code(self) -> int | None:
        """``CUtensorMapDataType`` that copies this type, or None when TMA has none."""
        return _TYPES[self.name].tma_code

    @property
    def host_dtype(self) -> str | None:
        """numpy dtype name of a host scalar of this type, or None for storage-only types."""
        return _TYPES[self.name].host

    @property
    def literal_suffix(self) -> str:
        """Suffix of an integer literal of this type in C++ (``u``, ``ll``, ``ull``)."""
        return _TYPES[self.name].literal_suffix

    @property
    def natural_align(self) -> int:
        """Natural alignment in bytes: the element size, at least 1, at most 16."""
        return max(1, min(16, self.bits // 8))

    def storage_bytes(self, count: int) -> int:
        """Bytes that ``count`` packed elements occupy, rounded up once."""
        return ceil_div(count * self.bits, 8)

    def __str__(self) -> str:
        return self.name


DTypeLike = str | DataType


def as_dtype(dtype: DTypeLike) -> DataType:
    """Accept a name or a :class:`DataType`."""
    return dtype if isinstance(dtype, DataType) else DataType(dtype)


def known_dtypes() -> tuple[str, ...]:
    return tuple(_TYPES)


# -- element bits <-> float32 (what the simulator and host arrays exchange) --------------------


@dataclass(frozen=True)
class _BitFormat:
    """A number format of at most 16 bits, as its fields.

    ``special`` says what the top exponent holds: ``"ieee"`` infinities and NaNs (f16,
    bf16, e5m2), ``"fn"`` a single NaN, exponent and mantissa all ones, no infinity
    (e4m3, ue4m3), ``"fnu"`` all ones is NaN and there is no zero (ue8m0), ``"none"``
    neither (e2m1, e2m3, e3m2).
    """

    bits: int
    exponent: int
    mantissa: int
    signed: bool
    special: str

    @property
    def bias(self) -> int:
        return (1 << (self.exponent - 1)) - 1


# Formats from the PTX ISA ("Alternate Floating-Point Data Formats", "Block scaling") and the
# OCP MX specification: e4m3 max 448, e5m2 max 57344, e2m1 max 6, e2m3 max 7.5, e3m2 max 28
# (the FP6 formats have no infinity or NaN), ue8m0 2^-127 .. 2^127,
# ue4m3 is e4m3 without its sign bit.
_BIT_FORMATS: dict[str, _BitFormat] = {
    "float16": _BitFormat(16, 5, 10, True, "ieee"),
    "bfloat16": _BitFormat(16, 8, 7, True, "ieee"),
    "float8_e4m3fn": _BitFormat(8, 4, 3, True, "fn"),
    "float8_e5m2": _BitFormat(8, 5, 2, True, "ieee"),
    "float4_e2m1fn": _BitFormat(4, 2, 1, True, "none"),
    "float6_e2m3fn": _BitFormat(6, 2, 3, True, "none"),  # max 7.5, OCP MX FP6
    "float6_e3m2fn": _BitFormat(6, 3, 2, True, "none"),  # max 28
    "float8_e8m0fnu": _BitFormat(8, 8, 0, False, "fnu"),
    "ue4m3": _BitFormat(8, 4, 3, False, "fn"),
}
_FORMAT_ALIASES = {"ue8m0": "float8_e8m0fnu", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
_INT_FORMATS = {"int8": (-128, 127), "uint8": (0, 255)}
BIT_FORMATS = (*_BIT_FORMATS, "tf32", *_INT_FORMATS)  # what the conversions below accept
_STORAGE = {4: np.uint8, 6: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32}


def _format_name(fmt: str | DataType) -> str:
    name = fmt.name if isinstance(fmt, DataType) else _FORMAT_ALIASES.get(fmt, fmt)
    if name not in BIT_FORMATS:
        raise DTypeError(f"no bit conversion for {fmt!r}; formats: {', '.join(BIT_FORMATS)}")
    return name


def format_bits(fmt: str | DataType) -> int:
    """Bits of one element of ``fmt`` (tf32 is stored in 32 bits)."""
    name = _format_name(fmt)
    if name == "tf32":
        return 32
    return 8 if name in _INT_FORMATS else _BIT_FORMATS[name].bits


@functools.cache
def _code_values(f: _BitFormat) -> np.ndarray:
    """float64 value (read-only, cached) of every code 0 .. 2^bits - 1 (NaN where the code is NaN).

    ``(-1)^s * 2^(e - bias) * (1 + m / 2^M)`` for ``e > 0``, ``2^(1 - bias) * m / 2^M``
    for ``e == 0`` (subnormals; ue8m0 has no mantissa and no subnormals: ``2^(e - 127)``).
    """
    codes = np.arange(1 << f.bits, dtype=np.int64)
    m = codes & ((1 << f.mantissa) - 1)
    e = (codes >> f.mantissa) & ((1 << f.exponent) - 1)
    frac = m / float(1 << f.mantissa)
    if f.special == "fnu":
        values = np.exp2(e - f.bias).astype(np.float64)
    else:
        values = np.where(e > 0, np.exp2(e - f.bias) * (1 + frac), np.exp2(1 - f.bias) * frac)
    top = e == (1 << f.exponent) - 1
    if f.special == "ieee":
        values = np.where(top & (m == 0), np.inf, values)
        values = np.where(top & (m != 0), np.nan, values)
    elif f.special in ("fn", "fnu"):
        values = np.where(top & (m == (1 << f.mantissa) - 1), np.nan, values)
    if f.signed:
        sign = (codes >> (f.bits - 1)) & 1
        values = np.where(sign == 1, -values, values)
    values.flags.writeable = False
    return values


@functools.cache
def _code_values32(f: _BitFormat) -> np.ndarray:
    table = _code_values(f).astype(np.float32)
    table.flags.writeable = False
    return table


def bits_to_float32(bits: np.ndarray, fmt: str | DataType) -> np.ndarray:
    """The values that element bits encode, as float32 (exact for every format here).

    tf32 reads a float32 word's sign, exponent and top 10 mantissa bits and ignores the
    low 13 (PTX ISA, "Alternate Floating-Point Data Formats"); int8/uint8 bits are two's
    complement / unsigned. ue4m3 ignores its (reserved) bit 7. ``bits`` is an
    unsigned-integer array, or an ``ml_dtypes`` array (its bits are read).
    """
    name = _format_name(fmt)
    raw = np.asarray(as_bits(bits, name)).astype(np.int64)
    if name == "tf32":
        return (raw & 0xFFFFE000).astype(np.uint32).view(np.float32)
    if name in _INT_FORMATS:
        lo = _INT_FORMATS[name][0]
        return (((raw & 0xFF) ^ (0x80 if lo else 0)) - (0x80 if lo else 0)).astype(np.float32)
    f = _BIT_FORMATS[name]
    mask = (1 << f.bits) - 1 if f.signed else (1 << (f.exponent + f.mantissa)) - 1
    return _code_values32(f)[raw & mask]


def float32_to_bits(values, fmt: str | DataType) -> np.ndarray:
    """Encode values as element bits: round to nearest, ties to even, with PTX's saturation.

    - f16: ``cvt.rn.f16.f32`` (overflow gives infinity, NaN a NaN); bf16 likewise
      (``cvt.rn.bf16.f32``); tf32 ``cvt.rn.tf32.f32`` (low 13 bits zero).
    - e4m3, e5m2, e2m1: ``cvt.rn.satfinite`` (the only form PTX has for these
      destinations): beyond the largest finite value, infinities included, saturate to
      it with the sign; NaN gives the canonical NaN 0x7F (e2m1 has none: refused).
    - ue8m0: round to nearest even, saturate to [2^-127, 2^127]; NaN, negatives and zero
      give the NaN code 0xFF (it has no zero). ue4m3: as e4m3 on [0, 448]; negatives
      give 0.
    - int8 / uint8: ``cvt.rni.sat``: round to nearest even, clamp, NaN gives 0.
    """
    name = _format_name(fmt)
    x = np.asarray(values, dtype=np.float32)
    if name == "tf32":
        return _round_float32_bits(x, 13)
    if name == "bfloat16":
        return (_round_float32_bits(x, 16) >> 16).astype(np.uint16)
    if name == "float16":
        return x.astype(np.float16).view(np.uint16)
    if name in _INT_FORMATS:
        lo, hi = _INT_FORMATS[name]
        ints = np.clip(np.rint(np.nan_to_num(x, nan=0.0, posinf=hi, neginf=lo)), lo, hi)
        return ints.astype(np.int64).astype(np.uint8)
    return _encode_small(x, _BIT_FORMATS[name], name)


def _round_float32_bits(x: np.ndarray, dropped: int) -> np.ndarray:
    """float32 bits with the low ``dropped`` mantissa bits rounded off, ties to even; NaN stays
    NaN (quiet) and infinity stays infinity."""
    raw = x.view(np.uint32).astype(np.uint64)
    half = (1 << (dropped - 1)) - 1
    rounded = (raw + half + ((raw >> dropped) & 1)) >> dropped << dropped
    nan = np.isnan(x)
    quiet = (raw | (1 << 22)) >> dropped << dropped
    return np.where(nan, quiet, rounded).astype(np.uint32)


def _encode_small(x: np.ndarray, f: _BitFormat, name: str) -> np.ndarray:
    """Round magnitudes to the nearest code (ties: the even mantissa, or upward when there is
    no mantissa bit), saturating; then add the sign."""
    table = _code_values(f)
    positive = 1 << (f.exponent + f.mantissa)  # codes of the non-negative values
    mags = table[:positive]
    finite = np.flatnonzero(np.isfinite(mags))  # codes ordered by magnitude
    grid = mags[finite]
    a = np.abs(x.astype(np.float64))
    if f.special == "none" and np.isnan(a).any():
        raise DTypeError(f"{name} has no NaN; replace NaN inputs before converting")
    clipped = np.clip(np.nan_to_num(a, nan=0.0, posinf=grid[-1]), grid[0], grid[-1])
    hi = np.clip(np.searchsorted(grid, clipped, side="left"), 0, len(grid) - 1)
    lo = np.maximum(hi - 1, 0)
    d_lo, d_hi = clipped - grid[lo], grid[hi] - clipped
    lo_even = (finite[lo] & 1) == 0 if f.mantissa else np.zeros_like(lo, dtype=bool)
    pick_lo = (d_lo < d_hi) | ((d_lo == d_hi) & lo_even)
    code = np.where(pick_lo, finite[lo], finite[hi]).astype(np.int64)
    nan_code = positive - 1 if f.special in ("fn", "fnu") else 0x7F
    if f.signed:
        code = np.where(np.signbit(x), code | positive, code)
        code = np.where(np.isnan(x), nan_code, code)
    elif f.special == "fnu":
        code = np.where(np.isnan(x) | (x <= 0), nan_code, code)
    else:  # ue4m3: negatives clamp to 0, NaN is the NaN code
        code = np.where(np.isnan(x), nan_code, np.where(x < 0, 0, code))
    return code.astype(_STORAGE[f.bits])


def as_bits(array, fmt: str | DataType) -> np.ndarray:
    """The element bits of ``array``: an unsigned-integer array as it is, an ``ml_dtypes`` (or
    numpy float16 / float32 for tf32) array of ``fmt`` viewed as its bits."""
    name = _format_name(fmt)
    a = np.asarray(array)
    if a.dtype.kind == "u":
        return a
    if name in _INT_FORMATS and a.dtype.kind == "i" and a.dtype.itemsize == 1:
        return a.view(np.uint8)
    expected = {"tf32": "float32"}.get(name, name)
    if a.dtype.name == expected:
        return a.view(_STORAGE[max(8, a.dtype.itemsize * 8)])
    raise DTypeError(
        f"{fmt!s} elements come as an unsigned-integer array of their bits or an ml_dtypes "
        f"{expected} array, got dtype {a.dtype}"
    )
