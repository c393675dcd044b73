"""The simulated machine: CTAs of warps, memories with shadow state, barriers, mbarriers,
tensor memory and asynchronous queues, and the seeded scheduler that interleaves them.

Warps are generators (:mod:`.interp`); a blocking instruction yields a :class:`Wait`.
The scheduler resumes one runnable warp at a time and completes asynchronous operations
after their issue and before the wait that needs them: ``"in-order"`` runs the lowest
runnable warp and completes every operation at once, ``"random"`` picks warps and
completions at random, ``"adversarial"`` completes an operation only when no warp can
run (as late as the program allows). When nothing can run and nothing is pending, the
waiting warps deadlock: the run reports them and stops that wave of CTAs.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import numpy as np

from ..errors import SimError
from ..ir.nodes import DeclBuffer, statements
from .result import Access, Hazard
from .shadow import Shadow

# (the TMA loads' last: their agents never read shared memory, so a CTA's shared-memory read
# clocks stop before them, SMEMPool-sized tables being the simulator's largest)
QUEUES = ("wgmma", "bulk", "tcgen05", "tcgen05.ld", "tcgen05.st", "tma")
# Agents (forked threads of the vector clocks) a warp's queue's operations take in turn. The
# TMA loads a thread issues complete in no order among themselves (PTX ISA,
# "cp.async.bulk.tensor": only their mbarrier's completion orders them), so each of the last
# four has an agent of its own and two that write the same bytes race unless the warp
# acquired the first before issuing the second; the fifth reuses the first's agent and is
# taken as ordered after it (a bound on what is checked). The other queues share one agent
# each: the hardware orders wgmma into one accumulator and tcgen05 in issue order; the bulk
# (TMA) stores of one thread are unordered too but share one, since every agent that reads
# shared memory adds a read clock to each of its bytes (a known gap: two stores of one thread
# to the same global bytes are not reported).
QUEUE_SLOTS = {"tma": 4}
# the instruction that completes each queue's operations for the issuing warp
QUEUE_WAITS = {
    "wgmma": "wgmma.wait_group",
    "bulk": "cp.async.bulk.wait_group",
    "tma": "the mbarrier wait of its complete_tx",
    "tcgen05": "the mbarrier wait of its tcgen05.commit",
    "tcgen05.ld": "tcgen05.wait::ld",
    "tcgen05.st": "tcgen05.wait::st",
}
SMEM_BASE = 1024  # dynamic shared memory starts after the 1 KB the system reserves (sm_90+)
TMEM_LANES, TMEM_COLS = 128, 512
MAX_HAZARDS = 200
FIXES = {
    "race": "order them: wait on the mbarrier phase, barrier or wait_group that covers the "
    "first access before making the second",
    "proxy": "issue fence.proxy.async (T.ptx.fence.proxy_async_shared_cta) after the generic "
    "writes and before the barrier that hands the bytes to TMA / the tensor cores",
    "uninitialized": "write (or TMA-load) the bytes before reading them, and wait for the load",
    "out-of-bounds": "check the index arithmetic against the buffer's shape and the allocation",
    "lifetime": "move the access into a phase where the buffer is live, or give the buffer "
    "live= that phase",
}


class Wait:
    """A blocked warp's condition; ``what`` (a string or a function giving one) names it."""

    __slots__ = ("ready", "what")

    def __init__(self, ready: Callable[[], bool], what):
        self.ready, self.what = ready, what

    def describe(self) -> str:
        return self.what() if callable(self.what) else str(self.what)


@dataclass
class AsyncOp:
    complete: Callable
    vc: np.ndarray
    agent: int
    what: str
    warp: Warp
    queue: str
    group: int
    mask: np.ndarray
    phase: str | None
    source: str
    done: bool = False
    writes: set = field(default_factory=set)  # local arrays reserved at the issue
    wvc: np.ndarray | None = None  # a TMA store's global writes: the agent's next clock


def queue_agents(name: str) -> range:
    """Rows (in units of a CTA's warps, after the warps' own) of queue ``name``'s agents."""
    first = sum(QUEUE_SLOTS.get(q, 1) for q in QUEUES[: QUEUES.index(name)])
    return range(first, first + QUEUE_SLOTS.get(name, 1))


