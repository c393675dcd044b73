"""A Hopper (sm_90a) GEMM tile in CuTe DSL whose shared memory tilemem plans.

tilemem plans the CTA's shared memory: two 128B-swizzled bf16 operand tiles (TMA
destinations, so 1024-byte aligned) and the TMA transaction barrier. CuTe DSL gets the
plan as ``shared_storage(plan)`` (a ``@cute.struct`` with the fields at the planned
offsets) and each tile's layout as ``smem_layout(buffer)``; nothing is sized by hand.

One CTA of one warpgroup computes C[BM, BN] = A[BM, K] @ B[BN, K]^T (both K-major):
per K tile, a TMA load of A and B into the planned tiles, one mbarrier wait, wgmma,
and at the end a store of the f32 accumulators to C.

Run ``python examples/cute_dsl_hopper_gemm.py`` to compile it for sm_90a (no GPU needed)
and print where the plan put each buffer; on an H200, ``--run`` also launches it (needs
torch) and checks C against A @ B^T.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warpgroup
from cutlass.cute.runtime import make_ptr

import tilemem
from tilemem.interop.cute import shared_storage, smem_layout

BM, BN, BK = 64, 64, 64
THREADS = 128  # one warpgroup


def plan_tiles(k: int = 256):
    """The CTA's shared memory: A and B tiles (128B swizzle), the TMA barrier."""
    del k
    smem = tilemem.SMEMPool(target="sm_90a")
    a = smem.alloc_mma((BM, BK), "bfloat16", name="sA")
    b = smem.alloc_mma((BN, BK), "bfloat16", name="sB")
    smem.alloc((1,), "uint64", name="tma_bar")
    smem.commit()
    return smem.plan(), a, b


def build(m: int = BM, n: int = BN, k: int = 256):
    """The host function (a @cute.jit) and its arguments, for cute.compile or a launch."""
    plan, buf_a, buf_b = plan_tiles(k)
    storage_cls = shared_storage(plan)
    tile_bytes = buf_a.nbytes + buf_b.nbytes

    @cute.kernel
    def kernel(tma_a, mA, tma_b, mB, mC, tiled_mma, a_layout, b_layout):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        storage = cutlass.memory.SmemAllocator().allocate(storage_cls)
        bar = storage.tma_bar.data_ptr()
        if warp == 0 and tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        sA = storage.sA.get_tensor(a_layout.outer, swizzle=a_layout.inner)
        sB = storage.sB.get_tensor(b_layout.outer, swizzle=b_layout.inner)
        gA = cute.local_tile(mA, (BM, BK), (bidx, None))
        gB = cute.local_tile(mB, (BN, BK), (bidy, None))
        gC = cute.local_tile(mC, (BM, BN), (bidx, bidy))
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2)
        )
        thr_mma = tiled_mma.get_slice(tidx)
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sB)
        tCrA = tiled_mma.make_fragment_A(tCsA)
        tCrB = tiled_mma.make_fragment_B(tCsB)
        tCgC = thr_mma.partition_C(gC)
        acc = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        phase = 0
        for kt in cutlass.range(cute.size(gA, mode=[2]), unroll=1):
            # the whole of warp 0 issues the TMA copies: CuTe's TMA copy elects its issuing
            # lane with a full-warp elect.sync, which never completes from one lone thread
            if warp == 0:
                if tidx == 0:
                    cute.arch.mbarrier_arrive_and_expect_tx(bar, tile_bytes)
                cute.copy(tma_a, tAgA[(None, kt)], tAsA, tma_bar_ptr=bar)
                cute.copy(tma_b, tBgB[(None, kt)], tBsB, tma_bar_ptr=bar)
            cute.arch.mbarrier_wait(bar, phase)
            phase ^= 1
            warpgroup.fence()
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(tiled_mma, acc, tCrA[(None, None, kb)], tCrB[(None, None, kb)], acc)
            warpgroup.commit_group()
            warpgroup.wait_group(0)
            cute.arch.sync_threads()
        cute.autovec_copy(acc, tCgC)

    @cute.jit
    def host(a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer):
        mA = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
        mB = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k, 1)))
        mC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
        a_layout = smem_layout(buf_a)
        b_layout = smem_layout(buf_b)
        op = cpasync.CopyBulkTensorTileG2SOp()
        tma_a, tma_mA = cpasync.make_tiled_tma_atom(op, mA, a_layout, (BM, BK))
        tma_b, tma_mB = cpasync.make_tiled_tma_atom(op, mB, b_layout, (BN, BK))
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.BFloat16,
            cutlass.BFloat16,
            OperandMajorMode.K,
            OperandMajorMode.K,
            cutlass.Float32,
            (1, 1, 1),
            (BM, BN),
        )
        kernel(tma_a, tma_mA, tma_b, tma_mB, mC, tiled_mma, a_layout, b_layout).launch(
            grid=(m // BM, n // BN, 1), block=(THREADS, 1, 1), smem=storage_cls.__sizeof__()
        )

    def pointers(a=0, b=0, c=0):
        gmem = cute.AddressSpace.gmem
        return (
            make_ptr(cutlass.BFloat16, a, gmem, assumed_align=16),
            make_ptr(cutlass.BFloat16, b, gmem, assumed_align=16),
            make_ptr(cutlass.Float32, c, gmem, assumed_align=16),
        )

    return plan, host, pointers


def compile_for(arch: str = "sm_90a", dump_dir: str | None = None):
    """cute.compile the tile for ``arch`` keeping its PTX (``compiled.__ptx__``); returns
    (plan, compiled). CuTe DSL writes the PTX file into ``dump_dir``, which must exist (a
    temporary directory when None)."""
    plan, host, pointers = build()
    with tempfile.TemporaryDirectory(prefix="tilemem-cute-") as tmp:
        where = Path(dump_dir or tmp)
        where.mkdir(parents=True, exist_ok=True)
        options = f"--gpu-arch {arch} --keep-ptx --dump-dir {where}"
        compiled = cute.compile(host, *pointers(), options=options)
        compiled.__ptx__  # noqa: B018  (read while the file exists)
    return plan, compiled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="launch on this GPU (needs torch)")
    args = parser.parse_args()
    plan, compiled = compile_for()
    print(plan)
    print(f"compiled for sm_90a: {len(compiled.__ptx__ or '')} characters of PTX")
    if args.run:
        import torch

        k = 256
        a = torch.randn(BM, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(BN, k, device="cuda", dtype=torch.bfloat16)
        c = torch.zeros(BM, BN, device="cuda", dtype=torch.float32)
        _, host, pointers = build(k=k)
        host(*pointers(a.data_ptr(), b.data_ptr(), c.data_ptr()))
        torch.cuda.synchronize()
        want = a.float() @ b.float().T
        print("max |C - A @ B^T| =", (c - want).abs().max().item())


if __name__ == "__main__":
    main()
