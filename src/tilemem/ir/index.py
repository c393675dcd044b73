"""Layouts as index arithmetic: the expression a load/store uses for a logical coordinate.

For a TileLayout the coordinate of dimension d is split over that dimension's
Iters (innermost first): ``part = (c // inner) % extent``, contributing
``part * stride``. A ComposeLayout then applies its XOR swizzle to the sum:
``c = m >> pe; c ^= (c & (((1 << L) - 1) << a)) >> a; (c << pe) | (m & ((1 << pe) - 1))``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import LayoutError
from ..layout import ComposeLayout, Layout, SwizzleLayout, TileLayout
from .nodes import Expr, binop, convert


def _tile_terms(layout: TileLayout, coords: Sequence[Expr], shape) -> dict[str, Expr]:
    groups = layout.iters_by_dim(shape)
    out: dict[str, Expr] = {}
    for c, group in zip(coords, groups):
        inner = 1
        for n, it in enumerate(reversed(group)):
            part = binop("//", c, inner) if inner != 1 else c
            if n != len(group) - 1:  # the outermost Iter of a dimension needs no modulo
                part = binop("%", part, it.extent)
            term = binop("*", part, it.stride)
            out[it.axis] = binop("+", out[it.axis], term) if it.axis in out else term
            inner *= it.extent
    for axis, value in layout.offset.items():
        out[axis] = binop("+", out.get(axis, convert(0)), value)
    for axis in layout.axes:
        out.setdefault(axis, convert(0))
    return out


def swizzle_expr(swz: SwizzleLayout, m: Expr) -> Expr:
    if swz.swizzle_len == 0:
        return m
    chunk = binop(">>", m, swz.per_element)
    mask = ((1 << swz.swizzle_len) - 1) << swz.atom_len
    chunk = binop("^", chunk, binop(">>", binop("&", chunk, mask), swz.atom_len))
    low = binop("&", m, (1 << swz.per_element) - 1)
    return binop("|", binop("<<", chunk, swz.per_element), low)


def layout_index(layout: Layout, coords: Sequence, shape=None) -> dict[str, Expr]:
    """Position expressions (one per axis) of ``coords`` under ``layout``."""
    shape = tuple(layout.shape if shape is None else shape)
    coords = [convert(c) for c in coords]
    if len(coords) != len(shape):
        raise LayoutError(f"{len(coords)} indices for a buffer of shape {shape}")
    if isinstance(layout, ComposeLayout):
        out = _tile_terms(layout.tile, coords, shape)
        out["m"] = swizzle_expr(layout.swizzle, out["m"])
        return out
    if isinstance(layout, TileLayout):
        return _tile_terms(layout, coords, shape)
    raise LayoutError(f"no index arithmetic for {type(layout).__name__}")
