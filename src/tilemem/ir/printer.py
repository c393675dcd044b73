"""Readable text of IR nodes: ``print(kernel.ir)``."""

from __future__ import annotations

from .nodes import (
    BinOp,
    Call,
    Cast,
    Comment,
    Const,
    DeclBuffer,
    Evaluate,
    Expr,
    For,
    IfThenElse,
    Kernel,
    LetStmt,
    Load,
    Select,
    SeqStmt,
    Stmt,
    Store,
    UnOp,
    Var,
)

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
    if isinstance(s, Evaluate):
        return [pad + expr_text(s.expr)]
    if isinstance(s, Store):
        return [f"{pad}{s.buffer.name}[{expr_text(s.index)}] = {expr_text(s.value)}"]
    if isinstance(s, LetStmt):
        return [f"{pad}let {s.var.name}: {s.var.dtype.name} = {expr_text(s.value)}"]
    if isinstance(s, DeclBuffer):
        b = s.buffer
        where = f" at {b.region}+{b.byte_offset}" if b.scope == "shared.dyn" else ""
        shape = "x".join(map(str, b.shape))
        return [
            f"{pad}buffer {b.name}: {b.scope} {b.dtype.name}[{shape}]{where}"
            + (f"  # {s.comment}" if s.comment else "")
        ]
    if isinstance(s, Comment):
        return [f"{pad}# {s.text}"]
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
