"""CuTe C++ layout types for a plan's buffers, as header text (``to_cpp_header(cute=True)``).

For each buffer whose layout the plan determines, the header gets, in the buffer's
namespace (reopened after the plain header, so that part stays CuTe-free):

- ``using layout = ...``: the CuTe type whose value at the buffer's logical coordinate
  ``make_coord(i, j, ...)`` is tilemem's position: the element offset for shared memory
  (MMA swizzles as ``cute::ComposedLayout<cute::Swizzle<L, pe, 3>, cute::Int<0>, ...>`` on
  element offsets; CuTe's pointer form is ``Swizzle<L, 4, 3>`` on bytes), and CuTe's TMEM
  address ``(lane << 16) + column`` for tensor memory;
- for a staged MMA ring ``(..., R, K)``: ``stages`` and ``stage_stride_bytes``;
- for an MMA operand tile: ``gmma_layout_type`` (sm_90a) or ``umma_layout_type`` (sm_100a),
  the values of CuTe's ``GMMA::LayoutType`` / ``UMMA::LayoutType`` enums.

Writing the text needs no CUTLASS; compiling it needs the CuTe headers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..dtype import as_dtype
from ..errors import LayoutError
from ..layout import ComposeLayout, Layout, TileLayout, mma_shared_layout, tmem_datapath_layout
from ..scopes import TMEM
from .pycute import axis_weights, base_offset, modes

if TYPE_CHECKING:
    from ..plan.model import MemoryPlan, PlanEntry

# LayoutKind values (plan.model imports this module on request: compared by value, no cycle)
MMA_OPERAND, ROW_MAJOR, TMEM_DATAPATH, TMEM_LANE_ROW = "mma", "row-major", "datapath", "lane=row"

# SwizzleMode value L -> (enumerator, value) of CuTe's enums (cute/arch/mma_sm90_desc.hpp,
# cute/arch/mma_sm100_desc.hpp)
GMMA_LAYOUT_TYPE = {0: ("INTERLEAVE", 0), 1: ("B32", 3), 2: ("B64", 2), 3: ("B128", 1)}
UMMA_LAYOUT_TYPE = {
    0: ("SWIZZLE_NONE", 0),
    1: ("SWIZZLE_32B", 6),
    2: ("SWIZZLE_64B", 4),
    3: ("SWIZZLE_128B", 2),
}
INCLUDES = ("#include <cute/tensor.hpp>",)  # sets up CuTe for host and device compilers


def entry_layout(entry: PlanEntry) -> Layout | None:
    """The layout a plan entry stands for, rebuilt from its kind; None when the plan does not
    say enough (a custom layout, a view, scale factors)."""
    kind = entry.layout_kind.value
    shape = tuple(entry.shape)
    if kind == MMA_OPERAND:
        return mma_shared_layout(entry.dtype, entry.swizzle, shape)
    if kind == ROW_MAJOR:
        return TileLayout.row_major(shape, "m" if entry.scope != TMEM else "TCol")
    if kind == TMEM_LANE_ROW and len(shape) == 2:
        return TileLayout.of(shape, ("1@TLane", "1@TCol"))
    if kind == TMEM_DATAPATH and len(shape) == 2:
        letter = entry.layout.split()[-1] if entry.layout.split() else ""
        bits = as_dtype(entry.dtype).bits
        try:
            return tmem_datapath_layout(
                letter, *shape, dtype=entry.dtype if bits in (16, 32) else None
            )
        except LayoutError:
            return None
    return None


def _cpp(value: Any, tuple_name: str) -> str:
    if isinstance(value, tuple):
        return f"cute::{tuple_name}<" + ", ".join(_cpp(v, tuple_name) for v in value) + ">"
    return f"cute::Int<{value}>"


def layout_type(layout: Layout) -> str:
    """The C++ type of ``layout`` (see the module docstring)."""
    tile = layout.tile if isinstance(layout, ComposeLayout) else layout
    if not isinstance(tile, TileLayout):
        raise LayoutError(f"no CuTe C++ type for {layout!r}")
    weights = axis_weights(tile)
    shape, stride = modes(tile, weights)
    strided = f"cute::Layout<{_cpp(shape, 'Shape')}, {_cpp(stride, 'Stride')}>"
    offset = base_offset(tile, weights)
    if isinstance(layout, ComposeLayout) and layout.swizzle.swizzle_len:
        s = layout.swizzle
        swizzle = f"cute::Swizzle<{s.swizzle_len}, {s.per_element}, {s.atom_len}>"
    elif offset:
        swizzle = "cute::Swizzle<0, 4, 3>"  # identity: an offset needs a composed layout
    else:
        return strided
    return f"cute::ComposedLayout<{swizzle}, cute::Int<{offset}>, {strided}>"


def buffer_lines(entry: PlanEntry, target: str | None) -> list[str]:
    """The CuTe lines of one buffer's namespace (empty when its layout is not known)."""
    layout = entry_layout(entry)
    if layout is None:
        return []
    try:
        text = layout_type(layout)
    except LayoutError as exc:
        return [f"// no CuTe layout type: {exc}"]
    unit = "TMEM address (lane << 16) + column" if entry.scope == TMEM else "element offset"
    out = [f"using layout = {text};  // coordinate -> {unit}"]
    if entry.layout_kind.value == MMA_OPERAND:
        *lead, rows, cols = entry.shape
        if lead:
            stride = rows * cols * as_dtype(entry.dtype).bits // 8
            out += [
                f"constexpr unsigned stages = {math.prod(lead)};",
                f"constexpr unsigned stage_stride_bytes = {stride};",
            ]
        if target == "sm_90a":
            name, value = GMMA_LAYOUT_TYPE[entry.swizzle]
            out.append(
                f"constexpr unsigned gmma_layout_type = {value};  // GMMA::LayoutType::{name}"
            )
        elif target and target.startswith("sm_10"):
            name, value = UMMA_LAYOUT_TYPE[entry.swizzle]
            out.append(
                f"constexpr unsigned umma_layout_type = {value};  // UMMA::LayoutType::{name}"
            )
    return out


def cute_section(plan: MemoryPlan, namespace: str) -> str:
    """The text appended to the plain header: CuTe includes and the reopened namespaces."""
    lines = ["", "// CuTe layout types of the buffers (to_cpp_header(cute=True))", *INCLUDES, ""]
    for pool in plan.pools:
        for entry in pool.entries:
            body = buffer_lines(entry, plan.target)
            if body:
                lines.append(
                    f"namespace {namespace} {{ namespace {pool.name} {{ namespace {entry.name} {{"
                )
                lines += body
                lines.append(f"}}}}}}  // {namespace}::{pool.name}::{entry.name}")
    return "\n".join(lines) + "\n"


def with_cute_types(header: str, plan: MemoryPlan, namespace: str) -> str:
    """``header`` (the plain one) followed by the CuTe section."""
    return header + cute_section(plan, namespace)


__all__ = ["cute_section", "entry_layout", "layout_type", "with_cute_types"]
