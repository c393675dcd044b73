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

The declaration also carries the instruction's semantics for the CPU simulator
(``sim=``, a :data:`SimFn` over a :class:`SimContext`): what it computes, which
memory it reads and writes, what it waits for. ``ir`` never imports the
simulator; ``tilemem.sim`` implements :class:`SimContext`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...dtype import DataType
from ...errors import IRError
from ...validate import check_int
from ..builder import current
from ..nodes import INT32, BufferVar, Call, Expr, ExprStmt

if TYPE_CHECKING:
    import numpy as np


class Lowering(Protocol):
    """What a lowering gets from the code generator."""

    def expr(self, e: Expr) -> str: ...


LowerFn = Callable[[Call, Lowering], str]


class SimWait(Protocol):
    """What a blocking semantic function yields (made by :meth:`SimContext.until`)."""

    what: str


class SimContext(Protocol):
    """What an instruction's semantic function (``sim=``) sees: one warp executing ``call``.

    **Calling convention.** ``sim(ctx, call)`` runs once per warp that reaches the
    instruction, for the warp's 32 lanes at once (numpy vectors of shape (32,)):

    - it returns ``None`` (a statement), or for a value-producing op (``value=dtype``)
      an array of shape (32,) (or a scalar, broadcast) of that dtype's numpy type
      (``int32``, ``uint32``, ``uint64``, ``bool``, ``float32``; 16-bit floats travel as
      ``float32``);
    - a *blocking* instruction is a generator function: ``yield ctx.until(ready, what)``
      suspends the warp until ``ready()`` is true (the scheduler runs other warps and
      completes asynchronous operations meanwhile; if nothing can make progress the run
      reports a ``"deadlock"`` naming ``what``); its ``return`` value is the result;
    - it raises :class:`tilemem.errors.SimError` for an instruction the hardware cannot
      execute at all (a misused operand), and calls :meth:`hazard` for a bug the hardware
      would execute silently.

    **Lanes.** :attr:`active` is the warp's active mask (lanes inside the enclosing
    branches); ``.sync.aligned`` instructions are executed by the warp as a whole.
    :meth:`value` gives argument ``i`` of ``call`` per lane; :meth:`uniform` the one value
    a warp-uniform operand (a descriptor, an address) must have.

    **Memory.** Every access goes through the context, which records it for hazard
    detection (happens-before with vector clocks: program order, mbarrier phases,
    barriers, asynchronous completion and its wait) and checks bounds, initialisation,
    proxies, TMEM allocation and phase lifetimes. Shared-memory addresses are absolute
    32-bit shared-window addresses of *this* CTA (what ``T.smem_addr`` computes);
    TMEM addresses are ``(lane << 16) | column`` as ``tcgen05.alloc`` returns them.
    Data travels as raw bytes (``uint8``) for shared memory and as 32-bit cells
    (``uint32``) for TMEM; registers as the local array's numpy type.

    **Asynchrony.** :meth:`issue` queues an operation of this warp on a named queue
    ("wgmma", "bulk", "tma", "tcgen05", "tcgen05.ld", "tcgen05.st"); the simulator runs
    ``complete(actx)`` at some point after the issue and no later than the wait that
    orders it (``schedule="adversarial"``: as late as the program allows). ``actx`` is a
    context of the same protocol whose accesses belong to the asynchronous operation
    (the async proxy, the issuing instruction's phase and source line, the issuer's
    happens-before knowledge at issue) and whose :meth:`mbarrier_arrive` /
    :meth:`complete_tx` release what the operation did. ``complete`` must not block.
    Operations of one queue of one warp complete in issue order. :meth:`commit_group`
    closes the open group of a queue; :meth:`wait_group` completes all but the newest
    ``n`` closed groups (``n=None``: every operation issued so far, committed or not) and
    makes their effects happen-before the warp's next instruction.
    """

    lanes: np.ndarray  # int32 (32,): lane index 0..31
    active: np.ndarray  # bool (32,): lanes executing this instruction
    thread_ids: np.ndarray  # int32 (32,): linear thread index in the CTA of each lane
    warp: int  # warp index in the CTA (linear thread index // 32)
    cta: tuple  # blockIdx (x, y, z)
    rank: int  # %cluster_ctarank (0 without clusters)
    cluster_size: int  # CTAs per cluster (1 without clusters)
    block_dim: tuple  # blockDim (x, y, z)
    grid_dim: tuple  # gridDim (x, y, z)

    # -- operands ----------------------------------------------------------------------
    def value(self, i: int) -> np.ndarray:
        """``call.args[i]`` evaluated per lane: shape (32,), its dtype's numpy type
        (inactive lanes hold unspecified values)."""
        ...

    def uniform(self, i: int) -> int:
        """``call.args[i]`` as one Python int, equal across active lanes (else SimError)."""
        ...

    # -- shared memory (this CTA's; ``rank`` names a cluster peer's) ------------------------
    def smem_read(self, addrs: np.ndarray, nbytes: int, *, rank: int | None = None) -> np.ndarray:
        """Bytes at shared-window addresses ``addrs`` (any shape, int64): uint8 of shape
        ``addrs.shape + (nbytes,)``. Reports uninitialised bytes, out-of-bounds, races,
        proxy and lifetime hazards."""
        ...

    def smem_write(self, addrs: np.ndarray, data: np.ndarray, *, rank: int | None = None) -> None:
        """Write ``data`` (uint8, shape ``addrs.shape + (nbytes,)``) at ``addrs``."""
        ...

    def shared_address(self, var: BufferVar) -> int:
        """Absolute shared-window address of shared buffer ``var``'s first byte."""
        ...

    # -- global memory (tensor maps) ------------------------------------------------------
    def tensor_map(self, i: int) -> Any:
        """The host tensor map bound to ``call.args[i]`` (``.plan``: dims, strides, box,
        swizzle, dtype; ``.array``: the numpy array it describes)."""
        ...

    def global_read(self, array: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Elements of a bound global ``array`` at flat element indices ``idx`` (its dtype)."""
        ...

    def global_write(self, array: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
        """Write elements (the array's dtype) at flat indices ``idx``."""
        ...

    def global_atomic_add(self, var: BufferVar, idx: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``atom.acq_rel.gpu.add`` on global ``var`` (a uint32 kernel parameter) at flat
        element indices ``idx``, lane by lane in lane order over the active lanes: each gets
        the element's previous value (uint32, shape (32,)). The acquire half makes what the
        earlier atomics on the element released happen before this warp's next instruction;
        the release half hands on what happens before this one. Atomics are not races with
        each other."""
        ...

    def global_wait_ge(
        self, var: BufferVar, idx: np.ndarray, values: np.ndarray
    ) -> Generator[SimWait, None, None]:
        """A generator: block until the element of global ``var`` (uint32) at each active
        lane's flat index ``idx`` is at least its value (unsigned), then acquire what the
        atomics on those elements released (``ld.acquire.gpu`` spun on)."""
        ...

    # -- registers (this warp's local arrays) ------------------------------------------------
    def regs_read(self, var: BufferVar) -> np.ndarray:
        """The warp's copy of local array ``var``: shape (32, *var.shape), its numpy type.
        Reading a register an asynchronous operation still writes is a ``"race"``."""
        ...

    def regs_write(
        self, var: BufferVar, values: np.ndarray, lanes: np.ndarray | None = None
    ) -> None:
        """Write ``values`` (shape (32, *var.shape)) into ``var`` for ``lanes`` (a bool mask;
        default :attr:`active`)."""
        ...

    # -- tensor memory (the SM's 128 lanes x 512 columns of 32-bit cells) ------------------
    def tmem_read(
        self, lanes: np.ndarray, cols: np.ndarray, *, rank: int | None = None
    ) -> np.ndarray:
        """Cells at TMEM ``lanes`` x ``cols`` (broadcast against each other): uint32. Reports
        accesses outside this CTA's allocation, after dealloc, uninitialised cells and races."""
        ...

    def tmem_write(
        self, lanes: np.ndarray, cols: np.ndarray, data: np.ndarray, *, rank: int | None = None
    ) -> None:
        """Write uint32 ``data`` (the broadcast shape of ``lanes`` and ``cols``); ``rank``
        names a cluster peer's TMEM (cta_group::2), as for shared memory."""
        ...

    def tmem_alloc(self, slot: int, ncols: int, cta_group: int) -> Generator[SimWait, None, int]:
        """``tcgen05.alloc``: ``base = yield from ctx.tmem_alloc(...)``. Blocks until ``ncols``
        contiguous columns are free on the SM (co-resident CTAs share 512; an over-subscribed
        kernel deadlocks), writes the base address to the shared slot ``slot``; checks sizes
        (power of two >= 32) and the relinquished permit (``"tmem-protocol"``)."""
        ...

    def tmem_dealloc(self, taddr: int, ncols: int, cta_group: int) -> None:
        """``tcgen05.dealloc``: frees the columns; dealloc by a warp other than the allocating
        one, of columns not allocated, or of a different size is ``"tmem-protocol"``."""
        ...

    def tmem_relinquish(self, cta_group: int) -> None:
        """``tcgen05.relinquish_alloc_permit``: this CTA allocates no more."""
        ...

    # -- barriers and mbarriers ----------------------------------------------------------------
    def barrier(self, barrier_id: int, threads: int | None) -> Generator[SimWait, None, None]:
        """``bar.sync id, threads`` (``threads=None``: every thread of the CTA):
        ``yield from ctx.barrier(...)``; what the arriving warps did happens before."""
        ...

    def cluster_arrive(self) -> None:
        """``barrier.cluster.arrive`` (release)."""
        ...

    def cluster_wait(self) -> Generator[SimWait, None, None]:
        """``barrier.cluster.wait`` (acquire): every warp of the cluster has arrived."""
        ...

    def mbarrier_init(self, bar: int, count: int) -> None:
        """``mbarrier.init``: phase 0 expecting ``count`` arrivals."""
        ...

    def mbarrier_wait(self, bar: int, parity: int) -> Generator[SimWait, None, bool]:
        """``yield from``: until the phase of ``parity`` completes; acquires its releases."""
        ...

    def mbarrier_arrive(
        self, bar: int, count: int = 1, *, tx: int = 0, rank: int | None = None
    ) -> None:
        """Arrive ``count`` times on the mbarrier at shared address ``bar`` (of cluster CTA
        ``rank``; default this CTA), after raising its expected transaction bytes by ``tx``;
        releases everything that happens-before this point to the waiter of the phase."""
        ...

    def complete_tx(self, bar: int, nbytes: int, *, rank: int | None = None) -> None:
        """``complete_tx::bytes``: the transaction count of ``bar`` drops by ``nbytes``."""
        ...

    # -- asynchronous operations ----------------------------------------------------------
    def issue(
        self,
        queue: str,
        complete: Callable[[SimContext], None],
        what: str,
        *,
        writes: tuple = (),
        split_write: bool = False,
    ) -> None:
        """Queue an asynchronous operation (``what`` names it in reports). ``writes``: the
        ``(local array, count)`` pairs of destination registers it fills (a tcgen05.ld, a
        wgmma accumulator): from the issue on they belong to the operation, so the warp's
        accesses to them before the wait that completes it are ``"race"`` hazards.
        ``split_write`` (a TMA store): its global writes are acquired only by a full
        ``wait_group``, not by one with ``reads_only``."""
        ...

    def commit_group(self, queue: str) -> None: ...

    def wait_group(self, queue: str, n: int | None, reads_only: bool = False) -> None: ...

    # -- blocking, fences, reports ----------------------------------------------------------
    def until(self, ready: Callable[[], bool], what: str) -> SimWait:
        """A wait to ``yield`` from a generator semantic function."""
        ...

    def fence(self, kind: str) -> None:
        """Record a fence: ``"proxy.async"`` orders this warp's generic accesses before its
        later async-proxy ones; ``"tcgen05.before"`` / ``"tcgen05.after"`` order tcgen05
        operations around a thread synchronisation."""
        ...

    def hazard(
        self, kind: str, message: str, *, space: str = "", buffer: str = "", where: str = ""
    ) -> None:
        """Report a hazard of ``kind`` (``"race"``, ``"proxy"``, ``"uninitialized"``,
        ``"out-of-bounds"``, ``"lifetime"``, ``"tmem-protocol"``, ``"mbarrier"``,
        ``"deadlock"``) at this instruction (its CTA, warp, lanes, phase, source line);
        ``message`` says what happened and the usual fix."""
        ...


SimFn = Callable[[SimContext, Call], Any]
"""An instruction's semantics: ``sim(ctx, call)`` (see :class:`SimContext`)."""


@dataclass(frozen=True)
class Intrinsic:
    """One instruction: its IR op, target requirement, CUDA C++ lowering and device helper."""

    op: str  # IR op name and path under T ("ptx.mbarrier.arrive")
    feature: str | None  # Target feature it needs (None: every target)
    instruction: str  # its name in errors ("mbarrier.arrive")
    lower: LowerFn
    helper: str = ""  # C++ device function the lowering calls, included once per kernel
    value: DataType | None = None  # result type of a value-producing op; None for statements
    sim: SimFn | None = None  # semantics for the CPU simulator


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
    sim: SimFn | None = None,
) -> Callable[[Callable[..., tuple]], Callable[..., Any]]:
    """Declare the instruction ``op``; the decorated function returns ``(args, attrs)``.

    The returned function validates its arguments (the decorated body), checks the
    kernel's target has ``feature``, then emits ``ExprStmt(Call(op, args, attrs))``
    or, for ``value=dtype``, returns the ``Call``. ``public=False`` keeps it out of
    ``T`` (a building block of other functions). ``sim`` is the instruction's semantics
    for ``tilemem.sim`` (a :data:`SimFn`); every instruction needs one to be simulated.
    """
    if (ptx is None) == (lower is None):
        raise ValueError(f"{op}: give exactly one of ptx= (a fixed asm statement) or lower=")
    if op in INTRINSICS:
        raise ValueError(f"intrinsic {op!r} is declared twice")
    text = ptx
    lowering: LowerFn = lower if lower is not None else (lambda call, gen: asm(str(text)))
    spec = Intrinsic(op, feature, instruction or op.split(".", 1)[1], lowering, helper, value, sim)
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
