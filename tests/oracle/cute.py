"""CUTLASS/CuTe as an oracle for MMA descriptors (a test dependency only).

``cute_oracle.cpp`` is compiled once as host C++ (``nvcc -x c++ -std=c++17``,
g++ as host compiler) against the headers of the ``nvidia-cutlass`` wheel, into
a cache directory keyed by a hash of its source, the headers' version and the
compiler. ``CuteOracle.run`` sends every query in one process call.

The first build takes minutes, so it speaks: what it builds, where the cache lives, and how
long it took, through ``SAY`` (stderr by default; ``tests/conftest.py`` points it at pytest's
terminal so the lines show even under ``-q`` and output capture).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SOURCE = Path(__file__).with_name("cute_oracle.cpp")

# (strided extent, contiguous bytes) of the tiles the oracle is compiled for
SMEM_SHAPES = ((64, 128), (64, 512), (128, 128), (128, 256), (256, 128))
STAGES = 3


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


SAY: Callable[[str], None] = _stderr  # how build() reports progress
_ANNOUNCED: set[Path] = set()  # cached binaries already reported in this process


class OracleUnavailable(Exception):
    """nvcc or the CUTLASS headers are missing: the oracle tests skip with this reason."""


def find_nvcc() -> str:
    """The system's nvcc, else the one of the pip wheel ``nvidia-cuda-nvcc``."""
    candidates = [shutil.which("nvcc"), "/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc"]
    site = Path(sysconfig.get_paths()["purelib"])
    candidates += [str(p) for p in sorted(site.glob("nvidia/cu*/bin/nvcc"))]
    candidates += [str(site / "nvidia" / "cuda_nvcc" / "bin" / "nvcc")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise OracleUnavailable("no nvcc (install CUDA 13 or pip install nvidia-cuda-nvcc)")


def find_cutlass_include() -> Path:
    try:
        import cutlass_library
    except ImportError as e:
        raise OracleUnavailable("the nvidia-cutlass wheel is not installed (test extra)") from e
    include = Path(cutlass_library.__file__).parent / "source" / "include"
    if not (include / "cute" / "arch" / "mma_sm100_desc.hpp").is_file():
        raise OracleUnavailable(f"no CuTe headers under {include}")
    return include


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "tilemem" / "cute-oracle"


@contextlib.contextmanager
def build_lock(folder: Path, name: str = "build") -> Iterator[None]:
    """Hold the lock ``name`` of ``folder``: one build of a thing at a time across processes
    (pytest-xdist workers, two test runs), so a second asker waits for the result instead of
    compiling it again. Inside the lock no build is running, so temporary folders left by a
    killed build are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{name}.lock", "w") as handle:
        try:
            import fcntl
        except ImportError:  # not POSIX: no other process to wait for in practice
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            for stale in folder.glob("tmp*"):
                shutil.rmtree(stale, ignore_errors=True)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def exe_path() -> Path:
    """Where the binary of this source, these headers and this compiler is cached."""
    nvcc, include = find_nvcc(), find_cutlass_include()
    if shutil.which("g++") is None:
        raise OracleUnavailable("no g++ (nvcc's host compiler for the oracle)")
    version = (include / "cutlass" / "version.h").read_bytes()
    key = hashlib.sha256(SOURCE.read_bytes() + version + nvcc.encode()).hexdigest()[:16]
    return _cache_dir() / f"cute_oracle-{key}"


def build() -> Path:
    """Compile the oracle (or reuse the cached binary); returns its path."""
    exe = exe_path()
    if exe.is_file():
        if exe not in _ANNOUNCED:
            _ANNOUNCED.add(exe)
            SAY(f"CuTe oracle: using the cached build {exe}")
        return exe
    asked = time.monotonic()
    with build_lock(exe.parent):
        if exe.is_file():  # another process built it while this one waited for the lock
            SAY(f"CuTe oracle: waited {time.monotonic() - asked:.0f} s for the build of {exe}")
        else:
            _compile(exe)
    _ANNOUNCED.add(exe)
    return exe


def _compile(exe: Path) -> None:
    nvcc, include = find_nvcc(), find_cutlass_include()
    SAY(
        f"CuTe oracle: building {SOURCE.name} against the CUTLASS headers in {include} with "
        f"{nvcc} (two parts in parallel; several minutes on 2 cores, once) into {exe.parent}"
    )
    start = time.monotonic()
    with tempfile.TemporaryDirectory(dir=exe.parent) as tmp:
        objs = [Path(tmp) / f"part{p}.o" for p in (0, 1)]
        base = [nvcc, "-x", "c++", "-std=c++17", "-ccbin", "g++", f"-I{include}", "-O0", "-w"]

        def compile_part(part: int) -> subprocess.CompletedProcess:
            cmd = [*base, f"-DORACLE_PART={part}", "-c", str(SOURCE), "-o", str(objs[part])]
            return subprocess.run(cmd, check=False, capture_output=True, text=True)

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(compile_part, (0, 1)))
        for r in results:
            if r.returncode:
                raise RuntimeError(f"building the CuTe oracle failed:\n{r.stderr[-4000:]}")
        linked = Path(tmp) / "oracle"
        r = subprocess.run(
            [nvcc, "-ccbin", "g++", *map(str, objs), "-o", str(linked)],
            check=False,
            capture_output=True,
            text=True,
        )
        if r.returncode:
            raise RuntimeError(f"linking the CuTe oracle failed:\n{r.stderr[-4000:]}")
        os.replace(linked, exe)  # atomic: a reader never finds half a binary
    SAY(f"CuTe oracle: built in {time.monotonic() - start:.0f} s, cached at {exe}")


def run_lines(exe: Path, queries: list[str]) -> list[str]:
    """The oracle's answer lines to ``queries`` (one process for all of them)."""
    out = subprocess.run(
        [str(exe)], input="\n".join(queries) + "\n", capture_output=True, text=True, check=True
    ).stdout.splitlines()
    if len(out) != len(queries):
        raise RuntimeError(f"oracle answered {len(out)} of {len(queries)} queries")
    bad = [line for line in out if line.startswith("error")]
    if bad:
        raise RuntimeError(f"oracle rejected {len(bad)} queries, first: {bad[0]}")
    return out


def run(exe: Path, queries: list[str]) -> list[int]:
    """Answers to ``queries``, one hex value each."""
    return [int(line, 16) for line in run_lines(exe, queries)]


if __name__ == "__main__":
    # python tests/oracle/cute.py 'smem 90 K 3 16 0 64 128 0 0 0 0'   (answers)
    # python tests/oracle/cute.py --build                              (build only)
    exe = build()
    if sys.argv[1:] != ["--build"]:
        print("\n".join(f"{v:#018x}" for v in run(exe, sys.argv[1:])))
