"""Per-lane values: numpy types of IR dtypes, and expressions compiled to vectorised closures.

A warp evaluates an expression once for its 32 lanes: every value is a numpy array of
shape (32,). Integer arithmetic wraps as in C (numpy fixed-width types); ``/`` and ``%``
truncate toward zero as C's do. 16-bit floats are computed as float32 and rounded to
their type where the kernel casts or stores them; 8-bit floats stay raw bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtype import DataType, as_dtype, float32_to_bits, known_dtypes
from ..errors import SimError
from ..ir.nodes import (
    BinOp,
    Call,
    Cast,
    Const,
    Expr,
    Load,
    Select,
    UnOp,
    Var,
    _result_type,
    byte_float,
)

LANES = 32

_NUMPY = {
    "bool": np.bool_,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float32,
    "bfloat16": np.float32,
}
# 8-bit floats are raw bytes in registers, as in the generated C++ (unsigned char): the
# builder refuses to convert or compute with them (ir.nodes.byte_float,
# check_byte_float_cast), so a kernel only loads, stores, copies them and writes the constant 0
RAW_BYTE_FLOATS = tuple(
    n for n in known_dtypes() if as_dtype(n).bits == 8 and byte_float(as_dtype(n))
)
_NUMPY.update(dict.fromkeys(RAW_BYTE_FLOATS, np.uint8))


def numpy_type(dtype: DataType) -> type:
    """The numpy type a warp computes ``dtype`` in (16-bit floats as float32)."""
    try:
        return _NUMPY[dtype.name]
    except KeyError:
        raise SimError(f"the simulator computes no {dtype.name} values in registers") from None


def round_to(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """float32 values rounded to the 16-bit float ``dtype`` (nearest even)."""
    if dtype.name == "bfloat16":  # the rounded top half of a float32
        return (float32_to_bits(values, dtype).astype(np.uint32) << 16).view(np.float32)
    if dtype.name == "float16":
        return np.asarray(values, np.float32).astype(np.float16).astype(np.float32)
    return values


def convert(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """C conversion of ``values`` to ``dtype`` (float -> int truncates; bool is != 0)."""
    target = numpy_type(dtype)
    if target is np.bool_:
        return values != 0
    if values.dtype.kind == "f" and np.dtype(target).kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(values).astype(np.int64).astype(target)
    out: np.ndarray = values.astype(target)
    return round_to(out, dtype) if dtype.name in ("bfloat16", "float16") else out


def _c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's ``/``: integer quotients truncate toward zero (a zero divisor gives 0 here)."""
    if a.dtype.kind == "f":
        return a / b
    safe = np.where(b == 0, 1, b) if not b.all() else b
    return (a - np.fmod(a, safe)) // safe


def _c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's ``%``: the remainder takes the dividend's sign, as ``fmod`` does."""
    safe = np.where(b == 0, 1, b) if not b.all() else b
    return np.fmod(a, safe)


def _shift(op: str):
    def f(a, b):
        bits = a.dtype.itemsize * 8
        b = b.astype(np.int64)
        out = (a << b.astype(a.dtype)) if op == "<<" else (a >> b.astype(a.dtype))
        return np.where((b >= bits) | (b < 0), 0, out).astype(a.dtype)

    return f


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": _c_div,
    "//": _c_div,
    "%": _c_mod,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "^": np.bitwise_xor,
    "<<": _shift("<<"),
    ">>": _shift(">>"),
    "min": np.minimum,
    "max": np.maximum,
}
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}

# A compiled expression: f(frame, mask) -> array (32,). ``frame`` gives variables
# (frame.env), loads (frame.load) and intrinsic calls (frame.call).
Compiled = Callable[[Any, np.ndarray], np.ndarray]


class Compiler:
    """Compiles expressions once (cached by node identity) into closures."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Expr, Compiled]] = {}
        self.nested: dict[int, list] = {}  # blocking calls inside each expression

    def __call__(self, e: Expr) -> Compiled:
        hit = self.cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        fn = self._compile(e)
        self.cache[id(e)] = (e, fn)
        return fn

    def _compile(self, e: Expr) -> Compiled:
        if isinstance(e, Const):
            const: np.ndarray = np.full(LANES, e.value, numpy_type(e.dtype))
            return lambda fr, m: const
        if isinstance(e, Var):
            name = e.name

            def var(fr, m):
                try:
                    return fr.env[name]
                except KeyError:
                    raise SimError(f"variable {name!r} is read before it is set") from None

            return var
        if isinstance(e, BinOp):
            return self._binop(e)
        if isinstance(e, UnOp):
            a = self(e.a)
            t = numpy_type(e.dtype)
            if e.op == "-":
                return lambda fr, m: np.negative(a(fr, m).astype(t))
            if e.op == "~":
                return lambda fr, m: np.invert(a(fr, m).astype(t))
            if e.op == "!":
                return lambda fr, m: a(fr, m) == 0
            raise SimError(f"no semantics for unary operator {e.op!r}")
        if isinstance(e, Cast):
            a = self(e.a)
            dtype = e.dtype
            return lambda fr, m: convert(a(fr, m), dtype)
        if isinstance(e, Select):
            c, a, b = self(e.cond), self(e.a), self(e.b)
            t = numpy_type(e.dtype)

            def select(fr, m):
                cond = c(fr, m).astype(bool)
                x = a(fr, m & cond) if (m & cond).any() else np.zeros(LANES, t)
                y = b(fr, m & ~cond) if (m & ~cond).any() else np.zeros(LANES, t)
                return np.where(cond, x.astype(t), y.astype(t))

            return select
        if isinstance(e, Load):
            index = self(e.index)
            return lambda fr, m: fr.load(e, index(fr, m), m)
        if isinstance(e, Call):
            return lambda fr, m: fr.call(e, m)
        raise SimError(f"no semantics for expression {type(e).__name__}")

    def _binop(self, e: BinOp) -> Compiled:
        a, b = self(e.a), self(e.b)
        if e.op in ("&&", "||"):
            is_and = e.op == "&&"

            def logic(fr, m):
                x = a(fr, m).astype(bool)
                rest = m & x if is_and else m & ~x
                y = b(fr, rest).astype(bool) if rest.any() else np.zeros(LANES, bool)
                return (x & y) if is_and else (x | y)

            return logic
        if e.op in _COMPARE:
            t = numpy_type(_result_type(e.a.dtype, e.b.dtype))
            cmp = _COMPARE[e.op]
            return lambda fr, m: cmp(a(fr, m).astype(t), b(fr, m).astype(t))
        if e.op not in _ARITH:
            raise SimError(f"no semantics for operator {e.op!r}")
        t = numpy_type(e.dtype)
        fn = _ARITH[e.op]
        is16 = e.dtype.name in ("bfloat16", "float16")
        dtype = e.dtype

        tt = np.dtype(t)

        def arith(fr, m):  # the run ignores numpy's overflow warnings: C wraps
            x, y = a(fr, m), b(fr, m)
            if x.dtype != tt:
                x = x.astype(tt)
            if y.dtype != tt:
                y = y.astype(tt)
            out = fn(x, y)
            return round_to(out, dtype) if is16 else out

        return arith
