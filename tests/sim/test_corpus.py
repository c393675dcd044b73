"""The planted-bug corpus, continued: mutants not covered by the other simulator tests.

Each entry is a kernel with one planted bug (a flag of a small kernel in ``simkernels.py`` or
one kernel-language call replaced while a built-in kernel is built), and the test checks the
hazard kind, the buffer and the user's source line (or, for descriptor bits, that the numpy
reference catches the wrong result).

Corpus entries elsewhere (kind):
  test_core.py: missing syncthreads (race); read before write (uninitialized); shared index
    off by one, global index past the end (out-of-bounds, 2); write outside its phase
    (lifetime); missing fence.proxy.async before a TMA store (proxy); expect-tx too few
    (mbarrier); arrivals short (mbarrier); wrong-parity wait (race / deadlock); missing
    mbarrier wait (race); wait nobody arrives at (deadlock); refill before bulk wait_group.read
    (race); named barrier short of warps (deadlock); arrive on an uninitialised mbarrier
    (mbarrier).
  test_tmem_protocol.py: dealloc by another warp; columns held at exit + no relinquish
    (tmem-protocol); store outside the allocation (out-of-bounds); over-subscribed TMEM
    cluster with sms=2 (deadlock).
  test_mutants_gemm.py: Hopper GEMM without fence.proxy.async (proxy); without wgmma
    wait_group, epilogue over a stage still read (race); wait_group(1) after the next TMA load
    into the stage (race); persistent cluster GEMM without the cluster barrier before a peer's
    multicast (mbarrier / race).
  test_tcgen05_kernels.py: Blackwell GEMM A descriptor SBO, base offset, swizzle bits (wrong
    result, 3); instruction descriptor N, B major (wrong result / uninitialized, 2); ld from
    the wrong lane quarter (out-of-bounds); registers read before wait::ld (race); dealloc
    before the last ld (tmem-protocol / race).
  test_tcgen05_attention.py: wrong LBO on the MN-major V descriptor (wrong result); P stored
    over S before S is read (race).
That is 32 distinct mutated kernels (the held-at-exit kernel, which also never relinquishes,
counted once); with the 18 here, 50.

Entries here (kind):
  1. expect-tx bytes too many: the phase never completes (mbarrier / deadlock)
  2. two arrivals expected, one made, then waited on (deadlock)
  3. staged TMA stores without fence.proxy.async (proxy)
  4. tcgen05.st then tcgen05.ld without wait::st (race, TMEM)
  5. tcgen05.ld without wait::ld, registers read (race, registers, in every schedule)
  6. dealloc without the barrier after the other warps' TMEM accesses (tmem-protocol / race)
  7. Hopper GEMM consumers waiting with the wrong parity (race / uninitialized)
  8. Hopper GEMM consumers not waiting for the full barrier (race / uninitialized)
  9. Blackwell GEMM without the accumulator commit: the epilogue waits forever (deadlock)
  10. Blackwell GEMM A descriptor start address one 16-byte step off (wrong result)
  11. attention epilogue not waiting for O: O written over Q while Q is in use (race)
  12. the dealloc warp never relinquishes the allocation permit (tmem-protocol, at the alloc)
  13. Hopper GEMM epilogue marked as the mainloop: C_epilogue written outside its phase
      (lifetime)
  14. Hopper GEMM wgmma B descriptor with 64B instead of 128B swizzle bits (wrong result)
  15. wgmma accumulators read before wgmma.wait_group (race, registers, in every schedule)
  16. two lanes of one st.shared storing different values to one element (race)
  17. two lanes of one stmatrix giving one row address for different data (race)
  18. a tcgen05.st whose lanes all map to one TMEM cell, storing their thread ids (race)
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import T, examples, kernels
from tilemem.cuda.tma import tile_map
from tilemem.errors import TilememWarning
from tilemem.ir.nodes import UINT64, Const
from tilemem.sim.machine import write_conflict

from . import simkernels
from .simkernels import line
from .test_mutants_gemm import KERNELS_PY, _hopper_example, _line_after, _skip_call_at
from .test_tcgen05_attention import run_attention
from .test_tcgen05_kernels import _build, _xor_desc, run_gemm

BF16 = ml_dtypes.bfloat16
SIMKERNELS_PY = Path(simkernels.__file__).resolve()


def sources(h) -> set:
    return {a.source for a in h.accesses}


def _roundtrip(**flags):
    k, buf = simkernels.tma_roundtrip(**flags)
    a = np.ones((64, 32), np.float32)
    return sim.run(k, tile_map(a, buf), tile_map(np.zeros_like(a), buf), 0, 0, schedule="in-order")


def test_expect_tx_too_many_bytes_never_completes():
    result = _roundtrip(tx=16384)  # the tile is 64 x 32 x 4 = 8192 bytes
    found = result.of_kind("mbarrier") + result.of_kind("deadlock")
    assert found and any("full[0]" in h.message or h.buffer == "full[0]" for h in found)
    assert any(line("wait") in sources(h) for h in found)


def test_one_arrival_short_then_waited_on():
    result = _roundtrip(arrivals=2)
    (h,) = result.of_kind("deadlock")
    assert "parity(0) on full[0]" in h.message and line("wait") in sources(h)


def test_staged_stores_without_the_proxy_fence(monkeypatch):
    monkeypatch.setattr(T.ptx.fence, "proxy_async_shared_cta", lambda: None)
    k, tile = simkernels.staged_store()
    monkeypatch.undo()
    result = sim.run(k, tile_map(np.zeros((16, 64), np.float32), tile), schedule="in-order")
    hazards = result.of_kind("proxy")
    assert hazards and all(h.buffer == "tile" for h in hazards)
    assert sources(hazards[0]) == {line("fill"), line("store")}


def _tmem_user(monkeypatch, owner, name, fn):
    monkeypatch.setattr(owner, name, fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TilememWarning)
        k = simkernels.tmem_user()
        _ = k.ir
    monkeypatch.undo()
    return k


def test_tmem_load_without_wait_st(monkeypatch):
    """(Under "adversarial" the store lands after the load: an "uninitialized" read.)"""
    k = _tmem_user(monkeypatch, T.ptx.tcgen05, "wait_st", lambda: None)
    result = sim.run(k, np.zeros(128, np.float32), schedule="in-order")
    races = [h for h in result.of_kind("race") if h.space == "tmem"]
    assert races and all(h.buffer == "acc" for h in races)
    assert any(line("tmem-st") in sources(h) for h in races)


def _register_races(result, buffer: str, wait: str, issued: str, read: str) -> list:
    """The register races of ``result``: each on ``buffer``, naming the asynchronous
    instruction (line ``issued``), the early read (line ``read``) and the missing ``wait``."""
    races = [h for h in result.of_kind("race") if h.space == "registers"]
    assert races, result.hazards
    for h in races:
        assert h.buffer == buffer and sources(h) == {read, issued}, h
        assert f"add {wait} before reading {buffer}" in h.message, h.message
    return races


@pytest.mark.parametrize("schedule", ["random", "in-order", "adversarial"])
def test_tmem_registers_read_without_wait_ld(schedule):
    """The destination of a tcgen05.ld read before tcgen05.wait::ld is a race in every
    schedule, however late the load completes (under "adversarial" it lands after the dealloc,
    which is reported too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TilememWarning)
        k = simkernels.tmem_user(wait_ld=False)
    result = sim.run(k, np.zeros(128, np.float32), schedule=schedule, seed=3)
    races = _register_races(result, "regs", "tcgen05.wait::ld", line("tmem-ld"), line("tmem-read"))
    assert {h.where for h in races} == {"elements 0..0"}
    assert all("regs[0] before the tcgen05.ld.32x32b.x1" in h.message for h in races)


