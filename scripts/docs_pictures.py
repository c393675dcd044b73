"""Regenerate the pictures under docs/ from the examples, or check that they are current.

    python scripts/docs_pictures.py            # rewrite every picture
    python scripts/docs_pictures.py --check    # exit 1 naming each stale picture

Each picture is what ``tilemem plan --example NAME --svg FILE`` draws, so the README shows
exactly what a user gets. tests/test_docs_snippets.py runs the check.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PICTURES = {"docs/attention-fwd-plan.svg": "attention-fwd"}  # file -> example


def draw(example: str) -> str:
    """The SVG ``tilemem plan --example`` writes for ``example``, from this checkout's src/."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.svg"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from tilemem.cli import main; sys.exit(main(sys.argv[1:]))",
                "plan",
                "--example",
                example,
                "--svg",
                str(out),
            ],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        return out.read_text()


def stale() -> list[str]:
    """The pictures whose file differs from what the example draws now."""
    return [
        path for path, example in PICTURES.items() if (ROOT / path).read_text() != draw(example)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale pictures")
    args = parser.parse_args()
    if args.check:
        old = stale()
        for path in old:
            print(f"{path} is stale: run python scripts/docs_pictures.py", file=sys.stderr)
        return 1 if old else 0
    for path, example in PICTURES.items():
        (ROOT / path).write_text(draw(example))
        print(f"wrote {path} (tilemem plan --example {example} --svg)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
