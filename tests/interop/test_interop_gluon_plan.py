"""plan_of: compiled Gluon kernels (examples/gluon_kernels.py, layouts from tilemem) read back
as memory plans whose totals are Triton's own numbers (metadata.shared, tmem_size)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("triton.experimental.gluon", reason="Triton Gluon (pip install triton)")

from tilemem import cli
from tilemem.interop.gluon import plan_of, repack
from tilemem.plan import MemoryPlan, get_target
from tilemem.plan.data import PlanEntry, PoolPlan
from tilemem.planfile import load_plan
from tilemem.scopes import SMEM

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gluon_kernels.py"


@pytest.fixture(scope="module")
def kernels():
    spec = importlib.util.spec_from_file_location("gluon_kernels", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gluon_kernels"] = module
    spec.loader.exec_module(module)
    out = {}
    for name in ("matmul_sm100", "matmul_sm90", "attention_sm100", "too_big_sm90"):
        print(f"compiling Gluon kernel {name} ...", file=sys.stderr)
        compiled = module.compile_kernel(name)
        out[name] = (compiled, plan_of(compiled))
    return out


def _line(name: str) -> str:
    """gluon_kernels.py:N of the line that allocates ``name`` (the test reads the source)."""
    for number, text in enumerate(EXAMPLE.read_text().splitlines(), 1):
        if re.match(rf"\s*{name} = .*allocate_", text):
            return f"gluon_kernels.py:{number}"
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["matmul_sm100", "matmul_sm90", "attention_sm100", "too_big_sm90"])
def test_totals_equal_tritons_metadata(kernels, name):
    compiled, plan = kernels[name]
    assert plan.smem.high_water == compiled.metadata.shared
    # committed: what the launch takes, none when it exceeds the block limit
    fits = compiled.metadata.shared <= get_target(plan.target).max_smem_per_block
    assert plan.smem.committed == (compiled.metadata.shared if fits else None)
    tmem_size = getattr(compiled.metadata, "tmem_size", 0) or 0
    assert sum(p.committed or 0 for p in plan.tmem) == tmem_size
    assert plan.target == ("sm_100a" if name.endswith("sm100") else "sm_90a")


@pytest.mark.parametrize("name", ["matmul_sm100", "attention_sm100"])
def test_tmem_allocation_is_the_one_in_tritons_ptx(kernels, name):
    compiled, plan = kernels[name]
    ptx = compiled.asm["ptx"]
    # tcgen05.alloc.cta_group::G ... [%rX], N with %rX = global_smem (byte 0 of shared memory)
    alloc = re.search(r"tcgen05\.alloc\.cta_group::(\d)\S* \[(%r\d+)\], (\d+);", ptx)
    assert alloc, "no tcgen05.alloc in the PTX"
    assert re.search(rf"mov\.b32\s+{re.escape(alloc.group(2))}, global_smem;", ptx)
    (pool,) = plan.tmem
    assert pool.committed == int(alloc.group(3))
    assert pool.allocation.cta_group == int(alloc.group(1))
    slot = plan.entry(pool.allocation.slot)
    assert (slot.offset, slot.length, pool.allocation.slot_offset) == (0, 4, 0)


def test_matmul_ring_buffers_with_their_lines_shapes_and_offsets(kernels):
    _, plan = kernels["matmul_sm100"]
    a, b = plan.entry("a_ring"), plan.entry("b_ring")
    # 2 stages x 128 x 64 bf16 = 32768 bytes, 2 x 64 x 64 bf16 = 16384 (by hand)
    assert (a.shape, a.dtype, a.length) == ((2, 128, 64), "bfloat16", 32768)
    assert (b.shape, b.length) == ((2, 64, 64), 16384)
    assert a.swizzle == b.swizzle == 3 and a.align == 1024  # tilemem's 128B layout
    assert _line("a_ring") in a.layout and _line("b_ring") in b.layout
    assert a.offset % 1024 == 0 and b.offset % 1024 == 0
    acc = plan.entry("acc")
    assert (acc.offset, acc.length, acc.lanes) == (0, 64, ((0, 128),))


def test_attention_p_over_s_is_a_view_of_s(kernels):
    _, plan = kernels["attention_sm100"]
    s, p, o = plan.entry("s_tmem"), plan.entry("p_tmem"), plan.entry("o_tmem")
    assert p.alias_of == "s_tmem" and p.offset == s.offset
    # 128 x 128 bf16 packed two per 32-bit column: 64 columns, inside S's 128
    assert (p.length, s.length, o.length) == (64, 128, 64)
    assert "p_tmem" in s.overlaps and o.offset >= s.end


def test_a_kernel_beyond_the_smem_limit_lists_each_buffer(kernels):
    compiled, plan = kernels["too_big_sm90"]
    limit = get_target("sm_90a").max_smem_per_block
    assert compiled.metadata.shared > limit  # Triton would refuse it at launch, total only
    sizes = {e.name: e.length for e in plan.smem.entries if not e.name.startswith("scratch_")}
    # 8 stages: 8 x 64 x 128 bf16 = 131072, 8 x 128 x 128 bf16 = 262144 (by hand)
    assert sizes == {"a_ring": 131072, "b_ring": 262144}
    assert "b_ring" in plan.format() and str(compiled.metadata.shared) in plan.format()


# Totals of tilemem's exact packing of each kernel's buffers, by hand. Triton keeps apart
# every pair it did not overlay, so those pairs stay live together:
# - matmul_sm100: a_ring 32768 + b_ring 16384 (both 1024-aligned) + mma_bar 16 = 49168 bytes
#   (the convert_layout scratch and the TMEM address slot lie on a_ring: not live with it);
#   acc 64 columns, tcgen05.alloc 64.
# - matmul_sm90: a_ring 16384 + b_ring 16384 = 32768 (scratch 8192 on a_ring).
# - attention_sm100: q, k, v 3 x 16384 + bar 8 = 49160; TMEM S 128 + O 64 = 192 columns
#   (P is a view inside S), tcgen05.alloc rounds to 256, as Triton's tmem_size does.
# - too_big_sm90: 8 x 64 x 128 x 2 + 8 x 128 x 128 x 2 = 131072 + 262144 = 393216: exact
#   packing cannot bring it under sm_90a's 232448 bytes.
PACKED = {
    "matmul_sm100": (49168, [(64, 64)]),
    "matmul_sm90": (32768, []),
    "attention_sm100": (49160, [(192, 256)]),
    "too_big_sm90": (393216, []),
}


@pytest.mark.parametrize("name", sorted(PACKED))
def test_repack_totals_by_hand(kernels, name):
    compiled, plan = kernels[name]
    packed = repack(plan)
    smem, tmem = PACKED[name]
    assert packed.smem.high_water == smem
    assert [(p.high_water, p.committed) for p in packed.tmem] == tmem
    assert plan.smem.high_water == compiled.metadata.shared  # Triton's side of the summary
    assert f"smem {compiled.metadata.shared} bytes -> {smem} bytes" in plan.summary
    assert "never live together" in plan.summary
    if name == "too_big_sm90":
        assert "over sm_90a's 232448 bytes" in plan.summary and packed.smem.committed is None


@pytest.mark.parametrize("name", sorted(PACKED))
def test_repack_overlays_only_what_triton_overlaid(kernels, name):
    _, plan = kernels[name]
    packed = repack(plan)
    for pool, mine in zip(plan.pools, packed.pools):
        before = {(e.name, o) for e in pool.entries for o in e.overlaps}
        after = {(e.name, o) for e in mine.entries for o in e.overlaps}
        assert after <= before, after - before
        same = [(e.length, e.align, e.shape, e.alias_of) for e in pool.entries]
        assert sorted(same, key=str) == sorted(
            [(e.length, e.align, e.shape, e.alias_of) for e in mine.entries], key=str
        )
        assert all(e.offset % e.align == 0 for e in mine.entries)
    assert MemoryPlan.from_dict(packed.to_dict()) == packed  # a plan tilemem accepts


def _entry(name: str, offset: int, length: int, align: int) -> PlanEntry:
    return PlanEntry(name, SMEM, offset, length, align, 0, "uint8", (length,), "custom")


def test_repack_closes_alignment_gaps():
    # as a placement in allocation order would: bar [0, 8), pad to 1024, tile [1024, 17408),
    # flag [17408, 17416): 17416 bytes. Packed: tile [0, 16384), bar [16384, 16392),
    # flag at the next multiple of 16, [16400, 16408): 16408 bytes (by hand)
    entries = (
        _entry("bar", 0, 8, 16),
        _entry("tile", 1024, 16384, 1024),
        _entry("flag", 17408, 8, 16),
    )
    plan = MemoryPlan((PoolPlan("smem", SMEM, "bytes", entries, 17416, 17416),), target="sm_90a")
    packed = repack(plan)
    assert {e.name: e.offset for e in packed.smem.entries} == {
        "tile": 0,
        "bar": 16384,
        "flag": 16400,
    }
    assert (packed.smem.high_water, packed.smem.committed) == (16408, 16408)
    assert "smem 17416 bytes -> 16408 bytes" in packed.summary


def test_repack_reuses_bytes_only_of_buffers_triton_overlaid():
    # a and b share [0, 4096) in the original: never live together; c lies apart from both.
    # Packed: a and b on common bytes, c beside them: 4096 + 4096 = 8192 (by hand)
    entries = (_entry("a", 0, 4096, 16), _entry("b", 0, 4096, 16), _entry("c", 8192, 4096, 16))
    entries = tuple(replace(e, overlaps=o) for e, o in zip(entries, [("b",), ("a",), ()]))
    plan = MemoryPlan((PoolPlan("smem", SMEM, "bytes", entries, 12288, 12288),), target="sm_90a")
    packed = repack(plan)
    where = {e.name: e.offset for e in packed.smem.entries}
    assert packed.smem.high_water == 8192 and where["a"] == where["b"] != where["c"]


def test_tilemem_plan_prints_draws_and_exports_the_saved_plan(kernels, tmp_path, capsys):
    compiled, plan = kernels["attention_sm100"]
    saved = tmp_path / "attention.json"
    saved.write_text(json.dumps(plan.to_dict()))
    assert load_plan(saved) == plan  # the JSON keeps the whole plan
    svg, header = tmp_path / "attention.svg", tmp_path / "attention.h"
    assert cli.main(["plan", str(saved), "--svg", str(svg), "--header", str(header)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"attention_sm100: {plan.summary}")
    for buffer in ("q_smem", "k_smem", "v_smem", "s_tmem", "p_tmem", "o_tmem"):
        assert buffer in out and buffer in svg.read_text() and buffer in header.read_text()
    assert f"high-water {compiled.metadata.shared} bytes" in out
    assert "high-water 192 cols, committed 256 cols" in out


def test_tilemem_plan_shows_a_kernel_beyond_the_limit(kernels, tmp_path, capsys):
    _, plan = kernels["too_big_sm90"]
    saved = tmp_path / "too_big.json"
    saved.write_text(json.dumps(plan.to_dict()))
    assert cli.main(["plan", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "high-water 393216 bytes, not committed" in out and "b_ring" in out


def test_repack_that_fits_the_target_is_committed():
    # placed with a gap: a [0, 200000), b [233472, 233480): 233480 bytes, over sm_90a's
    # 232448, so not committed. Packed: b right after a, [200000, 200008): 200008 (by hand)
    entries = (_entry("a", 0, 200000, 16), _entry("b", 233472, 8, 16))
    plan = MemoryPlan((PoolPlan("smem", SMEM, "bytes", entries, 233480, None),), target="sm_90a")
    packed = repack(plan)
    assert (packed.smem.high_water, packed.smem.committed) == (200008, 200008)
    assert "over sm_90a" not in packed.summary
