"""fp8 promotion under the next group's wgmmas (two fragments a consumer) beside the promotion
with one fragment, which drains the tensor cores before every add.

    PYTHONPATH=src python3 benchmarks/gemm_promote_overlap.py [SET,...] [ROUNDS] [policy|both]

For every fp8 shape of benchmarks/gemm.py's sets (``square``, ``llm``, ``ragged``, ``small``,
``inference``; all by default), with benchmarks/gemm.py's method (every product checked first
against a float64 reference, fresh inputs, NaN-poisoned C, rotating order, median of ROUNDS
rounds, 5 by default), the kernels promoted every two K tiles:

- ``policy``: AutoGemm as it is (two fragments where its width is one of
  ``hopper.OVERLAPPED_TILE_NS``);
- ``single``: the policy's configuration built with one fragment (``same`` where the policy's
  width keeps one anyway);
- ``t128c2`` / ``t128c1``: 128 x 128 tiles in 2x1 clusters sharing B / alone, two fragments
  (``t128c2`` only with two M tiles or more); ``t128c1s``: alone, one fragment;
- ``sk128``: stream-K on 128 x 128 tiles, two fragments (two M tiles or more).

With ``policy``: ``POLICY`` lines instead, the policy beside the previous one
(:class:`PreviousAuto`: one fragment everywhere, 128-wide tiles paired and replaced by stream-K
as before) on every shape where they differ, with ``speedup`` = policy / previous. With
``both``: ``BOTH`` lines, the policy beside its configurations built with two fragments in both
consumers (:class:`BothAuto`), three times, on the shapes whose kernel has two computing
consumers on a width of two fragments.

Ratios are cuBLASLt time / tilemem time. One line per shape, ``OVERLAP dtype MxNxK ...``,
and the geometric means. Needs an sm_90 GPU and torch.
"""

from __future__ import annotations

import contextlib
import inspect
import pathlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import gemm as bench  # benchmarks/gemm.py: its shapes, check and timing
import torch
from gemm_clusters import timed
from gemm_uniform import SETS, shapes_of

from tilemem.gemm import hopper

FP8 = "float8_e4m3fn"


def one_fragment():
    """Kernels built inside promote with one fragment on every width."""
    return mock.patch.object(hopper, "OVERLAPPED_TILE_NS", ())


def previous_policy():
    """The fp8 policy before two fragments: 128-wide tiles in pairs where launch_config pairs
    them, and replaced by stream-K where its model says so."""
    return mock.patch.multiple(
        hopper, FP8_ALONE_WIDTHS=(160,), STREAM_K_NEVER_REPLACES_PROMOTED=(160,)
    )


def two_fragments_for_two_consumers():
    """Kernels built inside keep two fragments in both computing consumers too (on the widths
    of ``hopper.OVERLAPPED_TILE_NS``), where the kernel gives them to a consumer computing
    alone only."""
    compute = hopper._compute

    def both(*args, **kwargs):
        bound = inspect.signature(compute).bind(*args, **kwargs)
        bound.arguments["alone"] = True  # given by position or not at all
        return compute(*bound.args, **bound.kwargs)

    return mock.patch.object(hopper, "_compute", both)


class BuiltAuto(hopper.AutoGemm):
    """The policy, its kernels built inside ``building()`` (a context manager; none here)."""

    building: Callable[[], contextlib.AbstractContextManager[Any]] = staticmethod(
        contextlib.nullcontext
    )

    def _gemm(self, config):
        with self.building():
            return super()._gemm(config)


class SingleAuto(BuiltAuto):
    """The policy, its kernels built with one fragment."""

    building = staticmethod(one_fragment)


class BothAuto(BuiltAuto):
    """The policy, its kernels built as in :func:`two_fragments_for_two_consumers`."""

    building = staticmethod(two_fragments_for_two_consumers)


class PreviousAuto(SingleAuto):
    """The policy and its kernels as they were before two fragments."""

    def config(self, m, n, k=None):
        with previous_policy():
            return super().config(m, n, k)


class FixedAuto(BuiltAuto):
    """One configuration ``(tile_n, cluster_m, stream_k)`` on every shape, 128 rows of A
    (the rows :func:`hopper.a_rows_for` gives where M <= 64), built with one fragment where
    ``single``."""

    def __init__(self, tile_n: int, cluster_m: int, stream_k: bool, single: bool = False):
        super().__init__(dtype=FP8)
        self.fixed = (tile_n, cluster_m, stream_k)
        if single:
            self.building = one_fragment

    def config(self, m, n, k=None):
        tile_n, cluster_m, stream_k = self.fixed
        return tile_n, cluster_m, 1, hopper.a_rows_for(m), stream_k


