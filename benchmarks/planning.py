"""Planning at compiler speed: tilemem against TIRx's bump pools, and the packer's proofs.

    python3 benchmarks/planning.py                       # everything (several minutes)
    python3 benchmarks/planning.py --instances 1000      # fewer random packer instances

Three parts, all CPU time of this process (``time.process_time``: the machine may be
shared, and wall time would count the other work too):

1. *Planning.* A realistic Blackwell block-scaled GEMM plan: 31 SMEM buffers (per stage
   A and B fp8 tiles with 128-byte swizzle, their scale factors, full/empty barriers; two
   bf16 C staging tiles; accumulator barriers; the TMEM address slot) and 9 TMEM buffers
   (two accumulators, scale factors, three epilogue scratch tiles), committed and turned
   into ``plan()``, with phases (the lifetime packer) and without. TIRx (apache-tvm-tirx)
   is driven through its IRBuilder: ``SMEMPool.alloc`` / ``alloc_tcgen05_mma_AB`` for the
   same SMEM buffers (TIRx's pool has no TMEM and no lifetimes), then ``commit()``. Each
   round times a batch of each side back to back, the sides alternating first; the ratio
   is taken per round and the median and spread over rounds are printed. Larger plans
   (more pipeline stages, no target so no capacity limit) show how the cost grows.
2. *Layout evaluation.* ``apply(flat)`` per call on a 128 x 64 bf16 tile with 128-byte
   swizzle and on the TMEM data-path D layout of a 128 x 256 fp32 accumulator, against
   TIRx's C++ ``Layout.apply`` on the same layouts; ``positions()`` per element.
3. *The packer.* Random instances of the families below, up to 24 buffers: the share proven
   optimal (``Packing.exact``), the slowest, the slowest proven and those not proven; then
   64-buffer instances, an adversarial clique structure (many maximal cliques) and 50,000
   phases, each timed.

Nothing here asserts: it prints what it measured.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable

from tilemem.layout import mma_shared_layout, tmem_datapath_layout
from tilemem.plan.lifetimes import Item, pack
from tilemem.pool import SMEMPool, TMEMPool

PHASES = ("mainloop", "epilogue")
FAMILIES = ("any live sets", "interval lifetimes", "6 phases", "8 phases", "distinct sizes")


# -- 1. planning -------------------------------------------------------------------------


def smem_buffers(stages: int) -> list[tuple[str, str, tuple[int, ...], str, int, bool]]:
    """(kind, name, shape, dtype, align, mainloop only) of every SMEM buffer, in order."""
    out: list[tuple[str, str, tuple[int, ...], str, int, bool]] = []
    for s in range(stages):
        out.append(("mma", f"A{s}", (128, 128), "float8_e4m3fn", 1024, True))
        out.append(("mma", f"B{s}", (128, 128), "float8_e4m3fn", 1024, True))
        out.append(("plain", f"SFA{s}", (128, 4), "uint8", 128, True))
        out.append(("plain", f"SFB{s}", (128, 4), "uint8", 128, True))
    out += [("mma", f"C{i}", (128, 64), "bfloat16", 1024, False) for i in range(2)]
    for s in range(stages):
        out.append(("plain", f"full_bar{s}", (1,), "uint64", 8, False))
        out.append(("plain", f"empty_bar{s}", (1,), "uint64", 8, False))
    for i in range(2):
        out.append(("plain", f"acc_full_bar{i}", (1,), "uint64", 8, False))
        out.append(("plain", f"acc_empty_bar{i}", (1,), "uint64", 8, False))
    return out


def tilemem_plan(stages: int, phases: bool, tmem: bool = True, target: str | None = "sm_100a"):
    """The plan through tilemem's pools; the TMEM pool adds its address slot to SMEM."""
    smem = SMEMPool(name="smem", target=target, phases=PHASES if phases else None)
    for kind, name, shape, dtype, align, mainloop in smem_buffers(stages):
        live = "mainloop" if phases and mainloop else None
        if kind == "mma":
            smem.alloc_mma(shape, dtype, "128B", align, name=name, live=live)
        else:
            smem.alloc(shape, dtype, align=align, name=name, live=live)
    if tmem:
        pool = TMEMPool(smem, 512, cta_group=1, alloc_warp=1, name="tmem",
                        phases=PHASES if phases else None)  # fmt: skip
        main, epi = ("mainloop", "epilogue") if phases else (None, None)
        for i in range(2):
            pool.alloc((128, 128), "float32", datapath="D", name=f"acc{i}")
        for i in range(2):
            pool.alloc_sf((1, 128, 4), "float8_e4m3fn", sf_per_mma=4, name=f"SFAt{i}", live=main)
            pool.alloc_sf((1, 128, 4), "float8_e4m3fn", sf_per_mma=4, name=f"SFBt{i}", live=main)
        for i in range(3):
            pool.alloc((128, 16), "float32", datapath="D", name=f"scratch{i}", live=epi)
    else:
        smem.alloc((1,), "uint32", align=4, name="tmem_addr")
    smem.commit()
    if tmem:
        pool.commit()
    return smem.plan()


