"""to_cpp_header(cute=True) compiled against the CuTe headers of the nvidia-cutlass wheel.

A host program includes the header, evaluates every buffer's ``layout`` type at every
logical coordinate with CuTe's own ``operator()``, and checks the GMMA/UMMA layout-type
constants against CuTe's enums with static_asserts. The printed values must equal
tilemem's positions (element offset, or (lane << 16) + column for TMEM).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
import warnings
from pathlib import Path

import pytest

import tilemem
from oracle import cute
from oracle.cute import OracleUnavailable, build_lock, find_cutlass_include, find_nvcc
from tilemem.interop.cute_cpp import entry_layout


def _plans():
    out = []
    for target, arch in (("sm_100a", "umma"), ("sm_90a", "gmma")):
        smem = tilemem.SMEMPool(target=target, name="smem")
        smem.alloc_mma((3, 64, 64), "bfloat16", "128B", name="ring")
        smem.alloc_mma((64, 64), "float8_e4m3fn", "64B", name="b_tile")
        smem.alloc_mma((2, 32, 8), "float32", "32B", name="small")
        smem.alloc_mma((64, 32), "bfloat16", "none", name="interleaved")
        smem.alloc((16, 24), "float32", name="epilogue")
        if target == "sm_100a":
            tmem = tilemem.TMEMPool(smem, total_cols="auto", name="tmem")
            tmem.alloc((128, 64), "float32", datapath="D", name="acc")
            tmem.alloc((128, 32), "float16", datapath="D", name="acc16")
            tmem.alloc((64, 32), "float32", datapath="F", name="acc_f")
            smem.commit()
            with warnings.catch_warnings():  # occupancy vs TMEM columns: not what is tested
                warnings.simplefilter("ignore", tilemem.errors.TilememWarning)
                tmem.commit()
        else:
            smem.commit()
        out.append((f"plan_{arch}", smem.plan()))
    return out


def _program(plans) -> tuple[str, list]:
    lines = ["#include <cstdio>"]
    checks, expected = [], []
    for namespace, plan in plans:
        lines.append(plan.to_cpp_header(namespace, cute=True).replace("#pragma once", ""))
        for pool in plan.pools:
            for e in pool.entries:
                layout = entry_layout(e)
                if layout is None:
                    continue
                ns = f"{namespace}::{pool.name}::{e.name}"
                shape = tuple(e.shape)
                loops = "".join(
                    f"for (int i{d} = 0; i{d} < {n}; ++i{d}) " for d, n in enumerate(shape)
                )
                coord = ", ".join(f"i{d}" for d in range(len(shape)))
                checks.append(
                    f'{{ {ns}::layout l{{}}; std::printf("%s\\n", "{ns}"); {loops}'
                    f'std::printf("%lld\\n", (long long)l(cute::make_coord({coord}))); }}'
                )
                pos = layout.positions()
                if pool.scope == "tmem":
                    values = [(lane << 16) + col for lane, col in zip(pos["TLane"], pos["TCol"])]
                else:
                    values = list(pos["m"])
                expected.append((ns, [int(v) for v in values]))
                if e.layout_kind.value == "mma":
                    enum = "UMMA" if "umma" in namespace else "GMMA"
                    name = {
                        "UMMA": {
                            0: "SWIZZLE_NONE",
                            1: "SWIZZLE_32B",
                            2: "SWIZZLE_64B",
                            3: "SWIZZLE_128B",
                        },
                        "GMMA": {0: "INTERLEAVE", 1: "B32", 2: "B64", 3: "B128"},
                    }[enum]
                    field = f"{enum.lower()}_layout_type"
                    lines.append(
                        f"static_assert({ns}::{field} == unsigned(cute::{enum}::LayoutType::"
                        f'{name[e.swizzle]}), "{ns}: {field}");'
                    )
    # CuTe's enums after the headers (which include cute/tensor.hpp, CuTe's setup, first)
    arch = ["#include <cute/arch/mma_sm90_desc.hpp>", "#include <cute/arch/mma_sm100_desc.hpp>"]
    headers = [line for line in lines[1:] if not line.startswith("static_assert")]
    asserts = [line for line in lines[1:] if line.startswith("static_assert")]
    lines = [lines[0], *headers, *arch, *asserts, "int main() {"]
    lines += checks
    lines.append("return 0; }")
    return "\n".join(lines) + "\n", expected


def _compile(nvcc: str, include: Path, source: str, exe: Path, tmp: Path) -> None:
    cute.SAY(f"CuTe header check: compiling the exported headers with {nvcc} into {exe}")
    start = time.monotonic()
    src = tmp / "check.cpp"
    src.write_text(source)
    built = tmp / "check"
    cmd = [nvcc, "-x", "c++", "-std=c++17", "-ccbin", "g++", f"-I{include}", "-O0", "-w"]
    result = subprocess.run(
        [*cmd, str(src), "-o", str(built)], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-4000:]
    os.replace(built, exe)  # atomic: a reader never finds half a binary
    cute.SAY(f"CuTe header check: compiled in {time.monotonic() - start:.0f} s")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    try:
        nvcc, include = find_nvcc(), find_cutlass_include()
    except OracleUnavailable as exc:
        pytest.skip(f"CuTe headers or nvcc unavailable: {exc}")
    plans = _plans()
    source, expected = _program(plans)
    key = hashlib.sha256(source.encode() + nvcc.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tilemem"
    exe = cache / f"cute-header-{key}"
    if not exe.is_file():
        with build_lock(cache, exe.name):
            if not exe.is_file():  # not built by another process while this one waited
                _compile(nvcc, include, source, exe, tmp_path_factory.mktemp("cute_header"))
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return plans, expected, out.split()


def test_every_layout_type_equals_tilemem_at_every_coordinate(compiled):
    _, expected, tokens = compiled
    got: dict[str, list[int]] = {}
    current = None
    for token in tokens:
        if "::" in token:
            current = token
            got[current] = []
        else:
            got[current].append(int(token))
    assert [ns for ns, _ in expected] == list(got)
    bad = [ns for ns, values in expected if got[ns] != values]
    assert bad == []
    assert sum(len(v) for _, v in expected) > 10000


def test_rings_carry_stages_and_stage_stride():
    plan = _plans()[0][1]
    header = plan.to_cpp_header("p", cute=True)
    section = header[len(plan.to_cpp_header("p")) :]
    # ring: 3 stages of 64 x 64 bf16 = 8192 bytes each (by hand); small: 2 of 32 x 8 f32 = 1024
    ring = section[section.index("namespace ring {") :]
    assert "constexpr unsigned stages = 3;" in ring.split("}}}")[0]
    assert "constexpr unsigned stage_stride_bytes = 8192;" in ring.split("}}}")[0]
    small = section[section.index("namespace small {") :].split("}}}")[0]
    assert "stage_stride_bytes = 1024;" in small
    # the plain header is unchanged by the option
    assert header.startswith(plan.to_cpp_header("p"))


def test_without_cute_the_header_has_no_cute():
    assert "cute::" not in _plans()[1][1].to_cpp_header("p")


def test_layout_types_compare_by_coordinate_for_both_targets(compiled):
    plans, expected, _ = compiled
    namespaces = {ns.split("::")[0] for ns, _ in expected}
    assert namespaces == {"plan_umma", "plan_gmma"}
    assert [p.target for _, p in plans] == ["sm_100a", "sm_90a"]
    assert any("tmem::acc16" in ns for ns, _ in expected)
