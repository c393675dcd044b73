"""The CUDA backend at spots mutation testing found unpinned: literals, casts, nesting and
loop bounds of the generated C++, launch bounds, NVRTC error context, array helpers and the
cuda.h codes of tensor maps. Expected text is written out by hand."""

from types import SimpleNamespace

import numpy as np
import pytest

from tilemem import T
from tilemem.cuda.codegen import CudaCodegen
from tilemem.cuda.compile import CompileError, _context, compile_cubin
from tilemem.cuda.device import check, device_pointer, element_bytes
from tilemem.cuda.tma import _L2_PROMOTION_CODES, _SWIZZLE_CODES, EncodedTensorMap
from tilemem.dtype import DataType
from tilemem.errors import CodegenError, LaunchError, TMAError
from tilemem.ir.nodes import (
    BinOp,
    Call,
    Cast,
    Comment,
    Const,
    Expr,
    For,
    IfThenElse,
    Select,
    Stmt,
    UnOp,
    Var,
)
from tilemem.layout import SwizzleMode

I32, U32 = DataType("int32"), DataType("uint32")


def _program():
    @T.kernel(target="sm_90a", block=(32, 2, 3))
    def k(x: T.Buffer((192,), "float32")):
        x[T.thread_id()] = 1.0

    return k


def _codegen() -> CudaCodegen:
    return CudaCodegen(_program().ir)


def test_launch_bounds_are_the_product_of_the_block():
    # 32 * 2 * 3 = 192 threads
    assert "__launch_bounds__(192) " in _program().source


def test_a_program_is_named_by_its_kernel():
    assert _program().name == "k"


@pytest.mark.parametrize(
    ("const", "bits", "text"),
    [
        (Const(65535, U32), False, "65535u"),  # below 2**16: decimal
        (Const(65536, U32), False, "0x10000u"),  # 2**16 and up: a bit pattern, hex
        (Const(65536, I32), False, "65536"),  # signed: decimal
        (Const(0, I32), True, "0x0"),  # an operand of & | ^: hex, zero too
        (Const(-8, I32), True, "-8"),  # but never a negative one
        (Const(0, U32), False, "0u"),
    ],
)
def test_literals(const, bits, text):
    assert _codegen()._const(const, bits=bits) == text


def test_bitwise_operands_print_in_hex():
    x = Var("x")
    assert _codegen().expr(BinOp("|", x, Const(0, I32), I32)) == "(x | 0x0)"


@pytest.mark.parametrize(
    ("src", "dst", "text"),
    [
        ("int32", "int32", "x"),  # no cast to its own type
        ("int32", "float32", "((float)(x))"),
        ("bfloat16", "float16", "tm_f32_to_f16(tm_bf16_to_f32(x))"),  # through float
        ("int32", "bfloat16", "tm_f32_to_bf16((float)(x))"),
        ("bfloat16", "float32", "(float)(tm_bf16_to_f32(x))"),
    ],
)
def test_casts(src, dst, text):
    assert _codegen().expr(Cast(Var("x", DataType(src)), DataType(dst))) == text


def test_if_else_and_loops_indent_their_bodies_one_level():
    i = Var("i")
    body = Comment("body")
    loop = For(i, Const(2), Const(3), "unroll", body)
    branch = IfThenElse(Var("c"), loop, Comment("other"))
    assert _codegen().stmt(branch, 1) == [
        "  if (c) {",
        "    #pragma unroll",
        "    for (int i = 2; i < 5; ++i) {",  # start 2, extent 3: up to 5
        "      // body",
        "    }",
        "  } else {",
        "    // other",
        "  }",
    ]
    serial = For(i, Const(2), Const(3), "serial", body)
    assert _codegen().stmt(serial, 0) == ["for (int i = 2; i < 5; ++i) {", "  // body", "}"]


SOURCE = "\n".join(f"l{i}" for i in range(1, 11))  # ten lines: l1 .. l10


def test_nvrtc_context_shows_three_lines_around_the_error():
    assert _context(SOURCE, "kernel.cu(5): error: x") == "\n".join(
        [
            "     2 | l2",
            "     3 | l3",
            "     4 | l4",
            ">    5 | l5",
            "     6 | l6",
            "     7 | l7",
            "     8 | l8",
        ]
    )


