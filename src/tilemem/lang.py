"""``T``: the kernel language. ``from tilemem import T``.

@T.kernel(target="sm_90a", grid=1, block=128)
def scale(x: T.Buffer(("n",), "float32"), factor: T.float32):
    i = T.thread_id()
    with T.If(i < x.shape[0]):
        x[i] = x[i] * factor
"""

from __future__ import annotations

from types import SimpleNamespace

from .cuda.kernel import KernelProgram
from .dtype import DataType, as_dtype
from .ir import builder as _b
from .ir import intrinsics as _ix
from .ir.build import build as _build

# pools: the same classes as plan-only use; inside a kernel they emit
from .pool import SMEMPool as SMEMPool
from .pool import TMEMPool as TMEMPool
from .pool import TMEMStages as TMEMStages

If, Then, Else = _b.If, _b.Then, _b.Else
serial, unroll = _b.serial, _b.unroll
evaluate, let, cast, select = _b.evaluate, _b.let, _b.cast, _b.select
all_of, any_of, min, max = _b.all_of, _b.any_of, _b.min_, _b.max_
alloc_local = _b.alloc_local
thread_id, block_id, warp_id, lane_id = _b.thread_id, _b.block_id, _b.warp_id, _b.lane_id
smem_addr, tmem_base, tmem_addr = _b.smem_addr, _ix.tmem_base, _b.tmem_addr
TensorMap = _b.TensorMapSpec
BuildError = _b.BuildError


def Buffer(shape, dtype="float32") -> _b.BufferSpec:
    """Annotation of a global tensor parameter; string dims (``"M"``) become int32 parameters."""
    shape = (shape,) if isinstance(shape, (int, str)) else tuple(shape)
    return _b.BufferSpec(shape, as_dtype(dtype))


def _scalar(name: str) -> _b.ScalarSpec:
    return _b.ScalarSpec(DataType(name))


int32, uint32, int64, uint64 = (
    _scalar("int32"),
    _scalar("uint32"),
    _scalar("int64"),
    _scalar("uint64"),
)
float32 = _scalar("float32")


def kernel(target: str, grid=1, block=128, cluster=None, name: str | None = None):
    """Decorator: build the function into a kernel for ``target``; returns a KernelProgram."""

    def wrap(fn):
        return KernelProgram(
            _build(fn, target=target, grid=grid, block=block, cluster=cluster, name=name)
        )

    return wrap


cuda = SimpleNamespace(
    syncthreads=_ix.syncthreads, syncwarp=_ix.syncwarp, named_barrier=_ix.named_barrier
)
pack_bf16x2 = _ix.pack_bf16x2

ptx = SimpleNamespace(
    elect_sync=_ix.elect_sync,
    mbarrier=SimpleNamespace(
        init=_ix.mbarrier_init,
        arrive=_ix.mbarrier_arrive,
        arrive_expect_tx=_ix.mbarrier_arrive_expect_tx,
        try_wait_parity=_ix.mbarrier_try_wait_parity,
        wait=_ix.mbarrier_wait,
    ),
    fence=SimpleNamespace(
        proxy_async_shared_cta=_ix.fence_proxy_async_shared_cta,
        mbarrier_init=_ix.fence_mbarrier_init,
    ),
    tma=SimpleNamespace(
        load=_ix.tma_load,
        store=_ix.tma_store,
        load_tile=_ix.tma_load_tile,
        store_tile=_ix.tma_store_tile,
        commit_group=_ix.bulk_commit_group,
        wait_group_read=_ix.bulk_wait_group_read,
    ),
    wgmma=SimpleNamespace(
        fence=_ix.wgmma_fence,
        commit_group=_ix.wgmma_commit_group,
        wait_group=_ix.wgmma_wait_group,
        mma_async=_ix.wgmma_mma_async,
        desc=_ix.wgmma_desc,
    ),
    tcgen05=SimpleNamespace(
        alloc=_ix.tcgen05_alloc,
        dealloc=_ix.tcgen05_dealloc,
        relinquish_alloc_permit=_ix.tcgen05_relinquish,
        fence_before_thread_sync=_ix.tcgen05_fence_before,
        fence_after_thread_sync=_ix.tcgen05_fence_after,
        ld=_ix.tcgen05_ld,
        st=_ix.tcgen05_st,
        wait_ld=_ix.tcgen05_wait_ld,
        wait_st=_ix.tcgen05_wait_st,
        mma=_ix.tcgen05_mma,
        commit=_ix.tcgen05_commit,
        desc=_ix.tcgen05_desc,
    ),
)
