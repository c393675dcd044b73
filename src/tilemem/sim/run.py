"""``run(kernel, *args, ...)``: bind the arguments, build the CTAs, schedule their warps."""

from __future__ import annotations

import math

import numpy as np

from ..errors import SimError
from ..ir.nodes import Kernel, Var
from ..validate import check_int
from .context import AsyncContext
from .interp import Runner
from .machine import CTA, SM, Barrier, Machine, Warp
from .result import SimResult
from .values import LANES, Compiler, numpy_type

SCHEDULES = ("random", "in-order", "adversarial")
MAX_STEPS = 20_000_000  # scheduler steps before a run is declared stuck (a livelock)


def run(
    kernel,
    *args,
    grid=None,
    cluster=None,
    sms: int = 1,
    seed: int = 0,
    schedule: str = "random",
) -> SimResult:
    """Execute ``kernel`` (a ``@T.kernel`` program) on the CPU and report its hazards.

    ``args`` as for a launch: numpy arrays for ``T.Buffer`` parameters (written in place),
    Python ints for scalars, ``tilemem.cuda.tma.tile_map(array, buffer)`` maps for
    ``T.TensorMap`` parameters. ``grid`` / ``cluster`` default to the kernel's; ``sms``
    clusters of CTAs run at a time, the CTAs of one cluster rank co-resident on one
    simulated SM (sharing its 512 TMEM columns). ``schedule``: "random", "in-order" or
    "adversarial"; the same ``seed`` gives the same result.
    """
    ir: Kernel = getattr(kernel, "ir", kernel)
    if not isinstance(ir, Kernel):
        raise SimError(f"run() takes a @T.kernel program, got {type(kernel).__name__}")
    if schedule not in SCHEDULES:
        raise SimError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    sms = check_int(sms, "sms", minimum=1, maximum=64, error=SimError)
    seed = check_int(seed, "seed", minimum=0, error=SimError)
    grid = _dims(grid if grid is not None else ir.grid, "grid")
    cluster = _dims(cluster if cluster is not None else (ir.cluster or 1), "cluster")
    if any(g % c for g, c in zip(grid, cluster)):
        raise SimError(f"grid {grid} is not a whole number of clusters {cluster}")
    machine = Machine(ir, grid=grid, cluster=cluster, sms=sms, seed=seed, schedule=schedule)
    machine.async_context = AsyncContext
    bindings, env = _bind(ir, args, machine)
    compiler = Compiler()
    clusters = _clusters(grid, cluster)
    with np.errstate(all="ignore"):  # integer arithmetic wraps as in C
        for w in range(0, len(clusters), sms):
            _run_wave(machine, clusters[w : w + sms], cluster, bindings, env, compiler)
    return SimResult(tuple(machine.hazards), machine.instructions)


def _dims(value, what: str) -> tuple:
    value = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(value) <= 3 or any(not isinstance(v, int) or v < 1 for v in value):
        raise SimError(f"{what} must be 1 to 3 positive integers, got {value!r}")
    return value + (1,) * (3 - len(value))


