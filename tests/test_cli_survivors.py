"""``tilemem verify`` and ``tilemem sim`` pinned where mutation testing found no test that
notices a change: their exit codes and output, with the GPU checks and the simulator run
replaced by stand-ins (the commands' own logic is what is under test), and their options.

Exit codes as the commands document them: 0 when every check passed (verify) or the result
is within tolerance with no hazard (sim), else 1; 2 for a command line argparse refuses.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tilemem import cli, sim_examples
from tilemem import verify as verify_module
from tilemem.cli import build_parser, main
from tilemem.verify import CheckResult


def _result(ok: bool) -> CheckResult:
    return CheckResult(check="tma", params="128B e2 (8, 64)", ok=ok, detail="", seconds=0.5)


def _fake_gpu(monkeypatch, results: list[CheckResult]) -> None:
    monkeypatch.setattr(cli, "_missing_cuda_packages", lambda: [])
    monkeypatch.setattr(cli, "_gpu_name", lambda: "Fake H200")
    monkeypatch.setattr(verify_module, "run_all", lambda quick=False: results)


def test_gpu_name_is_the_device_modules_answer(monkeypatch):
    from tilemem.cuda import device

    monkeypatch.setattr(device, "gpu_name", lambda: "Fake H200")
    assert cli._gpu_name() == "Fake H200"


@pytest.mark.parametrize(
    ("oks", "status"),
    [([True, True], 0), ([True, False], 1), ([False, False], 1), ([], 1)],
)
def test_verify_exits_0_only_when_every_check_passed(monkeypatch, capsys, oks, status):
    # no result at all is no evidence: 1
    results = [_result(ok) for ok in oks]
    _fake_gpu(monkeypatch, results)
    assert main(["verify"]) == status
    assert capsys.readouterr().out == verify_module.format_results(results, "Fake H200") + "\n"


def test_verify_takes_quick():
    assert build_parser().parse_args(["verify", "--quick"]).quick is True
    assert build_parser().parse_args(["verify"]).quick is False


def _fake_run(monkeypatch, within: bool, hazards: list[str]):
    done = SimpleNamespace(
        name="hopper-gemm",
        what="C = A @ B^T",
        shape=(128, 256, 128),
        result=SimpleNamespace(instructions={"wgmma": 3, "tma": 4}, hazards=hazards),
        max_error=0.0,
        within_tolerance=within,
    )
    calls = []

    def run_example(name, seed=0, schedule="random"):
        calls.append((name, seed, schedule))
        return done

    monkeypatch.setattr(sim_examples, "run_example", run_example)
    return calls


@pytest.mark.parametrize(
    ("within", "hazards", "status"),
    [(True, [], 0), (False, [], 1), (True, ["race on A"], 1), (False, ["race on A"], 1)],
)
def test_sim_exit_status_and_report(monkeypatch, capsys, within, hazards, status):
    calls = _fake_run(monkeypatch, within, hazards)
    assert main(["sim", "-e", "hopper-gemm"]) == status
    assert calls == [("hopper-gemm", 0, "random")]  # default seed 0, random schedule
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "simulating hopper-gemm (schedule random, seed 0)..."
    assert out[1].startswith("hopper-gemm: C = A @ B^T, 128 x 256 x 128; 7 warp instructions")
    assert out[2:] == ([f"{len(hazards)} hazard(s)" + (":" if hazards else "")] + hazards)


def test_sim_needs_an_example():
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["sim"])
    assert info.value.code == 2


def test_sim_seed_defaults_to_0():
    assert build_parser().parse_args(["sim", "-e", "hopper-gemm"]).seed == 0


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
def test_a_short_report_into_a_full_device_is_a_one_line_error(tmp_path):
    # emit -o writes the kernel to a file and one short line to standard output, which stays
    # in Python's buffer until tilemem flushes it: the failure must show there (exit 1, one
    # line, ENOSPC's text), not as "Exception ignored" when Python flushes again at exit
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "tilemem.cli", "emit", "-e", "hopper-gemm"]
            + ["-o", str(tmp_path / "k.cu")],
            check=False,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert out.returncode == 1
    assert out.stderr == f"tilemem: cannot write standard output: {os.strerror(errno.ENOSPC)}\n"
