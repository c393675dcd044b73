"""Per-shape medians over several runs of ``benchmarks/gemm.py``: one run of the benchmark can
put a shape a few percent off its usual ratio, so a goal such as "0.95 of cuBLAS on every
shape" is read from the median of each shape over runs.

    python3 benchmarks/gemm_medians.py FILE [FILE ...]

Each FILE holds the output of one or more runs (a raw file of docs/verification/ may hold
several); every table ``benchmarks/gemm.py`` printed is one run of its input type. For each
type: the runs' geometric means and the shapes under 0.95 in each run, then each shape's median
ratio (the policy's ``ratio`` column, cuBLAS time / tilemem time), the lowest medians, how many
are at 0.95 or above, and the geometric mean of the medians. Needs nothing but Python.
"""

from __future__ import annotations

import math
import re
import statistics
import sys

GOAL = 0.95
TABLE_HEAD = re.compile(r"^(\w+): TFLOP/s; errors are ")


def tables(text: str) -> list[tuple[str, dict[str, float]]]:
    """Every table in ``text`` as ``(input type, {shape: the policy's ratio})``, in order."""
    found: list[tuple[str, dict[str, float]]] = []
    dtype, column = None, None
    for line in text.splitlines():
        head = TABLE_HEAD.match(line)
        if head:
            dtype, column = head.group(1), None
            found.append((dtype, {}))
            continue
        if dtype is None or not line.startswith("|"):
            if column is not None and not line.strip():
                dtype, column = None, None  # a blank line ends the table
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "M x N x K":
            if "ratio" not in cells:
                raise SystemExit(f"a {dtype} table without a ratio column: {line!r}")
            column = cells.index("ratio")
        elif column is not None and re.fullmatch(r"\d+x\d+x\d+", cells[0]):
            found[-1][1][cells[0]] = float(cells[column])
    return [(d, rows) for d, rows in found if rows]


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summary(runs: list[dict[str, float]]) -> list[str]:
    """The lines this script prints for the runs of one input type."""
    lines = []
    for i, run in enumerate(runs):
        under = sorted((r, s) for s, r in run.items() if r < GOAL)
        text = ", ".join(f"{s} {r:.3f}" for r, s in under) or "none"
        lines.append(
            f"run {i + 1}: geomean {geomean(run.values()):.3f} over {len(run)} distinct shapes; "
            f"under {GOAL}: {text}"
        )
    shapes = [s for s in runs[0] if all(s in run for run in runs)]
    medians = {s: statistics.median(run[s] for run in runs) for s in shapes}
    lowest = sorted(medians.items(), key=lambda kv: kv[1])[:5]
    lines.append(
        f"medians over {len(runs)} runs: {sum(m >= GOAL for m in medians.values())} of "
        f"{len(medians)} shapes at {GOAL} or above; geomean of the medians "
        f"{geomean(medians.values()):.3f}; lowest " + ", ".join(f"{s} {m:.3f}" for s, m in lowest)
    )
    return lines


def main(paths: list[str]) -> None:
    if not paths:
        raise SystemExit(__doc__)
    by_type: dict[str, list[dict[str, float]]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for dtype, rows in tables(f.read()):
                by_type.setdefault(dtype, []).append(rows)
    if not by_type:
        raise SystemExit(f"no benchmarks/gemm.py table in {paths}")
    for dtype, runs in by_type.items():
        print(f"{dtype}:")
        for line in summary(runs):
            print(f"  {line}")


if __name__ == "__main__":
    main(sys.argv[1:])