@pytest.mark.parametrize("schedule", ["random", "in-order", "adversarial"])
def test_wgmma_accumulators_read_before_wait_group(schedule):
    result = sim.run(
        simkernels.wgmma_tile(wait=False), np.zeros((128, 4), np.float32), schedule=schedule, seed=5
    )
    races = _register_races(result, "acc", "wgmma.wait_group", line("wgmma"), line("acc-read"))
    assert all("before the wgmma.mma_async m64n8k16" in h.message for h in races)


def test_wgmma_tile_with_its_wait_is_clean_and_right():
    """D = A @ B^T with A[m, k] = m % 4 + 1, B[n, k] = n + 1 over one k16 step:
    D[m, n] = 16 (m % 4 + 1)(n + 1). Lane l of warp w holds D[16 w + l // 4 + 8 (i // 2),
    2 (l % 4) + i % 2] in acc[i] (PTX ISA 9.0, "wgmma" register fragment of D, m64nNk16)."""
    for schedule in ("random", "adversarial"):
        out = np.zeros((128, 4), np.float32)
        result = sim.run(simkernels.wgmma_tile(), out, schedule=schedule)
        assert result.ok, result.hazards
        t, i = np.meshgrid(np.arange(128), np.arange(4), indexing="ij")
        m = 16 * (t // 32) + (t % 32) // 4 + 8 * (i // 2)
        n = 2 * (t % 4) + i % 2
        np.testing.assert_array_equal(out, 16.0 * (m % 4 + 1) * (n + 1))


def test_dealloc_without_the_barrier_after_the_loads(monkeypatch):
    """Only the barrier before ``tmem.dealloc()`` removed: warp 0 may free the columns while
    the other warps still load from them."""
    anchor = "def tmem_user"
    _skip_call_at(
        monkeypatch,
        T.cuda,
        "syncthreads",
        SIMKERNELS_PY,
        _line_after(SIMKERNELS_PY, anchor, "T.cuda.syncthreads()"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TilememWarning)
        k = simkernels.tmem_user()
        _ = k.ir
    monkeypatch.undo()
    result = sim.run(k, np.zeros(128, np.float32), schedule="in-order")
    found = [h for h in result.hazards if h.kind in ("tmem-protocol", "race") and h.space == "tmem"]
    assert found and any(line("tmem-dealloc") in sources(h) for h in found)


def _flip_parity(monkeypatch, path: Path, lineno: int):
    """``mbarrier.wait(bar, parity)`` called from ``path:lineno`` waits for the other parity."""
    original = T.ptx.mbarrier.wait

    def wait(bar, parity):
        caller = inspect.stack()[1]
        if Path(caller.filename).resolve() == path and caller.lineno == lineno:
            return original(bar, parity ^ 1)
        return original(bar, parity)

    monkeypatch.setattr(T.ptx.mbarrier, "wait", wait)


def _consumer_wait_line() -> int:
    return _line_after(KERNELS_PY, "def hopper_gemm", "T.ptx.mbarrier.wait((full, s), phase)")


def _operand_hazards(result):
    return [
        h
        for h in result.hazards
        if h.kind in ("race", "uninitialized") and h.buffer in ("A", "B") and h.space == "shared"
    ]


def test_hopper_gemm_consumer_waits_with_the_wrong_parity(monkeypatch):
    _flip_parity(monkeypatch, KERNELS_PY, _consumer_wait_line())
    result = _hopper_example(schedule="adversarial", k_tiles=1)
    found = _operand_hazards(result)
    assert found and any(a.op.startswith("wgmma") for h in found for a in h.accesses)


def test_hopper_gemm_consumer_does_not_wait_for_the_load(monkeypatch):
    _skip_call_at(monkeypatch, T.ptx.mbarrier, "wait", KERNELS_PY, _consumer_wait_line())
    result = _hopper_example(schedule="adversarial", k_tiles=1)
    found = _operand_hazards(result)
    assert found and any(a.op.startswith("wgmma") for h in found for a in h.accesses)


def test_blackwell_gemm_without_the_accumulator_commit(monkeypatch):
    original = T.ptx.tcgen05.commit

    def commit(bar, *args, **kwargs):
        if bar[0].name == "acc_full_bar":
            return None
        return original(bar, *args, **kwargs)

    program = _build(monkeypatch, T.ptx.tcgen05, "commit", commit)
    result, _, _ = run_gemm(program, schedule="in-order")
    stuck = result.of_kind("deadlock")
    drain = _line_after(KERNELS_PY, "def _drain_accumulator", "T.ptx.mbarrier.wait((acc_full")
    assert stuck and f"{KERNELS_PY}:{drain}" in sources(stuck[0])


def test_blackwell_gemm_a_descriptor_start_address_off_by_16_bytes(monkeypatch):
    program = _build(monkeypatch, T.ptx.tcgen05, "desc", _xor_desc(1))  # bits 0-13: addr >> 4
    _, c, ref = run_gemm(program, schedule="in-order")
    assert not np.array_equal(c, ref)


def test_attention_epilogue_writes_o_over_q_in_use(monkeypatch):
    """The epilogue not waiting for ``o_full``: it packs O_epilogue (over Q) while the MMAs of
    S = Q K^T may still read Q."""
    anchor = 'with T.phase("epilogue"), T.If(warp >= 12)'
    _skip_call_at(
        monkeypatch,
        T.ptx.mbarrier,
        "wait",
        KERNELS_PY,
        _line_after(KERNELS_PY, anchor, "mbarrier.wait("),
    )
    program = kernels.attention_fwd()
    _ = program.ir
    monkeypatch.undo()
    result, o, ref = run_attention(program, schedule="in-order")
    write = f"{KERNELS_PY}:{_line_after(KERNELS_PY, anchor, 'o_smem[quarter * 32')}"
    over_q = [h for h in result.of_kind("race") if h.buffer in ("Q", "O_epilogue")]
    assert over_q and any(write in sources(h) for h in over_q)
    mma_q = f"{KERNELS_PY}:{_line_after(KERNELS_PY, 'def attention_fwd', 'tcgen05.mma(')}"
    assert any(sources(h) == {write, mma_q} for h in over_q)
    assert not np.array_equal(o, ref)


def test_no_relinquish(monkeypatch):
    """The dealloc warp frees its columns but never relinquishes the allocation permit."""
    protocol = importlib.import_module("tilemem.ir.intrinsics.tcgen05")
    k = _tmem_user(monkeypatch, protocol, "tcgen05_relinquish", lambda **kw: None)
    result = sim.run(k, np.zeros(128, np.float32), schedule="in-order")
    (h,) = result.of_kind("tmem-protocol")
    assert "never issued tcgen05.relinquish_alloc_permit" in h.message
    assert h.space == "tmem" and sources(h) == {line("tmem-alloc")}


def test_hopper_epilogue_packed_inside_the_mainloop(monkeypatch):
    """The epilogue's region marked as the mainloop: C_epilogue (over A's stages) is written
    in a phase where only the stages are live."""
    original = T.phase
    monkeypatch.setattr(T, "phase", lambda name: original("mainloop"))
    program = kernels.hopper_gemm()
    _ = program.ir
    monkeypatch.undo()
    monkeypatch.setattr(kernels, "hopper_gemm", lambda: program)
    hazards = _hopper_example(schedule="in-order", k_tiles=1).of_kind("lifetime")
    write = f"{KERNELS_PY}:{_line_after(KERNELS_PY, 'def hopper_gemm', 'c[row, col] = acc')}"
    assert hazards and all(h.buffer == "C_epilogue" for h in hazards)
    assert sources(hazards[0]) == {write} and hazards[0].accesses[0].phase == "mainloop"


def test_hopper_wgmma_b_descriptor_swizzle_bits(monkeypatch):
    """wgmma's B descriptor with layout type 1 (128B swizzle) turned into 2 (64B swizzle): B is
    read through the wrong permutation, so C differs from the reference."""
    original = T.ptx.wgmma.desc

    def desc(buf, *args, **kwargs):
        right = original(buf, *args, **kwargs)
        return right ^ Const(3 << 62, UINT64) if buf.name == "B" else right

    monkeypatch.setattr(T.ptx.wgmma, "desc", desc)
    program = kernels.hopper_gemm()
    _ = program.ir
    monkeypatch.undo()
    monkeypatch.setattr(kernels, "hopper_gemm", lambda: program)
    smem = examples.hopper_gemm_bf16(4, target="sm_90a")
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (128, 64)).astype(BF16)
    b = rng.integers(-3, 4, (256, 64)).astype(BF16)
    c = np.zeros((128, 256), BF16)
    maps = (
        tile_map(a, smem.buffer("A")),
        tile_map(b, smem.buffer("B")),
        tile_map(c, smem.buffer("C_epilogue")),
    )
    sim.run(program, *maps, 1, schedule="in-order")
    # small integers: every fp32 sum is exact, so the right kernel matches bit for bit
    ref = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32).astype(BF16)
    assert not np.array_equal(c.astype(np.float32), ref.astype(np.float32))


