"""Integer helpers every layer uses, written once."""

from __future__ import annotations

from .errors import AlignmentError
from .validate import check_int


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers (``b > 0``), without floats: ``-(-a // b)``."""
    return -(-a // b)


def align_up(value: int, align: int) -> int:
    """The smallest multiple of ``align`` (>= 1) that is ``>= value`` (>= 0)."""
    if type(value) is not int or type(align) is not int or value < 0 or align < 1:
        value = check_int(value, "align_up value", minimum=0, error=AlignmentError)
        align = check_int(align, "align_up alignment", minimum=1, error=AlignmentError)
    return -(-value // align) * align  # ceil_div(value, align) * align, without the call


def is_power_of_two(n: int) -> bool:
    """Whether ``n`` is an integer 2**k (k >= 0); a bool is not a number here."""
    return isinstance(n, int) and not isinstance(n, bool) and n > 0 and n & (n - 1) == 0
