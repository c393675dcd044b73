"""tilemem layouts as Triton Gluon layouts, and Triton kernels' memory as tilemem plans.

``to_gluon(layout)`` (or ``to_gluon(buffer)``):

- a 2-D MMA tile with a 32/64/128-byte swizzle -> ``NVMMASharedLayout(16 << L, bits)``;
- any other shared-memory layout that is a bijection onto ``[0, size)`` and linear over
  GF(2) (every swizzle and power-of-two strided tile is) -> ``SharedLinearLayout`` whose
  ``offset_bases[i]`` is the logical coordinate stored at element offset ``2**i``
  (staged tiles go this way: Triton's rank-3 NVMMA layout orders stages below K blocks,
  tilemem puts each stage's whole tile together);
- a TMEM accumulator of data path D (128 rows) or F (64 rows) ->
  ``TensorMemoryLayout((rows, cols), col_stride)``, ``col_stride = 32 // bits`` (an f16
  accumulator keeps one value per 32-bit column); a packed 128-row ``lane = row`` layout
  (FA4's P over S) -> ``col_stride = 1``. Other data paths have no Gluon form.

``linear_layout(gluon_layout, shape)`` asks Triton's own C++ conversion for the linear
layout of a Gluon layout (an internal API: guarded, and the rank and shape are checked
first because a mismatch there aborts the process).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtype import DataType, as_dtype
from ..errors import LayoutError
from ..layout import ComposeLayout, Layout, TileLayout, tmem_datapath_layout
from ..pool import Buffer
from . import require

GLUON = "triton.experimental.gluon"


def _layout_of(buffer: Buffer | Layout, dtype: DataType | str | None) -> tuple[Layout, DataType]:
    if isinstance(buffer, Buffer):
        return buffer.layout, buffer.dtype
    if isinstance(buffer, Layout) and dtype is not None:
        return buffer, as_dtype(dtype)
    raise LayoutError(
        f"pass a tilemem Buffer, or a Layout with dtype=, got {type(buffer).__name__}"
    )


def _language():
    require(GLUON)
    import triton.experimental.gluon.language as ttgl  # importable once the package is

    return ttgl


def _blackwell():
    require(GLUON)
    from triton.experimental.gluon.language.nvidia import blackwell

    return blackwell


def offset_bases(layout: Layout) -> list[list[int]]:
    """For each bit ``i`` of the element offset, the logical coordinate stored at ``2**i``.

    Exact only when the layout maps its coordinates one-to-one onto ``[0, size)`` with a
    power-of-two size and the coordinate of every offset is the XOR of the bases of its
    bits; anything else is a LayoutError saying which rule fails.
    """
    shape = tuple(layout.shape)
    size = math.prod(shape)
    if size & (size - 1) or any(d & (d - 1) for d in shape):
        raise LayoutError(f"a Gluon linear layout needs power-of-two extents, got shape {shape}")
    positions = layout.positions()
    if set(positions) != {"m"}:
        raise LayoutError(f"layout on axes {tuple(positions)} is not a shared-memory layout")
    offsets = positions["m"]
    inverse = np.full(size, -1, dtype=np.int64)
    inside = (offsets >= 0) & (offsets < size)
    inverse[offsets[inside]] = np.arange(size)[inside]
    if not inside.all() or (inverse < 0).any():
        raise LayoutError(
            f"layout {layout!r} does not fill [0, {size}) one element per offset (padding "
            "or gaps): Gluon's SharedLinearLayout maps each offset to one element"
        )
    coords = np.stack(np.unravel_index(inverse, shape), axis=1)  # coords[offset]
    bits = size.bit_length() - 1
    bases = coords[[1 << i for i in range(bits)]]
    combined = np.zeros_like(coords)
    for i in range(bits):
        on = ((np.arange(size) >> i) & 1).astype(bool)
        combined[on] ^= bases[i]
    if not np.array_equal(combined, coords):
        raise LayoutError(
            f"layout {layout!r} is not linear over GF(2) (an offset's element is not the XOR "
            "of its bits' elements), so no Gluon linear layout expresses it"
        )
    return [[int(v) for v in b] for b in bases]


def _shared_alignment(layout: Layout, dtype: DataType) -> int:
    if isinstance(layout, ComposeLayout) and layout.swizzle.swizzle_len:
        return layout.swizzle.period * dtype.bits // 8
    return 16


def _tmem_candidates(shape: tuple[int, ...], dtype: DataType) -> list[tuple[TileLayout, int]]:
    """(tilemem layout, Gluon col_stride) pairs that TensorMemoryLayout expresses."""
    if len(shape) != 2:
        return []
    rows, cols = shape
    out: list[tuple[TileLayout, int]] = []
    if dtype.bits in (16, 32):
        for letter, want in (("D", 128), ("F", 64)):
            if rows == want:
                layout = tmem_datapath_layout(letter, rows, cols, dtype=dtype)
                out.append((layout, 32 // dtype.bits))
    if rows == 128 and 32 % dtype.bits == 0:
        packed = TileLayout.of((rows, cols), ("1@TLane", "1@TCol"))
        out.append((packed, 1))
    return out


def to_gluon(buffer: Buffer | Layout, dtype: DataType | str | None = None):
    """The Gluon layout of a tilemem buffer (or of a layout with its ``dtype``)."""
    layout, dtype = _layout_of(buffer, dtype)
    ttgl = _language()
    if set(layout.axes) <= {"TLane", "TCol"}:
        if isinstance(layout, TileLayout):
            mine = layout.canonicalize()
            for candidate, col_stride in _tmem_candidates(tuple(layout.shape), dtype):
                if candidate.canonicalize() == mine:
                    return _blackwell().TensorMemoryLayout(
                        tuple(layout.shape), col_stride=col_stride
                    )
        raise LayoutError(
            f"TMEM layout {layout!r} ({dtype.name}) has no Gluon TensorMemoryLayout: Gluon "
            "expresses accumulators of data paths D (128 rows) and F (64 rows) and packed "
            "128-row lane=row tiles; data paths A/B/C/E/G and scale factors are not among them"
        )
    if (
        isinstance(layout, ComposeLayout)
        and layout.swizzle.swizzle_len
        and len(layout.shape) == 2
        and dtype.bits in (8, 16, 32, 64)
    ):
        return ttgl.NVMMASharedLayout(
            swizzle_byte_width=16 << layout.swizzle.swizzle_len,
            element_bitwidth=dtype.bits,
            rank=2,
        )
    return ttgl.SharedLinearLayout(
        offset_bases=offset_bases(layout), alignment=_shared_alignment(layout, dtype)
    )


def linear_layout(gluon_layout: Any, shape: tuple[int, ...] | list[int]):
    """Triton's own linear layout of ``gluon_layout`` for a tensor of ``shape``.

    Uses Triton's C++ conversion (``GluonOpBuilder.to_linear_layout``, an internal API).
    A rank or shape Triton cannot use aborts the whole process there, so both are checked
    here first and refused with a LayoutError.
    """
    _language()
    shape = [int(s) for s in shape]
    if any(s <= 0 or s & (s - 1) for s in shape):
        raise LayoutError(f"Triton's layouts need power-of-two extents, got shape {shape}")
    rank = getattr(gluon_layout, "rank", None)
    block = getattr(gluon_layout, "block", None)
    bases = getattr(gluon_layout, "offset_bases", None)
    if rank is not None and rank != len(shape):
        raise LayoutError(f"{gluon_layout} has rank {rank}, the shape {shape} {len(shape)}")
    if block is not None and (len(shape) != 2 or any(s % b for s, b in zip(shape, block))):
        raise LayoutError(
            f"{gluon_layout} tiles blocks {block}: shape {shape} must be 2-D and a multiple of them"
        )
    if bases is not None:
        return gluon_layout  # already linear: Triton returns it unchanged
    try:
        from triton._C.libtriton import gluon_ir, ir
    except ImportError as exc:  # the internal API moved
        raise LayoutError(f"this Triton has no gluon_ir.GluonOpBuilder ({exc})") from None
    context = ir.context()
    ir.load_dialects(context)
    builder = gluon_ir.GluonOpBuilder(context)
    return builder.to_linear_layout(gluon_layout._to_ir(builder), shape)


__all__ = ["linear_layout", "offset_bases", "to_gluon"]
