"""plan_of: compiled Gluon kernels (examples/gluon_kernels.py, layouts from tilemem) read back
as memory plans whose totals are Triton's own numbers (metadata.shared, tmem_size)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton.experimental.gluon", reason="Triton Gluon (pip install triton)")

from tilemem.interop.gluon import plan_of
from tilemem.plan import get_target

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
    assert plan.smem.high_water == plan.smem.committed == compiled.metadata.shared
    tmem_size = getattr(compiled.metadata, "tmem_size", 0) or 0
    assert sum(p.high_water for p in plan.tmem) == tmem_size
    assert plan.target == ("sm_100a" if name.endswith("sm100") else "sm_90a")


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
    sizes = {e.name: e.length for e in plan.smem.entries if not e.name.startswith("scratch")}
    # 8 stages: 8 x 64 x 128 bf16 = 131072, 8 x 128 x 128 bf16 = 262144 (by hand)
    assert sizes == {"a_ring": 131072, "b_ring": 262144}
    assert "b_ring" in plan.format() and str(compiled.metadata.shared) in plan.format()