@pytest.mark.parametrize("kind", ["st", "stmatrix"])
def test_two_lanes_of_one_store_writing_different_values(kind):
    """PTX ISA memory consistency model: accesses of one instruction by different threads are
    not ordered, so two lanes storing different values to one byte leave either value."""
    (h,) = sim.run(simkernels.lane_clash(kind, same=False), np.zeros(32, np.float32)).hazards
    assert h.kind == "race" and h.space == "shared" and h.buffer == "buf"
    assert h.where.startswith("bytes 0..0 ")  # the first clash: element 0's low byte
    first, second = h.accesses
    assert first.source == second.source == line(f"clash-{kind}")
    # st: lanes 0 and 1 store 0 and 1 to element 0; stmatrix: lanes 0 and 8 give row 0 of
    # matrices 0 and 1, whose row 0 holds word 0 (1) and word 1 (2) of lanes 0..3
    lanes, values = {"st": ("0 1", "(0x00, 0x01)"), "stmatrix": ("0 8", "(0x01, 0x02)")}[kind]
    assert (first.lanes, second.lanes) == tuple(lanes.split())
    assert values in h.message and "unspecified which" in h.message


@pytest.mark.parametrize("kind", ["st", "stmatrix"])
def test_lanes_storing_one_value_and_loading_one_address_are_fine(kind):
    out = np.zeros(32, np.float32)
    result = sim.run(simkernels.lane_clash(kind, same=True), out)
    assert result.ok, result.hazards
    assert (out == {"st": 0.0, "stmatrix": 1.0}[kind]).all()  # element 0 as stored


