"""A memory plan as an SVG picture: an SMEM map over bytes and a TMEM map of lanes x columns.

SMEM: bytes run left to right on one scale for every row, up to the target's capacity (a red
line) or the committed size, whichever is larger. Each buffer is a block at its offset, as
wide as its bytes, labelled with its name, offset, size and swizzle where it fits; the bytes
lost to alignment before it are hatched. With lifetimes, each row is a phase and a buffer
shows in the phases it is live in; without, overlaid buffers (``move_base_to``) get rows of
their own. TMEM: 128 lanes down, the pool's columns across; each buffer covers the lanes its
data path touches (lane quarters are marked), so buffers sharing columns on disjoint lanes
show side by side; stage views are bars above the map. A legend lists every buffer.
Every block carries ``data-*`` attributes with its numbers, and a ``<title>`` tooltip.

Geometry, in pixels, y growing downwards. The canvas is ``WIDTH`` wide; a cursor ``y``
starts at ``MARGIN`` and the canvas ends ``MARGIN`` below where the cursor ends (height
rounded down to an integer). Texts are 11 px (``FONT``) unless said 9 px (``SMALL``); a
label "left of the plot" is right-aligned at ``x = LEFT - GAP``.

- Title (when given): 15 px bold at ``(MARGIN, y + BASELINE)``; ``y += HEADING``.
- Each pool in plan order opens with a heading at ``(MARGIN, y + BASELINE)``; ``y +=
  HEADING``. The plot spans ``x`` in ``[LEFT, LEFT + PLOT]``: position ``p`` of an axis of
  ``extent`` units lies at ``x(p) = LEFT + p * PLOT / extent``.
- Axis: the tick step is the smallest power of two ``step`` with ``extent / step <= 8``;
  tick ``t`` (0, step, 2 step, ... <= extent) is a grey line at ``x(t)`` from the plot's top
  to its bottom and a 9 px label centred at ``(x(t), bottom + 12)`` (bytes as ``4K`` when a
  non-zero multiple of 1024).
- Buffer ``i`` of a pool (allocation order) is coloured ``PALETTE[i % len(PALETTE)]`` in
  the plot and in the legend.
- SMEM: ``extent = max(used, capacity)`` (``used``: the committed size, else the
  high-water mark; ``capacity``: the target's ``max_smem_per_block``, or 1 without a
  target). ``top`` = the cursor after the heading; row ``n`` spans ``[top + n * ROW, top +
  (n + 1) * ROW)``; ``bottom = top + rows * ROW``. Row label left of the plot with its
  baseline 4 px below the row's middle; row frame ``(LEFT, row top + 2, PLOT, ROW - 4)``.
  Rows: one per phase in a pool with phases (a buffer is drawn in every row of a phase it
  is live in; no phases given = all); otherwise row 0 ``bytes`` and ``overlay n`` rows, each
  buffer in the first row where it overlaps no buffer already placed (at most
  ``MAX_OVERLAY_ROWS`` rows: a buffer that fits none is drawn over the last). A block is
  ``(x(offset), row top + INSET, length * PLOT / extent, ROW - 2 * INSET)``, white
  outline, or black dashed for a view (``alias_of``); its padding is the same band over
  ``[offset - padding, offset)``, hatched. Block labels (name, ``@offset size``, swizzle
  when swizzled) are drawn, 9 px white, at ``(block x + TEXT, block y + 11 + 10 * line)``
  only when each line fits: ``len(line) * CHAR + 2 * TEXT <= block width``. The committed
  size (dark grey) and the capacity (red) are dashed lines at ``x(size)`` from ``top - 4``
  to ``bottom + 2``; the capacity's label ends ``GAP / 2`` left of its line at ``top - 6``;
  the committed size's label sits at ``bottom + 24``, ending ``GAP / 2`` left of its line
  when ``2 * committed > extent``, else starting ``GAP / 2`` right of it. Then ``y = bottom
  + 44`` and the legend.
- TMEM: ``extent`` = the committed columns, else ``max(32, high_water)``. Each stage view
  takes a band: stage ``s`` over columns ``[lo, hi)`` is a bar ``(x(lo) + 1, y, max(w - 2,
  1), 4)`` (``w = (hi - lo) * PLOT / extent``) with a 9 px label centred at ``(x(lo) + w /
  2, y - 2)``; the band is labelled ``stages`` (9 px) left of the plot at ``y + 5``; ``y
  += 18``. Then ``top = y``, ``bottom = top + 128 * LANE``; a grid ``(LEFT, top, PLOT,
  128 * LANE)``; lane quarter ``q`` starts at ``top + 32 q * LANE`` (dashed line for q =
  1, 2, 3) and is labelled (9 px) left of the plot at its middle lane + 4 px. A buffer is a cell
  ``(x(offset), top + lo * LANE, width, (hi - lo) * LANE)`` per lane run ``[lo, hi)`` of its
  data path (all 128 lanes without one, in the legend too), black dashed when it overlaps
  another; its label ``name offset..end`` (9 px black) at ``(x + TEXT, top + lo * LANE +
  11)`` of its first run, only when it fits the width (as above) and that run has at least
  ``LABEL_LANES`` lanes. Then ``y = bottom + 30`` and the legend.
- Legend: per buffer a 10 px square ``(LEFT, y - 9)`` and its facts at ``(LEFT + 16, y)``,
  3 spaces apart; ``y += LINE``; after the last, ``y += 8``. Facts: name, ``dtype[shape]``,
  ``[offset, end) length B|cols``; SMEM: ``align A``, the swizzle, ``padding P B`` when
  padded; TMEM: the layout, ``lanes a-b, ...``; then ``live ...`` when the buffer's phases
  are not all the pool's, ``view of X``, ``overlaps X, ...``.
"""

