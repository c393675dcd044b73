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

``plan_of(compiled)`` reads a compiled Triton or Gluon kernel's shared and tensor memory
back as a ``MemoryPlan`` (JSON-saveable, so ``tilemem plan FILE.json`` shows it);
``repack(plan)`` places the same buffers with tilemem's exact packer, assuming buffers
Triton put on common bytes are never live together.

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
from ..errors import LayoutError, PlanError, TilememError
from ..layout import ComposeLayout, Iter, Layout, TileLayout, tmem_datapath_layout
from ..plan import MemoryPlan, get_target
from ..plan.data import TMEMAllocation
from ..plan.lifetimes import Item, pack
from ..plan.model import PlanEntry, PoolPlan
from ..pool import Buffer
from ..scopes import SMEM, TMEM
from ..validate import check_name
from . import require
from .source import layout_and_dtype

GLUON = "triton.experimental.gluon"


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
    layout, dtype = layout_and_dtype(buffer, dtype)
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
    ``tmem_alloc`` (``tensor_memory_col_offset``). Buffers are named by their source
    names, else made identifiers (``scratch_convert_layout_L70``: a layout conversion's
    scratch at line 70), so the plan saves as JSON and ``tilemem plan FILE.json`` reads it.

    Totals: the SMEM pool's high-water mark and ``committed`` are the module's ``ttg.shared``
    (``metadata.shared``); ``committed`` is None when that exceeds the target's block limit
    (the launch would fail). The TMEM pool's high-water mark is where its buffers reach and
    ``committed`` is ``ttg.tensor_memory_size`` (``metadata.tmem_size``), the power of two of
    columns Triton's ``tcgen05.alloc`` takes. That allocation is Triton's lowering, not in
    the IR: warp 0 allocates into byte 0 of shared memory (the buffer ``tmem_addr_slot``,
    read at kernel entry, before any buffer there is used) and deallocates at the end.

    A ``memdesc_reinterpret`` of an allocation (P written over S) is a view with
    ``alias_of`` its buffer. Triton's liveness is not in the IR: buffers Triton placed on
    common bytes are taken to be live at different times (Triton's allocator proved it) and
    are recorded as overlaps, without phases. The plan's summary compares Triton's totals
    with tilemem's exact packing of the same buffers under that assumption (:func:`repack`).
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
        number = line.rsplit(":", 1)[-1] if line else ""
        smem.append(
            PlanEntry(
                name=f"scratch_{m.group('op').split('.')[-1]}" + (f"_L{number}" if number else ""),
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
    tmem_size = module_attrs.get("ttg.tensor_memory_size", 0)
    allocation = None
    if tmem or tmem_size:
        smem.append(_TMEM_SLOT)
    smem, tmem = _identifiers(smem, tmem)
    if tmem or tmem_size:
        allocation = _tmem_allocation(compiled, smem[-1].name)  # the slot, renamed if taken
    shared = module_attrs.get("ttg.shared", max((e.end for e in smem), default=0))
    target = _TARGETS.get(capability)
    fits = target is None or shared <= get_target(target).max_smem_per_block
    pools = [_pool(name or "smem", SMEM, "bytes", smem, shared, shared if fits else None)]
    if allocation is not None:
        reach = max((e.end for e in tmem), default=0)
        tmem_pool = _pool("tmem", TMEM, "cols", tmem, reach, _tmem_alloc(tmem_size))
        pools.append(replace(tmem_pool, allocation=allocation))
    threads = module_attrs.get("ttg.total-num-warps", module_attrs.get("ttg.num-warps", 0))
    plan = MemoryPlan(
        tuple(pools),
        target=target,
        threads=32 * threads if threads else None,
        name=_identifier(str(getattr(compiled.metadata, "name", "") or "triton_kernel"), set()),
    )
    return replace(plan, summary=_compare(plan, repack(plan)))


# Triton's lowering of tensor memory: warp 0 runs tcgen05.alloc at kernel entry with the
# address written to byte 0 of shared memory (``global_smem``) and read back before any
# buffer is used, and tcgen05.dealloc at the end (not in the TTGIR: read from its PTX).
_TMEM_SLOT = PlanEntry(
    name="tmem_addr_slot",
    scope=SMEM,
    offset=0,
    length=4,
    align=4,
    padding=0,
    dtype="uint32",
    shape=(1,),
    layout="tcgen05.alloc address, written and read at kernel entry",
)


def _tmem_allocation(compiled, slot: str) -> TMEMAllocation:
    """How Triton allocates the kernel's TMEM: ``cta_group`` from its PTX (1 without PTX)."""
    ptx = compiled.asm.get("ptx", "") if hasattr(compiled, "asm") else ""
    group = re.search(r"tcgen05\.alloc\.cta_group::(\d)", ptx or "")
    return TMEMAllocation(
        cta_group=int(group.group(1)) if group else 1,
        alloc_warp=0,
        dealloc_warp=0,
        slot=slot,
        slot_offset=_TMEM_SLOT.offset,
    )


def _tmem_alloc(cols: int) -> int:
    """Columns ``tcgen05.alloc`` takes for ``cols``: a power of two, at least 32."""
    return max(32, 1 << (max(cols, 1) - 1).bit_length())


def _identifier(text: str, taken: set[str]) -> str:
    """``text`` as a plan buffer name (an identifier tilemem accepts), unique in ``taken``."""
    base = re.sub(r"_+", "_", re.sub(r"\W", "_", text)).strip("_") or "buf"
    if not base.isascii() or base[0].isdigit():
        base = f"buf_{base}"
    try:
        check_name(base)
    except TilememError:  # a keyword or a reserved name
        base = f"{base}_buf"
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}_{n}"
    taken.add(out)
    return out


def _identifiers(smem: list[PlanEntry], tmem: list[PlanEntry]):
    """Both lists with every buffer named by an identifier (SSA values and scratch buffers
    are not), views' ``alias_of`` following their buffer's new name."""
    taken: set[str] = set()
    names = {e.name: _identifier(e.name, taken) for e in smem + tmem if e.alias_of is None}
    names.update({e.name: _identifier(e.name, taken) for e in smem + tmem if e.alias_of})

    def renamed(e: PlanEntry) -> PlanEntry:
        parent = None if e.alias_of is None else names[e.alias_of]
        return replace(e, name=names[e.name], alias_of=parent)

    return [renamed(e) for e in smem], [renamed(e) for e in tmem]


# --- repack: the same buffers placed by tilemem's exact packer ---------------------------


def repack(plan: MemoryPlan) -> MemoryPlan:
    """``plan``'s buffers placed by tilemem's exact packer (:func:`tilemem.plan.lifetimes.pack`):
    the same sizes, alignments, lanes and views, new offsets, footprints proven minimal.

    The liveness assumed is the one Triton's placement shows, since Triton's IR does not carry
    its own: two buffers Triton put on common bytes (and lanes) are never live together, which
    its allocator proved; every other pair may be. Each maximal group of buffers that may be
    live together becomes one phase, so two buffers share a phase exactly when they may be
    live together. A view (``alias_of``, P over S) stays at its place inside its buffer.

    The packed plan's summary gives both totals; a TMEM pool's ``committed`` is what
    ``tcgen05.alloc`` takes for its footprint (a power of two, at least 32 columns).
    """
    limit = None if plan.target is None else get_target(plan.target).max_smem_per_block
    pools = [_repack_pool(pool, limit) for pool in plan.pools]
    smem = {e.name: e.offset for e in pools[0].entries} if pools else {}
    for i, pool in enumerate(pools):
        if pool.allocation is not None:  # the address slot moved with the SMEM buffers
            slot = replace(pool.allocation, slot_offset=smem.get(pool.allocation.slot))
            pools[i] = replace(pool, allocation=slot)
    packed = replace(plan, pools=tuple(pools), advice=None)
    return replace(packed, summary=_compare(plan, packed))


def _repack_pool(pool: PoolPlan, limit: int | None) -> PoolPlan:
    roots = [e for e in pool.entries if e.alias_of is None]
    together = {e.name: {o.name for o in roots if o is not e and not _overlap(e, o)} for e in roots}
    live: dict[str, set[str]] = {e.name: set() for e in roots}
    for k, clique in enumerate(_maximal_cliques(together)):
        for member in clique:
            live[member].add(f"together{k}")
    by_name = {e.name: e for e in pool.entries}

    def root(e: PlanEntry) -> PlanEntry:
        while e.alias_of is not None:
            e = by_name[e.alias_of]
        return e

    items = [
        Item(
            e.name,
            e.length,
            max(e.align, 1),
            frozenset(live[root(e).name]),
            frozenset(lane for a, b in e.lanes for lane in range(a, b)) if e.lanes else None,
            None if e.alias_of is None else e.offset - by_name[e.alias_of].offset,
            e.alias_of,
        )
        for e in pool.entries
    ]
    packing = pack(items)
    entries = [replace(e, offset=x, padding=0) for e, x in zip(pool.entries, packing.offsets)]
    committed: int | None = packing.footprint
    if pool.scope == TMEM:
        committed = _tmem_alloc(packing.footprint)
    elif limit is not None and packing.footprint > limit:
        committed = None  # beyond the block limit: nothing launches with it
    packed = _pool(pool.name, pool.scope, pool.unit, entries, packing.footprint, committed)
    return replace(packed, allocation=pool.allocation)


def _overlap(a: PlanEntry, b: PlanEntry) -> bool:
    return (
        a.offset < b.end
        and b.offset < a.end
        and a.length > 0
        and b.length > 0
        and (_share_lanes(a, b))
    )


def _maximal_cliques(adjacent: dict[str, set[str]]) -> list[list[str]]:
    """The maximal cliques of a small graph (Bron-Kerbosch with pivoting), each sorted as
    ``adjacent`` lists its vertices; an isolated vertex is a clique of one."""
    order = list(adjacent)
    found: list[list[str]] = []

    def grow(clique: list[str], candidates: set[str], excluded: set[str]) -> None:
        if not candidates and not excluded:
            found.append(sorted(clique, key=order.index))
            return
        pivot = max(candidates | excluded, key=lambda v: len(adjacent[v] & candidates))
        for v in [v for v in order if v in candidates - adjacent[pivot]]:
            grow([*clique, v], candidates & adjacent[v], excluded & adjacent[v])
            candidates = candidates - {v}
            excluded = excluded | {v}

    grow([], set(order), set())
    return found


def _compare(triton: MemoryPlan, packed: MemoryPlan) -> str:
    """One line: each pool's total as Triton placed it and as tilemem's exact packer does."""

    def total(pool: PoolPlan) -> str:
        text = f"{pool.footprint} {pool.unit}"
        if pool.scope == TMEM and pool.committed != pool.footprint:
            text += f" (tcgen05.alloc {pool.committed})"
        return text

    parts = [f"{p.name} {total(t)} -> {total(p)}" for p, t in zip(packed.pools, triton.pools)]
    if packed.target is not None and packed.smem is not None:
        limit = get_target(packed.target).max_smem_per_block
        if packed.smem.footprint > limit:
            parts[0] += f", over {packed.target}'s {limit} bytes either way"
    return (
        "Triton's placement vs tilemem's exact packing of the same buffers (buffers Triton put "
        "on common bytes assumed never live together, all others live together): "
        + "; ".join(parts)
    )


def _pool(name: str, scope: str, unit: str, entries, high_water: int, committed: int | None):
    entries = sorted(entries, key=lambda e: (e.offset, e.alias_of is not None, e.name))

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


__all__ = ["linear_layout", "offset_bases", "one_stage", "plan_of", "repack", "to_gluon"]
