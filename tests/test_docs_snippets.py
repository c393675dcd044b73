"""Every ```python block of README.md and docs/*.md runs, alone and warning-free.

Convention: a block runs in a fresh namespace with warnings as errors. A block that needs
an optional module or a GPU has ``<!-- requires: NAME[, NAME] -->`` on the line right
before its fence: NAME is an importable module, ``gpu`` (an NVIDIA GPU), ``nvcc`` (nvcc on
PATH) or ``cuda`` (the cuda extra); such a block is skipped, not passed, without it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
REQUIRES = re.compile(r"<!--\s*requires:\s*([\w.,\s-]+?)\s*-->\s*$")


def _blocks(path: Path):
    """(line of the fence, requirements, source) of each python block of ``path``."""
    text = path.read_text()
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        need = REQUIRES.search(before)
        names = [n.strip() for n in need.group(1).split(",") if n.strip()] if need else []
        yield text.count("\n", 0, match.start()) + 1, names, match.group(1)


def _has_gpu() -> bool:
    if importlib.util.find_spec("cuda") is None or shutil.which("nvidia-smi") is None:
        return False
    run = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return run.returncode == 0 and "GPU" in run.stdout


def _missing(name: str) -> bool:
    if name == "gpu":
        return not _has_gpu()
    if name == "nvcc":
        return shutil.which("nvcc") is None
    if name == "cuda":
        return importlib.util.find_spec("cuda.core") is None
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:
        return True


CASES = [
    pytest.param(source, needs, id=f"{path.relative_to(ROOT)}:{line}")
    for path in DOCS
    for line, needs, source in _blocks(path)
]


def test_the_convention_reads_requirements(tmp_path):
    path = tmp_path / "probe.md"
    path.write_text("x\n<!-- requires: triton, gpu -->\n```python\nimport triton\n```\n")
    assert list(_blocks(path)) == [(3, ["triton", "gpu"], "import triton\n")]
    assert _missing("no_such_module_anywhere") and not _missing("numpy")


def test_every_document_has_runnable_blocks():
    # README.md and docs/DESIGN.md teach by example: losing their blocks loses the check
    counted = {p.name: sum(1 for _ in _blocks(p)) for p in DOCS}
    assert counted["README.md"] >= 4 and counted["DESIGN.md"] >= 4, counted


@pytest.mark.parametrize(("source", "needs"), CASES)
def test_snippet_runs(source, needs):
    absent = [name for name in needs if _missing(name)]
    if absent:
        pytest.skip(f"needs {', '.join(absent)}")
    code = compile(source, "<snippet>", "exec")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(code, {"__name__": "__snippet__"})


def test_plan_format_example_is_a_clean_plan(tmp_path):
    """docs/PLAN_FORMAT.md's plan file loads without a warning, its TMEM address slot
    overlaps no buffer, and its threads reach the occupancy and residency checks."""
    text = (ROOT / "docs" / "PLAN_FORMAT.md").read_text()
    block = re.search(r"^```toml\n(.*?)^```", text, re.S | re.M)
    assert block, "docs/PLAN_FORMAT.md lost its plan-file example"
    path = tmp_path / "example.toml"
    path.write_text(block.group(1))
    run = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-c",
            "import sys; from tilemem.cli import main; sys.exit(main(sys.argv[1:]))",
            "plan",
            str(path),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    plan = json.loads(run.stdout)
    smem = plan["pools"][0]
    slot = next(e for e in smem["entries"] if e["name"] == "tmem_addr")
    assert slot["overlaps"] == []
    assert plan["occupancy"]["threads"] == 256


def test_docs_pictures_are_current():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_pictures.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
