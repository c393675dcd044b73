"""Command line: ``tilemem plan`` prints the memory plan of a built-in example."""

from __future__ import annotations

import argparse
import json
import sys

from . import __version__


def _cmd_plan(args: argparse.Namespace) -> int:
    from .examples import DEFAULT_EXAMPLE, EXAMPLES

    if args.list:
        width = max(len(n) for n in EXAMPLES)
        for example in EXAMPLES.values():
            print(f"{example.name:<{width}}  {example.target:<8} {example.summary}")
        return 0
    name = args.example or DEFAULT_EXAMPLE
    if name not in EXAMPLES:
        print(
            f"tilemem: unknown example {name!r}; choose one of: {', '.join(EXAMPLES)}",
            file=sys.stderr,
        )
        return 2
    from .plan import padding_advice

    example = EXAMPLES[name]
    plan = example.build().plan()
    occ = plan.occupancy(example.threads)
    plan = plan.with_section(f"occupancy ({example.threads} threads per CTA)", occ.lines())
    if plan.smem is not None:
        plan = plan.with_section("padding", padding_advice(plan.smem))
    if args.json:
        print(json.dumps({"example": name, **plan.to_dict()}, indent=2))
    else:
        print(f"{example.name}: {example.summary}")
        print(plan.format())
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
    if args.output:
        with open(args.output, "w") as handle:
            handle.write(text)
        print(
            f"wrote {args.output}: kernel {program.name} for {program.target}, "
            f"{program.dyn_smem_bytes} bytes of dynamic shared memory"
        )
    else:
        sys.stdout.write(text)
    return 0


def _gpu_name() -> str | None:
    from .cuda.device import gpu_name

    return gpu_name()


def _cmd_verify(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tilemem", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tilemem {__version__}")
    sub = parser.add_subparsers(dest="command")
    plan = sub.add_parser("plan", help="print the memory plan of a built-in example kernel")
    plan.add_argument("--example", "-e", help="example name (see --list)")
    plan.add_argument("--list", action="store_true", help="list the built-in examples")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(run=_cmd_plan)
    emit = sub.add_parser("emit", help="write the CUDA C++ of a built-in example kernel")
    emit.add_argument(
        "--example", "-e", required=True, help="example name (see `tilemem plan --list`)"
    )
    emit.add_argument("-o", "--output", help="file to write (default: standard output)")
    emit.add_argument("--ir", action="store_true", help="print the kernel IR instead of CUDA C++")
    emit.set_defaults(run=_cmd_emit)
    verify = sub.add_parser(
        "verify", help="check every SMEM layout against the local GPU (TMA, wgmma)"
    )
    verify.add_argument(
        "--quick", action="store_true", help="one shape per swizzle mode and element size"
    )
    verify.set_defaults(run=_cmd_verify)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["plan", *(argv or [])])
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
