"""Register budgets and register-to-shared stores of Hopper warpgroups (PTX ISA 9.0:
"setmaxnreg", "stmatrix")."""

from __future__ import annotations

from ..nodes import IRError, convert
from .registry import asm, intrinsic
from .thread import shared_operand


def _setmaxnreg_count(count: int):
    """``count`` in [24, 256] and a multiple of 8 (PTX ISA, "setmaxnreg")."""
    if isinstance(count, bool) or not isinstance(count, int) or not 24 <= count <= 256 or count % 8:
        raise IRError(f"setmaxnreg takes a multiple of 8 in [24, 256], got {count!r}")
    return (), (("count", count),)


def _lower_setmaxnreg(action: str):
    return lambda call, gen: asm(f"setmaxnreg.{action}.sync.aligned.u32 {call.attr('count')};")


@intrinsic("ptx.setmaxnreg.inc", feature="setmaxnreg", lower=_lower_setmaxnreg("inc"))
def setmaxnreg_inc(count: int):
    """Raise the warpgroup's per-thread register budget to ``count``; every thread of the
    warpgroup executes it. It takes effect only under a register cap at kernel entry
    (``__launch_bounds__``, which every tilemem kernel carries)."""
    return _setmaxnreg_count(count)


@intrinsic("ptx.setmaxnreg.dec", feature="setmaxnreg", lower=_lower_setmaxnreg("dec"))
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


@intrinsic(
    "ptx.stmatrix_x4",
    feature="stmatrix",
    instruction="stmatrix.sync.aligned.m8n8.x4",
    lower=_lower_stmatrix_x4,
)
def stmatrix_x4(addr, words):
    """Four 8x8 b16 matrices to shared memory: lanes 8i..8i+7 give the 16-byte row addresses of
    matrix i, and each lane's word ``w_i`` holds its two elements of matrix i (row lane / 4,
    columns 2 (lane % 4) and +1), the layout of a wgmma accumulator fragment."""
    words = tuple(convert(w) for w in words)
    if len(words) != 4:
        raise IRError(f"stmatrix .x4 stores four 32-bit words per thread, got {len(words)}")
    return (shared_operand(addr), *words), ()
