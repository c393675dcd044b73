"""Random pool programs (SMEM + TMEM, random targets, random order of every call) against the
laws a planner must keep. Hypothesis profile ``pool-programs`` (tests/conftest.py) runs them.

Each program is replayed on fresh pools; after every call, and at the end, it checks:
- only tilemem errors are raised, each call answers within CALL_SECONDS;
- state rules: alloc / move_base_to after commit, anything after dealloc, a second commit
  or dealloc, dealloc before commit are PoolStateError, and a refused call changes nothing;
- no two buffers share a byte (SMEM) or a column (TMEM) unless a move_base_to came between
  their allocations; the plan's overlap lists are exactly the intersecting pairs;
- every SMEM buffer starts on its alignment, at least the dtype's natural one, and swizzled
  layouts on their period (docs/HARDWARE-RULES.md: 256/512/1024 B for 32B/64B/128B); every element's
  byte lies inside the buffer;
- TMEM columns equal the layout's footprint (recomputed from the positions, not from span),
  every cell lies inside the buffer's columns and the 128 lanes;
- committed size equals the high-water mark (SMEM commit() without size; TMEM 'auto' is the
  smallest power of two >= max(32, high water));
- the residency rule of docs/DESIGN.md#capacity-and-residency (recomputed here
  from docs/HARDWARE-RULES.md's formulas);
- determinism: the same program gives the same ``to_dict()`` twice.
"""

from __future__ import annotations

import gc
import math
import time
import warnings

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tilemem import SMEMPool, TMEMPool, TMEMStages
from tilemem.errors import CapacityError, PoolStateError, TilememError, TilememWarning
from tilemem.layout import layout_swizzle_mode, mma_shared_layout
from tilemem.plan import get_target

CALL_SECONDS = 0.5
# docs/HARDWARE-RULES.md#swizzle-modes: the pattern repeats every 256 / 512 / 1024 bytes
PERIOD_BYTES = {0: 1, 1: 256, 2: 512, 3: 1024}
BITS = {"uint8": 8, "bfloat16": 16, "float32": 32, "uint64": 64, "float4_e2m1fn": 4}
TARGETS = [None, "sm_100a", "sm_100a", "sm_100a", "sm_80", "sm_90a", "sm_100", "sm_120"]


class Digits:
    """Draws parameters from a tuple of small integers, one per parameter: hypothesis then
    generates flat integers per call, which keeps 10,000 programs cheap."""

    def __init__(self, digits):
        self.digits = iter(digits)

    def pick(self, choices):
        return choices[next(self.digits) % len(choices)]

    def int(self, low: int, high: int) -> int:
        return low + next(self.digits) % (high - low + 1)


def decode(kind: int, seed: int):
    """The call ``kind`` (0..11) with parameters drawn from ``seed``."""
    d = Digits(seed)
    if kind == 0:
        shape = tuple(d.int(1, 24) for _ in range(d.int(1, 3)))
        return ("alloc", shape, d.pick(list(BITS)), d.pick([0, 1, 4, 16, 128, 1024]))
    if kind == 1:
        dims = (d.int(1, 2), d.int(1, 2), d.int(1, 2))
        dtype, mode = d.pick(["bfloat16", "float32", "uint8"]), d.pick(list(MODES))
        return ("alloc_mma", dims, dtype, mode, d.pick([16, 256, 1024]))
    if kind == 2:
        return ("alloc_swizzled", d.int(1, 2), d.pick(["bfloat16", "uint8"]), d.pick(MODES[2:]))
    if kind == 3:
        return ("smem_move", d.int(0, 4096))
    if kind == 4:
        return ("smem_commit", d.pick([None, None, None, 0, 8192, 300_000]))
    if kind == 5:
        return ("tmem_pool", d.pick([32, 128, 256, 512, "auto"]), d.pick([1, 1, 2]))
    if kind == 6:
        shapes = [(128, 32), (64, 32), (32, 16), (2, 128, 16), (3, 16, 8), (4, 2, 8), (2, 64, 16)]
        shape, datapath = d.pick(shapes), d.pick([None, None, None, "D", "B", "F", "G"])
        cols = d.pick([None, None, 8, 64])
        return ("tmem_alloc", d.int(0, 1), shape, d.pick(["float32", "bfloat16"]), datapath, cols)
    if kind == 7:
        return ("tmem_sf", d.int(0, 1), d.pick([(128, 16), (2, 128, 16), (32, 8)]))
    if kind == 8:
        return ("tmem_move", d.int(0, 1), d.int(0, 512))
    if kind == 9:
        return ("tmem_commit", d.int(0, 1))
    if kind == 10:
        return ("tmem_dealloc", d.int(0, 1))
    return (
        "stages",
        d.int(0, 1),
        d.int(0, 3),
        d.int(0, 16),
        d.int(1, 32),
        d.int(1, 4),
        d.pick([None, 0, 8, 16]),
    )


