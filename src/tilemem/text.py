"""Plain-text tables for reports (the plan, capacity errors, ``tilemem verify``), written once."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def table(
    rows: Sequence[Sequence[str]],
    *,
    right: Collection[int] = (),
    header: bool = True,
    indent: str = "",
) -> list[str]:
    """Lines of ``rows`` in aligned columns two spaces apart.

    Columns whose index is in ``right`` are right-aligned (numbers); with ``header`` the
    first row is underlined with dashes. Trailing spaces are dropped.
    """
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append((indent + "  ".join(cells)).rstrip())
        if header and n == 0:
            lines.append(indent + "  ".join("-" * width for width in widths))
    return lines
