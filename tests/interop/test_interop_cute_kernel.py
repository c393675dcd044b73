"""A CuTe DSL kernel whose shared memory tilemem planned, compiled (no GPU needed).

The PTX must show the plan: the dynamic shared memory aligned to the plan's largest
alignment (1024 bytes for the 128B-swizzled tiles), the TMA loads landing at the planned
byte offsets of sA and sB, the mbarrier at its planned offset expecting the planned bytes.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass.cute", reason="CuTe DSL (pip install nvidia-cutlass-dsl)")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hopper():
    print("compiling the CuTe DSL Hopper GEMM tile for sm_90a ...", file=sys.stderr)
    module = _load("cute_dsl_hopper_gemm")
    plan, compiled = module.compile_for("sm_90a")
    return plan, compiled.__ptx__


def _added(ptx: str, base: str) -> set[int]:
    """Constants added to the register holding the dynamic shared memory's base."""
    return {int(v) for v in re.findall(rf"add\.s32\s+%r\d+, {re.escape(base)}, (\d+);", ptx)}


def test_hopper_tile_compiles_for_sm90a_with_the_planned_layout(hopper):
    plan, ptx = hopper
    assert ".target sm_90a" in ptx
    align = max(e.align for e in plan.smem.entries)
    assert re.search(rf"\.extern \.shared \.align {align} \.b8 \w+\[\];", ptx)
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in ptx
    offsets = {e.name: e.offset for e in plan.smem.entries}
    # the TMA destinations: sA at the base register, sB at base + its planned offset
    loads = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global[^\[]*\[(%r\d+)\]", ptx)
    assert len(loads) == 2
    base = loads[0]
    assert offsets["sA"] == 0
    assert offsets["sB"] in _added(ptx, base)
    assert re.search(rf"add\.s32\s+{loads[1]}, {re.escape(base)}, {offsets['sB']};", ptx)
    # the barrier at its planned offset, expecting both tiles' bytes
    bar = re.search(r"mbarrier\.init\.shared\.b64\s+\[(%r\d+)\]", ptx).group(1)
    assert re.search(rf"add\.s32\s+{bar}, {re.escape(base)}, {offsets['tma_bar']};", ptx)
    tile_bytes = plan.entry("sA").length + plan.entry("sB").length
    assert re.search(rf"mov\.b32\s+%r\d+, {tile_bytes};", ptx)


@pytest.fixture(scope="module")
def blackwell():
    print("compiling the CuTe DSL Blackwell GEMM tile for sm_100a ...", file=sys.stderr)
    module = _load("cute_dsl_blackwell_gemm")
    plan, compiled = module.compile_for("sm_100a")
    return plan, compiled.__ptx__


def test_blackwell_tile_compiles_for_sm100a_with_the_planned_smem_and_tmem(blackwell):
    from tilemem.interop.cute import tmem_columns

    plan, ptx = blackwell
    assert ".target sm_100a" in ptx
    assert re.search(r"\.extern \.shared \.align 1024 \.b8 \w+\[\];", ptx)
    offsets = {e.name: e.offset for e in plan.smem.entries}
    loads = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global[^\[]*\[(%r\d+)\]", ptx)
    assert len(loads) == 2
    base = loads[0]
    assert re.search(rf"add\.s32\s+{loads[1]}, {re.escape(base)}, {offsets['sB']};", ptx)
    # tcgen05.alloc of the planned column count into the planned slot
    cols = tmem_columns(plan)
    alloc = re.search(
        r"mov\.b32\s+(%r\d+), (\d+);\s+tcgen05\.alloc\.cta_group::1[^\[]*\[(%r\d+)\]", ptx
    )
    assert alloc and int(alloc.group(2)) == cols.alloc_cols == 128
    slot = offsets["tmem_addr"]
    assert re.search(rf"add\.s32\s+{alloc.group(3)}, {re.escape(base)}, {slot};", ptx)
    # the TMEM base read back from the slot, the accumulator at its planned column
    tmem_base = re.search(
        rf"ld\.shared\.b32\s+(%r\d+), \[{re.escape(base)}\+{offsets['tmem_addr']}\];", ptx
    ).group(1)
    assert cols["acc"] == 32
    acc = re.search(rf"add\.s32\s+(%r\d+), {tmem_base}, {cols['acc']};", ptx).group(1)
    mmas = re.findall(r"tcgen05\.mma\.cta_group::1\.kind::f16\S* \[(%r\d+)\]", ptx)
    assert mmas and set(mmas) == {acc}
    assert "tcgen05.ld.sync.aligned.32x32b.x64.b32" in ptx


def test_fa4_example_columns_equal_fa4s_hand_written_offsets():
    module = _load("cute_dsl_fa4_plan")
    plan = module.plan_fa4()
    from tilemem.interop.cute import tmem_columns

    cols = tmem_columns(plan)
    # FA4 (flash_attn/cute, Blackwell forward) writes these by hand for head_dim 128:
    # tmem_s_offset = [0, 128], tmem_o_offset = [256, 384], tmem_p_offset = s + 128 // 2
    assert dict(cols) == {"S0": 0, "S1": 128, "O0": 256, "O1": 384, "P0": 64, "P1": 192}
    assert cols.alloc_cols == 512
    tensors = module.tmem_tensors(plan)
    # CuTe DSL's own rendering: f32 lanes 65536 apart, bf16 P lanes 131072 (2 per cell)
    assert "(128,128):(65536,1)" in tensors["S0"]
    assert "(128,128):(131072,1)" in tensors["P1"]
