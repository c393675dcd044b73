"""The SVG picture's geometry, pinned on plans built by hand.

Every expected number is worked out by hand from the rule in the docstring of
``tilemem.plan.svg``: WIDTH 960, MARGIN 10, LEFT 150, PLOT 780, HEADING 24, BASELINE 14,
GAP 8, ROW 46, INSET 4, TEXT 3, LANE 1.25, LABEL_LANES 10, LINE 16, CHAR 6.6, FONT 11,
SMALL 9; x(p) = LEFT + p * PLOT / extent. Coordinates are written with at most 3 decimals.
"""

import xml.etree.ElementTree as ET

import pytest

from tilemem.examples import EXAMPLES
from tilemem.plan.model import MemoryPlan, PlanEntry, PoolPlan, StageViews
from tilemem.plan.svg import PALETTE
from tilemem.scopes import SMEM, TMEM

SVG = "{http://www.w3.org/2000/svg}"


def byte_buffer(name, offset, length, **fields):
    """An SMEM plan entry: a uint8 row unless ``fields`` say otherwise."""
    plain = {"align": 1, "padding": 0, "dtype": "uint8", "shape": (length,), "layout": "row-major"}
    return PlanEntry(name, SMEM, offset, length, **{**plain, **fields})


def smem_plan(entries, committed, high_water=None, target=None, **pool):
    high_water = committed if high_water is None else high_water
    smem = PoolPlan("smem", SMEM, "bytes", tuple(entries), high_water, committed, **pool)
    return MemoryPlan((smem,), target)


def parse(plan, title=None):
    return ET.fromstring(plan.to_svg(title))


def rects(root, css):
    return [r.attrib for r in root.iter(f"{SVG}rect") if r.get("class") == css]


def lines(root, css=None):
    return [x.attrib for x in root.iter(f"{SVG}line") if x.get("class") == css]


def texts(root, size="11"):
    """(x, y, text) of the texts of one font size, in document order."""
    return [
        (t.get("x"), t.get("y"), t.text)
        for t in root.iter(f"{SVG}text")
        if t.get("font-size") == size
    ]


def geometry(attrs):
    return tuple(attrs[k] for k in ("x", "y", "width", "height"))


# Seven buffers on a 780-byte pool without target: extent 780, one pixel per byte, x = 150 + b.
# Rows: each buffer goes to the first row where it overlaps nothing already there.
OVERLAID = smem_plan(
    [
        byte_buffer("abcdefghij", 0, 72),  # row 0
        byte_buffer("tile", 80, 200, align=16, padding=8, swizzle=3),  # row 0
        byte_buffer("klmnopqrst", 300, 71),  # row 0
        byte_buffer("over", 100, 100),  # [100, 200) overlaps tile [80, 280): row 1
        byte_buffer("gap", 72, 8),  # [72, 80): after abcdefghij, before tile: row 0
        byte_buffer("under", 150, 100),  # overlaps tile (row 0) and over (row 1): row 2
        byte_buffer("late", 200, 100),  # overlaps tile; starts where over ends: row 1
    ],
    committed=780,
)


def test_document_is_an_indented_svg_with_its_canvas():
    text = OVERLAID.to_svg()
    assert text.startswith("<?xml version='1.0' encoding='utf-8'?>\n<svg ")
    assert "\n  <defs>\n    <pattern " in text and text.endswith("</svg>\n")
    root = ET.fromstring(text)
    # height: the legend's cursor ends at 336 (see test_legend_lists_every_buffer_in_order),
    # plus MARGIN 10 = 346
    assert root.attrib == {
        "width": "960",
        "version": "1.1",
        "font-family": "DejaVu Sans, Arial, sans-serif",
        "font-size": "11",
        "height": "346",
        "viewBox": "0 0 960 346",
    }
    defs, background = root[0], root[1]
    (pattern,) = defs
    assert pattern.attrib == {
        "id": "padding-hatch",
        "width": "6",
        "height": "6",
        "patternUnits": "userSpaceOnUse",
        "patternTransform": "rotate(45)",
    }
    assert [(x.tag, x.attrib) for x in pattern] == [
        (f"{SVG}rect", {"width": "6", "height": "6", "fill": "#ffffff"}),
        (
            f"{SVG}line",
            {"x1": "0", "y1": "0", "x2": "0", "y2": "6", "stroke": "#999", "width": "2"},
        ),
    ]
    assert background.attrib == {"width": "100%", "height": "100%", "fill": "#ffffff"}


