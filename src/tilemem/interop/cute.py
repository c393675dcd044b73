"""tilemem plans and layouts in CuTe DSL (``nvidia-cutlass-dsl``).

- ``smem_layout(buffer)`` and ``tmem_layout(buffer)`` build, inside ``@cute.jit`` /
  ``@cute.kernel``, the CuTe layouts of a planned buffer: an MMA tile becomes
  ``cute.ComposedLayout(Swizzle<L, B, a>, 0, layout)`` with the layout in elements and the
  swizzle on *byte* addresses, as CuTe attaches it to shared-memory pointers:
  ``B = pe + log2(bits) - 3`` (4 for every MMA swizzle: ``Swizzle<3,4,3>`` for 128B).
  A TMEM layout is CuTe's TMEM address in elements of the buffer's dtype:
  lane stride ``65536 * 32 / bits``, column stride 1 (``tiled_mma.make_fragment_C``'s form).
- ``shared_storage(plan)`` (on the host) builds a ``@cute.struct`` whose fields, named as the
  buffers, sit at the plan's byte offsets; buffers that share bytes (lifetimes, ``alias_of``,
  ``move_base_to``) become members of one ``cute.union``.
- ``tmem_columns(plan)`` is the plan's TMEM column offsets as a frozen mapping, with
  ``alloc_cols`` for ``TmemAllocator.allocate``; it needs no library.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dtype import DataType, as_dtype
from ..errors import LayoutError, PlanError
from ..layout import ComposeLayout, Layout, TileLayout
from ..plan import MemoryPlan
from ..pool import Buffer
from ..scopes import TMEM
from . import require
from .pycute import TMEM_LANE_SHIFT, modes
from .source import layout_and_dtype

# tilemem dtype name -> CuTe DSL numeric type name (cutlass.<name>); others are stored as bytes
CUTE_TYPES = {
    "bool": "Uint8",
    "int8": "Int8",
    "int16": "Int16",
    "int32": "Int32",
    "int64": "Int64",
    "uint8": "Uint8",
    "uint16": "Uint16",
    "uint32": "Uint32",
    "uint64": "Uint64",
    "float16": "Float16",
    "bfloat16": "BFloat16",
    "float32": "Float32",
    "float64": "Float64",
    "float8_e4m3fn": "Float8E4M3FN",
    "float8_e5m2": "Float8E5M2",
    "float8_e8m0fnu": "Float8E8M0FNU",
}


def cute_type(dtype: DataType | str):
    """The CuTe DSL numeric type of a tilemem dtype (``cutlass.BFloat16`` for bfloat16)."""
    require("cutlass.cute")
    import cutlass  # the package of cutlass.cute, importable once that import worked

    name = CUTE_TYPES.get(as_dtype(dtype).name)
    if name is None:
        raise LayoutError(
            f"{as_dtype(dtype).name} has no CuTe DSL element type here; known: {sorted(CUTE_TYPES)}"
        )
    return getattr(cutlass, name)


def byte_swizzle_base(per_element: int, bits: int) -> int:
    """The swizzle's base bit on byte addresses: element bit ``pe`` of an element of ``bits``
    bits is byte-address bit ``pe + log2(bits) - 3``."""
    if bits & (bits - 1):
        raise LayoutError(f"a swizzled tile needs a power-of-two element width, got {bits} bits")
    base = per_element + bits.bit_length() - 1 - 3
    if base < 0:
        raise LayoutError(f"swizzle base {per_element} of {bits}-bit elements is inside a byte")
    return base


def smem_layout(buffer: Buffer | Layout, dtype: DataType | str | None = None):
    """The CuTe DSL layout of a shared-memory buffer (call inside ``@cute.jit``).

    ``cute.make_tensor(smem_ptr, smem_layout(buf))`` with ``smem_ptr`` the buffer's first
    element reads every logical coordinate where tilemem placed it: the modes follow the
    buffer's shape ``(..., rows, cols)``, and a swizzle sits in front as CuTe's
    ``ComposedLayout`` with ``Swizzle<L, 4, 3>`` on byte addresses.
    """
    cute = require("cutlass.cute")
    layout, dtype = layout_and_dtype(buffer, dtype)
    if isinstance(layout, ComposeLayout):
        swz = layout.swizzle
        shape, stride = modes(layout.tile, {"m": 1})
        outer = cute.make_layout(shape, stride=stride)
        swizzle = cute.make_swizzle(
            swz.swizzle_len, byte_swizzle_base(swz.per_element, dtype.bits), swz.atom_len
        )
        return cute.make_composed_layout(swizzle, layout.tile.offset.get("m", 0), outer)
    if not isinstance(layout, TileLayout) or set(layout.axes) != {"m"}:
        raise LayoutError(f"smem_layout takes a shared-memory layout (axis 'm'), got {layout!r}")
    shape, stride = modes(layout, {"m": 1})
    outer = cute.make_layout(shape, stride=stride)
    offset = layout.offset.get("m", 0)
    if offset:
        return cute.make_composed_layout(cute.make_swizzle(0, 4, 3), offset, outer)
    return outer


def tmem_layout(buffer: Buffer | Layout, dtype: DataType | str | None = None):
    """The CuTe DSL layout of a TMEM buffer (call inside ``@cute.jit``), relative to the
    buffer's first column: lane stride ``65536 * 32 / bits``, column stride 1 in elements of
    the dtype, as ``tiled_mma.make_fragment_C`` lays out an accumulator.

    ``cute.make_tensor(tmem_ptr + col_offset * 32 // bits, tmem_layout(buf))``.
    """
    cute = require("cutlass.cute")
    layout, dtype = layout_and_dtype(buffer, dtype)
    if not isinstance(layout, TileLayout) or not set(layout.axes) <= {"TLane", "TCol"}:
        raise LayoutError(f"tmem_layout takes a TMEM layout (TLane, TCol), got {layout!r}")
    if (32 << TMEM_LANE_SHIFT) % dtype.bits:
        raise LayoutError(
            f"a TMEM lane holds 32-bit cells; {dtype.bits}-bit {dtype.name} elements do not "
            "divide it, so CuTe has no element-unit TMEM layout for them"
        )
    weights = {"TLane": (32 << TMEM_LANE_SHIFT) // dtype.bits, "TCol": 1}
    shape, stride = modes(layout, weights)
    outer = cute.make_layout(shape, stride=stride)
    offset = sum(v * weights[a] for a, v in layout.offset.items())
    if offset:
        return cute.make_composed_layout(cute.make_swizzle(0, 4, 3), offset, outer)
    return outer


# --- shared_storage ---------------------------------------------------------------------


@dataclass
class _Cluster:
    """SMEM entries that share bytes (an overlay): one union in the struct."""

    start: int
    end: int
    entries: list[Any] = field(default_factory=list)


def overlay_clusters(plan: MemoryPlan) -> list[_Cluster]:
    """The SMEM pool's entries grouped into runs of overlapping byte ranges, by offset."""
    pool = plan.smem
    if pool is None:
        raise PlanError("shared_storage needs a plan with a shared-memory pool")
    if pool.committed is None:
        raise PlanError(f"SMEM pool {pool.name!r} is not committed: commit() it first")
    clusters: list[_Cluster] = []
    order = {e.name: i for i, e in enumerate(pool.entries)}  # ties: allocation order
    for e in sorted(pool.entries, key=lambda e: (e.offset, -e.length, order[e.name])):
        if e.length <= 0:
            continue
        if clusters and e.offset < clusters[-1].end:
            clusters[-1].end = max(clusters[-1].end, e.end)
            clusters[-1].entries.append(e)
        else:
            clusters.append(_Cluster(e.offset, e.end, [e]))
    return clusters


def _range(cute, cutlass, entry, relative: int):
    """A MemRange of the entry's dtype when its bytes and offset allow, else of bytes."""
    dtype = as_dtype(entry.dtype)
    name = CUTE_TYPES.get(dtype.name)
    nbytes = dtype.bits // 8 if dtype.bits % 8 == 0 else 0
    if name and nbytes and entry.length % nbytes == 0 and relative % nbytes == 0:
        return cute.struct.MemRange[getattr(cutlass, name), entry.length // nbytes]
    return cute.struct.MemRange[cutlass.Uint8, entry.length]


def _padded(cute, cutlass, name: str, members: list[tuple[str, Any, int]], size: int = 0):
    """A struct class: each (field, type, offset) placed at its offset by byte padding."""
    annotations: dict[str, Any] = {}
    at = 0
    for i, (fname, ftype, offset) in enumerate(members):
        if offset > at:
            annotations[f"_pad{i}"] = cute.struct.MemRange[cutlass.Uint8, offset - at]
        annotations[fname] = ftype
        at = offset + _sizeof(cute, ftype)
    if size > at:
        annotations["_tail"] = cute.struct.MemRange[cutlass.Uint8, size - at]
    return type(name, (), {"__annotations__": annotations})


def _sizeof(cute, ftype) -> int:
    """Bytes of a struct member type as CuTe counts them (``Align`` adds none)."""
    if isinstance(ftype, type) and issubclass(ftype, cute.struct.Align):
        ftype = getattr(ftype, "_dtype")  # noqa: B009  (set by Align[...], unknown to mypy)
    if isinstance(ftype, type) and issubclass(ftype, cute.struct.MemRange):
        return int(getattr(ftype, "size_in_bytes"))  # noqa: B009
    return int(ftype.__sizeof__())


def _lowbit(offset: int, cap: int) -> int:
    """The largest power of two dividing ``offset`` (``cap`` for 0), at most ``cap``."""
    return cap if offset == 0 else min(cap, offset & -offset)


def shared_storage(plan: MemoryPlan, name: str = "SharedStorage"):
    """A ``@cute.struct`` class laid out as the plan's SMEM pool (host side).

    Each buffer is a field named as the buffer: a ``MemRange`` of its dtype (of bytes where
    CuTe DSL has no such type), at exactly the plan's byte offset: explicit padding fields
    (``_padN``) fill the gaps, and ``cute.struct.Align`` carries each buffer's alignment
    (1024 for a 128B swizzle), so the struct's alignment is the largest. Buffers that share
    bytes become members of a ``cute.union`` field named by joining their names with
    ``_or_``: a member at the union's first byte is the buffer's range itself, a later one
    a struct ``{_pad0, <name>}``. The struct's size is the committed bytes rounded up to
    its alignment.
    """
    cute = require("cutlass.cute")
    import cutlass  # the package above is its submodule; importable once that import worked

    pool = plan.smem
    clusters = overlay_clusters(plan)
    assert pool is not None and pool.committed is not None  # overlay_clusters checked
    members: list[tuple[str, Any, int]] = []
    for cluster in clusters:
        align = max(e.align for e in cluster.entries)
        if len(cluster.entries) == 1:
            (e,) = cluster.entries
            ftype = cute.struct.Align[_range(cute, cutlass, e, e.offset), align]
            members.append((e.name, ftype, e.offset))
            continue
        union_members: dict[str, Any] = {}
        for e in cluster.entries:
            rel = e.offset - cluster.start
            rng = _range(cute, cutlass, e, rel)
            if rel == 0:
                union_members[e.name] = rng
            else:
                inner = _padded(cute, cutlass, f"{e.name}_at_{rel}", [(e.name, rng, rel)])
                union_members[e.name] = cute.struct(inner)
        union_cls = type(
            "_or_".join(e.name for e in cluster.entries), (), {"__annotations__": union_members}
        )
        ftype = cute.struct.Align[cute.union(union_cls), _lowbit(cluster.start, align)]
        members.append(("_or_".join(e.name for e in cluster.entries), ftype, cluster.start))
    storage = cute.struct(_padded(cute, cutlass, name, members, size=pool.committed))
    _check_offsets(storage, members)
    return storage


def _check_offsets(storage, members) -> None:
    """CuTe computes the offsets itself; one that differs from the plan is refused."""
    offsets = getattr(storage, "_offsets", None)
    if offsets is None:  # a CuTe DSL without the attribute: nothing to compare
        return
    for fname, _, offset in members:
        if offsets.get(fname) != offset:
            raise PlanError(
                f"cute.struct placed {fname!r} at byte {offsets.get(fname)}, the plan at "
                f"{offset}: members of an overlay whose sizes CuTe rounds up to their "
                "alignment can push the next field; reorder or align the plan's buffers"
            )


# --- tmem_columns -----------------------------------------------------------------------


@dataclass(frozen=True)
class TmemColumns(Mapping):
    """TMEM buffer name -> first column (relative to ``tcgen05.alloc``'s base), and
    ``alloc_cols``: the power-of-two column count to pass to ``TmemAllocator.allocate``."""

    columns: tuple[tuple[str, int], ...]
    alloc_cols: int
    widths: tuple[tuple[str, int], ...] = ()

    def __getitem__(self, name: str) -> int:
        for key, value in self.columns:
            if key == name:
                return value
        raise KeyError(f"no TMEM buffer {name!r}; the plan has {[k for k, _ in self.columns]}")

    def __iter__(self) -> Iterator[str]:
        return iter(k for k, _ in self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def cols(self, name: str) -> int:
        """Columns the buffer takes (its width in 32-bit columns)."""
        self[name]
        return dict(self.widths)[name]


def tmem_columns(plan: MemoryPlan) -> TmemColumns:
    """The plan's TMEM column offsets: ``cols["S"]`` replaces FA4's hand-written
    ``tmem_s_offset``; ``cols.alloc_cols`` is the committed ``total_cols``."""
    if not isinstance(plan, MemoryPlan):
        raise PlanError(f"tmem_columns takes a MemoryPlan, got {type(plan).__name__}")
    pools = plan.tmem
    if len(pools) != 1:
        raise PlanError(
            f"tmem_columns reads one TMEM pool; the plan has {len(pools)} "
            f"({[p.name for p in pools]}): pass a plan with exactly one"
        )
    (pool,) = pools
    if pool.committed is None:
        raise PlanError(f"TMEM pool {pool.name!r} is not committed: commit() it first")
    entries = [e for e in pool.entries if e.scope == TMEM]
    return TmemColumns(
        tuple((e.name, e.offset) for e in entries),
        pool.committed,
        tuple((e.name, e.length) for e in entries),
    )


__all__ = [
    "TmemColumns",
    "cute_type",
    "shared_storage",
    "smem_layout",
    "tmem_columns",
    "tmem_layout",
]
