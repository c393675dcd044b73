"""Shared-memory matrix descriptors as kernel expressions (wgmma and tcgen05 alike).

The 64-bit descriptor's high bits come from the operand's layout
(:mod:`tilemem.layout.operand`); its low 14 bits are the start address >> 4.
"""

from __future__ import annotations

from collections.abc import Callable

from ...layout.operand import check_major, operand_byte_offset, operand_geometry, tile_of
from ...pool import SMEM, Buffer
from ..index import layout_index
from ..nodes import UINT64, Cast, Const, Expr, IRError, binop
from .thread import smem_addr


def shared_descriptor(buf: Buffer, coords, high_fn: Callable, major: str = "K") -> Expr:
    """``high_fn(geometry) | ((start_address >> 4) & 0x3FFF)`` for ``buf`` at ``coords``.

    ``major`` says which of the buffer's last two dimensions is K: "K" for a
    (..., MN, K) tile, "MN" for a (..., K, MN) tile read MN-major. Coordinates may
    be run-time expressions for every swizzle mode (the unswizzled tile offset
    becomes index arithmetic).
    """
    if not isinstance(buf, Buffer) or buf.scope != SMEM:
        raise IRError(f"an MMA descriptor describes a shared-memory buffer, got {buf!r}")
    coords = tuple(coords) if coords else (0,) * len(buf.shape)
    if len(coords) != len(buf.shape):
        raise IRError(
            f"{buf.name} has {len(buf.shape)} dimensions; give all of them (stage..., row, k)"
        )
    geometry = operand_geometry(buf.layout, buf.dtype, check_major(major))
    offset: int | Expr
    if all(isinstance(c, int) for c in coords):
        offset = operand_byte_offset(buf.layout, buf.dtype, coords)
    else:  # run-time coordinates: the unswizzled tile offset as arithmetic
        # the constant ones still obey the slice-start rule (a run-time one stands in as 0)
        operand_byte_offset(buf.layout, buf.dtype, [c if isinstance(c, int) else 0 for c in coords])
        elements = layout_index(tile_of(buf.layout), coords)["m"]
        offset = binop("//", binop("*", elements, buf.dtype.bits), 8)
    start = binop("+", smem_addr(buf), offset)
    low = Cast(binop("&", binop(">>", start, 4), 0x3FFF), UINT64)
    return binop("|", Const(high_fn(geometry), UINT64), low)
