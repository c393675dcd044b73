"""CUDA C++ for each intrinsic op of ``ir/intrinsics.py``.

A lowering takes the Call and the code generator (for its arguments) and
returns a C++ expression (value ops) or statement text (``;`` added by the caller).
PTX syntax follows the PTX ISA 9.0 instruction pages named in each entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.nodes import Call


def _asm(text: str, outputs: str = "", inputs: str = "", clobber: str = '"memory"') -> str:
    return f'asm volatile("{text}" : {outputs} : {inputs} : {clobber})'


def _mbarrier_init(call, gen):
    bar, count = call.args
    return _asm(
        "mbarrier.init.shared::cta.b64 [%0], %1;",
        "",
        f'"r"({gen.expr(bar)}), "r"((uint32_t)({gen.expr(count)}))',
    )


def _mbarrier_arrive(call, gen):
    return _asm(
        "{\\n.reg .b64 st;\\nmbarrier.arrive.shared::cta.b64 st, [%0];\\n}",
        "",
        f'"r"({gen.expr(call.args[0])})',
    )


def _mbarrier_expect_tx(call, gen):
    bar, tx = call.args
    return _asm(
        "{\\n.reg .b64 st;\\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\\n}",
        "",
        f'"r"({gen.expr(bar)}), "r"((uint32_t)({gen.expr(tx)}))',
    )


def _mbarrier_try_wait(call, gen):
    gen.need("mbarrier_try_wait")
    bar, parity = call.args
    return f"tm_mbarrier_try_wait({gen.expr(bar)}, (uint32_t)({gen.expr(parity)}))"


def _mbarrier_wait(call, gen):
    gen.need("mbarrier_wait")
    bar, parity = call.args
    return f"tm_mbarrier_wait({gen.expr(bar)}, (uint32_t)({gen.expr(parity)}))"


def _tma_load(call, gen):
    rank = call.attr("rank")
    tmap, dst, bar, *rest = call.args
    coords = rest[:rank]
    cs = ", ".join(f"%{3 + i}" for i in range(rank))
    ins = [f'"l"(&{tmap.name})', f'"r"({gen.expr(dst)})', f'"r"({gen.expr(bar)})']
    ins += [f'"r"((int32_t)({gen.expr(c)}))' for c in coords]
    if call.attr("multicast"):
        ins.append(f'"h"((uint16_t)({gen.expr(rest[rank])}))')
        text = (
            f"cp.async.bulk.tensor.{rank}d.shared::cluster.global"
            ".mbarrier::complete_tx::bytes.multicast::cluster"
            f" [%1], [%0, {{{cs}}}], [%2], %{3 + rank};"
        )
    else:
        text = (
            f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes"
            f" [%1], [%0, {{{cs}}}], [%2];"
        )
    return _asm(text, "", ", ".join(ins))


def _tma_store(call, gen):
    rank = call.attr("rank")
    tmap, src, *coords = call.args
    cs = ", ".join(f"%{2 + i}" for i in range(rank))
    ins = [f'"l"(&{tmap.name})', f'"r"({gen.expr(src)})'] + [
        f'"r"((int32_t)({gen.expr(c)}))' for c in coords
    ]
    return _asm(
        f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%0, {{{cs}}}], [%1];",
        "",
        ", ".join(ins),
    )


def _wgmma_mma(call, gen):
    acc, a_desc, b_desc, scale_d = call.args
    n, dtype = call.attr("n"), call.attr("dtype")
    ab = {"bfloat16": "bf16", "float16": "f16"}[dtype]
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    text = (
        "{\\n.reg .pred p;\\n"
        f"setp.ne.b32 p, %{regs + 2}, 0;\\n"
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {{{dlist}}}, "
        f"%{regs}, %{regs + 1}, p, 1, 1, 0, 0;\\n}}"
    )
    outs = ", ".join(f'"+f"({acc.name}[{i}])' for i in range(regs))
    ins = (
        f'"l"((uint64_t)({gen.expr(a_desc)})), "l"((uint64_t)({gen.expr(b_desc)})), '
        f'"r"((int32_t)({gen.expr(scale_d)}))'
    )
    return _asm(text, outs, ins)


def _tcgen05_alloc(call, gen):
    slot, ncols = call.args
    g = call.attr("cta_group")
    return _asm(
        f"tcgen05.alloc.cta_group::{g}.sync.aligned.shared::cta.b32 [%0], %1;",
        "",
        f'"r"({gen.expr(slot)}), "r"({gen.expr(ncols)})',
    )


def _tcgen05_dealloc(call, gen):
    taddr, ncols = call.args
    g = call.attr("cta_group")
    return _asm(
        f"tcgen05.dealloc.cta_group::{g}.sync.aligned.b32 %0, %1;",
        "",
        f'"r"({gen.expr(taddr)}), "r"({gen.expr(ncols)})',
    )


def _tcgen05_ld(call, gen):
    dst, taddr = call.args
    num = call.attr("num")
    regs = ", ".join(f"%{i}" for i in range(num))
    kind = "f" if dst.dtype.name == "float32" else "r"
    outs = ", ".join(f'"={kind}"({dst.name}[{i}])' for i in range(num))
    return _asm(
        f"tcgen05.ld.sync.aligned.32x32b.x{num}.b32 {{{regs}}}, [%{num}];",
        outs,
        f'"r"({gen.expr(taddr)})',
    )


def _tcgen05_st(call, gen):
    taddr, src = call.args
    num = call.attr("num")
    regs = ", ".join(f"%{i + 1}" for i in range(num))
    kind = "f" if src.dtype.name == "float32" else "r"
    ins = f'"r"({gen.expr(taddr)}), ' + ", ".join(f'"{kind}"({src.name}[{i}])' for i in range(num))
    return _asm(f"tcgen05.st.sync.aligned.32x32b.x{num}.b32 [%0], {{{regs}}};", "", ins)


def _tcgen05_mma(call, gen):
    d, a, b, idesc, acc = call.args
    g = call.attr("cta_group")
    a_operand, a_input = (
        ("[%1]", f'"r"({gen.expr(a)})')
        if call.attr("a_tmem")
        else ("%1", f'"l"((uint64_t)({gen.expr(a)}))')
    )
    text = (
        "{\\n.reg .pred p;\\n"
        "setp.ne.b32 p, %4, 0;\\n"
        f"tcgen05.mma.cta_group::{g}.kind::f16 [%0], {a_operand}, %2, %3, p;\\n}}"
    )
    ins = (
        f'"r"({gen.expr(d)}), {a_input}, "l"((uint64_t)({gen.expr(b)})), '
        f'"r"({gen.expr(idesc)}), "r"((int32_t)({gen.expr(acc)}))'
    )
    return _asm(text, "", ins)


def _tcgen05_commit(call, gen):
    g = call.attr("cta_group")
    return _asm(
        f"tcgen05.commit.cta_group::{g}.mbarrier::arrive::one.shared::cluster.b64 [%0];",
        "",
        f'"r"({gen.expr(call.args[0])})',
    )


def _stmatrix_x4(call, gen):
    addr, *words = call.args
    ins = [f'"r"({gen.expr(addr)})'] + [f'"r"((uint32_t)({gen.expr(w)}))' for w in words]
    return _asm(
        "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};", "", ", ".join(ins)
    )


def _named_barrier(call, gen):
    threads = call.attr("threads")
    if not call.args:
        return _asm(f"bar.sync {call.attr('id')}, {threads};")
    return _asm(f"bar.sync %0, {threads};", "", f'"r"({gen.expr(call.args[0])})')


def _simple(text: str) -> Callable:
    return lambda call, gen: _asm(text)


def _thread_idx(call, gen):
    return f"(int)threadIdx.{'xyz'[call.attr('axis')]}"


def _block_idx(call, gen):
    return f"(int)blockIdx.{'xyz'[call.attr('axis')]}"


def _grid_dim(call, gen):
    return f"(int)gridDim.{'xyz'[call.attr('axis')]}"


def _smem_addr(call, gen):
    var, index = call.args
    return f"tm_smem_addr((uint8_t*){var.name} + {gen.expr(index)})"  # index counts bytes


def _elect(call, gen):
    gen.need("elect_sync")
    return "tm_elect_sync()"


LOWER: dict[str, Callable[[Call, Any], str]] = {
    "cuda.thread_idx": _thread_idx,
    "cuda.block_idx": _block_idx,
    "cuda.grid_dim": _grid_dim,
    "cuda.smem_addr": _smem_addr,
    "cuda.syncthreads": lambda call, gen: "__syncthreads()",
    "cuda.syncwarp": lambda call, gen: f"__syncwarp({gen.expr(call.args[0])})",
    "cuda.named_barrier": _named_barrier,
    "cuda.pack_bf16x2": lambda call, gen: (
        f"((uint32_t)tm_f32_to_bf16({gen.expr(call.args[0])}) | "
        f"((uint32_t)tm_f32_to_bf16({gen.expr(call.args[1])}) << 16))"
    ),
    "ptx.elect_sync": _elect,
    "ptx.mbarrier.init": _mbarrier_init,
    "ptx.mbarrier.arrive": _mbarrier_arrive,
    "ptx.mbarrier.arrive_expect_tx": _mbarrier_expect_tx,
    "ptx.mbarrier.try_wait_parity": _mbarrier_try_wait,
    "ptx.mbarrier.wait_parity": _mbarrier_wait,
    "ptx.fence.proxy_async_shared_cta": _simple("fence.proxy.async.shared::cta;"),
    "ptx.fence.mbarrier_init": _simple("fence.mbarrier_init.release.cluster;"),
    "ptx.tma.load": _tma_load,
    "ptx.tma.store": _tma_store,
    "ptx.bulk.commit_group": _simple("cp.async.bulk.commit_group;"),
    "ptx.bulk.wait_group_read": lambda call, gen: _asm(
        f"cp.async.bulk.wait_group.read {call.attr('n')};"
    ),
    "ptx.bulk.wait_group": lambda call, gen: _asm(f"cp.async.bulk.wait_group {call.attr('n')};"),
    "ptx.setmaxnreg": lambda call, gen: _asm(
        f"setmaxnreg.{call.attr('action')}.sync.aligned.u32 {call.attr('count')};"
    ),
    "ptx.stmatrix_x4": _stmatrix_x4,
    "ptx.wgmma.fence": _simple("wgmma.fence.sync.aligned;"),
    "ptx.wgmma.commit_group": _simple("wgmma.commit_group.sync.aligned;"),
    "ptx.wgmma.wait_group": lambda call, gen: _asm(
        f"wgmma.wait_group.sync.aligned {call.attr('n')};"
    ),
    "ptx.wgmma.mma_async": _wgmma_mma,
    "ptx.tcgen05.alloc": _tcgen05_alloc,
    "ptx.tcgen05.dealloc": _tcgen05_dealloc,
    "ptx.tcgen05.relinquish": lambda call, gen: _asm(
        f"tcgen05.relinquish_alloc_permit.cta_group::{call.attr('cta_group')}.sync.aligned;"
    ),
    "ptx.tcgen05.fence_before": _simple("tcgen05.fence::before_thread_sync;"),
    "ptx.tcgen05.fence_after": _simple("tcgen05.fence::after_thread_sync;"),
    "ptx.tcgen05.ld": _tcgen05_ld,
    "ptx.tcgen05.st": _tcgen05_st,
    "ptx.tcgen05.wait_ld": _simple("tcgen05.wait::ld.sync.aligned;"),
    "ptx.tcgen05.wait_st": _simple("tcgen05.wait::st.sync.aligned;"),
    "ptx.tcgen05.mma": _tcgen05_mma,
    "ptx.tcgen05.commit": _tcgen05_commit,
}
