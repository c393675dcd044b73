"""Persistent, warp-specialised Hopper GEMM: ``C = A @ B^T``, bf16 or fp8 e4m3 inputs.

A is ``M x K``, B is ``N x K`` (bf16 or both fp8 e4m3) and C is ``M x N`` bf16, all
row-major; accumulation is fp32. One CTA of 384 threads runs per SM and walks the output
tiles of its cluster (``Schedule``):

- warpgroup 0 is the producer. It gives registers back (``setmaxnreg.dec``) and one elected
  thread streams the A and B tiles of every K step into the stage ring with TMA, waiting on
  each stage's ``empty`` mbarrier and arming its ``full`` mbarrier with the byte count.
  In a cluster of ``cluster_m`` CTAs (adjacent M tiles, one N tile) each producer loads
  ``1 / cluster_m`` of B and multicasts it to all of them; in one of ``cluster_n`` CTAs
  (adjacent N tiles, one M tile) ``1 / cluster_n`` of A likewise.
- warpgroups 1 and 2 are the consumers (``setmaxnreg.inc``). Each owns 64 rows of the
  128 x 256 tile: 128 fp32 accumulators a thread, four ``wgmma m64n256`` per 128-byte K tile
  (k16 for bf16, k32 for fp8). One wgmma group stays in flight (``wait_group 1``): the stage
  of K tile ``k - 1`` is released, to every CTA that wrote into it, once the group of tile
  ``k`` has been issued and the older one has completed (in a cluster, lane ``r`` of the
  warpgroup's first warp arrives on CTA ``r``'s barrier). Promoted fp8 (``promote``) sums
  each K tile in a second fragment and adds it into the accumulators (:func:`_promote`).
- the epilogue rounds to bf16, writes 64-column slices (48, 80, 32 or 16 for widths 64
  does not divide) with
  ``stmatrix`` into the consumer's two staging tiles and TMA-stores them; meanwhile the
  producer is already filling the ring for the next tile. TMA zero-fills loads and clips
  stores outside the matrices, so M, N and K need not be multiples of the tile, nor as
  large as one box. Shapes whose rows are not 16-byte aligned run on padded workspace
  copies (``gemm/shapes.py``).

Tile order (``tile_coords``): tiles are taken in groups of ``group_m`` rows of M tiles, every N
tile of a group before the next group, so the CTAs that run together reuse A and B from L2.

Stream-K (``stream_k``, :meth:`Schedule.segments`): instead of whole tiles, each group of CTAs
on adjacent M tiles takes an even share of all K steps; the group that starts a tile adds the
fp32 sums the later groups hand over (:func:`_hand_over`, :func:`_take_over`) and writes C.
AutoGemm uses it where the tiled rounds waste SMs (:func:`stream_k_policy`) and for split-K
(the same K ranges, reduced in the kernel; with 64 rows of A a stage or fewer only the first
consumer computes and hands sums over).
The memory plan is ``gemm/plan.py``'s; ``tilemem plan --example hopper-gemm-persistent``
prints it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import lang as T
from ..cuda.device import array_interface, check, device_pointer, driver
from ..cuda.kernel import KernelProgram
from ..cuda.launch import Launcher
from ..cuda.tma import tile_map
from ..dtype import as_dtype
from ..errors import GemmShapeError
from ..intmath import ceil_div
from ..pool import SMEMPool
from ..validate import check_int
from . import plan as gemm_plan
from . import shapes
from .plan import (
    CLUSTER_SIZES,
    CONSUMERS,
    TILE_M,
    TILE_N,
    tile_k,
)

PRODUCER_REGS = 40  # a TMA-issuing warpgroup needs few registers
CONSUMER_REGS = 232  # 128 accumulators + descriptors + epilogue; 128*40 + 256*232 <= 65536
THREADS = 128 * (1 + CONSUMERS)
DEFAULT_GROUP_M = 8


def tile_coords(tile, m_tiles, n_tiles, group_m):
    """(m, n) tile of linear ``tile`` in the grouped order.

    ``group = tile // (group_m * n_tiles)``; within it ``rows = min(m_tiles - group * group_m,
    group_m)`` M tiles, ``m = group * group_m + local % rows`` and ``n = local // rows``.
    """
    per_group = group_m * n_tiles
    first_m = T.let("first_m", (tile // per_group) * group_m)
    rows = T.let("group_rows", T.min(m_tiles - first_m, group_m))
    local = T.let("local", tile % per_group)
    return T.let("m_unit", first_m + local % rows), T.let("n_tile", local // rows)


@dataclass(frozen=True)
class StreamK:
    """This CTA's share of the stream-K steps (:meth:`Schedule.segments`)."""

    count: Any  # segments
    begin: Any  # first step (unit * k_tiles + K tile)
    end: Any  # one past the last
    first: Any  # unit of the first segment
    last: Any  # unit of the last
    total: Any  # steps of the product
    m_units: Any  # units along M: M tiles / m_group, rounded up
    groups: Any  # CTA groups in the grid
    group: Any  # this CTA's group
    rank: Any  # its place in the group: the M tile of a unit it computes


@dataclass(frozen=True)
class Segment:
    """One stream-K segment (:meth:`Schedule.segment`)."""

    tile: Any  # linear tile index
    m_tile: Any
    n_tile: Any
    k_first: Any  # first K tile of the tile's K; 0 for the tile's owner
    k_end: Any  # one past its last K tile
    k_count: Any
    first_step: Any  # ring step of its first K tile


