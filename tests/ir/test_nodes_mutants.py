"""The IR's expression nodes at the spots mutation testing found unpinned: literal types,
result types, C integer semantics of folding, identities, structural equality and the
parentheses of the IR text. Expected values are C's rules, worked by hand in comments."""

import itertools

import pytest

from tilemem.dtype import DataType
from tilemem.errors import IRError
from tilemem.ir.nodes import (
    BinOp,
    BufferVar,
    Comment,
    Const,
    Var,
    apply_op,
    binop,
    convert,
    same,
)

I32, I64, U32 = DataType("int32"), DataType("int64"), DataType("uint32")
F32, F64 = DataType("float32"), DataType("float64")


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (2**31 - 1, "int32"),  # INT_MAX
        (2**31, "int64"),  # one past it
        (-(2**31), "int32"),  # INT_MIN
        (-(2**31) - 1, "int64"),
    ],
)
def test_a_python_int_is_int32_exactly_when_it_fits(value, dtype):
    assert convert(value).dtype.name == dtype


@pytest.mark.parametrize(
    ("a", "b", "result"),
    [
        (F32, F32, "float32"),  # float x float of 32 bits stays float32
        (F32, F64, "float64"),  # a double on either side makes a double
        (F64, F32, "float64"),
        (F32, I32, "float32"),  # a float with an int: the float
        (I32, F32, "float32"),
        (I64, I32, "int64"),  # the wider integer, on either side
        (I32, I64, "int64"),
        (U32, I32, "uint32"),  # equal widths: unsigned wins (C's usual conversions)
        (I32, U32, "uint32"),
    ],
)
def test_result_types_follow_c(a, b, result):
    assert binop("+", Var("a", a), Var("b", b)).dtype.name == result


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!=", "&&", "||"])
def test_comparisons_and_logic_are_bool(op):
    assert binop(op, Var("a"), Var("b")).dtype.name == "bool"


@pytest.mark.parametrize(
    ("op", "a", "b", "c"),
    [
        # C99 6.5.5: division truncates toward zero, a % b == a - (a / b) * b
        ("//", 7, 2, 3),
        ("//", -7, 2, -3),  # Python's floor division would give -4
        ("//", 7, -2, -3),
        ("//", -7, -2, 3),
        ("%", 7, 2, 1),
        ("%", -7, 2, -1),  # the sign of the dividend; Python would give 1
        ("%", 7, -2, 1),
        ("%", -7, -2, -1),
        ("<<", 3, 4, 48),
        (">>", 48, 4, 3),
        ("&", 12, 10, 8),
        ("|", 12, 10, 14),
        ("^", 12, 10, 6),
        ("<", 2, 3, 1),
        ("<", 3, 3, 0),
        ("<=", 3, 3, 1),
        (">", 3, 3, 0),
        (">=", 3, 3, 1),
        ("==", 3, 3, 1),
        ("!=", 3, 3, 0),
        ("&&", 2, 0, 0),
        ("||", 2, 0, 1),
        ("min", 2, -5, -5),
        ("max", 2, -5, 2),
    ],
)
def test_host_semantics_are_cs(op, a, b, c):
    assert apply_op(op, a, b) == c
    folded = binop(op, a, b)  # two constants fold to the same value
    assert isinstance(folded, Const) and folded.value == c


x = Var("x")
f = Var("f", F32)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (lambda: binop("+", 0, x), x),
        (lambda: binop("+", x, 0), x),
        (lambda: binop("*", 1, x), x),
        (lambda: binop("*", x, 1), x),
        (lambda: binop("//", x, 1), x),
    ],
)
def test_identities_return_the_operand_itself(expr, expected):
    assert expr() is expected


@pytest.mark.parametrize(
    "expr",
    [
        lambda: binop("-", 0, x),  # 0 - x is -x, not x
        lambda: binop("*", 2, x),
        lambda: binop("*", x, 2),
        lambda: binop("*", f, 0),  # float: x * 0 is NaN for x = inf, so it is kept
        lambda: binop("*", 0, f),
        lambda: binop("//", x, 2),
        lambda: binop("%", x, 2),
    ],
)
def test_what_is_not_an_identity_stays_an_operation(expr):
    assert isinstance(expr(), BinOp)


