"""Integer helpers every layer uses, written once."""

from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers (``b > 0``), without floats: ``-(-a // b)``."""
    return -(-a // b)


def align_up(value: int, align: int) -> int:
    """The smallest multiple of ``align`` that is ``>= value``."""
    return ceil_div(value, align) * align


def is_power_of_two(n: int) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0