class Queue:
    """One warp's asynchronous queue: forked threads (agents, :data:`QUEUE_SLOTS` of them
    taken in turn, each with its clocks) and its groups of operations."""

    def __init__(self, agents: list[int], vcs: list[np.ndarray]):
        self.agents = agents
        self.vcs = vcs  # each agent's clocks (what its operations knew at their issue)
        self.issued = 0
        n = vcs[0].size
        self.pending: deque[AsyncOp] = deque()
        self.group = 0  # the open group's number
        self.group_vc: dict[int, np.ndarray] = {}  # group -> clocks of its operations
        # the same with the write parts of TMA stores (a full wait acquires these, .read not)
        self.group_wvc: dict[int, np.ndarray] = {}
        self.cum_vc = np.zeros(n, np.int32)  # clocks of every group before cum_upto
        self.cum_wvc = np.zeros(n, np.int32)
        self.cum_upto = 0


class Barrier:
    """A block / named / cluster barrier: warps arrive, the last one releases the generation."""

    def __init__(self, machine: Machine, members: list, expected: int | None = None):
        self.machine, self.members, self.expected = machine, members, expected
        self.gen = 0
        self.arrived: set = set()
        self.accum = np.zeros(machine.nthreads, np.int32)
        self.released: dict[int, np.ndarray] = {}

    def arrive(self, warp: Warp) -> int:
        m = self.machine
        np.maximum(self.accum, m.vc[warp.gid], out=self.accum)
        m.tick(warp.gid)
        self.arrived.add(warp)
        gen = self.gen
        self.settle()
        return gen

    def settle(self) -> None:
        if not self.arrived:
            return
        if self.expected is not None:
            done = len(self.arrived) >= self.expected
        else:
            done = all(w in self.arrived or w.done for w in self.members)
        if done:
            self.released[self.gen] = self.accum
            self.accum = np.zeros(self.machine.nthreads, np.int32)
            self.arrived = set()
            self.gen += 1

    def passed(self, gen: int) -> bool:
        self.settle()
        return self.gen > gen


class MBarrier:
    """An mbarrier object: expected arrivals, pending arrivals and tx bytes of the current
    phase; the happens-before released by each completed phase (PTX ISA 9.0, "mbarrier")."""

    def __init__(self, count: int, n: int):
        self.count = count
        self.pending = count
        self.tx = 0
        self.phase = 0
        self.accum = np.zeros(n, np.int32)
        self.completed: dict[int, np.ndarray] = {}  # parity -> released clocks

    def settle(self) -> None:
        if self.pending <= 0 and self.tx == 0:
            self.completed[self.phase % 2] = self.accum
            self.accum = np.zeros_like(self.accum)
            self.phase += 1
            self.pending = self.count

    def state(self) -> str:
        return (
            f"barrier in phase {self.phase} (parity {self.phase % 2}), {self.pending} of "
            f"{self.count} arrivals pending, tx-count {self.tx} bytes"
        )


class SM:
    """One simulated SM's tensor memory: 128 lanes x 512 columns, shared by its CTAs."""

    def __init__(self) -> None:
        self.data = np.zeros((TMEM_LANES, TMEM_COLS), np.uint32)
        self.shadow = Shadow(TMEM_LANES * TMEM_COLS)
        self.owner = np.full(TMEM_COLS, -1, np.int64)  # CTA index holding each column
        self.allocs: dict[int, tuple] = {}  # start column -> (ncols, cta, warp, alloc record)

    def free_start(self, ncols: int) -> int | None:
        for start in range(0, TMEM_COLS, ncols):
            if (self.owner[start : start + ncols] < 0).all():
                return start
        return None


