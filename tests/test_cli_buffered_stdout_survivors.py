"""Standard output failures with Python's default buffering.

tests/test_cli.py and tests/test_cli_hostile.py run tilemem with whatever environment the
suite has; with ``PYTHONUNBUFFERED`` set (CI and the mutation runs set it) every print goes
straight to the file descriptor, nothing is left in Python's buffer at exit, and the exit-time
flush that ``_finish`` guards against never fails. A user's shell does not set it: there the
output still buffered when the write fails is flushed again at interpreter exit, which prints
"Exception ignored ... BrokenPipeError" (or OSError) and exits 120 unless tilemem points
standard output at /dev/null first. These tests run tilemem buffered, as a user does.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest


def _buffered_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    return env


def test_a_reader_gone_before_the_first_write_ends_quietly_with_141():
    # 141 = 128 + SIGPIPE, what a shell reports for `cat` in the same place; without the
    # redirection to /dev/null, Python's exit flush reports the broken pipe and exits 120
    proc = subprocess.Popen(
        [sys.executable, "-m", "tilemem.cli", "plan", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_buffered_env(),
    )
    proc.stdout.close()  # type: ignore[union-attr]
    err = proc.stderr.read().decode()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert (proc.wait(timeout=120), err) == (141, "")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["plan", "--json"],  # more than a buffer: the write inside the command fails
        ["emit", "-e", "hopper-gemm", "-o", "{tmp}/k.cu"],  # one short line: only a flush fails
    ],
    ids=["plan-json", "emit-to-file"],
)
def test_a_full_device_is_one_line_and_exit_1(args, tmp_path):
    command = [a.replace("{tmp}", str(tmp_path)) for a in args]
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "tilemem.cli", *command],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            env=_buffered_env(),
            timeout=120,
        )
    # ENOSPC's text, once: not followed by "Exception ignored in: <_io.TextIOWrapper ...>"
    expected = f"tilemem: cannot write standard output: {os.strerror(errno.ENOSPC)}\n"
    assert (out.returncode, out.stderr) == (1, expected)