def test_overlaid_buffers_take_the_first_row_where_they_fit():
    root = parse(OVERLAID)
    # heading band [10, 34): top = 34; row n spans [34 + 46 n, 80 + 46 n); its label's
    # baseline 4 px below the middle: 34 + 46 n + 23 + 4 = 61 + 46 n, ending at 150 - 8 = 142
    assert texts(root)[:4] == [
        ("10", "24", "SMEM smem: committed 780 B, padding 8 B"),
        ("142", "61", "bytes"),
        ("142", "107", "overlay 1"),
        ("142", "153", "overlay 2"),
    ]
    row_labels = [t for t in root.iter(f"{SVG}text") if t.text in ("bytes", "overlay 1")]
    assert {t.get("text-anchor") for t in row_labels} == {"end"}
    # frames: (150, row top + 2, 780, 46 - 4)
    frames = [r.attrib for r in root.iter(f"{SVG}rect") if r.get("fill") == "none"]
    assert [geometry(f) for f in frames] == [
        ("150", "36", "780", "42"),
        ("150", "82", "780", "42"),
        ("150", "128", "780", "42"),
    ]
    assert {f["stroke"] for f in frames} == {"#cccccc"}
    # a block's y is its row's top + INSET 4: rows 0, 1, 2 at 38, 84, 130
    placed = [(r["data-name"], r["x"], r["y"]) for r in rects(root, "buffer")]
    assert placed == [
        ("abcdefghij", "150", "38"),
        ("tile", "230", "38"),
        ("klmnopqrst", "450", "38"),
        ("over", "250", "84"),
        ("gap", "222", "38"),
        ("under", "300", "130"),
        ("late", "350", "84"),
    ]


def test_smem_blocks_and_padding_have_their_exact_geometry_and_data():
    root = parse(OVERLAID)
    blocks = rects(root, "buffer")
    # tile: x = 150 + 80 = 230, y = 34 + 4 = 38, 200 bytes wide, 46 - 2 * 4 = 38 high
    assert blocks[1] == {
        "x": "230",
        "y": "38",
        "width": "200",
        "height": "38",
        "fill": PALETTE[1],
        "stroke": "#ffffff",
        "class": "buffer",
        "data-name": "tile",
        "data-offset": "80",
        "data-length": "200",
        "data-swizzle": "3",
    }
    assert [geometry(b) for b in blocks] == [
        ("150", "38", "72", "38"),
        ("230", "38", "200", "38"),
        ("450", "38", "71", "38"),
        ("250", "84", "100", "38"),
        ("222", "38", "8", "38"),
        ("300", "130", "100", "38"),
        ("350", "84", "100", "38"),
    ]
    # 8 bytes of padding before tile: [72, 80) in tile's band, x = 150 + 72 = 222
    (pad,) = rects(root, "padding")
    assert pad == {
        "x": "222",
        "y": "38",
        "width": "8",
        "height": "38",
        "fill": "url(#padding-hatch)",
        "stroke": "#999",
        "class": "padding",
        "data-name": "tile",
        "data-bytes": "8",
    }
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert tips[:3] == [
        "abcdefghij: bytes 0..72 (72 B), align 1, no swizzle",
        "8 bytes of padding before tile (align 16)",
        "tile: bytes 80..280 (200 B), align 16, 128B",
    ]


def test_block_labels_are_drawn_only_where_every_line_fits():
    root = parse(OVERLAID)
    # 9 px white lines at (block x + 3, block y + 11 + 10 n). A line fits when
    # len * 6.6 + 2 * 3 <= width: "abcdefghij" needs 10 * 6.6 + 6 = 72 = its width (drawn);
    # "klmnopqrst" also needs 72 but has 71 (none); "gap" needs 25.8 of 8 (none);
    # "@100 100B" needs 65.4 of 100.
    assert texts(root, "9")[7:] == [
        ("153", "49", "abcdefghij"),
        ("153", "59", "@0 72B"),
        ("233", "49", "tile"),
        ("233", "59", "@80 200B"),
        ("233", "69", "128B"),
        ("253", "95", "over"),
        ("253", "105", "@100 100B"),
        ("303", "141", "under"),
        ("303", "151", "@150 100B"),
        ("353", "95", "late"),
        ("353", "105", "@200 100B"),
    ]
    labels = [t for t in root.iter(f"{SVG}text") if t.text == "tile"]
    assert [t.get("fill") for t in labels] == ["#ffffff"]