from __future__ import annotations

import bisect
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..layout.tmem import TMEM_LANES
from ..scopes import TMEM
from .target import get_target

if TYPE_CHECKING:
    from .data import PlanData, PlanEntry, PoolPlan

WIDTH = 960
MARGIN = 10  # canvas edge to the headings, and below the last line
LEFT = 150  # room for row labels
RIGHT = 30
PLOT = WIDTH - LEFT - RIGHT  # pixels for the byte / column axis
HEADING = 24  # height of the title and of each pool's heading
BASELINE = 14  # a heading's baseline below its top
GAP = 8  # between a label left of the plot and the plot
ROW = 46  # height of one SMEM row
MAX_OVERLAY_ROWS = 32  # overlay rows drawn; further overlaid buffers share the last
INSET = 4  # a block's margin inside its row, above and below
TEXT = 3  # a label's margin inside its block
LANE = 1.25  # pixels per TMEM lane: 128 lanes = 160 px
LABEL_LANES = 10  # lanes a TMEM cell needs for its label: 12.5 px for a 9-px line
LINE = 16  # legend line height
FONT = 11
SMALL = 9
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
        self.root.set("font-size", str(FONT))
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
        self.y: float = MARGIN
        if title:
            self.heading(title, size=15, weight="bold")

    def heading(self, text: str, *, size: int = FONT, weight: str = "normal") -> None:
        self.text(MARGIN, self.y + BASELINE, text, size=size, weight=weight)
        self.y += HEADING

    def rect(self, x: float, y: float, w: float, h: float, **attrs: str) -> ET.Element:
        geometry = {"x": _num(x), "y": _num(y), "width": _num(w), "height": _num(h)}
        return ET.SubElement(self.root, "rect", {**geometry, **attrs})

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: str) -> None:
        ends = {"x1": _num(x1), "y1": _num(y1), "x2": _num(x2), "y2": _num(y2)}
        ET.SubElement(self.root, "line", {**ends, **attrs})

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: int = FONT,
        weight: str = "normal",
        anchor: str = "start",
        fill: str = "#000000",
        css: str | None = None,
    ) -> None:
        attrs = {"x": _num(x), "y": _num(y), "font-size": str(size), "font-weight": weight}
        attrs.update({"text-anchor": anchor, "fill": fill})
        if css:
            attrs["class"] = css
        ET.SubElement(self.root, "text", attrs).text = text

    def left_label(self, y: float, text: str, size: int = FONT) -> None:
        """A label left of the plot, ending ``GAP`` before it."""
        self.text(LEFT - GAP, y, text, size=size, anchor="end")

    def finish(self) -> str:
        height = int(self.y + MARGIN)
        self.root.set("height", str(height))
        self.root.set("viewBox", f"0 0 {WIDTH} {height}")
        ET.indent(self.root)
        return ET.tostring(self.root, encoding="unicode", xml_declaration=True) + "\n"


