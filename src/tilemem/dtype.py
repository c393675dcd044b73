"""Element data types: name, width in bits, the CUDA C++ spelling and per-type codes.

Bits are the truth: sub-byte types (fp4, fp6) have fractional ``bytes``, and
every size computation in tilemem counts bits and rounds up once at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

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
# FLOAT32 7, FLOAT64 8, BFLOAT16 9 (cuda.h). TMA copies bits, so 8-bit floats and int8 move
# as UINT8 and int16 as UINT16. Generated kernels include no CUDA headers (NVRTC from pip
# ships none), so 16- and 8-bit floats are storage types defined in the kernel prelude
# (cuda/prelude.py); sub-byte types name a packed byte.
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
    "float4_e2m1fn": _Facts(4, "tm_fp4x2_e2m1"),
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