def _bind(ir: Kernel, args: tuple, machine: Machine) -> tuple[dict, dict]:
    """Kernel parameters -> bound arguments; symbolic dimensions come from array shapes."""
    symbols = {
        d.name for p in ir.params if p.kind == "buffer" for d in p.value.shape if isinstance(d, Var)
    }
    positional = [p for p in ir.params if not (p.kind == "scalar" and p.name in symbols)]
    if len(args) != len(positional):
        names = ", ".join(p.name for p in positional)
        raise SimError(f"{ir.name} takes {len(positional)} arguments ({names}), got {len(args)}")
    bindings: dict = {}
    values: dict[str, object] = {}
    for p, arg in zip(positional, args):
        if p.kind == "buffer":
            if not isinstance(arg, np.ndarray):
                raise SimError(f"{p.name}: pass a numpy array, got {type(arg).__name__}")
            shape = p.value.shape
            if arg.ndim != len(shape):
                raise SimError(f"{p.name}: expected {len(shape)} dimensions, got shape {arg.shape}")
            for d, n in zip(shape, arg.shape):
                if isinstance(d, Var):
                    if values.setdefault(d.name, n) != n:
                        raise SimError(
                            f"{p.name}: dimension {d.name} is {values[d.name]} elsewhere, {n} here"
                        )
                elif d != n:
                    raise SimError(f"{p.name}: expected shape {shape}, got {arg.shape}")
            if arg.dtype.itemsize * 8 != p.value.dtype.bits:
                raise SimError(
                    f"{p.name}: a {p.value.dtype.name} buffer needs {p.value.dtype.bits}-bit "
                    f"elements, got {arg.dtype}"
                )
            bindings[p.value] = machine.bind_global(arg, p.name)
        elif p.kind == "scalar":
            if isinstance(arg, bool) or not isinstance(arg, (int, float, np.integer, np.floating)):
                raise SimError(f"{p.name}: pass a number, got {arg!r}")
            values[p.name] = arg
        else:
            plan, array = getattr(arg, "plan", None), getattr(arg, "array", None)
            if plan is None or not isinstance(array, np.ndarray):
                raise SimError(
                    f"{p.name}: pass tilemem.cuda.tma.tile_map(numpy_array, buffer) (a host "
                    f"tensor map), got {type(arg).__name__}"
                )
            machine.bind_global(array, p.name)
            bindings[p.value] = arg
    env: dict[str, np.ndarray] = {}
    for p in ir.params:
        if p.kind == "scalar":
            env[p.name] = np.full(LANES, values[p.name], numpy_type(p.value.dtype))
    return bindings, env


def _clusters(grid: tuple, cluster: tuple) -> list[list[tuple]]:
    """Clusters in launch order, each its CTAs' blockIdx in rank order (x fastest)."""
    out = []
    cx, cy, cz = cluster
    for gz in range(0, grid[2], cz):
        for gy in range(0, grid[1], cy):
            for gx in range(0, grid[0], cx):
                out.append(
                    [
                        (gx + x, gy + y, gz + z)
                        for z in range(cz)
                        for y in range(cy)
                        for x in range(cx)
                    ]
                )
    return out


def _run_wave(machine: Machine, clusters, cluster, bindings, env, compiler) -> None:
    machine.new_wave()
    grid = machine.grid
    size = math.prod(cluster)
    sms = [SM() for _ in range(size)]
    ctas: list[CTA] = []
    warps: list[Warp] = []
    threads = math.prod(machine.kernel.block)
    for members in clusters:
        group = []
        for rank, block in enumerate(members):
            linear = block[0] + grid[0] * (block[1] + grid[1] * block[2])
            cta = CTA(machine, linear, block, rank, sms[rank], len(ctas))
            for i in range(machine.warps_per_cta):
                warp = Warp(cta, i, cta.first_gid + i, threads, machine.kernel.block)
                warp.env.update(env)
                cta.warps.append(warp)
            cta.barriers[0] = Barrier(machine, cta.warps)
            group.append(cta)
            ctas.append(cta)
        members_warps = [w for c in group for w in c.warps]
        barrier = Barrier(machine, members_warps)
        for cta in group:
            cta.cluster = group
            cta.cluster_barrier = barrier
            for warp in cta.warps:
                warp.gen = Runner(machine, warp, compiler, bindings).run()
                warps.append(warp)
    _schedule(machine, warps, ctas)