def policies(sets: list[str], rounds: int) -> None:
    """``POLICY`` lines: the policy beside the previous one (:class:`PreviousAuto`) on every
    shape where their configurations or kernels differ."""
    auto, previous = hopper.AutoGemm(dtype=FP8), PreviousAuto(dtype=FP8)
    speedups = []
    for m, n, k in shapes_of(FP8, sets):
        now, before = auto.config(m, n, k), previous.config(m, n, k)
        two = now[0] in hopper.OVERLAPPED_TILE_NS and now[3] <= 64
        if now == before and not two:
            continue
        labels = [
            "policy:" + bench.policy(auto, m, n, k),
            "previous:" + bench.policy(previous, m, n, k),
        ]
        names, ratios, cublas = timed([auto, previous], labels, m, n, k, rounds)
        text = " ".join(f"{label}={r:.3f}" for label, r in zip(names, ratios))
        if len(ratios) == 2:
            speedups.append(ratios[0] / ratios[1])
            text += f" speedup={speedups[-1]:.3f}"
        print(f"POLICY {FP8} {m}x{n}x{k} cublas={cublas * 1e6:.1f}us {text}", flush=True)
    if speedups:
        geo = statistics.geometric_mean(speedups)
        print(f"policy / previous: geometric mean {geo:.3f} over {len(speedups)} shapes")


def both(sets: list[str], rounds: int, repeats: int = 3) -> None:
    """``BOTH`` lines: the policy beside the same configurations with two fragments in both
    consumers (:class:`BothAuto`), ``repeats`` times, on every shape whose policy kernel has
    two computing consumers on a width of ``hopper.OVERLAPPED_TILE_NS``; then the median
    speedup (both / policy) a shape."""
    auto, two = hopper.AutoGemm(dtype=FP8), BothAuto(dtype=FP8)
    medians = []
    for m, n, k in shapes_of(FP8, sets):
        config = auto.config(m, n, k)
        if config[0] not in hopper.OVERLAPPED_TILE_NS or config[3] != hopper.TILE_M:
            continue
        speedups = []
        for _ in range(repeats):
            _, ratios, _ = timed([auto, two], ["policy", "both"], m, n, k, rounds)
            if len(ratios) == 2:
                speedups.append(ratios[1] / ratios[0])
                print(
                    f"BOTH {FP8} {m}x{n}x{k} {bench.policy(auto, m, n, k)} "
                    f"policy={ratios[0]:.3f} both={ratios[1]:.3f}",
                    flush=True,
                )
        if speedups:
            medians.append(statistics.median_high(speedups))
            print(f"BOTH-MEDIAN {m}x{n}x{k} speedup={medians[-1]:.3f}", flush=True)
    if medians:
        geo = statistics.geometric_mean(medians)
        print(f"both / policy: geometric mean {geo:.3f} over {len(medians)} shapes")


def main() -> None:
    sets = sys.argv[1].split(",") if len(sys.argv) > 1 else list(SETS)
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.zeros(1, device="cuda")
    start = time.time()
    if len(sys.argv) > 3 and sys.argv[3] in ("policy", "both"):
        (policies if sys.argv[3] == "policy" else both)(sets, rounds)
        print(f"elapsed {time.time() - start:.0f} s")
        return
    auto, single = hopper.AutoGemm(dtype=FP8), SingleAuto(dtype=FP8)
    fixed = {
        "t128c2": FixedAuto(128, 2, False),
        "t128c1": FixedAuto(128, 1, False),
        "t128c1s": FixedAuto(128, 1, False, single=True),
        "sk128": FixedAuto(128, 1, True),
    }
    print(f"overlapped widths {hopper.OVERLAPPED_TILE_NS}, groups a run {hopper.OVERLAP_GROUPS}")
    ratios_of: dict[str, list[float]] = {}
    for m, n, k in shapes_of(FP8, sets):
        overlapped = auto.config(m, n, k)[0] in hopper.OVERLAPPED_TILE_NS
        labels = ["policy:" + bench.policy(auto, m, n, k)] + (["single"] if overlapped else [])
        gemms = [auto] + ([single] if overlapped else [])
        for label, gemm in fixed.items():
            if m > hopper.TILE_M or label in ("t128c1", "t128c1s"):
                labels.append(label)
                gemms.append(gemm)
        names, ratios, cublas = timed(gemms, labels, m, n, k, rounds)
        for label, ratio in zip(names, ratios):
            ratios_of.setdefault(label.split(":")[0], []).append(ratio)
        text = " ".join(f"{label}={r:.3f}" for label, r in zip(names, ratios))
        print(f"OVERLAP {FP8} {m}x{n}x{k} cublas={cublas * 1e6:.1f}us {text}", flush=True)
    for label, values in ratios_of.items():
        geo = statistics.geometric_mean(values)
        print(f"{label}: geometric mean {geo:.3f} over {len(values)} shapes")
    print(f"elapsed {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