def test_nvrtc_context_stops_at_the_first_and_last_lines():
    assert _context(SOURCE, "kernel.cu(1): error: x") == "\n".join(
        [">    1 | l1", "     2 | l2", "     3 | l3", "     4 | l4"]
    )
    assert _context(SOURCE, "kernel.cu(10): error: x").splitlines()[-1] == ">   10 | l10"


def test_nvrtc_context_shows_the_first_three_errors():
    log = "".join(f"kernel.cu({n}): error: x\n" for n in (1, 4, 7, 10))
    chunks = _context(SOURCE, log).split("\n...\n")
    assert [next(c for c in chunk.splitlines() if c.startswith(">")) for chunk in chunks] == [
        ">    1 | l1",
        ">    4 | l4",
        ">    7 | l7",
    ]


def test_element_bytes_from_itemsize_or_dtype():
    assert element_bytes(np.zeros(3, np.float32)) == 4
    assert element_bytes(SimpleNamespace(itemsize=8)) == 8
    assert element_bytes(SimpleNamespace(dtype=SimpleNamespace(itemsize=2))) == 2
    assert element_bytes(object()) is None


def test_device_pointer_of_a_buffer_handle_an_interface_or_an_int():
    assert device_pointer(SimpleNamespace(handle=4096, size=16)) == 4096
    cai = SimpleNamespace(__cuda_array_interface__={"data": (8192, False), "typestr": "<f4"})
    assert device_pointer(cai) == 8192
    assert device_pointer(77) == 77
    with pytest.raises(LaunchError, match="cannot pass SimpleNamespace as a device buffer"):
        device_pointer(SimpleNamespace(handle=None))


def test_tensor_map_codes_are_cuda_h_enumerators():
    # cuda.h: CU_TENSOR_MAP_SWIZZLE_NONE 0, _32B 1, _64B 2, _128B 3;
    # CU_TENSOR_MAP_L2_PROMOTION_NONE 0, _L2_64B 1, _L2_128B 2, _L2_256B 3
    assert [_SWIZZLE_CODES[m] for m in SwizzleMode] == [0, 1, 2, 3]
    assert _L2_PROMOTION_CODES == {0: 0, 64: 1, 128: 2, 256: 3}


def test_an_l2_promotion_size_not_in_cuda_h_is_refused_before_the_driver():
    with pytest.raises(TMAError, match=r"L2 promotion is one of \[0, 64, 128, 256\] bytes, got 32"):
        EncodedTensorMap(None, l2_promotion=32)  # type: ignore[arg-type]


def test_unary_operators_and_selects():
    x, c = Var("x"), Var("c")
    assert _codegen().expr(UnOp("-", x, I32)) == "(-x)"
    assert _codegen().expr(Select(c, x, Const(3), I32)) == "(c ? x : 3)"


def test_what_has_no_lowering_is_refused():
    class Odd(Expr):
        dtype = I32

    with pytest.raises(CodegenError, match="cannot lower expression Odd"):
        _codegen().expr(Odd())
    with pytest.raises(CodegenError, match=r"no CUDA lowering for intrinsic 'ptx\.nothing'"):
        _codegen().expr(Call("ptx.nothing", (), (), I32))


def test_a_statement_without_a_lowering_is_refused():
    class Odd(Stmt):
        pass

    with pytest.raises(CodegenError, match="cannot lower statement Odd"):
        _codegen().stmt(Odd(), 0)


def test_a_program_describes_itself():
    # 192 float32 elements need no shared memory
    assert repr(_program()) == "<KernelProgram k for sm_90a, 0 B dynamic SMEM>"


def test_driver_results_unpack_to_their_values():
    assert check((0, 5), "query", "k") == 5  # one value: itself
    assert check((0, 5, 6), "query", "k") == [5, 6]  # several: a list
    assert check(0, "launch", "k") == []  # none


def test_element_bytes_from_the_array_interface():
    cai = SimpleNamespace(__cuda_array_interface__={"data": (0, False), "typestr": "<f8"})
    assert element_bytes(cai) == 8  # "<f8": little-endian float of 8 bytes


def test_nvrtc_errors_become_compile_errors_with_the_log():
    pytest.importorskip("cuda.core")
    with pytest.raises(CompileError, match="NVRTC could not compile kernel 'bad' for sm_90a"):
        compile_cubin("this is not C++;\n", "sm_90a", name="bad")
