"""The plan as an SVG picture, checked with a real XML parser: structure and geometry."""

import struct
import xml.etree.ElementTree as ET
import zlib

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.examples import EXAMPLES
from tilemem.layout import tmem_datapath_layout

SVG = "{http://www.w3.org/2000/svg}"


def parse(plan, title=None):
    root = ET.fromstring(plan.to_svg(title))
    assert root.tag == f"{SVG}svg"
    return root


def rects(root, css):
    return [r for r in root.iter(f"{SVG}rect") if r.get("class") == css]


def by_name(root, css):
    return {r.get("data-name"): r for r in rects(root, css)}


def num(element, attr):
    return float(element.get(attr))


def test_svg_is_a_document_with_its_size():
    root = parse(EXAMPLES["hopper-gemm"].build().plan(), "hopper")
    width, height = int(root.get("width")), int(root.get("height"))
    assert root.get("viewBox") == f"0 0 {width} {height}" and height > 100
    assert any(t.text == "hopper" for t in root.iter(f"{SVG}text"))


def test_smem_blocks_sit_at_their_offsets_on_one_scale():
    root = parse(EXAMPLES["hopper-gemm"].build().plan())
    blocks = by_name(root, "buffer")
    a, b, c = blocks["A"], blocks["B"], blocks["C_epilogue"]
    # A: 4 x 128 x 64 bf16 = 65536 bytes at 0; B: 4 x 256 x 64 bf16 = 131072 bytes after it;
    # C: 128 x 64 bf16 = 16384 bytes, live in the epilogue only: packed at 0, over A
    scale = num(a, "width") / 65536
    x0 = num(a, "x")
    assert num(b, "x") == pytest.approx(x0 + 65536 * scale, abs=1e-3)
    assert num(b, "width") == pytest.approx(131072 * scale, abs=1e-3)
    assert num(c, "x") == pytest.approx(x0, abs=1e-3)
    assert num(c, "width") == pytest.approx(16384 * scale, abs=1e-3)
    assert [blocks[n].get("data-swizzle") for n in ("A", "full_bar")] == ["3", "0"]
    # the target's limit: sm_90a gives a block at most 227 KiB of dynamic shared memory
    capacity = next(x for x in root.iter(f"{SVG}line") if x.get("class") == "capacity")
    assert num(capacity, "x1") == pytest.approx(x0 + 227 * 1024 * scale, abs=1e-3)
    committed = next(x for x in root.iter(f"{SVG}line") if x.get("class") == "committed")
    assert num(committed, "x1") == pytest.approx(x0 + 196672 * scale, abs=1e-3)


def test_labels_name_offset_size_and_swizzle_where_they_fit():
    root = parse(EXAMPLES["hopper-gemm"].build().plan())
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"B", "@65536 128KB", "128B"} <= set(texts)
    tips = [t.text for r in rects(root, "buffer") for t in r.iter(f"{SVG}title")]
    assert "full_bar: bytes 196608..196640 (32 B), align 8, no swizzle" in tips


def test_padding_is_marked_before_the_buffer_it_aligns():
    smem = SMEMPool(target="sm_90a")
    smem.alloc((3,), "uint8", name="flags")
    smem.alloc_mma((64, 64), "bfloat16", "128B", name="A")  # 1021 bytes of padding: 3 -> 1024
    smem.commit()
    root = parse(smem.plan())
    (pad,) = rects(root, "padding")
    a = by_name(root, "buffer")["A"]
    scale = num(a, "width") / 8192
    assert pad.get("data-name") == "A" and pad.get("data-bytes") == "1021"
    assert num(pad, "width") == pytest.approx(1021 * scale, abs=1e-3)
    assert num(pad, "x") + num(pad, "width") == pytest.approx(num(a, "x"), abs=1e-3)
    assert pad.get("fill") == "url(#padding-hatch)"


def test_overlaid_buffers_get_rows_of_their_own():
    smem = SMEMPool(target="sm_90a")
    smem.alloc((256,), "float32", name="tile")
    smem.move_base_to(0)
    smem.alloc((64,), "float32", name="reuse")
    smem.commit()
    blocks = by_name(parse(smem.plan()), "buffer")
    assert num(blocks["reuse"], "x") == num(blocks["tile"], "x")
    assert num(blocks["reuse"], "y") > num(blocks["tile"], "y")


def tmem_plan():
    smem = SMEMPool(target="sm_100a", threads=1024)  # 2 CTAs x 256 columns: no TMEM waits
    tmem = TMEMPool(smem, 256, name="tmem")
    tmem.alloc((64, 128), "float32", layout=tmem_datapath_layout("F", 64, 128), name="F0")
    tmem.move_base_to(0)
    f1 = tmem_datapath_layout("F", 64, 128, sub_slab=1)
    tmem.alloc((64, 128), "float32", layout=f1, name="F1")
    acc = tmem.alloc((128, 128), "float32", name="acc")
    tmem.stages(acc, 0, 64, 2)
    smem.commit()
    tmem.commit()
    return smem.plan()


