"""Element data types: name, width in bits, and the CUDA C++ spelling.

Bits are the truth: sub-byte types (fp4, fp6) have fractional ``bytes``, and
every size computation in tilemem counts bits and rounds up once at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DTypeError

# name -> (bits, CUDA C++ type used by codegen). Generated kernels include no CUDA
# headers (NVRTC from pip ships none), so 16- and 8-bit floats are storage types
# defined in the kernel prelude (cuda/prelude.py); sub-byte types name a packed byte.
_TYPES: dict[str, tuple[int, str]] = {
    "bool": (8, "bool"),
    "int8": (8, "int8_t"),
    "int16": (16, "int16_t"),
    "int32": (32, "int32_t"),
    "int64": (64, "int64_t"),
    "uint8": (8, "uint8_t"),
    "uint16": (16, "uint16_t"),
    "uint32": (32, "uint32_t"),
    "uint64": (64, "uint64_t"),
    "float16": (16, "tm_f16"),
    "bfloat16": (16, "tm_bf16"),
    "float32": (32, "float"),
    "float64": (64, "double"),
    "float8_e4m3fn": (8, "tm_fp8_e4m3"),
    "float8_e5m2": (8, "tm_fp8_e5m2"),
    "float8_e8m0fnu": (8, "tm_fp8_e8m0"),
    "float6_e2m3fn": (6, "tm_fp6x4_e2m3"),
    "float6_e3m2fn": (6, "tm_fp6x4_e3m2"),
    "float4_e2m1fn": (4, "tm_fp4x2_e2m1"),
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
        return _TYPES[self.name][0]

    @property
    def bytes(self) -> float:
        """Bytes per element; fractional for sub-byte types (use ``bits`` to compute)."""
        b = self.bits
        return b // 8 if b % 8 == 0 else b / 8

    @property
    def cuda_type(self) -> str:
        return _TYPES[self.name][1]

    @property
    def natural_align(self) -> int:
        """Natural alignment in bytes: the element size, at least 1, at most 16."""
        return max(1, min(16, self.bits // 8))

    def storage_bytes(self, count: int) -> int:
        """Bytes that ``count`` packed elements occupy, rounded up once."""
        return -(-count * self.bits // 8)

    def __str__(self) -> str:
        return self.name


DTypeLike = str | DataType


def as_dtype(dtype: DTypeLike) -> DataType:
    """Accept a name or a :class:`DataType`."""
    return dtype if isinstance(dtype, DataType) else DataType(dtype)


def known_dtypes() -> tuple[str, ...]:
    return tuple(_TYPES)
