"""The kernel IR: a handful of immutable node types, and their readable text.

Expressions carry a dtype and support Python operators (``a + 1``, ``i < n``,
``x ^ y``), each building a new node; ``==`` and ``!=`` build comparisons too,
so compare nodes structurally with :func:`same`. Statements form a tree under
a :class:`Kernel`. Nothing here knows CUDA C++; ``cuda/`` lowers it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from ..dtype import DataType
from ..errors import IRError
from ..scopes import SMEM

INT32 = DataType("int32")
UINT32 = DataType("uint32")
UINT64 = DataType("uint64")
BOOL = DataType("bool")
FLOAT32 = DataType("float32")


def _is_float(dtype: DataType) -> bool:
    return dtype.name.startswith(("float", "bfloat"))


def convert(value: Any, like: DataType | None = None) -> Expr:
    """Turn a Python number into a Const; pass expressions through."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Const(int(value), BOOL)
    if isinstance(value, int):
        if like is not None and not _is_float(like) and like.bits >= 32:
            return Const(value, like)
        return Const(value, INT32 if -(2**31) <= value < 2**31 else DataType("int64"))
    if isinstance(value, float):
        return Const(value, FLOAT32)
    raise IRError(f"cannot use {value!r} ({type(value).__name__}) in a kernel expression")


def _result_type(a: DataType, b: DataType) -> DataType:
    if _is_float(a) or _is_float(b):
        return FLOAT32 if a.bits <= 32 and b.bits <= 32 else DataType("float64")
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.name.startswith("uint") else b


_COMPARE = {"<", "<=", ">", ">=", "==", "!="}


def byte_float(dtype: DataType) -> bool:
    """Whether ``dtype`` is a float of 8 bits or fewer (fp8, e8m0, fp6, fp4): generated C++
    holds it as raw bytes (``tm_fp8_e4m3`` is an ``unsigned char``), so a kernel may load,
    store and copy it but not compute with it (:func:`check_byte_float_cast`)."""
    return dtype.cuda_type.startswith("tm_fp")


def _refuse_byte_float_arithmetic(op: str, a: Expr, b: Expr) -> None:
    for x in (a, b):
        if byte_float(x.dtype):
            raise IRError(
                f"{x.dtype.name} operand of {op!r}: kernel code holds {x.dtype.name} as raw "
                "bytes (C++ would compute with the byte's integer value, not the number it "
                "encodes); compute in float32 from data that is float32 or bfloat16, or move "
                "the bytes through a uint8 buffer"
            )


def check_byte_float_cast(value: Expr, dtype: DataType) -> None:
    """IRError unless a cast that involves a byte float (:func:`byte_float`) is exact in the
    generated C++: the constant 0 to one (all bits zero in every such format), or nothing
    else. A C++ cast to ``unsigned char`` truncates a float as an integer, which is no fp8
    rounding; the simulator would round it, so the two would disagree."""
    zero = isinstance(value, Const) and value.value == 0
    if value.dtype == dtype or not (byte_float(dtype) or byte_float(value.dtype)):
        return
    if byte_float(dtype) and zero and not byte_float(value.dtype):
        return
    raise IRError(
        f"cast of a {value.dtype.name} value to {dtype.name}: kernel code holds byte floats "
        "(fp8, e8m0, fp6, fp4) as raw bytes, so a C++ cast would convert the byte's integer "
        "value, not the number; only the constant 0 casts to one (all bits zero). Write "
        "their bits through a uint8 buffer, or load and store them without converting"
    )


def binop(op: str, a, b) -> Expr:
    a = convert(a, getattr(b, "dtype", None))
    b = convert(b, a.dtype)
    _refuse_byte_float_arithmetic(op, a, b)
    folded = _fold(op, a, b)
    if folded is not None:
        return folded
    dtype = BOOL if op in _COMPARE or op in ("&&", "||") else _result_type(a.dtype, b.dtype)
    return BinOp(op, a, b, dtype)


