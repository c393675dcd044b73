"""Matrix descriptors for MMA operands in shared memory, derived from a buffer's layout.

wgmma (sm_90a) and tcgen05 (sm_100a) read K-major operand tiles through a
64-bit descriptor (HARDWARE.md):

========  ===============================================================
bits      field
========  ===============================================================
0-13      start address >> 4
16-29     leading-dimension byte offset (LBO) >> 4
32-45     stride byte offset (SBO) >> 4
46-48     tcgen05 only: fixed 0b001
49-51     base offset (0: operands start on the swizzle repeat)
52        tcgen05 only: LBO mode
62-63     wgmma layout: 0 none, 1 128B, 2 64B, 3 32B
61-63     tcgen05 layout: 0 none, 2 128B, 4 64B, 6 32B
========  ===============================================================

K-major swizzled: LBO is unused (field 1) and SBO is the distance between
8-row groups (8 swizzle rows). No swizzle: LBO is the distance between
K-adjacent 16-byte core matrices, SBO between 8-row groups. Both are read off
the layout's unswizzled tile, so they follow the layout that placed the data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtype import DTypeLike, as_dtype
from ..errors import LayoutError
from .core import ComposeLayout, Layout, TileLayout
from .smem import SwizzleMode, layout_swizzle_mode

_WGMMA_LAYOUT = {
    SwizzleMode.SWIZZLE_NONE: 0,
    SwizzleMode.SWIZZLE_128B_ATOM: 1,
    SwizzleMode.SWIZZLE_64B_ATOM: 2,
    SwizzleMode.SWIZZLE_32B_ATOM: 3,
}
_TCGEN05_LAYOUT = {
    SwizzleMode.SWIZZLE_NONE: 0,
    SwizzleMode.SWIZZLE_128B_ATOM: 2,
    SwizzleMode.SWIZZLE_64B_ATOM: 4,
    SwizzleMode.SWIZZLE_32B_ATOM: 6,
}


@dataclass(frozen=True)
class OperandGeometry:
    """What a descriptor needs besides the start address."""

    mode: SwizzleMode
    lbo: int  # bytes
    sbo: int  # bytes


def _tile(layout: Layout) -> TileLayout:
    tile = layout.tile if isinstance(layout, ComposeLayout) else layout
    if not isinstance(tile, TileLayout):
        raise LayoutError(f"an MMA operand needs a (swizzled) TileLayout, got {layout!r}")
    return tile


def operand_geometry(layout: Layout, dtype: DTypeLike) -> OperandGeometry:
    """LBO/SBO of a K-major MMA operand tile laid out by ``mma_shared_layout``."""
    bits = as_dtype(dtype).bits
    tile = _tile(layout)
    shape = tile.shape
    if len(shape) < 2 or shape[-2] < 8:
        raise LayoutError(
            f"an MMA operand descriptor needs a tile (..., rows >= 8, K), got shape {shape}"
        )
    lead = (0,) * (len(shape) - 2)
    rows, cols = shape[-2:]
    mode = layout_swizzle_mode(layout)

    def distance(r: int, k: int) -> int:
        return (tile.apply(*lead, r, k)["m"] - tile.apply(*lead, 0, 0)["m"]) * bits // 8

    # A tile of exactly 8 rows has no second group; the hardware still wants the
    # pitch the layout would give one: 8 swizzle rows, or one 8 x 16-byte core matrix.
    sbo = distance(8, 0) if rows > 8 else 8 * mode.row_bytes
    if mode == SwizzleMode.SWIZZLE_NONE:
        per16 = 128 // bits
        if cols % per16:
            raise LayoutError(
                f"a no-swizzle operand needs K a multiple of {per16} elements (16 bytes), got "
                f"{cols}"
            )
        lbo = distance(0, per16) if cols > per16 else rows * 16
    else:
        lbo = 16  # unused by K-major swizzled operands; the field holds 1
    return OperandGeometry(mode, lbo, sbo)


def operand_byte_offset(layout: Layout, dtype: DTypeLike, coords) -> int:
    """Byte offset of the *unswizzled* position of ``coords`` (the hardware swizzles it).

    A descriptor's start address is the tile's origin plus this: rows must
    start an 8-row group, and K a 16-byte chunk.
    """
    bits = as_dtype(dtype).bits
    tile = _tile(layout)
    *_, r, k = coords
    if r % 8 or (k * bits) % 128:
        raise LayoutError(
            "an MMA operand slice must start on an 8-row group and a 16-byte K chunk, got row "
            f"{r}, k {k}"
        )
    return tile.apply(*coords)["m"] * bits // 8


def wgmma_descriptor_high(geometry: OperandGeometry) -> int:
    """The descriptor without its start address (fields from bit 14 up)."""
    lbo = 1 if geometry.mode != SwizzleMode.SWIZZLE_NONE else geometry.lbo >> 4
    return (
        ((lbo & 0x3FFF) << 16)
        | (((geometry.sbo >> 4) & 0x3FFF) << 32)
        | (_WGMMA_LAYOUT[geometry.mode] << 62)
    )


def tcgen05_descriptor_high(geometry: OperandGeometry) -> int:
    lbo = 1 if geometry.mode != SwizzleMode.SWIZZLE_NONE else geometry.lbo >> 4
    return (
        ((lbo & 0x3FFF) << 16)
        | (((geometry.sbo >> 4) & 0x3FFF) << 32)
        | (0b001 << 46)
        | (_TCGEN05_LAYOUT[geometry.mode] << 61)
    )


def descriptor(start_address: int, high: int) -> int:
    """Combine a shared-window byte address with the high fields."""
    return high | ((start_address >> 4) & 0x3FFF)


_F16_KIND_FORMATS = {"float16": 0, "bfloat16": 1}
_ACC_FORMATS = {"float16": 0, "float32": 1}


def tcgen05_instr_descriptor(
    m: int,
    n: int,
    a_dtype="bfloat16",
    b_dtype="bfloat16",
    d_dtype="float32",
    a_mn_major: bool = False,
    b_mn_major: bool = False,
) -> int:
    """32-bit instruction descriptor of ``tcgen05.mma ... kind::f16``.

    bits 4-5 D format (1 = f32), 7-9 A format, 10-12 B format (0 f16, 1 bf16),
    15/16 A/B major (0 = K), 17-22 N >> 3, 24-28 M >> 4 (PTX ISA, "Instruction
    descriptor").
    """
    names = (as_dtype(a_dtype).name, as_dtype(b_dtype).name, as_dtype(d_dtype).name)
    if (
        names[0] not in _F16_KIND_FORMATS
        or names[1] not in _F16_KIND_FORMATS
        or names[2] not in _ACC_FORMATS
    ):
        raise LayoutError(
            f"kind::f16 takes f16/bf16 inputs and an f16/f32 accumulator, got {names}"
        )
    if m not in (64, 128, 256):
        raise LayoutError(f"tcgen05.mma M must be 64, 128 or 256, got {m}")
    if n % (8 if m == 64 else 16) or not 8 <= n <= 256:
        raise LayoutError(
            f"tcgen05.mma N={n} must be in [8, 256] in steps of {8 if m == 64 else 16} for M={m}"
        )
    return (
        (_ACC_FORMATS[names[2]] << 4)
        | (_F16_KIND_FORMATS[names[0]] << 7)
        | (_F16_KIND_FORMATS[names[1]] << 10)
        | (int(a_mn_major) << 15)
        | (int(b_mn_major) << 16)
        | ((n >> 3) << 17)
        | ((m >> 4) << 24)
    )
