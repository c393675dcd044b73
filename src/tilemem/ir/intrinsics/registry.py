"""One declaration per instruction, from which everything else is derived.

An instruction is declared once, with :func:`intrinsic`, next to the function
that checks its arguments::

    @intrinsic("ptx.wgmma.fence", feature="wgmma", ptx="wgmma.fence.sync.aligned;")
    def wgmma_fence():
        return (), ()

The declaration names the IR op (also its path under ``T``: ``T.ptx.wgmma.fence``),
the target feature it needs (``Target.require``), how to lower it to CUDA C++
(``ptx=`` for a fixed asm statement, ``lower=`` for anything with operands) and
an optional device ``helper`` function the lowering calls. From it come the
function kernels call, the codegen's lowering table (:data:`INTRINSICS`), the
``T.cuda`` / ``T.ptx`` namespaces (:data:`LANGUAGE`) and the helpers the
generated source includes. Functions built from several instructions
(``T.ptx.tma.load_tile``) register under ``T`` with :func:`expose`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ...dtype import DataType
from ...errors import IRError
from ...validate import check_int
from ..builder import current
from ..nodes import INT32, Call, Expr, ExprStmt


class Lowering(Protocol):
    """What a lowering gets from the code generator."""

    def expr(self, e: Expr) -> str: ...


LowerFn = Callable[[Call, Lowering], str]


@dataclass(frozen=True)
class Intrinsic:
    """One instruction: its IR op, target requirement, CUDA C++ lowering and device helper."""

    op: str  # IR op name and path under T ("ptx.mbarrier.arrive")
    feature: str | None  # Target feature it needs (None: every target)
    instruction: str  # its name in errors ("mbarrier.arrive")
    lower: LowerFn
    helper: str = ""  # C++ device function the lowering calls, included once per kernel
    value: DataType | None = None  # result type of a value-producing op; None for statements


INTRINSICS: dict[str, Intrinsic] = {}  # by op
LANGUAGE: dict[str, Callable[..., Any]] = {}  # T path -> function


def pending_groups(n: object, instruction: str) -> int:
    """The ``N`` of a ``wait_group N`` instruction: an integer constant >= 0 (PTX ISA), checked
    here so that 2.7 or True is refused rather than rounded into the kernel."""
    return check_int(n, f"{instruction} N", minimum=0, maximum=(1 << 31) - 1, error=IRError)


def asm(text: str, outputs: str = "", inputs: str = "", clobber: str = '"memory"') -> str:
    """``asm volatile`` with GCC-style operand lists (PTX ISA, "Inline PTX Assembly")."""
    return f'asm volatile("{text}" : {outputs} : {inputs} : {clobber})'


def expose(path: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a kernel-language function under ``T.<path>``."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if path in LANGUAGE:
            raise ValueError(f"T.{path} is declared twice")
        LANGUAGE[path] = fn
        return fn

    return wrap


def intrinsic(
    op: str,
    *,
    feature: str | None = None,
    instruction: str | None = None,
    ptx: str | None = None,
    lower: LowerFn | None = None,
    helper: str = "",
    value: DataType | None = None,
    public: bool = True,
) -> Callable[[Callable[..., tuple]], Callable[..., Any]]:
    """Declare the instruction ``op``; the decorated function returns ``(args, attrs)``.

    The returned function validates its arguments (the decorated body), checks the
    kernel's target has ``feature``, then emits ``ExprStmt(Call(op, args, attrs))``
    or, for ``value=dtype``, returns the ``Call``. ``public=False`` keeps it out of
    ``T`` (a building block of other functions).
    """
    if (ptx is None) == (lower is None):
        raise ValueError(f"{op}: give exactly one of ptx= (a fixed asm statement) or lower=")
    if op in INTRINSICS:
        raise ValueError(f"intrinsic {op!r} is declared twice")
    text = ptx
    lowering: LowerFn = lower if lower is not None else (lambda call, gen: asm(str(text)))
    spec = Intrinsic(op, feature, instruction or op.split(".", 1)[1], lowering, helper, value)
    INTRINSICS[op] = spec

    def wrap(fn: Callable[..., tuple]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            operands, attrs = fn(*args, **kwargs)
            node = Call(op, tuple(operands), value or INT32, tuple(attrs))
            if feature is not None or value is None:
                builder = current()
                if feature is not None:
                    builder.target.require(feature, spec.instruction)
                if value is None:
                    builder.emit(ExprStmt(node))
                    return None
            return node

        call.intrinsic = spec  # type: ignore[attr-defined]
        if public:
            expose(op)(call)
        return call

    return wrap
