"""``tilemem sim --example NAME``: runs a built-in kernel, compares it with numpy, prints
the hazards."""

from __future__ import annotations

import pytest

from tilemem.cli import main

pytest.importorskip("ml_dtypes")


def test_sim_example_runs_clean(capsys):
    assert main(["sim", "--example", "hopper-gemm", "--schedule", "in-order"]) == 0
    out = capsys.readouterr().out
    assert "128 x 256 x 128" in out and "within the bf16 tolerance" in out
    assert out.rstrip().endswith("0 hazard(s)")


def test_sim_unknown_example(capsys):
    assert main(["sim", "--example", "nope"]) == 2
    assert "choose one of: hopper-gemm" in capsys.readouterr().err
