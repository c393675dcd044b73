"""MMA operand tiles pinned at their edges (docs/DESIGN.md#named-layouts: a tile of shape (..., R,
K), leading dimensions such as pipeline stages outermost, each a full R x K tile)."""

import pytest

from tilemem.errors import SwizzleError
from tilemem.layout import SwizzleMode
from tilemem.layout.smem import check_mma_tile


def test_a_single_stage_leading_dimension_is_a_tile():
    # (1, 8, 64) bf16: one stage of an 8 x 64 tile, 128-byte rows for 128B: accepted
    check_mma_tile((1, 8, 64), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)
    # ... while zero stages is no tile at all
    with pytest.raises(SwizzleError, match="every extent must be positive"):
        check_mma_tile((0, 8, 64), "bfloat16", SwizzleMode.SWIZZLE_128B_ATOM)