MODES = ["auto", "none", "32B", "64B", "128B"]
DIGITS = st.tuples(*[st.integers(0, 4095)] * 8)
calls = st.tuples(st.integers(0, 11), DIGITS).map(lambda c: decode(*c))
first_pools = st.lists(st.tuples(st.just(5), DIGITS), max_size=2)
# commit everything at the end, in either order (docs/DESIGN.md#capacity-and-residency: the verdict
# must not care)
FINALES = {
    "none": [],
    "smem first": [("smem_commit", None), ("tmem_commit", 0), ("tmem_commit", 1)],
    "tmem first": [("tmem_commit", 0), ("tmem_commit", 1), ("smem_commit", None)],
}
programs = st.tuples(
    st.sampled_from(TARGETS),
    st.sampled_from([None, 32, 128, 384, 1024]),
    st.builds(  # most programs start with a TMEM pool, so TMEM calls have one to act on
        lambda first, rest, finale: [decode(*c) for c in first] + rest + FINALES[finale],
        first_pools,
        st.lists(calls, min_size=1, max_size=10),
        st.sampled_from(list(FINALES)),
    ),
)


class Run:
    """One replay of a program: the pools, and what the harness knows independently."""

    def __init__(self, target, threads):
        self.smem = SMEMPool(target=target, threads=threads)
        self.tmems: list[TMEMPool] = []
        self.epoch = {}  # buffer name -> number of moves of its pool before it was placed
        self.moves = {self.smem.name: 0}
        self.explicit_cols = set()
        self.outcomes: list[str] = []
        self.commit_size = {}  # pool name -> size asked of commit (None: the high-water mark)
        self.cursor = {self.smem.name: 0}  # the bump model, kept apart from the pools' own
        self.high = {self.smem.name: 0}

    def pool(self, index):
        return self.tmems[index % len(self.tmems)] if self.tmems else None


