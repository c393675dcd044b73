"""The plan picture stays linear in the number of buffers (it was quadratic: 20,000 entries
took minutes), and its overlay rows are the first-fit rows of the docstring."""

from __future__ import annotations

import random
import time

from tilemem.plan.model import PlanEntry
from tilemem.plan.svg import MAX_OVERLAY_ROWS, _overlay_rows


def _entry(i: int, offset: int, length: int) -> PlanEntry:
    return PlanEntry(
        name=f"b{i}",
        scope="shared.dyn",
        offset=offset,
        length=length,
        align=1,
        padding=0,
        dtype="uint8",
        shape=(max(length, 1),),
        layout="row-major",
    )


def _first_fit(entries) -> list[int]:
    """The rule written plainly (every placed block checked): the oracle for small inputs."""
    rows: list[list[tuple[int, int]]] = []
    out = []
    for e in entries:
        for n, taken in enumerate(rows):
            if all(e.end <= lo or e.offset >= hi for lo, hi in taken):
                taken.append((e.offset, e.end))
                out.append(n)
                break
        else:
            if len(rows) == MAX_OVERLAY_ROWS:
                out.append(len(rows) - 1)
                continue
            out.append(len(rows))
            rows.append([(e.offset, e.end)])
    return out


def test_overlay_rows_match_the_plain_rule():
    rng = random.Random(18)
    for _ in range(300):
        entries = [
            _entry(i, rng.randrange(0, 64), rng.randrange(0, 24))
            for i in range(rng.randrange(1, 60))
        ]
        assert _overlay_rows(tuple(entries)) == _first_fit(entries)


def test_overlay_rows_by_hand():
    # [0,16) row 0; [8,24) overlaps it: row 1; [16,32) fits row 0 after [0,16); an empty
    # block at 8 lies inside [0,16) (8 > 0 and 8 < 16) but ends where [8,24) starts: row 1;
    # [24,40) meets [16,32) in row 0, fits row 1 after [8,24)
    spans = [(0, 16), (8, 16), (16, 16), (8, 0), (24, 16)]
    entries = tuple(_entry(i, o, n) for i, (o, n) in enumerate(spans))
    assert _overlay_rows(entries) == [0, 1, 0, 1, 1]


def test_twenty_thousand_entries_take_well_under_seconds():
    disjoint = tuple(_entry(i, 16 * i, 16) for i in range(20_000))
    stacked = tuple(_entry(i, 0, 16) for i in range(20_000))  # every one overlaps all others
    start = time.process_time()  # CPU time: a loaded machine does not fail it
    assert _overlay_rows(disjoint) == [0] * 20_000
    rows = _overlay_rows(stacked)
    elapsed = time.process_time() - start
    assert rows[:MAX_OVERLAY_ROWS] == list(range(MAX_OVERLAY_ROWS))
    assert set(rows[MAX_OVERLAY_ROWS:]) == {MAX_OVERLAY_ROWS - 1}
    # the quadratic scan needed ~2 x 10^8 comparisons here (minutes); bisection is ~10^6
    assert elapsed < 5, f"{elapsed:.1f} s"
