"""Gluon kernels whose shared and tensor memory layouts come from tilemem, and that
``tilemem.interop.gluon.plan_of`` reads back as memory plans.

- ``matmul_sm100``: a 2-stage ring of A/B tiles (tilemem ``alloc_mma`` layouts through
  ``to_gluon``), tcgen05 MMA into a TMEM accumulator (``to_gluon`` of data path D);
- ``matmul_sm90``: the same ring feeding wgmma;
- ``attention_sm100``: S = Q K^T in TMEM, P = softmax(S) in bf16 written over S through
  ``reinterpret`` (FA4's and Gluon's attention overlay), O += P V;
- ``too_big_sm90``: a 4-stage 128x128x128 bf16 ring, more shared memory than sm_90 has:
  Triton reports only the total, ``plan_of`` lists every buffer.

``compile_kernel(name)`` compiles one with ``triton.compile`` for its target (no GPU).
Run ``python examples/gluon_kernels.py`` to print each plan.
"""

from __future__ import annotations

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.language.nvidia import blackwell, hopper

from tilemem.interop.gluon import plan_of, to_gluon
from tilemem.layout import mma_shared_layout, tmem_datapath_layout


@gluon.jit
def matmul_sm100(
    a_ptr,
    b_ptr,
    c_ptr,
    K,
    BM: ttgl.constexpr,
    BN: ttgl.constexpr,
    BK: ttgl.constexpr,
    STAGES: ttgl.constexpr,
    a_layout: ttgl.constexpr,
    b_layout: ttgl.constexpr,
    acc_layout: ttgl.constexpr,
):
    a_ring = ttgl.allocate_shared_memory(ttgl.bfloat16, [STAGES, BM, BK], a_layout)
    b_ring = ttgl.allocate_shared_memory(ttgl.bfloat16, [STAGES, BN, BK], b_layout)
    mma_bar = ttgl.allocate_shared_memory(
        ttgl.int64, [STAGES, 1], blackwell.mbarrier.MBarrierLayout()
    )
    for i in ttgl.static_range(STAGES):
        blackwell.mbarrier.init(mma_bar.index(i), count=1)
    acc = blackwell.allocate_tensor_memory(ttgl.float32, [BM, BN], acc_layout)
    blocked: ttgl.constexpr = ttgl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    rm = ttgl.arange(0, BM, layout=ttgl.SliceLayout(1, blocked))
    rn = ttgl.arange(0, BN, layout=ttgl.SliceLayout(1, blocked))
    rk = ttgl.arange(0, BK, layout=ttgl.SliceLayout(0, blocked))
    phase = 0
    for k in range(0, K, BK):
        s = (k // BK) % STAGES
        a_ring.index(s).store(ttgl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]))
        b_ring.index(s).store(ttgl.load(b_ptr + rn[:, None] * K + (k + rk)[None, :]))
        blackwell.fence_async_shared()
        blackwell.tcgen05_mma(
            a_ring.index(s),
            b_ring.index(s).permute((1, 0)),
            acc,
            use_acc=k > 0,
            mbarriers=[mma_bar.index(s)],
        )
        blackwell.mbarrier.wait(mma_bar.index(s), phase)
        phase ^= s == STAGES - 1
    out = ttgl.convert_layout(acc.load(), blocked)
    rc = ttgl.arange(0, BN, layout=ttgl.SliceLayout(0, blocked))
    ttgl.store(c_ptr + rm[:, None] * BN + rc[None, :], out)


@gluon.jit
def matmul_sm90(
    a_ptr,
    b_ptr,
    c_ptr,
    K,
    BM: ttgl.constexpr,
    BN: ttgl.constexpr,
    BK: ttgl.constexpr,
    STAGES: ttgl.constexpr,
    a_layout: ttgl.constexpr,
    b_layout: ttgl.constexpr,
    acc_layout: ttgl.constexpr,
):
    a_ring = ttgl.allocate_shared_memory(ttgl.bfloat16, [STAGES, BM, BK], a_layout)
    b_ring = ttgl.allocate_shared_memory(ttgl.bfloat16, [STAGES, BN, BK], b_layout)
    blocked: ttgl.constexpr = ttgl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    rm = ttgl.arange(0, BM, layout=ttgl.SliceLayout(1, blocked))
    rn = ttgl.arange(0, BN, layout=ttgl.SliceLayout(1, blocked))
    rk = ttgl.arange(0, BK, layout=ttgl.SliceLayout(0, blocked))
    acc = ttgl.zeros([BM, BN], ttgl.float32, acc_layout)
    for k in range(0, K, BK):
        s = (k // BK) % STAGES
        a_ring.index(s).store(ttgl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]))
        b_ring.index(s).store(ttgl.load(b_ptr + rn[:, None] * K + (k + rk)[None, :]))
        hopper.fence_async_shared()
        acc = hopper.warpgroup_mma(a_ring.index(s), b_ring.index(s).permute((1, 0)), acc)
    out = ttgl.convert_layout(acc, blocked)
    rc = ttgl.arange(0, BN, layout=ttgl.SliceLayout(0, blocked))
    ttgl.store(c_ptr + rm[:, None] * BN + rc[None, :], out)