def _schedule(machine: Machine, warps: list[Warp], ctas: list[CTA]) -> None:
    rng = machine.rng
    mode = machine.schedule
    current: Warp | None = None
    for _ in range(MAX_STEPS):
        live = [w for w in warps if not w.done]
        if not live:
            break
        runnable = [w for w in live if w.wait is None or w.wait.ready()]
        heads = [(q, w) for w in warps for q in w.queues.values() if q.pending]
        if heads and (mode == "in-order" or (mode == "random" and rng.random() < 0.5)):
            q, w = heads[int(rng.integers(len(heads)))]
            machine.complete(q.pending[0], q)
            continue
        if not runnable:
            if heads:  # adversarial: only now, the oldest operation of some warp
                q, w = heads[int(rng.integers(len(heads)))]
                machine.complete(q.pending[0], q)
                continue
            _deadlock(machine, live)
            for w in live:
                w.done = True
                w.cta.deadlocked = True
            break
        if mode == "in-order":
            w = current if current in runnable else runnable[0]
        else:
            w = runnable[int(rng.integers(len(runnable)))]
        current = w
        w.wait = None
        try:
            w.wait = w.gen.send(None)
        except StopIteration:
            w.done = True
            cta = w.cta
            if all(x.done for x in cta.warps):
                _cta_exit(machine, cta)
    else:
        raise SimError(
            f"{machine.kernel.name}: no end after {MAX_STEPS} scheduler steps (a warp spins "
            "without blocking?)"
        )
    for cta in ctas:
        if not cta.finished:
            _cta_exit(machine, cta)


def _deadlock(machine: Machine, live: list[Warp]) -> None:
    lines = []
    kind = "deadlock"
    recs = []
    for w in live:
        what = w.wait.describe() if w.wait is not None else "?"
        if "arrivals pending" in what and " 0 of " in what and "tx-count 0 " not in what:
            kind = "mbarrier"  # every arrival came, but the transaction bytes never balance
        lines.append(f"{w.name} waits: {what}")
        recs.append(
            machine.record(
                what.split(":")[0], w, w.mask, w.phase, machine.kernel.locations.get(w.stmt, "?")
            )
        )
    fix = (
        "the expected transaction bytes (expect_tx) differ from the bytes the copies deliver: "
        "count every box of every load"
        if kind == "mbarrier"
        else "every waiting warp waits for another: check barrier counts, wait parities and "
        "that each arrive / commit a wait needs is issued"
    )
    machine.report(
        kind,
        "no warp can make progress; " + "; ".join(lines) + f". Usual fix: {fix}",
        tuple(recs),
        space="mbarrier" if kind == "mbarrier" else "",
    )


def _cta_exit(machine: Machine, cta: CTA) -> None:
    """Complete the CTA's outstanding operations; report what it left behind."""
    cta.finished = True
    for w in cta.warps:
        for q in w.queues.values():
            machine.complete_queue(q, lambda op: True)
    if cta.deadlocked:
        return
    sm = cta.sm
    for start, (n, owner, warp, rec) in list(sm.allocs.items()):
        if owner is cta:
            machine.report(
                "tmem-protocol",
                f"CTA {cta.block} exited holding TMEM columns {start}..{start + n - 1} (allocated "
                f"by warp {warp} at {machine.access(rec).source}); tcgen05.dealloc them (the "
                "allocating warp, after the last access) before the kernel ends",
                (rec,),
                space="tmem",
                where=f"columns {start}..{start + n - 1}",
                per_message=True,
            )
            sm.owner[start : start + n] = -1
            del sm.allocs[start]
    if cta.tmem_used and not cta.relinquished:
        machine.report(
            "tmem-protocol",
            f"CTA {cta.block} allocated TMEM but never issued tcgen05.relinquish_alloc_permit; "
            "relinquish once its allocations are done so co-resident CTAs can allocate",
            (cta.alloc_rec,),
            space="tmem",
        )
    for addr, mb in cta.mbarriers.items():
        if (0 < mb.pending < mb.count) or mb.tx:
            buf = machine.buffer_at(addr, None)
            name = f"{buf[2]}[{(addr - buf[0]) // 8}]" if buf else f"{addr:#x}"
            machine.report(
                "mbarrier",
                f"CTA {cta.block} exited with mbarrier {name} unbalanced: {mb.state()}; every "
                "arrival and transaction byte a phase expects must come",
                space="mbarrier",
                buffer=name,
            )
