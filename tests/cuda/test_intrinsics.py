"""Each intrinsic compiles for its target through NVRTC (ptxas checks the instruction exists
there)."""

import pytest

from tilemem import T
from tilemem.cuda import CompileError
from tilemem.layout.operand import tcgen05_instr_descriptor

pytestmark = pytest.mark.nvrtc


def compile_body(target, body, block=128):
    @T.kernel(target=target, block=block, name="probe")
    def k(x: T.Buffer((256,), "float32"), tmap: T.TensorMap):
        smem = T.SMEMPool()
        a = smem.alloc_mma((2, 64, 64), "bfloat16", name="a")
        b = smem.alloc_mma((2, 64, 64), "bfloat16", name="b")
        bar = smem.alloc((2,), "uint64", name="bar")
        smem.commit()
        body(x, tmap, smem, a, b, bar)

    return k, k.compile()


def sync_ops(x, tmap, smem, a, b, bar):
    T.cuda.syncthreads()
    T.cuda.syncwarp()
    x[2] = T.cast(T.cuda.shfl_sync(T.thread_id() // 32, 3), "float32")
    T.cuda.named_barrier(1, 64)
    with T.If(T.ptx.elect_sync()):
        x[0] = 1.0


def mbarrier_ops(x, tmap, smem, a, b, bar):
    with T.If(T.thread_id() == 0):
        T.ptx.mbarrier.init((bar, 0), 1)
        T.ptx.fence.mbarrier_init()
    T.ptx.mbarrier.arrive((bar, 0))
    T.ptx.mbarrier.arrive_expect_tx((bar, 1), 1024)
    with T.If(T.ptx.mbarrier.try_wait_parity((bar, 0), 0)):
        x[1] = 2.0
    T.ptx.mbarrier.wait((bar, 1), 1)
    T.ptx.fence.proxy_async_shared_cta()


def tma_ops(rank, multicast=False):
    def body(x, tmap, smem, a, b, bar):
        coords = list(range(rank))
        T.ptx.tma.load(
            tmap, (a, 1, 0, 0), (bar, 0), coords, multicast_mask=3 if multicast else None
        )
        T.ptx.tma.store(tmap, a, coords)
        T.ptx.tma.commit_group()
        T.ptx.tma.wait_group_read(0)

    return body


def wgmma_ops(n):
    def body(x, tmap, smem, a, b, bar):
        acc = T.alloc_local(n // 2, "float32")
        T.ptx.wgmma.fence()
        T.ptx.wgmma.mma_async(
            acc, T.ptx.wgmma.desc(a, 0, 0, 16), T.ptx.wgmma.desc(b, 1, 0, 0), n=n, scale_d=0
        )
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)
        x[T.thread_id()] = acc[0]

    return body


@pytest.mark.parametrize("target", ["sm_80", "sm_90a", "sm_100a"])
def test_thread_sync_compiles(target):
    if target == "sm_80":
        with pytest.raises(Exception, match=r"elect.sync does not exist on sm_80"):
            compile_body(target, sync_ops)
    else:
        compile_body(target, sync_ops)


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_mbarrier_and_fences_compile(target):
    compile_body(target, mbarrier_ops)


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_tma_load_store_every_rank(rank):
    compile_body("sm_90a", tma_ops(rank))


def test_tma_multicast_needs_and_compiles_with_a_cluster():
    @T.kernel(target="sm_90a", block=128, cluster=(2, 1, 1))
    def k(tmap: T.TensorMap):
        smem = T.SMEMPool()
        a = smem.alloc_mma((64, 64), "bfloat16")
        bar = smem.alloc((1,), "uint64")
        smem.commit()
        T.ptx.tma.load(tmap, a, bar, [0, 0], multicast_mask=3)

    assert "multicast::cluster" in k.source and "__cluster_dims__(2, 1, 1)" in k.source
    k.compile()


@pytest.mark.parametrize("n", [64, 128, 256])
def test_wgmma_m64nNk16_compiles(n):
    k, _ = compile_body("sm_90a", wgmma_ops(n))
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16" in k.source


@pytest.mark.parametrize("cta_group", [1, 2])
def test_tcgen05_family_compiles(cta_group):
    idesc = tcgen05_instr_descriptor(128, 64)

    @T.kernel(target="sm_100a", block=128, cluster=(2, 1, 1) if cta_group == 2 else None)
    def k(x: T.Buffer((128,), "float32")):
        smem = T.SMEMPool()
        a = smem.alloc_mma((128, 64), "bfloat16", name="a")
        b = smem.alloc_mma((64, 64), "bfloat16", name="b")
        bar = smem.alloc((1,), "uint64", name="bar")
        tmem = T.TMEMPool(smem, 128, cta_group=cta_group)
        d = tmem.alloc((128, 64), name="d")
        p = tmem.alloc((128, 64), "bfloat16", name="p")
        smem.commit(100_000)  # at most 2 CTAs per SM: 2 x 128 TMEM columns fit
        tmem.commit()
        T.tmem_base(tmem)
        with T.If(T.all_of(T.warp_id() == 0, T.ptx.elect_sync())):
            T.ptx.tcgen05.mma(
                d,
                T.ptx.tcgen05.desc(a, 0, 16),
                T.ptx.tcgen05.desc(b),
                idesc,
                accumulate=0,
                cta_group=cta_group,
            )
            T.ptx.tcgen05.mma(d, p, T.ptx.tcgen05.desc(b), idesc, cta_group=cta_group)
            T.ptx.tcgen05.commit(bar, cta_group=cta_group)
        regs = T.alloc_local(8, "uint32")
        T.ptx.tcgen05.ld(regs, T.tmem_addr(d, lane=(T.warp_id() % 4) * 32), num=8)
        T.ptx.tcgen05.wait_ld()
        T.ptx.tcgen05.st(T.tmem_addr(p, lane=(T.warp_id() % 4) * 32), regs, num=8)
        T.ptx.tcgen05.wait_st()
        T.ptx.tcgen05.fence_before_thread_sync()
        T.cuda.syncthreads()
        tmem.dealloc()

    assert f"tcgen05.mma.cta_group::{cta_group}.kind::f16 [%0], [%1]" in k.source
    assert len(k.compile()) > 1000


def test_ptxas_rejects_tcgen05_on_hopper_through_a_raw_source():
    from tilemem.cuda import compile_cubin

    src = 'extern "C" __global__ void k() { asm volatile("tcgen05.fence::before_thread_sync;"); }'
    with pytest.raises(CompileError) as exc:
        compile_cubin(src, "sm_90a", name="k")
    assert "sm_90a" in str(exc.value) and "tcgen05" in str(exc.value)


def test_compile_error_shows_log_and_source_lines():
    from tilemem.cuda import compile_cubin

    src = 'extern "C" __global__ void k() {\n  int x = ;\n}\n'
    with pytest.raises(CompileError) as exc:
        compile_cubin(src, "sm_80", name="broken")
    msg = str(exc.value)
    assert "broken" in msg and "expected an expression" in msg and ">    2 |   int x = ;" in msg
