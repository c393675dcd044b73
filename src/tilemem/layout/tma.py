"""How TMA fills a shared-memory buffer: read from the buffer's layout, or refused.

A 2-D TMA box of ``C x R`` elements (``C`` innermost) lands in shared memory as
``R`` rows of ``C`` elements, row after row from the destination address, and
for a swizzled map the hardware XORs the absolute byte address with the mode's
pattern (docs/HARDWARE-RULES.md#swizzle-modes and #tma). A buffer of shape
``(..., R, K)`` is filled as ``K / C`` such boxes per tile, box ``b`` of a tile
covering columns ``[b*C, (b+1)*C)`` and starting at the element the layout puts
at ``(..., 0, b*C)``. So TMA can fill a layout exactly when, for some box width
``C``::

    layout(lead, r, k) == layout(lead, 0, (k // C) * C) + swz(r*C + k % C)

with ``swz`` the layout's swizzle in element units (identity without swizzle),
and every box starts at a multiple of the swizzle period (128 bytes without
swizzle). The widths tried are the whole row ``K`` (row-major buffers), one
swizzle row (swizzled MMA operands) and one 16-byte core-matrix column
(``SWIZZLE_NONE`` MMA operands); the layout decides which, checked element by
element. 4-bit elements (e2m1) count as half bytes, packed two per byte as the tensor map's
16U4_ALIGN8B type lands them. Anything else is refused with :class:`~tilemem.errors.TMAError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..dtype import DTypeLike, as_dtype
from ..errors import TMAError
from ..validate import check_shape
from .core import Layout
from .smem import SwizzleMode, layout_swizzle_mode, swizzle_for

MAX_BOX = 256  # elements per box dimension (cuTensorMapEncodeTiled)
NO_SWIZZLE_ALIGN = 128  # bytes: a TMA shared-memory destination without swizzle


@dataclass(frozen=True)
class TMAFill:
    """A tile ``(R, K)`` of the buffer moves as ``boxes`` boxes of ``box_cols x rows``."""

    box_cols: int  # C: elements of the box's inner dimension
    rows: int  # R: the box's outer dimension (the tile's rows)
    boxes: int  # K / C boxes per tile, box b at tile column b * C
    swizzle: SwizzleMode

    @property
    def box(self) -> tuple[int, int]:
        """The box innermost first, as ``cuTensorMapEncodeTiled`` takes it."""
        return (self.box_cols, self.rows)


def _candidate_widths(mode: SwizzleMode, cols: int, bits: int) -> list[int]:
    # swizzled: one swizzle row; unswizzled: the whole row, then one core-matrix column
    widths = [mode.row_bytes * 8 // bits] if mode else [cols, 128 // bits]
    return [c for c in dict.fromkeys(widths) if cols % c == 0]


def _fills(actual: np.ndarray, width: int, swizzled) -> bool:
    """``actual[l, r, k] == actual[l, 0, (k // C) * C] + swz(r*C + k % C)`` for all l, r, k."""
    _, rows, cols = actual.shape
    r = np.arange(rows)[:, None]
    k = np.arange(cols)[None, :]
    inside = r * width + k % width
    if swizzled is not None:
        inside = swizzled.swizzle(inside)
    starts = actual[:, 0, (k // width) * width]  # (L, 1, K): each box's first element
    return bool(np.array_equal(actual, starts + inside[None]))


def tma_fill(
    layout: Layout, dtype: DTypeLike, shape: Sequence[int], byte_offset: int | None = 0
) -> TMAFill:
    """How TMA fills a buffer of ``shape`` and ``dtype`` laid out by ``layout``.

    ``byte_offset`` is the buffer's offset in the 1024-byte aligned dynamic region
    (None when not placed yet: only offsets within the buffer are checked).
    Raises TMAError when no box width reproduces the layout.
    """
    dtype = as_dtype(dtype)
    shape = check_shape(shape, error=TMAError)
    if math.prod(shape) != layout.size():
        raise TMAError(
            f"the layout holds {layout.size()} elements but shape {shape} has {math.prod(shape)}"
        )
    what = f"{'x'.join(map(str, shape))} {dtype.name} buffer"
    if len(shape) < 2:
        raise TMAError(f"TMA copies tiles of shape (..., R, K); a {what} has no rows")
    if dtype.bits % 8 and dtype.bits != 4:
        raise TMAError(
            f"TMA moves whole bytes or packed 4-bit elements; a {what} has {dtype.bits}-bit "
            "elements: copy it as uint8"
        )
    if "m" not in layout.axes:
        raise TMAError(f"TMA fills shared memory; the {what}'s layout has no 'm' axis")
    bits = dtype.bits
    *lead, rows, cols = shape
    actual = layout.positions()["m"].reshape(math.prod(lead), rows, cols)
    mode = layout_swizzle_mode(layout)
    swizzled = swizzle_for(dtype, mode) if mode != SwizzleMode.SWIZZLE_NONE else None
    for width in _candidate_widths(mode, cols, bits):
        if width * bits % 128 or not _fills(actual, width, swizzled):
            continue
        fill = TMAFill(width, rows, cols // width, mode)
        _check_box(fill, what)
        _check_starts(actual, fill, bits, byte_offset, what)
        return fill
    raise TMAError(
        f"TMA cannot fill the {what}: its layout is neither row-major with 16-byte multiple "
        f"rows nor an MMA operand layout (alloc_mma), so no box lands where the layout puts "
        f"the elements. Allocate it with alloc_mma(...) or alloc(...) row-major, or copy it "
        f"with threads"
    )


def _check_box(fill: TMAFill, what: str) -> None:
    for name, extent in (("inner (columns)", fill.box_cols), ("outer (rows)", fill.rows)):
        if extent > MAX_BOX:
            raise TMAError(
                f"TMA cannot fill the {what}: its {name} box dimension would be {extent} "
                f"elements, above the {MAX_BOX} a box allows; use tiles of at most {MAX_BOX} "
                f"{'rows' if 'rows' in name else 'columns'} or an MMA layout (alloc_mma)"
            )


def _check_starts(actual, fill: TMAFill, bits: int, byte_offset: int | None, what: str) -> None:
    align = fill.swizzle.period_bytes if fill.swizzle else NO_SWIZZLE_ALIGN
    starts = actual[:, 0, :: fill.box_cols].ravel() * bits // 8 + (byte_offset or 0)
    bad = starts[starts % align != 0]
    if bad.size:
        where = "" if byte_offset is None else f" (the buffer starts at byte {byte_offset})"
        raise TMAError(
            f"TMA cannot fill the {what}: a box would start at byte {int(bad[0])}{where}, not a "
            f"multiple of the {align} bytes {fill.swizzle.name} needs; allocate it with "
            f"align={align}"
        )
