"""Shared-memory operand layouts that the tensor cores and TMA read
(docs/HARDWARE-RULES.md#swizzle-modes).

The swizzle is applied by hardware to the absolute shared-memory byte
address: ``Swizzle<L, 4, 3>`` XORs address bits [4, 4+L) with bits [7, 7+L).
In element units that is ``SwizzleLayout(pe, L, 3)`` with ``pe = log2(16 bytes
/ element)``, so a layout computed relative to the buffer start matches the
hardware only when the buffer starts on a multiple of the period
(256/512/1024 bytes for 32B/64B/128B).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence

from ..dtype import DTypeLike, as_dtype
from ..errors import LayoutError, SwizzleError
from ..intmath import align_up
from ..validate import check_int, check_shape
from .core import ComposeLayout, Iter, Layout, SwizzleLayout, TileLayout


class SwizzleMode(enum.IntEnum):
    """Swizzle mode; the value is ``L``, the number of XORed address bits."""

    SWIZZLE_NONE = 0
    SWIZZLE_32B_ATOM = 1
    SWIZZLE_64B_ATOM = 2
    SWIZZLE_128B_ATOM = 3

    @classmethod
    def parse(cls, mode: SwizzleModeLike) -> SwizzleMode:
        """Accept a SwizzleMode, its value 0..3, or ``"none" | "32B" | "64B" | "128B"``."""
        if isinstance(mode, cls):
            return mode
        if isinstance(mode, str):
            key = mode.strip().lower()
            if key in _BY_NAME:
                return _BY_NAME[key]
        elif isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 3:
            return cls(mode)
        raise LayoutError(
            f"unknown swizzle mode {mode!r}; use SwizzleMode.*, 0..3, or one of "
            "'none', '32B', '64B', '128B'"
        )

    @property
    def row_bytes(self) -> int:
        """Bytes of one swizzle row (the atom's width): 16 for none, else 32/64/128."""
        return 16 << self.value

    @property
    def period_bytes(self) -> int:
        """Bytes after which the XOR pattern repeats: 8 rows of ``row_bytes``."""
        return 8 * self.row_bytes if self.value else 16

    @property
    def label(self) -> str:
        return "none" if self.value == 0 else f"{self.row_bytes}B"


SwizzleModeLike = SwizzleMode | int | str
_BY_NAME = {
    "none": SwizzleMode.SWIZZLE_NONE,
    "32b": SwizzleMode.SWIZZLE_32B_ATOM,
    "64b": SwizzleMode.SWIZZLE_64B_ATOM,
    "128b": SwizzleMode.SWIZZLE_128B_ATOM,
}


def _elements_per_16_bytes(bits: int) -> int:
    if 128 % bits:
        raise LayoutError(
            f"MMA shared-memory layouts need an element width dividing 128 bits, got {bits}"
        )
    return 128 // bits


def swizzle_for(dtype: DTypeLike, mode: SwizzleModeLike) -> SwizzleLayout:
    """The element-unit swizzle of ``mode`` for ``dtype``: ``SwizzleLayout(log2(128/bits), L,
    3)``."""
    e16 = _elements_per_16_bytes(as_dtype(dtype).bits)
    return SwizzleLayout(e16.bit_length() - 1, SwizzleMode.parse(mode).value, 3)


def mma_atom_shape(dtype: DTypeLike, mode: SwizzleModeLike) -> list[int]:
    """``[8, row_bits // bits]``: 8 rows, each one swizzle row (32/64/128 bytes) wide."""
    mode = SwizzleMode.parse(mode)
    if mode == SwizzleMode.SWIZZLE_NONE:
        raise LayoutError(
            "SWIZZLE_NONE has no swizzle atom; its unit is the 8 x 16-byte core matrix"
        )
    return [8, mode.row_bytes * 8 // as_dtype(dtype).bits]


def mma_shared_layout(dtype: DTypeLike, mode: SwizzleModeLike, shape: Sequence[int]) -> Layout:
    """Layout of an MMA operand tile of shape ``(..., R, K)`` (K contiguous, "K-major").

    Leading dimensions (pipeline stages) are outermost, each a whole ``R*K`` tile.

    Swizzled, with ``C`` elements per swizzle row::

        m = swz(lead * R*K + r*C + (k // C) * R*C + k % C)

    K is cut into column blocks one swizzle row wide, each an R x C row-major
    slab, blocks one after another. ``SWIZZLE_NONE`` uses 8-row x 16-byte core
    matrices: ``m = lead * R*K + e16*r + R*e16*(k // e16) + k % e16`` with
    ``e16 = 128 // bits``, or plain row-major when ``K % e16 != 0``.
    """
    dtype, mode = as_dtype(dtype), SwizzleMode.parse(mode)
    shape = check_shape(shape, "MMA operand shape", error=LayoutError)
    if len(shape) < 2:
        raise LayoutError(
            f"an MMA operand tile needs a shape (..., R, K) of positive extents, got {shape}"
        )
    *lead, rows, cols = shape
    if rows % 8:
        raise SwizzleError(
            f"MMA operand shape {shape} {dtype.name}: {rows} rows; operand tiles are built from "
            f"8-row atoms, so rows must be a multiple of 8 (use {align_up(rows, 8)})"
        )
    tile_elems = rows * cols
    lead_iters = [Iter(e, s * tile_elems) for e, s in zip(lead, _row_major(lead))]
    if mode == SwizzleMode.SWIZZLE_NONE:
        e16 = _elements_per_16_bytes(dtype.bits)
        if cols % e16:
            return TileLayout.row_major(shape).canonicalize()
        iters = [Iter(rows, e16), Iter(cols // e16, rows * e16), Iter(e16, 1)]
        return TileLayout(lead_iters + iters, shape=shape).canonicalize()
    atom_cols = mma_atom_shape(dtype, mode)[1]
    if cols % atom_cols:
        raise LayoutError(
            f"shape {shape} {dtype}: K={cols} is not a multiple of the {mode.row_bytes}-byte "
            f"swizzle row ({atom_cols} elements)"
        )
    iters = [Iter(rows, atom_cols), Iter(cols // atom_cols, rows * atom_cols), Iter(atom_cols, 1)]
    tile = TileLayout(lead_iters + iters, shape=shape).canonicalize()
    return ComposeLayout(swizzle_for(dtype, mode), tile)


def _row_major(shape: Sequence[int]) -> list[int]:
    return [math.prod(shape[i + 1 :]) for i in range(len(shape))]


def layout_swizzle_mode(layout: Layout) -> SwizzleMode:
    """The swizzle mode a layout implies (``SWIZZLE_NONE`` for plain tiles); SwizzleError for
    an XOR of more than 3 bits, which no hardware mode has (32B, 64B and 128B XOR 1, 2 and 3
    bits: docs/HARDWARE-RULES.md#swizzle-modes)."""
    if isinstance(layout, ComposeLayout):
        bits = layout.swizzle.swizzle_len
        if bits > SwizzleMode.SWIZZLE_128B_ATOM:
            raise SwizzleError(
                f"a swizzle that XORs {bits} address bits is none of the hardware modes "
                "(32B, 64B, 128B: 1, 2, 3 bits); build the layout with swizzle_len 0..3, e.g. "
                "mma_shared_layout(dtype, '128B', shape) or SMEMPool.alloc_mma(..., "
                "swizzle='128B')"
            )
        return SwizzleMode(bits)
    return SwizzleMode.SWIZZLE_NONE


def widest_swizzle(dtype: DTypeLike, row_elems: int) -> SwizzleMode:
    """Widest mode whose swizzle row divides a row of ``row_elems`` elements (``"auto"``)."""
    row_elems = check_int(row_elems, "row_elems", minimum=0, error=LayoutError)
    row_bits = row_elems * as_dtype(dtype).bits
    for mode in (
        SwizzleMode.SWIZZLE_128B_ATOM,
        SwizzleMode.SWIZZLE_64B_ATOM,
        SwizzleMode.SWIZZLE_32B_ATOM,
    ):
        if row_bits > 0 and row_bits % (mode.row_bytes * 8) == 0:
            return mode
    return SwizzleMode.SWIZZLE_NONE


def check_mma_tile(shape: Sequence[int], dtype: DTypeLike, mode: SwizzleMode) -> None:
    """Validate an operand tile for an explicit swizzle mode; SwizzleError says what would fit."""
    dtype = as_dtype(dtype)
    shape = tuple(shape)
    if len(shape) < 2:
        raise SwizzleError(
            f"an MMA operand tile needs at least 2 dimensions (..., rows, K), got shape {shape}"
        )
    row_bits = shape[-1] * dtype.bits
    row_bytes = row_bits / 8
    row_text = f"{row_bytes:g}-byte rows"
    if mode != SwizzleMode.SWIZZLE_NONE:
        atom_bits = mode.row_bytes * 8
        if shape[-1] <= 0 or row_bits % atom_bits:
            fits = widest_swizzle(dtype, shape[-1]) if shape[-1] > 0 else SwizzleMode.SWIZZLE_NONE
            min_cols = atom_bits // dtype.bits
            raise SwizzleError(
                f"{shape} {dtype.name} gives {row_text}; {mode.name} needs rows that are a "
                f"multiple of {mode.row_bytes} bytes: use {fits.name} or make shape[-1] a "
                f"multiple of {min_cols}"
            )
    if shape[-2] <= 0 or shape[-2] % 8:
        raise SwizzleError(
            f"{shape} {dtype.name}: shape[-2] = {shape[-2]} rows; MMA operand tiles are built "
            f"from 8-row atoms, so shape[-2] must be a positive multiple of 8 "
            f"(use {max(8, align_up(max(shape[-2], 1), 8))})"
        )
    if any(s <= 0 for s in shape):
        raise SwizzleError(f"{shape} {dtype.name}: every extent must be positive")
