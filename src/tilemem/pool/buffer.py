"""Buffer: what a pool hands out — a typed, placed region with an exact layout."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..dtype import DataType
from ..errors import PoolStateError
from ..layout import Layout
from ..plan.model import LayoutKind
from ..scopes import SMEM, TMEM

_OFFSET_FIELD = {SMEM: "byte_offset", TMEM: "col_offset"}


@dataclass(frozen=True, eq=False, init=False)
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
    layout_kind: LayoutKind = LayoutKind.ROW_MAJOR
    layout_detail: str = ""  # what the kind leaves open: swizzle mode, data path, strides
    pool: Any = None

    def __init__(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: DataType,
        scope: str,
        layout: Layout,
        nbytes: int,
        align: int,
        byte_offset: int | None = None,
        col_offset: int | None = None,
        cols: int | None = None,
        layout_kind: LayoutKind = LayoutKind.ROW_MAJOR,
        layout_detail: str = "",
        pool: Any = None,
    ) -> None:
        """The fields, written into the instance's dict (a frozen dataclass's own ``__init__``
        sets each one through ``object.__setattr__``, and pools make a buffer per alloc). A
        buffer waiting for its offset keeps none: reading it goes to ``__getattr__``, so every
        other attribute is read at full speed."""
        fields = self.__dict__
        fields["name"] = name
        fields["shape"] = shape
        fields["dtype"] = dtype
        fields["scope"] = scope
        fields["layout"] = layout
        fields["nbytes"] = nbytes
        fields["align"] = align
        unplaced = _OFFSET_FIELD.get(scope)  # the offset field of this memory, left out if None
        if byte_offset is not None or unplaced != "byte_offset":
            fields["byte_offset"] = byte_offset
        if col_offset is not None or unplaced != "col_offset":
            fields["col_offset"] = col_offset
        fields["cols"] = cols
        fields["layout_kind"] = layout_kind
        fields["layout_detail"] = layout_detail
        fields["pool"] = pool

    def __getattr__(self, name: str) -> Any:
        """The offset of a buffer not placed yet: a pool with phases places its buffers at
        commit (docs/DESIGN.md#lifetimes), so reading it before then is an error, not a silent
        None."""
        if name not in ("byte_offset", "col_offset"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        pool: Any = self.__dict__.get("pool")
        if getattr(pool, "places_at_commit", False):
            raise PoolStateError(
                f"buffer {self.__dict__.get('name')!r} has no {name} yet: pool "
                f"{pool.name!r} has phases, so commit() places its buffers by lifetime; "
                "read offsets after commit(), or use alias_of=/offset= to fix a position"
            )
        return None

    @property
    def placed(self) -> bool:
        """Whether the buffer has its offset (a lifetime pool's buffers get it at commit)."""
        return self.__dict__.get(_OFFSET_FIELD[self.scope]) is not None

    @property
    def layout_name(self) -> str:
        """The layout's label in the plan, derived from ``layout_kind`` and its detail."""
        return self.layout_kind.label(self.layout_detail)

    @property
    def numel(self) -> int:
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
        if not emitter.is_current():
            raise PoolStateError(
                f"cannot {action} buffer {self.name!r} here: it belongs to the pools of another "
                "kernel (or of a kernel already built); allocate it in this kernel's pool"
            )
        return emitter

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        return self._emitter("read").load(self, index)

    def __setitem__(self, index, value) -> None:
        index = index if isinstance(index, tuple) else (index,)
        self._emitter("write").store(self, index, value)

    def __repr__(self) -> str:
        offset = self.__dict__.get(_OFFSET_FIELD[self.scope])
        offset = "(at commit)" if offset is None else offset
        where = (
            f"byte_offset={offset}"
            if self.scope == SMEM
            else f"col_offset={offset}, cols={self.cols}"
        )
        return (
            f"Buffer({self.name!r}, {self.shape}, {self.dtype.name}, {self.scope}, {where}, "
            f"layout={self.layout_name})"
        )


# The offsets' defaults live in __init__ only: without class attributes of those names, an
# instance without its offset reaches __getattr__ (see Buffer.__init__).
del Buffer.byte_offset, Buffer.col_offset
