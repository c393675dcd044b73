"""Byte floats (fp8 e4m3 / e5m2, e8m0, fp6, fp4) in kernel code: generated C++ holds them as raw
bytes (``typedef unsigned char tm_fp8_e4m3``), so a C++ cast of a float to one truncates the
float as an integer (1.5 -> byte 1, the e4m3 code of 2^-9) instead of rounding it to
the format (1.5 is e4m3 0x3C), and arithmetic on one uses the byte's integer value. The
builder refuses both, before any code exists, so the simulator (which would round) and the
GPU (which would truncate) never disagree; loads, stores and copies of the bytes, and the
constant 0 (all bits zero in every such format), stay."""

from __future__ import annotations

import numpy as np
import pytest

from tilemem import T
from tilemem.dtype import as_dtype
from tilemem.errors import IRError
from tilemem.ir.nodes import byte_float


def test_which_types_are_byte_floats():
    names = ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e2m3fn", "float4_e2m1fn"]
    assert all(byte_float(as_dtype(n)) for n in names)
    assert not any(byte_float(as_dtype(n)) for n in ["bfloat16", "float16", "float32", "uint8"])


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("cast", r"cast of a float32 value to float8_e4m3fn"),
        ("store", r"cast of a float32 value to float8_e4m3fn"),  # the store's implicit cast
        ("store_constant", r"cast of a float32 value to float8_e4m3fn"),
        ("to_float", r"cast of a float8_e4m3fn value to float32"),
        ("to_bits", r"cast of a float8_e4m3fn value to uint8"),
        ("arithmetic", r"float8_e4m3fn operand of '\*'"),
        ("compare", r"float8_e4m3fn operand of '<'"),
    ],
)
def test_converting_or_computing_with_byte_floats_is_refused(body, words):
    with pytest.raises(IRError, match=words):

        @T.kernel(target="sm_90a", block=32)
        def k(
            x: T.Buffer((32,), "float32"),
            y: T.Buffer((32,), "float8_e4m3fn"),
            u: T.Buffer((32,), "uint8"),
        ):
            i = T.thread_id()
            if body == "cast":
                y[i] = T.cast(x[i], "float8_e4m3fn")
            elif body == "store":
                y[i] = x[i]
            elif body == "store_constant":
                y[i] = 1.5
            elif body == "to_float":
                x[i] = T.cast(y[i], "float32")
            elif body == "to_bits":
                u[i] = y[i]
            elif body == "arithmetic":
                x[i] = y[i] * 2.0
            else:
                with T.If(y[i] < 1.0):
                    x[i] = 0.0


def test_zero_and_copies_of_byte_floats_build_and_simulate_as_bytes():
    # the GEMM's idle consumer zeroes fp8 rows of A with cast(0): all bits zero, exact
    @T.kernel(target="sm_90a", block=32)
    def k(y: T.Buffer((32,), "float8_e4m3fn"), z: T.Buffer((32,), "float8_e4m3fn")):
        i = T.thread_id()
        z[i] = y[i]
        with T.If(i % 2 == 0):
            y[i] = T.cast(0, "float8_e4m3fn")

    assert "((tm_fp8_e4m3)(0))" in k.source
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import tilemem.sim as sim

    bits = np.arange(32, dtype=np.uint8) + 0x30  # e4m3 codes of 0.5 .. 3.75
    y = bits.view(ml_dtypes.float8_e4m3fn).copy()
    z = np.zeros(32, ml_dtypes.float8_e4m3fn)
    assert sim.run(k, y, z).ok
    assert (z.view(np.uint8) == bits).all()  # copied byte for byte
    assert (y.view(np.uint8)[0::2] == 0).all() and (y.view(np.uint8)[1::2] == bits[1::2]).all()
