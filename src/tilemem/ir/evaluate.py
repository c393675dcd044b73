"""A small interpreter for integer index expressions (used to check generated arithmetic)."""

from __future__ import annotations

from collections.abc import Mapping

from .nodes import BinOp, Cast, Const, Expr, IRError, Select, UnOp, Var


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
    raise IRError(f"cannot evaluate operator {op!r}")


def evaluate(expr: Expr, env: Mapping[str, int] | None = None) -> int:
    """Value of an integer expression with variables bound by name in ``env``."""
    env = env or {}
    if isinstance(expr, Const):
        if isinstance(expr.value, float):
            raise IRError(f"cannot evaluate the float constant {expr.value} as an integer")
        return expr.value
    if isinstance(expr, Var):
        if expr.name not in env:
            raise IRError(f"variable {expr.name!r} is unbound")
        return env[expr.name]
    if isinstance(expr, BinOp):
        return apply_op(expr.op, evaluate(expr.a, env), evaluate(expr.b, env))
    if isinstance(expr, UnOp):
        v = evaluate(expr.a, env)
        return {"-": -v, "~": ~v, "!": int(not v)}[expr.op]
    if isinstance(expr, Cast):
        return evaluate(expr.a, env)
    if isinstance(expr, Select):
        return evaluate(expr.a, env) if evaluate(expr.cond, env) else evaluate(expr.b, env)
    raise IRError(f"cannot evaluate {type(expr).__name__} on the host")
