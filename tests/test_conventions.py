"""Conventions: references resolve inside the repository; the package is typed; objects
have readable reprs and display as pictures in Jupyter."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import tilemem
from tilemem.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["src", "tests", "docs", "README.md", "scripts", "benchmarks", "examples"]
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt"}
# Documents that live outside the repository: a reader of the package never sees them.
FORBIDDEN = ["SPEC section", "SPEC.md", "HARDWARE.md", "../shared", "/work/shared"]
DOC_REF = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.md)(?:#([a-z0-9-]+))?")


def _files():
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from (
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in TEXT_SUFFIXES and p.is_file() and "verification" not in p.parts
            )


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    return {
        _anchor(line.lstrip("#"))
        for line in doc.read_text().splitlines()
        if re.match(r"#{1,6} ", line)
    }


def test_anchor_rule_matches_github():
    # by hand from GitHub's rule: "Capacity and residency" -> "capacity-and-residency",
    # "wgmma shared-memory descriptor" keeps its hyphen, "TMA (bulk copies)" drops parentheses
    assert _anchor(" Capacity and residency") == "capacity-and-residency"
    assert _anchor("wgmma shared-memory descriptor") == "wgmma-shared-memory-descriptor"
    assert _anchor("TMA (bulk copies)") == "tma-bulk-copies"


def test_no_reference_points_outside_the_repository():
    this = Path(__file__).resolve()
    found = []
    for path in _files():
        if path.resolve() == this:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found += [
                f"{path.relative_to(ROOT)}:{number}: {word}" for word in FORBIDDEN if word in line
            ]
    assert not found, "references to documents outside the repository:\n" + "\n".join(found)


def test_every_docs_reference_resolves():
    missing = []
    for path in _files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in DOC_REF.finditer(line):
                doc = ROOT / "docs" / match.group(1)
                where = f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
                if not doc.is_file():
                    missing.append(where + " (no such file)")
                elif match.group(2) and match.group(2) not in _anchors(doc):
                    missing.append(where + " (no such heading)")
    assert not missing, "unresolved references:\n" + "\n".join(missing)


@pytest.mark.parametrize("doc", ["DESIGN.md", "HARDWARE-RULES.md", "SIMULATOR.md", "INTEROP.md"])
def test_design_documents_exist(doc):
    assert (ROOT / "docs" / doc).stat().st_size > 200, f"docs/{doc} is missing or empty"


# -- Python conventions: typed package, reprs, rich display ---------------------------------


def _copy_for_build(dest: Path) -> Path:
    for name in ["pyproject.toml", "README.md", "LICENSE"]:
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "src", dest / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_the_wheel_ships_py_typed(tmp_path):
    # PEP 561: a type checker reads an installed package's annotations only with py.typed
    (tmp_path / "tree").mkdir()
    source = _copy_for_build(tmp_path / "tree")
    print(f"building a wheel of {source} (pip wheel; it fetches setuptools once)", file=sys.stderr)
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if run.returncode != 0 and "No matching distribution" in run.stderr:
        pytest.skip("pip cannot fetch the build backend here (offline)")
    assert run.returncode == 0, run.stderr[-2000:]
    (wheel,) = tmp_path.glob("tilemem-*.whl")
    assert "tilemem/py.typed" in zipfile.ZipFile(wheel).namelist()


def _committed_pools():
    smem = tilemem.SMEMPool(target="sm_100a", threads=256)
    smem.alloc_mma((4, 128, 64), "bfloat16", name="A")
    smem.alloc_mma((4, 256, 64), "bfloat16", name="B")
    smem.alloc((4,), "uint64", name="full_bar")
    tmem = tilemem.TMEMPool(smem, 512)
    tmem.alloc((128, 512), "float32", datapath="D", name="acc")
    smem.commit()
    tmem.commit()
    return smem, tmem


def test_pool_reprs_name_target_size_and_buffers():
    smem, tmem = _committed_pools()
    # A 65,536 + B 131,072 + full_bar 32 + slot 4 (4-aligned at 196,640) = 196,644 bytes
    assert repr(smem) == "<SMEMPool 'smem' sm_100a: committed 196,644 bytes, 4 buffers>"
    assert repr(tmem) == "<TMEMPool 'tmem' sm_100a: committed 512 columns, 1 buffer>"
    fresh = tilemem.SMEMPool()
    fresh.alloc((10,), "float32")
    assert repr(fresh) == "<SMEMPool 'smem' no target: uncommitted, 40 bytes so far, 1 buffer>"


def test_memory_plan_repr_is_one_short_line_and_str_is_the_report():
    smem, _ = _committed_pools()
    plan = smem.plan().with_threads(256)
    assert repr(plan) == (
        "<MemoryPlan sm_100a, 256 threads: smem 196,644 bytes, 4 buffers; "
        "tmem 512 columns, 1 buffer>"
    )
    assert str(plan) == plan.format() and "full_bar" in str(plan)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_plan_reprs_stay_short(name):
    example = EXAMPLES[name]
    plan = example.build().plan().with_threads(example.threads)
    assert len(repr(plan)) <= 120 and "\n" not in repr(plan), repr(plan)


def test_occupancy_reads_as_a_sentence():
    smem = tilemem.SMEMPool(target="sm_90a")
    smem.alloc_mma((4, 128, 64), "bfloat16")
    smem.commit()
    # 65,536 B per CTA: floor(233,472 / (65,536 + 1,024)) = 3; threads 2,048 // 384 = 5;
    # 32 block slots on sm_90a
    assert str(smem.plan().occupancy(threads=384)) == (
        "3 CTAs per SM on sm_90a with 384 threads each, bound by shared memory "
        "(shared memory allows 3, threads 5, block slots 32)."
    )
    _, tmem = _committed_pools()
    # 196,644 B: floor(233,472 / 197,668) = 1 CTA, 512 columns of 512
    assert str(tmem.smem_pool.plan().occupancy(threads=256)).endswith(
        "; 512 TMEM columns each, 512 in all, fit the 512 of an SM."
    )


def _svg_blocks(svg: str) -> dict[str, ET.Element]:
    """SMEM blocks (data-offset) and TMEM blocks (data-col-offset) by buffer name."""
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    return {
        el.get("data-name"): el
        for el in root.iter()
        if el.get("data-offset") is not None or el.get("data-col-offset") is not None
    }


def test_plan_and_pools_display_as_their_picture():
    smem, tmem = _committed_pools()
    plan = smem.plan()
    for obj in (plan, smem, tmem):
        blocks = _svg_blocks(obj._repr_svg_())
        assert set(blocks) >= {"A", "B", "full_bar", "acc"}
        # the picture carries the plan's numbers: B starts after A's 4 x 128 x 64 x 2 bytes
        assert blocks["B"].get("data-offset") == "65536"
        assert blocks["acc"].get("data-cols") == "512"
        assert blocks["acc"].get("data-lanes") == "0-128"  # data path D: row r on lane r
        html = obj._repr_html_()
        assert html.startswith("<div><svg") and "<pre>" in html and "&lt;" not in html[:200]


# -- GPU-side scripts say what they need and where they write ---------------------------------


def _without_torch(tmp_path: Path) -> dict[str, str]:
    """An environment where `import torch` fails, whatever this machine has installed."""
    blocker = tmp_path / "blocked" / "torch"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('torch is blocked for this test')\n")
    return {**os.environ, "PYTHONPATH": f"{blocker.parent}{os.pathsep}{ROOT / 'src'}"}


def test_bench_extra_names_torch():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "torch" in extras["bench"]


def test_gemm_benchmark_without_torch_says_how_to_get_it(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gemm.py")],
        capture_output=True,
        text=True,
        check=False,
        env=_without_torch(tmp_path),
        timeout=120,
    )
    assert run.returncode == 1
    assert "needs torch" in run.stderr and "pip install -e '.[bench]'" in run.stderr


def test_gpu_check_says_where_it_writes_and_what_it_needs(tmp_path):
    out = tmp_path / "results"
    run = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
        env={**_without_torch(tmp_path), "OUT": str(out)},
    )
    assert f"gpu_check: writing results to {out}" in run.stdout
    assert run.returncode == 2 and "pip install -e '.[bench]'" in run.stderr
    assert out.is_dir()


# -- long steps speak -----------------------------------------------------------------------


def test_the_cute_oracle_build_says_what_where_and_how_long(tmp_path, monkeypatch):
    from oracle import cute

    said: list[str] = []
    include = tmp_path / "include"
    (include / "cutlass").mkdir(parents=True)
    (include / "cutlass" / "version.h").write_text("#define CUTLASS_MAJOR 4\n")

    def fake_run(cmd, **kwargs):  # nvcc stands in: writes the file after -o
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"\x7fELF")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(cute, "SAY", said.append)
    monkeypatch.setattr(cute, "find_nvcc", lambda: "/opt/nvcc")
    monkeypatch.setattr(cute, "find_cutlass_include", lambda: include)
    monkeypatch.setattr(cute, "_cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(cute.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(cute.subprocess, "run", fake_run)
    exe = cute.build()
    assert exe.parent == tmp_path / "cache" and exe.is_file()
    assert len(said) == 2
    assert said[0].startswith("CuTe oracle: building cute_oracle.cpp")
    assert str(include) in said[0] and "/opt/nvcc" in said[0] and str(exe.parent) in said[0]
    assert re.fullmatch(rf"CuTe oracle: built in \d+ s, cached at {re.escape(str(exe))}", said[1])
    assert cute.build() == exe and len(said) == 2  # reported once per process
    cute._ANNOUNCED.discard(exe)
    cute.build()
    assert said[2] == f"CuTe oracle: using the cached build {exe}"


MD_LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)")


def test_markdown_links_resolve():
    """Links of README.md and docs/*.md point at files (and headings) that exist."""
    missing = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for match in MD_LINK.finditer(line):
                target, anchor = match.group(1), match.group(2)
                if target.startswith(("http://", "https://", "mailto:")):
                    continue
                path = (doc.parent / target) if target else doc
                where = f"{doc.relative_to(ROOT)}:{number}: {match.group(0)}"
                if not path.exists():
                    missing.append(where + " (no such file)")
                elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                    missing.append(where + " (no such heading)")
    assert not missing, "unresolved links:\n" + "\n".join(missing)