def test_axis_ticks_are_at_most_eight_power_of_two_steps():
    root = parse(OVERLAID)
    # extent 780: 780 / 64 = 12.2 > 8, 780 / 128 = 6.1 <= 8: step 128, ticks 0..768;
    # lines from top 34 to bottom 34 + 3 * 46 = 172, labels at 172 + 12 = 184
    ticks = [x for x in lines(root) if x["stroke"] == "#e0e0e0"]
    assert [(x["x1"], x["x2"], x["y1"], x["y2"]) for x in ticks] == [
        (str(150 + t), str(150 + t), "34", "172") for t in (0, 128, 256, 384, 512, 640, 768)
    ]
    assert texts(root, "9")[:7] == [
        (str(150 + t), "184", str(t)) for t in (0, 128, 256, 384, 512, 640, 768)
    ]
    tick_labels = [t for t in root.iter(f"{SVG}text") if t.get("y") == "184"]
    assert {(t.get("text-anchor"), t.get("fill")) for t in tick_labels} == {("middle", "#666666")}


def test_committed_line_without_target_ends_the_plot():
    root = parse(OVERLAID)
    # committed 780 of extent 780: x = 150 + 780 = 930, from top - 4 = 30 to bottom + 2 = 174;
    # 2 * 780 > 780: its label ends GAP / 2 = 4 px left of the line, at bottom + 24 = 196
    assert lines(root, "committed") == [
        {
            "x1": "930",
            "y1": "30",
            "x2": "930",
            "y2": "174",
            "stroke": "#333333",
            "stroke-width": "2",
            "stroke-dasharray": "5,3",
            "class": "committed",
        }
    ]
    assert lines(root, "capacity") == []
    (label,) = [t.attrib for t in root.iter(f"{SVG}text") if t.text == "committed 780 B"]
    assert (label["x"], label["y"], label["text-anchor"], label["fill"]) == (
        "926",
        "196",
        "end",
        "#333333",
    )


def test_legend_lists_every_buffer_in_order():
    root = parse(OVERLAID)
    legend = [(t.get("x"), t.get("y"), t.text) for t in root.iter(f"{SVG}text")]
    legend = [t for t in legend if t[0] == "166"]
    # bottom 172 + 44 = 216, one line of 16 px per buffer, at LEFT + 16 = 166
    assert legend == [
        ("166", "216", "abcdefghij   uint8[72]   [0, 72) 72 B   align 1   no swizzle"),
        ("166", "232", "tile   uint8[200]   [80, 280) 200 B   align 16   128B   padding 8 B"),
        ("166", "248", "klmnopqrst   uint8[71]   [300, 371) 71 B   align 1   no swizzle"),
        ("166", "264", "over   uint8[100]   [100, 200) 100 B   align 1   no swizzle"),
        ("166", "280", "gap   uint8[8]   [72, 80) 8 B   align 1   no swizzle"),
        ("166", "296", "under   uint8[100]   [150, 250) 100 B   align 1   no swizzle"),
        ("166", "312", "late   uint8[100]   [200, 300) 100 B   align 1   no swizzle"),
    ]
    assert {t.get("class") for t in root.iter(f"{SVG}text") if t.get("x") == "166"} == {"legend"}
    # squares (150, line - 9, 10, 10) in the buffer's colour; 7 lines end at 216 + 112 + 8 = 336
    squares = [r.attrib for r in root.iter(f"{SVG}rect") if "class" not in r.attrib]
    squares = [s for s in squares if s["fill"] in PALETTE]
    assert squares == [
        {"x": "150", "y": str(207 + 16 * i), "width": "10", "height": "10", "fill": PALETTE[i]}
        for i in range(7)
    ]


def test_colours_cycle_the_palette_in_allocation_order():
    buffers = [byte_buffer(f"b{i}", 10 * i, 10) for i in range(12)]
    root = parse(smem_plan(buffers, committed=780))
    # buffer i takes PALETTE[i % 10]: b10 and b11 start the palette again
    colours = [PALETTE[i % 10] for i in range(12)]
    assert len(PALETTE) == 10 and len(set(PALETTE)) == 10
    assert [r["fill"] for r in rects(root, "buffer")] == colours
    squares = [r.get("fill") for r in root.iter(f"{SVG}rect") if "class" not in r.attrib]
    assert [s for s in squares if s in PALETTE] == colours