def apply_op(op: str, a: int, b: int) -> int:
    """C semantics on non-negative integers (``//`` and ``%`` as C's / and % for them)."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("//", "/"):
        return int(a / b) if (a < 0) != (b < 0) else a // b
    if op == "%":
        return a - b * int(a / b) if (a < 0) != (b < 0) else a % b
    if op == "<<":
        return a << b
    if op == ">>":
        return a >> b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<":
        return int(a < b)
    if op == "<=":
        return int(a <= b)
    if op == ">":
        return int(a > b)
    if op == ">=":
        return int(a >= b)
    if op == "==":
        return int(a == b)
    if op == "!=":
        return int(a != b)
    if op == "&&":
        return int(bool(a) and bool(b))
    if op == "||":
        return int(bool(a) or bool(b))
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    raise IRError(f"no host semantics for operator {op!r}")


def _fold(op: str, a: Expr, b: Expr) -> Expr | None:
    """Constant folding and identities, so layout index arithmetic stays readable."""
    ca = a.value if isinstance(a, Const) else None
    cb = b.value if isinstance(b, Const) else None
    if (
        ca is not None
        and cb is not None
        and not isinstance(ca, float)
        and not isinstance(cb, float)
    ):
        value = apply_op(op, ca, cb)
        return Const(int(value), BOOL if op in _COMPARE else _result_type(a.dtype, b.dtype))
    if op == "+" and ca == 0:
        return b
    if op in ("+", "-", "|", "^", "<<", ">>") and cb == 0:
        return a
    if op == "*" and (ca == 1 or cb == 1):
        return b if ca == 1 else a
    if (
        op in ("*", "&")
        and (ca == 0 or cb == 0)
        and not _is_float(a.dtype)
        and not _is_float(b.dtype)
    ):
        return Const(0, _result_type(a.dtype, b.dtype))
    if op == "//" and cb == 1:
        return a
    if op == "%" and cb == 1:
        return Const(0, a.dtype)
    return None


class Expr:
    """Base of expressions: every node has ``dtype``."""

    dtype: DataType

    def __add__(self, o):
        return binop("+", self, o)

    def __radd__(self, o):
        return binop("+", o, self)

    def __sub__(self, o):
        return binop("-", self, o)

    def __rsub__(self, o):
        return binop("-", o, self)

    def __mul__(self, o):
        return binop("*", self, o)

    def __rmul__(self, o):
        return binop("*", o, self)

    def __truediv__(self, o):
        return binop("/", self, o)

    def __floordiv__(self, o):
        return binop("//", self, o)

    def __rfloordiv__(self, o):
        return binop("//", o, self)

    def __mod__(self, o):
        return binop("%", self, o)

    def __rmod__(self, o):
        return binop("%", o, self)

    def __lshift__(self, o):
        return binop("<<", self, o)

    def __rshift__(self, o):
        return binop(">>", self, o)

    def __and__(self, o):
        return binop("&", self, o)

    def __rand__(self, o):
        return binop("&", o, self)

    def __or__(self, o):
        return binop("|", self, o)

    def __ror__(self, o):
        return binop("|", o, self)

    def __xor__(self, o):
        return binop("^", self, o)

    def __rxor__(self, o):
        return binop("^", o, self)

    def __lt__(self, o):
        return binop("<", self, o)

    def __le__(self, o):
        return binop("<=", self, o)

    def __gt__(self, o):
        return binop(">", self, o)

    def __ge__(self, o):
        return binop(">=", self, o)

    def __eq__(self, o):
        return binop("==", self, o)

    def __ne__(self, o):
        return binop("!=", self, o)

    def __neg__(self):
        return UnOp("-", self, self.dtype)

    def __invert__(self):
        return UnOp("~", self, self.dtype)

    __hash__ = object.__hash__

    def __bool__(self):
        raise IRError(
            "a kernel expression has no Python truth value: branch with `with T.If(cond):` "
            "and combine conditions with T.all_of / T.any_of instead of and/or"
        )

    def __repr__(self) -> str:
        return expr_text(self)


@dataclass(frozen=True, eq=False, repr=False)
class Const(Expr):
    value: int | float
    dtype: DataType = INT32


@dataclass(frozen=True, eq=False, repr=False)
class Var(Expr):
    name: str
    dtype: DataType = INT32


@dataclass(frozen=True, eq=False, repr=False)
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: DataType


@dataclass(frozen=True, eq=False, repr=False)
class UnOp(Expr):
    op: str
    a: Expr
    dtype: DataType


@dataclass(frozen=True, eq=False, repr=False)
class Cast(Expr):
    a: Expr
    dtype: DataType


@dataclass(frozen=True, eq=False, repr=False)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr
    dtype: DataType


@dataclass(frozen=True, eq=False, repr=False)
class Load(Expr):
    buffer: BufferVar
    index: Expr  # element index into the buffer's storage (layout already applied)
    dtype: DataType


@dataclass(frozen=True, eq=False, repr=False)
class Call(Expr):
    """An intrinsic: ``op`` names it (``"ptx.mbarrier.arrive"``), ``attrs`` are compile-time
    options."""

    op: str
    args: tuple
    dtype: DataType = INT32
    attrs: tuple = ()

    def attr(self, key, default=None):
        return dict(self.attrs).get(key, default)


# -- buffers and parameters ---------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BufferVar:
    """A pointer the kernel reads and writes: a global parameter, a shared buffer, a local array."""

    name: str
    dtype: DataType
    scope: str  # "global" | "shared.dyn" | "local"
    shape: tuple = ()
    byte_offset: int | None = None  # shared buffers: offset into their pool's region
    region: str | None = None  # shared buffers: the region variable they point into
    nbytes: int | None = None  # shared buffers: bytes they occupy (layout cosize, padding)
    live: tuple | None = None  # shared buffers: phases they are live in (None: every phase)

    def __repr__(self) -> str:
        return f"{self.scope} {self.dtype.name}* {self.name}"


@dataclass(frozen=True, eq=False)
class TensorMapVar:
    """A ``CUtensorMap`` kernel parameter (``const __grid_constant__``) inside the IR."""

    name: str


@dataclass(frozen=True)
class Param:
    """A kernel parameter: a global buffer, a scalar Var, or a tensor map."""

    name: str
    kind: str  # "buffer" | "scalar" | "tensormap"
    value: Any


# -- statements ---------------------------------------------------------------------


class Stmt:
    def __repr__(self) -> str:
        return stmt_text(self)


@dataclass(frozen=True, eq=False, repr=False)
class ExprStmt(Stmt):
    """An expression evaluated for its effect (an intrinsic call): ``expr;``."""

    expr: Expr


@dataclass(frozen=True, eq=False, repr=False)
class Store(Stmt):
    buffer: BufferVar
    index: Expr
    value: Expr


@dataclass(frozen=True, eq=False, repr=False)
class SeqStmt(Stmt):
    stmts: tuple


@dataclass(frozen=True, eq=False, repr=False)
class IfThenElse(Stmt):
    cond: Expr
    then: Stmt
    else_: Stmt | None = None


@dataclass(frozen=True, eq=False, repr=False)
class For(Stmt):
    var: Var
    start: Expr
    extent: Expr
    kind: str  # "serial" | "unroll"
    body: Stmt


@dataclass(frozen=True, eq=False, repr=False)
class LetStmt(Stmt):
    """Declare a local ``var = value`` visible to the statements after it."""

    var: Var
    value: Expr


@dataclass(frozen=True, eq=False, repr=False)
class DeclBuffer(Stmt):
    """Declare a buffer pointer (shared: region + byte offset; local: an array)."""

    buffer: BufferVar
    comment: str = ""


@dataclass(frozen=True, eq=False, repr=False)
class Comment(Stmt):
    text: str


@dataclass(frozen=True, eq=False, repr=False)
class PhaseStmt(Stmt):
    """``with T.phase(name):`` — ``body`` runs in the pools' phase ``name`` (no scope of its
    own: lets inside stay visible after it). The simulator checks buffer lifetimes here."""

    name: str
    body: Stmt


def statements(s: Stmt) -> Iterator[Stmt]:
    """``s`` and every statement nested in it (sequences, both branches of an if, loop and
    phase bodies), in program order."""
    yield s
    if isinstance(s, SeqStmt):
        for x in s.stmts:
            yield from statements(x)
    elif isinstance(s, IfThenElse):
        yield from statements(s.then)
        if s.else_ is not None:
            yield from statements(s.else_)
    elif isinstance(s, (For, PhaseStmt)):
        yield from statements(s.body)


def issues(body: Stmt, op: str) -> bool:
    """Whether ``body`` issues the intrinsic ``op`` (a :class:`Call` statement of that name)
    anywhere, in any branch or loop."""
    return any(
        isinstance(x, ExprStmt) and isinstance(x.expr, Call) and x.expr.op == op
        for x in statements(body)
    )


@dataclass(frozen=True, eq=False)
class Kernel:
    """A whole kernel: its signature, launch shape, shared memory and body."""

    name: str
    params: tuple
    body: Stmt
    target: str
    grid: tuple
    block: tuple
    cluster: tuple | None
    dyn_smem_bytes: int
    regions: tuple = ()  # names of dynamic shared-memory regions declared (at most one)
    # the user's "file:line" of each statement the builder emitted (by identity)
    locations: dict = field(default_factory=dict, repr=False)
    phases: tuple = ()  # the pools' phase names, in program order
    tmem_buffers: tuple = ()  # (name, col_offset, cols, live phases) of the TMEM pools' buffers
    pools: tuple = ()  # the SMEM and TMEM pools made while building, in creation order

    def __repr__(self) -> str:
        return kernel_text(self)

    __str__ = __repr__


def same(a, b) -> bool:
    """Structural equality of two IR values (``==`` builds comparison nodes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (Expr, Stmt)) and is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (BufferVar, TensorMapVar)):
        return a is b
    return a == b


