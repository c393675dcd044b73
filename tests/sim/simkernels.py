"""Small kernels for the simulator tests, each with planted bugs behind flags.

Lines the tests point at carry a ``# @name`` marker; :func:`line` finds them, so a test
checks the source line a hazard names without hard-coding numbers.
"""

from __future__ import annotations

from pathlib import Path

from tilemem import T

HERE = Path(__file__).resolve()


def line(marker: str) -> str:
    """``file:line`` of the line ending in ``# @marker`` in this file."""
    for n, text in enumerate(HERE.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# @{marker}"):
            return f"{HERE}:{n}"
    raise KeyError(marker)


def exchange(sync: bool = True, oob: bool = False, read_first: bool = False):
    """Each thread writes buf[t] = 2t, then reads buf[63 - t] into out[t]."""

    @T.kernel(target="sm_90a", grid=1, block=64)
    def k(out: T.Buffer((64,), "float32")):
        smem = T.SMEMPool(name="smem")
        buf = smem.alloc((64,), "float32", name="buf")
        smem.commit()
        t = T.thread_id()
        if read_first:
            out[t] = buf[t]  # @early-read
        buf[t + (1 if oob else 0)] = T.cast(t, "float32") * 2.0  # @exchange-write
        if sync:
            T.cuda.syncthreads()
        out[t] = buf[63 - t]  # @exchange-read

    return k


def global_oob():
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(x: T.Buffer((16,), "float32")):
        t = T.thread_id()
        x[t] = 1.0  # @global-oob

    return k


def phased(in_phase: str):
    """A buffer live only in the mainloop, written inside T.phase(in_phase)."""

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(out: T.Buffer((32,), "float32")):
        smem = T.SMEMPool(name="smem", phases=("mainloop", "epilogue"))
        stage = smem.alloc((32,), "float32", name="stage", live="mainloop")
        tile = smem.alloc((32,), "float32", name="tile", live="epilogue")
        smem.commit()
        t = T.thread_id()
        with T.phase(in_phase):
            stage[t] = 1.0  # @phased-write
        with T.phase("epilogue"):
            tile[t] = 2.0
            out[t] = tile[t]

    return k


def tma_roundtrip(
    dtype: str = "float32",
    swizzle: str = "128B",
    rows: int = 64,
    cols: int = 32,
    tx: int | None = None,
    wait: bool = True,
    parity: int = 0,
    fence: bool = True,
    arrivals: int = 1,
    prefetch: bool = False,
):
    """TMA-load an (rows, cols) tile at (row0, col0), add 1 in shared memory, TMA-store it back
    to ``out`` at the same place (``prefetch``: thread 0 first prefetches both tensor maps'
    descriptors). Returns the kernel and its tile buffer (for tile_map)."""
    holder = {}
    nbytes = rows * cols * (4 if dtype == "float32" else 2)

    @T.kernel(target="sm_90a", grid=1, block=128)
    def k(tma_in: T.TensorMap, tma_out: T.TensorMap, row0: T.int32, col0: T.int32):
        smem = T.SMEMPool(name="smem")
        a = smem.alloc_mma((rows, cols), dtype, swizzle, name="tile")
        bar = smem.alloc((1,), "uint64", name="full")
        smem.commit()
        holder["tile"] = a
        t = T.thread_id()
        if prefetch:
            with T.If(t == 0):
                T.ptx.tma.prefetch_descriptor(tma_in)  # @prefetch
                T.ptx.tma.prefetch_descriptor(tma_out)
        with T.If(t == 0):
            T.ptx.mbarrier.init((bar, 0), arrivals)  # @init
            T.ptx.fence.mbarrier_init()
        T.cuda.syncthreads()
        with T.If(t == 0):
            T.ptx.mbarrier.arrive_expect_tx((bar, 0), nbytes if tx is None else tx)
            T.ptx.tma.load_tile(tma_in, a, (bar, 0), row0, col0)  # @tma-load
        if wait:
            T.ptx.mbarrier.wait((bar, 0), parity)  # @wait
        with T.If(t < rows):
            for j in T.serial(cols, name="j"):
                a[t, j] = a[t, j] + 1.0  # @bump
        if fence:
            T.ptx.fence.proxy_async_shared_cta()
        T.cuda.syncthreads()
        with T.If(t == 0):
            T.ptx.tma.store_tile(tma_out, a, row0, col0)  # @tma-store
            T.ptx.tma.commit_group()
            T.ptx.tma.wait_group(0)

    return k, holder["tile"]


def tma_twice(wait_between: bool, between: int = 0):
    """Thread 0 fills one 64 x 32 fp32 tile twice from ``tma_in`` (rows 0..63, then 64..127):
    with ``wait_between`` it waits for the first load's phase before issuing the second,
    else both loads are in flight at once, writing the same bytes (a write-write race: TMA
    loads of one thread complete in no set order); ``between`` (no wait): that many loads
    into tiles of their own go between the two. Returns the kernel and the tile buffer (for
    tile_map)."""
    holder = {}
    nbytes = 64 * 32 * 4
    loads = 2 + between

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(tma_in: T.TensorMap):
        smem = T.SMEMPool(name="smem")
        a = smem.alloc_mma((64, 32), "float32", "128B", name="tile")
        others = smem.alloc_mma((max(between, 1), 64, 32), "float32", "128B", name="others")
        bar = smem.alloc((1,), "uint64", name="full")
        smem.commit()
        holder["tile"] = a
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init((bar, 0), 1)
            T.ptx.fence.mbarrier_init()
            T.ptx.mbarrier.arrive_expect_tx((bar, 0), nbytes if wait_between else loads * nbytes)
            T.ptx.tma.load_tile(tma_in, a, (bar, 0), 0, 0)  # @twice-load-1
            for i in range(between):
                T.ptx.tma.load(tma_in, (others, i, 0, 0), (bar, 0), [0, 64])
            if wait_between:
                T.ptx.mbarrier.wait((bar, 0), 0)
                T.ptx.mbarrier.arrive_expect_tx((bar, 0), nbytes)
            T.ptx.tma.load_tile(tma_in, a, (bar, 0), 64, 0)  # @twice-load-2
            T.ptx.mbarrier.wait((bar, 0), 1 if wait_between else 0)

    return k, holder["tile"]


def tma_fifth(wait_last: bool):
    """Thread 0 loads ``tile`` by TMA and waits for it; then issues four more loads, three
    into tiles of their own and the fourth into ``tile`` again (the fifth load of the thread:
    its agent is the first load's, :data:`tilemem.sim.machine.QUEUE_SLOTS`), and waits for
    them only with ``wait_last``; then every thread reads ``tile``. Without the wait the read
    races with the fifth load, whose agent the warp has acquired only up to the first load."""
    holder = {}
    nbytes = 64 * 32 * 4

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(tma_in: T.TensorMap, out: T.Buffer((32,), "float32")):
        smem = T.SMEMPool(name="smem")
        a = smem.alloc_mma((64, 32), "float32", "128B", name="tile")
        others = smem.alloc_mma((3, 64, 32), "float32", "128B", name="others")
        bar = smem.alloc((2,), "uint64", name="full")
        smem.commit()
        holder["tile"] = a
        t = T.thread_id()
        with T.If(t == 0):
            T.ptx.mbarrier.init((bar, 0), 1)
            T.ptx.mbarrier.init((bar, 1), 1)
            T.ptx.fence.mbarrier_init()
            T.ptx.mbarrier.arrive_expect_tx((bar, 0), nbytes)
            T.ptx.tma.load_tile(tma_in, a, (bar, 0), 0, 0)
            T.ptx.mbarrier.wait((bar, 0), 0)
            T.ptx.mbarrier.arrive_expect_tx((bar, 1), 4 * nbytes)
            for i in range(3):
                T.ptx.tma.load(tma_in, (others, i, 0, 0), (bar, 1), [0, 64])
            T.ptx.tma.load_tile(tma_in, a, (bar, 1), 64, 0)  # @fifth-load
            if wait_last:
                T.ptx.mbarrier.wait((bar, 1), 0)
        T.cuda.syncwarp()
        out[t] = a[t, 0]  # @fifth-read

    return k, holder["tile"]


def never_arrives():
    @T.kernel(target="sm_90a", grid=1, block=64)
    def k(out: T.Buffer((64,), "float32")):
        smem = T.SMEMPool(name="smem")
        bar = smem.alloc((1,), "uint64", name="ready")
        smem.commit()
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init((bar, 0), 1)
        T.cuda.syncthreads()
        with T.If(T.warp_id() == 1):
            T.ptx.mbarrier.wait((bar, 0), 0)  # @stuck
        out[T.thread_id()] = 1.0

    return k


def tmem_user(
    cols: int = 128,
    dealloc_warp: int | None = None,
    cluster: int | None = None,
    store_col: int = 0,
    deallocate: bool = True,
    pad_smem: int = 0,
    wait_ld: bool = True,
):
    """Warp 0 allocates ``cols`` TMEM columns; every warp stores its lane quarter's first
    column, waits, loads it back into ``out``; then (cluster: after a cluster barrier) the
    pool is freed. Lets the tests break the TMEM protocol one rule at a time."""

    @T.kernel(target="sm_100a", grid=cluster or 1, block=128, cluster=cluster)
    def k(out: T.Buffer(("n",), "float32")):
        smem = T.SMEMPool(name="smem")
        tmem = T.TMEMPool(smem, cols, alloc_warp=0, dealloc_warp=dealloc_warp, name="tmem")
        acc = tmem.alloc((128, 32), "float32", datapath="D", name="acc")
        if pad_smem:  # fewer CTAs fit an SM by shared memory: the planner's residency rule
            smem.alloc((pad_smem,), "uint8", name="pad")
        smem.commit()
        tmem.commit()  # @tmem-alloc
        T.tmem_base(tmem)
        regs = T.alloc_local(1, "float32", name="regs")
        quarter = T.warp_id() % 4
        regs[0] = T.cast(T.thread_id(), "float32")
        where = T.tmem_addr(acc, lane=quarter * 32, col=store_col)
        T.ptx.tcgen05.st(where, regs, num=1)  # @tmem-st
        T.ptx.tcgen05.wait_st()
        T.ptx.tcgen05.ld(regs, T.tmem_addr(acc, lane=quarter * 32), num=1)  # @tmem-ld
        if wait_ld:
            T.ptx.tcgen05.wait_ld()
        out[T.block_id() * 128 + T.thread_id()] = regs[0]  # @tmem-read
        if cluster:
            T.ptx.cluster.sync()  # @cluster-sync
        T.ptx.tcgen05.fence_before_thread_sync()
        T.cuda.syncthreads()
        if deallocate:
            tmem.dealloc()  # @tmem-dealloc

    return k


def staged_store(wait_before_reuse: bool = True, threads_in_barrier: int = 64, init: bool = True):
    """Threads fill ``tile``, thread 0 TMA-stores it, then the tile is refilled for a second
    store. Without ``wait_group_read`` the refill races with the first store's read."""
    holder = {}

    @T.kernel(target="sm_90a", grid=1, block=64)
    def k(tma_out: T.TensorMap):
        smem = T.SMEMPool(name="smem")
        tile = smem.alloc_mma((16, 32), "float32", "128B", name="tile")
        bar = smem.alloc((1,), "uint64", name="done")
        smem.commit()
        holder["tile"] = tile
        t = T.thread_id()
        with T.If(T.all_of(t == 0, init)):
            T.ptx.mbarrier.init((bar, 0), 1)
        T.cuda.syncthreads()
        for rep in range(2):
            with T.If(t < 16):
                for j in T.serial(32, name="j"):
                    tile[t, j] = T.cast(t * 32 + j + rep, "float32")  # @fill
            T.ptx.fence.proxy_async_shared_cta()
            T.cuda.named_barrier(1, threads_in_barrier)  # @named
            with T.If(t == 0):
                T.ptx.tma.store(tma_out, tile, [rep * 32, 0])  # @store
                T.ptx.tma.commit_group()
                if wait_before_reuse:
                    T.ptx.tma.wait_group_read(0)
            T.cuda.syncthreads()
        with T.If(t == 0):
            T.ptx.mbarrier.arrive((bar, 0))  # @arrive
            T.ptx.tma.wait_group(0)

    return k, holder["tile"]


def halve_bf16(phase: str | None = None):
    """x[i] = x[i] * 0.5 for a bf16 vector (optionally inside ``T.phase(phase)``)."""

    @T.kernel(target="sm_90a", grid=1, block=64)
    def k(x: T.Buffer((64,), "bfloat16")):
        smem = T.SMEMPool(name="smem", phases=("mainloop", "epilogue"))
        smem.alloc((64,), "float32", name="unused")
        smem.commit()
        i = T.thread_id()
        if phase is None:
            x[i] = T.cast(x[i], "float32") * 0.5
        else:
            with T.phase(phase):
                x[i] = T.cast(x[i], "float32") * 0.5

    return k


def wgmma_tile(wait: bool = True):
    """One warpgroup: D (64 x 8) = A (64 x 64) @ B (8 x 64)^T with A[m, k] = m % 4 + 1 and
    B[n, k] = n + 1 written by the threads (bf16, 128B swizzle), then ``out[t, i] = acc[i]``.
    Without ``wait`` the accumulators are read before ``wgmma.wait_group``."""

    @T.kernel(target="sm_90a", grid=1, block=128)
    def k(out: T.Buffer((128, 4), "float32")):
        smem = T.SMEMPool(name="smem")
        a = smem.alloc_mma((64, 64), "bfloat16", "128B", name="A")
        b = smem.alloc_mma((8, 64), "bfloat16", "128B", name="B")
        smem.commit()
        t = T.thread_id()
        for j in T.serial(32, name="j"):
            e = t * 32 + j
            a[e // 64, e % 64] = T.cast(e // 64 % 4 + 1, "bfloat16")
        for j in T.serial(4, name="j"):
            e = t * 4 + j
            b[e // 64, e % 64] = T.cast(e // 64 + 1, "bfloat16")
        T.ptx.fence.proxy_async_shared_cta()
        T.cuda.syncthreads()
        acc = T.alloc_local(4, "float32", name="acc")
        T.ptx.wgmma.fence()
        T.ptx.wgmma.mma_async(  # @wgmma
            acc, T.ptx.wgmma.desc(a, 0, 0), T.ptx.wgmma.desc(b, 0, 0), n=8, scale_d=0
        )
        T.ptx.wgmma.commit_group()
        if wait:
            T.ptx.wgmma.wait_group(0)
        for i in T.unroll(4, name="i"):
            out[t, i] = acc[i]  # @acc-read

    return k


def lane_clash(kind: str, same: bool):
    """One warp stores with two lanes on each address, then every lane loads ``buf[0, 0]``.
    ``"st"``: lanes 2j and 2j + 1 store element j of ``buf`` (values 2j and 2j + 1, or j
    twice when ``same``). ``"stmatrix"``: lane 8i + r gives row r's address for every matrix
    i, so the four 8x8 matrices land on one tile (words 1, 2, 3, 4, or 1 four times)."""

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(out: T.Buffer((32,), "float32")):
        smem = T.SMEMPool(name="smem")
        buf = smem.alloc((8, 8), "uint16", name="buf")
        smem.commit()
        t = T.thread_id()
        j = t // 2
        if kind == "st":
            buf[j // 8, j % 8] = T.cast(j if same else t, "uint16")  # @clash-st
        else:
            words = [1, 1, 1, 1] if same else [1, 2, 3, 4]
            T.ptx.stmatrix_x4((buf, t % 8, 0), words)  # @clash-stmatrix
        out[t] = T.cast(buf[0, 0], "float32")  # @broadcast-read

    return k


# wgmma descriptor bits of a K-major 128B-swizzled operand (PTX ISA 9.0, 9.7.15.5.1.2.2
# "Matrix Descriptor Format"): layout type 1 (128B) in bits 62-63, SBO = 1024 bytes (eight
# 128-byte rows) >> 4 in bits 32-45, LBO = 1 (unused by swizzled K-major layouts) in 16-29
SW128_K_HIGH = (1 << 62) | ((1024 >> 4) << 32) | (1 << 16)


def wgmma_base_offset(rows_in: int = 3):
    """D (64 x 8) = A (64 x 16) @ B (8 x 16)^T with A in shared memory at P = (a 1024-byte
    aligned base) + 128 * ``rows_in``: 128-byte but not 1024-byte aligned. A is written by
    the threads as a 128B-swizzled K-major tile whose repeating pattern starts at P (row r at
    P + 128 r, its 16-byte chunk c at chunk c ^ (r % 8)); its descriptor starts at P with the
    kernel argument ``base_offset`` in bits 49-51 (the PTX ISA asks for (P >> 7) & 7, written
    to ``where[0]`` with P itself in ``where[1]``). B is an ordinary aligned 128B tile.
    ``out[t, i] = acc[i]`` (the m64n8 fragment of D)."""

    @T.kernel(target="sm_90a", grid=1, block=128)
    def k(
        a_in: T.Buffer((64, 64), "bfloat16"),
        b_in: T.Buffer((8, 64), "bfloat16"),
        out: T.Buffer((128, 4), "float32"),
        where: T.Buffer((2,), "uint32"),
        base_offset: T.uint32,
    ):
        smem = T.SMEMPool(name="smem")
        raw = smem.alloc((8 * 1024 // 2 + 512,), "bfloat16", align=1024, name="raw")
        b = smem.alloc_mma((8, 64), "bfloat16", "128B", name="B")
        smem.commit()
        t = T.thread_id()
        shift = 128 * rows_in  # bytes from raw's 1024-aligned start to P
        for j in T.serial(32, name="j"):
            e = t * 32 + j
            r, kk = e // 64, e % 64
            chunk = (kk // 8) ^ (r % 8)
            byte = shift + (r // 8) * 1024 + (r % 8) * 128 + chunk * 16 + (kk % 8) * 2
            raw[byte // 2] = a_in[r, kk]  # @bo-fill
        for j in T.serial(4, name="j"):
            e = t * 4 + j
            b[e // 64, e % 64] = b_in[e // 64, e % 64]
        T.ptx.fence.proxy_async_shared_cta()
        T.cuda.syncthreads()
        start = T.smem_addr(raw, shift // 2)
        with T.If(t == 0):
            where[0] = (start >> 7) & 7
            where[1] = start
        low = T.cast((start >> 4) & 0x3FFF, "uint64")
        a_desc = low | T.cast(base_offset & 7, "uint64") << 49 | SW128_K_HIGH
        acc = T.alloc_local(4, "float32", name="acc")
        T.ptx.wgmma.fence()
        T.ptx.wgmma.mma_async(acc, a_desc, T.ptx.wgmma.desc(b, 0, 0), n=8, scale_d=0)
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)
        for i in T.unroll(4, name="i"):
            out[t, i] = acc[i]

    return k


def shuffle(lane: int, half_warp: bool = False):
    """Four warps; thread ``t`` holds ``7 t + 1`` and stores what ``__shfl_sync`` from
    ``lane`` gives it; ``half_warp`` calls the shuffle from lanes 0..15 only (a misuse: the
    full mask names all 32)."""

    @T.kernel(target="sm_90a", grid=1, block=128)
    def k(out: T.Buffer((128,), "int32")):
        t = T.thread_id()
        mine = T.let("mine", t * 7 + 1)
        if half_warp:
            with T.If(T.lane_id() < 16):
                out[t] = T.cuda.shfl_sync(mine, lane)  # @half-shuffle
        else:
            out[t] = T.cuda.shfl_sync(mine, lane)

    return k


def store_then_read(full_wait: bool):
    """Thread 0 TMA-stores ``tile`` to ``out`` (``cp.async.bulk.wait_group.read`` after it,
    or the full ``wait_group`` with ``full_wait``), then reads the stored bytes back from
    global memory with a generic load into ``back``."""
    holder = {}

    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(
        tma_out: T.TensorMap, out: T.Buffer((16, 32), "float32"), back: T.Buffer((16,), "float32")
    ):
        smem = T.SMEMPool(name="smem")
        tile = smem.alloc_mma((16, 32), "float32", "128B", name="tile")
        smem.commit()
        holder["tile"] = tile
        t = T.thread_id()
        with T.If(t < 16):
            for j in T.serial(32, name="j"):
                tile[t, j] = T.cast(t * 32 + j, "float32")
        T.ptx.fence.proxy_async_shared_cta()
        T.cuda.syncthreads()
        with T.If(t == 0):
            T.ptx.tma.store(tma_out, tile, [0, 0])  # @bulk-store
            T.ptx.tma.commit_group()
            if full_wait:
                T.ptx.tma.wait_group(0)
            else:
                T.ptx.tma.wait_group_read(0)
        T.cuda.syncthreads()
        with T.If(t < 16):
            back[t] = out[t, t]  # @read-back

    return k, holder["tile"]