def tirx_plan(stages: int) -> int:
    """The same SMEM buffers through TIRx's bump pool inside an IRBuilder kernel."""
    from tvm_tirx.backend.cuda.lang import SMEMPool as TirxPool
    from tvm_tirx.script.ir_builder import IRBuilder
    from tvm_tirx.tirx.script.ir_builder import parser_protocol as proto

    with IRBuilder(), proto.function_():
        proto.func_name_("gemm")
        with proto.device_entry():
            pool = TirxPool()
            for kind, _, shape, dtype, align, _ in smem_buffers(stages):
                if kind == "mma":
                    pool.alloc_tcgen05_mma_AB(list(shape), dtype)
                else:
                    pool.alloc(list(shape), dtype, align=align)
            pool.alloc([1], "uint32", align=4)  # the TMEM address slot
            pool.commit()
    return pool.max_offset


def cpu_time(fn: Callable[[], object], repeat: int) -> float:
    """Seconds of CPU time per call, over ``repeat`` calls."""
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat


def paired(ours: Callable[[], object], theirs: Callable[[], object], rounds: int, repeat: int):
    """Per round: both sides timed back to back, the first side alternating. Returns the
    per-call times of each side and the per-round ratios."""
    mine, other, ratios = [], [], []
    ours(), theirs()  # warm caches and imports
    for k in range(rounds):
        if k % 2:
            b = cpu_time(theirs, repeat)
            a = cpu_time(ours, repeat)
        else:
            a = cpu_time(ours, repeat)
            b = cpu_time(theirs, repeat)
        mine.append(a)
        other.append(b)
        ratios.append(a / b)
    return mine, other, ratios


