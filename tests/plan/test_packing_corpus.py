"""The packing benchmark's corpus of real kernels: every plan is proven minimal and never above
bump placement; one case checked against the kernel's own hand layout."""

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "packing.py"
_spec = importlib.util.spec_from_file_location("packing_benchmark", _PATH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("case", bench.CORPUS, ids=lambda c: c.name)
def test_corpus_case_is_proven_minimal_and_within_bump(case):
    packing = bench.run(case).packing
    assert packing.exact
    assert packing.lower_bound <= packing.footprint <= packing.first_fit <= packing.bump


def test_flash_attention_3_matches_its_hand_overlay_of_o_over_v():
    # hopper/flash_fwd_kernel_sm90.h lays O over V only: Q (128 x 128 bf16 = 32,768) + K and
    # V (2 stages x 176 x 128 bf16 = 90,112 each) + 11 mbarriers (88 bytes)
    case = next(c for c in bench.CORPUS if c.name == "flash-attention-3-fwd")
    packing = bench.run(case).packing
    assert packing.footprint == 32_768 + 90_112 + 90_112 + 88
    assert packing.bump == packing.footprint + 32_768


def test_random_instances_are_reproducible():
    import random

    first = bench.random_case(random.Random(2026), 0)
    second = bench.random_case(random.Random(2026), 0)
    assert first == second and 3 <= len(first.items) <= 16
