"""Hostile command lines: outputs onto devices, FIFOs, links, the input itself, empty names, a
closed or full standard output, mistyped commands. Each is one line on standard error and a
nonzero status, or does exactly what was asked. Most run in-process (``cli.main``); the few
that need a real process (closed/full standard output, ``python -m tilemem``) run one each."""

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tilemem import __version__
from tilemem.cli import main
from tilemem.kernels import KERNELS

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
HOPPER = EXAMPLES_DIR / "hopper-gemm.toml"


def one_line_error(capsys, status, argv, expected_status):
    assert status == expected_status
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("tilemem: ")
    return captured.err.rstrip("\n")


# -- outputs that are not regular files are written through ----------------------------------


# /dev/zero discards what is written to it, like /dev/null, and no other program's tests write
# over it (a shared machine's /dev/null may have been replaced by an older tilemem already)
DEVICE = "/dev/zero"


def _is_device(path: str) -> bool:
    return os.path.exists(path) and stat.S_ISCHR(os.stat(path).st_mode)


@pytest.mark.parametrize("device", [DEVICE, os.devnull])
def test_output_onto_a_character_device_keeps_the_device(capsys, device):
    if not _is_device(device):
        pytest.skip(f"{device} is not a character device on this machine")
    assert main(["plan", "-o", device]) == 0
    assert _is_device(device)
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("option", ["-o", "--header", "--svg"])
def test_every_output_onto_a_fifo_is_written_through(tmp_path, option):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    argv = ["plan", "-e", "blackwell-gemm", option, str(fifo)]
    status = main(argv if option == "-o" else [*argv, "-o", DEVICE])
    reader.join(timeout=30)
    assert status == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not a regular file
    first = {"-o": "blackwell-gemm: ", "--header": "// Memory plan", "--svg": "<?xml"}[option]
    assert got and got[0].startswith(first)


def test_output_through_a_symlink_keeps_the_link(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target.name)
    assert main(["plan", "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert target.read_text().startswith("hopper-gemm: ")


def test_output_through_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to("made.json")
    assert main(["plan", "--json", "-o", str(link)]) == 0
    assert link.is_symlink()
    assert json.loads((tmp_path / "made.json").read_text())["example"] == "hopper-gemm"


def test_symlink_to_a_device_is_written_through(tmp_path):
    link = tmp_path / "sink"
    link.symlink_to(DEVICE)
    assert main(["plan", "-o", str(link)]) == 0
    assert link.is_symlink() and _is_device(DEVICE)


def test_two_outputs_to_one_device_are_fine(capsys):
    assert main(["plan", "--svg", DEVICE, "--header", DEVICE, "-o", DEVICE]) == 0
    assert capsys.readouterr() == ("", "")


# -- outputs that would destroy the input or each other --------------------------------------


@pytest.mark.parametrize("option", ["-o", "--header", "--svg"])
@pytest.mark.parametrize("form", ["same", "relative", "link", "dotted"])
def test_output_naming_the_input_plan_is_refused(tmp_path, capsys, monkeypatch, option, form):
    plan = tmp_path / "k.toml"
    plan.write_text(HOPPER.read_text())
    monkeypatch.chdir(tmp_path)
    out = {
        "same": str(plan),
        "relative": "k.toml",
        "dotted": "./sub/../k.toml",
        "link": "alias.toml",
    }[form]
    (tmp_path / "sub").mkdir()
    (tmp_path / "alias.toml").symlink_to("k.toml")
    argv = ["plan", str(plan), option, out]
    err = one_line_error(capsys, main(argv), argv, 2)
    assert err == f"tilemem: {option} {out} would overwrite the input plan; write elsewhere"
    assert plan.read_text() == HOPPER.read_text()


def test_json_output_naming_the_json_input_is_refused(tmp_path, capsys):
    saved = tmp_path / "p.json"
    assert main(["plan", "--json", "-o", str(saved)]) == 0
    before = saved.read_text()
    argv = ["plan", str(saved), "--json", "-o", str(saved)]
    err = one_line_error(capsys, main(argv), argv, 2)
    assert "would overwrite the input plan" in err and saved.read_text() == before


@pytest.mark.parametrize(
    "first,second",
    [("-o", "--header"), ("-o", "--svg"), ("--header", "--svg")],
)
def test_two_outputs_to_one_file_are_refused(tmp_path, capsys, first, second):
    target = tmp_path / "X"
    argv = ["plan", second, str(target), first, str(target)]
    if "-o" not in argv:
        argv += ["-o", DEVICE]
    err = one_line_error(capsys, main(argv), argv, 2)
    order = [flag for flag in ("-o", "--header", "--svg") if flag in (first, second)]
    assert err == f"tilemem: {order[0]} and {order[1]} both write {target}; give two files"
    assert not target.exists()


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["plan", "--svg", ""], "tilemem: --svg needs a file name, got ''"),
        (["plan", "--header", ""], "tilemem: --header needs a file name, got ''"),
        (["plan", "-o", ""], "tilemem: -o needs a file name, got ''"),
        (["plan", "--json", "--output="], "tilemem: -o needs a file name, got ''"),
        (["emit", "-e", "hopper-gemm", "-o", ""], "tilemem: -o needs a file name, got ''"),
        (["plan", ""], "tilemem: the plan file name is empty"),
        (
            ["plan", "--example", ""],
            "tilemem: unknown example ''; choose one of: hopper-gemm, hopper-gemm-persistent, "
            "blackwell-gemm, nvfp4-gemm, attention-fwd",
        ),
        (
            ["emit", "--example", ""],
            "tilemem: unknown example ''; choose one of: hopper-gemm, hopper-gemm-persistent, "
            "blackwell-gemm, nvfp4-gemm, attention-fwd",
        ),
        (["emit"], "tilemem: give a plan file, --example NAME or --list"),
        (
            ["emit", str(HOPPER), "-e", "hopper-gemm"],
            "tilemem: give a plan file or --example, not both",
        ),
        (
            ["emit", str(HOPPER), "--ir"],
            "tilemem: --ir needs a kernel (--example); a plan file has no IR",
        ),
        (
            ["plan", str(HOPPER), "-e", "hopper-gemm"],
            "tilemem: give a plan file or --example, not both",
        ),
    ],
)
def test_empty_or_conflicting_names_are_usage_errors(capsys, argv, expected):
    err = one_line_error(capsys, main(argv), argv, 2)
    assert err == expected


