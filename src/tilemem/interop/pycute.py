"""tilemem layouts as ``pycute`` layouts (pure Python CuTe, shipped in ``nvidia-cutlass``).

``to_pycute(layout)(*coords)`` equals tilemem's position at every logical coordinate:

- shared-memory layouts give the element offset ``m``; an MMA swizzle
  ``SwizzleLayout(pe, L, a)`` becomes ``pycute.Swizzle(L, pe, a)`` on element offsets
  (CuTe's ``Swizzle<L, 4, 3>`` acts on byte addresses: 16-byte chunks are ``2**pe``
  elements, so bf16's 128B swizzle is ``Swizzle(3, 3, 3)``);
- TMEM layouts give CuTe's TMEM address ``(lane << 16) + column``, the column in the
  layout's own units (elements of the buffer's dtype).

Each logical dimension becomes one mode; a dimension made of several Iters becomes a
nested mode whose first sub-mode varies fastest (CuTe is colexicographic, tilemem splits a
dimension row-major), so an integer coordinate per dimension reads the same element.
"""

from __future__ import annotations

from typing import Any

from ..errors import LayoutError
from ..layout import ComposeLayout, Layout, SwizzleLayout, TileLayout
from ..layout.tmem import TMEM_LANES
from . import require

# CuTe's TMEM address: lane in bits [16, 32), column in bits [0, 16)
TMEM_LANE_SHIFT = 16
TMEM_AXES = ("TLane", "TCol")


def axis_weights(layout: TileLayout) -> dict[str, int]:
    """How much one step on each axis moves the flat offset: ``m`` 1; TMEM lane ``1 << 16``,
    column 1. A layout mixing shared and tensor memory axes has no such offset."""
    axes = set(layout.axes)
    if axes <= {"m"}:
        return {"m": 1}
    if axes <= set(TMEM_AXES):
        cols = layout.span("TCol") if "TCol" in axes else 1
        if cols > 1 << TMEM_LANE_SHIFT:
            raise LayoutError(
                f"layout {layout!r} spans {cols} TMEM columns; CuTe's TMEM address keeps the "
                f"column in 16 bits, so at most {1 << TMEM_LANE_SHIFT}"
            )
        return {"TLane": 1 << TMEM_LANE_SHIFT, "TCol": 1}
    raise LayoutError(
        f"layout on axes {layout.axes} has no CuTe form: CuTe layouts map to shared-memory "
        f"offsets (axis 'm') or to TMEM addresses (axes {TMEM_AXES}), not both or others"
    )


def modes(layout: TileLayout, weights: dict[str, int]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(shape, stride) per logical dimension, each a nested CuTe mode (first sub-mode
    fastest), strides scaled by the axis weights."""
    if any(it.extent > 1 and it.stride != 0 for it in layout.replica):
        raise LayoutError(
            f"layout {layout!r} keeps copies of each element (replica "
            f"{list(layout.replica)}); a CuTe layout maps each coordinate to one position, so "
            "it cannot express them: convert one copy (drop the replica) if that is what the "
            "kernel reads"
        )
    shapes: list[Any] = []
    strides: list[Any] = []
    for dim in layout.iters_by_dim():
        group = [it for it in dim if it.extent > 1]
        if not group:
            shapes.append(1)
            strides.append(0)
        elif len(group) == 1:
            shapes.append(group[0].extent)
            strides.append(group[0].stride * weights[group[0].axis])
        else:
            shapes.append(tuple(it.extent for it in reversed(group)))
            strides.append(tuple(it.stride * weights[it.axis] for it in reversed(group)))
    return tuple(shapes), tuple(strides)


def base_offset(layout: TileLayout, weights: dict[str, int]) -> int:
    return sum(value * weights[axis] for axis, value in layout.offset.items())


def identity_swizzle(pycute) -> Any:
    """The identity swizzle: ``Swizzle(0, 0, 0)`` would recurse forever in pycute."""
    return pycute.Swizzle(0, 4, 3)


def to_pycute(layout: Layout):
    """``layout`` as a ``pycute.Layout``, or a ``pycute.ComposedLayout`` for a swizzle or a
    constant offset (``ComposedLayout(swizzle, offset, strided)``).

    >>> from tilemem.layout import mma_shared_layout
    >>> to_pycute(mma_shared_layout("bfloat16", "128B", (64, 64)))     # doctest: +SKIP
    ComposedLayout(Swizzle(3,3,3),0,Layout((8, 8),(64, 512)))
    """
    pycute = require("pycute")
    if isinstance(layout, ComposeLayout):
        swz = layout.swizzle
        shape, stride = modes(layout.tile, {"m": 1})
        swizzle = (
            pycute.Swizzle(swz.swizzle_len, swz.per_element, swz.atom_len)
            if swz.swizzle_len
            else identity_swizzle(pycute)
        )
        return pycute.ComposedLayout(
            swizzle, layout.tile.offset.get("m", 0), pycute.Layout(shape, stride)
        )
    if isinstance(layout, SwizzleLayout):
        return to_pycute(ComposeLayout(layout, TileLayout.row_major((layout.period,))))
    if not isinstance(layout, TileLayout):
        raise LayoutError(f"to_pycute takes a tilemem layout, got {type(layout).__name__}")
    weights = axis_weights(layout)
    if "TLane" in layout.axes and layout.span("TLane") > TMEM_LANES:
        raise LayoutError(
            f"layout {layout!r} reaches TMEM lane {layout.span('TLane') - 1}; TMEM has "
            f"{TMEM_LANES} lanes"
        )
    shape, stride = modes(layout, weights)
    strided = pycute.Layout(shape, stride)
    offset = base_offset(layout, weights)
    if offset:
        return pycute.ComposedLayout(identity_swizzle(pycute), offset, strided)
    return strided


__all__ = ["to_pycute"]
