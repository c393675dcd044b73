"""Global memory shared between CTAs: an atomic counter, the gpu-scope fence around it and
a wait for a counter to reach a value.

PTX ISA 9.0: ``atom`` (".sem = .relaxed | .acquire | .release | .acq_rel", ".scope = .cta |
.cluster | .gpu | .sys", sm_70 and later), ``ld`` (".sem = .relaxed | .acquire", the same
scopes) and ``membar/fence`` (``fence.acq_rel.gpu``); the "Memory Consistency Model" chapter
defines what they order. Every target tilemem knows (sm_80 and later) has them.

The pattern they serve is the last-arriver handshake of a split reduction: each CTA of a group
writes its share, fences, synchronises its threads with ``bar.sync`` and lets one thread add
1 to the group's counter with ``atom.acq_rel.gpu``; the thread that reads ``count - 1`` knows
every other share is written (the acquire half of its atomic), and after a ``bar.sync`` its
CTA reads them. No CTA ever waits for another, so the handshake needs no co-residency.
(The Hopper GEMM's split-K measured slower this way than with its separate reduction
kernel, which spreads the reading over every SM: docs/PERFORMANCE.md, "GEMM".)

The other pattern is a CTA that waits for a named peer (the stream-K GEMM's fixup): the peer
writes, synchronises its threads, fences and adds 1 to its flag; the waiting CTA's thread
spins on ``ld.acquire.gpu`` until the flag reaches 1 (:func:`wait_ge_acquire_gpu`), then
``bar.sync`` hands what the acquire made visible to the other threads. A CTA waiting for one
that is not resident waits for ever: such a kernel is correct only while every CTA it waits
for runs at the same time (a grid of at most one CTA per SM, and waits only on CTAs with a
higher index, which the hardware starts no later).

In the simulator the atomic is what orders: its release half stores the issuing warp's
happens-before knowledge with the counter's element, its acquire half joins what earlier
atomics on that element stored. The fence adds nothing to that model (it is the hardware
detail that keeps the plain stores before the ``bar.sync`` visible at gpu scope), so it has
no simulated effect; a kernel that leaves it out still runs without hazards in the
simulator, and the generated-source tests pin it.
"""

from __future__ import annotations

from ...errors import IRError
from ...validate import is_int
from ..builder import GlobalBuffer, let
from ..nodes import UINT32, Expr, Var, convert
from .registry import SimContext, expose, intrinsic

_ATOM_ADD = r"""__device__ __forceinline__ uint32_t
tm_atom_add_acq_rel_gpu(uint32_t* address, uint32_t value) {
  uint32_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old) : "l"(address), "r"(value) : "memory");
  return old;
}
"""


def _sim_atom_add(ctx: SimContext, call):
    """Each active lane adds its value in lane order and gets the element's previous value."""
    return ctx.global_atomic_add(call.args[0], ctx.value(1), ctx.value(2))


@intrinsic(
    "ptx.atom.add_acq_rel_gpu",
    instruction="atom.acq_rel.gpu.global.add.u32",
    lower=lambda call, gen: (
        f"tm_atom_add_acq_rel_gpu(&{call.args[0].name}[{gen.expr(call.args[1])}], "
        f"(uint32_t)({gen.expr(call.args[2])}))"
    ),
    helper=_ATOM_ADD,
    value=UINT32,
    public=False,  # T.ptx.atom.add_acq_rel_gpu below: issued where it is called
    sim=_sim_atom_add,
)
def _atom_add_call(buffer, index, value):
    return _counter_operands(buffer, index, value, "atom.add")