# -- text: print(kernel.ir) ------------------------------------------------------------

_PREC = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    "<=": 7,
    ">": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "//": 10,
    "%": 10,
}


def expr_text(e: Expr, parent: int = 0) -> str:
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, BinOp):
        if e.op in ("min", "max"):
            return f"{e.op}({expr_text(e.a)}, {expr_text(e.b)})"
        p = _PREC[e.op]
        text = f"{expr_text(e.a, p)} {e.op} {expr_text(e.b, p + 1)}"
        return f"({text})" if p < parent else text
    if isinstance(e, UnOp):
        return f"{e.op}{expr_text(e.a, 11)}"
    if isinstance(e, Cast):
        return f"{e.dtype.name}({expr_text(e.a)})"
    if isinstance(e, Select):
        return f"select({expr_text(e.cond)}, {expr_text(e.a)}, {expr_text(e.b)})"
    if isinstance(e, Load):
        return f"{e.buffer.name}[{expr_text(e.index)}]"
    if isinstance(e, Call):
        if e.op in ("cuda.thread_idx", "cuda.block_idx"):
            base = "threadIdx" if e.op == "cuda.thread_idx" else "blockIdx"
            return f"{base}.{'xyz'[e.attr('axis')]}"
        parts = [
            expr_text(a) if isinstance(a, Expr) else getattr(a, "name", repr(a)) for a in e.args
        ]
        parts += [f"{k}={v!r}" for k, v in e.attrs]
        return f"{e.op}({', '.join(parts)})"
    return f"<{type(e).__name__}>"


