"""docs/DESIGN.md#errors: every exception class tilemem raises on purpose lives in tilemem.errors
and derives from TilememError."""

import ast
import inspect
from pathlib import Path

import tilemem.errors as errors

SRC = Path(__file__).resolve().parents[1] / "src" / "tilemem"
# Internal control flow, never seen by a caller.
INTERNAL = {"cli.py: TilememUsage": "caught inside tilemem.cli.main: an exit status, not an error"}


def _exception_classes_outside_errors():
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "errors.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.endswith(("Error", "Exception", "Warning")) for b in bases):
                    yield f"{path.relative_to(SRC)}: {node.name}"


def test_exception_classes_are_defined_only_in_tilemem_errors():
    assert [c for c in _exception_classes_outside_errors() if c not in INTERNAL] == []


def test_every_error_derives_from_tilemem_error():
    classes = [
        c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__
    ]
    exceptions = [c for c in classes if issubclass(c, Exception) and not issubclass(c, Warning)]
    assert len(exceptions) >= 20
    assert all(issubclass(c, errors.TilememError) for c in exceptions)
    assert issubclass(errors.TilememWarning, UserWarning)
