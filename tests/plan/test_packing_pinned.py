"""Bump placement arithmetic, pinned with hand-computed cases at every boundary.

The rule (docs/DESIGN.md#smem-pools): round the cursor up to the alignment, place the buffer there,
advance by its size; alignments are powers of two (0 = natural alignment).
"""

import pytest

from tilemem.errors import AlignmentError
from tilemem.plan import Placement, align_up, is_power_of_two, place
from tilemem.plan.packing import bump_total, check_align, overlapping_pairs


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, False),
        (1, True),
        (2, True),
        (3, False),
        (6, False),
        (1024, True),
        (-2, False),
        (True, False),  # True == 1, but an alignment of True is a mistake, not 1 byte
        (2.0, False),
    ],
)
def test_is_power_of_two(n, expected):
    assert is_power_of_two(n) is expected


@pytest.mark.parametrize(
    ("value", "align", "expected"),
    [(0, 16, 0), (1, 16, 16), (15, 16, 16), (16, 16, 16), (17, 16, 32), (1023, 1024, 1024)],
)
def test_align_up_rounds_to_the_next_multiple(value, align, expected):
    assert align_up(value, align) == expected


@pytest.mark.parametrize("align", [0, 1, 2, 1024, 1 << 30])
def test_check_align_accepts_zero_and_powers_of_two_up_to_2_30(align):
    assert check_align(align) == align


@pytest.mark.parametrize(
    ("align", "hint"),
    [
        (3, "; use 4"),
        (5, "; use 8"),
        (1000, "; use 1024"),
        ((1 << 29) + 1, "; use 1073741824"),
        (-4, ""),
        ((1 << 30) + 1, ""),
    ],
)
def test_check_align_refuses_other_integers_with_the_next_power(align, hint):
    with pytest.raises(AlignmentError) as exc:
        check_align(align, what="swizzle align")
    message = str(exc.value)
    assert message.startswith(
        f"swizzle align must be a power of two up to 1073741824 (or 0 for natural alignment), "
        f"got {align!r}"
    )
    assert message.endswith(f"got {align!r}{hint}")


def test_check_align_refuses_2_31():
    with pytest.raises(AlignmentError, match="up to 1073741824"):
        check_align(1 << 31)


@pytest.mark.parametrize("align", [True, 2.0, "16", None])
def test_check_align_refuses_non_integers(align):
    with pytest.raises(AlignmentError, match=r"align must be a power of two"):
        check_align(align)


def test_place_pads_the_cursor_up_to_the_alignment():
    spot = place(17, 8, 16)
    assert spot == Placement(offset=32, length=8, align=16, padding=15)
    assert spot.end == 40


def test_place_on_an_aligned_cursor_adds_no_padding():
    assert place(1024, 100, 1024) == Placement(1024, 100, 1024, 0)


def test_place_takes_an_empty_buffer():
    assert place(5, 0, 4) == Placement(8, 0, 4, 3)


@pytest.mark.parametrize("size", [-1, 2.0, True])
def test_place_refuses_sizes_that_are_not_counts(size):
    with pytest.raises(AlignmentError) as exc:
        place(0, size, 16)
    assert str(exc.value).startswith(f"placement size must be an integer >= 0, got {size!r}")


def test_bump_total_counts_high_water_and_padding():
    # 16 B at 0; 8 B aligned to 1024 at 1024 (1008 B padding); 4 B aligned to 4 at 1032
    assert bump_total([(16, 16), (8, 1024), (4, 4)]) == (1036, 1008)


def test_bump_total_starts_at_the_given_cursor():
    # from 100: 8 B aligned to 64 at 128 (28 B padding)
    assert bump_total([(8, 64)], start=100) == (136, 28)
    assert bump_total([], start=100) == (100, 0)


def test_overlapping_pairs_uses_half_open_ranges():
    assert overlapping_pairs([("a", 0, 16), ("b", 16, 32)]) == []
    assert overlapping_pairs([("a", 16, 32), ("b", 0, 16)]) == []
    assert overlapping_pairs([("a", 0, 16), ("b", 15, 32)]) == [("a", "b")]
    assert overlapping_pairs([("a", 16, 32), ("b", 0, 17)]) == [("a", "b")]


def test_overlapping_pairs_ignores_empty_ranges():
    assert overlapping_pairs([("a", 0, 16), ("empty", 8, 8)]) == []
    assert overlapping_pairs([("empty", 8, 8), ("a", 0, 16)]) == []


def test_overlapping_pairs_lists_every_pair_in_order():
    spans = [("a", 0, 64), ("b", 32, 96), ("c", 48, 50), ("d", 96, 128)]
    assert overlapping_pairs(spans) == [("a", "b"), ("a", "c"), ("b", "c")]
