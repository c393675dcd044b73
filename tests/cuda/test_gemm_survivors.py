"""The persistent Hopper GEMM (``gemm/``) pinned where mutation testing found no test that
notices a change: synchronisation that only a GPU would get wrong (named-barrier thread
counts, the wgmma fence, which thread waits for the C stores, the idle consumer's waits),
the ring of stages at K steps the simulated runs never reach, split-K's row guard, and the
host checks' return values.

Read from the generated source (``csource``) and evaluated at chosen thread indices and
loop counters; every expected value is worked out by hand in a comment.
"""

from __future__ import annotations

import re
from unittest import mock

import numpy as np
import pytest
from csource import evaluate, lets, statements

from tilemem.gemm import hopper
from tilemem.gemm import plan as gemm_plan
from tilemem.gemm.hopper import hopper_gemm_persistent

CONSUMER_THREADS = range(128, 384)  # warpgroups 1 and 2 (warpgroup 0 is the producer)


def _source(a_rows: int = 128, split_k: bool = False, dtype: str = "bfloat16") -> str:
    print(f"building the persistent GEMM: a_rows={a_rows}, split_k={split_k}, {dtype}")
    return hopper_gemm_persistent(1, dtype, 256, split_k=split_k, a_rows=a_rows).source


# -- host checks ------------------------------------------------------------------------------


@pytest.mark.parametrize("rows", [128, 64, 32, 16, np.int64(32)])
def test_check_a_rows_returns_the_row_count_as_an_int(rows):
    # the docstring: "a_rows itself if it is one of A_ROWS"; a numpy integer comes back as int
    got = gemm_plan.check_a_rows(rows)
    assert got == int(rows) and type(got) is int


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn"])
def test_check_input_type_returns_the_dtype(dtype):
    assert gemm_plan.check_input_type(dtype) == dtype


# -- named barriers ---------------------------------------------------------------------------


@pytest.mark.parametrize("a_rows", [32, 16])
def test_zero_barrier_joins_the_two_consumer_warpgroups(a_rows):
    # a_rows < 64: consumer 1 zeroes A's unloaded rows and consumer 0 waits for it on named
    # barrier 3. PTX ISA, "bar.sync": every thread of one barrier instance gives the same
    # thread count; here both warpgroups, 2 x 128 = 256 threads, at both sites
    src = _source(a_rows)
    counts = re.findall(r'asm volatile\("bar\.sync 3, (\d+);"', src)
    assert counts == ["256", "256"]


@pytest.mark.parametrize(("a_rows", "ids"), [(128, [1, 2]), (32, [1, 1])])
def test_each_consumer_s_epilogue_has_a_named_barrier_of_its_own(a_rows, ids):
    # PTX ISA, "bar.sync": barrier 0 is the one __syncthreads() uses with every thread of the
    # CTA, and a barrier's threads must all give one count; the epilogue's barriers count the
    # consumer's 128 threads, so consumers 0 and 1 (warpgroups 1 and 2) need ids of their own,
    # not 0 and not 3 (the zero-fill barrier of a_rows < 64): 1 and 2. With 32 rows only
    # consumer 0 computes (its id, 1, whatever the warpgroup index reads)
    (expr,) = lets(_source(a_rows), "epi_bar")
    assert [evaluate(expr, warpgroup=w) for w in (1, 2)] == ids


def _empty_counts(src: str) -> list[int]:
    """The arrival count of each mbarrier.init of an empty barrier, in source order."""
    lines = [ln for ln in src.splitlines() if "mbarrier.init" in ln and "empty_bar" in ln]
    return [int(re.search(r'"r"\(\(uint32_t\)\((\d+)\)\)', ln).group(1)) for ln in lines]


@pytest.mark.parametrize("a_rows", [64, 32])
def test_the_idle_consumer_neither_waits_nor_frees_and_the_empty_barriers_count_one(a_rows):
    # a_rows <= 64: consumer 1 computes nothing. After its zero fill (a_rows < 64: fence,
    # bar.sync with consumer 0) it exits: no wait on a full barrier and no arrival on an
    # empty one follows, and each empty barrier expects one arrival a stage (consumer 0's),
    # where the 128-row kernel expects two. PTX ISA, "mbarrier.init": the count is the
    # arrivals that complete a phase; one too many and the producer waits forever
    src = _source(a_rows)
    assert _empty_counts(src) == [1] * 5  # 5 stages (64 x 256, 64-row A stages)
    assert _empty_counts(_source(128)) == [2] * 4  # 4 stages (128 x 256)
    stmts = statements(src)
    # the producer waits on empty barriers and consumer 0 on full ones: one loop each
    assert stmts.count("wait full_bar") == 1
    assert stmts.count("mbarrier.arrive.shared::cta.b64") == 2  # consumer 0's two releases