@gluon.jit
def attention_sm100(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    BM: ttgl.constexpr,
    BN: ttgl.constexpr,
    D: ttgl.constexpr,
    q_layout: ttgl.constexpr,
    kv_layout: ttgl.constexpr,
    s_layout: ttgl.constexpr,
    p_layout: ttgl.constexpr,
    o_layout: ttgl.constexpr,
):
    q_smem = ttgl.allocate_shared_memory(ttgl.bfloat16, [BM, D], q_layout)
    k_smem = ttgl.allocate_shared_memory(ttgl.bfloat16, [BN, D], kv_layout)
    v_smem = ttgl.allocate_shared_memory(ttgl.bfloat16, [BN, D], kv_layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], blackwell.mbarrier.MBarrierLayout())
    blackwell.mbarrier.init(bar, count=1)
    s_tmem = blackwell.allocate_tensor_memory(ttgl.float32, [BM, BN], s_layout)
    o_tmem = blackwell.allocate_tensor_memory(ttgl.float32, [BM, D], o_layout)
    blocked: ttgl.constexpr = ttgl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    rm = ttgl.arange(0, BM, layout=ttgl.SliceLayout(1, blocked))
    rn = ttgl.arange(0, BN, layout=ttgl.SliceLayout(1, blocked))
    rd = ttgl.arange(0, D, layout=ttgl.SliceLayout(0, blocked))
    q_smem.store(ttgl.load(q_ptr + rm[:, None] * D + rd[None, :]))
    k_smem.store(ttgl.load(k_ptr + rn[:, None] * D + rd[None, :]))
    v_smem.store(ttgl.load(v_ptr + rn[:, None] * D + rd[None, :]))
    blackwell.fence_async_shared()
    blackwell.tcgen05_mma(q_smem, k_smem.permute((1, 0)), s_tmem, use_acc=False, mbarriers=[bar])
    blackwell.mbarrier.wait(bar, 0)
    s = s_tmem.load()
    p = ttgl.exp2(s - ttgl.expand_dims(ttgl.max(s, 1), 1)).to(ttgl.bfloat16)
    # P over S: the same columns, read as packed bf16 (Gluon's attention example does this)
    p_tmem = s_tmem.reinterpret(ttgl.bfloat16, [BM, BN], p_layout)
    p_tmem.store(ttgl.convert_layout(p, p_tmem.get_reg_layout()))
    blackwell.tcgen05_mma(p_tmem, v_smem, o_tmem, use_acc=False, mbarriers=[bar])
    blackwell.mbarrier.wait(bar, 1)
    out = ttgl.convert_layout(o_tmem.load(), blocked)
    ttgl.store(o_ptr + rm[:, None] * D + rd[None, :], out)


def _ring_layouts(bm: int, bn: int, bk: int, stages: int) -> tuple:
    return (
        to_gluon(mma_shared_layout("bfloat16", "128B", (stages, bm, bk)), "bfloat16"),
        to_gluon(mma_shared_layout("bfloat16", "128B", (stages, bn, bk)), "bfloat16"),
    )


def _matmul_source(fn, bm, bn, bk, stages, acc_layout):
    a_layout, b_layout = _ring_layouts(bm, bn, bk, stages)
    signature = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32", "K": "i32"}
    constexprs = {
        "BM": bm,
        "BN": bn,
        "BK": bk,
        "STAGES": stages,
        "a_layout": a_layout,
        "b_layout": b_layout,
        "acc_layout": acc_layout,
    }
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    return GluonASTSource(fn, signature, constexprs)


def _sources():
    acc90 = ttgl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16]
    )
    acc100 = to_gluon(tmem_datapath_layout("D", 128, 64), "float32")
    bm, bn, d = 128, 128, 64
    attention = GluonASTSource(
        attention_sm100,
        {
            "q_ptr": "*bf16",
            "k_ptr": "*bf16",
            "v_ptr": "*bf16",
            "o_ptr": "*fp32",
            **dict.fromkeys(
                ["BM", "BN", "D", "q_layout", "kv_layout", "s_layout", "p_layout", "o_layout"],
                "constexpr",
            ),
        },
        {
            "BM": bm,
            "BN": bn,
            "D": d,
            "q_layout": to_gluon(mma_shared_layout("bfloat16", "128B", (bm, d)), "bfloat16"),
            "kv_layout": to_gluon(mma_shared_layout("bfloat16", "128B", (bn, d)), "bfloat16"),
            "s_layout": to_gluon(tmem_datapath_layout("D", bm, bn), "float32"),
            "p_layout": blackwell.TensorMemoryLayout((bm, bn), col_stride=1),
            "o_layout": to_gluon(tmem_datapath_layout("D", bm, d), "float32"),
        },
    )
    return {
        "matmul_sm100": (_matmul_source(matmul_sm100, 128, 64, 64, 2, acc100), 100),
        "matmul_sm90": (_matmul_source(matmul_sm90, 64, 64, 64, 2, acc90), 90),
        "attention_sm100": (attention, 100),
        "too_big_sm90": (_matmul_source(matmul_sm90, 64, 128, 128, 8, acc90), 90),
    }


def compile_kernel(name: str):
    """triton.compile one of the kernels for its target (no GPU needed)."""
    source, arch = _sources()[name]
    return triton.compile(
        source,
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": 4, "enable_fp_fusion": True},
    )


if __name__ == "__main__":
    for kernel in _sources():
        compiled = compile_kernel(kernel)
        print(
            f"== {kernel}: metadata.shared = {compiled.metadata.shared}, "
            f"tmem_size = {getattr(compiled.metadata, 'tmem_size', 0)}"
        )
        print(plan_of(compiled))
