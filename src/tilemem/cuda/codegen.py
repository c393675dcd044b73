"""Lower an IR Kernel to readable CUDA C++."""

from __future__ import annotations

import math

from ..dtype import DataType
from ..errors import CodegenError
from ..ir.intrinsics import INTRINSICS
from ..ir.nodes import (
    BinOp,
    Call,
    Cast,
    Comment,
    Const,
    DeclBuffer,
    Expr,
    ExprStmt,
    For,
    IfThenElse,
    Kernel,
    LetStmt,
    Load,
    PhaseStmt,
    Select,
    SeqStmt,
    Stmt,
    Store,
    UnOp,
    Var,
)
from ..version import __version__
from .prelude import PRELUDE

_C_OPS = {"//": "/", "&&": "&&", "||": "||"}
_BITWISE = {"&", "|", "^"}
_FLOAT16 = {
    "bfloat16": ("tm_bf16_to_f32", "tm_f32_to_bf16"),
    "float16": ("tm_f16_to_f32", "tm_f32_to_f16"),
}


# Intrinsics that need the register count at kernel entry fixed at compile time.
# setmaxnreg moves registers between warpgroups relative to that count; with only a thread
# bound ptxas allocates what the code needs, reports "'setmaxnreg' ignored; unable to
# determine register count at entry" (C7508) and caps every warpgroup at the entry count
# (the promoted fp8 GEMM at 128 x 192 then spills). A minimum of one block per SM makes the
# entry count the bound's 65536 / threads (rounded down to 8), which setmaxnreg then moves.
_FIXED_ENTRY_REGISTERS = ("ptx.setmaxnreg.inc", "ptx.setmaxnreg.dec")


def _min_blocks(ops: set[str]) -> str:
    """``, 1`` (one block per SM) for a kernel calling :data:`_FIXED_ENTRY_REGISTERS`."""
    return ", 1" if ops.intersection(_FIXED_ENTRY_REGISTERS) else ""