def test_the_ring_of_stages_runs_on_past_the_fourth_k_step():
    # 5 stages (64 x 256 with 64-row A stages: (232448 - 16384) / (8192 + 32768 + 16) = 5.27):
    # K step s uses stage s % 5 with parity (s // 5) % 2, for the producer and the computing
    # consumer alike (steps counted over the CTA's tiles: t * k_tiles + kt, here tile 0 with
    # k_tiles 12)
    src = _source(32)
    want = [(s % 5, (s // 5) % 2) for s in range(12)]
    stages, phases = lets(src, "stage"), lets(src, "phase")
    assert len(stages) == len(phases) == 2
    for stage, phase in zip(stages, phases, strict=True):
        got = []
        for s in range(12):
            env = {"t": 0, "t_1": 0, "t_2": 0, "kt": s, "kt_1": s, "kt_2": s}
            env |= {"k_tiles": 12, "first_step": 0}
            got.append((evaluate(stage, **env), evaluate(phase, **env)))
        assert got == want


# -- wgmma ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn"])
def test_each_k_tile_of_wgmma_is_opened_by_a_fence(dtype):
    # PTX ISA, "wgmma.fence": required before the first wgmma.mma_async of a warpgroup and
    # between other accesses of the accumulator registers (the epilogue reads them after each
    # tile) and the next wgmma.mma_async. The K-tile loop is emitted once: wait for the stage,
    # fence, then the four MMAs of the 128-byte K tile
    stmts = statements(_source(dtype=dtype))
    mma = [i for i, s in enumerate(stmts) if s.startswith("wgmma.mma_async")]
    assert len(mma) == 4 and mma == list(range(mma[0], mma[0] + 4))
    assert stmts[mma[0] - 2 : mma[0]] == ["wait full_bar", "wgmma.fence.sync.aligned"]
    assert stmts.count("wgmma.fence.sync.aligned") == 1


# -- the C stores -----------------------------------------------------------------------------


def _guard_before(src: str, marker: str) -> list[str]:
    """The condition of the ``if`` line just before each line containing ``marker``."""
    lines = src.splitlines()
    out = []
    for i, line in enumerate(lines):
        if marker in line:
            match = re.fullmatch(r"\s*if \((.*)\) \{", lines[i - 1])
            assert match, lines[i - 1]
            out.append(match.group(1))
    return out


def _threads(guard: str) -> set[int]:
    return {tx for tx in CONSUMER_THREADS if evaluate(guard, tx=tx)}


@pytest.mark.parametrize("a_rows", [128, 32])
def test_c_stores_are_awaited_by_the_thread_that_issued_them(a_rows):
    # PTX ISA, "cp.async.bulk.wait_group": a thread waits for ITS OWN bulk async-groups.
    # The CTA must not retire while a store still reads its shared memory, so the thread
    # that waits for group 0 at the end is the one that issued each TMA store of C: the
    # guards pick one thread of each consumer warpgroup (for a_rows 32 only the computing
    # warpgroup reaches them), the same thread at every site
    src = _source(a_rows)
    store = _guard_before(src, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group")
    final = _guard_before(src, '"cp.async.bulk.wait_group 0;"')
    assert len(store) == 4 and len(final) == 1  # 256 columns: four 64-column slices
    issuers = {frozenset(_threads(g)) for g in store}
    assert issuers == {frozenset(_threads(final[0]))}
    (who,) = issuers
    assert len(who) == 2 and len({tx // 128 for tx in who}) == 2  # one per warpgroup


def test_a_c_staging_tile_is_reused_only_after_its_store_has_read_it():
    # two staging tiles per consumer, alternating: before a slice is written, the store of
    # the slice before the last (same tile) must be done reading, so at most one (the last)
    # may still be pending: wait_group.read 1 (PTX ISA, "cp.async.bulk.wait_group")
    src = _source()
    assert re.findall(r'"cp\.async\.bulk\.wait_group\.read (\d+);"', src) == ["1"] * 4
    # hopper.WAIT_BEFORE_REUSE: each wait comes just before its slice's first bar.sync (the
    # barrier that tells the consumer's other threads the half is free), with nothing written
    # between; the tile's last slice is committed and not waited for before the loop goes on
    epilogue = src[src.index('"cp.async.bulk.wait_group.read 1;"') :]
    waits = [m.start() for m in re.finditer(r"wait_group\.read 1", epilogue)]
    for start in waits:
        between = epilogue[start : epilogue.index("bar.sync", start)]
        assert "stmatrix" not in between and "cp.async.bulk.tensor" not in between
    last_commit = epilogue.rindex("cp.async.bulk.commit_group")
    assert (
        "wait_group.read"
        not in epilogue[last_commit : epilogue.index('"cp.async.bulk.wait_group 0;"')]
    )


def test_with_the_wait_after_commit_each_slice_waits_right_after_its_stores():
    # hopper.WAIT_BEFORE_REUSE = False, the placement kept for timing: after each slice's
    # commit, the same thread waits until only that slice's group may still read (1), before
    # any barrier or write of the next slice
    with mock.patch.object(hopper, "WAIT_BEFORE_REUSE", False):
        src = hopper_gemm_persistent(1, "bfloat16", 256).source
    waits = [m.start() for m in re.finditer(r'"cp\.async\.bulk\.wait_group\.read (\d+);"', src)]
    assert len(waits) == 4 and re.findall(r"wait_group\.read (\d+);", src) == ["1"] * 4
    for start in waits:
        before = src[src.rindex("cp.async.bulk.commit_group", 0, start) : start]
        assert "bar.sync" not in before and "stmatrix" not in before


# -- split-K ----------------------------------------------------------------------------------


def test_split_k_partial_rows_past_m_are_skipped():
    # a lane holds rows p_row and p_row + 8 of its warp's 16 (PTX ISA, "wgmma register
    # fragments", m64nNk16 D: row 16 w + lane / 4 + 8 (r / 2)); row r goes to workspace row
    # split * m_rows + r only if r < m_rows, else it would land on the next split's row 0
    src = _source(split_k=True)
    conditions = re.findall(r"if \((\(*p_row[^{]*< m_rows\)*)\) \{", src)
    assert len(conditions) == 2
    m_rows = 40
    for p_row in range(32, 48):
        low, high = (evaluate(c, p_row=p_row, m_rows=m_rows) for c in conditions)
        assert (bool(low), bool(high)) == (p_row < 40, p_row + 8 < 40)
