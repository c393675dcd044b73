"""The host interpreter of index expressions on every node kind it knows and the ones it
refuses. Expected values worked by hand."""

import pytest

from tilemem.dtype import DataType
from tilemem.errors import IRError
from tilemem.ir import interpret
from tilemem.ir.nodes import Call, Cast, Const, Select, UnOp, Var

I32 = DataType("int32")
x = Var("x")


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        (UnOp("-", x, I32), -5),
        (UnOp("~", x, I32), -6),  # ~5 == -6 in two's complement
        (UnOp("!", x, I32), 0),  # !5 == 0
        (UnOp("!", Const(0), I32), 1),
        (Cast(x, DataType("uint32")), 5),
        (Select(x < 3, Const(10), Const(20), I32), 20),  # 5 < 3 is false
        (Select(x > 3, Const(10), Const(20), I32), 10),
        (x * 3 + 1, 16),
    ],
)
def test_values(expr, value):
    assert interpret(expr, {"x": 5}) == value


def test_a_float_constant_is_refused():
    with pytest.raises(IRError, match=r"cannot interpret the float constant 1\.5 as an integer"):
        interpret(Const(1.5, DataType("float32")))


def test_an_unbound_variable_is_refused():
    with pytest.raises(IRError, match="variable 'y' is unbound"):
        interpret(Var("y") + 1, {"x": 5})


def test_an_intrinsic_has_no_host_value():
    with pytest.raises(IRError, match="cannot interpret Call on the host"):
        interpret(Call("cuda.thread_idx", (), (("axis", 0),), I32))
