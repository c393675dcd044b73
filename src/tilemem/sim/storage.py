"""Element bits in memory <-> values in registers.

Shared memory holds raw bytes. A global argument holds elements of the array's own numpy
type: the IR type itself (float32, int32, ...), an ``ml_dtypes`` type of the same name
(bfloat16, float8_e4m3fn, ...), or an unsigned integer of the same width holding the bits.
Narrow floats convert with :func:`tilemem.dtype.bits_to_float32` / ``float32_to_bits``.
"""

from __future__ import annotations

import numpy as np

from ..dtype import DataType, as_bits, bits_to_float32, float32_to_bits
from .values import RAW_BYTE_FLOATS, numpy_type

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _native(dtype: DataType) -> bool:
    """Types numpy holds as themselves (no bit conversion)."""
    return dtype.name in ("float32", "float64") or dtype.name.startswith(("int", "uint", "bool"))


def _raw_byte(dtype: DataType) -> bool:
    """8-bit floats (:data:`~.values.RAW_BYTE_FLOATS`): raw bytes in registers, their bits
    moved as they are between memory and registers."""
    return dtype.name in RAW_BYTE_FLOATS


def bits_to_values(bits: np.ndarray, dtype: DataType) -> np.ndarray:
    """Register values (``numpy_type(dtype)``) of raw element bits."""
    if _native(dtype) or _raw_byte(dtype):
        return bits.astype(_UINT[dtype.bits]).view(numpy_type(dtype))
    if dtype.name == "bfloat16":  # the top half of a float32: exact, and the hot path
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return bits_to_float32(bits, dtype)


def values_to_bits(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """Raw element bits (unsigned, ``dtype.bits`` wide) of register values."""
    if _native(dtype) or _raw_byte(dtype):
        return np.asarray(values).astype(numpy_type(dtype)).view(_UINT[dtype.bits])
    return float32_to_bits(np.asarray(values, np.float32), dtype)


def decode(raw: np.ndarray, dtype: DataType) -> np.ndarray:
    """Values of ``raw``: bytes of shape (k, size) from shared memory, or k global elements."""
    if raw.ndim == 2:
        bits = np.ascontiguousarray(raw).view(_UINT[dtype.bits]).reshape(-1)
        return bits_to_values(bits, dtype)
    if _native(dtype):
        return raw.astype(numpy_type(dtype))
    if _raw_byte(dtype):
        return as_bits(raw, dtype).astype(np.uint8)
    return bits_to_float32(as_bits(raw, dtype), dtype)


def encode_bytes(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """``values`` as shared-memory bytes, shape (k, size)."""
    bits = np.ascontiguousarray(values_to_bits(values, dtype))
    return bits.view(np.uint8).reshape(len(values), dtype.bits // 8)


def encode(values: np.ndarray, dtype: DataType, storage: np.dtype) -> np.ndarray:
    """``values`` as elements of a global array of numpy type ``storage``."""
    if _native(dtype):
        return np.asarray(values).astype(storage)
    bits = values_to_bits(values, dtype)
    return bits.astype(storage) if storage.kind == "u" else bits.view(storage)
