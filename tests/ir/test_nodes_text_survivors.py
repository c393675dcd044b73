"""The IR's text form (``str(kernel.ir)``, what errors and docs show) for the expressions and
statements the other tests never printed: a nested division, min/max, select, a load, a call
with attributes, an expression statement, a phase, a loop inside a loop, a node with no text
form of its own, and a tensor-map parameter. Expected strings written by hand from the rules
in tilemem.ir.nodes (precedence: * / // % bind tighter than + -, a right operand of equal
precedence gets parentheses; two spaces per level of nesting)."""

from __future__ import annotations

from tilemem.ir.nodes import (
    BOOL,
    FLOAT32,
    INT32,
    BinOp,
    BufferVar,
    Call,
    Const,
    Expr,
    ExprStmt,
    For,
    Kernel,
    Load,
    Param,
    PhaseStmt,
    Select,
    SeqStmt,
    Stmt,
    Var,
    expr_text,
    kernel_text,
    stmt_text,
)

VI, VJ = Var("i"), Var("j")
X = BufferVar("x", FLOAT32, "global", (8,))


def test_division_binds_as_tightly_as_multiplication():
    # (i / j) * 2 needs no parentheses, 2 * (i / j) does; i + j / 2 needs none
    div = BinOp("/", VI, VJ, FLOAT32)
    assert expr_text(BinOp("*", div, Const(2), FLOAT32)) == "i / j * 2"
    assert expr_text(BinOp("*", Const(2), div, FLOAT32)) == "2 * (i / j)"
    assert expr_text(BinOp("+", VI, BinOp("/", VJ, Const(2), FLOAT32), FLOAT32)) == "i + j / 2"
    # at the top level (parent precedence 0) nothing is wrapped
    assert expr_text(BinOp("-", VI, VJ, INT32)) == "i - j"


def test_min_select_load_and_call_have_their_own_forms():
    assert expr_text(BinOp("min", VI, BinOp("+", VJ, Const(1), INT32), INT32)) == "min(i, j + 1)"
    cond = BinOp("<", VI, VJ, BOOL)
    assert expr_text(Select(cond, VI, VJ, INT32)) == "select(i < j, i, j)"
    assert expr_text(Load(X, BinOp("+", VI, Const(1), INT32), FLOAT32)) == "x[i + 1]"
    call = Call("ptx.fence", (VI, X, 3), INT32, (("scope", "cta"), ("n", 2)))
    assert expr_text(call) == "ptx.fence(i, x, 3, scope='cta', n=2)"


class _Odd(Expr):
    """An expression (and below, a statement) the printer has no form for."""


class _OddStmt(Stmt):
    pass


def test_statements_nest_two_spaces_per_level():
    inner = For(VJ, Const(0), Const(4), "unroll", ExprStmt(Call("ptx.nop", (), INT32)))
    body = SeqStmt((PhaseStmt("mainloop", For(VI, Const(0), Const(2), "serial", inner)),))
    assert stmt_text(body).splitlines() == [
        "phase mainloop:",
        "  for i in serial(0, 2):",
        "    for j in unroll(0, 4):",
        "      ptx.nop()",
    ]
    assert stmt_text(ExprStmt(_Odd())) == "<_Odd>"
    assert stmt_text(PhaseStmt("epilogue", _OddStmt())).splitlines() == [
        "phase epilogue:",
        "  <_OddStmt>",
    ]


def test_a_tensor_map_parameter_is_named_a_tensormap():
    k = Kernel(
        "k",
        (Param("x", "buffer", X), Param("n", "scalar", Var("n")), Param("t", "tensormap", None)),
        ExprStmt(Call("ptx.nop", (), INT32)),
        "sm_90a",
        (1, 1, 1),
        (32, 1, 1),
        None,
        0,
    )
    assert kernel_text(k).splitlines()[0] == "kernel k(x: float32[8], n: int32, t: tensormap)"
