"""Command line: ``tilemem plan | emit | verify``.

Every command writes its result to standard output or, with an output option, to a file.
A regular file (or a symbolic link to one) is replaced atomically, so a reader never sees half
a file; anything else (``/dev/null``, a FIFO, a terminal) is written through. Before anything
is written the outputs are checked: each named, none the input plan, no two the same file,
standard output open when it is used. Output into a closed pipe (``tilemem plan --json |
head``) ends the command quietly, as ``cat`` would; any other failure is one line on standard
error and a nonzero exit status.

A command is one ``_add_*`` function registering its subparser and its ``run`` function in
``_COMMANDS``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace

from . import __version__
from .errors import TilememError
from .plan import MemoryPlan

DESCRIPTION = """\
tilemem plans the shared memory (SMEM) and tensor memory (TMEM) of NVIDIA GPU tile kernels.

Without a command, the arguments go to `tilemem plan`: `tilemem --json` is
`tilemem plan --json`, `tilemem --list` lists the examples."""

_TOP_LEVEL_OPTIONS = {"-h", "--help", "--version"}
_SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away
_USAGE_EXIT = 2  # what argparse returns for a command line it cannot use
_OUTPUT_OPTIONS = (("output", "-o"), ("header", "--header"), ("svg", "--svg"))


class TilememUsage(Exception):
    """A command line that names its outputs or inputs wrongly (exit status 2)."""


def _atomic_write(path: str, text: str) -> None:
    """A temporary file in the folder of ``path``, then rename over it."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tilemem-", suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def write_file(path: str, text: str) -> None:
    """Write ``text`` to ``path``: a regular file (or where a symbolic link points) is replaced
    atomically, the link kept; a character device, FIFO or socket is written through.

    An OSError names ``path`` (not the temporary file) so the message is the user's own.
    """
    real = os.path.realpath(path)  # a symbolic link's target, so the link stays a link
    try:
        if os.path.exists(real) and not os.path.isfile(real):
            with open(real, "w") as handle:  # /dev/null, a FIFO, a terminal: write through
                handle.write(text)
        else:
            _atomic_write(real, text)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), path) from None


def _output(text: str, path: str | None) -> None:
    if path:
        write_file(path, text)
    else:
        sys.stdout.write(text)


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one regular file (or one path not there yet)."""
    ra, rb = os.path.realpath(a), os.path.realpath(b)
    if os.path.exists(ra) and not os.path.isfile(ra):
        return False  # two outputs to /dev/null are fine
    return ra == rb or (os.path.exists(ra) and os.path.exists(rb) and os.path.samefile(ra, rb))


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an empty output name, an output onto the input plan, two outputs to one file,
    and standard output when it is closed; before anything is read or written."""
    given = []
    for attr, flag in _OUTPUT_OPTIONS:
        path = getattr(args, attr, None)
        if path is None:
            continue
        if not path:
            raise TilememUsage(f"{flag} needs a file name, got ''")
        given.append((flag, path))
    source = getattr(args, "file", None)
    for n, (flag, path) in enumerate(given):
        if source and _same_file(path, source):
            raise TilememUsage(f"{flag} {path} would overwrite the input plan; write elsewhere")
        for other_flag, other in given[:n]:
            if _same_file(path, other):
                raise TilememUsage(f"{other_flag} and {flag} both write {path}; give two files")
    if getattr(args, "output", None) is None and sys.stdout is None:
        raise TilememUsage("standard output is closed; give -o FILE to write to a file")


def _plan_to_show(args: argparse.Namespace) -> MemoryPlan:
    """The plan of a TOML or JSON plan file, of a built-in example by name or of the default
    one, with its name and summary."""
    from .examples import DEFAULT_EXAMPLE, EXAMPLES
    from .planfile import load_plan

    if args.file is not None and args.example is not None:
        raise TilememUsage("give a plan file or --example, not both")
    if args.file is not None:
        if not args.file:
            raise TilememUsage("the plan file name is empty")
        return load_plan(args.file)
    name = DEFAULT_EXAMPLE if args.example is None else args.example
    if name not in EXAMPLES:
        raise TilememUsage(f"unknown example {name!r}; choose one of: {', '.join(EXAMPLES)}")
    example = EXAMPLES[name]
    plan = replace(example.build().plan().with_advice(), name=name, summary=example.summary)
    if example.threads and plan.target:
        plan = plan.with_threads(example.threads)
    return plan


def _title(plan: MemoryPlan) -> tuple[str, str]:
    return plan.name or "plan", plan.summary or "memory plan"


def _header(plan: MemoryPlan) -> str:
    from .planfile import header_namespace

    return plan.to_cpp_header(namespace=header_namespace(_title(plan)[0]))


