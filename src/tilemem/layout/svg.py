"""A layout as a picture of its tile: every element's position, coloured by where it lands.

A grid of ``rows x cols`` cells, one per logical element: a 2-D layout draws its own shape, a
deeper one folds its leading dimensions into rows (``rows = prod(shape[:-1])``), a 1-D one is
one row. Each cell shows the element's position and is coloured by the hardware unit that
serves it:

- shared memory (axis ``m``): the label is the element offset; the colour is the **bank**,
  ``(m * bits // 32) % 32`` (32 banks of 4 bytes, successive words in successive banks:
  docs/HARDWARE-RULES.md#shared-memory-capacity). Cells of one colour in one row are a
  bank conflict for a warp reading that row.
- tensor memory (axes ``TLane``, ``TCol``): the label is ``lane,col``; the colour is the
  **lane quarter** ``TLane // 32``, the 32 lanes warp ``w % 4`` of a warpgroup may reach
  (docs/HARDWARE-RULES.md#tensor-memory).

Geometry, in pixels, y growing downwards: cell ``(r, c)`` is the rectangle
``(LEFT + c * CELL_W, TOP + r * CELL_H, CELL_W, CELL_H)``; its label is centred at
``(LEFT + (c + 0.5) * CELL_W, TOP + r * CELL_H + 14)``. Column indices sit above the grid at
``y = TOP - 6``, row indices left of it, right-aligned at ``x = LEFT - 6``. The title is at
``(MARGIN, 18)``. The canvas is ``LEFT + cols * CELL_W + MARGIN`` wide and
``TOP + rows * CELL_H + MARGIN`` high. Every cell carries ``data-row``, ``data-col`` and its
position (``data-offset`` and ``data-bank``, or ``data-lane``, ``data-tcol`` and
``data-quarter``), and a ``<title>`` tooltip.
"""

from __future__ import annotations

import colorsys
import math
import xml.etree.ElementTree as ET
from typing import Protocol

import numpy as np

from ..dtype import DTypeLike, as_dtype
from ..errors import LayoutError

CELL_W = 44
CELL_H = 20
LEFT = 40
TOP = 46
MARGIN = 12
FONT = 10
MAX_CELLS = 64 * 128  # a picture beyond this is unreadable: draw a window() of the layout
BANKS = 32
BANK_BYTES = 4
LANES_PER_QUARTER = 32
QUARTER_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1")


class Drawable(Protocol):
    """What the picture reads of a layout (every :class:`tilemem.layout.Layout` has it)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def axes(self) -> tuple[str, ...]: ...
    def positions(self) -> dict[str, np.ndarray]: ...


def bank_colour(bank: int) -> str:
    """The colour of SMEM bank ``bank``: 32 hues around the colour wheel, neighbours apart."""
    hue = (bank * 13 % BANKS) / BANKS  # 13 is coprime with 32: adjacent banks differ strongly
    r, g, b = colorsys.hls_to_rgb(hue, 0.72, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def grid_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, cols) of the picture: leading dimensions fold into rows."""
    if len(shape) == 1:
        return 1, shape[0]
    return math.prod(shape[:-1]), shape[-1]


def layout_svg(layout: Drawable, dtype: DTypeLike = "float32", title: str | None = None) -> str:
    """The SVG picture of ``layout`` (see the module docstring); ``dtype`` gives the element
    width that turns SMEM offsets into banks."""
    bits = as_dtype(dtype).bits
    rows, cols = grid_shape(tuple(layout.shape))
    if rows * cols > MAX_CELLS:
        raise LayoutError(
            f"a picture of {rows} x {cols} = {rows * cols} cells is too large to read (at most "
            f"{MAX_CELLS}); draw part of the tile: layout.window(dim, start, length).to_svg()"
        )
    axes = set(layout.axes)
    if not ({"m"} >= axes or {"TLane", "TCol"} >= axes):
        raise LayoutError(f"to_svg draws SMEM (m) or TMEM (TLane, TCol) layouts, not {axes}")
    pos = layout.positions()
    width, height = LEFT + cols * CELL_W + MARGIN, TOP + rows * CELL_H + MARGIN
    svg = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "width": str(width),
            "height": str(height),
            "viewBox": f"0 0 {width} {height}",
            "font-family": "monospace",
            "font-size": str(FONT),
        },
    )
    kind = "TMEM lane quarters" if "m" not in axes else f"SMEM banks ({bits}-bit elements)"
    heading = ET.SubElement(svg, "text", {"x": str(MARGIN), "y": "18", "font-size": "13"})
    heading.text = f"{title or type(layout).__name__} {rows}x{cols}: {kind}"
    for c in range(cols):
        _text(svg, LEFT + (c + 0.5) * CELL_W, TOP - 6, str(c), "middle")
    for r in range(rows):
        _text(svg, LEFT - 6, TOP + r * CELL_H + 14, str(r), "end")
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            if "m" in axes:
                m = int(pos["m"][i])
                bank = (m * bits // (8 * BANK_BYTES)) % BANKS
                label, fill = str(m), bank_colour(bank)
                data = {"data-offset": str(m), "data-bank": str(bank)}
                tip = f"({r}, {c}): element {m}, bank {bank}"
            else:
                lane = int(pos["TLane"][i]) if "TLane" in pos else 0
                col = int(pos["TCol"][i]) if "TCol" in pos else 0
                quarter = lane // LANES_PER_QUARTER
                label, fill = f"{lane},{col}", QUARTER_COLOURS[quarter % 4]
                data = {"data-lane": str(lane), "data-tcol": str(col), "data-quarter": str(quarter)}
                tip = f"({r}, {c}): lane {lane}, column {col}, lane quarter {quarter}"
            cell = ET.SubElement(
                svg,
                "rect",
                {
                    "x": str(LEFT + c * CELL_W),
                    "y": str(TOP + r * CELL_H),
                    "width": str(CELL_W),
                    "height": str(CELL_H),
                    "fill": fill,
                    "stroke": "#ffffff",
                    "data-row": str(r),
                    "data-col": str(c),
                    **data,
                },
            )
            ET.SubElement(cell, "title").text = tip
            _text(svg, LEFT + (c + 0.5) * CELL_W, TOP + r * CELL_H + 14, label, "middle")
    return ET.tostring(svg, encoding="unicode")


def repr_svg(layout: Drawable) -> str | None:
    """Jupyter's picture of a layout, or None (no picture) when it is too large to draw."""
    rows, cols = grid_shape(tuple(layout.shape))
    return layout_svg(layout) if rows * cols <= MAX_CELLS else None


def _text(parent: ET.Element, x: float, y: float, text: str, anchor: str) -> None:
    ET.SubElement(parent, "text", {"x": f"{x:g}", "y": f"{y:g}", "text-anchor": anchor}).text = text