@dataclass(frozen=True)
class Schedule:
    """Which tiles a CTA computes. A cluster of ``cluster_m`` CTAs takes work units: a unit is
    ``cluster_m`` vertically adjacent tiles sharing one N tile, CTA ``rank`` computing M tile
    ``unit_m * cluster_m + rank``; cluster ``c`` takes units ``c, c + clusters, ...``. A
    cluster of ``cluster_n`` CTAs likewise takes ``cluster_n`` horizontally adjacent tiles
    sharing one M tile, CTA ``rank`` computing N tile ``unit_n * cluster_n + rank``."""

    m_tiles: Any
    n_tiles: Any
    k_tiles: Any
    group_m: Any
    cluster_m: int
    rank: Any  # %cluster_ctarank, or 0 without clusters
    splits: Any = 1  # split-K: K ranges per tile (a kernel parameter), each a unit of its own
    stream_k: bool = False  # the K steps of all tiles split evenly over the grid (segments)
    m_group: Any = 1  # stream-K: CTAs that take the same N tile and K steps (a kernel parameter)
    tile_m: int = TILE_M  # rows of C a tile covers: 128, or 64 where one consumer computes
    cluster_n: int = 1  # CTAs of a cluster along N (sharing A); 1 where cluster_m is not
    relay: bool = False  # consumers free stages locally, a relay warp frees them cluster-wide

    @property
    def size(self) -> int:
        """CTAs in a cluster (1 without clusters)."""
        return self.cluster_m * self.cluster_n

    @property
    def release_size(self) -> int:
        """CTAs a consumer's release arrives on: the cluster's, or 1 with a relay
        (:func:`_relay`), where it arrives on this CTA's ``freed`` barrier only."""
        return 1 if self.relay else self.size

    def units(self):
        """(units this CTA's cluster takes, its first unit, the unit stride, M units, N
        units)."""
        cm, cn = self.cluster_m, self.cluster_n
        m_units = self.m_tiles if cm == 1 else (self.m_tiles + cm - 1) // cm
        n_units = self.n_tiles if cn == 1 else (self.n_tiles + cn - 1) // cn
        first = T.let("cluster_id", T.block_id() // self.size)
        stride = T.let("clusters", T.grid_dim() // self.size)
        total = m_units * n_units
        if not isinstance(self.splits, int):
            total = total * self.splits
        count = T.let("my_units", (total - first + stride - 1) // stride)
        return count, first, stride, m_units, n_units

    def segments(self) -> StreamK:
        """Stream-K (``stream_k``). The grid is ``groups`` groups of ``m_group`` CTAs; a
        unit is ``m_group`` vertically adjacent tiles sharing one N tile (rank ``r`` of a
        group computes M tile ``unit_m * m_group + r``), so the CTAs of a group read the
        same B tile at the same K step (one read from DRAM for all of them, as the tiles
        of one N column run together in the other kernels). The ``units * k_tiles`` K steps
        of the whole product, in unit order, are split evenly over the groups: group ``g``
        takes steps ``[g * total / groups, (g + 1) * total / groups)``, which fall into
        ``count`` segments of consecutive units (the first may start inside its unit, the
        last may end inside it)."""
        kt, size = self.k_tiles, self.m_group
        m_units = (self.m_tiles + size - 1) // size
        total = T.let("sk_total", m_units * self.n_tiles * kt)
        groups = T.let("sk_groups", T.grid_dim() // size)
        group, rank = T.let("sk_group", T.block_id() // size), T.let("sk_rank", T.block_id() % size)
        begin = T.let("sk_begin", group * total // groups)
        end = T.let("sk_end", (group + 1) * total // groups)
        first, last = T.let("sk_first", begin // kt), T.let("sk_last", (end - 1) // kt)
        count = T.let("sk_segments", T.select(end > begin, last - first + 1, 0))
        return StreamK(count, begin, end, first, last, total, m_units, groups, group, rank)

    def segment(self, i, sk: StreamK) -> Segment:
        """Segment ``i`` of this CTA's stream-K steps: its tile, its K tiles ``[k_first,
        k_end)`` and the ring step of its first. The group whose segment starts the unit
        (``k_first == 0``) owns it: each of its CTAs adds the sums of the CTAs of the same
        rank in the groups that hold the rest of the unit's K steps (:meth:`peers_end`;
        each of them holds one segment of it, its first) and writes C."""
        kt, size = self.k_tiles, self.m_group
        unit = T.let("sk_unit", sk.first + i)
        k_first = T.let("sk_k_first", T.select(i == 0, sk.begin - unit * kt, 0))
        k_end = T.let("sk_k_end", T.select(unit == sk.last, sk.end - unit * kt, kt))
        m_unit, n_tile = tile_coords(unit, sk.m_units, self.n_tiles, self.group_m)
        m_tile = T.let("sk_m_tile", m_unit * size + sk.rank)
        step = T.let("sk_step", unit * kt + k_first - sk.begin)
        count = T.let("sk_k_count", k_end - k_first)
        return Segment(unit, m_tile, n_tile, k_first, k_end, count, step)

    def peers_end(self, seg: Segment, sk: StreamK):
        """One past the last group holding K steps of ``seg``'s unit: the group holding step
        ``p`` is ``((p + 1) * groups - 1) // total`` (the last ``g`` with ``g * total /
        groups <= p``); ``group + 1`` when the segment ends its unit."""
        last = ((seg.tile + 1) * self.k_tiles * sk.groups - 1) // sk.total
        return T.let("sk_peers_end", T.select(seg.k_end < self.k_tiles, last + 1, sk.group + 1))

    def tile(self, i, units):
        """(M tile, N tile, K range) of this CTA in its ``i``-th unit; ``units`` from
        :meth:`units`. With split-K, unit ``u`` is K range ``u % splits`` of tile ``u / splits``
        (the ranges of one tile run side by side); otherwise the K range is 0 (all of K)."""
        _, first, stride, m_units, n_units = units
        unit = T.let("unit", first + i * stride)
        split: Any = 0
        if not isinstance(self.splits, int):
            split = T.let("split", unit % self.splits)
            unit = T.let("tile_unit", unit // self.splits)
        m_unit, n_unit = tile_coords(unit, m_units, n_units, self.group_m)
        if self.cluster_n > 1:
            return m_unit, T.let("n_tile", n_unit * self.cluster_n + self.rank), split
        if self.cluster_m == 1:
            return m_unit, n_unit, split
        return T.let("m_tile", m_unit * self.cluster_m + self.rank), n_unit, split


def _init_barriers(full, empty, size: int, consumers: int = CONSUMERS, freed=None) -> None:
    """Thread 0 arms each stage's barriers: ``full`` for the producer's one arrival (plus the
    TMA bytes), ``empty`` for one arrival per computing consumer warpgroup (``consumers``)
    of every CTA in the cluster of ``size`` (each of them reads the share of B, or of A, that
    this CTA's producer multicasts). With a relay (``freed`` given, :func:`_relay`) this
    CTA's consumers arrive on ``freed`` and ``empty`` counts one relay arrival per CTA.
    Then the block, or the whole cluster, syncs so no peer arrives on a barrier before it
    exists."""
    with T.If(T.thread_id() == 0):
        for s in range(full.shape[0]):
            T.ptx.mbarrier.init((full, s), 1)
            if freed is None:
                T.ptx.mbarrier.init((empty, s), consumers * size)
            else:
                T.ptx.mbarrier.init((freed, s), consumers)
                T.ptx.mbarrier.init((empty, s), size)
        T.ptx.fence.mbarrier_init()
    if size > 1:
        T.ptx.cluster.sync()
    else:
        T.cuda.syncthreads()


ZERO_BARRIER = 3  # bar.sync id: the idle consumer has zeroed A's unloaded rows (1, 2: epilogue)


def _zero_a_rows(a, a_rows: int) -> None:
    """The idle second consumer zeroes rows ``a_rows..63`` of every A stage, once, while the
    producer already fills rows ``0..a_rows``: the first consumer's wgmma reads 64 rows but
    TMA fills only ``a_rows``, and the rest must hold numbers (they give rows of C past M,
    never stored). A row of a stage is one 128-byte swizzle row, its eight 16-byte chunks
    permuted within it, so the rows are zeroed whole with ``stmatrix.x4`` of zero words: one
    instruction writes a 16-byte chunk at each lane's address (lane ``l`` of warp ``w``:
    chunk ``l % 8`` of row ``a_rows + 16 j + 4 w + l / 8`` in pass ``j``), 4 rows a warp, 16
    a warpgroup; a pass past row 63 is skipped by whole warps (``a_rows`` is a multiple of
    8). Stores of one element a thread took 14 to 16 times the instructions for fp8, 8
    for bf16 (docs/PERFORMANCE.md, "Zeroing A's unloaded rows"), and the first consumer
    waits for them. Generic-proxy stores, fenced for the async proxy that wgmma reads
    through, then bar.sync :data:`ZERO_BARRIER` with the first consumer (256 threads)."""
    stages, cols = a.shape[0], a.shape[-1]
    chunk = cols // 8  # elements of a 16-byte chunk: 8 bf16, 16 fp8
    lane, warp = T.lane_id(), T.warp_id() % 4
    row = T.let("z_row", a_rows + warp * 4 + lane // 8)
    col = T.let("z_col", lane % 8 * chunk)
    rows = TILE_M // CONSUMERS
    for j in range(ceil_div(rows - a_rows, 16)):
        with (
            T.If(row + 16 * j < rows) if a_rows + 16 * (j + 1) > rows else contextlib.nullcontext()
        ):
            for s in range(stages):
                T.ptx.stmatrix_x4((a, s, row + 16 * j, col), [0, 0, 0, 0])
    T.ptx.fence.proxy_async_shared_cta()
    T.cuda.named_barrier(ZERO_BARRIER, 2 * 128)


def _stage_and_phase(step, stages: int):
    """Ring slot of K step ``step`` (counted over all of the CTA's tiles) and its parity."""
    return T.let("stage", step % stages), T.let("phase", (step // stages) % 2)


def _producer(tma_a, tma_b, a, b, full, empty, sched: Schedule, a_rows: int = TILE_M) -> None:
    """Per K step: wait for the stage to be free everywhere it is read, arm ``full`` with the
    stage's bytes, load this CTA's A tile and its share of B. With a cluster along M, B's
    ``TILE_N / cluster_m`` rows of this rank are multicast into every CTA of the cluster, which
    all compute the same N tile; along N, A's ``a_rows / cluster_n`` rows likewise (they all
    compute the same M tile). So each CTA's ``full`` barrier still receives a whole stage."""
    stages, tk, tile_n = a.shape[0], a.shape[-1], b.shape[1]
    stage_bytes = (a.nbytes * a_rows // a.shape[1] + b.nbytes) // stages  # A: the top a_rows
    cm, cn = sched.cluster_m, sched.cluster_n
    everyone = (1 << sched.size) - 1 if sched.size > 1 else None
    # the first row of this rank's share of the A tile and of the B tile
    a_row = sched.rank * (a_rows // cn) if cn > 1 else 0
    b_row = sched.rank * (tile_n // cm) if cm > 1 else 0

    def load(s, phase, k0, m_tile, n_tile) -> None:
        T.ptx.mbarrier.wait((empty, s), phase ^ 1)
        T.ptx.mbarrier.arrive_expect_tx((full, s), stage_bytes)
        T.ptx.tma.load(
            tma_a,
            (a, s, a_row, 0),
            (full, s),
            [k0, m_tile * sched.tile_m + a_row],
            multicast_mask=everyone if cn > 1 else None,
        )
        T.ptx.tma.load(
            tma_b,
            (b, s, b_row, 0),
            (full, s),
            [k0, n_tile * tile_n + b_row],
            multicast_mask=everyone if cm > 1 else None,
        )

    steps = _each_step(sched, stages, tk, load)
    # every load issued: the CTA's last K steps and epilogue are left, under which the next
    # kernel's CTAs may start their set-up (a CTA counts as signalled at its first
    # launch_dependents, whichever thread issues it). Signalled as the CTA starts instead,
    # the large full-grid products measured 2-4% slower in one run, this way 0-2% faster
    # (docs/PERFORMANCE.md, "Programmatic dependent launch": within the run-to-run spread).
    T.ptx.griddepcontrol.launch_dependents()
    if sched.size > 1 and PRODUCER_TAIL:
        _producer_tail(empty, steps, stages)


def _each_step(sched: Schedule, stages: int, tk: int, visit: Callable[..., None]):
    """``visit(stage, phase, k0, m_tile, n_tile)`` for each K step this CTA computes, in ring
    order: the producer's loads and the relay's releases walk the same steps. Returns the
    number of steps (the ring step after the last)."""
    if sched.stream_k:
        sk = sched.segments()
        for i in T.serial(sk.count, name="t"):
            seg = sched.segment(i, sk)
            for kt in T.serial(seg.k_count, name="kt"):
                s, phase = _stage_and_phase(seg.first_step + kt, stages)
                visit(s, phase, T.let("k0", (seg.k_first + kt) * tk), seg.m_tile, seg.n_tile)
        return sk.end - sk.begin
    k_tiles = sched.k_tiles
    units = sched.units()
    for i in T.serial(units[0], name="t"):
        m_tile, n_tile, split = sched.tile(i, units)
        for kt in T.serial(k_tiles, name="kt"):
            s, phase = _stage_and_phase(i * k_tiles + kt, stages)
            k0 = kt * tk if isinstance(split, int) else T.let("k0", (split * k_tiles + kt) * tk)
            visit(s, phase, k0, m_tile, n_tile)
    return units[0] * k_tiles


def _producer_tail(empty, steps, stages: int) -> None:
    """The producer waits, as if it were to load ``stages`` more steps after its ``steps``,
    until every stage has been freed by every consumer that reads it, the cluster's peers
    included: then no peer will arrive on this CTA's barriers again, and the CTA may exit
    without a cluster barrier at the end. (A peer's multicast into this CTA lands before this
    CTA's consumers finish, since they wait for it; this CTA's own arrivals on its peers'
    barriers are waited for by their producers' tails.) Stages the ring never used wait on
    their fresh barriers' previous phase, which counts as complete."""
    for j in T.serial(stages, name="tail"):
        s, phase = _stage_and_phase(T.let("tail_step", steps + j), stages)
        T.ptx.mbarrier.wait((empty, s), phase ^ 1)


def _relay(freed, empty, sched: Schedule) -> None:
    """A cluster's stage releases, off the consumers' path: lane ``r`` of the producer
    warpgroup's second warp waits for this CTA's consumers to free each stage (``freed``,
    their local arrivals) and arrives on CTA ``r``'s ``empty`` barrier of that stage, whose
    producer may then refill it here (its multicast share).

    Why: a consumer that arrived on a peer's barrier itself (``mapa`` + a remote
    ``mbarrier.arrive``) stalled at its next K tile's first wgmma until the remote arrival
    completed (H200, ncu's warp-state samples on 2x1 pairs of 32-row tiles: 22% of the
    consumer's samples at that wgmma against 6% alone), a fixed cost each K step that no
    ring depth hid (pairs ran 0.69-0.70 of cuBLAS at 13, 11, 9 and 7 stages; docs/
    PERFORMANCE.md, "Cluster kernels without the end barrier; pairs of small tiles taken
    further")."""

    def release(s, phase, *_) -> None:
        T.ptx.mbarrier.wait((freed, s), phase)
        T.ptx.mbarrier.arrive_cluster((empty, s), T.lane_id())

    _each_step(sched, freed.shape[0], 0, release)


def _release(empty, stage, size: int) -> None:
    """One arrival per consumer warpgroup on the stage's ``empty`` barrier of every CTA whose
    producer wrote into it (all ``size`` of the cluster's). In a cluster, lane ``r`` of the
    warpgroup's first warp arrives on CTA ``r``'s barrier, the ``size`` remote arrivals side
    by side. One elected thread arriving on each CTA in turn made 2x1 clusters of 128 x 96
    tiles 17-24% slower than these arrivals do (and slower than the same tiles alone) on three
    one-wave bf16 shapes, and the policy's fp8 clusters 3-10% slower (H200,
    docs/PERFORMANCE.md "Cluster arrivals in parallel").

    Alone, the warpgroup's thread 0 arrives: a plain lane test ptxas turns into one predicated
    arrive, where ``elect.sync`` in the consumer's K loop made it keep the loop's counters and
    both wgmma descriptors in vector registers, moved into uniform ones (``R2UR``) before
    every wgmma (docs/PERFORMANCE.md, "A uniform warpgroup index")."""
    if size == 1:
        with T.If(T.thread_id() % 128 == 0):
            T.ptx.mbarrier.arrive((empty, stage))
    else:
        with T.If(T.all_of(T.warp_id() % 4 == 0, T.lane_id() < size)):
            T.ptx.mbarrier.arrive_cluster((empty, stage), T.lane_id())


def _warpgroup():
    """The thread's warpgroup, through a shuffle from lane 0: warp-uniform to ptxas, which then
    keeps what the consumer computes from it (wgmma descriptors, barrier and staging
    addresses) in uniform registers (docs/PERFORMANCE.md, "A uniform warpgroup index")."""
    return T.let("warpgroup", T.cuda.shfl_sync(T.warp_id() // 4))


def _mainloop(
    acc,
    a,
    b,
    full,
    empty,
    consumer,
    first_step,
    sched: Schedule,
    part,
    every: int,
    k_count=None,
    staggered: bool = False,
) -> None:
    """All K tiles of one output tile (or ``k_count`` of them, a stream-K segment) into
    ``acc``; the first wgmma overwrites (scale-d 0).

    One wgmma consumes 32 bytes of K (PTX ISA, "wgmma.mma_async": k16 for bf16, k32 for
    fp8), so a 128-byte K tile takes four for either input type. With a ``part`` fragment
    (not None: fp8 with promotion, :func:`_promote`) the wgmmas of each K tile accumulate
    into ``part`` instead and the K tile's sum is added into ``acc`` by the consumer's fp32
    adds; ``every`` > 1 sums that many K tiles in ``part`` before each add
    (:func:`_promote_groups`; ``staggered``: two computing consumers, whose groups are
    offset); with a pair of fragments (a consumer computing alone,
    :data:`OVERLAPPED_TILE_NS`) the adds run under the next group's wgmmas
    (:func:`_promote_overlapped`)."""
    stages = a.shape[0]
    k_tiles = sched.k_tiles if k_count is None else k_count
    if part is not None:
        for i in range(acc.shape[0]):
            acc[i] = T.cast(0, "float32")
        if isinstance(part, tuple):  # two fragments: promotion under the next group's wgmmas
            _promote_overlapped(
                acc, part, a, b, full, empty, consumer, first_step, sched, every, k_tiles
            )
            return
        if every > 1:
            _promote_groups(
                acc, part, a, b, full, empty, consumer, first_step, sched, every, k_tiles, staggered
            )
            return
    for kt in T.serial(k_tiles, name="kt"):
        s, phase = _stage_and_phase(first_step + kt, stages)
        first = 0 if part is not None else (kt > 0)  # a promoted K tile starts from zero
        _k_tile(acc if part is None else part, a, b, full, s, phase, consumer, first)
        if part is not None:
            _promote(acc, part, empty, s, sched.release_size)
        else:
            T.ptx.wgmma.wait_group(1)  # K tile kt - 1 is done: its stage may be refilled
            with T.If(kt > 0):
                _release(empty, (first_step + kt - 1) % stages, sched.release_size)
    if part is None:
        T.ptx.wgmma.wait_group(0)
        _release(empty, (first_step + k_tiles - 1) % stages, sched.release_size)


def _k_tile(frag, a, b, full, stage, phase, consumer, first) -> None:
    """Wait for ``stage`` to be full, then its K tile's wgmmas into ``frag`` as one committed
    group; the first with scale-d ``first`` (0: overwrite ``frag``, 1: add to it)."""
    tk, dtype = a.shape[-1], a.dtype
    step = 256 // dtype.bits
    rows = TILE_M // CONSUMERS
    T.ptx.mbarrier.wait((full, stage), phase)
    T.ptx.wgmma.fence()
    for kk in range(tk // step):
        T.ptx.wgmma.mma_async(
            frag,
            T.ptx.wgmma.desc(a, stage, consumer * rows, kk * step),
            T.ptx.wgmma.desc(b, stage, 0, kk * step),
            n=b.shape[1],
            dtype=dtype.name,
            scale_d=first if kk == 0 else 1,
        )
    T.ptx.wgmma.commit_group()


def _promote_groups(
    acc, part, a, b, full, empty, consumer, first_step, sched, every, k_tiles, staggered=False
) -> None:
    """Promotion every ``every`` of the ``k_tiles`` K tiles: each run-time iteration issues
    ``every`` K tiles in straight-line code, one wgmma group each, into ``part`` (the first
    from zero) and promotes their sum once (:func:`_promote`); the ``k_tiles % every`` K
    tiles left over (a K range need not be a multiple) are one shorter group after the loop.
    No group is in flight at an iteration's end, so no fragment register is read across the
    loop's back edge while a wgmma that writes ``part`` may still run (ptxas then serialises
    every wgmma: C7514).

    ``staggered`` (two computing consumers): the second consumer's first group is
    :data:`STAGGER_K_TILES` K tiles, its later groups ``every`` from there, so its
    promotions (the drain of its wgmmas and its adds) fall between the first consumer's, and
    each consumer's wgmmas keep the tensor cores busy while the other drains and adds. Every
    group still sums at most ``every`` K tiles."""

    def group(step, count: int) -> None:
        _promote_group(acc, part, a, b, full, empty, consumer, step, count, sched)

    lead = STAGGER_K_TILES
    if not staggered or not 0 < lead < every:
        _in_runs(k_tiles, every, first_step, "kg", group)
        return
    with T.If(consumer == 0):
        with T.Then():
            _in_runs(k_tiles, every, first_step, "kg", group)
        with T.Else():  # a unit has at least one K tile (a stream-K segment too)
            group(first_step, lead)
            _in_runs(k_tiles - lead, every, first_step + lead, "kg", group)


def _in_runs(k_tiles, run: int, first_step, name: str, body: Callable[..., None]) -> None:
    """``body(step, count)`` over ``k_tiles`` K tiles from the CTA's K step ``first_step``:
    a run-time loop (variable ``name``) over the whole runs of ``run`` K tiles, then the
    ``k_tiles % run`` left over (a K range need not be a multiple) as one shorter call in a
    branch of its own. ``body`` emits straight-line code that completes its wgmmas, so none
    is in flight across the loop's back edge or into a branch."""
    for g in T.serial(k_tiles // run, name=name):
        body(first_step + g * run, run)
    for rest in range(1, run):
        with T.If(k_tiles % run == rest):
            body(first_step + k_tiles - rest, rest)


def _promote_overlapped(
    acc, parts, a, b, full, empty, consumer, first_step, sched, every, k_tiles
) -> None:
    """Promotion with two fragments (``parts``; widths of :data:`OVERLAPPED_TILE_NS`): runs
    of :data:`OVERLAP_GROUPS` groups of ``every`` K tiles (:func:`_promote_run`), each group's
    sum added into ``acc`` under the next group's wgmmas; the ``k_tiles`` K tiles left over
    past the whole runs are one shorter run in a branch of their own.

    A run ends with every group complete: ptxas serialises every wgmma (C7514) when a group
    in flight crosses the loop's back edge and its fragment is read in the next iteration,
    even after a ``wait_group`` that completes it (seen with a group in flight across the
    edge: ``ptxas -v``, tests/cuda/test_gemm_promote_every.py), and when a group in flight
    enters a branch (C7518)."""

    def run(step, tiles: int) -> None:
        _promote_run(acc, parts, a, b, full, empty, consumer, step, sched, every, tiles)

    _in_runs(k_tiles, OVERLAP_GROUPS * every, first_step, "kr", run)


def _promote_run(acc, parts, a, b, full, empty, consumer, step, sched, every, tiles) -> None:
    """``tiles`` K tiles from the CTA's K step ``step`` in groups of ``every`` (the last may
    be shorter), alternately into ``parts[0]`` and ``parts[1]``, in straight-line code.

    Once a group's first K tile is issued, ``wait_group 1`` completes the group before it
    (only the newest commit group may still run), whose stages are freed and whose fragment
    is added into ``acc`` while the tensor cores work on the new group; the new group's other
    K tiles follow. The last group is waited for (``wait_group 0``) and added at the end.
    With one fragment (:func:`_promote_groups`) every add waits for the fragment's last
    wgmma with nothing of its own queued behind it; only another consumer promoting out of
    step (:data:`STAGGER_K_TILES`) keeps the tensor cores busy meanwhile."""
    stages = a.shape[0]
    starts = list(range(0, tiles, every))

    def release(first: int, count: int) -> None:
        for j in range(count):
            _release(empty, (step + first + j) % stages, sched.release_size)

    for g, first in enumerate(starts):
        frag, count = parts[g % 2], min(every, tiles - first)
        for j in range(count):
            s, phase = _stage_and_phase(step + first + j, stages)
            _k_tile(frag, a, b, full, s, phase, consumer, 1 if j else 0)
            if j == 0 and g > 0:
                T.ptx.wgmma.wait_group(1)  # all but this K tile: the group before is done
                release(starts[g - 1], every)
                _add_into(acc, parts[(g - 1) % 2])
    T.ptx.wgmma.wait_group(0)
    release(starts[-1], tiles - starts[-1])
    _add_into(acc, parts[(len(starts) - 1) % 2])


def _add_into(acc, part) -> None:
    """``acc += part``: the consumer's fp32 adds of a promotion."""
    for i in range(acc.shape[0]):
        acc[i] = acc[i] + part[i]


def _promote_group(acc, part, a, b, full, empty, consumer, step, count: int, sched) -> None:
    """``count`` K tiles from the CTA's K step ``step`` summed in ``part``, then added into
    ``acc``. Each stage is released once ``wait_group`` has seen its group complete: the
    group of K tile ``j`` is complete when at most ``count - 1 - j`` newer ones are pending."""
    stages = []
    for j in range(count):
        s, phase = _stage_and_phase(step + j, a.shape[0])
        _k_tile(part, a, b, full, s, phase, consumer, 1 if j else 0)  # from zero, then adding
        stages.append(s)
    for j, s in enumerate(stages[:-1]):
        T.ptx.wgmma.wait_group(count - 1 - j)
        _release(empty, s, sched.release_size)
    _promote(acc, part, empty, stages[-1], sched.release_size)


def _promote(acc, part, empty, stage, size: int) -> None:
    """fp32 promotion of one K tile's fp8 sums (or of a group's, ``promote_every``): wait for
    its wgmmas, free its (last) stage, and add ``part`` into ``acc`` with the consumer's own
    fp32 adds.

    Hopper's fp8 wgmma adds its products into the accumulator with fewer bits than fp32
    (DeepSeek-V3 technical report, arXiv 2412.19437, section 3.3.2: about 14), so a sum over
    all of K loses bits as K grows; summed over one K tile only (128 elements, four k32
    wgmmas) and then added in full fp32, the error stays that of a
    128-term sum whatever K is. 128 is the shortest interval the K tile allows (a promotion
    needs the tile's wgmmas complete, so it happens between K tiles) and the interval that
    report measured as enough; CUTLASS's fp8 kernels default to the same four wgmmas. Cost:
    ``tile_n / 2`` more fp32 registers a thread (:data:`PROMOTED_TILE_NS`) and a
    ``wait_group 0`` each K tile, during which the other consumer warpgroup's wgmmas keep
    the tensor cores busy where the two promote out of step (:func:`_promote_groups`; in step
    they drain together), and ``tile_n / 2`` fp32 adds a thread each K tile (measured as
    most of the cost); ``promote_every`` = 2 halves the adds and the waits for a 256-term sum
    in the wgmma's accumulator."""
    T.ptx.wgmma.wait_group(0)  # the K tile's wgmmas are done: part holds its sum
    _release(empty, stage, size)
    _add_into(acc, part)


# The epilogue's leader waits for the reads of a staging buffer's last stores just before the
# group that overwrites the buffer, so a tile's last group goes on to the next tile's mainloop
# without waiting (its reads are waited for a mainloop later, where they are long done); False
# waits right after committing each group, as before (a switch for timing the two)
WAIT_BEFORE_REUSE = True


def _epilogue(acc, c, tma_c, consumer, m0, n0, tile, staging: gemm_plan.Staging) -> None:
    """bf16 C slices of 64 rows x ``c.shape[-1]`` columns (:func:`~.plan.epilogue_cols`: 64,
    48 for the 240- and 96-wide tiles, 80 for 160, 32 for 224, 16 for 176) through the
    consumer's ``staging.buffers`` buffers of staging tiles, stored by TMA. A buffer holds a
    group of ``staging.group`` slices (:func:`~.plan.epilogue_staging`: 4 for 176, 2 for 224,
    else 1): the consumer's 128 threads write a group's slices with ``stmatrix`` between two
    named barriers, and one thread stores them and commits them as one bulk group. Before a
    group's first barrier that thread waits until only the groups of the other buffers may
    still be reading (:data:`WAIT_BEFORE_REUSE`): the buffer this group overwrites has been
    read by TMA, and a tile's last group does not wait at all (the CTA's last wait is the
    ``wait_group(0)`` before it exits).
    Groups take the buffers in turn; ``tile`` (the CTA's tile counter) carries the turn on from
    one output tile to the next when the buffers do not divide a tile's groups (3 groups of
    128 x 176 or 5 of 128 x 240 in 2 or 3 buffers), so a group never overwrites the buffer whose
    TMA stores may still be reading. (A stream-K CTA skips the epilogue of its first segment
    only, where nothing was staged before.)

    Accumulator fragment of wgmma m64nN (PTX ISA, "wgmma register fragments"): in warp w,
    ``acc[4 j + r]`` is row ``16 w + lane / 4 + 8 (r / 2)``, column ``8 j + 2 (lane % 4) + r % 2``.
    One ``stmatrix.x4`` stores columns 8j..8j+15 of the warp's 16 rows: matrices (rows 0-7, j),
    (rows 8-15, j), (rows 0-7, j+1), (rows 8-15, j+1), lane ``8 q + r`` addressing row r of
    matrix q.
    """
    lane, warp = T.lane_id(), T.warp_id() % 4
    row = T.let("st_row", warp * 16 + (lane // 8) % 2 * 8 + lane % 8)
    col = T.let("st_col", (lane // 16) * 8)
    barrier = T.let("epi_bar", consumer + 1)  # bar.sync 1 and 2: one per consumer warpgroup
    leader = T.thread_id() % 128 == 0
    rows, cols = TILE_M // CONSUMERS, c.shape[-1]
    slices = acc.shape[0] * 2 // cols  # m64nN: N / 2 accumulators a thread
    buffers, group = staging
    groups = -(-slices // group)
    for g in range(groups):
        turn = (tile * groups + g) % buffers if groups % buffers else g % buffers
        first = (consumer * buffers + turn) * group  # the buffer's first staging tile
        members = range(g * group, min(slices, (g + 1) * group))
        if WAIT_BEFORE_REUSE:
            with T.If(leader):
                T.ptx.tma.wait_group_read(buffers - 1)
        T.cuda.named_barrier(barrier, 128)  # the stores that last read this buffer are done
        for i, j in enumerate(members):
            for q in range(cols // 16):
                n8 = (j * cols + q * 16) // 8
                words = [
                    T.pack_bf16x2(acc[4 * (n8 + h) + 2 * h2], acc[4 * (n8 + h) + 2 * h2 + 1])
                    for h in range(2)
                    for h2 in range(2)
                ]
                T.ptx.stmatrix_x4((c, first + i, row, col + q * 16), words)
        T.ptx.fence.proxy_async_shared_cta()  # generic-proxy writes, read next by TMA
        T.cuda.named_barrier(barrier, 128)
        with T.If(leader):
            for i, j in enumerate(members):
                T.ptx.tma.store(tma_c, (c, first + i, 0, 0), [n0 + j * cols, m0 + consumer * rows])
            T.ptx.tma.commit_group()
            if not WAIT_BEFORE_REUSE:
                T.ptx.tma.wait_group_read(buffers - 1)


def _store_partial(acc, work, m_rows, consumer, m0, n0, split, tile_m: int = TILE_M) -> None:
    """Split-K: this K range's fp32 sums of the consumer's 64 rows into ``work`` (``splits x
    m_rows`` rows, whole tiles of columns): row ``split * m_rows + r`` for C's row ``r``, rows
    ``r >= m_rows`` skipped, and, in a tile of fewer than 64 rows (``tile_m``), the fragment's
    rows past the tile (the next M tile's rows of C). Fragment layout as in :func:`_epilogue`:
    ``acc[4 j + 2 h + e]`` is row ``16 w + lane / 4 + 8 h``, column ``8 j + 2 (lane % 4) + e``.
    Plain stores, read by :func:`splitk_reduce` after the kernel."""
    lane, warp = T.lane_id(), T.warp_id() % 4
    local = T.let("p_local", warp * 16 + lane // 4)  # the row in the consumer's 64
    row = T.let("p_row", m0 + consumer * (TILE_M // CONSUMERS) + local)
    col = T.let("p_col", n0 + lane % 4 * 2)
    for half in range(2):
        inside = row + 8 * half < m_rows
        if tile_m < TILE_M // CONSUMERS:
            inside = T.all_of(inside, local + 8 * half < tile_m)
        with T.If(inside):
            out = T.let(f"p_out{half}", split * m_rows + row + 8 * half)
            for j in range(acc.shape[0] // 4):
                for e in range(2):
                    work[out, col + 8 * j + e] = acc[4 * j + 2 * half + e]


def _consumer(
    tma_c,
    a,
    b,
    c,
    full,
    empty,
    consumer,
    sched: Schedule,
    staging: gemm_plan.Staging,
    partial=None,
    a_rows: int = TILE_M,
    promote: bool = False,
    promote_every: int = 1,
) -> None:
    """Per unit: the mainloop, then the epilogue (bf16 C by TMA through the ``staging``
    buffers), or with split-K (``partial = (work, m_rows)``) the fp32 partial sums into the
    workspace. When a stage holds at most 64 rows of A (``a_rows``) only the first consumer
    computes; the second zeroes A's rows past ``a_rows`` (fewer than 64) and exits, and the
    ``empty`` barriers count the first alone. (Freeing every stage beside the first instead,
    as it once did, measured 2% slower over the H200's 49 shapes that run such kernels, up to
    6% on 64-row tiles, docs/PERFORMANCE.md, "64-row tiles"; our reading, not measured: its 4
    warps polled each stage's barrier on the SM sub-partitions the computing warps issue
    from.)"""
    if gemm_plan.computing_consumers(a_rows) == 1:
        with T.If(consumer == 0):
            with T.Then():
                if a_rows < TILE_M // CONSUMERS:
                    T.cuda.named_barrier(ZERO_BARRIER, 2 * 128)  # A's other rows are zero
                _compute(
                    tma_c,
                    a,
                    b,
                    c,
                    full,
                    empty,
                    0,
                    sched,
                    staging,
                    partial,
                    promote,
                    promote_every,
                    alone=True,
                )
            with T.Else():
                if a_rows < TILE_M // CONSUMERS:
                    _zero_a_rows(a, a_rows)
        return
    _compute(tma_c, a, b, c, full, empty, consumer, sched, staging, partial, promote, promote_every)


def _compute(
    tma_c,
    a,
    b,
    c,
    full,
    empty,
    consumer,
    sched: Schedule,
    staging: gemm_plan.Staging,
    partial=None,
    promote: bool = False,
    promote_every: int = 1,
    alone: bool = False,
) -> None:
    """The consumer's units: mainloop and epilogue each (see :func:`_consumer`); ``promote``
    sums each K tile in a second fragment first (:func:`_promote`), and a consumer ``alone``
    (the one that computes with 64 or fewer rows of A) on a width of
    :data:`OVERLAPPED_TILE_NS` in two (:func:`_promote_overlapped`); two promote out of step
    where :func:`_out_of_step` says so."""
    tile_n = b.shape[1]
    acc = T.alloc_local(tile_n // 2, "float32", name="acc")
    part: Any = T.alloc_local(tile_n // 2, "float32", name="part") if promote else None
    if promote and alone and tile_n in OVERLAPPED_TILE_NS:  # (part, next): _promote_overlapped
        part = (part, T.alloc_local(tile_n // 2, "float32", name="part_next"))
    if sched.stream_k:
        _compute_stream_k(
            acc,
            part,
            tma_c,
            a,
            b,
            c,
            full,
            empty,
            consumer,
            sched,
            partial,
            promote_every,
            staging,
            alone,
        )
        return
    units = sched.units()
    for i in T.serial(units[0], name="t"):
        m_tile, n_tile, split = sched.tile(i, units)
        first_step = T.let("first_step", i * sched.k_tiles)
        with T.phase("mainloop"):
            _mainloop(
                acc,
                a,
                b,
                full,
                empty,
                consumer,
                first_step,
                sched,
                part,
                promote_every,
                staggered=_out_of_step(alone, sched),
            )
        with T.phase("epilogue"):
            if partial is None:
                m0, n0 = m_tile * sched.tile_m, n_tile * tile_n
                _epilogue(acc, c, tma_c, consumer, m0, n0, i, staging)
            else:
                work, m_rows = partial
                m0 = m_tile * sched.tile_m
                _store_partial(
                    acc, work, m_rows, consumer, m0, n_tile * tile_n, split, sched.tile_m
                )
    if partial is None:
        with T.If(T.thread_id() % 128 == 0):
            T.ptx.tma.wait_group(0)  # C fully written before the CTA retires


def _out_of_step(alone: bool, sched: Schedule) -> bool:
    """Whether the two computing consumers promote out of step (:data:`STAGGER_K_TILES`):
    in a CTA alone, not in a cluster (measured on the H200, one process, median of 3: out of
    step, 2x1 clusters of 128 x 192 ran 0.2% slower on the geometric mean of 13 shapes, from
    0.969 on 8192 x 14336 x 4096 to 1.041, where CTAs alone gained 1.8% over 27, faster on 23,
    from 0.981 to 1.087 on 1024 x 4096 x 14336; docs/PERFORMANCE.md "Promotions out of
    step"). A consumer computing ``alone`` has no other to keep out of step with."""
    return not alone and sched.size == 1


def _compute_stream_k(
    acc,
    part,
    tma_c,
    a,
    b,
    c,
    full,
    empty,
    consumer,
    sched,
    fixup,
    promote_every,
    staging: gemm_plan.Staging,
    alone=False,
) -> None:
    """Stream-K: each segment's mainloop; a segment that starts inside its tile hands its
    fp32 sums to the tile's owner (:func:`_hand_over`), the owner adds them
    (:func:`_take_over`) and writes C. ``fixup = (work, flags)``."""
    work, flags = fixup
    tile_n = b.shape[1]
    sk = sched.segments()
    for i in T.serial(sk.count, name="t"):
        seg = sched.segment(i, sk)
        with T.phase("mainloop"):
            _mainloop(
                acc,
                a,
                b,
                full,
                empty,
                consumer,
                seg.first_step,
                sched,
                part,
                promote_every,
                seg.k_count,
                staggered=_out_of_step(alone, sched),
            )
        with T.phase("epilogue"), T.If(seg.k_first > 0):
            with T.Then():
                _hand_over(acc, work, flags, consumer, T.block_id())
            with T.Else():
                _take_over(acc, work, flags, consumer, sk, sched.peers_end(seg, sk), sched.m_group)
                m0, n0 = seg.m_tile * sched.tile_m, seg.n_tile * tile_n
                _epilogue(acc, c, tma_c, consumer, m0, n0, i, staging)
    with T.If(T.thread_id() % 128 == 0):
        T.ptx.tma.wait_group(0)  # C fully written before the CTA retires


def _fixup_slot(cta, consumer, regs: int):
    """(first row of ``work``, flag index) of one consumer warpgroup of CTA ``cta``: its
    ``regs`` accumulators a thread as ``regs`` rows of 128 threads (thread ``t``'s register
    ``r`` at row ``first + r``, column ``t``: a warp's 32 stores or loads of one register are
    128 consecutive bytes)."""
    slot = T.let("fix_slot", cta * CONSUMERS + consumer)
    return T.let("fix_row", slot * regs), slot


def _hand_over(acc, work, flags, consumer, cta) -> None:
    """A segment that does not start its tile: store the consumer's sums to this CTA's slot
    of ``work`` (each CTA hands over at most one segment, its first), ``bar.sync`` the
    warpgroup, and let one thread fence and raise the slot's flag with a release at gpu
    scope (the pattern of :mod:`tilemem.ir.intrinsics.memory`)."""
    regs = acc.shape[0]
    row, slot = _fixup_slot(cta, consumer, regs)
    t = T.let("fix_t", T.thread_id() % 128)
    for r in range(regs):
        work[row + r, t] = acc[r]
    T.cuda.named_barrier(consumer + 1, 128)  # every thread's stores before the release
    with T.If(t == 0):
        T.ptx.fence.acq_rel_gpu()
        T.ptx.atom.add_acq_rel_gpu(flags, slot, 1)


def _take_over(acc, work, flags, consumer, sk: StreamK, peers_end, size) -> None:
    """The tile's owner: for each group ``g = group + 1 .. peers_end - 1`` in order (the same
    order every run: C's bits do not depend on which CTA finishes first), the CTA of this
    rank in it (``g * size + rank``) holds sums of this tile; one thread waits
    for its flag with an acquire at gpu scope and sets it back to 0 for the next launch
    (no CTA of this launch reads it again), ``bar.sync`` hands the acquire to the warpgroup,
    and every thread adds the peer's sums into its accumulators."""
    regs = acc.shape[0]
    t = T.let("fix_t", T.thread_id() % 128)
    for j in T.serial(peers_end - sk.group - 1, name="peer"):
        row, slot = _fixup_slot((sk.group + 1 + j) * size + sk.rank, consumer, regs)
        with T.If(t == 0):
            T.ptx.ld.wait_ge_acquire_gpu(flags, slot, 1)
            T.ptx.atom.add_acq_rel_gpu(flags, slot, 0xFFFFFFFF)  # back to 0
        T.cuda.named_barrier(consumer + 1, 128)
        for r in range(regs):
            acc[r] = acc[r] + work[row + r, t]


# A cluster kernel's CTA exits once its producer has seen every stage freed by the whole
# cluster (_producer_tail) instead of at a cluster barrier that every thread of the cluster
# meets at the end. Measured on the H200 (docs/PERFORMANCE.md, "Cluster kernels without the
# end barrier"; benchmarks/gemm_cluster_end.py, medians of 2, one process): on every shape of
# the benchmark where the policy runs clusters, geometric mean 1.006 over 19 bf16 shapes
# (faster on 15; 512 x 10240 x 8192 0.979 against 0.954 of cuBLAS, 1024 x 6144 x 4096 0.963
# against 0.948; slowest 8192 x 8192 x 1024, 1.043 against 1.057) and 1.017 over 13 fp8 ones
# (faster on 12; 1024 x 8192 x 1024 1.172 against 1.123). Pairs of 32-row tiles without any
# cluster barrier (benchmarks/gemm_cluster_cost.py "bare") had run 0.903 of cuBLAS against
# 0.848 with both barriers, which is what pointed here.
PRODUCER_TAIL = True

# Computing consumers (gemm.plan.computing_consumers: 1 for tiles of 64 or fewer rows, 2 for
# 128) whose cluster kernels free stages through a relay warp (_relay) instead of arriving on
# the peers' barriers themselves: none. Measured on the H200 (docs/PERFORMANCE.md, "Cluster
# kernels without the end barrier; pairs of small tiles taken further", run 4; benchmarks/
# gemm_relay.py, medians of 2): the
# relay makes bf16 pairs of one-consumer tiles much faster than the direct release (64 x 4096
# x 4096, 32-row tiles: 0.816 of cuBLAS against 0.694; 128 x 4096 x 14336 0.886 / 0.708) but
# they stay slower than the same tiles alone (0.931, 1.036), which the policy runs; on fp8
# pairs and on the policy's 2x1 clusters of 128-row tiles it is within the run's spread
# either way or slower (fp8 1024 x 8192 x 1024: 1.105 against 1.124). Kept for the next
# attempt at pairs of small tiles, where it recovered most of what the consumers' remote
# arrivals cost.
RELAY_CONSUMERS: tuple[int, ...] = ()


def relays(size: int, a_rows: int = TILE_M) -> bool:
    """Whether a kernel of clusters of ``size`` CTAs over tiles of ``a_rows`` rows frees its
    stages through a relay warp (:data:`RELAY_CONSUMERS`, :func:`_relay`). ``size`` is one of
    :data:`CLUSTER_SIZES` (GemmShapeError otherwise), ``a_rows`` one of ``plan.A_ROWS``."""
    if type(size) is not int or size not in CLUSTER_SIZES:
        raise GemmShapeError(f"relays takes a cluster size, one of {CLUSTER_SIZES}, got {size!r}")
    return size > 1 and gemm_plan.computing_consumers(a_rows) in RELAY_CONSUMERS


def _check_cluster_n(cluster_n, cluster_m: int, a_rows, split_k, stream_k) -> None:
    """GemmShapeError unless ``cluster_n`` (CTAs along N sharing A) is 1, or one of
    :data:`CLUSTER_SIZES` in a kernel whose CTAs do not also pair along M, that neither
    splits K nor streams it, and whose A rows split into shares TMA can load (whole 8-row
    swizzle atoms: ``a_rows / cluster_n`` one of :data:`~.plan.A_ROWS`)."""
    if type(cluster_n) is not int or cluster_n not in CLUSTER_SIZES:
        raise GemmShapeError(
            f"cluster_n is one of {CLUSTER_SIZES} (CTAs sharing A by multicast), got {cluster_n!r}"
        )
    if cluster_n == 1:
        return
    if cluster_m != 1 or split_k or stream_k:
        raise GemmShapeError(
            f"cluster_n={cluster_n} (CTAs along N sharing A) runs with cluster_m=1, without "
            f"split-K or stream-K; got cluster_m={cluster_m}, split_k={split_k}, "
            f"stream_k={stream_k}"
        )
    if gemm_plan.check_a_rows(a_rows) // cluster_n not in gemm_plan.A_ROWS:
        raise GemmShapeError(
            f"a_rows={a_rows!r} does not split into {cluster_n} multicast shares of "
            f"{gemm_plan.A_ROWS} rows (a_rows / cluster_n = {a_rows / cluster_n}): use a "
            "smaller cluster_n or more rows of A"
        )


def hopper_gemm_persistent(
    cluster_m: int = 1,
    dtype: str = "bfloat16",
    tile_n: int = TILE_N,
    split_k: bool = False,
    a_rows: int = TILE_M,
    promote: bool = False,
    promote_every: int = 1,
    stream_k: bool = False,
    cluster_n: int = 1,
) -> KernelProgram:
    """The kernel: ``(tma_a, tma_b, tma_c, m_tiles, n_tiles, k_tiles, group_m)``, 384 threads,
    launched with at most one CTA per SM. ``cluster_m`` = 2 or 4 groups CTAs of adjacent M
    tiles in a cluster (launched with cluster dimensions at run time) that share B by multicast,
    each loading ``tile_n / cluster_m`` of its rows. ``dtype`` is A's and B's type
    (:data:`~.plan.INPUT_TYPES`); C stays bfloat16. The CTA tile is ``TILE_M x tile_n``
    (:data:`~.plan.TILE_NS`; 240 only with ``cluster_m`` 1 or 2, see :func:`~.plan.b_share`).

    ``split_k`` (CTAs alone only) builds the split-K kernel ``(tma_a, tma_b, m_tiles, n_tiles,
    k_tiles, group_m, splits, m_rows, work)``: each tile's K splits into ``splits`` ranges of
    ``k_tiles`` K tiles, each range a unit of work; its fp32 sums go to ``work`` (``splits *
    m_rows`` rows) and :func:`splitk_reduce` adds them into C.

    ``a_rows`` < 128 (:data:`~.plan.A_ROWS`) loads only that many rows of A a stage and the
    second consumer exits (after zeroing A's rows past ``a_rows``): the CTA tile is ``a_rows x
    tile_n`` (:func:`~.plan.tile_rows`; any M, clusters allowed), so a product of few rows
    fills more SMs and the ring, with 64-row A stages, is deeper. Tiles of 32, 16 or 8 rows
    shrink the stage's bytes to what the product needs (a 16-token step reads 2 KiB of A a K
    tile, not 16), and in clusters along M they let a few rows of M split into M tiles that
    share B (64 rows as two 32-row tiles of a pair): the wgmma still computes 64 rows, the
    rows past the tile are zeros never stored (C's tensor map stores the top ``a_rows`` rows
    of each slice, :func:`~.plan.c_box`).

    ``promote`` (fp8 only, widths of :data:`PROMOTED_TILE_NS`) sums each K tile's wgmmas in
    a second fragment and adds it into the fp32 accumulators (:func:`_promote`);
    ``promote_every`` (:data:`PROMOTE_EVERY`) = 2 sums two K tiles (256 elements) in it before
    each add, half the adds and waits of 1 (every K tile) for a longer sum in the wgmma's
    reduced-precision accumulator (:func:`_promote_groups`). A consumer computing alone (64 or
    fewer rows of A) on a width of :data:`OVERLAPPED_TILE_NS` keeps two such fragments and adds
    one group's sum while the next group's wgmmas run (:func:`_promote_overlapped`).

    ``stream_k`` (any ``a_rows``: with 64 or fewer only the first consumer computes and hands
    sums over) builds the stream-K kernel ``(tma_a, tma_b,
    tma_c, m_tiles, n_tiles, k_tiles, group_m, m_group, work, flags)``: the K steps of all
    tiles are split evenly over groups of ``m_group`` CTAs (the grid a multiple of it), each
    CTA of a group on its own M tile of the same N tile and K steps
    (:meth:`Schedule.segments`), so a product of few tiles still fills every SM. With
    ``cluster_m`` > 1 a group is a cluster (``m_group`` must be ``cluster_m``; the kernel
    takes its group from the cluster), whose CTAs walk the same K steps anyway and so share
    B by multicast as the tiled kernel's clusters do; the CTA
    that starts a tile adds the fp32 sums the CTAs holding the rest of its K steps leave in
    ``work`` (``grid * 2 * tile_n / 2`` rows of 128) and writes C.
    ``flags`` (``grid * 2`` uint32, zero before the first launch) count the hand-overs and
    are zero again after each launch. The owner waits for CTAs of higher index, so the grid
    must be resident at once: at most one CTA per SM (:func:`stream_k_grid`)."""
    if type(cluster_m) is not int or cluster_m not in CLUSTER_SIZES:
        raise GemmShapeError(
            f"cluster_m is one of {CLUSTER_SIZES} (CTAs sharing B by multicast), got {cluster_m!r}"
        )
    _check_cluster_n(cluster_n, cluster_m, a_rows, split_k, stream_k)
    if split_k and cluster_m != 1:
        raise GemmShapeError(
            f"split-K runs CTAs alone (its units are K ranges, not M tiles sharing B), got "
            f"cluster_m={cluster_m}: use cluster_m=1"
        )
    if type(stream_k) is not bool:
        raise GemmShapeError(f"stream_k is True or False, got {stream_k!r}")
    if stream_k and split_k:
        raise GemmShapeError(
            "stream-K runs without split-K (its segments already split K); got split_k=True: "
            "use split_k=False"
        )
    gemm_plan.check_input_type(dtype)
    _check_promote(promote, dtype, tile_n, promote_every)
    gemm_plan.a_box(a_rows, dtype)  # a known row count
    gemm_plan.b_share(cluster_m, dtype, tile_n=tile_n)  # the multicast split is whole atoms
    name = "hopper_gemm_persistent" + (f"_cluster{cluster_m}" if cluster_m > 1 else "")
    name += f"_clustern{cluster_n}" if cluster_n > 1 else ""
    name += "_e4m3" if dtype == "float8_e4m3fn" else ""
    name += f"_n{gemm_plan.check_tile_n(tile_n)}" if tile_n != TILE_N else ""
    name += f"_a{a_rows}" if a_rows != TILE_M else ""
    name += "_promote" if promote else ""
    name += f"_p{promote_every}" if promote_every != 1 else ""
    name += "_streamk" if stream_k else ""

    size = cluster_m * cluster_n
    relay = relays(size, a_rows)

    def body(
        tma_a, tma_b, tma_c, m_tiles, n_tiles, k_tiles, group_m, splits=1, partial=None, m_group=1
    ):
        smem = gemm_plan.hopper_gemm_persistent_plan(dtype, "sm_90a", tile_n, a_rows, relay)
        a, b, c = smem.buffer("A"), smem.buffer("B"), smem.buffer("C_stage")
        full, empty = smem.buffer("full_bar"), smem.buffer("empty_bar")
        freed = smem.buffer("freed_bar") if relay else None
        # the tensor maps' descriptors fetched while the barriers are set up (and, launched
        # programmatically, under the previous kernel's tail: they are this launch's
        # parameters, which no kernel writes), not by the first load of each
        with T.If(T.thread_id() == 0):
            for tmap in (tma_a, tma_b, tma_c):
                if tmap is not None:
                    T.ptx.tma.prefetch_descriptor(tmap)
        _init_barriers(full, empty, size, gemm_plan.computing_consumers(a_rows), freed)
        # launched with programmatic serialization (HopperGemm(programmatic=True)), the set-up
        # above ran under the previous kernel's tail; nothing touched global memory yet
        T.ptx.griddepcontrol.wait()
        rank = T.let("cta_rank", T.ptx.cluster.ctarank()) if size > 1 else 0
        sched = Schedule(
            m_tiles,
            n_tiles,
            k_tiles,
            group_m,
            cluster_m,
            rank,
            splits,
            stream_k,
            m_group if cluster_m == 1 else cluster_m,  # a stream-K group is the cluster
            gemm_plan.tile_rows(a_rows),
            cluster_n,
            relay,
        )
        warpgroup = _warpgroup()
        with T.If(warpgroup == 0):
            with T.Then():
                T.ptx.setmaxnreg.dec(PRODUCER_REGS)
                with T.If(T.all_of(T.warp_id() == 0, T.ptx.elect_sync())), T.phase("mainloop"):
                    _producer(tma_a, tma_b, a, b, full, empty, sched, a_rows)
                if freed is not None:
                    with T.If(T.all_of(T.warp_id() == 1, T.lane_id() < size)):
                        _relay(freed, empty, sched)
            with T.Else():
                T.ptx.setmaxnreg.inc(CONSUMER_REGS)
                consumer = warpgroup - 1
                _consumer(
                    tma_c,
                    a,
                    b,
                    c,
                    full,
                    empty if freed is None else freed,  # with a relay it frees stages here
                    consumer,
                    sched,
                    gemm_plan.epilogue_staging(tile_n, a_rows, relay),
                    partial,
                    a_rows,
                    promote,
                    promote_every,
                )
        if size > 1 and not PRODUCER_TAIL:  # no CTA leaves while a peer may still arrive
            T.ptx.cluster.sync()

    if stream_k:

        @T.kernel(target="sm_90a", grid=(132,), block=(THREADS,), name=name)
        def stream_kernel(
            tma_a: T.TensorMap,
            tma_b: T.TensorMap,
            tma_c: T.TensorMap,
            m_tiles: T.int32,
            n_tiles: T.int32,
            k_tiles: T.int32,
            group_m: T.int32,
            m_group: T.int32,
            work: T.Buffer(("work_rows", 128), "float32"),
            flags: T.Buffer(("flag_count",), "uint32"),
        ):
            body(tma_a, tma_b, tma_c, m_tiles, n_tiles, k_tiles, group_m, 1, (work, flags), m_group)

        return stream_kernel

    if split_k:

        @T.kernel(target="sm_90a", grid=(132,), block=(THREADS,), name=name + "_splitk")
        def split_kernel(
            tma_a: T.TensorMap,
            tma_b: T.TensorMap,
            m_tiles: T.int32,
            n_tiles: T.int32,
            k_tiles: T.int32,
            group_m: T.int32,
            splits: T.int32,
            m_rows: T.int32,
            work: T.Buffer(("work_rows", "work_cols"), "float32"),
        ):
            body(tma_a, tma_b, None, m_tiles, n_tiles, k_tiles, group_m, splits, (work, m_rows))

        return split_kernel

    @T.kernel(target="sm_90a", grid=(132,), block=(THREADS,), name=name)
    def kernel(
        tma_a: T.TensorMap,
        tma_b: T.TensorMap,
        tma_c: T.TensorMap,
        m_tiles: T.int32,
        n_tiles: T.int32,
        k_tiles: T.int32,
        group_m: T.int32,
    ):
        body(tma_a, tma_b, tma_c, m_tiles, n_tiles, k_tiles, group_m)

    return kernel


# The consumer's registers besides its accumulators (descriptors, barrier addresses, loop
# counters, the epilogue's addresses): 232 - 2 * 96 = 40 left for them at 128 x 192, where
# ptxas allocates the promoted fp8 kernel without spills (tests/cuda/test_gemm_kernel.py
# compiles it); at 128 x 240 (2 * 120 = 240 accumulators) and 128 x 256 (256) the two
# fragments alone exceed setmaxnreg's 232.
CONSUMER_OTHER_REGS = 40
PROMOTED_TILE_NS = tuple(
    n for n in gemm_plan.TILE_NS if 2 * (n // 2) + CONSUMER_OTHER_REGS <= CONSUMER_REGS
)
# Promoted widths on which a consumer that computes alone (64 or fewer rows of A) keeps a
# third fragment, so that a group's promotion runs under the next group's wgmmas
# (_promote_overlapped): 128, 96 and 64 (3 * 64 + 40 = 232). Measured on the H200
# (docs/PERFORMANCE.md, "fp8 promotion under the next group's wgmmas"; benchmarks/
# gemm_promote_overlap.py, one run, the policy's kernel beside it built with one fragment):
# with one computing consumer faster on all 21 such fp8 shapes (1.001 to 1.107, geometric
# mean 1.033; 256 x 4096 x 14336 1.088, 64 x 4096 x 4096 1.063, 16 x 4096 x 4096 1.058); with
# two (128 rows of A) slower on 6 of 11 (0.933 to 1.013, geometric mean 0.988; 256 x 8192 x
# 8192 0.933), where the other consumer's wgmmas keep the tensor cores busy through one
# consumer's adds anyway.
OVERLAPPED_TILE_NS = tuple(
    n for n in PROMOTED_TILE_NS if 3 * (n // 2) + CONSUMER_OTHER_REGS <= CONSUMER_REGS
)
# Groups of promote_every K tiles a run of _promote_overlapped: the tensor cores drain once a
# run, not once a group.
OVERLAP_GROUPS = 2


# Promotion intervals in K tiles (promote_every): 1, every 128 fp8 elements of K (the
# default), or 2, every 256, which halves the consumer's fp32 adds (the promoted kernel's
# measured cost, docs/PERFORMANCE.md "fp8 promotion") for a 256-term sum in the wgmma's
# accumulator. Longer intervals are not built: each needs its own leftover groups
# (_promote_groups) and they give up more of the accuracy promotion is for.
PROMOTE_EVERY = (1, 2)
# AutoGemm's interval for promoted fp8. Measured on the H200 (docs/PERFORMANCE.md, GEMM,
# "Stream-K, split-K reduced in the kernel, promotion every two K tiles"): every two K tiles
# the error at M = N = 4096 is 1.671-1.675e-3 for K = 1024 .. 28672, against cuBLASLt's
# 1.663-1.667e-3 and 1.666e-3 every K tile (unpromoted: 1.75e-3 growing to 4.67e-3), and the
# fp8 geometric mean over the 65 shapes is 0.950 of cuBLASLt against 0.883.
DEFAULT_PROMOTE_EVERY = 2
# K tiles in the second computing consumer's first promoted group (_promote_groups), so that
# the two consumers, reading the same stages in step, do not drain their wgmmas and add their
# sums at the same time: with every = 2 its groups are K tiles (0), (1, 2), (3, 4), ... beside
# the first consumer's (0, 1), (2, 3), ... 0 keeps them in step (as before 2026-12-03).
STAGGER_K_TILES = 1


def _check_promote(promote, dtype: str, tile_n: int, promote_every) -> None:
    """GemmShapeError unless ``promote`` is a bool, and True only for fp8 on a width whose two
    accumulator fragments fit the consumer's registers (:data:`PROMOTED_TILE_NS`), and unless
    ``promote_every`` is one of :data:`PROMOTE_EVERY`, other than 1 only with ``promote``."""
    if type(promote) is not bool:
        raise GemmShapeError(f"promote is True or False, got {promote!r}")
    if type(promote_every) is not int or promote_every not in PROMOTE_EVERY:
        raise GemmShapeError(
            f"promote_every is the fp32 promotion interval in K tiles, one of {PROMOTE_EVERY} "
            f"(1: every 128-element K tile, 2: every two), got {promote_every!r}; use 1 or 2"
        )
    if promote_every != 1 and not promote:
        raise GemmShapeError(
            f"promote_every={promote_every} is the interval of the fp32 promotion, which "
            "promote=False turns off; use promote=True (fp8) or promote_every=1"
        )
    if not promote:
        return
    if dtype != "float8_e4m3fn":
        raise GemmShapeError(
            f"promote=True is for fp8 inputs (float8_e4m3fn), got {dtype}: {dtype} wgmma "
            "already accumulates in fp32; use promote=False"
        )
    if tile_n not in PROMOTED_TILE_NS:
        raise GemmShapeError(
            f"promote=True keeps two fp32 fragments of tile_n / 2 = {tile_n // 2} registers a "
            f"thread: {tile_n} needs {2 * (tile_n // 2)} + {CONSUMER_OTHER_REGS} others, more "
            f"than the consumer's {CONSUMER_REGS} (setmaxnreg); use tile_n in {PROMOTED_TILE_NS}"
        )


REDUCE_THREADS = 256


def splitk_reduce() -> KernelProgram:
    """``(work, c, splits)``: ``C[r, j] = bf16(sum_s work[s * M + r, j])`` for the ``M x N`` C,
    one thread an element (grid ``ceil(M N / 256)`` of 256 threads), the ranges added in order
    (deterministic). C may have any N: plain stores, no TMA."""

    @T.kernel(target="sm_90a", grid=(1,), block=(REDUCE_THREADS,), name="hopper_gemm_splitk_reduce")
    def kernel(
        work: T.Buffer(("work_rows", "work_cols"), "float32"),
        c: T.Buffer(("m", "n"), "bfloat16"),
        splits: T.int32,
    ):
        m, n = c.shape
        i = T.let("i", T.block_id() * REDUCE_THREADS + T.thread_id())
        with T.If(i < m * n):
            row, col = T.let("row", i // n), T.let("col", i % n)
            total = T.alloc_local(1, "float32", name="total")
            total[0] = T.cast(0, "float32")
            for s in T.serial(splits, name="s"):
                total[0] = total[0] + work[s * m + row, col]
            c[row, col] = T.cast(total[0], "bfloat16")

    return kernel


class HopperGemm:
    """``C = A @ B^T`` on the current GPU with :func:`hopper_gemm_persistent`.

    ``prepare(a, b, c)`` checks the operands, encodes their tensor maps and returns a launch
    callable (what a benchmark times); calling the object does both at once. ``group_m`` is the
    rasterisation group (M tiles), ``cluster_m`` the CTAs per cluster sharing B (1, 2 or 4),
    ``dtype`` the type of A and B (C is bfloat16), ``l2_promotion`` the TMA L2 fetch size for
    A and B, ``tile_n`` the CTA tile's width (:data:`~.plan.TILE_NS`), ``split_k`` builds the
    split-K kernel and its reduction (CTAs alone; ``prepare`` then takes ``splits``),
    ``a_rows`` the rows of A a stage loads and of C a tile covers (128; 64, 32, 16, 8: one
    consumer computes, any M, clusters allowed),
    ``promote`` the fp32 promotion of fp8 sums every K tile (:func:`_promote`; widths of
    :data:`PROMOTED_TILE_NS`), or every ``promote_every`` K tiles (:data:`PROMOTE_EVERY`).
    ``cluster_n`` (with ``cluster_m=1``) the CTAs per cluster along N sharing A, each loading
    ``a_rows / cluster_n`` of its rows and multicasting them.
    ``programmatic`` True launches the kernel with programmatic stream serialization: its
    CTAs may start (barrier set-up, register reallocation) while the stream's previous kernel
    ends, and every thread waits (``griddepcontrol.wait``) for that kernel to complete before
    touching global memory, so the result is the same as a plain launch's; each CTA lets the
    next kernel start likewise once its producer has issued its last load
    (``griddepcontrol.launch_dependents``). False launches plainly; None (the default) does
    the first where the grid leaves at most :data:`PDL_MAX_IDLE` of the SMs idle
    (:meth:`launches_programmatically`). One object is one kernel configuration;
    :class:`AutoGemm` picks the configuration from the shape.
    """

    def __init__(
        self,
        group_m: int = DEFAULT_GROUP_M,
        cluster_m: int = 2,
        dtype: str = "bfloat16",
        l2_promotion: int = 0,
        tile_n: int = TILE_N,
        split_k: bool = False,
        a_rows: int = TILE_M,
        promote: bool = False,
        promote_every: int = 1,
        stream_k: bool = False,
        programmatic: bool | None = None,
        cluster_n: int = 1,
    ):
        _check_group_m(group_m)
        _check_programmatic(programmatic)
        self.programmatic = programmatic
        self.group_m, self.cluster_m, self.l2_promotion = group_m, cluster_m, l2_promotion
        self.dtype, self.tile_n, self.split_k, self.a_rows = dtype, tile_n, split_k, a_rows
        self.promote, self.promote_every, self.stream_k = promote, promote_every, stream_k
        self.cluster_n = cluster_n
        self.program = hopper_gemm_persistent(
            cluster_m, dtype, tile_n, split_k, a_rows, promote, promote_every, stream_k, cluster_n
        )
        self.launcher = Launcher(self.program)
        self.reduce = Launcher(splitk_reduce()) if split_k else None
        # the kernel's own pool (gemm_plan.hopper_gemm_persistent_plan, as the kernel built it)
        (self.plan,) = (p for p in self.program.ir.pools if isinstance(p, SMEMPool))
        self.a_box, self.b_share, self.c_box = gemm_plan.tma_boxes(
            dtype, tile_n, a_rows, cluster_m, cluster_n, plan=self.plan
        )
        self.sms = _sm_count(self.launcher.device.device_id, self.program.name)
        self.max_clusters = (
            self.launcher.max_active_clusters((self.size, 1, 1)) if self.size > 1 else self.sms
        )

    @property
    def size(self) -> int:
        """CTAs in a cluster (1 without clusters)."""
        return self.cluster_m * self.cluster_n

    def prepare(
        self, a, b, c, ctas: int | None = None, splits: int | None = None
    ) -> Callable[..., None]:
        """Check and map the operands; ``ctas`` caps the persistent grid (default: one per SM)
        and must hold at least one cluster. Any ``M, N, K >= 1`` runs: a shape the kernel's TMA
        boxes and row pitches do not take goes through padded workspace copies
        (:mod:`~.shapes`, which also states their cost). ``splits`` (split-K objects:
        default :func:`split_count`'s) divides the K tiles into that many ranges; for
        stream-K objects it spreads each unit over that many CTA groups (default: the whole
        machine, :func:`stream_k_grid`)."""
        _check_ctas(ctas, self.size)
        m, k, n = _check_layout(a, b, c, self.dtype)
        stage = shapes.staging(m, n, k, self.dtype, self.tile_n, self.a_rows)
        if self.split_k:
            return self._prepare_split(a, b, c, stage, ctas, splits)
        if self.stream_k:
            if splits is not None and (type(splits) is not int or splits < 1):
                raise GemmShapeError(
                    f"splits={splits!r}: the stream-K kernel takes a positive int (the groups "
                    "a unit of K steps spreads over) or None (the whole machine)"
                )
        elif splits is not None:
            raise GemmShapeError(
                f"splits={splits!r} needs the split-K kernel: HopperGemm(..., split_k=True)"
            )
        if not stage.needed:
            _check_operands(a, b, c, self.dtype, self.tile_n, self.a_rows)  # the kernel's rules
            return self._launch(a, b, c, stage, ctas, splits)
        work = {
            name: _DeviceMatrix(
                rows, cols, "bfloat16" if name == "C" else self.dtype, self.program.name
            )
            for name, (rows, cols) in stage.workspace_shapes().items()
        }
        kernel = self._launch(
            work.get("A", a), work.get("B", b), work.get("C", c), stage, ctas, splits
        )
        ins = _copies_in(stage, a, b, work, self.program.name)
        out = _copy2d(stage.c, work["C"], c, self.program.name) if stage.c is not None else None

        def launch(stream=None) -> None:
            handle = _stream_handle(stream, self.launcher)
            for copy in ins:
                copy(handle)
            kernel(handle)
            if out is not None:
                out(handle)

        # the staging workspaces and the kernel's own (stream-K's hand-over and flags) live
        # as long as the launch
        launch.workspace = {**work, **getattr(kernel, "workspace", {})}  # type: ignore[attr-defined]
        return launch

    def _prepare_split(self, a, b, c, stage, ctas, splits) -> Callable[..., None]:
        """Split-K: A and B staged as needed, the kernel's fp32 sums of each K range into a
        ``splits * M x`` (whole N tiles) workspace, then :func:`splitk_reduce` writes C (any
        N: C is never staged)."""
        m, n = stage.m, stage.n
        k_tiles = ceil_div(stage.kp, tile_k(self.dtype))
        rows = gemm_plan.tile_rows(self.a_rows)
        if splits is None:
            splits = split_count(m, n, stage.k, self.tile_n, self.sms, self.dtype, rows)
        _check_splits(splits, k_tiles)
        name = self.program.name
        work = {
            op: _DeviceMatrix(rows, cols, self.dtype, name)
            for op, (rows, cols) in stage.workspace_shapes().items()
            if op != "C"
        }
        ka, kb = work.get("A", a), work.get("B", b)
        maps = (
            tile_map(ka, self.a_box, self.l2_promotion),
            tile_map(kb, self.b_share, self.l2_promotion),
        )
        tiles = (ceil_div(m, rows), ceil_div(stage.np_, self.tile_n), k_tiles // splits)
        partial = _DeviceMatrix(splits * m, tiles[1] * self.tile_n, "float32", name)
        grid = (min(self.sms, tiles[0] * tiles[1] * splits, ctas or self.sms),)
        reduce_grid = (ceil_div(m * n, REDUCE_THREADS),)
        ins = _copies_in(stage, a, b, work, name)
        reduce = self.reduce
        assert reduce is not None  # built with split_k
        programmatic = self.launches_programmatically(grid[0])

        def launch(stream=None) -> None:
            handle = _stream_handle(stream, self.launcher)
            for copy in ins:
                copy(handle)
            self.launcher(
                *maps,
                *tiles,
                self.group_m,
                splits,
                m,
                partial,
                grid=grid,
                stream=handle,
                programmatic=programmatic,
            )
            reduce(partial, c, splits, grid=reduce_grid, stream=handle)

        launch.workspace = {**work, "partial": partial}  # type: ignore[attr-defined]
        return launch

    def _launch(
        self, a, b, c, stage: shapes.Staging, ctas: int | None, splits: int | None = None
    ) -> Callable[..., None]:
        """The kernel's launch on the matrices it reads and writes (the operands, or their
        workspaces) for the product ``stage`` describes."""
        maps = (
            tile_map(a, self.a_box, self.l2_promotion),
            tile_map(b, self.b_share, self.l2_promotion),
            tile_map(c, self.c_box),
        )
        tk = tile_k(self.dtype)
        tiles = (
            ceil_div(stage.m, gemm_plan.tile_rows(self.a_rows)),
            ceil_div(stage.np_, self.tile_n),
            ceil_div(stage.kp, tk),
        )
        size = self.size
        if self.max_clusters < 1:
            raise GemmShapeError(
                f"{self.program.name}: this device holds no cluster of {size} CTAs at once "
                f"(cuOccupancyMaxActiveClusters gave {self.max_clusters}; {self.sms} SMs): "
                "use cluster_m=1 and cluster_n=1"
            )
        if self.stream_k:
            return self._launch_stream_k(maps, tiles, ctas, splits)
        units = ceil_div(tiles[0], self.cluster_m) * ceil_div(tiles[1], self.cluster_n)
        clusters = min(self.max_clusters, units, max(1, (ctas or self.sms) // size))
        grid, cluster = (clusters * size,), ((size, 1, 1) if size > 1 else None)
        programmatic = self.launches_programmatically(grid[0], tiles[0], tiles[2], tiled=True)

        def launch(stream=None) -> None:
            self.launcher(
                *maps,
                *tiles,
                self.group_m,
                grid=grid,
                cluster=cluster,
                stream=stream,
                programmatic=programmatic,
            )

        return launch

    def _launch_stream_k(
        self, maps, tiles, ctas: int | None, splits: int | None = None
    ) -> Callable[..., None]:
        """The stream-K launch: :func:`stream_k_grid`'s CTAs and groups, and the hand-over
        workspace (fp32 sums, ``grid * 2 * tile_n / 2`` rows of 128) and flags (``grid * 2``,
        zeroed once here; every launch leaves them zero) that live with the launch."""
        size = self.cluster_m
        cap = min(self.max_clusters * size, ctas or self.sms)  # every CTA resident at once
        grid, m_group = stream_k_grid(tiles[0], tiles[1], tiles[2], cap, splits, size)
        cluster = (size, 1, 1) if size > 1 else None
        name = self.program.name
        work = _DeviceMatrix(grid * CONSUMERS * (self.tile_n // 2), 128, "float32", name)
        flags = _DeviceMatrix(1, grid * CONSUMERS, "uint32", name, vector=True)
        programmatic = self.launches_programmatically(grid)

        def launch(stream=None) -> None:
            self.launcher(
                *maps,
                *tiles,
                self.group_m,
                m_group,
                work,
                flags,
                grid=(grid,),
                cluster=cluster,
                stream=stream,
                programmatic=programmatic,
            )

        launch.workspace = {"work": work, "flags": flags}  # type: ignore[attr-defined]
        return launch

    def launches_programmatically(
        self, ctas: int, m_tiles: int = 1, k_tiles: int = 1, tiled: bool = False
    ) -> bool:
        """Whether a launch of ``ctas`` CTAs uses programmatic stream serialization: as
        ``programmatic`` says, or with None where the grid leaves at most
        :data:`PDL_MAX_IDLE` of the SMs idle, except for tiles that one consumer computes
        (``a_rows`` of 64 or fewer) over two or more M tiles (``m_tiles``) with at least
        :data:`PDL_PLAIN_K_TILES` K tiles (``k_tiles``), which launch plainly; and where a
        ``tiled`` launch (not split-K, not stream-K) of one consumer's tiles
        :data:`BESIDE_TILE_N` wide over one M tile fills :data:`BESIDE_MIN_FILL` to half of
        the SMs (the next launch's whole grid starts beside it, :func:`beside_width`; on the
        H200 the same grids of 96-, 128- and 160-wide tiles ran 2-8% slower launched so). The
        three counts are positive ints, ``tiled`` a bool (GemmShapeError)."""
        ctas, m_tiles, k_tiles = _positive_ints(
            "launches_programmatically", ctas=ctas, m_tiles=m_tiles, k_tiles=k_tiles
        )
        if type(tiled) is not bool:
            raise GemmShapeError(f"launches_programmatically's tiled is a bool, got {tiled!r}")
        if self.programmatic is not None:
            return self.programmatic
        one_consumer = gemm_plan.computing_consumers(self.a_rows) == 1
        if one_consumer and m_tiles >= 2 and k_tiles >= PDL_PLAIN_K_TILES:
            return False
        beside = _fills_beside(ctas, self.sms)
        if tiled and self.tile_n == BESIDE_TILE_N and one_consumer and m_tiles == 1 and beside:
            return True
        return self.sms - ctas <= PDL_MAX_IDLE * self.sms

    def __call__(self, a, b, c, stream=None) -> None:
        self.prepare(a, b, c)(stream)


# Programmatic dependent launch (HopperGemm(programmatic=None)): the next kernel's CTAs start
# their set-up on the SMs this grid leaves free, which hides the launch of the next kernel
# under this one's end. Measured on the H200 (docs/PERFORMANCE.md, "Programmatic dependent
# launch"): up to 8% faster on products of a few microseconds whose grids fill the SMs or
# nearly (1024^3: 128 CTAs of 132, 7.68 -> 7.12 us; 2048 x 2048 x 512: 9.94 -> 9.37 us), but
# up to 24% slower where the grid leaves many SMs idle and streams B from DRAM (16 x 10240 x
# 8192, 80 CTAs of 132: 45.2 -> 50.2 us; 120 of 132 at 64 x 28672 x 4096: 3% slower), where
# the dependents then run on the SMs the previous grid left, not spread as a plain launch
# spreads them (our reading, not measured). So the default launches programmatically only
# where at most this share of the SMs is idle.
PDL_MAX_IDLE = 0.05
# K tiles from which one consumer's tiles (a_rows <= 64) over two or more M tiles launch
# plainly. Measured on the H200 (docs/PERFORMANCE.md, "Tiles of fewer rows than the product's
# M"; the benchmark's "ratio plain" column, the same kernels launched plainly in the same run,
# three device checks): such 128-CTA grids with 64 K tiles ran 5-8% slower launched
# programmatically (bf16 256 x 4096 x 4096 0.916 of the plain launch's speed in all three runs,
# 128 x 4096 x 4096 0.919, 64 x 4096 x 4096 0.922, 256 x 6144 x 4096 0.946, fp8 128 x 8192 x 8192
# 0.918) and with 128 (bf16 256 x 8192 x 8192 0.948, 128 x 8192 x 8192 0.972), where with 8
# to 32 K tiles they ran 2-12% faster (1024^3: 1.06 bf16, 1.12 fp8) and with one M tile as
# fast or faster (16 x 8192 x 8192 1.004 bf16, 1.032 fp8). Our reading, not measured: the
# dependents' CTAs start as the previous grid's CTAs end, out of step, so the CTAs of two M
# tiles that read the same B tile no longer read it from DRAM together.
PDL_PLAIN_K_TILES = 64


MAX_M_GROUP = 8  # CTAs of a stream-K group: the M tiles that share one B tile at a time


def stream_k_grid(
    m_tiles: int,
    n_tiles: int,
    k_tiles: int,
    sms: int,
    splits: int | None = None,
    cluster_m: int = 1,
) -> tuple[int, int]:
    """(grid, m_group) of a stream-K launch. ``m_group``, the CTAs that walk the same N tile
    and K steps on adjacent M tiles, is the largest divisor of ``m_tiles`` up to
    :data:`MAX_M_GROUP` (and ``sms``), so no CTA computes a tile past M; the grid is as many
    whole groups as the SMs hold, fewer when the product has fewer K steps (``units *
    k_tiles``) than groups, so every group has at least one. ``splits`` caps the groups at
    ``units * splits``: each unit's K steps then spread over ``splits`` groups, a split-K
    reduced in the kernel (the ranges are equal where ``splits`` divides ``k_tiles``). The
    kernel's waits need every CTA resident at once, and its step arithmetic (``group *
    steps``) 32-bit ints: GemmShapeError when ``steps * groups`` reaches 2**31 (use the
    kernel without stream-K). With ``cluster_m`` > 1 (the kernel's clusters along M) a group
    is a cluster: ``m_group`` is ``cluster_m``, and a unit whose M tiles run past M (an odd
    ``m_tiles`` in pairs) computes zeros there that its stores clip, as the tiled kernel's
    clusters do; ``sms`` is then the CTAs of the clusters resident at once."""
    m_tiles, n_tiles, k_tiles, sms = _positive_ints(
        "stream_k_grid", m_tiles=m_tiles, n_tiles=n_tiles, k_tiles=k_tiles, sms=sms
    )
    if type(cluster_m) is not int or cluster_m not in CLUSTER_SIZES:
        raise GemmShapeError(
            f"stream_k_grid's cluster_m is one of {CLUSTER_SIZES}, got {cluster_m!r}"
        )
    if cluster_m > 1:
        if sms < cluster_m:
            raise GemmShapeError(
                f"stream_k_grid: {sms} CTAs hold no cluster of {cluster_m}; use cluster_m=1"
            )
        m_group = cluster_m
    else:
        m_group = max(g for g in range(1, min(MAX_M_GROUP, sms) + 1) if m_tiles % g == 0)
    units = ceil_div(m_tiles, m_group) * n_tiles
    steps = units * k_tiles
    groups = min(sms // m_group, steps)
    if splits is not None:
        splits = check_int(splits, "stream_k_grid's splits", minimum=1, error=GemmShapeError)
        groups = min(groups, units * splits)
    if steps * groups >= 1 << 31:
        raise GemmShapeError(
            f"stream-K over {steps} K steps on {groups} CTA groups: {steps} * {groups} "
            "does not fit the kernel's 32-bit step arithmetic; use stream_k=False for a product "
            "this large (it fills the SMs with whole tiles)"
        )
    return groups * m_group, m_group


# Relative cost of one column of a narrower CTA tile. 128 x 192 streams more operand bytes per
# MAC (shared-memory reads of the two consumers per K step, (2 * 64 + 2 * N) rows of 32 bytes
# for 128 * N * 16 MACs: +11% against 256) but measured as fast per column on large shapes
# (H200, 8192^3: 685 against 679 TFLOP/s); 1.03 keeps 128 x 256 unless 192 saves a clear share
# of the rounds. 128 x 128 measured 1.40 times slower per column (4992x3072x2048: 461 against
# 647 TFLOP/s for 128 x 192). 128 x 240 streams (2 * 64 + 2 * 240) / 240 = 2.53 rows per
# column against 2.50 for 256 (+1%) and stages C in five unswizzled 48-column slices: 1.01,
# set from that count before any run, so it wins only where it saves a whole round against
# 256 and 192 (4999 x 3000: 13 tiles of 240 across N give 260 units, 4 rounds, where 192
# needs 5). 128 x 64 streams (2 * 64 + 2 * 64) / 64 = 4 rows per column against 3 for 128:
# 1.40 x 4 / 3 = 1.87, rounded to 1.9 before any run; it wins where every width fits in one
# round, so the CTAs of a small product each do half the work of 128 x 128 (1024^3: 128 tiles
# instead of 64). docs/PERFORMANCE.md "GEMM" has the runs.
# 128 x 96 (the tile cuBLAS runs on 256 x 6144 x 4096, in 128 CTAs where 128 x 128 fills 96):
# 1.75, from the H200 run of 2026-12-02 22:10 (docs/PERFORMANCE.md, "Programmatic dependent
# launch, small-M stream-K", the 96 column): on the one-wave shapes where it and 128 x 128
# each run one round, time(96) / time(128) = 96 c / (128 x 1.40) gave c = 1.74 and 1.76 (bf16
# 256 x 6144 x 4096, 128 x 10240 x 8192) and 1.66 and 1.73 (fp8); any c from 1.5 to 1.85 makes
# the same choices on the benchmark's 130 shapes (8 move to 96: 7 faster by 3-13%, one 1% slower).
# 128 x 160 (cuBLAS runs 168-wide tiles on 256 x 10240 x 8192, 122 CTAs where our 192 give
# 108 and 160 give 128): streams (2 * 64 + 2 * 160) / 160 = 2.8 rows of 32 bytes per column
# against 2.67 for 192 and 3.0 for 128, and stages C in two unswizzled 80-column slices;
# WIDTH_COST_160 below.
WIDTH_COST_160 = 1.215
# 128 x 224 (28672 = 128 x 224 and 57344 = 256 x 224 columns, the MLP widths of Llama-3 8B and
# 70B, where 240 leaves half a tile and 256 a partial round): streams (2 * 64 + 2 * 224) / 224
# = 2.57 rows of 32 bytes per column against 2.50 for 256, and stages C in seven unswizzled
# 32-column slices: 1.03 from that count, set before any run. It wins on the products of N =
# 28672 and 57344 (their 224-wide tiles fill 97% of whole rounds), where the H200 measured
# 224 at 1.010 to 1.022 times the speed of 240 (one round of tiles) and faster than or as fast
# as 256-wide stream-K (docs/PERFORMANCE.md, "The 224-wide tile").
WIDTH_COST_224 = 1.03
WIDTH_COST = {
    256: 1.0,
    240: 1.01,
    224: WIDTH_COST_224,
    192: 1.03,
    160: WIDTH_COST_160,
    128: 1.40,
    96: 1.75,
    64: 1.9,
}
# The widths launch_config weighs: those of WIDTH_COST. The kernel also takes 176 (cuBLAS's
# tile on 512 x 28672 x 4096; measured beside the policy, not in it) and 32 (narrow_width's)
POLICY_TILE_NS = tuple(w for w in gemm_plan.TILE_NS if w in WIDTH_COST)


def _check_costs(costs) -> Mapping[int, float]:
    """``costs`` itself if it maps widths of :data:`~.plan.TILE_NS` to positive finite numbers
    (launch_config's trial costs); else :class:`GemmShapeError`."""

    def good(width, cost) -> bool:
        number = isinstance(cost, (int, float)) and not isinstance(cost, bool)
        return width in gemm_plan.TILE_NS and number and math.isfinite(cost) and cost > 0

    if not isinstance(costs, Mapping) or not all(good(w, c) for w, c in costs.items()):
        raise GemmShapeError(
            f"launch_config's costs map widths of {gemm_plan.TILE_NS} to positive finite "
            f"numbers (as WIDTH_COST does), got {costs!r}"
        )
    return costs


def launch_config(
    m: int,
    n: int,
    sms: int,
    widths: tuple[int, ...] = gemm_plan.TILE_NS,
    costs: Mapping[int, float] | None = None,
) -> tuple[int, int]:
    """(tile_n, cluster_m) for an ``m x n`` C on ``sms`` SMs, from the shape alone.

    For each width of ``widths`` (:data:`~.plan.TILE_NS`, or :data:`PROMOTED_TILE_NS` for
    promoted fp8) that has a cost (:data:`POLICY_TILE_NS`; widths without one are passed
    over): ``tiles = ceil(m / 128) * ceil(n / tile_n)``.
    If they fit in one wave (``tiles <= sms``), or there is one row of M tiles (a pair's second
    CTA would compute rows past M), the CTAs run alone (a cluster only adds its barriers);
    else in 2x1 clusters that share B (half of B's L2 reads), ``sms / 2`` of them.
    A partial tile costs a whole one, so the time is ``rounds = ceil(units / slots)`` rounds
    of one tile each, and the cost ``rounds * tile_n * WIDTH_COST[tile_n]``; the cheapest
    width wins, the widest on a tie. One SM cannot hold a pair: with ``sms == 1`` CTAs run
    alone. ``m``, ``n`` and ``sms`` must be positive ints (GemmShapeError). ``costs`` replaces
    :data:`WIDTH_COST` (a trial cost for a width, :func:`pairs_176`).
    """
    costs = WIDTH_COST if costs is None else _check_costs(costs)
    if type(m) is not int or type(n) is not int or m < 1 or n < 1:
        raise GemmShapeError(f"launch_config needs C's M and N as positive ints, got {m!r} x {n!r}")
    if type(sms) is not int or sms < 1:
        raise GemmShapeError(
            f"launch_config needs the device's SM count as a positive int, got sms={sms!r}"
        )
    if (
        not isinstance(widths, (tuple, list))
        or not widths
        or any(w not in gemm_plan.TILE_NS for w in widths)
    ):
        raise GemmShapeError(
            f"launch_config's widths are some of {gemm_plan.TILE_NS}, got {widths!r}"
        )
    if not any(w in costs for w in widths):
        raise GemmShapeError(
            f"launch_config weighs the widths of {tuple(costs)} (WIDTH_COST), got {widths!r}"
        )
    best: tuple[float, int, int] | None = None
    for tile_n in (w for w in widths if w in costs):
        m_tiles, n_tiles = ceil_div(m, TILE_M), ceil_div(n, tile_n)
        alone = m_tiles * n_tiles <= sms or m_tiles < 2 or sms < 2  # a pair needs 2 SMs
        cluster_m = 1 if alone else 2
        units = ceil_div(m_tiles, cluster_m) * n_tiles
        rounds = ceil_div(units, sms // cluster_m)
        cost = rounds * tile_n * costs[tile_n]
        if best is None or cost < best[0]:
            best = (cost, tile_n, cluster_m)
    assert best is not None  # a width of widths has a cost
    return best[1], best[2]


# 176-wide tiles in 2x1 pairs (cuBLAS's tile on bf16 512 x 28672 x 4096,
# nvjet_sm90_tst_176x128_64x5_1x2) replace the policy's stream-K kernel and its 224-wide tiles
# alone where launch_config, weighing 176 at PAIRS_176_COST (192's cost) beside the policy's
# widths, picks 176 in pairs. Measured on the H200 (docs/PERFORMANCE.md, "176-wide pairs";
# benchmarks/gemm_width176.py, medians of 3 runs for bf16 and 2 for fp8 in one process) on
# every shape of the benchmark where the weighed 176 changes the policy: faster on all 9 such
# shapes (bf16 256 x 57344 x 8192 0.969 of cuBLAS against 0.947 for 224 alone, 512 x 28672 x
# 4096 0.957 / 0.950; fp8 against the 192-wide stream-K: 1024 x 8192 x 8192 1.006 / 0.959, 512
# x 28672 x 4096 1.035 / 0.996, 1024 x 28672 x 4096 1.016 / 0.988, 4096^3 0.981 / 0.962, 256 x
# 57344 x 8192 1.025 / 1.010, 1024 x 8192 x 28672 0.975 / 0.969, 512 x 57344 x 8192 1.024 /
# 1.022). Where the weighed 176 displaced other choices it lost (in place of 192-wide pairs on
# 3 of 5 shapes, fp8 1024 x 8192 x 1024 1.111 against 1.167; of 160 alone on all 6): those stay.
PAIRS_176_COST = 1.03


def pairs_176(m: int, n: int, sms: int, widths: tuple[int, ...] = gemm_plan.TILE_NS) -> bool:
    """Whether :func:`launch_config` over ``widths`` with 176 weighed at
    :data:`PAIRS_176_COST` picks 176-wide tiles in 2x1 pairs for an ``m x n`` C on ``sms``
    SMs (False where ``widths`` has no 176: promoted fp8 has it, :data:`PROMOTED_TILE_NS`).
    ``m``, ``n``, ``sms`` and ``widths`` are checked as launch_config checks them, 176 or not
    (GemmShapeError)."""
    picked = launch_config(m, n, sms, widths, {**WIDTH_COST, 176: PAIRS_176_COST})
    return 176 in widths and picked == (176, 2)


MAX_SPLITS = 16
MIN_SPLIT_STEPS = 4  # K tiles per range: fewer and the ring's fill and the epilogue dominate
SPLIT_TRAFFIC = 0.25  # partial sums' bytes (written, then read) against the operands' bytes


def split_count(
    m: int, n: int, k: int, tile_n: int, sms: int, dtype: str = "bfloat16", rows: int = TILE_M
) -> int:
    """K ranges per tile (split-K) for an ``m x n x k`` product on ``rows x tile_n`` tiles
    (``rows``: :func:`~.plan.tile_rows`, 128 down to 8).

    With ``tiles = ceil(m / rows) * ceil(n / tile_n)`` and ``k_tiles = ceil(k / tile_k)``, the
    largest ``s <= MAX_SPLITS`` that divides ``k_tiles``, keeps ``k_tiles / s >=
    MIN_SPLIT_STEPS``, fits one wave (``tiles * s <= sms``) and whose fp32 partial sums
    (``8 s m n`` bytes: written once, read once) stay within ``SPLIT_TRAFFIC`` of the operand
    bytes ``(m + n) k`` elements; 1 (no split) when none does. A tile count that already fills
    the SMs gets 1: splitting cannot add CTAs there, only traffic.
    """
    m, n, k = _positive_ints("split_count", m=m, n=n, k=k)
    sms = check_int(
        sms, "split_count's sms (the device's SM count)", minimum=1, error=GemmShapeError
    )
    gemm_plan.check_tile_n(tile_n)
    gemm_plan.check_input_type(dtype)
    if type(rows) is not int or rows not in gemm_plan.A_ROWS:
        raise GemmShapeError(
            f"split_count's rows (of a tile) is one of {gemm_plan.A_ROWS}, got {rows!r}"
        )
    tiles = ceil_div(m, rows) * ceil_div(n, tile_n)
    k_tiles = ceil_div(k, tile_k(dtype))
    operand_bytes = (m + n) * k * as_dtype(dtype).bits // 8
    best = 1
    for s in range(2, MAX_SPLITS + 1):
        fits = tiles * s <= sms and k_tiles % s == 0 and k_tiles // s >= MIN_SPLIT_STEPS
        if fits and 8 * s * m * n <= SPLIT_TRAFFIC * operand_bytes:
            best = s
    return best


# K tiles from which a tile twice as wide with split-K beats an unsplit one on the same CTA
# count (H200, docs/verification/2026-12-02-h200-gemm-shapes-tuning.txt, call 2, TFLOP/s):
# 128x8192x28672 (448 K tiles): 446 for 128 x 128 in 2 K ranges against 358 and 362 for
# 128 x 64; 256x4096x14336 (224): 484 and 481 against 408 and 404; 256x8192x28672: 568 for
# 128 x 256 in 2 ranges against 536 and 553 for 128 x 128; but at 128 K tiles
# 128x8192x8192 gave 328 (128 x 128, 2 ranges) against 377 and 379. The wider tile reads
# fewer operand bytes per MAC; the partial sums and their reduction cost a fixed share of
# the product, which a long K range amortises and a short one does not.
LONG_K_TILES = 200
# Widths whose fp8 tiles run alone where launch_config pairs them: 160. The 128 x 160 tile
# alone ran faster than in 2x1 clusters on 39 of the 40 fp8 shapes with two or more M tiles
# of 256 rows or more (geometric mean 1.048; up to 1.14 at 1024 x 10240 x 8192; H200, one
# run of benchmarks/gemm_width160.py, docs/PERFORMANCE.md "the 160-wide tile"); bf16 pairs
# were as fast or faster (0.987).
# 128 x 128 (promoted fp8 tiles, H200, benchmarks/gemm_promote_overlap.py, one run): alone
# beside the policy's 2x1 clusters 1.054 against 1.001 at 2048^3, 1.243 against 1.142 at
# 2048 x 2048 x 512, 1.061 against 0.955 at 1024 x 4096 x 4096 (the last session's run of
# benchmarks/gemm_alone.py: alone faster on 15 of the 16 fp8 shapes the policy pairs; the
# slower one, the ragged 5008 x 3008 x 2032, runs 192-wide tiles).
FP8_ALONE_WIDTHS = (160, 128)
# Widths whose tiles run alone in either type where launch_config pairs them: 224. Alone beside
# 2x1 clusters of the same tiles, bf16 (H200, benchmarks/gemm_configs.py, median of 3 repeats
# in one process; docs/PERFORMANCE.md "The 224-wide tile"): 256 x 28672 x 4096 1.118 against
# 1.101 of cuBLAS, 512 x 28672 x 4096 0.946 / 0.944, 256 x 57344 x 8192 0.966 / 0.955.
ALONE_WIDTHS = (224,)


def policy(
    m: int,
    n: int,
    k: int,
    sms: int,
    dtype: str = "bfloat16",
    widths: tuple[int, ...] = gemm_plan.TILE_NS,
) -> tuple[int, int, int]:
    """(tile_n, cluster_m, splits) for an ``m x n x k`` product on ``sms`` SMs.

    :func:`launch_config` picks the width and cluster, :func:`split_count` the K ranges for
    that width; then where that is an unsplit 128 x 64 or 128 x 128 tile over M > 64 rows
    (the 128-row A box) and K has at least :data:`LONG_K_TILES` K tiles, the tile twice as
    wide with split-K replaces it when :func:`split_count` splits that at all (the measured
    gain: :data:`LONG_K_TILES`). Tiles of :data:`ALONE_WIDTHS`, and fp8 tiles of
    :data:`FP8_ALONE_WIDTHS`, run alone."""
    tile_n, cluster_m = launch_config(m, n, sms, widths)
    if tile_n in ALONE_WIDTHS or (dtype == "float8_e4m3fn" and tile_n in FP8_ALONE_WIDTHS):
        cluster_m = 1
    splits = split_count(m, n, k, tile_n, sms, dtype)
    long_k = ceil_div(k, tile_k(dtype)) >= LONG_K_TILES
    wider = 2 * tile_n
    if splits == 1 and tile_n in (64, 128) and wider in widths and long_k:
        wide = split_count(m, n, k, wider, sms, dtype) if a_rows_for(m) == TILE_M else 1
        if wide > 1:
            return wider, 1, wide
    return tile_n, cluster_m, splits


# Stream-K's place in the policy, fitted to the H200 runs of 2026-12-02 (bf16 and promoted
# fp8, 65 shapes each, every stream-K width timed beside the policy in one process:
# docs/verification/2026-12-02-h200-stream-k-grouped-run.txt). Stream-K evens out the last
# round of tiles, so it pays where the tiled kernel's rounds waste SMs or its tile is narrow;
# what it costs is the hand-over of fp32 sums, a fixed amount a CTA that a long share of K
# steps amortises. Measured over the 200 stream-K timings of M > 128 and the 125 of
# M <= 128: with fewer than 64 K steps a CTA, 6 of 45 beat the tiled kernel (and lost up to
# 30% elsewhere: 256 x 6144 x 4096 bf16, 31 steps, 0.69 against 0.76); with one M tile
# (M <= 128, where a group is one CTA and shares nothing) 5 of 125 did, on two shapes
# (128 x 8192 x 28672, fp8 128 x 57344 x 8192).
STREAM_K_MIN_STEPS = 64  # K tiles a CTA, below which the hand-over is not amortised
STREAM_K_GAIN = 0.95  # modelled time against the tiled kernel's, at or below which it runs
# Tiled widths stream-K does not replace: 160. Wherever the policy picks the 160-wide tile and
# stream-K's model would replace it (bf16 256 and 512 x 10240 x 8192, fp8 256 x 28672 x 4096,
# 512 and 1024 x 10240 x 8192), the tiled kernel ran 3-21% faster on the H200 (docs/PERFORMANCE
# .md, "Tiles of fewer rows than the product's M, the 160-wide tile"; bf16 256 x 10240 x 8192:
# 1.125 of cuBLAS against 0.90-0.96), its tiles filling the SMs to 91-97% a round; stream-K's
# model, fitted against the other widths, costs none of its hand-over.
STREAM_K_NEVER_REPLACES = (160,)
# Tiled widths stream-K does not replace where their tiles fill at least STREAM_K_KEEP_FILL of
# the SMs' rounds (tiles / (rounds x SMs)): 224. Where the policy picks it and stream-K's model
# would replace it with its tiles filling 97% of two or four rounds (bf16 256 and 512 x 28672
# x 4096, 256 x 57344 x 8192), the 224-wide tiles alone ran 1.118, 0.946 and 0.966 of cuBLAS
# against 1.029, 0.934 and 0.967 for 256-wide stream-K (H200, docs/PERFORMANCE.md "The
# 224-wide tile"). Where they fill less (1024 x 10240 x 8192: 368 tiles in three rounds of
# 132, 93%) stream-K runs as before; not measured against the tiles.
STREAM_K_KEEPS_FILLED = (224,)
STREAM_K_KEEP_FILL = 0.95
# Tiled widths stream-K does not replace in promoted fp8 kernels: also 128. Wherever the
# policy picks 128-wide tiles and stream-K's model would replace them (256 x 8192 x 28672,
# 512 x 4096 x 14336, 512 x 8192 x 8192, 512 x 8192 x 28672, 1024 x 4096 x 14336), 128 x 128
# tiles alone ran faster than the promoted 192-wide stream-K kernel on the H200 (1.023
# against 0.894, 1.045 against 0.885, 0.959 against 0.904, 0.989 against 0.974, 0.922
# against 0.911 of cuBLASLt; benchmarks/gemm_promote_overlap.py, one run): stream-K's model
# costs a 128-wide column at WIDTH_COST's 1.40 of a 256-wide one, fitted on bf16, where the
# promoted kernel's wide tiles carry two fragments each.
STREAM_K_NEVER_REPLACES_PROMOTED = (160, 128)


def stream_k_policy(
    m: int,
    n: int,
    k: int,
    sms: int,
    dtype: str = "bfloat16",
    widths: tuple[int, ...] = gemm_plan.TILE_NS,
    promoted: bool = False,
) -> int | None:
    """The stream-K kernel's width for an ``m x n x k`` product on ``sms`` SMs, or None where
    the tiled kernel of :func:`policy` runs (``promoted``: fp8 with fp32 promotion).

    Both are costed in the unit of :func:`launch_config` (a K step of a ``128 x w`` tile
    costs ``w * WIDTH_COST[w]``): the tiled kernel ``rounds * k_tiles / splits`` steps of its
    width, stream-K ``units * k_tiles / groups`` steps a CTA (:func:`stream_k_grid`). Stream-K
    runs where M has at least two M tiles, the tiled width is not one of
    :data:`STREAM_K_NEVER_REPLACES` (:data:`STREAM_K_NEVER_REPLACES_PROMOTED`), a CTA gets
    at least :data:`STREAM_K_MIN_STEPS` steps and its cost is at most :data:`STREAM_K_GAIN`
    of the tiled kernel's; tiles of :data:`STREAM_K_KEEPS_FILLED` are kept where they fill
    at least :data:`STREAM_K_KEEP_FILL` of their rounds. Its width is 256 where there are at
    least as many units as groups, else 192 (measured: with fewer units each is shared by more
    CTAs and 128 x 256 lost, 256 x 4096 x 14336: 0.83 against 0.95 for 192); the widths of
    ``widths`` only (fp8 promoted: 192)."""
    if type(promoted) is not bool:
        raise GemmShapeError(f"stream_k_policy's promoted is True or False, got {promoted!r}")
    tiled = policy(m, n, k, sms, dtype, widths)
    return _stream_k_width(m, n, k, sms, dtype, widths, tiled, promoted)


def _tiled_rounds(m, n, sms, tiled_config) -> tuple[int, int, int]:
    """``(units, rounds, slots)`` of the tiled kernel of :func:`policy`'s ``(tile_n,
    cluster_m, splits)``: its work units (clusters' tiles, times the K ranges), the units a
    round runs (``sms / cluster_m``) and the rounds they take."""
    tile_n, cluster_m, splits = tiled_config
    units = ceil_div(ceil_div(m, TILE_M), cluster_m) * ceil_div(n, tile_n) * splits
    slots = sms // cluster_m
    return units, ceil_div(units, slots), slots


def _tiled_cost(m, n, k, sms, dtype, tiled_config) -> float:
    """The tiled kernel's modelled cost for :func:`policy`'s ``(tile_n, cluster_m, splits)``:
    ``rounds * k_tiles / splits * tile_n * WIDTH_COST[tile_n]``."""
    tile_n, _, splits = tiled_config
    rounds = _tiled_rounds(m, n, sms, tiled_config)[1]
    return rounds * ceil_div(k, tile_k(dtype)) / splits * tile_n * WIDTH_COST[tile_n]


def _stream_k_width(m, n, k, sms, dtype, widths, tiled_config, promoted) -> int | None:
    """:func:`stream_k_policy` given :func:`policy`'s answer ``tiled_config`` for the shape."""
    m_tiles, k_tiles = ceil_div(m, TILE_M), ceil_div(k, tile_k(dtype))
    kept = STREAM_K_NEVER_REPLACES_PROMOTED if promoted else STREAM_K_NEVER_REPLACES
    if m_tiles < 2 or tiled_config[0] in kept:
        return None
    if tiled_config[0] in STREAM_K_KEEPS_FILLED:
        units, rounds, slots = _tiled_rounds(m, n, sms, tiled_config)
        if units / (rounds * slots) >= STREAM_K_KEEP_FILL:
            return None
    tiled = _tiled_cost(m, n, k, sms, dtype, tiled_config)
    for width in (w for w in (256, 192) if w in widths):
        grid, m_group = stream_k_grid(m_tiles, ceil_div(n, width), k_tiles, sms)
        groups, sk_units = grid // m_group, m_tiles // m_group * ceil_div(n, width)
        if width == 256 and sk_units < groups and 192 in widths:
            continue
        steps = sk_units * k_tiles / groups
        cost = steps * width * WIDTH_COST[width]
        if steps >= STREAM_K_MIN_STEPS and cost <= STREAM_K_GAIN * tiled:
            return width
        return None
    return None


# Relative cost of one column of a 64-row CTA tile (a_rows 64: one consumer warpgroup computes
# 64 x w), in the unit of WIDTH_COST: a round of 128 x w tiles costs w * WIDTH_COST[w] a K
# step, a round of 64 x w tiles w * ROWS64_COST[w]. Fitted to one H200 run of
# benchmarks/gemm_rows64.py (2026-12-02 23:30 UTC; docs/PERFORMANCE.md, "64-row tiles"): every
# 64-row width beside the policy on the 45 shapes of M >= 64 of the small and inference sets,
# both types. Where both ran one round of tiles, the ratio of their times gave 0.58-0.71 for 64
# x 256 (0.68 on 128 tiles: 512 x 4096 x 4096), 0.68-0.81 for 64 x 192 and 0.86-0.93 for 64 x
# 128 (bf16); the values for these three lie in those ranges, and all five were chosen on the
# same 45 bf16 shapes (in-sample, as WIDTH_COST's were). A 64-row tile pays where it fills the
# SMs and 128-row tiles of half the width would not (1024^3: 128 tiles of 64 x 128 ran 1.11
# times as fast as 128 of 128 x 64; cuBLAS runs the same tile there). Promoted fp8
# (ROWS64_COST_PROMOTED): the one consumer does its fp32 adds with no second warpgroup's wgmmas
# beside them, so wide tiles cost more; fitted the same way. The bf16 96 column refitted on
# 2026-12-03 (benchmarks/gemm_rows64.py and gemm_configs.py, after the idle consumer's zeroing
# moved to stmatrix): where 64 x 96 and 64 x 128 tiles each ran one round on two M tiles,
# time(96) / time(128) = 96 c / (128 x 0.90) gave c = 1.19, 1.09 and 1.08 (128 x 6144 x 4096,
# 128 x 4096 x 4096, 128 x 4096 x 14336); 1.15 moves one shape of the benchmark, 128 x 6144 x
# 4096, to 64 x 96 (0.980 of cuBLAS against 0.955, median of 3 runs in one process). Promoted
# fp8 stays at 1.25: there 64 x 96 ran slower on that shape (0.943 against 0.966).
ROWS64_COST = {256: 0.68, 192: 0.80, 128: 0.90, 96: 1.15, 64: 1.9}
ROWS64_COST_PROMOTED = {192: 0.90, 128: 0.90, 96: 1.25, 64: 1.5}


def _positive_ints(caller: str, **values) -> tuple[int, ...]:
    """``values`` checked as positive ints (GemmShapeError naming ``caller`` and the value),
    in the order given."""
    return tuple(
        check_int(v, f"{caller}'s {x}", minimum=1, error=GemmShapeError) for x, v in values.items()
    )


def rows64_width(
    m: int,
    n: int,
    k: int,
    sms: int,
    dtype: str = "bfloat16",
    widths: tuple[int, ...] = gemm_plan.TILE_NS,
    promoted: bool = False,
) -> int | None:
    """The width of 64-row tiles (``a_rows`` 64, CTAs alone) for an ``m x n x k`` product on
    ``sms`` SMs, or None where :func:`policy` / :func:`stream_k_policy` run. None for
    ``m <= 64``, whose kernels already compute one 64-row tile (``a_rows`` 16, 32 or 64): the
    H200 run that fitted the costs also re-costed their widths, and lost 2-5% on five of the
    nine shapes that moved (docs/PERFORMANCE.md, "64-row tiles").

    A round of ``ceil(m / 64) * ceil(n / w)`` tiles of ``64 x w`` costs ``w *``
    :data:`ROWS64_COST` ``[w]`` (:data:`ROWS64_COST_PROMOTED` for ``promoted`` fp8) a K step;
    the cheapest width of ``widths`` with a cost wins (the widest on a tie), and runs where its
    ``rounds * k_tiles`` steps cost less than :func:`policy`'s tiled kernel (its rounds and
    split-K ranges), also where :func:`stream_k_policy` would run stream-K: stream-K's
    modelled cost, fitted against 128-row tiles, was 24-26% below 64 x 256 tiles' on the two
    shapes of the fitting run where both fill one round, but it ran 9% slower on one
    (256 x 8192 x 8192: 0.803 against 0.874 of cuBLAS) and 1% faster on the other
    (512 x 4096 x 14336)."""
    m, n, k, sms = _positive_ints("rows64_width", m=m, n=n, k=k, sms=sms)
    tiled = policy(m, n, k, sms, dtype, widths)
    return _rows64_width(m, n, k, sms, dtype, widths, promoted, tiled)


def _rows64_width(m, n, k, sms, dtype, widths, promoted, tiled_config) -> int | None:
    """:func:`rows64_width` given :func:`policy`'s answer ``tiled_config`` for the shape."""
    if m <= TILE_M // CONSUMERS:
        return None  # one tile of M already: its width is the other policies' (a_rows_for)
    costs = ROWS64_COST_PROMOTED if promoted else ROWS64_COST
    current = _tiled_cost(m, n, k, sms, dtype, tiled_config)
    k_tiles, m_tiles = ceil_div(k, tile_k(dtype)), ceil_div(m, TILE_M // CONSUMERS)
    best: tuple[float, int] | None = None
    for width in (w for w in widths if w in costs):
        cost = ceil_div(m_tiles * ceil_div(n, width), sms) * k_tiles * width * costs[width]
        if best is None or cost < best[0]:
            best = (cost, width)
    return best[1] if best is not None and best[0] < current else None


# One 64-row tile of M (33 to 64 rows): these products read B once, each CTA its own columns of it
# and all of A, and are bound by memory, not by the tensor cores, so WIDTH_COST (fitted on 128-row
# tiles that compute) prices their widths wrong. Measured on the H200 (bf16, median of 3 runs in one
# process, benchmarks/gemm_configs.py, docs/PERFORMANCE.md "One tile of M"): on the six unsplit
# shapes of M = 64 the widest tile that still gives nearly half the SMs (64 of 132) a tile in one
# round ran as fast as the best width or faster: 64 x 6144 x 4096 64 x 96 (64 CTAs) 0.991 of cuBLAS
# against 0.937 for 64 x 64 (96 CTAs), 64 x 10240 x 8192 64 x 160 0.965 against 0.944 for 64 x 96,
# 64 x 8192 x 8192 and 64 x 8192 x 28672 64 x 128 1.034 / 1.121 against 1.028 / 1.113 for 64 x 64,
# 64 x 28672 x 4096 64 x 256 1.017 against 1.022 for 64 x 240; narrower tiles, more CTAs, each
# re-reads all of A for fewer columns, and fewer than half the SMs could not pull B fast enough (64
# x 4096 x 4096: 64 x 96, 43 CTAs, 0.857 against 0.927 for 64 x 64; 64 x 10240 x 8192: 64 x 192, 54
# CTAs, 0.917 against 0.965 for 64 x 160, 64 CTAs). The winners held 64 tiles on 132 SMs (0.48), the
# losers 43 and 54 (0.33, 0.41): any fraction above 0.41 and up to 0.48 makes the same choices on
# the benchmark's shapes.
ONE_TILE_MIN_FILL = 0.45  # tiles of the round against the SMs, at or above which the widest runs
# Promoted fp8 on the same widths was slower on three of the four shapes where they differ
# (64 x 8192 x 8192 64 x 128 1.048 against 1.083 for the policy's 64 x 64; 64 x 10240 x 8192
# 64 x 160 0.998 against 1.027; 64 x 8192 x 28672 1.015 against 1.035) and faster on one (64 x
# 6144 x 4096 64 x 96 1.102 against 1.063): its launch_config widths stay.
ONE_TILE_TYPES = ("bfloat16",)


def one_tile_width(
    m: int,
    n: int,
    k: int,
    sms: int,
    dtype: str = "bfloat16",
    widths: tuple[int, ...] = gemm_plan.TILE_NS,
) -> int | None:
    """The width of the 64-row tiles (``a_rows`` 64, CTAs alone, all of K each) for an ``m x n
    x k`` product of one 64-row M tile (33 to 64 rows) on ``sms`` SMs, or None where the other
    policies decide: the widest of ``widths`` whose ``ceil(n / w)`` tiles fill at least
    :data:`ONE_TILE_MIN_FILL` of the SMs in one round, where :func:`policy` does not split K and
    ``dtype`` is one of :data:`ONE_TILE_TYPES`; None where no width does."""
    m, n, k, sms = _positive_ints("one_tile_width", m=m, n=n, k=k, sms=sms)
    gemm_plan.check_input_type(dtype)
    return _one_tile_width(m, n, sms, dtype, widths, policy(m, n, k, sms, dtype, widths))


def _one_tile_width(m, n, sms, dtype, widths, tiled_config) -> int | None:
    """:func:`one_tile_width` given :func:`policy`'s answer ``tiled_config`` for the shape."""
    if dtype not in ONE_TILE_TYPES or a_rows_for(m) != TILE_M // CONSUMERS:
        return None
    if tiled_config[2] > 1:
        return None  # a split K (run as stream-K, or replaced by finer tiles) stays
    fits = [
        w for w in widths if w in WIDTH_COST and ONE_TILE_MIN_FILL * sms <= ceil_div(n, w) <= sms
    ]
    return max(fits) if fits else None


# fp8 products of at most 64 rows whose N fits one round of 32-wide tiles run them: whole M a
# tile, all of K each, so every byte of B is read by one CTA (the tiles of the other policies
# either read B's tile once per M tile or split K and hand sums over). Measured on the H200
# (docs/PERFORMANCE.md, "32-wide tiles for small fp8 products"; benchmarks/gemm_configs.py,
# median of 3 runs in one process): fp8 64 x 4096 x 14336 0.999 of cuBLASLt against 0.939 for
# the policy's 64 x 64 tiles in two K ranges, 64 x 4096 x 4096 1.042 against 0.977 (32-row
# tiles 64 wide), 16 x 4096 x 4096 1.043 against 0.986, 16 x 4096 x 14336 1.089 against 1.036.
# Where N takes more than one round (64 x 6144 x 4096: 0.876 against 1.113) and for bf16 (64 x
# 4096 x 4096 0.904 against 0.921, 64 x 4096 x 14336 1.004 against 1.047) the tiles were slower.
NARROW_TILE_N = 32
NARROW_TYPES = ("float8_e4m3fn",)


def narrow_width(m: int, n: int, sms: int, dtype: str = "bfloat16") -> int | None:
    """:data:`NARROW_TILE_N` for an ``m x n`` C of ``dtype`` inputs on ``sms`` SMs where M fits
    one 64-row tile, ``dtype`` is one of :data:`NARROW_TYPES` and ``ceil(n / 32)`` tiles fit
    one round; else None (the other policies decide). The tiles load :func:`a_rows_for` rows
    of A a stage."""
    m, n, sms = _positive_ints("narrow_width", m=m, n=n, sms=sms)
    gemm_plan.check_input_type(dtype)
    fits = m <= TILE_M // CONSUMERS and ceil_div(n, NARROW_TILE_N) <= sms
    return NARROW_TILE_N if dtype in NARROW_TYPES and fits else None


# bf16 products of at most 64 rows whose N takes 45% to half of the SMs in 64-wide tiles run
# those tiles, all of M and all of K each (B read by one CTA, no K split), and launch
# programmatically (HopperGemm.launches_programmatically: the next launch's whole grid starts
# beside this one). Measured on the H200 (docs/PERFORMANCE.md, "Half the SMs, launched
# programmatically"; medians of 3 runs in one process): 64 x 4096 x 4096 0.960 of cuBLAS
# against 0.928 for the policy's 32 x 64 tiles over 128 CTAs (0.925 for the same 64 CTAs
# launched plainly), 16 x 4096 x 4096 1.083 against 1.035 (8 x 64 tiles; 1.042 plainly), 64 x
# 4096 x 14336 1.051 against 1.050 (the 2-way split). Launched programmatically, the tiles of
# two M tiles sharing B ran slower (64 x 4096 x 4096 32 x 64 tiles 0.857 against 0.926), and so
# did 64 CTAs of wider tiles over one M tile (the device check of 83162b4, the benchmark's plain
# column beside: 64 x 6144 x 4096 96 wide 0.939 against 0.984, 64 x 10240 x 8192 160 wide 0.894
# / 0.968, 64 x 8192 x 8192 128 wide 0.962 / 1.025): the programmatic launch is for these tiles.
BESIDE_TILE_N = 64
BESIDE_TYPES = ("bfloat16",)
BESIDE_MIN_FILL = 0.45  # tiles against the SMs, at or above which the rule runs (at most half)


def beside_width(m: int, n: int, sms: int, dtype: str = "bfloat16") -> int | None:
    """:data:`BESIDE_TILE_N` for an ``m x n`` C of ``dtype`` inputs on ``sms`` SMs where M fits
    one 64-row tile, ``dtype`` is one of :data:`BESIDE_TYPES` and ``ceil(n / 64)`` tiles are
    at least :data:`BESIDE_MIN_FILL` of the SMs and at most half of them; else None (the other
    policies decide). The tiles load :func:`a_rows_for` rows of A a stage."""
    m, n, sms = _positive_ints("beside_width", m=m, n=n, sms=sms)
    gemm_plan.check_input_type(dtype)
    fits = m <= TILE_M // CONSUMERS and _fills_beside(ceil_div(n, BESIDE_TILE_N), sms)
    return BESIDE_TILE_N if dtype in BESIDE_TYPES and fits else None


def _fills_beside(ctas: int, sms: int) -> bool:
    """Whether ``ctas`` CTAs fill :data:`BESIDE_MIN_FILL` to half of ``sms`` SMs: the grid
    :func:`beside_width` picks and :meth:`HopperGemm.launches_programmatically` launches
    programmatically (the next launch's whole grid fits beside it)."""
    return BESIDE_MIN_FILL * sms <= ctas and 2 * ctas <= sms


# K tiles a range of a 2-way split below which tiles of half the rows (M split in two, all of
# K each, the same grid) replace it where those tiles have fewer than 64 rows (M <= 64).
# Measured on the H200 (docs/PERFORMANCE.md, "Tiles of fewer rows than the product's M";
# benchmarks/gemm_small_tiles.py): with 32 K tiles a range (bf16 K = 4096) 8-row tiles gave
# 1.036 of cuBLAS at 16 x 4096 x 4096 against 0.918 for the split, 32-row 0.847 against 0.822
# at M = 64; with 16 (fp8 K = 4096) 0.864 against 0.788 and 0.916 against 0.839 at M = 16 and
# 64. With 112 K tiles a range (bf16 K = 14336) and 56 (fp8) the split was as fast or faster
# (benchmarks/gemm_configs.py, median of 3 runs in one process: bf16 16 x 4096 x 14336 0.954
# against 0.927 for 8-row tiles, 64 x 4096 x 14336 1.041 against 1.030; fp8 1.006 against
# 0.958, 0.924 against 0.921): each of the finer tiles reads all of B's tile, the split reads
# half of it a CTA, and a long range amortises the hand-over of its sums; their wgmmas compute
# 64 rows of which 8 or 32 are the tile's.
FINER_M_MAX_STEPS = 48


def finer_rows(m: int, k: int, splits: int, dtype: str = "bfloat16") -> int | None:
    """Rows of the tiles that replace :func:`policy`'s 2-way split-K (``splits``) of a product
    of ``m`` rows over ``k`` (``dtype`` inputs), or None where the split runs: half of
    :func:`a_rows_for`'s rows (64, 32, 16 or 8 for 128, 64, 32 or 16) where M spans more than
    one tile of half the rows, and those tiles have 64 rows (M > 64) or a range would have
    fewer than :data:`FINER_M_MAX_STEPS` K tiles.
    The grid is the same or nearly (twice the M tiles, or one fewer where M's last 128-row
    tile is half empty, one K range each); what goes is the hand-over of fp32 sums. 64-row
    tiles replace the split whatever K: on the H200 (benchmarks/gemm_configs.py, median of 3
    runs in one process, docs/PERFORMANCE.md "fp8 promotion under the next group's wgmmas")
    they ran faster on all six such shapes with long ranges: bf16 256 x 4096 x 14336 1.046 of
    cuBLAS against 0.902 for the split (run as stream-K), 128 x 8192 x 28672 1.043 against
    0.998, 256 x 8192 x 28672 1.033 against 1.021, 128 x 4096 x 14336 1.045 against 0.957;
    fp8 128 x 8192 x 28672 1.010 against 0.935, 128 x 4096 x 14336 1.094 against 0.994."""
    m = check_int(m, "finer_rows's m (rows of C)", minimum=1, error=GemmShapeError)
    k = check_int(k, "finer_rows's k", minimum=1, error=GemmShapeError)
    splits = check_int(splits, "finer_rows's splits", minimum=1, error=GemmShapeError)
    gemm_plan.check_input_type(dtype)
    rows = a_rows_for(m) // 2
    long = ceil_div(k, tile_k(dtype)) >= 2 * FINER_M_MAX_STEPS
    if splits != 2 or m <= rows or (long and rows < TILE_M // CONSUMERS):
        return None
    return rows  # a_rows_for gives 16 at least, so half of it is one of A_ROWS


def a_rows_for(m: int) -> int:
    """Rows of A a stage loads for ``m`` rows of C: the fewest of :data:`~.plan.A_ROWS` that
    hold them (16, 32, 64; 16 also for ``m <= 8``: the policy's kernels for M <= 16 were
    measured with 16, 8-row tiles serve M of 9 to 16 as two tiles, :func:`finer_rows`), 128
    for ``m > 64``."""
    m = check_int(m, "a_rows_for's m (rows of C)", minimum=1, error=GemmShapeError)
    return min(r for r in gemm_plan.A_ROWS if r >= min(max(m, 16), TILE_M))


class AutoGemm:
    """``C = A @ B^T`` with the kernel configuration :func:`policy` picks for each shape
    before the launch (one :class:`HopperGemm` per
    configuration, built on first use). ``prepare`` and calling work as in
    :class:`HopperGemm`. ``promote`` (default: for fp8) promotes fp8 sums to fp32
    (:func:`_promote`) every ``promote_every`` K tiles (:data:`PROMOTE_EVERY`; default
    :data:`DEFAULT_PROMOTE_EVERY` with promotion, 1 without), on the widths whose two
    fragments fit (:data:`PROMOTED_TILE_NS`). ``programmatic`` as in :class:`HopperGemm`."""

    def __init__(
        self,
        group_m: int = DEFAULT_GROUP_M,
        dtype: str = "bfloat16",
        l2_promotion: int = 0,
        promote: bool | None = None,
        promote_every: int | None = None,
        programmatic: bool | None = None,
    ):
        _check_group_m(group_m)
        gemm_plan.check_input_type(dtype)
        _check_programmatic(programmatic)
        self.programmatic = programmatic
        promote = dtype == "float8_e4m3fn" if promote is None else promote
        if promote_every is None:
            promote_every = DEFAULT_PROMOTE_EVERY if promote is True else 1
        _check_promote(promote, dtype, PROMOTED_TILE_NS[0], promote_every)
        self.group_m, self.dtype, self.l2_promotion = group_m, dtype, l2_promotion
        self.promote, self.promote_every = promote, promote_every
        self.widths = PROMOTED_TILE_NS if promote else gemm_plan.TILE_NS
        self.gemms: dict[tuple[int, int, bool, int, bool], HopperGemm] = {}
        self.sms: int | None = None

    def config(self, m: int, n: int, k: int | None = None) -> tuple[int, int, int, int, bool]:
        """(tile_n, cluster_m, splits, a_rows, stream_k) for an ``m x n`` C over ``k`` (no
        split and no stream-K without k: as for one K tile): 64-row tiles where
        :func:`rows64_width` or :func:`one_tile_width` says so; else :func:`policy`
        (:func:`a_rows_for` M), whose 2-way split gives way to tiles of half the rows where
        :func:`finer_rows` says so, and otherwise to stream-K where :func:`stream_k_policy` says
        so (``promoted``: this object's ``promote``)."""
        if self.sms is None:
            from cuda.core import Device  # the launcher's device: the current one

            self.sms = _sm_count(Device().device_id, "AutoGemm")
        if k is None:  # as for one K tile: no split, no stream-K, the cost of one K step
            k = tile_k(self.dtype)
        if narrow_width(m, n, self.sms, self.dtype) is not None:  # B read once, whole M a tile
            return NARROW_TILE_N, 1, 1, a_rows_for(m), False
        if beside_width(m, n, self.sms, self.dtype) is not None:  # the same on half the SMs
            return BESIDE_TILE_N, 1, 1, a_rows_for(m), False
        tiled = policy(m, n, k, self.sms, self.dtype, self.widths)
        rows64 = _rows64_width(m, n, k, self.sms, self.dtype, self.widths, self.promote, tiled)
        if rows64 is not None:  # tiles of 64 rows over M > 64
            return rows64, 1, 1, TILE_M // CONSUMERS, False
        one = _one_tile_width(m, n, self.sms, self.dtype, self.widths, tiled)
        if one is not None:  # one 64-row tile of M, bound by memory
            return one, 1, 1, TILE_M // CONSUMERS, False
        tile_n, cluster_m, splits = tiled
        rows = finer_rows(m, k, splits, self.dtype)
        if rows is not None:  # M in twice the tiles instead of K in two ranges
            return tile_n, 1, 1, rows, False
        width = _stream_k_width(m, n, k, self.sms, self.dtype, self.widths, tiled, self.promote)
        alone_224 = (tile_n, cluster_m, splits) == (224, 1, 1)
        if (width is not None or alone_224) and pairs_176(m, n, self.sms, self.widths):
            return 176, 2, 1, TILE_M, False  # in place of stream-K or 224 alone
        if width is not None:
            return width, 1, 1, TILE_M, True
        # split-K runs as stream-K with the same ranges, each tile's sums added by its first
        # range's CTA (no reduction kernel; measured on the H200 on every such shape of the
        # benchmark: 6-21% faster on the 128-row A box, docs/PERFORMANCE.md "Stream-K"; 0-18%
        # with 16 or 64 rows of A a stage, "Programmatic dependent launch, small-M stream-K")
        return tile_n, cluster_m, splits, a_rows_for(m), splits > 1

    def gemm_for(self, m: int, n: int, k: int | None = None) -> HopperGemm:
        """The configured kernel for an ``m x n`` C (over ``k``: split-K or stream-K where
        they pay)."""
        return self._gemm(self.config(m, n, k))

    def _gemm(self, config: tuple[int, int, int, int, bool]) -> HopperGemm:
        """The kernel object of a :meth:`config` result, built on first use."""
        tile_n, cluster_m, splits, a_rows, stream_k = config
        split_k = splits > 1 and not stream_k
        key = (tile_n, cluster_m, split_k, a_rows, stream_k)
        if key not in self.gemms:
            self.gemms[key] = HopperGemm(
                self.group_m,
                cluster_m,
                self.dtype,
                self.l2_promotion,
                tile_n,
                split_k,
                a_rows,
                self.promote,
                self.promote_every,
                stream_k,
                self.programmatic,
            )
        return self.gemms[key]

    def prepare(self, a, b, c, ctas: int | None = None) -> Callable[..., None]:
        m, k, n = _check_layout(a, b, c, self.dtype)
        config = self.config(m, n, k)
        splits = config[2]
        return self._gemm(config).prepare(a, b, c, ctas, splits if splits > 1 else None)

    def __call__(self, a, b, c, stream=None) -> None:
        self.prepare(a, b, c)(stream)


def _check_ctas(ctas, size: int) -> None:
    """GemmShapeError unless ``ctas`` (a cap on the grid) is None or an int holding at least
    one cluster of ``size`` CTAs: a smaller cap would still launch a whole cluster."""
    if ctas is None:
        return
    if type(ctas) is not int or ctas < 1:
        raise GemmShapeError(f"ctas caps the grid at a positive number of CTAs, got {ctas!r}")
    if ctas < size:
        raise GemmShapeError(
            f"ctas={ctas} is below one cluster: this GEMM launches CTAs in clusters of "
            f"{size}, so the grid takes at least {size}; pass ctas >= {size} or use "
            "cluster_m=1 and cluster_n=1"
        )


def _check_programmatic(programmatic) -> None:
    if programmatic is not None and type(programmatic) is not bool:
        raise GemmShapeError(
            f"programmatic is True, False or None (where the grid fills the SMs), got "
            f"{programmatic!r}"
        )


def _check_group_m(group_m) -> None:
    """:class:`GemmShapeError` unless ``group_m`` (the rasterisation group) is a positive int."""
    if not isinstance(group_m, int) or group_m < 1:
        raise GemmShapeError(f"group_m is a positive number of M tiles, got {group_m!r}")


def _sm_count(device_id: int, kernel: str) -> int:
    """SMs of device ``device_id``."""
    drv = driver()
    attr = drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    return int(check(drv.cuDeviceGetAttribute(attr, device_id), "cuDeviceGetAttribute", kernel))


def _row_major(x) -> bool:
    """Dense row-major (C order), as the tensor maps assume; unknown array kinds pass."""
    if hasattr(x, "is_contiguous"):  # torch
        return bool(x.is_contiguous())
    cai = array_interface(x)
    if cai is None or cai.get("strides") is None:
        return True
    rows, cols = cai["shape"]
    size = int(cai["typestr"][2:])
    return tuple(cai["strides"]) == (cols * size, size) or rows == 1


def dtype_name(x) -> str:
    """The element type's name of an array (torch, cupy, numpy or ml_dtypes), compared exactly:
    ``float8_e4m3fnuz`` is not ``float8_e4m3fn`` (another bias and no infinities)."""
    return str(getattr(x, "dtype", "")).removeprefix("torch.")


def _check_layout(a, b, c, dtype: str = "bfloat16") -> tuple[int, int, int]:
    """(M, K, N) after the rules every shape follows: 2-D and row-major, A and B of ``dtype``
    and C bfloat16, B's K equals A's, C is M x N, and M, N, K >= 1."""
    shapes = [tuple(int(s) for s in getattr(x, "shape", ())) for x in (a, b, c)]
    if any(len(s) != 2 for s in shapes):
        raise GemmShapeError(f"A, B and C must be 2-D, got shapes {shapes}")
    (m, k), (n, kb), (mc, nc) = shapes
    if kb != k or (mc, nc) != (m, n):
        raise GemmShapeError(
            f"C = A @ B^T needs A (M, K), B (N, K), C (M, N); got A {shapes[0]}, B {shapes[1]}, "
            f"C {shapes[2]}"
        )
    if min(m, n, k) < 1:
        raise GemmShapeError(
            f"M, N, K = {m}, {n}, {k}: the GEMM takes M, N, K >= 1 (an empty product has nothing "
            "to compute; skip the call)"
        )
    for name, x, want in zip("ABC", (a, b, c), (dtype, dtype, "bfloat16")):
        if dtype_name(x) != want:
            raise GemmShapeError(f"{name} must be {want}, got {getattr(x, 'dtype', None)}")
        if not _row_major(x):
            raise GemmShapeError(
                f"{name} must be dense row-major (its tensor map assumes it): pass "
                f"{name.lower()}.contiguous(), or for B = W^T pass W itself"
            )
    return m, k, n


def _check_operands(
    a, b, c, dtype: str = "bfloat16", tile_n: int = TILE_N, a_rows: int = TILE_M
) -> tuple[int, int, int]:
    """(M, K, N) of operands the kernel takes as they are: :func:`_check_layout`, rows 16-byte
    aligned, and, unless :data:`~.shapes.BOXES_PAST_EDGES`, each matrix at least one TMA box
    (:mod:`~.shapes` stages the others)."""
    m, k, n = _check_layout(a, b, c, dtype)
    k_align = 16 * 8 // as_dtype(dtype).bits
    if k % k_align or n % 8:
        raise GemmShapeError(
            f"K = {k} must be a multiple of {k_align} and N = {n} of 8 (TMA needs 16-byte row "
            "pitches): pad them"
        )
    tk = tile_k(dtype)
    min_m = max(a_rows, shapes.C_BOX_ROWS)
    if not shapes.BOXES_PAST_EDGES and (m < min_m or n < tile_n or k < tk):
        raise GemmShapeError(
            f"M, N, K = {m}, {n}, {k}: this kernel needs M >= {min_m}, N >= {tile_n}, "
            f"K >= {tk} (one TMA box each); use torch.matmul for smaller products"
        )
    return m, k, n


class _DeviceMatrix:
    """A zero-filled, dense row-major ``rows x cols`` device matrix of ``elem``-byte elements
    (``cuMemAlloc``, ``cuMemsetD8``), freed with the object: a staging workspace. It carries
    the ``__cuda_array_interface__`` and ``dtype`` name the GEMM's checks and tensor maps read."""

    def __init__(self, rows: int, cols: int, dtype: str, kernel: str, vector: bool = False):
        drv = driver()
        shape = (cols,) if vector else (rows, cols)  # vector: one row, seen as 1-D
        self.shape, self.dtype, self.kernel = shape, dtype, kernel
        nbytes = rows * cols * as_dtype(dtype).bits // 8
        self.ptr = int(check(drv.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})", kernel))
        check(drv.cuMemsetD8(self.ptr, 0, nbytes), "cuMemsetD8 of the workspace", kernel)
        check(drv.cuCtxSynchronize(), "zeroing the workspace", kernel)  # before any stream uses it
        typestr = f"|V{as_dtype(dtype).bits // 8}"
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
        }

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the driver may be gone
            driver().cuMemFree(self.ptr)


def _copy2d(copy: shapes.Copy2D, src, dst, kernel: str) -> Callable[[int], None]:
    """``copy`` between two device matrices as one ``cuMemcpy2DAsync`` on a stream handle; a
    failure is a LaunchError naming ``kernel`` (the program the copy stages for)."""
    drv = driver()
    params = drv.CUDA_MEMCPY2D()
    device = drv.CUmemorytype.CU_MEMORYTYPE_DEVICE
    params.srcMemoryType, params.dstMemoryType = device, device
    params.srcDevice, params.dstDevice = device_pointer(src), device_pointer(dst)
    params.srcPitch, params.dstPitch = copy.src_pitch, copy.dst_pitch
    params.WidthInBytes, params.Height = copy.width, copy.rows

    def run(stream: int) -> None:
        check(drv.cuMemcpy2DAsync(params, drv.CUstream(stream)), "staging copy", kernel)

    return run


def _copies_in(stage: shapes.Staging, a, b, work: dict, kernel: str) -> list[Callable[[int], None]]:
    """The staging copies of A and B into their workspaces (those that are staged)."""
    copies = (("A", stage.a, a), ("B", stage.b, b))
    return [_copy2d(cp, src, work[name], kernel) for name, cp, src in copies if cp is not None]


def _check_splits(splits, k_tiles: int) -> None:
    """GemmShapeError unless ``splits`` is a positive int dividing ``k_tiles``: every range
    then has the same number of K tiles, all inside K (no range loads only padding)."""
    if type(splits) is not int or splits < 1 or k_tiles % splits:
        raise GemmShapeError(
            f"splits={splits!r} must be a positive int dividing the {k_tiles} K tiles (equal K "
            "ranges); pick a divisor, or leave splits out for split_count's choice"
        )


def _stream_handle(stream, launcher: Launcher) -> int:
    """The raw handle of ``stream`` (a ``cuda.core`` Stream, anything with ``handle``, or an
    int), the launcher's default stream for None."""
    stream = stream if stream is not None else launcher.device.default_stream
    return int(stream.handle) if hasattr(stream, "handle") else int(stream)