def _cmd_plan(args: argparse.Namespace) -> int:
    from .examples import EXAMPLES

    if args.list:
        width = max(len(n) for n in EXAMPLES)
        lines = [f"{e.name:<{width}}  {e.target:<8} {e.summary}" for e in EXAMPLES.values()]
        _output("\n".join(lines) + "\n", args.output)
        return 0
    plan = _plan_to_show(args)
    name, summary = _title(plan)
    if args.header is not None:
        write_file(args.header, _header(plan))
    if args.svg is not None:
        write_file(args.svg, plan.to_svg(title=f"{name}: {summary}"))
    if args.json:
        text = json.dumps({"example": name, **plan.to_dict()}, indent=2) + "\n"
    else:
        text = f"{name}: {summary}\n{plan.format()}\n"
    _output(text, args.output)
    return 0


def _cmd_emit(args: argparse.Namespace) -> int:
    from .kernels import KERNELS

    if args.list:
        _output("".join(f"{name}\n" for name in KERNELS), args.output)
        return 0
    if args.file is not None and args.example is not None:
        raise TilememUsage("give a plan file or --example, not both")
    if args.file is not None:  # a plan is memory, not a kernel: its C++ form is the header
        if args.ir:
            raise TilememUsage("--ir needs a kernel (--example); a plan file has no IR")
        _output(_header(_plan_to_show(args)), args.output)
        return 0
    if args.example not in KERNELS:
        raise TilememUsage(
            f"unknown example {args.example!r}; choose one of: {', '.join(KERNELS)}"
            if args.example is not None
            else "give a plan file, --example NAME or --list"
        )
    program = KERNELS[args.example]()
    text = str(program.ir) + "\n" if args.ir else program.source
    _output(text, args.output)
    if args.output and sys.stdout is not None:
        print(
            f"wrote {args.output}: kernel {program.name} for {program.target}, "
            f"{program.dyn_smem_bytes} bytes of dynamic shared memory"
        )
    return 0


def _missing_cuda_packages() -> list[str]:
    """The packages of the ``cuda`` extra that cannot be imported here."""
    missing = []
    for module, package in (("cuda.bindings.driver", "cuda-bindings"), ("cuda.core", "cuda-core")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    return missing


def _gpu_name() -> str | None:
    from .cuda.device import gpu_name

    return gpu_name()


def _cmd_verify(args: argparse.Namespace) -> int:
    missing = _missing_cuda_packages()
    if missing:
        print(
            f"tilemem verify: {' and '.join(missing)} not installed; it needs the cuda extra "
            "to talk to the GPU: pip install 'tilemem[cuda]'",
            file=sys.stderr,
        )
        return 1
    device = _gpu_name()
    if device is None:
        print(
            "tilemem verify: no CUDA GPU found here; it checks layouts on real hardware (TMA, "
            "wgmma: an sm_90 GPU)",
            file=sys.stderr,
        )
        return 1
    from .verify import format_results, run_all

    results = run_all(quick=args.quick)
    print(format_results(results, device))
    return 0 if results and all(r.ok for r in results) else 1


def _add_plan(sub: argparse._SubParsersAction) -> None:
    plan = sub.add_parser(
        "plan",
        help="print the memory plan of a plan file or a built-in example kernel",
        description="Print the memory plan of a TOML plan file or a built-in example: buffers, "
        "offsets, padding, occupancy.",
    )
    plan.add_argument(
        "file", nargs="?", help="a TOML plan file, or a JSON plan (docs/PLAN_FORMAT.md)"
    )
    plan.add_argument("--example", "-e", help="built-in example name (see --list)")
    plan.add_argument("--list", action="store_true", help="list the built-in examples")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("-o", "--output", help="file to write (default: standard output)")
    plan.add_argument("--header", metavar="FILE", help="also write the plan as a C++ header")
    plan.add_argument("--svg", metavar="FILE", help="also write the plan as an SVG picture")
    plan.set_defaults(run=_cmd_plan)


def _add_emit(sub: argparse._SubParsersAction) -> None:
    emit = sub.add_parser(
        "emit",
        help="write the CUDA C++ of a built-in example kernel, or a plan file's C++ header",
        description="Write the CUDA C++ (or the kernel IR) of a built-in example kernel, or the "
        "C++ header of a TOML or JSON plan file.",
    )
    emit.add_argument("file", nargs="?", help="a TOML or JSON plan file: write its C++ header")
    emit.add_argument("--example", "-e", help="example kernel name (see --list)")
    emit.add_argument("--list", action="store_true", help="list the example kernels")
    emit.add_argument("-o", "--output", help="file to write (default: standard output)")
    emit.add_argument("--ir", action="store_true", help="print the kernel IR instead of CUDA C++")
    emit.set_defaults(run=_cmd_emit)


def _add_verify(sub: argparse._SubParsersAction) -> None:
    verify = sub.add_parser(
        "verify",
        help="check every SMEM layout against the local GPU (TMA, wgmma)",
        description="Check every SMEM layout against the local GPU (TMA, wgmma).",
    )
    verify.add_argument(
        "--quick", action="store_true", help="one shape per swizzle mode and element size"
    )
    verify.set_defaults(run=_cmd_verify)


def _cmd_sim(args: argparse.Namespace) -> int:
    from .sim_examples import EXAMPLES, RTOL, run_example

    if args.example not in EXAMPLES:
        raise TilememUsage(
            f"no simulated example {args.example!r}; choose one of: {', '.join(EXAMPLES)}"
        )
    print(f"simulating {args.example} (schedule {args.schedule}, seed {args.seed})...")
    done = run_example(args.example, seed=args.seed, schedule=args.schedule)
    m, n, k = done.shape
    count = sum(done.result.instructions.values())
    verdict = "within" if done.within_tolerance else "OUTSIDE"
    print(
        f"{done.name}: {done.what}, {m} x {n} x {k}; {count} warp instructions; max error "
        f"against numpy {done.max_error:.3g}, {verdict} the bf16 tolerance ({RTOL:.3g} relative)"
    )
    hazards = done.result.hazards
    print(f"{len(hazards)} hazard(s)" + (":" if hazards else ""))
    for h in hazards:
        print(h)
    return 0 if done.within_tolerance and not hazards else 1


def _add_sim(sub: argparse._SubParsersAction) -> None:
    sim = sub.add_parser(
        "sim",
        help="run a built-in example kernel on the CPU simulator and report its hazards",
        description="Run a built-in example kernel on small inputs in the CPU simulator "
        "(tilemem.sim), compare it with numpy and print every hazard.",
    )
    sim.add_argument("--example", "-e", required=True, help="example name")
    sim.add_argument(
        "--schedule",
        choices=("random", "in-order", "adversarial"),
        default="random",
        help="how warps interleave and asynchronous operations complete (default: random)",
    )
    sim.add_argument("--seed", type=int, default=0, help="scheduler and input seed (default 0)")
    sim.set_defaults(run=_cmd_sim)


# name -> the function adding its subparser; a new command is one more entry
_COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "plan": _add_plan,
    "emit": _add_emit,
    "verify": _add_verify,
    "sim": _add_sim,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilemem", description=DESCRIPTION, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"tilemem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(_COMMANDS) + "}")
    for add in _COMMANDS.values():
        add(sub)
    return parser