def phased_plan(committed):
    """sm_90a (227 KiB = 232448 B per block) with three phases; extent 232448 = 227 * 1024,
    so byte b lies at x = 150 + b * 780 / 232448 = 150 + (b / 1024) * 780 / 227."""
    return smem_plan(
        [
            byte_buffer(
                "A",
                0,
                65536,
                align=1024,
                swizzle=3,
                phases=("load", "mma"),
                dtype="bfloat16",
                shape=(4, 128, 64),
            ),
            byte_buffer(
                "C",
                0,
                32768,
                align=1024,
                swizzle=2,
                phases=("epi",),
                dtype="bfloat16",
                shape=(128, 128),
            ),
            byte_buffer("bar", 65536, 16, align=8, dtype="uint64", shape=(2,)),
            byte_buffer(
                "P",
                1024,
                1024,
                align=1024,
                swizzle=1,
                phases=("epi",),
                alias_of="C",
                dtype="bfloat16",
                shape=(16, 32),
            ),
        ],
        committed=committed,
        high_water=65552,
        target="sm_90a",
        phases=("load", "mma", "epi"),
        lower_bound=65552,
    )


def test_phases_are_rows_and_blocks_sit_at_their_scaled_offsets():
    root = parse(phased_plan(116224), "T")
    # title (10, 10 + 14) at 15 px bold; the heading (10, 34 + 14); top = 58
    (title,) = [t.attrib for t in root.iter(f"{SVG}text") if t.text == "T"]
    assert (title["x"], title["y"], title["font-size"], title["font-weight"]) == (
        "10",
        "24",
        "15",
        "bold",
    )
    heading = "SMEM smem: committed 116224 B, padding 0 B, lower bound 65552 B"
    assert texts(root)[:4] == [
        ("10", "48", heading),
        ("142", "85", "load"),  # 58 + 23 + 4
        ("142", "131", "mma"),
        ("142", "177", "epi"),
    ]
    # A: 64 KiB wide = 64 * 780 / 227 = 219.912 px, live in load and mma: rows 0, 1 (y 62, 108)
    # C: 32 KiB = 109.956 px in epi (row 2, y 154); bar names no phase: every row, at
    # x = 150 + 219.912 = 369.912, 16 B = 16 * 780 / 232448 = 0.054 px wide; P, a view of C at
    # 1024: x = 150 + 780 / 227 = 153.436, 3.436 px wide, outlined in dashed black
    blocks = rects(root, "buffer")
    assert [(b["data-name"], *geometry(b)) for b in blocks] == [
        ("A", "150", "62", "219.912", "38"),
        ("A", "150", "108", "219.912", "38"),
        ("C", "150", "154", "109.956", "38"),
        ("bar", "369.912", "62", "0.054", "38"),
        ("bar", "369.912", "108", "0.054", "38"),
        ("bar", "369.912", "154", "0.054", "38"),
        ("P", "153.436", "154", "3.436", "38"),
    ]
    view = blocks[-1]
    assert (view["stroke"], view["stroke-dasharray"], view["data-alias-of"]) == (
        "#000000",
        "4,2",
        "C",
    )
    assert "stroke-dasharray" not in blocks[0] and "data-alias-of" not in blocks[0]
    # labels where they fit: "@0 64KB" needs 7 * 6.6 + 6 = 52.2 px; the swizzle names the mode
    assert texts(root, "9")[8:] == [
        ("153", "73", "A"),
        ("153", "83", "@0 64KB"),
        ("153", "93", "128B"),
        ("153", "119", "A"),
        ("153", "129", "@0 64KB"),
        ("153", "139", "128B"),
        ("153", "165", "C"),
        ("153", "175", "@0 32KB"),
        ("153", "185", "64B"),
    ]


def test_axis_labels_bytes_in_kib_steps():
    root = parse(phased_plan(116224))
    # extent 232448: / 16384 = 14.2 > 8, / 32768 = 7.1 <= 8: step 32 KiB, ticks k * 32768 for
    # k = 0..7 at x = 150 + k * 32 * 780 / 227 = 150 + k * 109.956; bottom = 34 + 3 * 46 = 172
    assert texts(root, "9")[:8] == [
        ("150", "184", "0"),
        ("259.956", "184", "32K"),
        ("369.912", "184", "64K"),
        ("479.868", "184", "96K"),
        ("589.824", "184", "128K"),
        ("699.78", "184", "160K"),
        ("809.736", "184", "192K"),
        ("919.692", "184", "224K"),
    ]