# -- mistyped commands ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "word,meant",
    [("emti", "emit"), ("emt", "emit"), ("pln", "plan"), ("plna", "plan"), ("verfy", "verify")],
)
def test_mistyped_command_says_which_was_meant(capsys, word, meant):
    argv = [word, "-e", "hopper-gemm"]
    err = one_line_error(capsys, main(argv), argv, 2)
    assert err == (
        f"tilemem: unknown command {word!r}; did you mean {meant!r}? (commands: emit, plan, verify)"
    )


def test_a_file_named_like_a_command_typo_is_still_a_plan_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("emti").write_text(HOPPER.read_text())
    assert main(["emti"]) == 0
    assert capsys.readouterr().out.startswith("hopper-gemm: ")


def test_an_unknown_word_far_from_any_command_is_read_as_a_plan_file(capsys):
    argv = ["xyzzy"]
    err = one_line_error(capsys, main(argv), argv, 1)
    assert err == "tilemem: cannot read plan file xyzzy: No such file or directory"


# -- emit: --list and plan files like plan -------------------------------------------------


def test_emit_list_names_every_kernel(capsys):
    assert main(["emit", "--list"]) == 0
    assert capsys.readouterr().out.split() == [
        "hopper-gemm",
        "hopper-gemm-persistent",
        "blackwell-gemm",
        "nvfp4-gemm",
        "attention-fwd",
    ]
    assert list(KERNELS) == ["hopper-gemm", "hopper-gemm-persistent", "blackwell-gemm",
                             "nvfp4-gemm", "attention-fwd"]  # fmt: skip


@pytest.mark.parametrize("name", ["hopper-gemm", "blackwell-gemm", "attention-fwd", "nvfp4-gemm"])
def test_emit_of_a_plan_file_is_the_header_plan_writes(tmp_path, capsys, name):
    path = EXAMPLES_DIR / f"{name}.toml"
    assert main(["plan", str(path), "--header", str(tmp_path / "p.h"), "-o", DEVICE]) == 0
    assert main(["emit", str(path)]) == 0
    header = capsys.readouterr().out
    assert header == (tmp_path / "p.h").read_text()
    assert f"namespace {name.replace('-', '_')} {{" in header


def test_emit_of_a_json_plan_is_the_same_header(tmp_path, capsys):
    saved = tmp_path / "nvfp4-gemm.json"
    assert main(["plan", "-e", "nvfp4-gemm", "--json", "-o", str(saved)]) == 0
    assert main(["emit", str(EXAMPLES_DIR / "nvfp4-gemm.toml"), "-o", str(tmp_path / "a.h")]) == 0
    assert main(["emit", str(saved), "-o", str(tmp_path / "b.h")]) == 0
    assert (tmp_path / "a.h").read_text() == (tmp_path / "b.h").read_text()


