"""The tree is lint-clean: ruff check, ruff format --check and mypy all pass."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["src", "tests", "scripts"]


def _run(*args: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, f"{' '.join(args)} failed:\n{out.stdout}{out.stderr}"


def test_ruff_check():
    _run("ruff", "check", *PATHS)


def test_ruff_format():
    _run("ruff", "format", "--check", *PATHS)


def test_mypy():
    _run("mypy")
