"""A Blackwell (sm_100a) GEMM tile in CuTe DSL whose SMEM *and* TMEM tilemem plans.

tilemem plans the shared memory (two 128B-swizzled bf16 operand tiles, the TMA and MMA
barriers, the slot ``tcgen05.alloc`` writes the TMEM address into) and the tensor memory
(the f32 accumulator, data path D). CuTe DSL gets ``shared_storage(plan)``,
``smem_layout(buffer)`` for each tile and ``tmem_columns(plan)`` for the accumulator's
column and the allocation size; nothing is counted by hand.

One CTA of 128 threads: per K tile a TMA load of A and B, ``tcgen05.mma`` by one thread
into TMEM, ``tcgen05.commit`` to the MMA barrier; then ``tcgen05.ld`` (32x32b: thread t
reads lane t) and a store of the f32 row to C.

``python examples/cute_dsl_blackwell_gemm.py`` compiles it for sm_100a (no GPU needed)
and prints the plan.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05
from cutlass.cute.runtime import make_ptr

import tilemem
from tilemem.interop.cute import shared_storage, smem_layout, tmem_columns

BM, BN, BK = 128, 64, 64
THREADS = 128


def plan_tile():
    """SMEM: A, B (128B swizzle), barriers, the TMEM slot; TMEM: statistics, accumulator."""
    smem = tilemem.SMEMPool(target="sm_100a")
    a = smem.alloc_mma((BM, BK), "bfloat16", name="sA")
    b = smem.alloc_mma((BN, BK), "bfloat16", name="sB")
    smem.alloc((2,), "uint64", name="bars")  # [0]: TMA bytes landed, [1]: MMA done
    tmem = tilemem.TMEMPool(smem, total_cols="auto")
    # a row-statistics column block first (as FA4 keeps one), so the accumulator does not
    # start at column 0: the kernel must take its column from the plan
    tmem.alloc((BM, 32), "float32", datapath="D", name="stats")
    acc = tmem.alloc((BM, BN), "float32", datapath="D", name="acc")
    smem.commit()
    with warnings.catch_warnings():
        # a one-tile demo: many such small CTAs per SM would queue on tcgen05.alloc, which
        # tilemem warns about; residency is not what this example shows
        warnings.simplefilter("ignore", tilemem.errors.TilememWarning)
        tmem.commit()
    return smem.plan(), a, b, acc


def build(m: int = BM, n: int = BN, k: int = 256):
    plan, buf_a, buf_b, _ = plan_tile()
    storage_cls = shared_storage(plan)
    cols = tmem_columns(plan)
    tile_bytes = buf_a.nbytes + buf_b.nbytes

    @cute.kernel
    def kernel(tma_a, mA, tma_b, mB, mC, tiled_mma, a_layout, b_layout):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        storage = cutlass.memory.SmemAllocator().allocate(storage_cls)
        tma_bar = storage.bars.data_ptr()
        mma_bar = tma_bar + 1
        if tidx == 0:
            cute.arch.mbarrier_init(tma_bar, 1)
            cute.arch.mbarrier_init(mma_bar, 1)
        cute.arch.mbarrier_init_fence()
        allocator = cutlass.memory.TmemAllocator(
            storage.tmem_addr.data_ptr(),
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=THREADS),
        )
        allocator.allocate(cols.alloc_cols)
        allocator.wait_for_alloc()
        tmem_base = allocator.retrieve_ptr(cutlass.Float32)

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
        thr_mma = tiled_mma.get_slice(0)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        # the accumulator at the column tilemem planned for it
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((BM, BN))).layout
        tCtAcc = cute.make_tensor(tmem_base + cols["acc"], acc_layout)

        phase = 0
        for kt in cutlass.range(cute.size(gA, mode=[2]), unroll=1):
            # the whole of warp 0 issues the TMA copies: CuTe's TMA copy elects its issuing
            # lane with a full-warp elect.sync, which never completes from one lone thread
            if warp == 0:
                if tidx == 0:
                    cute.arch.mbarrier_arrive_and_expect_tx(tma_bar, tile_bytes)
                cute.copy(tma_a, tAgA[(None, kt)], tAsA, tma_bar_ptr=tma_bar)
                cute.copy(tma_b, tBgB[(None, kt)], tBsB, tma_bar_ptr=tma_bar)
            cute.arch.mbarrier_wait(tma_bar, phase)
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                # the first MMA of the tile overwrites the accumulator, the others add
                tiled_mma.set(tcgen05.Field.ACCUMULATE, kt + kb != 0)
                if warp == 0:
                    cute.gemm(
                        tiled_mma, tCtAcc, tCrA[(None, None, kb)], tCrB[(None, None, kb)], tCtAcc
                    )
            if warp == 0:
                with cute.arch.elect_one():
                    tcgen05.commit(mma_bar)
            cute.arch.mbarrier_wait(mma_bar, phase)
            phase ^= 1

        # epilogue: thread t reads TMEM lane t (row t of the tile), 32x32b, BN columns
        load = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64), cutlass.Float32)
        tmem_tile = tCtAcc[((None, None), 0, 0)]
        tiled_load = tcgen05.make_tmem_copy(load, tmem_tile)
        thr_load = tiled_load.get_slice(tidx)
        tTR_t = thr_load.partition_S(tmem_tile)
        tTR_g = thr_load.partition_D(gC)
        tTR_r = cute.make_rmem_tensor(tTR_g.shape, cutlass.Float32)
        cute.copy(tiled_load, tTR_t, tTR_r)
        cute.autovec_copy(tTR_r, tTR_g)
        cute.arch.sync_threads()
        allocator.relinquish_alloc_permit()
        allocator.free(tmem_base)

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
        tiled_mma = sm100_utils.make_trivial_tiled_mma(
            cutlass.BFloat16,
            cutlass.BFloat16,
            OperandMajorMode.K,
            OperandMajorMode.K,
            cutlass.Float32,
            tcgen05.CtaGroup.ONE,
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


def compile_for(arch: str = "sm_100a", dump_dir: str | None = None):
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


if __name__ == "__main__":
    plan, compiled = compile_for()
    print(plan)
    print(f"compiled for sm_100a: {len(compiled.__ptx__ or '')} characters of PTX")