def _lines(s: Stmt, depth: int) -> list[str]:
    pad = "  " * depth
    if isinstance(s, SeqStmt):
        return [line for st in s.stmts for line in _lines(st, depth)]
    if isinstance(s, ExprStmt):
        return [pad + expr_text(s.expr)]
    if isinstance(s, Store):
        return [f"{pad}{s.buffer.name}[{expr_text(s.index)}] = {expr_text(s.value)}"]
    if isinstance(s, LetStmt):
        return [f"{pad}let {s.var.name}: {s.var.dtype.name} = {expr_text(s.value)}"]
    if isinstance(s, DeclBuffer):
        b = s.buffer
        where = f" at {b.region}+{b.byte_offset}" if b.scope == SMEM else ""
        shape = "x".join(map(str, b.shape))
        return [
            f"{pad}buffer {b.name}: {b.scope} {b.dtype.name}[{shape}]{where}"
            + (f"  # {s.comment}" if s.comment else "")
        ]
    if isinstance(s, Comment):
        return [f"{pad}# {s.text}"]
    if isinstance(s, PhaseStmt):
        return [f"{pad}phase {s.name}:"] + _lines(s.body, depth + 1)
    if isinstance(s, IfThenElse):
        out = [f"{pad}if {expr_text(s.cond)}:"] + _lines(s.then, depth + 1)
        if s.else_ is not None:
            out += [f"{pad}else:"] + _lines(s.else_, depth + 1)
        return out
    if isinstance(s, For):
        head = f"{pad}for {s.var.name} in {s.kind}({expr_text(s.start)}, {expr_text(s.extent)}):"
        return [head] + _lines(s.body, depth + 1)
    return [f"{pad}<{type(s).__name__}>"]


def stmt_text(s: Stmt) -> str:
    return "\n".join(_lines(s, 0))


def kernel_text(k: Kernel) -> str:
    params = []
    for p in k.params:
        if p.kind == "buffer":
            shape = ", ".join(map(expr_text_or_int, p.value.shape))
            params.append(f"{p.name}: {p.value.dtype.name}[{shape}]")
        elif p.kind == "scalar":
            params.append(f"{p.name}: {p.value.dtype.name}")
        else:
            params.append(f"{p.name}: tensormap")
    head = [
        f"kernel {k.name}({', '.join(params)})",
        f"  target={k.target} grid={k.grid} block={k.block}"
        + (f" cluster={k.cluster}" if k.cluster else "")
        + f" dynamic_smem={k.dyn_smem_bytes}",
    ]
    return "\n".join(head + _lines(k.body, 1))


def expr_text_or_int(v) -> str:
    return expr_text(v) if isinstance(v, Expr) else str(v)
