"""Register budgets and register-to-shared stores of Hopper warpgroups (PTX ISA 9.0:
"setmaxnreg", "stmatrix")."""

from __future__ import annotations

import numpy as np

from ..nodes import IRError, convert
from .registry import SimContext, asm, intrinsic
from .thread import shared_operand


def _setmaxnreg_count(count: int):
    """``count`` in [24, 256] and a multiple of 8 (PTX ISA, "setmaxnreg")."""
    if isinstance(count, bool) or not isinstance(count, int) or not 24 <= count <= 256 or count % 8:
        raise IRError(f"setmaxnreg takes a multiple of 8 in [24, 256], got {count!r}")
    return (), (("count", count),)


def _lower_setmaxnreg(action: str):
    return lambda call, gen: asm(f"setmaxnreg.{action}.sync.aligned.u32 {call.attr('count')};")


def _sim_setmaxnreg(ctx: SimContext, call) -> None:
    """Register budgets change no values; the simulator only counts the instruction."""


@intrinsic(
    "ptx.setmaxnreg.inc",
    feature="setmaxnreg",
    lower=_lower_setmaxnreg("inc"),
    sim=_sim_setmaxnreg,
)
def setmaxnreg_inc(count: int):
    """Raise the warpgroup's per-thread register budget to ``count``; every thread of the
    warpgroup executes it. It takes effect only under a register cap at kernel entry
    (``__launch_bounds__``, which every tilemem kernel carries)."""
    return _setmaxnreg_count(count)


@intrinsic(
    "ptx.setmaxnreg.dec",
    feature="setmaxnreg",
    lower=_lower_setmaxnreg("dec"),
    sim=_sim_setmaxnreg,
)
def setmaxnreg_dec(count: int):
    """Lower the warpgroup's per-thread register budget to ``count``, releasing registers for
    other warpgroups' ``setmaxnreg.inc``."""
    return _setmaxnreg_count(count)


def _lower_stmatrix_x4(call, gen) -> str:
    addr, *words = call.args
    ins = [f'"r"({gen.expr(addr)})'] + [f'"r"((uint32_t)({gen.expr(w)}))' for w in words]
    return asm(
        "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};", "", ", ".join(ins)
    )


def _sim_stmatrix_x4(ctx: SimContext, call) -> None:
    """Matrix i's row r (16 bytes) goes to the address lane 8i + r gives; its 8 b16 elements
    come from lanes 4r .. 4r + 3, word i, low half first (PTX ISA 9.0, "stmatrix")."""
    addrs = ctx.value(0).astype(np.int64)  # (32,): lane 8i + r -> row r of matrix i
    words = np.stack([ctx.value(1 + i).astype(np.uint32) for i in range(4)])  # (4, 32)
    rows = words.reshape(4, 8, 4).view(np.uint8).reshape(4, 8, 16)  # matrix, row, bytes
    ctx.smem_write(addrs.reshape(4, 8), rows)


@intrinsic(
    "ptx.stmatrix_x4",
    feature="stmatrix",
    instruction="stmatrix.sync.aligned.m8n8.x4",
    lower=_lower_stmatrix_x4,
    sim=_sim_stmatrix_x4,
)
def stmatrix_x4(addr, words):
    """Four 8x8 b16 matrices to shared memory: lanes 8i..8i+7 give the 16-byte row addresses of
    matrix i, and each lane's word ``w_i`` holds its two elements of matrix i (row lane / 4,
    columns 2 (lane % 4) and +1), the layout of a wgmma accumulator fragment."""
    words = tuple(convert(w) for w in words)
    if len(words) != 4:
        raise IRError(f"stmatrix .x4 stores four 32-bit words per thread, got {len(words)}")
    return (shared_operand(addr), *words), ()