def test_capacity_and_committed_lines_with_a_target():
    root = parse(phased_plan(116224))
    # no title: top = 34, bottom = 172. Capacity 232448 = extent: x = 930, label ending at
    # 930 - 4 = 926, at top - 6 = 28, red. Committed 116224 = extent / 2: x = 150 + 390 = 540;
    # 2 * 116224 is not > 232448, so its label starts 4 px right of the line, at 544
    (capacity,) = lines(root, "capacity")
    assert (capacity["x1"], capacity["x2"], capacity["y1"], capacity["y2"]) == (
        "930",
        "930",
        "30",
        "174",
    )
    assert (capacity["stroke"], capacity["stroke-dasharray"]) == ("#d62728", "5,3")
    (committed,) = lines(root, "committed")
    assert (committed["x1"], committed["x2"], committed["stroke"]) == ("540", "540", "#333333")
    marks = {t.text: t.attrib for t in root.iter(f"{SVG}text")}
    limit = marks["sm_90a limit 232448 B"]
    assert (limit["x"], limit["y"], limit["text-anchor"], limit["fill"]) == (
        "926",
        "28",
        "end",
        "#d62728",
    )
    label = marks["committed 116224 B"]
    assert (label["x"], label["y"], label["text-anchor"]) == ("544", "196", "start")


def test_committed_label_moves_left_of_its_line_past_the_middle():
    root = parse(phased_plan(116225))
    # one byte past half: x = 540 + 780 / 232448 = 540.003; 2 * 116225 > 232448: the label
    # ends 4 px left of the line
    (committed,) = lines(root, "committed")
    assert committed["x1"] == "540.003"
    marks = {t.text: t.attrib for t in root.iter(f"{SVG}text")}
    label = marks["committed 116225 B"]
    assert (label["x"], label["y"], label["text-anchor"]) == ("536.003", "196", "end")


def test_legend_names_phases_views_and_swizzles():
    root = parse(phased_plan(116224))
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    # bar names no phase (live in all): no "live"; P is a view of C
    assert legend == [
        "A   bfloat16[4][128][64]   [0, 65536) 65536 B   align 1024   128B   live load, mma",
        "C   bfloat16[128][128]   [0, 32768) 32768 B   align 1024   64B   live epi",
        "bar   uint64[2]   [65536, 65552) 16 B   align 8   no swizzle",
        "P   bfloat16[16][32]   [1024, 2048) 1024 B   align 1024   32B   live epi   view of C",
    ]


def test_a_plan_over_capacity_scales_to_its_size():
    # sm_86 allows 99 KiB = 101376 B; 198 KiB = 202752 B planned, not committed: extent
    # 202752, the limit at x = 150 + 780 / 2 = 540, no committed line
    plan = smem_plan(
        [byte_buffer("big", 0, 202752)], committed=None, high_water=202752, target="sm_86"
    )
    root = parse(plan)
    assert texts(root)[0] == ("10", "24", "SMEM smem: not committed, padding 0 B")
    assert lines(root, "committed") == []
    (capacity,) = lines(root, "capacity")
    assert capacity["x1"] == "540"
    marks = {t.text: t.attrib for t in root.iter(f"{SVG}text")}
    assert marks["sm_86 limit 101376 B"]["x"] == "536"
    # 202752 / 32768 = 6.2 <= 8 (/ 16384 = 12.4): ticks k * 32 KiB for k = 0..6, at
    # x = 150 + k * 32768 * 780 / 202752 = 150 + k * 126.061; the block spans the plot
    assert [t[0] for t in texts(root, "9")[:7]] == [
        "150",
        "276.061",
        "402.121",
        "528.182",
        "654.242",
        "780.303",
        "906.364",
    ]
    assert texts(root, "9")[6][2] == "192K"
    (big,) = rects(root, "buffer")
    assert geometry(big) == ("150", "38", "780", "38")
    assert ("153", "59", "@0 198KB") in texts(root, "9")


def test_an_empty_pool_draws_one_row_over_one_unit():
    root = parse(smem_plan([], committed=None, high_water=0))
    # extent max(0, 1) = 1: ticks 0 and 1 at x = 150 and 930; one "bytes" row [34, 80)
    assert texts(root, "9") == [("150", "92", "0"), ("930", "92", "1")]
    assert texts(root) == [
        ("10", "24", "SMEM smem: not committed, padding 0 B"),
        ("142", "61", "bytes"),
    ]
    # cursor: bottom 80 + 44 = 124, + 8 after the (empty) legend = 132; height 132 + 10
    assert root.get("height") == "142"