class CudaCodegen:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.helpers: list[str] = []
        self.ops: set[str] = set()  # the intrinsics the body calls

    # -- expressions ---------------------------------------------------------------
    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return self._const(e)
        if isinstance(e, Var):
            return e.name
        if isinstance(e, BinOp):
            if e.op in _BITWISE:
                a, b = self._bits(e.a), self._bits(e.b)
            else:
                a, b = self._operand(e.a), self._operand(e.b)
            if e.op in ("min", "max"):
                return f"{e.op}({a}, {b})"
            return f"({a} {_C_OPS.get(e.op, e.op)} {b})"
        if isinstance(e, UnOp):
            return f"({e.op}{self.expr(e.a)})"
        if isinstance(e, Cast):
            return self._cast(e)
        if isinstance(e, Select):
            return f"({self.expr(e.cond)} ? {self.expr(e.a)} : {self.expr(e.b)})"
        if isinstance(e, Load):
            return f"{e.buffer.name}[{self.expr(e.index)}]"
        if isinstance(e, Call):
            return self._call(e)
        raise CodegenError(f"cannot lower expression {type(e).__name__}")

    def _const(self, e: Const, bits: bool = False) -> str:
        """A literal. Bit patterns print in hex: unsigned constants of 2**16 and up
        (descriptors, masks) and every integer operand of ``&``, ``|``, ``^``."""
        if e.dtype == DataType("bool"):
            return "true" if e.value else "false"
        if isinstance(e.value, float):
            return f"{e.value!r}f"
        unsigned = e.dtype.name.startswith("uint")
        if e.value >= 0 and (bits or (unsigned and e.value >= 1 << 16)):
            return f"{e.value:#x}{e.dtype.literal_suffix}"
        return f"{e.value}{e.dtype.literal_suffix}"

    def _bits(self, e: Expr) -> str:
        return self._const(e, bits=True) if isinstance(e, Const) else self._operand(e)

    def _operand(self, e: Expr) -> str:
        """16-bit floats are storage types in C++: arithmetic happens on their float value."""
        if e.dtype.name in _FLOAT16:
            return f"{_FLOAT16[e.dtype.name][0]}({self.expr(e)})"
        return self.expr(e)

    def _cast(self, e: Cast) -> str:
        src, dst = e.a.dtype.name, e.dtype.name
        inner = self.expr(e.a)
        if src == dst:
            return inner
        if dst in _FLOAT16:
            value = self._operand(e.a) if src in _FLOAT16 else f"(float)({inner})"
            return f"{_FLOAT16[dst][1]}({value})"
        if src in _FLOAT16:
            return f"({e.dtype.cuda_type})({_FLOAT16[src][0]}({inner}))"
        return f"(({e.dtype.cuda_type})({inner}))"

    def _call(self, call: Call) -> str:
        intrinsic = INTRINSICS.get(call.op)
        if intrinsic is None:
            raise CodegenError(f"no CUDA lowering for intrinsic {call.op!r}")
        if intrinsic.helper and intrinsic.helper not in self.helpers:
            self.helpers.append(intrinsic.helper)
        self.ops.add(call.op)
        return intrinsic.lower(call, self)

    # -- statements -------------------------------------------------------------------
    def stmt(self, s: Stmt, depth: int) -> list[str]:
        pad = "  " * depth
        if isinstance(s, SeqStmt):
            return [line for st in s.stmts for line in self.stmt(st, depth)]
        if isinstance(s, ExprStmt):
            return [f"{pad}{self.expr(s.expr)};"]
        if isinstance(s, Store):
            return [f"{pad}{s.buffer.name}[{self.expr(s.index)}] = {self.expr(s.value)};"]
        if isinstance(s, LetStmt):
            return [f"{pad}{s.var.dtype.cuda_type} {s.var.name} = {self.expr(s.value)};"]
        if isinstance(s, DeclBuffer):
            return self._decl(s, pad)
        if isinstance(s, Comment):
            return [f"{pad}// {s.text}"]
        if isinstance(s, PhaseStmt):  # a simulator annotation: the body, unchanged
            return self.stmt(s.body, depth)
        if isinstance(s, IfThenElse):
            out = [f"{pad}if ({self.expr(s.cond)}) {{"] + self.stmt(s.then, depth + 1)
            if s.else_ is not None:
                out += [f"{pad}}} else {{"] + self.stmt(s.else_, depth + 1)
            return out + [f"{pad}}}"]
        if isinstance(s, For):
            v = s.var.name
            start, stop = self.expr(s.start), self.expr(s.start + s.extent)
            head = f"{pad}for (int {v} = {start}; {v} < {stop}; ++{v}) {{"
            pragma = [f"{pad}#pragma unroll"] if s.kind == "unroll" else []
            return pragma + [head] + self.stmt(s.body, depth + 1) + [f"{pad}}}"]
        raise CodegenError(f"cannot lower statement {type(s).__name__}")

    def _decl(self, s: DeclBuffer, pad: str) -> list[str]:
        b = s.buffer
        ctype = b.dtype.cuda_type
        note = [
            f"{pad}// {b.name}: {'x'.join(map(str, b.shape))} {b.dtype.name}"
            + (f", {s.comment}" if s.comment else "")
        ]
        if b.scope == "local":
            return [f"{pad}{ctype} {b.name}[{math.prod(b.shape)}];"]
        return note + [
            f"{pad}{ctype}* {b.name} = reinterpret_cast<{ctype}*>({b.region} + {b.byte_offset});"
        ]

    # -- kernel ---------------------------------------------------------------------------
    def params(self) -> list[str]:
        out = []
        for p in self.kernel.params:
            if p.kind == "buffer":
                out.append(f"{p.value.dtype.cuda_type}* __restrict__ {p.name}")
            elif p.kind == "scalar":
                out.append(f"{p.value.dtype.cuda_type} {p.name}")
            else:
                out.append(f"const __grid_constant__ tm_tensormap {p.name}")
        return out

    def source(self) -> str:
        k = self.kernel
        body = self.stmt(k.body, 1)
        threads = k.block[0] * k.block[1] * k.block[2]
        attrs = f"__launch_bounds__({threads}{_min_blocks(self.ops)}) "
        if k.cluster:
            attrs += f"__cluster_dims__({k.cluster[0]}, {k.cluster[1]}, {k.cluster[2]}) "
        head = [
            f"// {k.name}: generated by tilemem {__version__} for {k.target}",
            f"// grid {k.grid}, block {k.block}"
            + (f", cluster {k.cluster}" if k.cluster else "")
            + f", {k.dyn_smem_bytes} bytes of dynamic shared memory",
            PRELUDE,
        ]
        head += self.helpers
        sig = f'extern "C" __global__ void {attrs}{k.name}({", ".join(self.params())}) {{'
        region = []
        if k.regions:
            region = [
                "  // the block's dynamic shared memory; pool offsets are relative to it, and "
                "swizzled",
                "  // operands rely on its 1024-byte alignment",
                f"  extern __shared__ __align__(1024) uint8_t {k.regions[0]}[];",
            ]
        return "\n".join(head + [sig] + region + body + ["}", ""])


def generate(kernel: Kernel) -> str:
    """CUDA C++ source of ``kernel``: the prelude, helpers it uses, and the kernel function."""
    return CudaCodegen(kernel).source()
