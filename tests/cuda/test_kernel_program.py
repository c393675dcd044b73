"""A built kernel as a user holds it: its plan and buffers, and its source built with the
nvcc command line the README gives."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tilemem import T
from tilemem.errors import PlanError

README = Path(__file__).resolve().parents[2] / "README.md"
NVCC = shutil.which("nvcc")


def staged_tile():
    made = {}

    @T.kernel(target="sm_90a", grid=1, block=128)
    def stage_tile(src: T.Buffer((64, 64), "bfloat16")):
        smem = T.SMEMPool()
        made["bar"] = smem.alloc((2,), "uint64", name="bar")
        made["tile"] = smem.alloc_mma((64, 64), "bfloat16", name="tile")
        smem.commit()
        made["tile"][0, T.thread_id() % 64] = src[0, T.thread_id() % 64]

    return stage_tile, made


def tmem_kernel():
    @T.kernel(target="sm_100a", grid=1, block=128, name="tmem_probe")
    def tmem_probe(out: T.Buffer((128,), "float32")):
        smem = T.SMEMPool()
        tmem = T.TMEMPool(smem, 32)
        tmem.alloc((128, 32), "float32", datapath="D", name="acc")
        smem.commit()
        tmem.commit()
        out[T.thread_id()] = 1.0
        tmem.dealloc()

    return tmem_probe


def test_a_kernel_exposes_its_plan_and_buffers():
    kernel, made = staged_tile()
    plan = kernel.plan
    # bar: 2 x 8 bytes at 0; tile: 64 x 64 bf16 = 8192 bytes at the next 1024 boundary
    assert [(e.name, e.offset, e.length) for e in plan.smem.entries] == [
        ("bar", 0, 16),
        ("tile", 1024, 8192),
    ]
    assert plan.smem.committed == kernel.dyn_smem_bytes == 1024 + 8192
    assert plan.threads == 128 and plan.target == "sm_90a"
    assert kernel.buffer("tile") is made["tile"]
    assert kernel.buffers == (made["bar"], made["tile"])
    with pytest.raises(PlanError, match=r"no buffer named 'A'; it has \['bar', 'tile'\]"):
        kernel.buffer("A")


def test_a_kernel_without_pools_has_no_plan():
    @T.kernel(target="sm_90a", block=32)
    def plain(x: T.Buffer((32,), "float32")):
        x[T.thread_id()] = 0.0

    assert plain.plan is None and plain.buffers == ()


def test_tmem_pools_are_in_the_kernel_plan():
    kernel = tmem_kernel()
    assert [p.name for p in kernel.plan.pools] == ["smem", "tmem"]
    assert kernel.buffer("acc").scope == "tmem"


def _readme_nvcc_lines() -> dict[str, list[str]]:
    """{sm_XXa: argv} of each `nvcc -gencode ...` line of the README."""
    out = {}
    for line in README.read_text().splitlines():
        if line.startswith("nvcc -gencode"):
            argv = shlex.split(line.split("#")[0])
            code = re.search(r"code=(sm_\w+)", line)
            assert code, line
            out[code.group(1)] = argv
    return out


def test_the_readme_gives_gencode_lines_for_hopper_and_blackwell():
    lines = _readme_nvcc_lines()
    assert set(lines) == {"sm_90a", "sm_100a"}
    # arch-specific PTX too: -arch=sm_90a alone would embed compute_90 PTX, which ptxas
    # rejects for wgmma / tcgen05
    assert "arch=compute_90a,code=sm_90a" in " ".join(lines["sm_90a"])
    assert "arch=compute_100a,code=sm_100a" in " ".join(lines["sm_100a"])


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_emitted_source_builds_to_an_object_with_the_readme_command(target, tmp_path):
    program = staged_tile()[0] if target == "sm_90a" else tmem_kernel()
    argv = _readme_nvcc_lines()[target]
    source, obj = tmp_path / "kernel.cu", tmp_path / "kernel.o"
    source.write_text(program.source)
    argv = [str(source) if a.endswith(".cu") else str(obj) if a.endswith(".o") else a for a in argv]
    print(f"nvcc: {' '.join(argv)}")
    run = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert obj.read_bytes()[:4] == b"\x7fELF"  # a host object with the device code inside
