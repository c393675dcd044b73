"""Checks of what callers pass: integers, shapes and names, written once for every layer.

Each check returns the value in its canonical Python form (``numpy.int64(4)``
becomes ``4``, a bare int shape becomes a 1-tuple) or raises the error class
the caller names, with the offending value and the rule in the message.
Floats are refused even when whole (``4.0``): a size that arrives as a float
was computed wrongly somewhere, and passing it on would give float byte counts.
"""

from __future__ import annotations

import keyword
import math
import numbers

import numpy as np

from .errors import AllocationError, TilememError

# On-chip memory holds at most a few hundred KiB; 2**40 elements is far beyond any
# real buffer yet keeps every size computation inside int64.
MAX_ELEMENTS = 1 << 40

# C++ keywords and the names generated kernels define, which a buffer or pool name becomes.
_CPP_KEYWORDS = frozenset(
    (
        "alignas",
        "alignof",
        "and",
        "asm",
        "auto",
        "bool",
        "break",
        "case",
        "catch",
        "char",
        "char16_t",
        "char32_t",
        "char8_t",
        "class",
        "const",
        "constexpr",
        "const_cast",
        "continue",
        "decltype",
        "default",
        "delete",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "float",
        "for",
        "friend",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "mutable",
        "namespace",
        "new",
        "noexcept",
        "not",
        "nullptr",
        "operator",
        "or",
        "private",
        "protected",
        "public",
        "register",
        "reinterpret_cast",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "template",
        "this",
        "thread_local",
        "throw",
        "true",
        "try",
        "typedef",
        "typeid",
        "typename",
        "union",
        "unsigned",
        "using",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "int8_t",
        "int16_t",
        "int32_t",
        "int64_t",
        "uint8_t",
        "uint16_t",
        "uint32_t",
        "uint64_t",
        "threadIdx",
        "blockIdx",
        "blockDim",
        "gridDim",
        "warpSize",
    )
)
_RESERVED_PREFIXES = ("tm_", "__")  # the kernel prelude's types; C++ reserves double underscores


def is_int(value) -> bool:
    """True for Python and numpy integers, False for bools (and numpy bools) and the rest."""
    if type(value) is int:  # the common case, without the ABC check
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def check_int(
    value,
    what: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: type[TilememError] = AllocationError,
) -> int:
    """``value`` as a Python int within ``[minimum, maximum]``; ``error`` otherwise."""
    if type(value) is not int:
        if not is_int(value):
            raise error(
                f"{what} must be {_rule(minimum, maximum)}, got {value!r} ({type(value).__name__})"
            )
        value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise error(f"{what} must be {_rule(minimum, maximum)}, got {value}")
    return value


def _rule(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an integer in [{minimum}, {maximum}]"
    if minimum is not None:
        return f"an integer >= {minimum}"
    if maximum is not None:
        return f"an integer <= {maximum}"
    return "an integer"


def check_shape(
    shape,
    what: str = "shape",
    *,
    error: type[TilememError] = AllocationError,
    max_elements: int = MAX_ELEMENTS,
) -> tuple[int, ...]:
    """A non-empty tuple of positive ints (an int is a 1-D shape) holding <= max_elements."""
    rule = f"{what} must be a non-empty tuple of positive integers"
    if is_int(shape):
        shape = (shape,)
    elif isinstance(shape, str | bytes) or not hasattr(shape, "__iter__"):
        raise error(f"{rule}, got {shape!r}")
    shape = tuple(shape)
    if not shape:
        raise error(f"{rule}, got ()")
    for s in shape:
        if not is_int(s) or s < 1:
            kind = f"({type(s).__name__}) is not an integer" if not is_int(s) else "is below 1"
            raise error(f"{rule}, got {shape!r}: extent {s!r} {kind}")
    out = tuple(int(s) for s in shape)
    if math.prod(out) > max_elements:
        raise error(
            f"{what} {out} holds {math.prod(out)} elements, more than the {max_elements} any "
            "on-chip buffer could hold"
        )
    return out


def check_name(name, what: str = "name", *, error: type[TilememError] = AllocationError) -> str:
    """A name usable as a C++ identifier in generated kernels and as a key in plans."""
    if not isinstance(name, str):
        raise error(f"{what} must be a string, got {name!r} ({type(name).__name__})")
    if not name.isidentifier() or not name.isascii():
        raise error(
            f"{what} {name!r} is not an identifier: use ASCII letters, digits and '_', "
            "not starting with a digit"
        )
    if keyword.iskeyword(name) or name in _CPP_KEYWORDS:
        raise error(f"{what} {name!r} is a C++ or Python keyword; pick another name")
    if name.startswith(_RESERVED_PREFIXES):
        raise error(
            f"{what} {name!r} starts with {name[:3]!r}, reserved for generated code "
            f"({', '.join(repr(p) for p in _RESERVED_PREFIXES)}); pick another name"
        )
    return name
