"""Buffer: what a pool hands out — a typed, placed region with an exact layout."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..dtype import DataType
from ..errors import PoolStateError
from ..layout import Layout
from ..scopes import SMEM, TMEM


@dataclass(frozen=True, eq=False)
class Buffer:
    """A buffer placed by a pool.

    SMEM buffers have ``byte_offset`` from the start of the pool's region;
    TMEM buffers have ``col_offset`` (first 32-bit column, relative to the
    address ``tcgen05.alloc`` returned) and ``cols``. ``layout`` maps logical
    coordinates to positions: element offset ``m`` for SMEM, (``TLane``,
    ``TCol``) for TMEM.
    """

    name: str
    shape: tuple[int, ...]
    dtype: DataType
    scope: str
    layout: Layout
    nbytes: int
    align: int
    byte_offset: int | None = None
    col_offset: int | None = None
    cols: int | None = None
    layout_name: str = "row-major"
    pool: Any = field(default=None, repr=False)

    @property
    def size(self) -> int:
        """Number of logical elements."""
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _emitter(self, action: str):
        if self.scope == TMEM:
            raise PoolStateError(
                f"cannot {action} TMEM buffer {self.name!r} element by element: tensor memory is "
                "reached only through tcgen05.ld / tcgen05.st (T.ptx.tcgen05.ld/st) or tcgen05.mma"
            )
        emitter = getattr(self.pool, "emitter", None)
        if emitter is None:
            raise PoolStateError(
                f"cannot {action} buffer {self.name!r} outside a kernel: indexing emits a memory "
                "access, so build the pool inside a @T.kernel function"
            )
        return emitter

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        return self._emitter("read").load(self, index)

    def __setitem__(self, index, value) -> None:
        index = index if isinstance(index, tuple) else (index,)
        self._emitter("write").store(self, index, value)

    def __repr__(self) -> str:
        where = (
            f"byte_offset={self.byte_offset}"
            if self.scope == SMEM
            else f"col_offset={self.col_offset}, cols={self.cols}"
        )
        return (
            f"Buffer({self.name!r}, {self.shape}, {self.dtype.name}, {self.scope}, {where}, "
            f"layout={self.layout_name})"
        )
