"""tilemem layouts as Triton Gluon layouts, and Triton kernels' memory as tilemem plans.

``to_gluon(layout)`` (or ``to_gluon(buffer)``):

- a 2-D MMA tile with a 32/64/128-byte swizzle -> ``NVMMASharedLayout(16 << L, bits)``;
- any other shared-memory layout that is a bijection onto ``[0, size)`` and linear over
  GF(2) (every swizzle and power-of-two strided tile is) -> ``SharedLinearLayout`` whose
  ``offset_bases[i]`` is the logical coordinate stored at element offset ``2**i``;
- a staged tile ``(..., R, K)`` whose stages are whole tiles one after another (every
  tilemem MMA ring) -> the rank-2 layout of one stage: Gluon allocates
  ``allocate_shared_memory(dtype, [S, R, K], layout)`` with a layout one rank below the
  shape as S stacked tiles, and ``.index(s)`` is stage s. (Triton's rank-3 NVMMA layout is
  not that: it orders the stage bit below the K blocks.)
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
import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..dtype import DataType, as_dtype
from ..errors import LayoutError, PlanError
from ..layout import ComposeLayout, Iter, Layout, TileLayout, tmem_datapath_layout
from ..plan import MemoryPlan
from ..plan.model import PlanEntry, PoolPlan
from ..pool import Buffer
from ..scopes import SMEM, TMEM
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
    if len(layout.shape) > 2:
        layout = one_stage(layout)
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


def one_stage(layout: Layout) -> Layout:
    """The 2-D layout of stage 0 of a staged shared-memory layout ``(..., R, K)``, after
    checking that stage ``i`` is stage 0 moved by ``i * R * K`` elements (whole tiles
    stacked, the form Gluon gives a rank-3 allocation with a rank-2 layout)."""
    *lead, rows, cols = layout.shape
    tile = layout.tile if isinstance(layout, ComposeLayout) else layout
    if not isinstance(tile, TileLayout) or set(tile.axes) != {"m"}:
        raise LayoutError(f"layout {layout!r} is not a shared-memory tile")
    groups = tile.iters_by_dim()
    inner = TileLayout(groups[-2] + groups[-1] or [Iter(1, 1)], shape=(rows, cols))
    stage: Layout = (
        ComposeLayout(layout.swizzle, inner) if isinstance(layout, ComposeLayout) else inner
    )
    per = rows * cols
    stages = math.prod(lead)
    got = layout.positions()["m"].reshape(stages, per)
    want = stage.positions()["m"][None, :] + per * np.arange(stages)[:, None]
    if not np.array_equal(got, want):
        raise LayoutError(
            f"layout {layout!r} does not stack {stages} whole {rows}x{cols} tiles one after "
            "another, which is what Gluon's staged allocations are"
        )
    return stage


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


# --- plan_of: a compiled Triton / Gluon kernel's memory as a MemoryPlan ------------------

# MLIR element types -> tilemem dtype names
_MLIR_DTYPES = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "f8E4M3FN": "float8_e4m3fn",
    "f8E5M2": "float8_e5m2",
    "f8E8M0FNU": "float8_e8m0fnu",
}
_TARGETS = {80: "sm_80", 86: "sm_86", 89: "sm_89", 90: "sm_90a", 100: "sm_100a", 120: "sm_120"}

_ALLOC_RE = re.compile(
    r"%(?P<ssa>[\w.$-]+) = (?P<op>ttg\.local_alloc|ttng\.tmem_alloc)(?: %[^{:]*)? "
    r"\{(?P<attrs>[^}]*)\}[^!]*!ttg\.memdesc<(?P<type>[^,>]+), (?P<enc>#[\w.]+)"
    r".*?loc\((?P<loc>#loc\d+)\)"
)
_SCRATCH_RE = re.compile(
    r"(?:%(?P<ssa>[\w.$-]+) = )?(?P<op>[\w.]+) [^\n]*?\{(?P<attrs>[^}]*allocation\.size[^}]*)\}"
    r".*?loc\((?P<loc>#loc\d+)\)"
)
_VIEW_RE = re.compile(
    r"%(?P<ssa>[\w.$-]+) = ttg\.memdesc_reinterpret %(?P<src>[\w.$-]+) : [^\n]*?-> "
    r"!ttg\.memdesc<(?P<type>[^,>]+), (?P<enc>#[\w.]+)[^\n]*?loc\((?P<loc>#loc\d+)\)"
)
_ATTR_RE = re.compile(r"([\w.]+) = (-?\d+) : i\d+")
_LOC_RE = re.compile(r"^(#loc\d+) = loc\((.*)\)$", re.M)


def _attrs(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in _ATTR_RE.findall(text)}


def _source(loc: str, locs: dict[str, str]) -> tuple[str, str]:
    """(name given in the source, "file:line") of an MLIR location alias."""
    name, seen = "", set()
    while loc in locs and loc not in seen:
        seen.add(loc)
        body = locs[loc]
        named = re.match(r'^"([^"]*)"\((#loc\d+)\)$', body)
        if named:
            name = name or named.group(1)
            loc = named.group(2)
            continue
        where = re.match(r'^"([^"]*)":(\d+):\d+$', body)
        if where:
            return name, f"{where.group(1).rsplit('/', 1)[-1]}:{where.group(2)}"
        callsite = re.match(r"^callsite\((#loc\d+) at", body)
        if callsite:
            loc = callsite.group(1)
            continue
        break
    return name, ""


def _allocated_ir(compiled) -> tuple[str, int]:
    """The kernel's TTGIR after Triton's own shared and tensor memory allocation passes
    (the passes ``make_llir`` runs first), and the target's compute capability."""
    try:
        from triton._C.libtriton import ir, nvidia, passes
    except ImportError as exc:
        raise PlanError(f"this Triton has no NVIDIA backend passes ({exc})") from None
    metadata = compiled.metadata
    target = getattr(metadata, "target", None)
    capability = int(getattr(target, "arch", 0) or 0)
    if getattr(target, "backend", "cuda") != "cuda" or not capability:
        raise PlanError(f"plan_of reads NVIDIA kernels; this one targets {target}")
    ttgir = compiled.asm.get("ttgir") if hasattr(compiled, "asm") else None
    if not ttgir:
        raise PlanError("the compiled kernel carries no TTGIR (compiled.asm['ttgir'])")
    context = ir.context()
    ir.load_dialects(context)
    nvidia.load_dialects(context)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.ttgir"
        path.write_text(ttgir)
        module = ir.parse_mlir_module(str(path), context)
    module.context = context
    pm = ir.pass_manager(context)
    passes.ttgpuir.add_combine_tensor_select_and_if(pm)
    passes.ttgpuir.add_allocate_warp_groups(pm, False)
    passes.convert.add_scf_to_cf(pm)
    passes.gluon.add_inliner(pm)
    ptx_version = getattr(metadata, "ptx_version", None) or 88
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, capability, ptx_version)
    nvidia.passes.ttnvgpuir.add_allocate_tensor_memory(pm)
    pm.run(module, "tilemem.plan_of")
    return str(module), capability


