"""Bump placement: where a buffer lands given a cursor, its size and alignment."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import AlignmentError
from ..intmath import align_up, is_power_of_two
from ..validate import check_int, is_int


def check_align(align, what: str = "align") -> int:
    """``align`` as an int: 0 (natural alignment) or a power of two up to 2**30."""
    if type(align) is int and 0 <= align <= 1 << 30 and not align & (align - 1):
        return align  # the usual argument, without the general checks
    if not is_int(align) or (align != 0 and not is_power_of_two(int(align))) or align > 1 << 30:
        hint = (
            f"; use {1 << (int(align) - 1).bit_length()}"
            if is_int(align) and 0 < align < 1 << 30
            else ""
        )
        raise AlignmentError(
            f"{what} must be a power of two up to {1 << 30} (or 0 for natural alignment), got "
            f"{align!r}{hint}"
        )
    return int(align)


@dataclass(frozen=True, init=False)
class Placement:
    """A buffer's spot: ``offset`` after ``padding`` units skipped from the cursor."""

    offset: int
    length: int
    align: int
    padding: int

    def __init__(self, offset: int, length: int, align: int, padding: int) -> None:
        # written into the instance's dict: a frozen dataclass's own __init__ sets each field
        # through object.__setattr__, and a pool makes a placement per alloc
        fields = self.__dict__
        fields["offset"] = offset
        fields["length"] = length
        fields["align"] = align
        fields["padding"] = padding

    @property
    def end(self) -> int:
        return self.offset + self.length


def place(cursor: int, size: int, align: int) -> Placement:
    """Where a buffer of ``size`` lands: the cursor rounded up to ``align``."""
    if type(size) is not int or size < 0:
        size = check_int(size, "placement size", minimum=0, error=AlignmentError)
    offset = align_up(cursor, align)
    return Placement(offset, size, align, offset - cursor)


def bump_total(items: Iterable[tuple[int, int]], start: int = 0) -> tuple[int, int]:
    """High-water mark and padding of placing ``(size, align)`` items in order from ``start``."""
    cursor, padding = start, 0
    for given, align in items:
        size = given if type(given) is int and given >= 0 else place(cursor, given, align).length
        offset = align_up(cursor, align)
        cursor, padding = offset + size, padding + offset - cursor
    return cursor, padding


def overlapping_pairs(spans: Sequence[tuple[str, int, int]]) -> list[tuple[str, str]]:
    """Pairs of names whose half-open ``[start, end)`` ranges intersect, in the order of
    their positions in ``spans`` (first, then second)."""
    pairs = overlapping_index_pairs([(start, end) for _, start, end in spans])
    return [(spans[i][0], spans[j][0]) for i, j in pairs]


def overlapping_index_pairs(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted index pairs ``(i, j)``, ``i < j``, of non-empty half-open ranges that intersect.

    A sweep by start: after sorting, the ranges meeting range ``a`` from above are the ones
    that follow it and start below its end, so the work is the sort plus the pairs found.
    """
    order = sorted((i for i, (lo, hi) in enumerate(ranges) if hi > lo), key=lambda i: ranges[i])
    pairs = []
    for k, a in enumerate(order):
        end = ranges[a][1]
        for m in range(k + 1, len(order)):
            b = order[m]
            if ranges[b][0] >= end:
                break
            pairs.append((a, b) if a < b else (b, a))
    pairs.sort()
    return pairs
