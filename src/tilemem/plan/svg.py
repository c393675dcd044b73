"""A memory plan as an SVG picture: an SMEM map over bytes and a TMEM map of lanes x columns.

SMEM: bytes run left to right on one scale for every row, up to the target's capacity (a red
line) or the committed size, whichever is larger. Each buffer is a block at its offset, as
wide as its bytes, labelled with its name, offset, size and swizzle where it fits; the bytes
lost to alignment before it are hatched. With lifetimes, each row is a phase and a buffer
shows in the phases it is live in; without, overlaid buffers (``move_base_to``) get rows of
their own. TMEM: 128 lanes down, the pool's columns across; each buffer covers the lanes its
data path touches (lane quarters are marked), so buffers sharing columns on disjoint lanes
show side by side; stage views are brackets above the map. A legend lists every buffer.
Every block carries ``data-*`` attributes with its numbers, and a ``<title>`` tooltip.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from ..layout.tmem import TMEM_LANES
from ..scopes import TMEM
from .target import get_target

if TYPE_CHECKING:
    from .model import MemoryPlan, PlanEntry, PoolPlan

WIDTH = 960
LEFT = 150  # room for row labels
RIGHT = 30
PLOT = WIDTH - LEFT - RIGHT  # pixels for the byte / column axis
ROW = 46  # height of one SMEM row
LANE = 1.25  # pixels per TMEM lane: 128 lanes = 160 px
LINE = 16  # text line height
CHAR = 6.6  # average width of one 11-px character, to decide whether a label fits
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
SWIZZLE_NAMES = {0: "no swizzle", 1: "32B", 2: "64B", 3: "128B"}
NS = "http://www.w3.org/2000/svg"


def _num(x: float) -> str:
    """Coordinates with at most 3 decimals, no trailing zeros."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


class _Canvas:
    """An SVG element tree growing downwards; ``y`` is the next free height."""

    def __init__(self, title: str | None):
        self.root = ET.Element("svg", xmlns=NS, width=str(WIDTH), version="1.1")
        self.root.set("font-family", "DejaVu Sans, Arial, sans-serif")
        self.root.set("font-size", "11")
        defs = ET.SubElement(self.root, "defs")
        hatch = ET.SubElement(
            defs,
            "pattern",
            id="padding-hatch",
            width="6",
            height="6",
            patternUnits="userSpaceOnUse",
            patternTransform="rotate(45)",
        )
        ET.SubElement(hatch, "rect", width="6", height="6", fill="#ffffff")
        ET.SubElement(hatch, "line", x1="0", y1="0", x2="0", y2="6", stroke="#999", width="2")
        ET.SubElement(self.root, "rect", width="100%", height="100%", fill="#ffffff")
        self.y = 10.0
        if title:
            self.text(10, self.y + 14, title, size=15, weight="bold")
            self.y += 26

    def rect(self, x: float, y: float, w: float, h: float, **attrs: str) -> ET.Element:
        geometry = {"x": _num(x), "y": _num(y), "width": _num(w), "height": _num(h)}
        return ET.SubElement(self.root, "rect", {**geometry, **attrs})

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: str) -> ET.Element:
        ends = {"x1": _num(x1), "y1": _num(y1), "x2": _num(x2), "y2": _num(y2)}
        return ET.SubElement(self.root, "line", {**ends, **attrs})

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: int = 11,
        weight: str = "normal",
        anchor: str = "start",
        fill: str = "#000000",
        css: str | None = None,
    ) -> ET.Element:
        attrs = {"x": _num(x), "y": _num(y), "font-size": str(size), "font-weight": weight}
        attrs.update({"text-anchor": anchor, "fill": fill})
        if css:
            attrs["class"] = css
        element = ET.SubElement(self.root, "text", attrs)
        element.text = text
        return element

    def finish(self) -> str:
        height = int(self.y + 10)
        self.root.set("height", str(height))
        self.root.set("viewBox", f"0 0 {WIDTH} {height}")
        ET.indent(self.root)
        return ET.tostring(self.root, encoding="unicode", xml_declaration=True) + "\n"


