"""Command line: ``tilemem plan | emit | verify``.

Every command writes its result to standard output or, with an output option, to a file
replaced atomically (a reader never sees half a file). Output into a closed pipe
(``tilemem plan --json | head``) ends the command quietly, as ``cat`` would.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable

from . import __version__
from .errors import TilememError

DESCRIPTION = """\
tilemem plans the shared memory (SMEM) and tensor memory (TMEM) of NVIDIA GPU tile kernels.

Without a command, the arguments go to `tilemem plan`: `tilemem --json` is
`tilemem plan --json`, `tilemem --list` lists the examples."""

_TOP_LEVEL_OPTIONS = {"-h", "--help", "--version"}
_SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away


def write_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then rename.

    An OSError names ``path`` (not the temporary file) so the message is the user's own.
    """
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tilemem-", suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise OSError(exc.errno, exc.strerror or str(exc), path) from None


def _output(text: str, path: str | None) -> None:
    if path:
        write_file(path, text)
    else:
        sys.stdout.write(text)


def _plan_to_show(args: argparse.Namespace):
    """(name, summary, plan) from a TOML plan file, a JSON plan, a built-in example by name or
    the default one; None after saying why there is none."""
    from .examples import DEFAULT_EXAMPLE, EXAMPLES
    from .planfile import load_plan_file, load_plan_json

    if args.file and args.example:
        print("tilemem: give a plan file or --example, not both", file=sys.stderr)
        return None
    if args.file and args.file.endswith(".json"):
        name, plan = load_plan_json(args.file)
        return name, f"plan {args.file}", plan
    if args.file:
        example = load_plan_file(args.file)
    else:
        name = args.example or DEFAULT_EXAMPLE
        if name not in EXAMPLES:
            print(
                f"tilemem: unknown example {name!r}; choose one of: {', '.join(EXAMPLES)}",
                file=sys.stderr,
            )
            return None
        example = EXAMPLES[name]
    plan = example.build().plan().with_advice()
    if example.threads and plan.target:
        plan = plan.with_threads(example.threads)
    return example.name, example.summary, plan


def _cmd_plan(args: argparse.Namespace) -> int:
    from .examples import EXAMPLES

    if args.list:
        width = max(len(n) for n in EXAMPLES)
        lines = [f"{e.name:<{width}}  {e.target:<8} {e.summary}" for e in EXAMPLES.values()]
        _output("\n".join(lines) + "\n", args.output)
        return 0
    chosen = _plan_to_show(args)
    if chosen is None:
        return 2
    name, summary, plan = chosen
    if args.header:
        write_file(args.header, plan.to_cpp_header(namespace=name.replace("-", "_")))
    if args.svg:
        write_file(args.svg, plan.to_svg(title=f"{name}: {summary}"))
    if args.json:
        text = json.dumps({"example": name, **plan.to_dict()}, indent=2) + "\n"
    else:
        text = f"{name}: {summary}\n{plan.format()}\n"
    _output(text, args.output)
    return 0


def _cmd_emit(args: argparse.Namespace) -> int:
    from .kernels import KERNELS

    if args.example not in KERNELS:
        print(
            f"tilemem: unknown example {args.example!r}; choose one of: {', '.join(KERNELS)}",
            file=sys.stderr,
        )
        return 2
    program = KERNELS[args.example]()
    text = str(program.ir) + "\n" if args.ir else program.source
    _output(text, args.output)
    if args.output:
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


def _cmd_sim(args: argparse.Namespace) -> int:
    from .sim_examples import EXAMPLES, RTOL, run_example

    if args.example not in EXAMPLES:
        print(
            f"tilemem: no simulated example {args.example!r}; choose one of: {', '.join(EXAMPLES)}",
            file=sys.stderr,
        )
        return 2
    print(f"simulating {args.example} (schedule {args.schedule}, seed {args.seed})...")
    done = run_example(args.example, seed=args.seed, schedule=args.schedule)
    m, n, k = done.shape
    count = sum(done.result.instructions.values())
    verdict = "within" if done.within_tolerance else "OUTSIDE"
    print(
        f"{done.name}: C = A @ B^T, {m} x {n} x {k}; {count} warp instructions; max |C - numpy| "
        f"= {done.max_error:.3g}, {verdict} the bf16 tolerance ({RTOL:.3g} relative)"
    )
    hazards = done.result.hazards
    print(f"{len(hazards)} hazard(s)" + (":" if hazards else ""))
    for h in hazards:
        print(h)
    return 0 if done.within_tolerance and not hazards else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilemem", description=DESCRIPTION, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"tilemem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{plan,emit,verify,sim}")
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
    emit = sub.add_parser(
        "emit",
        help="write the CUDA C++ of a built-in example kernel",
        description="Write the CUDA C++ (or the kernel IR) of a built-in example kernel.",
    )
    emit.add_argument(
        "--example", "-e", required=True, help="example name (see `tilemem plan --list`)"
    )
    emit.add_argument("-o", "--output", help="file to write (default: standard output)")
    emit.add_argument("--ir", action="store_true", help="print the kernel IR instead of CUDA C++")
    emit.set_defaults(run=_cmd_emit)
    verify = sub.add_parser(
        "verify",
        help="check every SMEM layout against the local GPU (TMA, wgmma)",
        description="Check every SMEM layout against the local GPU (TMA, wgmma).",
    )
    verify.add_argument(
        "--quick", action="store_true", help="one shape per swizzle mode and element size"
    )
    verify.set_defaults(run=_cmd_verify)
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
    return parser


def _with_command(argv: list[str], commands: set[str]) -> list[str]:
    """``tilemem --json`` means ``tilemem plan --json``: without a command, ``plan`` is implied."""
    if argv and (argv[0] in commands or argv[0] in _TOP_LEVEL_OPTIONS):
        return argv
    return ["plan", *argv]


def _quiet_broken_pipe(run: Callable[[], int]) -> int:
    """Run; if the reader of standard output went away, stop without a traceback."""
    try:
        status = run()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # Python would flush stdout again at exit and report the same error: point it elsewhere
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return _SIGPIPE_EXIT


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"plan", "emit", "verify", "sim"}
    args = parser.parse_args(_with_command(argv, commands))

    def run() -> int:
        try:
            return args.run(args)
        except BrokenPipeError:
            raise
        except TilememError as exc:  # a plan that breaks a rule: the message says which
            print(f"tilemem: {exc}", file=sys.stderr)
            return 1
        except OSError as exc:  # an output file that cannot be written: one line, no traceback
            print(f"tilemem: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
            return 1

    return _quiet_broken_pipe(run)


if __name__ == "__main__":
    sys.exit(main())