@pytest.mark.parametrize(
    "expr",
    [
        lambda: binop("*", x, 0),
        lambda: binop("*", 0, x),
        lambda: binop("&", x, 0),
        lambda: binop("%", x, 1),
    ],
)
def test_integer_products_with_zero_and_remainders_by_one_are_zero(expr):
    e = expr()
    assert isinstance(e, Const) and e.value == 0 and e.dtype.name == "int32"


def test_same_compares_every_field_and_buffers_by_identity():
    assert same(x + 1, x + 1)
    assert not same(x + 1, x + 2)  # one field differs
    assert not same(x + 1, x - 1)
    one = BufferVar("a", F32, "global")
    two = BufferVar("a", F32, "global")  # equal fields, another buffer
    assert same(one, one) and not same(one, two)


# C's precedence levels, lowest first (C99 6.5; `//` is the IR's integer division)
LEVELS = [
    ["||"],
    ["&&"],
    ["|"],
    ["^"],
    ["&"],
    ["==", "!="],
    ["<", "<=", ">", ">="],
    ["<<", ">>"],
    ["+", "-"],
    ["*", "//", "%"],
]
PAIRS = [(lo, hi) for low, high in itertools.pairwise(LEVELS) for lo in low for hi in high]
a, b, c = Var("a"), Var("b"), Var("c")


@pytest.mark.parametrize(("lo", "hi"), PAIRS)
def test_the_ir_text_parenthesises_by_c_precedence(lo, hi):
    # the tighter operator needs no parentheses inside the looser one, and the looser one
    # needs them inside the tighter one, on either side
    assert repr(BinOp(lo, BinOp(hi, a, b, I32), c, I32)) == f"a {hi} b {lo} c"
    assert repr(BinOp(lo, a, BinOp(hi, b, c, I32), I32)) == f"a {lo} b {hi} c"
    assert repr(BinOp(hi, BinOp(lo, a, b, I32), c, I32)) == f"(a {lo} b) {hi} c"
    assert repr(BinOp(hi, a, BinOp(lo, b, c, I32), I32)) == f"a {hi} (b {lo} c)"


@pytest.mark.parametrize("level", LEVELS)
def test_one_level_associates_to_the_left(level):
    for op in level:
        for other in level:
            assert repr(BinOp(op, BinOp(other, a, b, I32), c, I32)) == f"a {other} b {op} c"
            assert repr(BinOp(op, a, BinOp(other, b, c, I32), I32)) == f"a {op} (b {other} c)"


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (lambda: x / 3, "x / 3"),
        (lambda: 7 // x, "7 // x"),
        (lambda: 7 % x, "7 % x"),
        (lambda: 7 - x, "7 - x"),
        (lambda: x << 2, "x << 2"),
        (lambda: x >> 2, "x >> 2"),
        (lambda: x & 6, "x & 6"),
        (lambda: 6 & x, "6 & x"),
        (lambda: x | 6, "x | 6"),
        (lambda: 6 | x, "6 | x"),
        (lambda: x ^ 6, "x ^ 6"),
        (lambda: 6 ^ x, "6 ^ x"),
        (lambda: x <= 6, "x <= 6"),
        (lambda: x != 6, "x != 6"),
        (lambda: -x, "-x"),
        (lambda: ~x, "~x"),
    ],
)
def test_python_operators_build_the_operation_with_its_operands_in_order(expr, text):
    assert repr(expr()) == text


def test_a_value_that_is_no_number_is_refused():
    with pytest.raises(IRError, match=r"cannot use 'a' \(str\) in a kernel expression"):
        convert("a")


def test_same_on_tuples_and_mixed_types():
    assert same((x, 1), (x, 1))
    assert not same((x, 1), (x, 2))
    assert not same((x,), (x, 1))  # a prefix is not the same
    assert same(x, 1) is False  # another type: a bool, False
    assert not same(Var("x"), Var("y"))


def test_buffers_and_statements_print_as_their_text():
    assert repr(BufferVar("a", F32, "global")) == "global float32* a"
    assert repr(Comment("note")) == "# note"


def test_an_operator_without_host_semantics_is_refused():
    with pytest.raises(IRError, match="no host semantics for operator 'pow'"):
        apply_op("pow", 2, 3)
