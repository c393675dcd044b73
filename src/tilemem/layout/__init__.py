"""Layouts: the algebra (core) and the layouts the hardware imposes (smem, tmem)."""

from .core import AXES, ComposeLayout, Iter, Layout, SwizzleLayout, TileLayout
from .smem import (
    SwizzleMode,
    layout_swizzle_mode,
    mma_atom_shape,
    mma_shared_layout,
    swizzle_for,
    widest_swizzle,
)
from .tmem import (
    DATAPATH_ROWS,
    TMEM_COLS,
    TMEM_LANES,
    TMEM_MIN_ALLOC_COLS,
    sf_tmem_layout,
    tmem_datapath_layout,
)

__all__ = [
    "AXES",
    "DATAPATH_ROWS",
    "TMEM_COLS",
    "TMEM_LANES",
    "TMEM_MIN_ALLOC_COLS",
    "ComposeLayout",
    "Iter",
    "Layout",
    "SwizzleLayout",
    "SwizzleMode",
    "TileLayout",
    "layout_swizzle_mode",
    "mma_atom_shape",
    "mma_shared_layout",
    "sf_tmem_layout",
    "swizzle_for",
    "tmem_datapath_layout",
    "widest_swizzle",
]
