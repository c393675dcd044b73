"""The GEMM's machine code, read from ptxas's output (NVRTC's cubin, disassembled by the
nvdisasm the triton wheel carries): the consumer's wgmmas take descriptors computed in uniform
registers, with no ``R2UR`` (a move from vector to uniform registers) between one wgmma
(``HGMMA``, ``QGMMA`` for fp8) and the next or between the first barrier wait and the first.

The property comes from two choices in :mod:`tilemem.gemm.hopper` that the kernel source alone
does not show to matter: the warpgroup index passes through ``__shfl_sync`` (warp-uniform to
ptxas) and a CTA alone frees a stage from thread 0 rather than from an ``elect.sync`` branch.
Built without them (benchmarks/gemm_uniform.py's ``building_as_before``), the same kernels
carry the moves; that build is checked too, so these tests can fail. On the H200 the change
measured 1.5% (bf16) and 1.9% (fp8) faster over the benchmark's 65 shapes each, up to 11%
(docs/PERFORMANCE.md, "A uniform warpgroup index")."""

from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import re
import subprocess

import pytest

from tilemem.gemm import hopper

pytestmark = pytest.mark.nvrtc

VARIANTS = {
    "bf16 128x256 alone": dict(dtype="bfloat16"),
    "bf16 128x96 2x1 clusters": dict(dtype="bfloat16", tile_n=96, cluster_m=2),
    "bf16 128x128 split-K": dict(dtype="bfloat16", tile_n=128, split_k=True),
    "bf16 64x64 stream-K": dict(dtype="bfloat16", tile_n=64, a_rows=64, stream_k=True),
    "fp8 128x128 promoted every 2": dict(
        dtype="float8_e4m3fn", tile_n=128, promote=True, promote_every=2
    ),
    "fp8 16-row A stream-K promoted": dict(
        dtype="float8_e4m3fn", tile_n=64, a_rows=16, stream_k=True, promote=True, promote_every=2
    ),
}


def _nvdisasm() -> pathlib.Path:
    spec = importlib.util.find_spec("triton")
    if spec is None or spec.origin is None:
        pytest.skip("needs the triton wheel (the test extra), which carries nvdisasm")
    tool = pathlib.Path(spec.origin).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    if not tool.exists():
        pytest.skip(f"no nvdisasm at {tool}")
    return tool


def _instructions(program, tmp_path) -> list[str]:
    cubin = tmp_path / f"{program.ir.name}.cubin"
    cubin.write_bytes(program.compile())
    text = subprocess.run(
        [str(_nvdisasm()), "-c", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    return [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", text)]


def moves_before_wgmmas(instructions: list[str]) -> list[int]:
    """For each wgmma (``HGMMA`` for bf16, ``QGMMA`` for fp8), the R2URs since the previous
    one (the first: since the first barrier wait)."""
    counts: list[int] = []
    since = None
    for ins in instructions:
        words = ins.split()
        op = words[1] if words[0].startswith("@") else words[0]
        if op.startswith(("HGMMA", "QGMMA")):
            counts.append(since or 0)
            since = 0
        elif op.startswith("SYNCS.PHASECHK") and since is None:
            since = 0
        elif op == "R2UR" and since is not None:
            since += 1
    return counts


@contextlib.contextmanager
def _built_as_before(monkeypatch):
    """benchmarks/gemm_uniform.py's rebuild of the earlier kernels (its building_as_before)."""
    from test_gemm_host_fake import _load_benchmark

    with _load_benchmark(monkeypatch, "gemm_uniform").building_as_before():
        yield


@pytest.mark.parametrize("name", list(VARIANTS))
def test_no_move_to_uniform_registers_between_wgmmas(name, tmp_path):
    program = hopper.hopper_gemm_persistent(**VARIANTS[name])
    counts = moves_before_wgmmas(_instructions(program, tmp_path))
    assert len(counts) >= 4  # one K tile: four wgmmas of 32 bytes of K
    assert sum(counts) == 0, f"R2URs before each HGMMA: {counts}"


@pytest.mark.parametrize(
    "name", ["bf16 128x256 alone", "bf16 128x96 2x1 clusters", "fp8 128x128 promoted every 2"]
)
def test_the_earlier_build_moved_descriptors_before_every_wgmma(name, tmp_path, monkeypatch):
    """The same kernels with the warpgroup index straight from threadIdx and (alone) the
    elect.sync release: ptxas computed the descriptors in vector registers."""
    with _built_as_before(monkeypatch):
        program = hopper.hopper_gemm_persistent(**VARIANTS[name])
    counts = moves_before_wgmmas(_instructions(program, tmp_path))
    assert counts and min(counts) >= 1, f"R2URs before each HGMMA: {counts}"


def test_the_move_count_reads_a_listing():
    listing = [
        "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8+0x37000], R5",
        "R2UR UR16, R4",
        "@!P0 R2UR UR17, R5",
        "HGMMA.64x96x16.F32.BF16 R24, gdesc[UR16], R24, UP0",
        "UIADD3 UR9, UR5, 0x100, URZ",
        "QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24",
        "R2UR UR18, R4",
        "HGMMA.64x96x16.F32.BF16 R24, gdesc[UR16], R24, gsb0",
    ]
    assert moves_before_wgmmas(listing) == [2, 0, 1]