def test_emit_of_a_bad_plan_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('target = "sm_100a"\n[[tmem]]\ntotal_cols = 2.0\n')
    argv = ["emit", str(bad)]
    err = one_line_error(capsys, main(argv), argv, 1)
    assert err == f"tilemem: {bad}:3: [[tmem]] #1: total_cols = 2.0 is a float; write 2"


# -- bad plan files through the CLI: one line each, status 1 ---------------------------------

BAD_FILES = [
    ("tmem = [1]\n", "1: top level: tmem must be [[tmem]] tables"),
    ("[smem]\nbuffers = 5\n", "2: [smem]: buffers must be [[smem.buffers]] tables"),
    ("[smem.buffers]\nname = 'A'\n", "1: [smem.buffers] is one table; write [[smem.buffers]]"),
    ("threads = 0\n", "1: threads = 0: threads per CTA must be in [1, 1024]"),
    ("threads = 1.5\n", "1: threads must be an integer, got float 1.5"),
    (
        "[[smem.buffers]]\nname = 'A'\ndtype = 'uint64'\n",
        "1: [[smem.buffers]] #1 'A': needs the key 'shape'",
    ),
    (
        "[[smem.buffers]]\nname = 'A'\nshap = [4]\n",
        "3: [[smem.buffers]] #1: unknown key 'shap'; did you mean 'shape'?",
    ),
    ("[smem\n", "1: not valid TOML"),
    ("name = 'x'\nname = 'y'\n", "2: not valid TOML"),
]


@pytest.mark.parametrize("text,expected", BAD_FILES)
def test_bad_plan_file_is_one_line_with_file_and_line(tmp_path, capsys, text, expected):
    path = tmp_path / "k.toml"
    path.write_text(text)
    argv = ["plan", str(path)]
    err = one_line_error(capsys, main(argv), argv, 1)
    assert err.startswith(f"tilemem: {path}:{expected}")


def test_binary_plan_file_through_the_cli(tmp_path, capsys):
    path = tmp_path / "k.toml"
    path.write_text("target = 'sm_90a'\n", encoding="utf-16")
    argv = [str(path)]
    err = one_line_error(capsys, main(argv), argv, 1)
    assert (
        err == f"tilemem: {path}:1: the file is UTF-16 text; plan files are UTF-8: save it as UTF-8"
    )


# -- standard output closed or full ----------------------------------------------------------


def test_closed_stdout_in_process(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", None)
    argv = ["plan"]
    err = one_line_error(capsys, main(argv), argv, 2)
    assert err == "tilemem: standard output is closed; give -o FILE to write to a file"


def test_closed_stdout_with_an_output_file_is_fine(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["emit", "-e", "hopper-gemm", "-o", str(tmp_path / "k.cu")]) == 0
    assert "__global__" in (tmp_path / "k.cu").read_text()


def _tilemem(*args):
    return subprocess.run(
        [sys.executable, "-m", "tilemem", *args], capture_output=True, text=True, check=False
    )


def test_closed_stdout_in_a_real_process():
    out = subprocess.run(
        ["sh", "-c", f"exec '{sys.executable}' -m tilemem plan >&-"],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr == "tilemem: standard output is closed; give -o FILE to write to a file\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["plan", "--json"], ["emit", "-e", "hopper-gemm"]])
def test_full_stdout_is_one_line(args):
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "tilemem", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert out.returncode == 1
    assert out.stderr == "tilemem: cannot write standard output: No space left on device\n"


def test_python_dash_m_tilemem_is_tilemem():
    version = _tilemem("--version")
    assert (version.returncode, version.stdout) == (0, f"tilemem {__version__}\n")
    listing = _tilemem("plan", "--list")
    assert listing.returncode == 0 and listing.stdout.split("\n")[0].startswith("hopper-gemm ")


def test_bad_plan_files_in_real_processes(tmp_path):
    """A few of the bad files above through `python -m tilemem`, in one shell: each a
    one-line message on standard error with file and line, status 1, no traceback."""
    files = []
    for n, (text, expected) in enumerate(BAD_FILES[:6]):
        path = tmp_path / f"bad{n}.toml"
        path.write_text(text)
        files.append((path, expected))
    script = "".join(
        f"'{sys.executable}' -m tilemem plan '{path}' 2>'{path}.err' >/dev/zero; echo $?\n"
        for path, _ in files
    )
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    assert out.stdout.split() == ["1"] * len(files)
    for path, expected in files:
        err = Path(f"{path}.err").read_text()
        assert err.startswith(f"tilemem: {path}:{expected}") and err.count("\n") == 1, err