def tmem_entry(name, offset, length, lanes, **fields):
    plain = {
        "align": 1,
        "padding": 0,
        "dtype": "float32",
        "shape": (128, length),
        "layout": "lane=row",
    }
    return PlanEntry(name, TMEM, offset, length, lanes=lanes, **{**plain, **fields})


def tmem_plan():
    """256 committed columns: x = 150 + c * 780 / 256 = 150 + 3.046875 c."""
    quarters = (0, 32, 64, 96)
    entries = [
        tmem_entry(
            "F0", 0, 128, tuple((q, q + 16) for q in quarters), shape=(64, 128), layout="datapath F"
        ),
        tmem_entry(
            "F1",
            0,
            128,
            tuple((q + 16, q + 32) for q in quarters),
            shape=(64, 128),
            layout="datapath F",
        ),
        tmem_entry("acc", 128, 128, (), overlaps=("alias",)),
        tmem_entry("alias", 128, 32, ((0, 128),), overlaps=("acc",)),
        tmem_entry("nine", 160, 96, ((64, 73),)),
        tmem_entry("ten", 160, 96, ((32, 42),)),
    ]
    stages = (StageViews("acc", ((128, 192), (192, 256))),)
    tmem = PoolPlan("tmem", TMEM, "cols", tuple(entries), 256, 256, stages=stages)
    return MemoryPlan((tmem,))


def test_tmem_stage_bars_sit_above_the_map():
    root = parse(tmem_plan())
    # heading at (10, 24); the stage band at y = 34: stage 0 over [128, 192): x = 150 + 390 =
    # 540, w = 64 * 3.046875 = 195: bar (541, 34, 193, 4), label at (540 + 97.5, 32)
    stages = rects(root, "stage")
    assert stages[0] == {
        "x": "541",
        "y": "34",
        "width": "193",
        "height": "4",
        "fill": "#555555",
        "class": "stage",
        "data-name": "acc[0]",
        "data-cols": "128-192",
    }
    assert geometry(stages[1]) == ("736", "34", "193", "4")  # [192, 256): x = 735
    small = texts(root, "9")
    assert small[:3] == [
        ("637.5", "32", "acc[0]"),
        ("832.5", "32", "acc[1]"),
        ("142", "39", "stages"),
    ]
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert tips[:2] == ["stage 0 of acc: columns 128..192", "stage 1 of acc: columns 192..256"]
    assert texts(root)[0] == ("10", "24", "TMEM tmem: 256 columns x 128 lanes")


def test_tmem_grid_axis_and_lane_quarters():
    root = parse(tmem_plan())
    # after the stage band, top = 34 + 18 = 52, bottom = 52 + 128 * 1.25 = 212
    (grid,) = rects(root, "tmem-grid")
    assert grid == {
        "x": "150",
        "y": "52",
        "width": "780",
        "height": "160",
        "fill": "#f7f7f7",
        "stroke": "#999",
        "class": "tmem-grid",
    }
    # 256 / 32 = 8 <= 8 (256 / 16 = 16): step 32 columns = 97.5 px; labels at 212 + 12 = 224
    small = texts(root, "9")
    assert small[3:12] == [(f"{150 + 97.5 * k:g}", "224", str(32 * k)) for k in range(9)]
    ticks = [x for x in lines(root) if x["stroke"] == "#e0e0e0"]
    assert {(x["y1"], x["y2"]) for x in ticks} == {("52", "212")} and len(ticks) == 9
    # quarters of 32 lanes = 40 px: dashed lines at 92, 132, 172; labels at quarter top +
    # 16 lanes (20 px) + 4
    quarters = [x for x in lines(root) if x["stroke"] == "#bbbbbb"]
    assert [(x["x1"], x["y1"], x["x2"], x["y2"]) for x in quarters] == [
        ("150", str(y), "930", str(y)) for y in (92, 132, 172)
    ]
    assert {x["stroke-dasharray"] for x in quarters} == {"3,3"}
    assert small[12:16] == [
        ("142", "76", "lanes 0-31"),
        ("142", "116", "lanes 32-63"),
        ("142", "156", "lanes 64-95"),
        ("142", "196", "lanes 96-127"),
    ]