def _encodings(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(#[\w.]+) = (#[^\n]+)$", text, re.M))


def _memdesc(type_text: str) -> tuple[tuple[int, ...], str]:
    *dims, elem = type_text.split("x")
    return tuple(int(d) for d in dims), elem


def _tmem_cols(shape: tuple[int, ...], bits: int, encoding: str) -> tuple[int, tuple]:
    """32-bit columns and lane runs of a TMEM allocation (blockM 128: every lane; 64: the
    lower 16 lanes of each warp's quarter, PTX ISA data path layout F)."""
    fields = _attrs(encoding.replace("<", "<{").replace(">", "}>").replace(",", " : i32,"))
    col_stride = fields.get("colStride", 1)
    block_m = fields.get("blockM", 128)
    *lead, rows, cols = shape
    per_tile = -(-cols * col_stride * bits // 32)
    columns = per_tile * max(1, -(-rows // 128)) * math.prod(lead)
    lanes = ((0, 128),) if block_m == 128 else tuple((32 * q, 32 * q + 16) for q in range(4))
    return columns, lanes


def plan_of(compiled, *, name: str | None = None) -> MemoryPlan:
    """The shared and tensor memory of a compiled Triton or Gluon kernel as a MemoryPlan.

    Reads the kernel's TTGIR after Triton's own allocation passes: each ``local_alloc``
    (its source name and line, shape, dtype, layout, ``allocation.offset``), the scratch
    buffers Triton adds (layout conversions, reductions: ``allocation.size``), and each
    ``tmem_alloc`` (``tensor_memory_col_offset``). Totals are the module's ``ttg.shared``
    and ``ttg.tensor_memory_size``, which equal ``metadata.shared`` and ``tmem_size``.

    A ``memdesc_reinterpret`` of an allocation (P written over S) is a view with
    ``alias_of`` its buffer. Triton's liveness is not in the IR: buffers Triton placed on
    common bytes are taken to be live at different times (Triton's allocator proved it) and
    are recorded as overlaps, without phases.
    """
    _language()
    text, capability = _allocated_ir(compiled)
    locs = dict(_LOC_RE.findall(text))
    encodings = _encodings(text)
    module_attrs = _attrs(text[text.find("module attributes") :].split("\n", 1)[0])
    smem: list[PlanEntry] = []
    tmem: list[PlanEntry] = []
    for m in _ALLOC_RE.finditer(text):
        attrs = _attrs(m.group("attrs"))
        shape, elem = _memdesc(m.group("type"))
        dtype = as_dtype(_MLIR_DTYPES.get(elem, "uint8"))
        src_name, line = _source(m.group("loc"), locs)
        label = encodings.get(m.group("enc"), m.group("enc"))
        label = re.sub(r"^#\w+\.", "", label)
        label = f"{label} @ {line}" if line else label
        buf_name = src_name or m.group("ssa")
        if m.group("op") == "ttg.local_alloc":
            if "allocation.offset" not in attrs:
                continue
            swz = re.search(r"swizzlingByteWidth = (\d+)", label)
            width = int(swz.group(1)) if swz else 0
            smem.append(
                PlanEntry(
                    name=buf_name,
                    scope=SMEM,
                    offset=attrs["allocation.offset"],
                    length=-(-math.prod(shape) * dtype.bits // 8),
                    align=8 * width if width else 16,
                    padding=0,
                    dtype=dtype.name,
                    shape=shape,
                    layout=label,
                    swizzle={0: 0, 32: 1, 64: 2, 128: 3}.get(width, 0),
                )
            )
        else:
            cols, lanes = _tmem_cols(shape, dtype.bits, label)
            tmem.append(
                PlanEntry(
                    name=buf_name,
                    scope=TMEM,
                    offset=attrs.get("tensor_memory_col_offset", 0),
                    length=cols,
                    align=1,
                    padding=0,
                    dtype=dtype.name,
                    shape=shape,
                    layout=label,
                    lanes=lanes,
                )
            )
    by_ssa = {e.name: e for e in smem + tmem}
    ssa_names = {
        m.group("ssa"): _source(m.group("loc"), locs)[0] or m.group("ssa")
        for m in _ALLOC_RE.finditer(text)
    }
    for m in _VIEW_RE.finditer(text):  # a buffer read as another type: P over S
        base = by_ssa.get(ssa_names.get(m.group("src"), m.group("src")))
        if base is None:
            continue
        shape, elem = _memdesc(m.group("type"))
        dtype = as_dtype(_MLIR_DTYPES.get(elem, "uint8"))
        src_name, line = _source(m.group("loc"), locs)
        label = re.sub(r"^#\w+\.", "", encodings.get(m.group("enc"), m.group("enc")))
        label = f"view of {base.name}: {label}" + (f" @ {line}" if line else "")
        if base.scope == TMEM:
            length, lanes = _tmem_cols(shape, dtype.bits, label)
        else:
            length, lanes = -(-math.prod(shape) * dtype.bits // 8), ()
        view = replace(
            base,
            name=src_name or m.group("ssa"),
            length=length,
            dtype=dtype.name,
            shape=shape,
            layout=label,
            lanes=lanes or base.lanes,
            alias_of=base.name,
        )
        (tmem if base.scope == TMEM else smem).append(view)
    for m in _SCRATCH_RE.finditer(text):
        if m.group("op") == "ttg.local_alloc":
            continue
        attrs = _attrs(m.group("attrs"))
        if "allocation.offset" not in attrs:
            continue
        _, line = _source(m.group("loc"), locs)
        smem.append(
            PlanEntry(
                name=f"scratch:{m.group('op').split('.')[-1]}" + (f"@{line}" if line else ""),
                scope=SMEM,
                offset=attrs["allocation.offset"],
                length=attrs["allocation.size"],
                align=16,
                padding=0,
                dtype="uint8",
                shape=(attrs["allocation.size"],),
                layout="Triton scratch" + (f" @ {line}" if line else ""),
            )
        )
    shared = module_attrs.get("ttg.shared", max((e.end for e in smem), default=0))
    pools = [_pool(name or "smem", SMEM, "bytes", smem, shared, shared)]
    tmem_size = module_attrs.get("ttg.tensor_memory_size", 0)
    if tmem or tmem_size:
        alloc = max(32, 1 << (max(tmem_size, 1) - 1).bit_length())
        pools.append(_pool("tmem", TMEM, "cols", tmem, tmem_size, alloc))
    threads = module_attrs.get("ttg.total-num-warps", module_attrs.get("ttg.num-warps", 0))
    return MemoryPlan(
        tuple(pools),
        target=_TARGETS.get(capability),
        threads=32 * threads if threads else None,
    )


def _pool(name: str, scope: str, unit: str, entries, high_water: int, committed: int):
    entries = sorted(entries, key=lambda e: (e.offset, e.name))

    def overlaps(e):
        return tuple(
            o.name
            for o in entries
            if o is not e and o.offset < e.end and e.offset < o.end and _share_lanes(o, e)
        )

    entries = [replace(e, overlaps=overlaps(e)) for e in entries]
    return PoolPlan(name, scope, unit, tuple(entries), high_water, committed)


def _share_lanes(a, b) -> bool:
    if not a.lanes or not b.lanes:
        return True
    return any(x0 < y1 and y0 < x1 for x0, x1 in a.lanes for y0, y1 in b.lanes)


__all__ = ["linear_layout", "offset_bases", "one_stage", "plan_of", "to_gluon"]