def _counter_operands(buffer, index, value, op: str):
    """(buffer, flat index, uint32 value) of an instruction on a global uint32 counter."""
    if not isinstance(buffer, GlobalBuffer) or buffer.var.scope != "global":
        raise IRError(
            f"{op} takes a global uint32 buffer (a T.Buffer kernel parameter), got "
            f"{type(buffer).__name__}: pass the parameter itself"
        )
    if buffer.dtype != UINT32:
        raise IRError(
            f"{op} here works on uint32 counters, {buffer.name} holds {buffer.dtype.name}: "
            "declare the counters as T.Buffer(..., 'uint32')"
        )
    indices = index if isinstance(index, tuple) else (index,)
    for i in indices:
        _integer(i, "index", op)
    return (buffer.var, buffer.flat_index(index), convert(_integer(value, "value", op), UINT32)), ()


def _integer(x, what: str, op: str = "atom.add"):
    """``x`` itself if it is an integer: a Python int in uint32's range (the add is 32-bit
    unsigned, ``atom.add.u32``) or an integer-typed kernel expression; IRError otherwise (a
    bool, a float or a float expression would be cast silently in C++)."""
    if is_int(x):
        if what == "value" and not 0 <= x < 1 << 32:
            raise IRError(
                f"{op}'s value is a 32-bit unsigned integer, got {x}: give "
                f"0 <= value < 2**32 (to subtract n, add 2**32 - n)"
            )
        return x
    e = x if isinstance(x, Expr) else None
    if e is None or not e.dtype.name.startswith(("int", "uint")):
        kind = e.dtype.name if e is not None else type(x).__name__
        raise IRError(
            f"{op}'s {what} must be an integer (a Python int or an integer kernel "
            f"expression), got {kind} {x!r}: cast it with T.cast(..., 'int32')"
        )
    return e


@expose("ptx.atom.add_acq_rel_gpu")
def atom_add_acq_rel_gpu(buffer, index, value) -> Var:
    """``buffer[index] += value`` atomically, returning the previous value (a ``uint32``
    variable); acquire and release at gpu scope. ``buffer`` is a uint32 kernel parameter
    (``T.Buffer``). The atomic is issued where this is called, once, whether or not its value
    is used (a value-producing instruction that is only built into an expression would run
    where the expression is evaluated, or never)."""
    return let("atom_old", _atom_add_call(buffer, index, value))


@intrinsic(
    "ptx.fence.acq_rel_gpu",
    instruction="fence.acq_rel.gpu",
    ptx="fence.acq_rel.gpu;",
    sim=lambda ctx, call: None,  # ordering comes from the atomic (module docstring)
)
def fence_acq_rel_gpu():
    return (), ()


_WAIT_GE = r"""__device__ __forceinline__ void
tm_wait_ge_acquire_gpu(const uint32_t* address, uint32_t value) {
  uint32_t seen;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(address) : "memory");
  } while (seen < value);
}
"""


def _sim_wait_ge(ctx: SimContext, call):
    """Each active lane blocks until its element is at least its value, then acquires what
    the atomics on that element released."""
    yield from ctx.global_wait_ge(call.args[0], ctx.value(1), ctx.value(2))


@intrinsic(
    "ptx.ld.wait_ge_acquire_gpu",
    instruction="ld.acquire.gpu.global.u32",
    lower=lambda call, gen: (
        f"tm_wait_ge_acquire_gpu(&{call.args[0].name}[{gen.expr(call.args[1])}], "
        f"(uint32_t)({gen.expr(call.args[2])}))"
    ),
    helper=_WAIT_GE,
    sim=_sim_wait_ge,
)
def wait_ge_acquire_gpu(buffer, index, value):
    """Spin until ``buffer[index] >= value`` (unsigned), reading with ``ld.acquire.gpu``:
    what the thread reads afterwards includes every write released to that element (an
    :func:`atom_add_acq_rel_gpu` after the writer's ``bar.sync`` and fence). Every active
    thread spins; call it from one thread and ``bar.sync`` after it. ``buffer`` is a uint32
    kernel parameter (``T.Buffer``), ``value`` a uint32."""
    return _counter_operands(buffer, index, value, "ld.acquire (wait)")
