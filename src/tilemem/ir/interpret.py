"""A small interpreter for integer index expressions (used to check generated arithmetic)."""

from __future__ import annotations

from collections.abc import Mapping

from .nodes import BinOp, Cast, Const, Expr, IRError, Select, UnOp, Var, apply_op


def interpret(expr: Expr, env: Mapping[str, int] | None = None) -> int:
    """Value of an integer expression with variables bound by name in ``env``."""
    env = env or {}
    if isinstance(expr, Const):
        if isinstance(expr.value, float):
            raise IRError(f"cannot interpret the float constant {expr.value} as an integer")
        return expr.value
    if isinstance(expr, Var):
        if expr.name not in env:
            raise IRError(f"variable {expr.name!r} is unbound")
        return env[expr.name]
    if isinstance(expr, BinOp):
        return apply_op(expr.op, interpret(expr.a, env), interpret(expr.b, env))
    if isinstance(expr, UnOp):
        v = interpret(expr.a, env)
        return {"-": -v, "~": ~v, "!": int(not v)}[expr.op]
    if isinstance(expr, Cast):
        return interpret(expr.a, env)
    if isinstance(expr, Select):
        return interpret(expr.a, env) if interpret(expr.cond, env) else interpret(expr.b, env)
    raise IRError(f"cannot interpret {type(expr).__name__} on the host")
