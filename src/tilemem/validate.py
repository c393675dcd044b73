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

# C++ keywords (C++20, alternative tokens included: ``bitand`` is ``&``) and the names
# generated kernels define, which a buffer or pool name becomes.
_CPP_KEYWORDS = frozenset(
    [
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "auto",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "char",
        "char8_t",
        "char16_t",
        "char32_t",
        "class",
        "co_await",
        "co_return",
        "co_yield",
        "compl",
        "concept",
        "const",
        "consteval",
        "constexpr",
        "constinit",
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
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "private",
        "protected",
        "public",
        "register",
        "reinterpret_cast",
        "requires",
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
        "xor_eq",
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
    ]
)
# Macros that the C and C++ standard headers, the CUDA headers or the GNU dialects
# (``-std=gnu++17``, nvcc's host default: ``unix``, ``linux``) define: a namespace or
# variable of that name in generated code would be rewritten by the preprocessor.
_MACRO_NAMES = frozenset(
    [
        "NULL",
        "EOF",
        "BUFSIZ",
        "FILENAME_MAX",
        "assert",
        "errno",
        "offsetof",
        "stdin",
        "stdout",
        "stderr",
        "setjmp",
        "va_arg",
        "va_copy",
        "va_end",
        "va_start",
        "unix",
        "linux",
        "i386",
        "CHAR_BIT",
        "CHAR_MAX",
        "CHAR_MIN",
        "SCHAR_MAX",
        "SCHAR_MIN",
        "UCHAR_MAX",
        "SHRT_MAX",
        "SHRT_MIN",
        "USHRT_MAX",
        "INT_MAX",
        "INT_MIN",
        "UINT_MAX",
        "LONG_MAX",
        "LONG_MIN",
        "ULONG_MAX",
        "LLONG_MAX",
        "LLONG_MIN",
        "ULLONG_MAX",
        "SIZE_MAX",
        "INT8_MAX",
        "INT16_MAX",
        "INT32_MAX",
        "INT64_MAX",
        "UINT8_MAX",
        "UINT16_MAX",
        "UINT32_MAX",
        "UINT64_MAX",
        "INT8_MIN",
        "INT16_MIN",
        "INT32_MIN",
        "INT64_MIN",
        "FLT_MAX",
        "FLT_MIN",
        "FLT_EPSILON",
        "DBL_MAX",
        "DBL_MIN",
        "DBL_EPSILON",
        "INFINITY",
        "NAN",
        "HUGE_VAL",
        "HUGE_VALF",
        "M_PI",
        "M_E",
        "EXIT_SUCCESS",
        "EXIT_FAILURE",
        "RAND_MAX",
        "CUDA_VERSION",
        "CUDART_VERSION",
        "CUDART_INF_F",
        "CUDART_NAN_F",
        "CUDART_PI_F",
    ]
)
# The constants a C++ header defines in each pool's namespace, beside one namespace per
# buffer (tilemem.plan.cpp_header): a buffer of that name would clash with them.
HEADER_POOL_CONSTANTS = frozenset(
    [
        "committed_bytes",
        "high_water",
        "region_align",
        "target_max_bytes",
        "total_cols",
        "cta_group",
        "alloc_warp",
        "dealloc_warp",
        "slot_offset",
    ]
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
    """A name usable as a C++ identifier in generated kernels and headers, and as a key in
    plans: ASCII letters, digits and '_', not a C++ or Python keyword (alternative tokens
    such as ``bitand`` included), not a macro of the standard or CUDA headers (``NULL``,
    ``unix``), not reserved by C++ (``__`` anywhere, ``_`` and a capital letter first) or by
    the kernel prelude (``tm_``)."""
    if not isinstance(name, str):
        raise error(f"{what} must be a string, got {name!r} ({type(name).__name__})")
    if not name.isidentifier() or not name.isascii():
        raise error(
            f"{what} {name!r} is not an identifier: use ASCII letters, digits and '_', "
            "not starting with a digit"
        )
    if keyword.iskeyword(name) or name in _CPP_KEYWORDS:
        raise error(f"{what} {name!r} is a C++ or Python keyword; pick another name")
    if name in _MACRO_NAMES:
        raise error(
            f"{what} {name!r} is a macro of the C, C++ or CUDA headers, which the preprocessor "
            "would replace in generated code; pick another name"
        )
    if name.startswith(_RESERVED_PREFIXES) or "__" in name:
        raise error(
            f"{what} {name!r} is reserved: C++ reserves names with '__', and "
            f"{', '.join(repr(p) for p in _RESERVED_PREFIXES)} starts generated names; "
            "pick another name"
        )
    if name[0] == "_" and name[1:2].isupper():
        raise error(
            f"{what} {name!r} is reserved: C++ reserves '_' followed by a capital letter; "
            "pick another name"
        )
    return name


def check_buffer_name(
    name, what: str = "buffer name", *, error: type[TilememError] = AllocationError
) -> str:
    """:func:`check_name`, and not a constant of the pool's namespace in a C++ header."""
    check_name(name, what, error=error)
    if name in HEADER_POOL_CONSTANTS:
        raise error(
            f"{what} {name!r} is the name of a pool constant of the C++ header "
            f"({', '.join(sorted(HEADER_POOL_CONSTANTS))}); pick another name"
        )
    return name