class Warp:
    def __init__(self, cta: CTA, index: int, gid: int, threads: int, block: tuple):
        self.cta, self.index, self.gid = cta, index, gid
        tid = index * 32 + np.arange(32, dtype=np.int32)
        self.thread_ids = tid
        bx, by, _ = block
        self.tidx = (tid % bx, (tid // bx) % by, tid // (bx * by))
        self.mask = tid < threads
        self.env: dict[str, np.ndarray] = {}
        self.regs: dict = {}  # BufferVar -> (array (32, n), Shadow)
        self.phase: str | None = None
        self.stmt: object = None
        self.op = ""
        self.queues: dict[str, Queue] = {}
        self.gen: Generator = _never()
        self.wait: Wait | None = None
        self.done = False
        self.cache: dict[int, np.ndarray] = {}  # results of blocking calls inside expressions
        self.cluster_gen: int | None = None
        self.fences: list[int] = []  # own clock at each fence.proxy.async
        self.reg_waits: dict = {}  # local array -> the wait completing its pending write

    @property
    def name(self) -> str:
        return f"CTA {self.cta.block} warp {self.index}"


class CTA:
    def __init__(self, machine: Machine, linear: int, block: tuple, rank: int, sm: SM, slot: int):
        self.machine, self.linear, self.block, self.rank, self.sm = machine, linear, block, rank, sm
        k = machine.kernel
        self.smem_size = SMEM_BASE + k.dyn_smem_bytes
        self.smem = np.zeros(self.smem_size, np.uint8)
        self.first_gid = slot * machine.threads_per_cta
        self.smem_shadow = Shadow(
            self.smem_size, readers=machine.smem_readers, first_reader=self.first_gid
        )
        self.mbarriers: dict[int, MBarrier] = {}
        self.barriers: dict[int, Barrier] = {}
        self.warps: list[Warp] = []
        self.cluster: list[CTA] = [self]
        self.cluster_barrier: Barrier | None = None
        self.relinquished = False
        self.freed: list[tuple] = []  # (start, ncols) this CTA deallocated
        self.tmem_used = False
        self.alloc_rec = -1  # record of its last tcgen05.alloc (names it in exit reports)
        self.finished = False
        self.deadlocked = False


class Machine:
    """Everything of one simulated run but the interpreter (:mod:`.interp` drives warps)."""

    def __init__(self, kernel, *, grid, cluster, sms: int, seed: int, schedule: str):
        self.kernel = kernel
        self.grid, self.cluster_dims, self.sms = grid, cluster, sms
        self.rng = np.random.default_rng(seed)
        self.schedule = schedule
        self.warps_per_cta = math.ceil(math.prod(kernel.block) / 32)
        self.threads_per_cta = self.warps_per_cta * (1 + sum(map(len, map(queue_agents, QUEUES))))
        # threads that may read shared memory: the warps and every agent but the TMA loads'
        self.smem_readers = self.threads_per_cta - self.warps_per_cta * len(queue_agents("tma"))
        # CTAs run in waves of `sms` whole clusters; a wave's CTAs use thread slots 0.. again
        self.wave_ctas = sms * math.prod(cluster)
        self.nthreads = self.wave_ctas * self.threads_per_cta
        self.vc = np.zeros((self.nthreads, self.nthreads), np.int32)
        self.vc[np.arange(self.nthreads), np.arange(self.nthreads)] = 1
        self.hazards: list[Hazard] = []
        self.seen: set = set()
        self.records: list[tuple] = []
        self.instructions: Counter = Counter()
        self.globals: dict[int, tuple] = {}  # id(base array) -> (flat array, Shadow, name)
        self.fence_clocks: dict[int, list[int]] = {}  # gid -> clocks of fence.proxy.async
        # (id(flat global array), element) -> happens-before knowledge its atomics released
        self.atomic_clocks: dict[tuple[int, int], np.ndarray] = {}
        self.buffers = _shared_buffers(kernel)
        self.pending_ops = 0
        self.async_context: Callable = _unset  # the run sets the context class of completions

    # -- asynchronous operations ----------------------------------------------------------
    def complete_queue(self, q: Queue, cond: Callable[[AsyncOp], bool]) -> None:
        """Complete the queue's operations, oldest first, while ``cond`` holds."""
        while q.pending and cond(q.pending[0]):
            self.complete(q.pending[0], q)

    def complete(self, op: AsyncOp, q: Queue) -> None:
        q.pending.popleft()
        op.done = True
        self.pending_ops -= 1
        op.complete(self.async_context(self, op))

    # -- clocks ------------------------------------------------------------------------
    def new_wave(self) -> None:
        """Threads of the next wave reuse the slots: own clocks keep counting, knowledge of
        the others starts afresh (CTAs of different waves are not ordered)."""
        own = self.vc.diagonal().copy() + 1
        self.vc[:] = 0
        self.vc[np.arange(self.nthreads), np.arange(self.nthreads)] = own

    def agents(self, first_gid: int, warp: int, queue: str) -> list[int]:
        """The vector-clock threads of warp ``warp``'s queue ``queue`` in the CTA whose thread
        slots start at ``first_gid``: after the CTA's warps, one row of ``warps_per_cta``
        per agent (:func:`queue_agents`)."""
        rows = self.warps_per_cta
        return [first_gid + rows * (1 + r) + warp for r in queue_agents(queue)]

    def tick(self, gid: int) -> None:
        self.vc[gid, gid] += 1

    def join(self, gid: int, clocks: np.ndarray) -> None:
        np.maximum(self.vc[gid], clocks, out=self.vc[gid])

    # -- records and hazards -------------------------------------------------------------
    def record(self, op: str, warp: Warp, mask, phase, source) -> int:
        self.records.append((op, warp.cta.block, warp.index, mask, phase, source))
        return len(self.records) - 1

    def access(self, rec: int) -> Access:
        op, cta, warp, mask, phase, source = self.records[rec]
        return Access(op, cta, warp, lanes_text(mask), phase, source)

    def report(
        self,
        kind: str,
        message: str,
        recs: tuple = (),
        *,
        space: str = "",
        buffer: str = "",
        where: str = "",
        per_message: bool = False,
    ) -> None:
        """Record a hazard once per kind, buffer and instructions involved; reports without
        accesses (and ``per_message`` ones, such as each CTA's at exit) once per message."""
        accesses = tuple(self.access(r) for r in recs if r >= 0)
        key: tuple = (kind, space, buffer, tuple((a.op, a.source) for a in accesses))
        key += (message if per_message or not accesses else "",)
        if key in self.seen or len(self.hazards) >= MAX_HAZARDS:
            return
        self.seen.add(key)
        self.hazards.append(Hazard(kind, space, buffer, where, accesses, message))

    # -- global memory ----------------------------------------------------------------------
    def bind_global(self, array: np.ndarray, name: str) -> tuple:
        base = array if array.base is None else array.base
        key = id(base)
        if key not in self.globals:
            if not array.flags.c_contiguous:
                raise SimError(f"{name}: pass a C-contiguous (row-major) array")
            flat = array.reshape(-1)
            shadow = Shadow(flat.size)
            shadow.init[:] = True
            self.globals[key] = (flat, shadow, name)
        return self.globals[key]

    def global_access(self, mem: tuple, idx, actor, write: bool, rec: int, data=None):
        """Read (returns elements) or write ``data`` at flat element indices ``idx``."""
        flat, shadow, name = mem
        idx = np.asarray(idx, np.int64)
        bad = (idx < 0) | (idx >= flat.size)
        if bad.any():
            lo, hi = int(idx[bad].min()), int(idx[bad].max())
            self.report(
                "out-of-bounds",
                f"{'write' if write else 'read'} of elements {lo}..{hi} of global {name}, "
                f"which has {flat.size}; {FIXES['out-of-bounds']}",
                (rec,),
                space="global",
                buffer=name,
                where=f"elements {lo}..{hi}",
            )
            keep = ~bad
            idx = idx[keep]
            if data is not None:
                data = data[keep]
        gid, vc = actor
        self._check(shadow, idx, gid, vc, write, rec, "global", name, _elements)
        if write:
            flat[idx] = data
            shadow.record_write(idx, gid, int(vc[gid]), rec, False)
            return None
        shadow.record_read(idx, gid, int(vc[gid]), rec)
        out = np.zeros(bad.size, flat.dtype)
        out[~bad] = flat[idx]
        return out

    def _check(self, shadow, idx, gid, vc, write, rec, space, name, where) -> None:
        cells = "cells" if space == "tmem" else "bytes"
        conflicts = [
            (
                shadow.unordered_writes(idx, vc),
                shadow.wrec,
                f"{'write' if write else 'read'} of {space} {name} is not ordered after an "
                f"earlier write of the same {cells}",
            )
        ]
        if write:
            conflicts.append(
                (
                    shadow.unordered_reads(idx, vc),
                    shadow.rrec,
                    f"write of {space} {name} is not ordered after an earlier read of the same "
                    f"{cells} (the reader may still see the new data)",
                )
            )
        for unordered, records, what in conflicts:
            if unordered.any():
                first = idx[unordered]
                self.report(
                    "race",
                    f"{what}; {FIXES['race']}",
                    (rec, int(records[first[0]])),
                    space=space,
                    buffer=name,
                    where=where(first),
                )

    def check_registers(self, warp, var, shadow, idx, gid, vc, write, rec) -> None:
        """Races on a warp's local array; an access before the wait of the asynchronous
        operation still writing the registers (a tcgen05.ld or wgmma destination) names
        that operation and its wait."""
        unordered = shadow.unordered_writes(idx, vc)
        if not write and not unordered.any():  # the common case: a read after its wait
            return
        pending = shadow.wasync[idx] & unordered
        if pending.any():
            first = idx[pending]
            writer = int(shadow.wrec[first[0]])
            wait = warp.reg_waits.get(var, "the wait that completes it")
            lo, hi = _span(first)
            regs = f"{var.name}[{lo}]" if lo == hi else f"{var.name}[{lo}..{hi}]"
            verb = "write of" if write else "read of"
            self.report(
                "race",
                f"{verb} registers {regs} before the {self.records[writer][0]} that writes "
                f"them has completed (they hold unspecified values until {wait}); add {wait} "
                f"before {'writing' if write else 'reading'} {var.name}",
                (rec, writer),
                space="registers",
                buffer=var.name,
                where=_elements(first),
            )
        rest = idx[~pending]
        if rest.size:
            self._check(shadow, rest, gid, vc, write, rec, "registers", var.name, _elements)

    # -- shared memory ----------------------------------------------------------------
    def buffer_at(self, addr: int, phase: str | None) -> tuple | None:
        """The declared buffer holding shared address ``addr`` (one live in ``phase`` first)."""
        hits = [b for b in self.buffers if b[0] <= addr < b[1]]
        live = [b for b in hits if phase is None or b[3] is None or phase in b[3]]
        return (live or hits)[0] if hits else None

    def smem_access(self, cta: CTA, addrs, actor, write: bool, rec: int, data=None, **kw):
        """Bytes at absolute addresses ``addrs`` (shape (..., nbytes) after expansion)."""
        gid, vc = actor
        async_, phase = kw.get("async_", False), kw.get("phase")
        flat = np.asarray(addrs, np.int64).reshape(-1)
        if data is not None:
            data = np.asarray(data, np.uint8).reshape(-1)
        bad = (flat < SMEM_BASE) | (flat >= cta.smem_size)
        if bad.any():
            lo, hi = int(flat[bad].min()), int(flat[bad].max())
            self.report(
                "out-of-bounds",
                f"{'write' if write else 'read'} of shared bytes {lo:#x}..{hi:#x} outside the "
                f"CTA's {cta.smem_size - SMEM_BASE} bytes of dynamic shared memory (at "
                f"{SMEM_BASE:#x}); {FIXES['out-of-bounds']}",
                (rec,),
                space="shared",
                where=f"bytes {lo:#x}..{hi:#x}",
            )
        keep = ~bad
        idx = flat[keep]
        if idx.size:
            self._smem_checks(cta, idx, gid, vc, write, rec, async_, phase)
        if write and not async_ and idx.size:  # the lanes of one generic store
            nbytes = np.shape(addrs)[-1] if np.ndim(addrs) else 1
            rows = np.flatnonzero(keep) // nbytes
            lanes = kw.get("lanes")
            self._lane_conflict(
                idx, data[keep], rows if lanes is None else np.asarray(lanes)[rows], rec, phase
            )
        if write:
            cta.smem[idx] = data[keep]
            cta.smem_shadow.record_write(idx, gid, int(vc[gid]), rec, async_)
            return None
        cta.smem_shadow.record_read(idx, gid, int(vc[gid]), rec)
        out = np.zeros(flat.size, np.uint8)
        out[keep] = cta.smem[idx]
        return out.reshape(np.shape(addrs))

    def _lane_conflict(self, idx, data, lanes, rec, phase) -> None:
        """Two lanes of one store writing one shared byte with different values: the
        hardware keeps one, unspecified which (the PTX ISA memory consistency model orders
        no two threads' accesses of one instruction). The same value twice is harmless."""
        clash = write_conflict(idx, data)
        if clash is None:
            return
        i, j = clash
        name, where = self._smem_name(phase)(idx[[i]])
        op = self.records[rec][0]
        a, b = sorted((int(lanes[i]), int(lanes[j])))
        self.report(
            "race",
            f"lanes {a} and {b} of one {op} write {name or 'shared'} {where} with different values "
            f"({int(data[i]):#04x}, {int(data[j]):#04x}); the hardware keeps one of them, "
            "unspecified which: give each lane its own address, or write one value",
            (self.lane_record(rec, a), self.lane_record(rec, b)),
            space="shared",
            buffer=name,
            where=where,
        )

    def lane_record(self, rec: int, lane: int) -> int:
        """A copy of access record ``rec`` narrowed to one lane (one side of a lane clash)."""
        op, cta, warp, _, phase, source = self.records[rec]
        one = np.zeros(32, bool)
        one[lane] = True
        self.records.append((op, cta, warp, one, phase, source))
        return len(self.records) - 1

    def _smem_checks(self, cta, idx, gid, vc, write, rec, async_, phase) -> None:
        cover = self.cover if phase is None else self.live_cover(phase)
        outside = ~cover[idx]
        if outside.any():
            first = int(idx[outside][0])
            buf = self.buffer_at(first, None)
            if buf is None:
                self.report(
                    "out-of-bounds",
                    f"shared byte {first:#x} lies outside every buffer of the kernel's pools; "
                    f"{FIXES['out-of-bounds']}",
                    (rec,),
                    space="shared",
                    where=f"bytes {first:#x}",
                )
            else:
                lo, hi = _span(idx[outside])
                self.report(
                    "lifetime",
                    f"access in phase {phase!r} to {buf[2]}, live only in "
                    f"{list(buf[3] or ())}; {FIXES['lifetime']}",
                    (rec,),
                    space="shared",
                    buffer=buf[2],
                    where=f"bytes {lo - buf[0]}..{hi - buf[0]}",
                )
        shadow = cta.smem_shadow
        name_of = self._smem_name(phase)
        if not write:
            uninit = ~shadow.init[idx]
            if uninit.any():
                first = idx[uninit]
                name, where = name_of(first)
                self.report(
                    "uninitialized",
                    f"read of {name} bytes nothing wrote; {FIXES['uninitialized']}",
                    (rec,),
                    space="shared",
                    buffer=name,
                    where=where,
                )
        if async_:
            self._proxy_check(shadow, idx, vc, rec, name_of)
        ww = shadow.unordered_writes(idx, vc)
        rw = shadow.unordered_reads(idx, vc) if write else np.zeros(idx.size, bool)
        for mask, what, recs in ((ww, "write", shadow.wrec), (rw, "read", shadow.rrec)):
            if mask.any():
                first = idx[mask]
                name, where = name_of(first)
                self.report(
                    "race",
                    f"{'write' if write else 'read'} of shared {name} is not ordered after an "
                    f"earlier {what} of the same bytes; {FIXES['race']}",
                    (rec, int(recs[first[0]])),
                    space="shared",
                    buffer=name,
                    where=where,
                )

    def _proxy_check(self, shadow, idx, vc, rec, name_of) -> None:
        """An async-proxy access to bytes last written by the generic proxy needs the
        writer's fence.proxy.async between its write and the synchronisation."""
        generic = (shadow.wt[idx] >= 0) & ~shadow.wasync[idx]
        if not generic.any():
            return
        sel = idx[generic]
        bad = np.zeros(sel.size, bool)
        for t in np.unique(shadow.wt[sel]):
            mine = shadow.wt[sel] == t
            fences = np.asarray(self.fence_clocks.get(int(t), []), np.int32)
            clocks = shadow.wc[sel[mine]]
            k = np.searchsorted(fences, clocks)
            ok = k < fences.size
            ok[ok] = fences[k[ok]] <= vc[t]
            bad[np.flatnonzero(mine)[~ok]] = True
        if bad.any():
            first = sel[bad]
            name, where = name_of(first)
            self.report(
                "proxy",
                f"an asynchronous-proxy access (TMA / tensor core) to shared {name} that the "
                f"generic proxy wrote, with no fence.proxy.async by the writer in between; "
                f"{FIXES['proxy']}",
                (rec, int(shadow.wrec[first[0]])),
                space="shared",
                buffer=name,
                where=where,
            )

    def _smem_name(self, phase):
        def name_of(addrs):
            lo, hi = _span(addrs)
            buf = self.buffer_at(lo, phase)
            if buf is None:
                return "", f"bytes {lo:#x}..{hi:#x}"
            return buf[2], f"bytes {lo - buf[0]}..{hi - buf[0]} (shared {lo:#x}..{hi:#x})"

        return name_of

    @property
    def cover(self) -> np.ndarray:
        if not hasattr(self, "_cover"):
            self._cover = self._coverage(None)
        return self._cover

    def live_cover(self, phase: str) -> np.ndarray:
        if not hasattr(self, "_live"):
            self._live: dict[str, np.ndarray] = {}
        if phase not in self._live:
            self._live[phase] = self._coverage(phase)
        return self._live[phase]

    def _coverage(self, phase: str | None) -> np.ndarray:
        out = np.zeros(SMEM_BASE + self.kernel.dyn_smem_bytes, bool)
        for lo, hi, _, live in self.buffers:
            if phase is None or live is None or phase in live:
                out[lo:hi] = True
        return out


def write_conflict(units: np.ndarray, data: np.ndarray) -> tuple[int, int] | None:
    """Positions ``(i, j)`` of two writes of one instruction to the same unit with different
    data, or None. After a stable sort by unit, equal units are adjacent and a unit holds
    two values iff some adjacent pair of its writes differs."""
    order = np.argsort(units, kind="stable")
    u, d = units[order], data[order]
    clash = (u[1:] == u[:-1]) & (d[1:] != d[:-1])
    if not clash.any():
        return None
    k = int(np.argmax(clash))
    return int(order[k]), int(order[k + 1])


def _never() -> Generator:
    raise SimError("a warp runs only once the run gives it its interpreter")
    yield


def _unset(machine, op):
    raise SimError("the machine completes operations only inside a run")


def _shared_buffers(kernel) -> list[tuple]:
    """(first byte, end, name, live phases) of every shared buffer the kernel declares."""
    out = []
    for s in statements(kernel.body):
        if isinstance(s, DeclBuffer) and s.buffer.scope != "local":
            b = s.buffer
            size = b.nbytes if b.nbytes is not None else math.prod(b.shape) * b.dtype.bits // 8
            lo = SMEM_BASE + (b.byte_offset or 0)
            out.append((lo, lo + size, b.name, b.live))
    return out


def _elements(idx: np.ndarray) -> str:
    lo, hi = _span(idx)
    return f"elements {lo}..{hi}"


def _span(addrs: np.ndarray) -> tuple[int, int]:
    return int(np.min(addrs)), int(np.max(addrs))


def lanes_text(mask) -> str:
    if mask is None:
        return "-"
    lanes = np.flatnonzero(mask)
    if lanes.size == 0:
        return "none"
    runs, start = [], lanes[0]
    for a, b in zip(lanes, [*lanes[1:], None]):
        if b is None or b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ",".join(runs)