def _kib(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 and n else str(n)


def _tip(element: ET.Element, text: str) -> None:
    ET.SubElement(element, "title").text = text


def _overlay_rows(entries: tuple[PlanEntry, ...]) -> list[int]:
    """Row of each entry: the first row where it overlaps nothing already there."""
    rows: list[list[tuple[int, int]]] = []
    out = []
    for e in entries:
        for n, taken in enumerate(rows):
            if all(e.end <= lo or e.offset >= hi for lo, hi in taken):
                taken.append((e.offset, e.end))
                out.append(n)
                break
        else:
            rows.append([(e.offset, e.end)])
            out.append(len(rows) - 1)
    return out


def _axis(canvas: _Canvas, top: float, bottom: float, extent: int, unit: str) -> None:
    """Tick marks along the plot's width for ``extent`` units, at about 8 round steps."""
    step = 1
    while extent / step > 8:
        step *= 2
    scale = PLOT / extent
    for tick in range(0, extent + 1, step):
        x = LEFT + tick * scale
        canvas.line(x, top, x, bottom, stroke="#e0e0e0")
        label = _kib(tick) if unit == "bytes" else str(tick)
        canvas.text(x, bottom + 12, label, size=9, anchor="middle", fill="#666666")


def _smem(canvas: _Canvas, plan: MemoryPlan, pool: PoolPlan) -> None:
    capacity = get_target(plan.target).max_smem_per_block if plan.target else None
    extent = max(capacity or 0, pool.used, 1)
    scale = PLOT / extent
    committed = "not committed" if pool.committed is None else f"committed {pool.committed} B"
    bound = f", lower bound {pool.lower_bound} B" if pool.lower_bound is not None else ""
    summary = f"SMEM {pool.name}: {committed}, padding {pool.padding} B{bound}"
    canvas.text(10, canvas.y + 14, summary)
    canvas.y += 24
    if pool.phases:  # a row per phase; a buffer shows in the phases it is live in
        labels = list(pool.phases)
        rows = [
            [n for n, phase in enumerate(pool.phases) if phase in (e.phases or pool.phases)]
            for e in pool.entries
        ]
    else:
        placed = _overlay_rows(pool.entries)
        labels = ["bytes"] + [f"overlay {n}" for n in range(1, max(placed, default=0) + 1)]
        rows = [[n] for n in placed]
    top = canvas.y
    bottom = top + ROW * len(labels)
    _axis(canvas, top, bottom, extent, "bytes")
    for n, label in enumerate(labels):
        canvas.text(LEFT - 8, top + n * ROW + ROW / 2 + 4, label, anchor="end")
        canvas.rect(LEFT, top + n * ROW + 2, PLOT, ROW - 4, fill="none", stroke="#cccccc")
    for index, (e, entry_rows) in enumerate(zip(pool.entries, rows)):
        colour = PALETTE[index % len(PALETTE)]
        for row in entry_rows:
            y = top + row * ROW + 4
            if e.padding:
                pad = canvas.rect(
                    LEFT + (e.offset - e.padding) * scale,
                    y,
                    e.padding * scale,
                    ROW - 8,
                    fill="url(#padding-hatch)",
                    stroke="#999",
                    **{"class": "padding", "data-name": e.name, "data-bytes": str(e.padding)},
                )
                _tip(pad, f"{e.padding} bytes of padding before {e.name} (align {e.align})")
            _smem_block(canvas, e, y, scale, colour)
    for x, css, label in (
        (pool.committed, "committed", f"committed {pool.committed} B"),
        (capacity, "capacity", f"{plan.target} limit {capacity} B"),
    ):
        if x is None:
            continue
        colour = "#d62728" if css == "capacity" else "#333333"
        canvas.line(
            LEFT + x * scale,
            top - 4,
            LEFT + x * scale,
            bottom + 2,
            stroke=colour,
            **{"stroke-width": "2", "stroke-dasharray": "5,3", "class": css},
        )
        anchor = "end" if css == "capacity" or x * scale > PLOT / 2 else "start"
        dx = -4 if anchor == "end" else 4
        y = top - 6 if css == "capacity" else bottom + 24
        canvas.text(LEFT + x * scale + dx, y, label, fill=colour, anchor=anchor)
    canvas.y = bottom + 44
    _legend(canvas, pool)


def _smem_block(canvas: _Canvas, e: PlanEntry, y: float, scale: float, colour: str) -> None:
    x, w = LEFT + e.offset * scale, e.length * scale
    attrs = {
        "class": "buffer",
        "data-name": e.name,
        "data-offset": str(e.offset),
        "data-length": str(e.length),
        "data-swizzle": str(e.swizzle),
    }
    if e.alias_of:  # a view inside another buffer's storage: outlined over it
        attrs.update({"stroke-dasharray": "4,2", "data-alias-of": e.alias_of})
    stroke = "#000000" if e.alias_of else "#ffffff"
    block = canvas.rect(x, y, w, ROW - 8, fill=colour, stroke=stroke, **attrs)
    swizzle = SWIZZLE_NAMES.get(e.swizzle, str(e.swizzle))
    _tip(block, f"{e.name}: bytes {e.offset}..{e.end} ({e.length} B), align {e.align}, {swizzle}")
    lines = [e.name, f"@{e.offset} {_kib(e.length)}B", swizzle if e.swizzle else ""]
    if all(len(t) * CHAR + 6 <= w for t in lines):
        for n, text in enumerate(t for t in lines if t):
            canvas.text(x + 3, y + 11 + n * 10, text, size=9, fill="#ffffff")


def _legend(canvas: _Canvas, pool: PoolPlan) -> None:
    unit = "B" if pool.unit == "bytes" else "cols"
    for index, e in enumerate(pool.entries):
        colour = PALETTE[index % len(PALETTE)]
        canvas.rect(LEFT, canvas.y - 9, 10, 10, fill=colour)
        facts = [f"{e.name}", f"{e.dtype}[{']['.join(map(str, e.shape))}]"]
        facts.append(f"[{e.offset}, {e.end}) {e.length} {unit}")
        if pool.unit == "bytes":
            facts.append(f"align {e.align}")
            facts.append(SWIZZLE_NAMES.get(e.swizzle, str(e.swizzle)))
            if e.padding:
                facts.append(f"padding {e.padding} B")
        else:
            facts.append(e.layout)
            facts.append("lanes " + ", ".join(f"{lo}-{hi - 1}" for lo, hi in e.lanes))
        if e.phases and tuple(e.phases) != tuple(pool.phases):
            facts.append("live " + ", ".join(e.phases))
        if e.alias_of:
            facts.append(f"view of {e.alias_of}")
        if e.overlaps:
            facts.append("overlaps " + ", ".join(e.overlaps))
        canvas.text(LEFT + 16, canvas.y, "   ".join(facts), css="legend")
        canvas.y += LINE
    canvas.y += 8


def _tmem(canvas: _Canvas, pool: PoolPlan) -> None:
    extent = pool.committed or max(32, pool.high_water)
    scale = PLOT / extent
    canvas.text(10, canvas.y + 14, f"TMEM {pool.name}: {extent} columns x {TMEM_LANES} lanes")
    canvas.y += 24
    for views in pool.stages:
        for s, (lo, hi) in enumerate(views.spans):
            x, w = LEFT + lo * scale, (hi - lo) * scale
            stage = canvas.rect(
                x + 1,
                canvas.y,
                max(w - 2, 1),
                4,
                fill="#555555",
                **{
                    "class": "stage",
                    "data-name": f"{views.buffer}[{s}]",
                    "data-cols": f"{lo}-{hi}",
                },
            )
            _tip(stage, f"stage {s} of {views.buffer}: columns {lo}..{hi}")
            canvas.text(x + w / 2, canvas.y - 2, f"{views.buffer}[{s}]", size=9, anchor="middle")
        canvas.text(LEFT - 8, canvas.y + 5, "stages", size=9, anchor="end")
        canvas.y += 18
    top = canvas.y
    bottom = top + TMEM_LANES * LANE
    canvas.rect(
        LEFT, top, PLOT, bottom - top, fill="#f7f7f7", stroke="#999", **{"class": "tmem-grid"}
    )
    _axis(canvas, top, bottom, extent, "cols")
    for quarter in range(4):
        y = top + quarter * 32 * LANE
        if quarter:
            canvas.line(LEFT, y, LEFT + PLOT, y, stroke="#bbbbbb", **{"stroke-dasharray": "3,3"})
        lanes = f"lanes {32 * quarter}-{32 * quarter + 31}"
        canvas.text(LEFT - 8, y + 16 * LANE + 4, lanes, size=9, anchor="end")
    for index, e in enumerate(pool.entries):
        colour = PALETTE[index % len(PALETTE)]
        x, w = LEFT + e.offset * scale, e.length * scale
        for lo, hi in e.lanes or ((0, TMEM_LANES),):
            attrs = {
                "class": "tmem-buffer",
                "data-name": e.name,
                "data-col-offset": str(e.offset),
                "data-cols": str(e.length),
                "data-lanes": f"{lo}-{hi}",
                "fill-opacity": "0.65",
            }
            if e.overlaps:  # an alias: its outline shows over the buffer it shares cells with
                attrs.update({"stroke-dasharray": "4,2", "stroke-width": "1.5"})
            stroke = "#000000" if e.overlaps else "#ffffff"
            cell = canvas.rect(
                x, top + lo * LANE, w, (hi - lo) * LANE, fill=colour, stroke=stroke, **attrs
            )
            _tip(cell, f"{e.name}: columns {e.offset}..{e.end}, lanes {lo}..{hi - 1}, {e.layout}")
        first = (e.lanes or ((0, TMEM_LANES),))[0]
        label = f"{e.name} {e.offset}..{e.end}"
        if len(label) * CHAR + 6 <= w and (first[1] - first[0]) * LANE >= 12:
            canvas.text(x + 3, top + first[0] * LANE + 11, label, size=9, fill="#000000")
    canvas.y = bottom + 30
    _legend(canvas, pool)


def plan_svg(plan: MemoryPlan, title: str | None = None) -> str:
    """The plan as an SVG document (see the module docstring)."""
    canvas = _Canvas(title)
    for pool in plan.pools:
        if pool.scope == TMEM:
            _tmem(canvas, pool)
        else:
            _smem(canvas, plan, pool)
    return canvas.finish()