def test_tmem_cells_cover_their_lane_runs():
    root = parse(tmem_plan())
    cells = rects(root, "tmem-buffer")
    # a lane is 1.25 px from top 52: F0's runs start at lanes 0, 32, 64, 96 (y 52, 92, 132,
    # 172), F1's at 16, 48, 80, 112 (y 72, 112, 152, 192), each 16 lanes = 20 px; acc names no
    # run: all 128 lanes; alias is 32 columns = 97.5 px; nine and ten start at column 160:
    # x = 150 + 487.5 = 637.5, 96 columns = 292.5 px, 9 lanes = 11.25 px and 10 lanes = 12.5 px
    assert [(c["data-name"], c["data-lanes"], *geometry(c)) for c in cells] == [
        ("F0", "0-16", "150", "52", "390", "20"),
        ("F0", "32-48", "150", "92", "390", "20"),
        ("F0", "64-80", "150", "132", "390", "20"),
        ("F0", "96-112", "150", "172", "390", "20"),
        ("F1", "16-32", "150", "72", "390", "20"),
        ("F1", "48-64", "150", "112", "390", "20"),
        ("F1", "80-96", "150", "152", "390", "20"),
        ("F1", "112-128", "150", "192", "390", "20"),
        ("acc", "0-128", "540", "52", "390", "160"),
        ("alias", "0-128", "540", "52", "97.5", "160"),
        ("nine", "64-73", "637.5", "132", "292.5", "11.25"),
        ("ten", "32-42", "637.5", "92", "292.5", "12.5"),
    ]
    assert cells[0] == {
        "x": "150",
        "y": "52",
        "width": "390",
        "height": "20",
        "fill": PALETTE[0],
        "stroke": "#ffffff",
        "class": "tmem-buffer",
        "data-name": "F0",
        "data-col-offset": "0",
        "data-cols": "128",
        "data-lanes": "0-16",
        "fill-opacity": "0.65",
    }
    # buffers sharing cells are outlined dashed in black
    assert [
        (c["stroke"], c.get("stroke-dasharray"), c.get("stroke-width")) for c in cells[8:10]
    ] == [("#000000", "4,2", "1.5")] * 2
    assert "stroke-dasharray" not in cells[10]
    tips = [t.text for t in root.iter(f"{SVG}title")][2:]
    assert tips[0] == "F0: columns 0..128, lanes 0..15, datapath F"
    assert tips[8] == "acc: columns 128..256, lanes 0..127, lane=row"


def test_tmem_labels_need_the_width_and_ten_lanes():
    root = parse(tmem_plan())
    # at (x + 3, top + first lane * 1.25 + 11): F0 from lane 0, F1 from lane 16 (y 52 + 20 +
    # 11); "alias 128..160" needs 14 * 6.6 + 6 = 98.4 > 97.5 px; nine has 9 lanes < 10; ten's
    # 10 lanes start at 32: y = 52 + 40 + 11 = 103
    assert texts(root, "9")[16:] == [
        ("153", "63", "F0 0..128"),
        ("153", "83", "F1 0..128"),
        ("543", "63", "acc 128..256"),
        ("640.5", "103", "ten 160..256"),
    ]
    labels = [t for t in root.iter(f"{SVG}text") if t.text == "ten 160..256"]
    assert [t.get("fill") for t in labels] == ["#000000"]


