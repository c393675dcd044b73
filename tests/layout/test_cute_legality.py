"""tcgen05.mma shape legality both ways against CuTe's static_asserts: the shapes CuTe's MMA
traits accept compile, the ones they refuse do not, and tilemem's legal_mn / instr_descriptor
give the same verdict.

CuTe 4.2, cute/atom/mma_traits_sm100.hpp: ``MMA_Traits<SM100_MMA_F8F6F4_SS, ...>`` asserts
``N % 8`` (8..256) with a K-major B and ``N % 16`` (16..256) with an MN-major B;
``SM100_MMA_F8F6F4_2x1SM_SS`` asserts ``N % 16`` / ``N % 32`` (PTX ISA tcgen05.mma, "Matrix
shape"). Two translation units are compiled (host C++, nvcc -x c++ with g++, syntax only):
every accepted probe in one, which must compile, and every refused probe in the other, whose
diagnostics must cite each probe's line. Verdicts are cached by a hash of the source, the
CUTLASS version and the compiler, under the CuTe oracle's cache directory.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from oracle import cute
from tilemem.errors import LayoutError
from tilemem.layout.operand import instr_descriptor, legal_mn

E4M3 = "float8_e4m3fn"
ATOMS = {1: "SM100_MMA_F8F6F4_SS", 2: "SM100_MMA_F8F6F4_2x1SM_SS"}

# (cta_group, M, N, B major, CuTe and the PTX ISA accept it)
PROBES = [
    (1, 128, 24, "MN", False),  # the case: N = 24 with an MN-major 8-bit B
    (1, 64, 8, "MN", False),
    (1, 128, 40, "MN", False),
    (1, 128, 16, "MN", True),
    (1, 128, 32, "MN", True),
    (1, 64, 256, "MN", True),
    (1, 128, 24, "K", True),
    (1, 64, 8, "K", True),
    (2, 256, 48, "MN", False),
    (2, 128, 16, "MN", False),
    (2, 256, 64, "MN", True),
    (2, 128, 32, "MN", True),
    (2, 256, 48, "K", True),
    (2, 256, 16, "K", True),
]

HEADER = """#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
using namespace cute;
template <class Atom, int M, int N, UMMA::Major B>
using Probe = MMA_Traits<Atom, cutlass::float_e4m3_t, cutlass::float_e4m3_t, float, C<M>, C<N>,
    integral_constant<UMMA::Major, UMMA::Major::K>, integral_constant<UMMA::Major, B>,
    integral_constant<UMMA::ScaleIn, UMMA::ScaleIn::One>,
    integral_constant<UMMA::ScaleIn, UMMA::ScaleIn::One>>;
"""


def probe_line(cta_group: int, m: int, n: int, major: str) -> str:
    """One line that instantiates the traits (sizeof forces the class and its asserts)."""
    return f"static_assert(sizeof(Probe<{ATOMS[cta_group]}, {m}, {n}, UMMA::Major::{major}>) > 0);"


def translation_unit(probes) -> tuple[str, dict[int, tuple]]:
    """The source and, for each probe, its 1-based line."""
    lines = HEADER.splitlines()
    where = {}
    for probe in probes:
        lines.append(probe_line(*probe[:4]))
        where[len(lines)] = probe
    lines.append("int main() { return 0; }")
    return "\n".join(lines) + "\n", where


def compile_unit(name: str, source: str) -> dict:
    """{"ok": bool, "log": str} for ``source``, cached by hash."""
    nvcc, include = cute.find_nvcc(), cute.find_cutlass_include()
    version = (include / "cutlass" / "version.h").read_bytes()
    key = hashlib.sha256(source.encode() + version + nvcc.encode()).hexdigest()[:16]
    cache = cute._cache_dir().parent / "cute-legality"
    cached = cache / f"{name}-{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    with cute.build_lock(cache, name):
        if cached.is_file():  # another process compiled it while this one waited
            return json.loads(cached.read_text())
        path = cache / f"{name}-{key}.cpp"
        path.write_text(source)
        cute.SAY(f"CuTe legality probes: compiling {path} (syntax only; cached in {cache})")
        start = time.monotonic()
        cmd = [nvcc, "-x", "c++", "-std=c++17", "-ccbin", "g++", f"-I{include}", "-w"]
        cmd += ["-Xcompiler", "-fsyntax-only", "-c", str(path), "-o", "/dev/null"]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True)
        result = {"ok": done.returncode == 0, "log": done.stdout + done.stderr}
        cute.SAY(f"CuTe legality probes: {path.name} compiled in {time.monotonic() - start:.0f} s")
        partial = cached.with_suffix(".part")
        partial.write_text(json.dumps(result))
        partial.replace(cached)  # atomic: a reader never finds half a verdict
    return result


@pytest.fixture(scope="module")
def verdicts():
    try:
        cute.find_nvcc(), cute.find_cutlass_include()
    except cute.OracleUnavailable as e:
        pytest.skip(f"CuTe oracle unavailable: {e}")
    accepted = translation_unit([p for p in PROBES if p[4]])
    refused = translation_unit([p for p in PROBES if not p[4]])
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(compile_unit, ("accepted", "refused"), (accepted[0], refused[0])))
    return results, refused[1]


def tilemem_accepts(cta_group: int, m: int, n: int, major: str) -> bool:
    in_table = n in legal_mn("f8f6f4", cta_group, major).get(m, ())
    try:
        instr_descriptor("f8f6f4", m, n, E4M3, E4M3, b_major=major, cta_group=cta_group)
    except LayoutError:
        assert not in_table
        return False
    assert in_table
    return True


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: "cg{}-m{}-n{}-{}-{}".format(*p))
def test_tilemem_agrees_with_the_expected_verdict(probe):
    assert tilemem_accepts(*probe[:4]) == probe[4]


def test_cute_compiles_every_accepted_shape(verdicts):
    (accepted, _), _ = verdicts
    assert accepted["ok"], accepted["log"][-3000:]


def test_cute_refuses_every_refused_shape(verdicts):
    (_, refused), lines = verdicts
    assert not refused["ok"]
    log = refused["log"]
    assert "static assertion failed" in log or "static_assert" in log, log[-3000:]
    for line, probe in lines.items():
        assert f".cpp:{line}:" in log, (probe, log[-3000:])
