"""The simulator's side of :class:`tilemem.ir.intrinsics.registry.SimContext`.

A :class:`Context` is one warp executing one instruction (``call``, ``active``); an
:class:`AsyncContext` is an asynchronous operation completing, whose accesses belong to
the operation's own thread of happens-before (forked at the issue).
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import numpy as np

from ..errors import SimError
from ..ir.nodes import Call
from .machine import (
    CTA,
    QUEUE_WAITS,
    QUEUES,
    SMEM_BASE,
    TMEM_COLS,
    TMEM_LANES,
    AsyncOp,
    Barrier,
    Machine,
    MBarrier,
    Queue,
    Wait,
    Warp,
    write_conflict,
)
from .values import LANES

LANE_IDS = np.arange(LANES, dtype=np.int32)


class Context:
    """One warp at one instruction (see the protocol's docstring for the contract)."""

    def __init__(self, machine: Machine, warp: Warp, runner) -> None:
        self.m, self.w, self.runner = machine, warp, runner
        self.lanes = LANE_IDS
        self.thread_ids = warp.thread_ids
        self.warp = warp.index
        self.cta = warp.cta.block
        self.rank = warp.cta.rank
        self.cluster_size = len(warp.cta.cluster)
        self.block_dim = machine.kernel.block
        self.grid_dim = machine.grid
        self.call: Call | None = None
        self.active = warp.mask
        self.op_name = ""

    # -- who is acting ---------------------------------------------------------------------
    @property
    def async_(self) -> bool:
        return False

    def actor(self) -> tuple:
        return self.w.gid, self.m.vc[self.w.gid]

    def write_actor(self) -> tuple:
        """Who writes global memory here: :meth:`actor`, but for a TMA store the clock of its
        write part (:meth:`issue`'s ``split_write``)."""
        return self.actor()

    def phase(self) -> str | None:
        return self.w.phase

    def source(self) -> str:
        return self.m.kernel.locations.get(self.w.stmt, "?")

    def rec(self, op: str | None = None) -> int:
        return self.m.record(op or self.op_name, self.w, self.active, self.phase(), self.source())

    # -- operands ---------------------------------------------------------------------------
    def value(self, i: int) -> np.ndarray:
        assert self.call is not None
        return self.runner.eval(self.call.args[i], self.active)

    def uniform(self, i: int) -> int:
        v = self.value(i)
        vals = np.unique(v[self.active]) if self.active.any() else v[:1]
        if vals.size != 1:
            raise SimError(
                f"{self.op_name}: operand {i} must be the same in every active lane of a warp, "
                f"got {vals.tolist()[:8]} ({self.w.name})"
            )
        return int(vals[0])

    # -- shared memory ------------------------------------------------------------------------
    def _cta(self, rank: int | None) -> CTA:
        cta = self.w.cta
        if rank is None or rank == cta.rank:
            return cta
        if not 0 <= rank < len(cta.cluster):
            raise SimError(
                f"{self.op_name}: cluster rank {rank} outside the cluster of {len(cta.cluster)}"
            )
        peer = cta.cluster[rank]
        if peer.finished:
            self.hazard(  # the peer's shared memory is past its lifetime: the CTA exited
                "lifetime",
                f"{self.op_name} reaches the shared memory of cluster rank {rank} (CTA "
                f"{peer.block}) after every thread of that CTA exited; keep a CTA resident "
                "until its peers' remote operations on it are done (a cluster barrier at the "
                "end, or wait on the barriers they arrive on before exiting)",
                space="shared",
            )
        return peer

    def _expand(self, addrs, nbytes: int) -> np.ndarray:
        return np.asarray(addrs, np.int64)[..., None] + np.arange(nbytes, dtype=np.int64)

    def smem_read(self, addrs, nbytes: int, *, rank: int | None = None) -> np.ndarray:
        a = self._expand(addrs, nbytes)
        return self.m.smem_access(
            self._cta(rank),
            a,
            self.actor(),
            False,
            self.rec(),
            async_=self.async_,
            phase=self.phase(),
        )

    def smem_write(self, addrs, data, *, rank: int | None = None) -> None:
        data = np.asarray(data, np.uint8)
        a = self._expand(addrs, data.shape[-1])
        self.m.smem_access(
            self._cta(rank),
            a,
            self.actor(),
            True,
            self.rec(),
            data,
            async_=self.async_,
            phase=self.phase(),
        )

    # -- global memory (tensor maps) ---------------------------------------------------------
    def tensor_map(self, i: int):
        """The host tensor map bound to ``call.args[i]`` (a ``T.TensorMap`` parameter)."""
        assert self.call is not None
        return self.runner.tensor_map(self.call.args[i])

    def global_read(self, array: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Elements of ``array`` (a bound kernel argument) at flat indices ``idx``."""
        mem = self.m.bind_global(array, "?")
        return self.m.global_access(mem, idx, self.actor(), False, self.rec())

    def global_write(self, array: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
        mem = self.m.bind_global(array, "?")
        self.m.global_access(mem, idx, self.write_actor(), True, self.rec(), values)

    def _counter_lanes(self, flat: np.ndarray, name: str, idx, op: str) -> list[tuple[int, int]]:
        """(lane, element) of each active lane whose flat index ``idx`` lies inside the
        counter array; an "out-of-bounds" hazard for each other active lane."""
        idx = np.asarray(idx, np.int64)
        out = []
        for lane in np.flatnonzero(self.active):
            i = int(idx[lane])
            if 0 <= i < flat.size:
                out.append((int(lane), i))
                continue
            self.hazard(
                "out-of-bounds",
                f"{op} at element {i} of global {name}, which has {flat.size}; "
                "index the counters inside the buffer",
                space="global",
                buffer=name,
                where=f"element {i}",
            )
        return out

    def global_atomic_add(self, var, idx, values) -> np.ndarray:
        """Lane by lane in lane order: acquire what earlier atomics on the element released,
        add, release this warp's knowledge. Atomics bypass the race shadow (they are not
        races with each other); an index outside the array is an "out-of-bounds" hazard
        and that lane adds nothing."""
        mem = self.runner.bindings[var]
        flat, _, name = mem
        cells = flat.view(np.uint32)  # the 32 bits of each element, whatever numpy type
        gid, vc = self.actor()
        old = np.zeros(LANES, np.uint32)
        for lane, i in self._counter_lanes(flat, name, idx, "atom.add"):
            key = (id(flat), i)
            released = self.m.atomic_clocks.get(key)
            if released is not None:
                self.m.join(gid, released)
            old[lane] = cells[i]
            cells[i] = np.uint32((int(cells[i]) + int(values[lane])) & 0xFFFFFFFF)
            self.m.atomic_clocks[key] = vc.copy()
        self.m.instructions["atom.global"] += 1
        self.m.tick(gid)
        return old

    def global_wait_ge(self, var, idx, values) -> Generator[Wait, None, None]:
        """``ld.acquire.gpu`` spun until each active lane's element is at least its value
        (unsigned), then acquire what the atomics on it released. Like the atomics it
        bypasses the race shadow; an index outside the array is an "out-of-bounds" hazard
        and that lane does not wait."""
        flat, _, name = self.runner.bindings[var]
        cells = flat.view(np.uint32)
        lanes = [
            (i, int(values[lane]) & 0xFFFFFFFF)
            for lane, i in self._counter_lanes(flat, name, idx, "ld.acquire")
        ]

        def ready() -> bool:
            return all(int(cells[i]) >= v for i, v in lanes)

        def waiting() -> str:
            short = [f"{name}[{i}] = {int(cells[i])} < {v}" for i, v in lanes if cells[i] < v]
            return "ld.acquire.gpu spin: " + ", ".join(short)

        if not ready():
            yield Wait(ready, waiting)
        gid = self.w.gid
        for i, _ in lanes:
            released = self.m.atomic_clocks.get((id(flat), i))
            if released is not None:
                self.m.join(gid, released)
        self.m.instructions["ld.acquire.global"] += 1
        self.m.tick(gid)

    # -- registers ---------------------------------------------------------------------------------
    def _regs(self, var):
        if var not in self.w.regs:
            raise SimError(f"{self.op_name}: {var.name} is not a local array of this warp")
        return self.w.regs[var]

    def regs_read(self, var) -> np.ndarray:
        values, shadow = self._regs(var)
        idx = np.arange(values.shape[1])
        gid, vc = self.actor()
        rec = self.rec()
        self.m.check_registers(self.w, var, shadow, idx, gid, vc, False, rec)
        shadow.record_read(idx, gid, int(vc[gid]), rec)
        return values.copy()

    def regs_write(self, var, values, lanes=None) -> None:
        regs, shadow = self._regs(var)
        lanes = self.active if lanes is None else lanes
        idx = np.arange(regs.shape[1])
        gid, vc = self.actor()
        rec = self.rec()
        self.m.check_registers(self.w, var, shadow, idx, gid, vc, True, rec)
        shadow.record_write(idx, gid, int(vc[gid]), rec, self.async_)
        values = np.asarray(values).reshape(regs.shape)
        regs[lanes] = values[lanes].astype(regs.dtype)

    # -- tensor memory ----------------------------------------------------------------------
    def _tmem_cells(self, lanes, cols, cta: CTA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lanes, cols = np.broadcast_arrays(np.asarray(lanes, np.int64), np.asarray(cols, np.int64))
        sm = cta.sm
        inside = (lanes >= 0) & (lanes < TMEM_LANES) & (cols >= 0) & (cols < TMEM_COLS)
        owned = np.zeros(lanes.shape, bool)
        owned[inside] = sm.owner[cols[inside]] == cta.linear
        if not owned.all():
            bad_cols = cols[~owned]
            freed = any(((bad_cols >= s) & (bad_cols < s + n)).any() for s, n in cta.freed)
            where = f"lanes {_range(lanes[~owned])} x columns {_range(bad_cols)}"
            if freed:
                self.hazard(
                    "tmem-protocol",
                    "tensor memory used after tcgen05.dealloc freed its columns; dealloc only "
                    "after the last tcgen05 access is complete (wait::ld / the MMA's commit)",
                    space="tmem",
                    where=where,
                )
            else:
                self.hazard(
                    "out-of-bounds",
                    "tensor memory access outside this CTA's tcgen05.alloc allocation; check the "
                    "column and lane arithmetic against the pool's total_cols",
                    space="tmem",
                    where=where,
                )
        return lanes, cols, owned

    def tmem_read(self, lanes, cols, *, rank: int | None = None) -> np.ndarray:
        cta = self._cta(rank)
        lanes, cols, ok = self._tmem_cells(lanes, cols, cta)
        sm = cta.sm
        idx = (lanes[ok] * TMEM_COLS + cols[ok]).reshape(-1)
        gid, vc = self.actor()
        rec = self.rec()
        name = self._tmem_name(cols[ok], cta)
        if (~sm.shadow.init[idx]).any():
            first = idx[~sm.shadow.init[idx]]
            self.hazard(
                "uninitialized",
                "tensor memory read before anything wrote it (an MMA with accumulate on a fresh "
                "accumulator, or a load before the MMA's commit)",
                space="tmem",
                buffer=name,
                where=_cells(first),
            )
        self.m._check(sm.shadow, idx, gid, vc, False, rec, "tmem", name, _cells)
        sm.shadow.record_read(idx, gid, int(vc[gid]), rec)
        out = np.zeros(lanes.shape, np.uint32)
        out[ok] = sm.data[lanes[ok], cols[ok]]
        return out

    def tmem_write(self, lanes, cols, data, *, rank: int | None = None) -> None:
        cta = self._cta(rank)
        lanes, cols, ok = self._tmem_cells(lanes, cols, cta)
        data = np.broadcast_to(np.asarray(data, np.uint32), lanes.shape)
        sm = cta.sm
        idx = (lanes[ok] * TMEM_COLS + cols[ok]).reshape(-1)
        gid, vc = self.actor()
        rec = self.rec()
        name = self._tmem_name(cols[ok], cta)
        self.m._check(sm.shadow, idx, gid, vc, True, rec, "tmem", name, _cells)
        self._lane_conflict(idx, data[ok], lanes.shape, np.flatnonzero(ok.reshape(-1)), name)
        sm.shadow.record_write(idx, gid, int(vc[gid]), rec, self.async_)
        sm.data[lanes[ok], cols[ok]] = data[ok]

    def _lane_conflict(self, idx, data, shape, positions, name: str) -> None:
        """Two writes of one instruction to one TMEM cell with different values (a
        ``tcgen05.st`` whose lanes share a cell): the hardware keeps one, unspecified which.
        ``shape`` is the cells' (thread, register) shape for a store."""
        clash = write_conflict(idx, data)
        if clash is None:
            return
        i, j = clash
        rec = self.rec()
        recs: tuple[int, ...]
        if len(shape) == 2 and shape[0] == LANES:  # row = the thread's lane
            a, b = sorted(int(positions[k]) // shape[1] for k in (i, j))
            recs, who = (
                (self.m.lane_record(rec, a), self.m.lane_record(rec, b)),
                f"lanes {a} and {b}",
            )
        else:
            recs, who = (rec,), "two writes"
        self.m.report(
            "race",
            f"{who} of one {self.op_name} write TMEM cell {_cells(idx[[i]])} of {name} with "
            f"different values ({int(data[i]):#x}, {int(data[j]):#x}); the hardware keeps one "
            "of them, unspecified which: give each lane its own cell, or write one value",
            recs,
            space="tmem",
            buffer=name,
            where=_cells(idx[[i]]),
        )

    def _tmem_name(self, cols, cta: CTA) -> str:
        if cols.size == 0:
            return ""
        start = next((s for s, a in cta.sm.allocs.items() if a[1] is cta), 0)
        col = int(cols.reshape(-1)[0]) - start
        hits = [b for b in self.m.kernel.tmem_buffers if b[1] <= col < b[1] + (b[2] or 0)]
        phase = self.phase()
        live = [b for b in hits if phase is None or b[3] is None or phase in b[3]]
        if phase is not None and hits and not live:
            self.hazard(
                "lifetime",
                f"tensor memory access in phase {phase!r} to {hits[0][0]}, live only in "
                f"{list(hits[0][3] or ())}; move the access or give the buffer live= that phase",
                space="tmem",
                buffer=hits[0][0],
                where=f"column {col}",
            )
        return (live or hits or [("",)])[0][0]

    def tmem_alloc(self, slot: int, ncols: int, cta_group: int) -> Generator[Wait, None, int]:
        cta, sm = self.w.cta, self.w.cta.sm
        if ncols < 32 or ncols > TMEM_COLS or ncols & (ncols - 1):
            self.hazard(
                "tmem-protocol",
                f"tcgen05.alloc of {ncols} columns: allocations are powers of two from 32 to "
                f"{TMEM_COLS}; round the pool's total_cols up",
                space="tmem",
            )
            ncols = max(32, 1 << max(0, (ncols - 1).bit_length()))
            ncols = min(ncols, TMEM_COLS)
        if cta.relinquished:
            self.hazard(
                "tmem-protocol",
                "tcgen05.alloc after this CTA relinquished its allocation permit; allocate "
                "everything before tcgen05.relinquish_alloc_permit",
                space="tmem",
            )
        if sm.free_start(ncols) is None:

            def held() -> str:
                holders = {
                    f"CTA {a[1].block} ({a[0]} columns at {s})" for s, a in sm.allocs.items()
                }
                free = int((sm.owner < 0).sum())
                return (
                    f"tcgen05.alloc of {ncols} columns: {free} of {TMEM_COLS} free on the SM, held "
                    f"by {', '.join(sorted(holders))}"
                )

            yield Wait(lambda: sm.free_start(ncols) is not None, held)
        start = sm.free_start(ncols)
        assert start is not None
        sm.owner[start : start + ncols] = cta.linear
        cta.tmem_used = True
        cta.alloc_rec = self.rec()
        sm.allocs[start] = (ncols, cta, self.w.index, cta.alloc_rec)
        self.smem_write(np.array([slot]), np.array([start], np.uint32).view(np.uint8).reshape(1, 4))
        return start

    def tmem_dealloc(self, taddr: int, ncols: int, cta_group: int) -> None:
        cta, sm = self.w.cta, self.w.cta.sm
        start = taddr & 0xFFFF
        alloc = sm.allocs.get(start)
        if alloc is None or alloc[1] is not cta:
            self.hazard(
                "tmem-protocol",
                f"tcgen05.dealloc of columns {start}..{start + ncols - 1}, which this CTA has not "
                "allocated; pass the address tcgen05.alloc wrote to the slot",
                space="tmem",
                where=f"columns {start}..{start + ncols - 1}",
            )
            return
        n, _, warp, _ = alloc
        if warp != self.w.index:
            self.hazard(
                "tmem-protocol",
                f"tcgen05.dealloc by warp {self.w.index} of columns warp {warp} allocated; the "
                "allocating warp must free them",
                space="tmem",
                where=f"columns {start}..{start + n - 1}",
            )
        if n != ncols:
            self.hazard(
                "tmem-protocol",
                f"tcgen05.dealloc of {ncols} columns, but {n} were allocated at {start}; free "
                "exactly what was allocated",
                space="tmem",
                where=f"columns {start}..{start + n - 1}",
            )
        lanes, cols = np.meshgrid(np.arange(TMEM_LANES), np.arange(start, start + n), indexing="ij")
        idx = (lanes * TMEM_COLS + cols).reshape(-1)
        _, vc = self.actor()
        late = sm.shadow.unordered_reads(idx, vc) | sm.shadow.unordered_writes(idx, vc)
        if late.any():
            first = idx[late]
            other = int(max(sm.shadow.rrec[first[0]], sm.shadow.wrec[first[0]]))
            self.m.report(
                "tmem-protocol",
                "tcgen05.dealloc frees columns an access is not ordered before (a tcgen05.ld "
                "without wait::ld and a barrier, or an MMA before its commit is waited on); "
                "dealloc only after the last access completes",
                (self.rec(), other),
                space="tmem",
                where=_cells(first),
            )
        sm.owner[start : start + n] = -1
        del sm.allocs[start]
        cta.freed.append((start, n))
        # the next allocation of these columns starts afresh: unwritten, no accesses to order
        sm.shadow.wt[idx], sm.shadow.rt[idx], sm.shadow.init[idx] = -1, -1, False

    def tmem_relinquish(self, cta_group: int) -> None:
        self.w.cta.relinquished = True

    # -- mbarriers ------------------------------------------------------------------------------
    def _mbarrier(self, bar: int, rank: int | None, what: str) -> MBarrier | None:
        mb = self._cta(rank).mbarriers.get(bar)
        if mb is None:
            self.hazard(
                "mbarrier",
                f"{what} on shared address {bar:#x}, where no mbarrier was initialised; "
                "mbarrier.init it (and fence + sync) before use",
                space="mbarrier",
                buffer=self._bar_name(bar),
            )
        return mb

    def _bar_name(self, bar: int) -> str:
        buf = self.m.buffer_at(bar, None)
        if buf is None:
            return f"{bar:#x}"
        return f"{buf[2]}[{(bar - buf[0]) // 8}]"

    def mbarrier_init(self, bar: int, count: int) -> None:
        cta = self.w.cta
        cta.mbarriers[bar] = MBarrier(count, self.m.nthreads)
        self.smem_write(np.array([bar]), np.zeros((1, 8), np.uint8))

    def mbarrier_arrive(self, bar: int, count: int = 1, *, tx: int = 0, rank: int | None = None):
        mb = self._mbarrier(bar, rank, "mbarrier.arrive")
        if mb is None:
            return
        if mb.pending <= 0:
            self.hazard(
                "mbarrier",
                f"arrival on {self._bar_name(bar)} beyond its {mb.count} expected arrivals in "
                f"phase {mb.phase} ({mb.state()}); match the init count to the arriving threads",
                space="mbarrier",
                buffer=self._bar_name(bar),
            )
        gid, vc = self.actor()
        np.maximum(mb.accum, vc, out=mb.accum)
        if not self.async_:
            self.m.tick(gid)
        mb.tx += tx
        mb.pending -= count
        mb.settle()

    def complete_tx(self, bar: int, nbytes: int, *, rank: int | None = None) -> None:
        mb = self._mbarrier(bar, rank, "complete_tx")
        if mb is None:
            return
        _, vc = self.actor()
        np.maximum(mb.accum, vc, out=mb.accum)
        mb.tx -= nbytes
        mb.settle()

    def mbarrier_ready(self, bar: int, parity: int) -> bool:
        mb = self.w.cta.mbarriers.get(bar)
        return mb is not None and mb.phase % 2 != parity

    def mbarrier_wait(self, bar: int, parity: int) -> Generator[Wait, None, bool]:
        """Wait until the phase with ``parity`` completes; then what it released happens
        before this warp's next instruction."""
        mb = self._mbarrier(bar, None, "mbarrier.try_wait.parity")
        if mb is None:
            return True
        if mb.phase % 2 == parity:
            name = self._bar_name(bar)
            yield Wait(
                lambda: mb.phase % 2 != parity,
                lambda: f"mbarrier.try_wait.parity({parity}) on {name}: {mb.state()}",
            )
        released = mb.completed.get(parity)
        if released is not None:
            self.m.join(self.w.gid, released)
        return True

    # -- asynchronous operations --------------------------------------------------------------
    def _queue(self, name: str) -> Queue:
        w = self.w
        if name not in w.queues:
            if name not in QUEUES:
                raise SimError(f"unknown asynchronous queue {name!r}")
            agents = self.m.agents(w.cta.first_gid, w.index, name)
            w.queues[name] = Queue(agents, [self.m.vc[a].copy() for a in agents])
        return w.queues[name]

    def issue(
        self, queue: str, complete: Callable, what: str, *, writes=(), split_write: bool = False
    ) -> None:
        """Queue ``complete`` on this warp's ``queue``; ``writes``: ``(local array, count)``
        pairs whose first ``count`` elements the operation writes (see :meth:`_reserve`).
        ``split_write`` (a TMA store): the operation's global writes take the agent's next
        clock, which only a full wait acquires (``cp.async.bulk.wait_group``), not the
        ``.read`` wait that orders its shared-memory reads."""
        q = self._queue(queue)
        gid = self.w.gid
        slot = q.issued % len(q.agents)
        q.issued += 1
        agent, vc = q.agents[slot], q.vcs[slot]
        np.maximum(vc, self.m.vc[gid], out=vc)
        vc[agent] += 1
        read_vc = vc.copy()
        if split_write:
            vc[agent] += 1  # the write part: after the read part, before the agent's next
        self.m.tick(gid)
        op = AsyncOp(
            complete,
            read_vc,
            agent,
            what,
            self.w,
            queue,
            q.group,
            self.active,
            self.phase(),
            self.source(),
            wvc=vc.copy() if split_write else None,
        )
        q.pending.append(op)
        for clocks, stamp in ((q.group_vc, op.vc), (q.group_wvc, vc)):
            if q.group in clocks:
                np.maximum(clocks[q.group], stamp, out=clocks[q.group])
            else:
                clocks[q.group] = stamp.copy()
        self.m.pending_ops += 1
        for var, count in writes:
            self._reserve(op, var, count)
        if self.m.schedule == "in-order":
            self.m.complete_queue(q, lambda o: True)

    def _reserve(self, op: AsyncOp, var, count: int) -> None:
        """The destination registers of an asynchronous operation count as written by it at
        its issue: the warp's accesses before the wait that completes it are races in every
        schedule, however late the operation itself completes."""
        _, shadow = self._regs(var)
        idx = np.arange(count)
        rec = self.rec(op.what)
        self.m._check(shadow, idx, op.agent, op.vc, True, rec, "registers", var.name, _elements)
        shadow.record_write(idx, op.agent, int(op.vc[op.agent]), rec, True)
        op.writes.add(var)
        self.w.reg_waits[var] = QUEUE_WAITS[op.queue]

    def commit_group(self, queue: str) -> None:
        self._queue(queue).group += 1

    def wait_group(self, queue: str, n: int | None, reads_only: bool = False):
        """Complete and acquire all but the newest ``n`` committed groups (``reads_only``:
        ``cp.async.bulk.wait_group.read``, which acquires the groups' shared-memory reads
        but not a TMA store's global writes). wgmma groups belong to the warpgroup (its four
        warps issue one MMA together), so a warp's wait also waits for, and acquires, the
        same groups of the other three warps: a generator then."""
        if queue == "wgmma":
            return self._wait_warpgroup(n)
        self._acquire(self._queue(queue), n, self._queue(queue).group, reads_only)
        return None

    def _acquire(self, q: Queue, n: int | None, group: int, reads_only: bool = False) -> None:
        """Complete ``q``'s groups older than ``group - n`` (every operation for ``n=None``)
        and make them happen before this warp's next instruction (their reads only, with
        ``reads_only``)."""
        limit = group + 1 if n is None else group - n
        self.m.complete_queue(q, lambda op: op.group < limit)
        closed = min(limit, q.group)  # the open group may still grow: never folded in
        while q.cum_upto < closed:
            for clocks, cum in ((q.group_vc, q.cum_vc), (q.group_wvc, q.cum_wvc)):
                vc = clocks.pop(q.cum_upto, None)
                if vc is not None:
                    np.maximum(cum, vc, out=cum)
            q.cum_upto += 1
        clocks, cum = (q.group_vc, q.cum_vc) if reads_only else (q.group_wvc, q.cum_wvc)
        self.m.join(self.w.gid, cum)
        if limit > q.group and q.group in clocks:
            self.m.join(self.w.gid, clocks[q.group])

    def _wait_warpgroup(self, n: int | None) -> Generator[Wait, None, None]:
        w = self.w
        mine = self._queue("wgmma")
        group = mine.group
        first = w.index // 4 * 4
        peers = [p for p in w.cta.warps[first : first + 4] if p is not w]

        def issued() -> bool:
            return all(p.done or p.queues.get("wgmma", mine).group >= group for p in peers)

        if not issued():
            yield Wait(
                issued,
                f"wgmma.wait_group: the other warps of warpgroup {w.index // 4} have not "
                f"committed wgmma group {group} yet",
            )
        self._acquire(mine, n, group)
        for p in peers:
            q = p.queues.get("wgmma")
            if q is not None:
                self._acquire(q, n, group)

    # -- thread barriers -------------------------------------------------------------------------
    def shared_address(self, var) -> int:
        """Absolute shared-window address of a shared buffer's first byte."""
        return SMEM_BASE + (var.byte_offset or 0)

    def barrier(self, barrier_id: int, threads: int | None) -> Generator[Wait, None, None]:
        """``bar.sync id, threads`` (``__syncthreads``: id 0, every thread of the CTA)."""
        cta = self.w.cta
        everyone = threads is None or threads == len(cta.warps) * 32
        expected = None if everyone or threads is None else threads // 32
        if barrier_id not in cta.barriers:
            cta.barriers[barrier_id] = Barrier(self.m, cta.warps, expected)
        bar = cta.barriers[barrier_id]
        if not bar.arrived:  # a new generation: its first arrival gives the count
            bar.expected = expected
        elif bar.expected != expected:
            counts = [32 * w if w else 32 * len(cta.warps) for w in (expected, bar.expected)]
            self.hazard(
                "deadlock",
                f"bar.sync {barrier_id} with {counts[0]} threads, where this generation was "
                f"first reached with {counts[1]}: the barrier completes at a count some warps "
                "do not wait for, and they hang or pass early; give every bar.sync that meets "
                "at one barrier the same thread count (PTX ISA, 'barrier': operand b, the "
                "threads participating)",
            )
        gen = bar.arrive(self.w)
        if not bar.passed(gen):
            yield Wait(
                lambda: bar.passed(gen),
                lambda: (
                    f"bar.sync {barrier_id}: {len(bar.arrived)} of "
                    f"{bar.expected or len([w for w in bar.members if not w.done])} warps arrived"
                ),
            )
        self.m.join(self.w.gid, bar.released[gen])

    def cluster_arrive(self) -> None:
        bar = self.w.cta.cluster_barrier
        assert bar is not None
        self.w.cluster_gen = bar.arrive(self.w)

    def cluster_wait(self) -> Generator[Wait, None, None]:
        bar = self.w.cta.cluster_barrier
        assert bar is not None
        gen = self.w.cluster_gen
        if gen is None:
            self.hazard(
                "deadlock",
                "barrier.cluster.wait without a barrier.cluster.arrive before it; arrive first",
            )
            return
        self.w.cluster_gen = None
        if not bar.passed(gen):
            yield Wait(
                lambda: bar.passed(gen),
                lambda: (
                    f"barrier.cluster.wait: {len(bar.arrived)} of "
                    f"{len([w for w in bar.members if not w.done])} warps of the cluster arrived"
                ),
            )
        self.m.join(self.w.gid, bar.released[gen])

    # -- blocking, fences, reports ------------------------------------------------------------
    def until(self, ready: Callable[[], bool], what) -> Wait:
        return Wait(ready, what)

    def fence(self, kind: str) -> None:
        if kind == "proxy.async":
            gid = self.w.gid
            self.m.fence_clocks.setdefault(gid, []).append(int(self.m.vc[gid, gid]))
            self.m.tick(gid)

    def hazard(
        self, kind: str, message: str, *, space: str = "", buffer: str = "", where: str = ""
    ) -> None:
        self.m.report(kind, message, (self.rec(),), space=space, buffer=buffer, where=where)


class AsyncContext(Context):
    """An asynchronous operation completing: its accesses are the operation's own."""

    def __init__(self, machine: Machine, op: AsyncOp) -> None:
        super().__init__(machine, op.warp, None)
        self.op = op
        self.active = op.mask
        self.op_name = op.what

    @property
    def async_(self) -> bool:
        return True

    def actor(self) -> tuple:
        return self.op.agent, self.op.vc

    def write_actor(self) -> tuple:
        return self.op.agent, (self.op.vc if self.op.wvc is None else self.op.wvc)

    def phase(self) -> str | None:
        return self.op.phase

    def source(self) -> str:
        return self.op.source

    def value(self, i: int) -> np.ndarray:
        raise SimError(f"{self.op.what}: read operands at the issue, not at completion")

    # Registers reserved at the issue were checked and recorded there (a later operation of
    # the same queue may have reserved them since): only the data moves now.
    def regs_read(self, var) -> np.ndarray:
        if var not in self.op.writes:
            return super().regs_read(var)
        return self._regs(var)[0].copy()

    def regs_write(self, var, values, lanes=None) -> None:
        if var not in self.op.writes:
            super().regs_write(var, values, lanes)
            return
        regs = self._regs(var)[0]
        lanes = self.active if lanes is None else lanes
        values = np.asarray(values).reshape(regs.shape)
        regs[lanes] = values[lanes].astype(regs.dtype)


def _elements(idx) -> str:
    return f"elements {_range(idx)}"


def _cells(idx) -> str:
    idx = np.asarray(idx)
    lanes, cols = idx // TMEM_COLS, idx % TMEM_COLS
    return f"lanes {_range(lanes)} x columns {_range(cols)}"


def _range(v) -> str:
    v = np.asarray(v)
    if v.size == 0:
        return "-"
    lo, hi = int(v.min()), int(v.max())
    return f"{lo}" if lo == hi else f"{lo}..{hi}"