def test_write_conflict_finds_one_unit_with_two_values():
    units = np.array([5, 3, 5, 7, 3])
    assert write_conflict(units, np.array([1, 2, 1, 0, 2])) is None  # repeats of one value
    assert write_conflict(units, np.array([1, 2, 9, 0, 2])) == (0, 2)  # unit 5: 1 and 9
    assert write_conflict(np.arange(4), np.arange(4)) is None


def test_tcgen05_st_lanes_on_one_cell(monkeypatch):
    """With the 32x32b cell map broken so that every lane of a warp addresses its quarter's
    first lane, one tcgen05.st writes one cell with 32 different values."""
    tcgen05 = importlib.import_module("tilemem.ir.intrinsics.tcgen05")
    monkeypatch.setattr(
        tcgen05, "tmem_ld_cells", lambda shape, num: (np.zeros((32, num), int),) * 2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TilememWarning)
        k = simkernels.tmem_user()
    result = sim.run(k, np.zeros(128, np.float32), schedule="in-order")
    clashes = [h for h in result.of_kind("race") if "of one tcgen05.st" in h.message]
    assert clashes and all(h.space == "tmem" and h.buffer == "acc" for h in clashes)
    h = clashes[0]
    assert sources(h) == {line("tmem-st")}
    assert [a.lanes for a in h.accesses] == ["0", "1"]  # threads 32 q and 32 q + 1 first
    assert "different values (0x" in h.message and "unspecified which" in h.message