def test_tmem_legend_counts_columns_and_lanes():
    root = parse(tmem_plan())
    legend = [(t.get("y"), t.text) for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    # bottom 212 + 30 = 242, then 16 px a line; acc names no lane run: all 128 lanes
    assert legend[:4] == [
        (
            "242",
            "F0   float32[64][128]   [0, 128) 128 cols   datapath F   "
            "lanes 0-15, 32-47, 64-79, 96-111",
        ),
        (
            "258",
            "F1   float32[64][128]   [0, 128) 128 cols   datapath F   "
            "lanes 16-31, 48-63, 80-95, 112-127",
        ),
        (
            "274",
            "acc   float32[128][128]   [128, 256) 128 cols   lane=row   lanes 0-127   "
            "overlaps alias",
        ),
        (
            "290",
            "alias   float32[128][32]   [128, 160) 32 cols   lane=row   lanes 0-127   overlaps acc",
        ),
    ]
    # six lines end at 242 + 6 * 16 + 8 = 346: height 356
    assert parse(tmem_plan()).get("height") == "356"


def test_tmem_extent_is_the_committed_columns_or_at_least_32():
    def heading(committed, high_water):
        tmem = PoolPlan("t", TMEM, "cols", (), high_water, committed)
        return texts(parse(MemoryPlan((tmem,))))[0][2]

    assert heading(256, 100) == "TMEM t: 256 columns x 128 lanes"
    assert heading(None, 31) == "TMEM t: 32 columns x 128 lanes"
    assert heading(None, 33) == "TMEM t: 33 columns x 128 lanes"


def test_axis_step_doubles_while_more_than_eight_steps_fit():
    # 36 columns (uncommitted, high-water 36): 36 / 4 = 9 > 8, 36 / 8 = 4.5: step 8, ticks
    # 0, 8, 16, 24, 32 at x = 150 + t * 780 / 36 = 150 + t * 21.667; bottom = 34 + 160 = 194
    tmem = PoolPlan("t", TMEM, "cols", (), 36, None)
    root = parse(MemoryPlan((tmem,)))
    assert texts(root, "9")[:5] == [
        ("150", "206", "0"),
        ("323.333", "206", "8"),
        ("496.667", "206", "16"),
        ("670", "206", "24"),
        ("843.333", "206", "32"),
    ]
    assert texts(root, "9")[5][2] == "lanes 0-31"


def test_a_stage_narrower_than_three_pixels_keeps_a_one_pixel_bar():
    # 512 columns: 780 / 512 = 1.5234375 px a column. Stage 0 over [0, 1): w = 1.523, bar
    # max(1.523 - 2, 1) = 1 at x = 151, label at 150 + 0.762; stage 1 over [1, 3): x =
    # 151.523, w = 3.047: bar (152.523, 1.047)
    tmem = PoolPlan("t", TMEM, "cols", (), 3, 512, stages=(StageViews("s", ((0, 1), (1, 3))),))
    root = parse(MemoryPlan((tmem,)))
    assert [(s["x"], s["width"]) for s in rects(root, "stage")] == [
        ("151", "1"),
        ("152.523", "1.047"),
    ]
    assert texts(root, "9")[0] == ("150.762", "32", "s[0]")


def test_pools_stack_down_the_canvas():
    empty_smem = PoolPlan("smem", SMEM, "bytes", (), 0, None)
    empty_tmem = PoolPlan("tmem", TMEM, "cols", (), 0, 32)
    root = parse(MemoryPlan((empty_smem, empty_tmem)))
    # the SMEM pool leaves the cursor at 132 (see test_an_empty_pool_draws_one_row_over_one_unit):
    # TMEM heading at 132 + 14; grid from 156 to 316; cursor 316 + 30 + 8 = 354, height 364
    assert texts(root)[2] == ("10", "146", "TMEM tmem: 32 columns x 128 lanes")
    (grid,) = rects(root, "tmem-grid")
    assert grid["y"] == "156"
    assert root.get("height") == "364"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_stays_on_its_canvas_with_labels_inside_their_blocks(name):
    plan = EXAMPLES[name].build().plan()
    root = parse(plan, name)
    width, height = float(root.get("width")), float(root.get("height"))
    for r in root.iter(f"{SVG}rect"):
        if r.get("x") is not None:
            x, y, w, h = map(float, geometry(r.attrib))
            assert x >= 0 and y >= 0 and x + w <= width and y + h <= height, r.attrib
    for t in root.iter(f"{SVG}text"):
        assert 0 <= float(t.get("x")) <= width and 0 < float(t.get("y")) <= height, t.text
    for x in root.iter(f"{SVG}line"):
        if x.get("x1") is not None:
            assert all(0 <= float(x.get(k)) <= width for k in ("x1", "x2"))
            assert all(0 <= float(x.get(k)) <= height for k in ("y1", "y2"))
    # a white block label lies inside the block drawn just before it (each line len * 6.6 px)
    blocks = [r.attrib for r in root.iter(f"{SVG}rect") if r.get("class") == "buffer"]
    for t in root.iter(f"{SVG}text"):
        if t.get("fill") == "#ffffff":
            tx, ty = float(t.get("x")), float(t.get("y"))
            inside = [
                b
                for b in blocks
                if float(b["x"]) <= tx
                and tx + len(t.text) * 6.6 <= float(b["x"]) + float(b["width"])
                and float(b["y"]) <= ty - 9
                and ty <= float(b["y"]) + float(b["height"])
            ]
            assert inside, t.text
    # the legend names every buffer of every pool, in plan order
    legend = [t.text.split("   ")[0] for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert legend == [e.name for pool in plan.pools for e in pool.entries]