def _kib(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 and n else str(n)


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _tip(element: ET.Element, text: str) -> None:
    ET.SubElement(element, "title").text = text


def _fits(lines: list[str], width: float) -> bool:
    return all(len(t) * CHAR + 2 * TEXT <= width for t in lines)


def _lane_runs(e: PlanEntry) -> tuple[tuple[int, int], ...]:
    """The [first, end) lane runs a TMEM buffer covers: all 128 lanes when it names none."""
    return e.lanes or ((0, TMEM_LANES),)


def _overlay_rows(entries: tuple[PlanEntry, ...]) -> list[int]:
    """Row of each entry: the first row where it overlaps nothing already there, among the
    first ``MAX_OVERLAY_ROWS``; an entry that fits none of them is drawn over the last.

    A row's blocks never overlap, so sorted by (start, end) their ends never decrease: the
    blocks starting before ``e.end`` are a prefix, and ``e`` overlaps one of them exactly
    when the last one ends after ``e.offset``. Two bisections per row, not a scan of every
    block placed before.
    """
    rows: list[list[tuple[int, int]]] = []
    starts: list[list[int]] = []
    out = []
    for e in entries:
        n = next(
            (
                n
                for n, blocks in enumerate(rows)
                if (j := bisect.bisect_left(starts[n], e.end)) == 0 or blocks[j - 1][1] <= e.offset
            ),
            None,
        )
        if n is None:
            if len(rows) == MAX_OVERLAY_ROWS:
                out.append(len(rows) - 1)  # more rows would not be read; the legend lists it
                continue
            n = len(rows)
            rows.append([])
            starts.append([])
        i = bisect.bisect_right(rows[n], (e.offset, e.end))
        rows[n].insert(i, (e.offset, e.end))
        starts[n].insert(i, e.offset)
        out.append(n)
    return out


def _axis(
    canvas: _Canvas, top: float, bottom: float, extent: int, label: Callable[[int], str]
) -> None:
    """Tick marks along the plot's width for ``extent`` units, at most 8 power-of-two steps."""
    step = 1
    while extent / step > 8:
        step *= 2
    for tick in range(0, extent + 1, step):
        x = LEFT + tick * PLOT / extent
        canvas.line(x, top, x, bottom, stroke="#e0e0e0")
        canvas.text(x, bottom + 12, label(tick), size=SMALL, anchor="middle", fill="#666666")


def _smem(canvas: _Canvas, plan: PlanData, pool: PoolPlan) -> None:
    capacity = get_target(plan.target).max_smem_per_block if plan.target else None
    extent = max(pool.used, capacity or 1)
    scale = PLOT / extent
    committed = "not committed" if pool.committed is None else f"committed {pool.committed} B"
    bound = f", lower bound {pool.lower_bound} B" if pool.lower_bound is not None else ""
    canvas.heading(f"SMEM {pool.name}: {committed}, padding {pool.padding} B{bound}")
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
    _axis(canvas, top, bottom, extent, _kib)
    for n, label in enumerate(labels):
        canvas.left_label(top + n * ROW + ROW / 2 + 4, label)
        canvas.rect(LEFT, top + n * ROW + 2, PLOT, ROW - 4, fill="none", stroke="#cccccc")
    for index, (e, entry_rows) in enumerate(zip(pool.entries, rows)):
        for row in entry_rows:
            y = top + row * ROW + INSET
            if e.padding:
                pad = canvas.rect(
                    LEFT + (e.offset - e.padding) * scale,
                    y,
                    e.padding * scale,
                    ROW - 2 * INSET,
                    fill="url(#padding-hatch)",
                    stroke="#999",
                    **{"class": "padding", "data-name": e.name, "data-bytes": str(e.padding)},
                )
                _tip(pad, f"{e.padding} bytes of padding before {e.name} (align {e.align})")
            _smem_block(canvas, e, y, scale, _colour(index))
    if pool.committed is not None:
        x = LEFT + pool.committed * scale
        _marker(canvas, x, top, bottom, "committed", "#333333")
        right = 2 * pool.committed > extent  # the label stays on the plot's side of its line
        canvas.text(
            x - GAP / 2 if right else x + GAP / 2,
            bottom + 24,
            f"committed {pool.committed} B",
            fill="#333333",
            anchor="end" if right else "start",
        )
    if capacity is not None:
        x = LEFT + capacity * scale
        _marker(canvas, x, top, bottom, "capacity", "#d62728")
        label = f"{plan.target} limit {capacity} B"
        canvas.text(x - GAP / 2, top - 6, label, fill="#d62728", anchor="end")
    canvas.y = bottom + 44
    _legend(canvas, pool)


def _marker(canvas: _Canvas, x: float, top: float, bottom: float, css: str, colour: str) -> None:
    """A dashed line across the SMEM rows at a size (committed, capacity)."""
    dash = {"stroke-width": "2", "stroke-dasharray": "5,3", "class": css}
    canvas.line(x, top - 4, x, bottom + 2, stroke=colour, **dash)


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
    block = canvas.rect(x, y, w, ROW - 2 * INSET, fill=colour, stroke=stroke, **attrs)
    swizzle = SWIZZLE_NAMES.get(e.swizzle, str(e.swizzle))
    _tip(block, f"{e.name}: bytes {e.offset}..{e.end} ({e.length} B), align {e.align}, {swizzle}")
    lines = [e.name, f"@{e.offset} {_kib(e.length)}B"] + ([swizzle] if e.swizzle else [])
    if _fits(lines, w):
        for n, text in enumerate(lines):
            canvas.text(x + TEXT, y + 11 + n * 10, text, size=SMALL, fill="#ffffff")


def _legend(canvas: _Canvas, pool: PoolPlan) -> None:
    unit = "B" if pool.unit == "bytes" else "cols"
    for index, e in enumerate(pool.entries):
        canvas.rect(LEFT, canvas.y - 9, 10, 10, fill=_colour(index))
        facts = [f"{e.name}", f"{e.dtype}[{']['.join(map(str, e.shape))}]"]
        facts.append(f"[{e.offset}, {e.end}) {e.length} {unit}")
        if pool.unit == "bytes":
            facts.append(f"align {e.align}")
            facts.append(SWIZZLE_NAMES.get(e.swizzle, str(e.swizzle)))
            if e.padding:
                facts.append(f"padding {e.padding} B")
        else:
            facts.append(e.layout)
            facts.append("lanes " + ", ".join(f"{lo}-{hi - 1}" for lo, hi in _lane_runs(e)))
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
    canvas.heading(f"TMEM {pool.name}: {extent} columns x {TMEM_LANES} lanes")
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
            label = f"{views.buffer}[{s}]"
            canvas.text(x + w / 2, canvas.y - 2, label, size=SMALL, anchor="middle")
        canvas.left_label(canvas.y + 5, "stages", size=SMALL)
        canvas.y += 18
    top = canvas.y
    bottom = top + TMEM_LANES * LANE
    canvas.rect(
        LEFT, top, PLOT, TMEM_LANES * LANE, fill="#f7f7f7", stroke="#999", **{"class": "tmem-grid"}
    )
    _axis(canvas, top, bottom, extent, str)
    quarter = TMEM_LANES // 4
    for first in range(0, TMEM_LANES, quarter):
        y = top + first * LANE
        if first:
            canvas.line(LEFT, y, LEFT + PLOT, y, stroke="#bbbbbb", **{"stroke-dasharray": "3,3"})
        lanes = f"lanes {first}-{first + quarter - 1}"
        canvas.left_label(y + quarter / 2 * LANE + 4, lanes, size=SMALL)
    for index, e in enumerate(pool.entries):
        x, w = LEFT + e.offset * scale, e.length * scale
        runs = _lane_runs(e)
        for lo, hi in runs:
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
                x, top + lo * LANE, w, (hi - lo) * LANE, fill=_colour(index), stroke=stroke, **attrs
            )
            _tip(cell, f"{e.name}: columns {e.offset}..{e.end}, lanes {lo}..{hi - 1}, {e.layout}")
        lo, hi = runs[0]
        label = f"{e.name} {e.offset}..{e.end}"
        if _fits([label], w) and hi - lo >= LABEL_LANES:
            canvas.text(x + TEXT, top + lo * LANE + 11, label, size=SMALL)
    canvas.y = bottom + 30
    _legend(canvas, pool)


def plan_svg(plan: PlanData, title: str | None = None) -> str:
    """The plan as an SVG document (see the module docstring)."""
    canvas = _Canvas(title)
    for pool in plan.pools:
        if pool.scope == TMEM:
            _tmem(canvas, pool)
        else:
            _smem(canvas, plan, pool)
    return canvas.finish()
