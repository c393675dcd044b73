"""Speed of the CPU simulator (tilemem.sim) on the built-in examples.

    python3 benchmarks/sim.py                    # every example, in-order and adversarial
    python3 benchmarks/sim.py --example hopper-gemm --schedule random --repeat 3

For each example and schedule: the wall time of one simulated run (best of ``--repeat``,
CPU time of this process), the warp instructions executed (each intrinsic, load and store
counted once per warp), instructions per second, hazards found and the worst error against
numpy. Inputs are the small ones ``tilemem sim --example`` uses.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from tilemem.sim_examples import EXAMPLES, run_example


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", choices=sorted(EXAMPLES), action="append")
    parser.add_argument(
        "--schedule", action="append", choices=("random", "in-order", "adversarial")
    )
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    names = args.example or list(EXAMPLES)
    schedules = args.schedule or ["in-order", "adversarial"]
    load = f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"
    print(
        f"# tilemem.sim on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(
        f"{'example':<24} {'schedule':<12} {'seconds':>8} {'instructions':>12} "
        f"{'instr/s':>9} {'hazards':>7} {'max err':>8}"
    )
    status = 0
    for name in names:
        for schedule in schedules:
            best = None
            for _ in range(args.repeat):
                start = time.process_time()
                done = run_example(name, seed=0, schedule=schedule)
                spent = time.process_time() - start
                best = spent if best is None else min(best, spent)
            assert best is not None
            count = sum(done.result.instructions.values())
            hazards = len(done.result.hazards)
            status |= hazards > 0 or not done.within_tolerance
            print(
                f"{name:<24} {schedule:<12} {best:8.2f} {count:12d} {count / best:9.0f} "
                f"{hazards:7d} {done.max_error:8.3g}"
            )
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
