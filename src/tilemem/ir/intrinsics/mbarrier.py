"""mbarriers and the fences around them (PTX ISA 9.0: "mbarrier", "membar/fence")."""

from __future__ import annotations

import numpy as np

from ..nodes import BOOL, convert
from .registry import SimContext, asm, intrinsic
from .thread import shared_operand

_MBARRIER_WAIT = r"""__device__ __forceinline__ void
tm_mbarrier_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "TM_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra TM_WAIT;\n"
      "}\n" :: "r"(bar), "r"(parity) : "memory");
}
"""

_MBARRIER_TRY_WAIT = r"""__device__ __forceinline__ bool
tm_mbarrier_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}
"""


def _per_barrier(ctx: SimContext, *operands: int):
    """(values..., lanes) for each distinct tuple of the operands over the active lanes: each
    thread of a warp executes the instruction once."""
    columns = np.stack([ctx.value(i).astype(np.int64) for i in operands], axis=1)[ctx.active]
    keys, counts = np.unique(columns, axis=0, return_counts=True)
    return [(tuple(int(v) for v in k), int(n)) for k, n in zip(keys, counts)]


def _sim_init(ctx: SimContext, call) -> None:
    """``mbarrier.init``: phase 0, ``count`` pending arrivals, tx-count 0."""
    for (bar, count), _ in _per_barrier(ctx, 0, 1):
        ctx.mbarrier_init(bar, count)


def _sim_arrive(ctx: SimContext, call) -> None:
    """Each active thread arrives once."""
    for (bar,), n in _per_barrier(ctx, 0):
        ctx.mbarrier_arrive(bar, n)


def _sim_arrive_expect_tx(ctx: SimContext, call) -> None:
    """Each active thread raises the tx-count by ``tx_bytes``, then arrives."""
    for (bar, tx), n in _per_barrier(ctx, 0, 1):
        ctx.mbarrier_arrive(bar, n, tx=tx * n)


def _sim_wait(ctx: SimContext, call):
    """Block until the phase of the given parity completes (``try_wait`` spun to success)."""
    for (bar, parity), _ in _per_barrier(ctx, 0, 1):
        yield from ctx.mbarrier_wait(bar, parity & 1)
    return True


@intrinsic(
    "ptx.mbarrier.init",
    feature="mbarrier",
    instruction="mbarrier.init",
    lower=lambda call, gen: asm(
        "mbarrier.init.shared::cta.b64 [%0], %1;",
        "",
        f'"r"({gen.expr(call.args[0])}), "r"((uint32_t)({gen.expr(call.args[1])}))',
    ),
    sim=_sim_init,
)
def mbarrier_init(bar, count):
    return (shared_operand(bar), convert(count)), ()


@intrinsic(
    "ptx.mbarrier.arrive",
    feature="mbarrier",
    instruction="mbarrier.arrive",
    lower=lambda call, gen: asm(
        "{\\n.reg .b64 st;\\nmbarrier.arrive.shared::cta.b64 st, [%0];\\n}",
        "",
        f'"r"({gen.expr(call.args[0])})',
    ),
    sim=_sim_arrive,
)
def mbarrier_arrive(bar):
    return (shared_operand(bar),), ()


@intrinsic(
    "ptx.mbarrier.arrive_expect_tx",
    feature="mbarrier.tx",
    instruction="mbarrier.arrive.expect_tx",
    lower=lambda call, gen: asm(
        "{\\n.reg .b64 st;\\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\\n}",
        "",
        f'"r"({gen.expr(call.args[0])}), "r"((uint32_t)({gen.expr(call.args[1])}))',
    ),
    sim=_sim_arrive_expect_tx,
)
def mbarrier_arrive_expect_tx(bar, tx_bytes):
    return (shared_operand(bar), convert(tx_bytes)), ()


@intrinsic(
    "ptx.mbarrier.try_wait_parity",
    feature="mbarrier.tx",
    instruction="mbarrier.try_wait.parity",
    lower=lambda call, gen: (
        f"tm_mbarrier_try_wait({gen.expr(call.args[0])}, (uint32_t)({gen.expr(call.args[1])}))"
    ),
    helper=_MBARRIER_TRY_WAIT,
    value=BOOL,
    sim=_sim_wait,  # a failing try_wait is spun on: the warp blocks until it would succeed
)
def mbarrier_try_wait_parity(bar, parity):
    return (shared_operand(bar), convert(parity)), ()


@intrinsic(
    "ptx.mbarrier.wait",
    feature="mbarrier.tx",
    instruction="mbarrier.try_wait.parity",
    lower=lambda call, gen: (
        f"tm_mbarrier_wait({gen.expr(call.args[0])}, (uint32_t)({gen.expr(call.args[1])}))"
    ),
    helper=_MBARRIER_WAIT,
    sim=_sim_wait,
)
def mbarrier_wait(bar, parity):
    """Spin on ``mbarrier.try_wait.parity`` until the phase with ``parity`` completes."""
    return (shared_operand(bar), convert(parity)), ()


@intrinsic(
    "ptx.fence.proxy_async_shared_cta",
    feature="fence.proxy.async",
    instruction="fence.proxy.async.shared::cta",
    ptx="fence.proxy.async.shared::cta;",
    sim=lambda ctx, call: ctx.fence("proxy.async"),
)
def fence_proxy_async_shared_cta():
    return (), ()


@intrinsic(
    "ptx.fence.mbarrier_init",
    feature="mbarrier.tx",
    instruction="fence.mbarrier_init.release.cluster",
    ptx="fence.mbarrier_init.release.cluster;",
    sim=lambda ctx, call: None,  # inits are visible once the barrier after them is passed
)
def fence_mbarrier_init():
    return (), ()