def spread(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return f"{q[0]:.3f}-{q[2]:.3f}"


def planning_rows(rounds: int) -> list[str]:
    rows = [
        "| what | buffers | tilemem | TIRx | tilemem / TIRx (median) | quartiles of the ratio |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)  # the header
    cases = [
        ("40-buffer kernel with phases (31 SMEM + 9 TMEM)", 4, True, True, "sm_100a", 40),
        ("40-buffer kernel without phases", 4, False, True, "sm_100a", 40),
        ("its 31 SMEM buffers only, without phases", 4, False, False, "sm_100a", 31),
        ("80 buffers with phases (11 stages, no target)", 11, True, True, None, 82),
        ("200 buffers with phases (31 stages, no target)", 31, True, True, None, 202),
        ("200 buffers without phases (31 stages, no target)", 31, False, True, None, 202),
    ]
    for title, stages, phases, tmem, target, count in cases:
        repeat = max(2, 40 // stages)
        mine, other, ratios = paired(
            functools.partial(tilemem_plan, stages, phases, tmem, target),
            functools.partial(tirx_plan, stages),
            rounds,
            repeat,
        )
        rows.append(
            f"| {title} | {count} | {statistics.median(mine) * 1e3:.3f} ms "
            f"| {statistics.median(other) * 1e3:.3f} ms | **{statistics.median(ratios):.3f}** "
            f"| {spread(ratios)} |"
        )
        print(rows[-1], flush=True)
    return rows


# -- 2. layouts --------------------------------------------------------------------------


def layout_rows(rounds: int) -> list[str]:
    import tvm_tirx.backend.cuda.layout as tirx

    rows = [
        "| layout | tilemem apply | TIRx apply (C++) | ratio (median) | quartiles "
        "| positions() per element |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)  # the header
    cases = [
        ("128x64 bf16, 128B swizzle", mma_shared_layout("bfloat16", 3, (128, 64)),
         tirx.mma_shared_layout("bfloat16", 3, [128, 64])),
        ("TMEM data path D, 128x256 fp32", tmem_datapath_layout("D", 128, 256, 0),
         tirx.tmem_datapath_layout("D", 128, 256, 0)),
    ]  # fmt: skip
    for title, ours, theirs in cases:
        size = ours.size()
        flats = [(i * 7919) % size for i in range(2000)]

        def run(layout, flats=flats):
            apply = layout.apply
            for x in flats:
                apply(x)

        mine, other, ratios = paired(
            functools.partial(run, ours), functools.partial(run, theirs), rounds, 1
        )
        per_element = [cpu_time(ours.positions, 10) / size for _ in range(rounds)]
        rows.append(
            f"| {title} | {statistics.median(mine) / len(flats) * 1e6:.2f} us "
            f"| {statistics.median(other) / len(flats) * 1e6:.2f} us "
            f"| **{statistics.median(ratios):.3f}** | {spread(ratios)} "
            f"| {statistics.median(per_element) * 1e9:.2f} ns |"
        )
        print(rows[-1], flush=True)
    return rows


# -- 3. the packer -----------------------------------------------------------------------


def random_items(rng: random.Random, family: str, buffers: int):
    """A kernel-like instance: tiles (256-1024-byte aligned, sizes multiples of their
    alignment), barrier groups and small arrays, over 2-4 phases (6 or 8 for those
    families). Live sets: any phases; a run of consecutive phases (interval lifetimes);
    one buffer in five is live throughout. ``distinct sizes``: no two tiles of one size."""
    count = {"6 phases": 6, "8 phases": 8}.get(family, rng.randint(2, 4))
    phases = tuple(f"p{i}" for i in range(count))
    items, used = [], set()
    for n in range(buffers):
        kind = rng.random()
        if kind < 0.6:
            align = rng.choice((256, 512, 1024))
            size = align * rng.randint(1, 64)
            while family == "distinct sizes" and size in used:
                size = align * rng.randint(1, 64)
            used.add(size)
        elif kind < 0.8:
            align, size = 8, 8 * rng.randint(1, 8)
        else:
            align = rng.choice((16, 128))
            size = align * rng.randint(1, 32)
        if family == "interval lifetimes":
            first = rng.randrange(count)
            live = phases[first : rng.randrange(first, count) + 1]
        else:
            live = tuple(rng.sample(phases, rng.randint(1, count)))
        items.append(Item(f"b{n}", size, align, None if rng.random() < 0.2 else frozenset(live)))
    return items, phases


def timed_pack(items, phases):
    start = time.process_time()
    packing = pack(items, phases)
    return packing, time.process_time() - start


def packer_rows(instances: int, large: int) -> list[str]:
    rng = random.Random(2029)
    rows = [
        "| family | instances | proven optimal | proven within 100 ms | slowest | median "
        "| most nodes |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)  # the header
    per_family = max(1, instances // len(FAMILIES))
    slowest_all = slowest_proven = (0.0, "")
    unproven = []
    for family in FAMILIES:
        times, proven, quick, nodes = [], 0, 0, 0
        for k in range(per_family):
            items, phases = random_items(rng, family, rng.randint(4, 24))
            packing, seconds = timed_pack(items, phases)
            times.append(seconds)
            proven += packing.exact
            quick += packing.exact and seconds <= 0.1
            nodes = max(nodes, packing.nodes)
            label = f"{family} #{k}, {len(items)} buffers"
            if seconds > slowest_all[0]:
                slowest_all = (seconds, label)
            if packing.exact and seconds > slowest_proven[0]:
                slowest_proven = (seconds, label)
            if not packing.exact:
                unproven.append(f"{label}, {packing.nodes} nodes")
        rows.append(
            f"| {family} | {per_family} | {proven} ({100 * proven / per_family:.2f}%) "
            f"| {quick} ({100 * quick / per_family:.2f}%) | {max(times) * 1e3:.1f} ms "
            f"| {statistics.median(times) * 1e3:.2f} ms | {nodes} |"
        )
        print(rows[-1], flush=True)
    rows.append(f"slowest of all: {slowest_all[0] * 1e3:.1f} ms ({slowest_all[1]})")
    rows.append(f"slowest proven: {slowest_proven[0] * 1e3:.1f} ms ({slowest_proven[1]})")
    rows.append(f"not proven: {len(unproven)} ({'; '.join(unproven) or 'none'})")
    print("\n".join(rows[-3:]), flush=True)
    times, proven = [], 0
    for _ in range(large):
        items, phases = random_items(rng, rng.choice(FAMILIES), 64)
        packing, seconds = timed_pack(items, phases)
        times.append(seconds)
        proven += packing.exact
    if large:
        rows.append(
            f"64 buffers: {large} instances, {proven} proven optimal, "
            f"{sum(t <= 1.0 for t in times)} returned within 1 s, slowest "
            f"{max(times) * 1e3:.1f} ms, median {statistics.median(times) * 1e3:.2f} ms"
        )
    rows.append(adversarial_row())
    rows.append(many_phases_row())
    for row in rows[-3:]:
        print(row, flush=True)
    return rows


def adversarial_row() -> str:
    """42 buffers in 14 triples; two buffers conflict unless they share a triple (each is
    live in the phases of the other triples' pairs it meets), so every choice of one buffer
    per triple is a maximal clique: 3^14 = 4,782,969 of them (Moon-Moser)."""
    triples = 14
    phase_of: dict[tuple[tuple[int, int], tuple[int, int]], str] = {}
    buffers = [(t, k) for t in range(triples) for k in range(3)]
    for i, a in enumerate(buffers):
        for b in buffers[i + 1 :]:
            if a[0] != b[0]:
                phase_of[a, b] = f"x{len(phase_of)}"
    live: dict[tuple[int, int], set[str]] = {b: set() for b in buffers}
    for (a, b), phase in phase_of.items():
        live[a].add(phase)
        live[b].add(phase)
    items = [Item(f"t{t}_{k}", 1024 * (k + 1), 1024, frozenset(live[t, k])) for t, k in buffers]
    packing, seconds = timed_pack(items, tuple(phase_of.values()))
    return (
        f"adversarial cliques (42 buffers, 3^14 maximal cliques, {len(phase_of)} phases): "
        f"{seconds * 1e3:.0f} ms, exact={packing.exact}, nodes={packing.nodes}"
    )


def many_phases_row() -> str:
    phases = tuple(f"p{i}" for i in range(50_000))
    items = [Item(f"b{i}", 1024 * (1 + i % 5), 1024, frozenset(phases[i * 4000 :]))
             for i in range(12)]  # fmt: skip
    packing, seconds = timed_pack(items, phases)
    return f"50,000 phases, 12 buffers: {seconds * 1e3:.0f} ms, exact={packing.exact}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds per ratio")
    parser.add_argument("--instances", type=int, default=10_000, help="random packer instances")
    parser.add_argument("--large", type=int, default=50, help="64-buffer packer instances")
    parser.add_argument(
        "--skip", default="", help="comma-separated parts to skip: plan,layout,pack"
    )
    args = parser.parse_args(argv)
    skip = set(args.skip.split(","))
    machine = platform.processor() or platform.machine()
    now = datetime.datetime.now(datetime.timezone.utc)
    print(f"# {now:%Y-%m-%d %H:%M} UTC, {platform.node()}, {machine}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")  # fmt: skip
    print(f"# {' '.join(sys.argv)}; CPU time (time.process_time), medians over rounds\n")
    if "plan" not in skip:
        planning_rows(args.rounds)
    if "layout" not in skip:
        print()
        layout_rows(args.rounds)
    if "pack" not in skip:
        print()
        packer_rows(args.instances, args.large)
    return 0


if __name__ == "__main__":
    sys.exit(main())
