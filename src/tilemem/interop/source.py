"""What a conversion reads: a tilemem Buffer, or a Layout with its dtype."""

from __future__ import annotations

from ..dtype import DataType, as_dtype
from ..errors import LayoutError
from ..layout import Layout
from ..pool import Buffer


def layout_and_dtype(
    buffer: Buffer | Layout, dtype: DataType | str | None
) -> tuple[Layout, DataType]:
    """What a conversion converts: a Buffer's layout and dtype, or a Layout with ``dtype=``."""
    if isinstance(buffer, Buffer):
        return buffer.layout, buffer.dtype
    if isinstance(buffer, Layout) and dtype is not None:
        return buffer, as_dtype(dtype)
    raise LayoutError(
        f"pass a tilemem Buffer, or a Layout with dtype=, got {type(buffer).__name__}"
    )