def _smem_call(run: Run, op):
    smem, kind = run.smem, op[0]
    if kind == "alloc":
        _, shape, dtype, align = op
        return smem.alloc(tuple(shape), dtype, align=align)
    if kind == "alloc_mma":
        _, (lead, rows8, k), dtype, mode, align = op
        return smem.alloc_mma((lead, 8 * rows8, k * 1024 // BITS[dtype]), dtype, mode, align)
    if kind == "alloc_swizzled":
        _, rows8, dtype, mode = op
        shape = (8 * rows8, 1024 // BITS[dtype])
        return smem.alloc(shape, dtype, layout=mma_shared_layout(dtype, mode, shape))
    if kind == "smem_move":
        return smem.move_base_to(op[1])
    return smem.commit(op[1])


def _tmem_call(run: Run, op):
    kind = op[0]
    if kind == "tmem_pool":
        pool = TMEMPool(run.smem, op[1], cta_group=op[2], name=f"t{len(run.tmems)}")
        run.tmems.append(pool)
        run.moves[pool.name] = 0
        return pool
    pool = run.pool(op[1])
    if pool is None:
        return None
    if kind == "tmem_alloc":
        _, _, shape, dtype, datapath, cols = op
        if datapath is not None:
            rows = {"D": 128, "B": 64, "F": 64, "G": 32}[datapath]
            shape = (rows, 4 * shape[-1])
        buf = pool.alloc(shape, dtype, datapath=datapath, cols=cols)
        if cols is not None:
            run.explicit_cols.add(buf.name)
        return buf
    if kind == "tmem_sf":
        return pool.alloc_sf(op[2], "float8_e4m3fn", sf_per_mma=4)
    if kind == "tmem_move":
        return pool.move_base_to(op[2])
    if kind == "tmem_commit":
        return pool.commit()
    if kind == "tmem_dealloc":
        return pool.dealloc()
    _, _, b, col_start, width, stages, stride = op
    if not pool.buffers:
        return None
    buf = pool.buffers[b % len(pool.buffers)]
    if len(buf.shape) != 2:
        return None
    return (
        TMEMStages(buf, col_start, width, stages, stride)
        if b % 2
        else pool.stages(buf, col_start, width, stages, stride)
    )


def _expected_state_error(run: Run, op) -> bool:
    """Whether the state rules alone forbid ``op`` (docs/DESIGN.md#smem-pools and #tmem-pools)."""
    kind = op[0]
    if kind in ("alloc", "alloc_mma", "alloc_swizzled", "smem_move", "smem_commit"):
        return run.smem.committed
    if kind == "tmem_pool":
        return run.smem.committed  # its address slot is a new SMEM buffer
    pool = run.pool(op[1])
    if pool is None or kind == "stages":
        return False
    if kind == "tmem_dealloc":
        return not pool.committed or pool.deallocated
    return pool.committed  # alloc, sf, move, a second commit


def _snapshot(run: Run):
    """What a refused call must leave as it was (cheaper than the whole plan)."""
    pools = [run.smem, *run.tmems]
    return (
        [(p.offset, p.max_offset, len(p.buffers), p.committed) for p in pools],
        [(t.deallocated, t.total_cols, len(t.stage_views)) for t in run.tmems],
        len(run.smem.tmem_pools),
    )


def _timed(run: Run, op):
    """(CPU seconds, result, tilemem error or None) of one call."""
    call = _tmem_call if op[0].startswith(("tmem", "stages")) else _smem_call
    gc.disable()  # a collection of the harness's garbage is not the call's time
    try:
        start = time.thread_time()  # CPU time: other processes on the machine do not count
        try:
            result, exc = call(run, op), None
        except TilememError as error:
            result, exc = None, error
        return time.thread_time() - start, result, exc
    finally:
        gc.enable()


def replay(target, threads, ops) -> Run:
    run = Run(target, threads)
    for op in ops:
        if op[0].startswith(("tmem_", "stages")) and op[0] != "tmem_pool" and not run.tmems:
            continue  # no TMEM pool yet: nothing to call
        before = _snapshot(run)
        forbidden = _expected_state_error(run, op)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            elapsed, result, exc = _timed(run, op)
        assert elapsed < CALL_SECONDS, op
        if exc is not None:
            assert not isinstance(exc, PoolStateError) or forbidden, (op, exc)
            assert _snapshot(run) == before, ("a refused call changed state", op, exc)
            run.outcomes.append(f"{op[0]}: {type(exc).__name__}")
            _check_residency_error(run, op, exc)
        else:
            assert not forbidden, ("state rules allow", op)
            _record(run, op, result)
            run.outcomes.append(f"{op[0]}: ok")
        for w in caught:
            assert issubclass(w.category, TilememWarning), w
            run.outcomes.append(f"{op[0]}: residency warning")
            _check_residency_warning(run, op)
        if exc is None and _completes_the_set(run, op):  # the verdict is due now, and only now
            over = _over_subscribed(run)[0]
            assert len(caught) == int(over), (op, over, caught)
    return run


def _completes_the_set(run: Run, op) -> bool:
    """Whether ``op`` was the last commit of the SMEM pool and all its TMEM pools."""
    if op[0] not in ("smem_commit", "tmem_commit") or run.smem.target is None:
        return False
    everything = [run.smem, *run.tmems]
    return bool(run.tmems) and all(p.committed for p in everything)


def _record(run: Run, op, result) -> None:
    kind = op[0]
    if kind in ("smem_move", "tmem_move"):
        name = run.smem.name if kind == "smem_move" else run.pool(op[1]).name
        run.moves[name] += 1
        # docs/DESIGN.md#smem-pools: a move beyond the high-water mark raises it
        _bump(run, name, op[-1], op[-1])
    elif kind in ("alloc", "alloc_mma", "alloc_swizzled", "tmem_alloc", "tmem_sf"):
        run.epoch[result.name] = run.moves[result.pool.name]
        _check_bump_placement(run, op, result)
    elif kind == "tmem_pool":
        run.epoch[result.slot.name] = run.moves[run.smem.name]
        run.commit_size[result.name] = op[1]
        run.cursor[result.name] = run.high[result.name] = 0
        _check_bump_placement(run, ("alloc", (1,), "uint32", 4), result.slot)
    elif kind == "smem_commit":
        run.commit_size[run.smem.name] = op[1]


def _bump(run: Run, pool: str, start: int, end: int) -> None:
    run.cursor[pool] = end
    run.high[pool] = max(run.high[pool], end)


def _check_bump_placement(run: Run, op, buf) -> None:
    """docs/DESIGN.md#smem-pools and #tmem-pools recomputed: SMEM at the cursor rounded up to
    max(align, natural alignment, swizzle period), ceil(elements * bits / 8) bytes; TMEM at the
    cursor, footprint columns."""
    pool = buf.pool.name
    cursor = run.cursor[pool]
    if buf.scope == "tmem":
        assert buf.col_offset == cursor, (buf, cursor)
        _bump(run, pool, cursor, cursor + buf.cols)
        return
    bits = buf.dtype.bits
    asked = {"alloc": lambda: op[3], "alloc_mma": lambda: op[4]}.get(op[0], lambda: 0)()
    natural = max(1, min(16, bits // 8))
    period = PERIOD_BYTES[layout_swizzle_mode(buf.layout)]
    align = max(asked, natural) if op[0] == "alloc_mma" else max(asked, natural, period)
    start = -(-cursor // align) * align
    nbytes = -(-math.prod(buf.shape) * bits // 8)
    assert (buf.byte_offset, buf.nbytes) == (start, nbytes), (buf, start, nbytes)
    _bump(run, pool, start, start + nbytes)


# -- the residency rule, recomputed ------------------------------------------------------------


def _over_subscribed(run: Run, pending=None, size=None):
    """(over, cooperative, threads known) of docs/DESIGN.md#capacity-and-residency once everything
    is committed."""
    target = get_target(run.smem.target)
    size = run.smem.committed_bytes if size is None else size
    cols = sum(t.total_cols for t in run.tmems if t.committed)
    if pending is not None:
        cols += pending
    threads = run.smem.threads or 32 * (
        1 + max(max(t.alloc_warp, t.dealloc_warp) for t in run.tmems)
    )
    # docs/HARDWARE-RULES.md: floor(smem_per_SM / (block + 1 KB)), bounded by threads and block
    # slots
    ctas = min(
        target.smem_per_sm // (size + 1024),
        target.max_threads_per_sm // threads,
        target.max_blocks_per_sm,
    )
    cooperative = any(t.cta_group == 2 for t in run.tmems)
    return cols * ctas > 512, cooperative, run.smem.threads is not None


def _check_residency_error(run: Run, op, exc) -> None:
    if not isinstance(exc, CapacityError) or "CTAs of this kernel" not in str(exc):
        return
    over, cooperative, known = _verdict_for(run, op)
    assert over and cooperative and known, (op, exc)


def _check_residency_warning(run: Run, op) -> None:
    over, cooperative, known = _verdict_for(run, op)
    assert over and not (cooperative and known), op


def _verdict_for(run: Run, op):
    if op[0] == "smem_commit":
        size = op[1] if op[1] is not None else run.smem.max_offset
        return _over_subscribed(run, size=size)
    pool = run.pool(op[1])
    high = max(32, pool.max_offset)
    cols = pool.total_cols if pool.total_cols != "auto" else 1 << (high - 1).bit_length()
    return _over_subscribed(run, pending=cols)


# -- laws of the final state ----------------------------------------------------------------


def _check_smem(run: Run) -> None:
    smem = run.smem
    for buf in smem.buffers:
        assert buf.byte_offset % buf.align == 0 and buf.align >= buf.dtype.natural_align
        assert buf.byte_offset % PERIOD_BYTES[layout_swizzle_mode(buf.layout)] == 0, buf
        last = int(np.max(buf.layout.positions()["m"]))
        assert 0 <= (last + 1) * buf.dtype.bits <= 8 * buf.nbytes, buf
    assert smem.max_offset == run.high[smem.name]
    if smem.committed:  # commit() reserves the high-water mark, commit(size) exactly size
        asked = run.commit_size[smem.name]
        assert smem.committed_bytes == (run.high[smem.name] if asked is None else asked)
    _check_spans(
        [(b.name, b.byte_offset, b.byte_offset + b.nbytes) for b in smem.buffers],
        run,
        smem.plan().smem,
    )


def _footprint(buf) -> tuple[int, int]:
    """(columns from the layout's positions, highest lane + 1), replicas included."""
    pos = buf.layout.positions()
    col = int(np.max(pos.get("TCol", np.zeros(1, dtype=np.int64))))
    lane = int(np.max(pos.get("TLane", np.zeros(1, dtype=np.int64))))
    for it in buf.layout.replica:
        if it.axis == "TCol":
            col += (it.extent - 1) * it.stride
        else:
            lane += (it.extent - 1) * it.stride
    return math.ceil((col + 1) * buf.dtype.bits / 32), lane + 1


def _check_tmem(run: Run) -> None:
    plans = {p.name: p for p in run.smem.plan().tmem}
    for pool in run.tmems:
        for buf in pool.buffers:
            cols, lanes = _footprint(buf)
            assert lanes <= 128, buf
            if buf.name in run.explicit_cols:
                assert buf.cols >= cols, buf
            else:
                assert buf.cols == cols, (buf, cols)
            assert buf.col_offset + buf.cols <= pool.capacity
        assert pool.max_offset == run.high[pool.name]
        if pool.committed:  # 'auto': the smallest power of two >= max(32, high water)
            asked = run.commit_size[pool.name]
            need = max(32, run.high[pool.name])
            auto = next(c for c in (32, 64, 128, 256, 512) if c >= need)
            assert pool.total_cols == (auto if asked == "auto" else asked) >= pool.max_offset
        _check_spans(
            [(b.name, b.col_offset, b.col_offset + b.cols) for b in pool.buffers],
            run,
            plans[pool.name],
        )
    assert sum(t.total_cols for t in run.tmems if t.committed) <= 512


def _check_spans(spans, run: Run, plan) -> None:
    """Bump placement never overlaps within one epoch; the plan lists exactly the overlaps."""
    overlapping = set()
    for i, (a, a0, a1) in enumerate(spans):
        for b, b0, b1 in spans[i + 1 :]:
            if a0 < b1 and b0 < a1:
                assert run.epoch[a] != run.epoch[b], ("overlap without a move", a, b)
                overlapping.add(frozenset((a, b)))
    listed = {frozenset((e.name, o)) for e in plan.entries for o in e.overlaps}
    assert listed == overlapping


@given(programs)
@settings(settings.get_profile("pool-programs"))
def test_random_pool_programs_keep_every_law(program):
    target, threads, ops = program
    run = replay(target, threads, ops)
    _check_smem(run)
    _check_tmem(run)
    for outcome in set(run.outcomes):
        event(outcome)  # --hypothesis-show-statistics: how often each kind of answer occurs
    again = replay(target, threads, ops)
    assert again.smem.plan().to_dict() == run.smem.plan().to_dict()
    assert again.outcomes == run.outcomes
