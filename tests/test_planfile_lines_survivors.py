"""Plan-file error lines that the other tests left open: a dotted ``smem.threads`` on line 1,
a NUL byte or a non-UTF-8 byte on line 2 after an empty line 1, and the threads of a file that
gives none."""

from __future__ import annotations

import pytest

from tilemem.errors import PlanFileError
from tilemem.planfile import load_plan, parse_plan_file


def test_a_dotted_smem_threads_on_line_1_is_named_there():
    # line 1: smem.threads (no [smem] header, no smem = {...}); line 2: the top-level threads
    with pytest.raises(PlanFileError) as info:
        parse_plan_file("smem.threads = 64\nthreads = 128\n", "k.toml")
    assert str(info.value) == (
        "k.toml:2: threads = 128 disagrees with [smem] threads = 64 (line 1); give it once"
    )


def test_a_file_without_threads_has_0_threads():
    text = 'target = "sm_90a"\n[[smem.buffers]]\nname = "a"\nshape = [64]\ndtype = "float32"\n'
    assert parse_plan_file(text, "k.toml").threads == 0


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"\n\0abc\n", "a NUL byte: a binary (or UTF-16) file, not a plan file in UTF-8"),
        (b'\nx = "\xff"\n', "byte 0xff is not UTF-8; plan files are UTF-8 text"),
    ],
    ids=["nul", "not-utf8"],
)
def test_a_bad_byte_after_an_empty_first_line_is_on_line_2(tmp_path, raw, message):
    # the newline that ends line 1 is the file's first byte: it counts
    path = tmp_path / "k.toml"
    path.write_bytes(raw)
    with pytest.raises(PlanFileError) as info:
        load_plan(path)
    assert str(info.value) == f"{path}:2: {message}"
