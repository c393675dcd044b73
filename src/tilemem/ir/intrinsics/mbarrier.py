"""mbarriers and the fences around them (PTX ISA 9.0: "mbarrier", "membar/fence")."""

from __future__ import annotations

from ..nodes import BOOL, convert
from .registry import asm, intrinsic
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


@intrinsic(
    "ptx.mbarrier.init",
    feature="mbarrier",
    instruction="mbarrier.init",
    lower=lambda call, gen: asm(
        "mbarrier.init.shared::cta.b64 [%0], %1;",
        "",
        f'"r"({gen.expr(call.args[0])}), "r"((uint32_t)({gen.expr(call.args[1])}))',
    ),
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
)
def mbarrier_wait(bar, parity):
    """Spin on ``mbarrier.try_wait.parity`` until the phase with ``parity`` completes."""
    return (shared_operand(bar), convert(parity)), ()


@intrinsic(
    "ptx.fence.proxy_async_shared_cta",
    feature="fence.proxy.async",
    instruction="fence.proxy.async.shared::cta",
    ptx="fence.proxy.async.shared::cta;",
)
def fence_proxy_async_shared_cta():
    return (), ()


@intrinsic(
    "ptx.fence.mbarrier_init",
    feature="mbarrier.tx",
    instruction="fence.mbarrier_init.release.cluster",
    ptx="fence.mbarrier_init.release.cluster;",
)
def fence_mbarrier_init():
    return (), ()
