"""Conventions of the repository itself: its references resolve inside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