def test_tmem_buffers_cover_their_data_path_lanes():
    root = parse(tmem_plan())
    cells = rects(root, "tmem-buffer")
    f0 = [c for c in cells if c.get("data-name") == "F0"]
    f1 = [c for c in cells if c.get("data-name") == "F1"]
    # data path F: lane = 32 * (r // 16) + r % 16 (+ 16 for sub-slab 1): four 16-lane runs
    assert [c.get("data-lanes") for c in f0] == ["0-16", "32-48", "64-80", "96-112"]
    assert [c.get("data-lanes") for c in f1] == ["16-32", "48-64", "80-96", "112-128"]
    lane = (num(f0[1], "y") - num(f0[0], "y")) / 32
    assert num(f1[0], "y") == pytest.approx(num(f0[0], "y") + 16 * lane, abs=1e-3)
    assert num(f0[0], "height") == pytest.approx(16 * lane, abs=1e-3)
    (acc,) = [c for c in cells if c.get("data-name") == "acc"]
    grid = rects(root, "tmem-grid")[0]
    scale = num(grid, "width") / 256  # 256 columns
    assert num(acc, "x") == pytest.approx(num(grid, "x") + 128 * scale, abs=1e-3)
    assert num(acc, "height") == pytest.approx(128 * lane, abs=1e-3)


def test_tmem_stage_views_are_drawn_over_their_columns():
    root = parse(tmem_plan())
    stages = rects(root, "stage")
    assert [s.get("data-name") for s in stages] == ["acc[0]", "acc[1]"]
    assert [s.get("data-cols") for s in stages] == ["128-192", "192-256"]


def _png_pixels(png: bytes, last_row: int):
    """(width, height, rows 0..last_row of RGBA bytes) of an 8-bit RGBA, non-interlaced PNG
    (PNG specification, filter types 0-4)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        chunks[kind] = chunks.get(kind, b"") + png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 6)
    raw, stride, rows, prev = zlib.decompress(chunks[b"IDAT"]), width * 4, [], bytearray(width * 4)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - 4] if i >= 4 else 0
            up, corner = prev[i], prev[i - 4] if i >= 4 else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def test_svg_renders_to_png_with_blocks_where_the_svg_puts_them():
    resvg = pytest.importorskip("resvg_py")
    plan = EXAMPLES["hopper-gemm"].build().plan()
    root = parse(plan)
    png = bytes(resvg.svg_to_bytes(svg_string=plan.to_svg()))
    b = by_name(root, "buffer")["B"]
    x = int(num(b, "x") + num(b, "width") * 0.75)  # right of the label text
    y = int(num(b, "y") + num(b, "height") - 3)
    width, height, rows = _png_pixels(png, y)
    assert (width, height) == (int(root.get("width")), int(root.get("height")))
    colour = b.get("fill").lstrip("#")
    assert rows[y][4 * x : 4 * x + 3].hex() == colour


def test_phases_are_rows_and_buffers_show_where_they_are_live():
    smem = SMEMPool(target="sm_90a", phases=("load", "mma", "epilogue"))
    a = smem.alloc_mma((2, 128, 64), "bfloat16", "128B", name="A", live=("load", "mma"))
    c = smem.alloc_mma((128, 128), "bfloat16", "128B", name="C", live="epilogue")
    smem.alloc((64, 64), "bfloat16", name="P", alias_of=c, offset=0, live="epilogue")
    smem.commit()
    root = parse(smem.plan())
    blocks = rects(root, "buffer")
    rows = {}
    for r in blocks:
        rows.setdefault(r.get("data-name"), []).append(num(r, "y"))
    labels = {t.text: num(t, "y") for t in root.iter(f"{SVG}text")}
    assert labels["load"] < labels["mma"] < labels["epilogue"]
    assert len(rows["A"]) == 2 and len(rows["C"]) == 1 and len(rows["P"]) == 1
    row = rows["A"][1] - rows["A"][0]  # one phase apart
    assert rows["C"][0] == pytest.approx(rows["A"][0] + 2 * row)
    # A and C share bytes (never live together): the same x, different phase rows
    x = {r.get("data-name"): num(r, "x") for r in blocks}
    assert x["A"] == x["C"] == x["P"] and a.byte_offset == c.byte_offset
    (view,) = [r for r in blocks if r.get("data-name") == "P"]
    assert view.get("data-alias-of") == "C"