def _with_command(argv: list[str], commands: set[str]) -> list[str]:
    """``tilemem --json`` means ``tilemem plan --json``: without a command, ``plan`` is implied.
    A first word that is no file but close to a command (``emti``) is a mistyped command."""
    if argv and (argv[0] in commands or argv[0] in _TOP_LEVEL_OPTIONS):
        return argv
    if argv and not argv[0].startswith("-") and not os.path.lexists(argv[0]):
        close = difflib.get_close_matches(argv[0], sorted(commands), n=1)
        if close:
            raise TilememUsage(
                f"unknown command {argv[0]!r}; did you mean {close[0]!r}? "
                f"(commands: {', '.join(sorted(commands))})"
            )
    return ["plan", *argv]


def _stdout_to_devnull() -> None:
    """Point standard output at /dev/null: Python flushes it again at exit, and would report
    the same failure there."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _finish(run: Callable[[], int]) -> int:
    """Run and flush standard output; a reader that went away ends the command quietly, any
    other failure to write standard output (``> /dev/full``) is a one-line error."""
    try:
        status = run()
        if sys.stdout is not None:
            sys.stdout.flush()
        return status
    except BrokenPipeError:
        _stdout_to_devnull()
        return _SIGPIPE_EXIT
    except OSError as exc:  # only standard output reaches here: files are handled in run()
        print(f"tilemem: cannot write standard output: {exc.strerror or exc}", file=sys.stderr)
        _stdout_to_devnull()
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(_with_command(argv, set(_COMMANDS)))
    except TilememUsage as exc:
        print(f"tilemem: {exc}", file=sys.stderr)
        return _USAGE_EXIT

    def run() -> int:
        try:
            _check_outputs(args)
            return args.run(args)
        except TilememUsage as exc:
            print(f"tilemem: {exc}", file=sys.stderr)
            return _USAGE_EXIT
        except TilememError as exc:  # a plan that breaks a rule: the message says which
            print(f"tilemem: {exc}", file=sys.stderr)
            return 1
        except OSError as exc:
            if exc.filename is None:  # standard output: _finish says so
                raise
            print(f"tilemem: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
            return 1

    return _finish(run)


if __name__ == "__main__":
    sys.exit(main())
