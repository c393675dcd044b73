"""tilemem.interop.cute against CuTe DSL's own constructions.

Oracles: ``cutlass.utils.hopper_helpers.make_smem_layout_a/b`` and
``blackwell_helpers.make_smem_layout_a/b`` (CUTLASS's operand tiles: atom chosen and tiled by
CUTLASS), ``tiled_mma.make_fragment_C`` (TMEM accumulators), and the offsets ``cute.struct``
computes for the storage class. Every layout is compared at every logical coordinate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("cutlass.cute", reason="CuTe DSL (pip install nvidia-cutlass-dsl)")
pytest.importorskip("pycute", reason="pycute evaluates the layouts (nvidia-cutlass)")

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import OperandMajorMode
from cutlass.cute.nvgpu.tcgen05 import CtaGroup
from cutlass.tensor_utils import LayoutEnum
from cutlass.utils import blackwell_helpers as sm100
from cutlass.utils import hopper_helpers as sm90

import tilemem
from interop.cute_eval import plain_evaluator, smem_evaluator, swizzle_of
from tilemem.dtype import as_dtype
from tilemem.errors import PlanError
from tilemem.interop.cute import (
    cute_type,
    shared_storage,
    smem_layout,
    tmem_columns,
    tmem_layout,
)
from tilemem.layout import mma_shared_layout, tmem_datapath_layout, widest_swizzle

# (dtype, major, (M, N, K), stages)
SM90_CASES = [
    ("bfloat16", "K", (64, 128, 64), 2),
    ("bfloat16", "MN", (64, 64, 64), 2),
    ("float16", "K", (64, 64, 32), 3),
    ("float16", "MN", (64, 64, 16), 1),
    ("float8_e4m3fn", "K", (64, 64, 128), 1),
    ("float8_e4m3fn", "K", (64, 64, 32), 2),
    ("float32", "K", (64, 64, 32), 1),
    ("float32", "K", (64, 64, 16), 2),
    ("int8", "K", (64, 64, 64), 1),
    ("bfloat16", "K", (128, 256, 64), 4),
    ("float16", "MN", (128, 128, 64), 3),
    ("bfloat16", "MN", (64, 256, 32), 2),
    ("float8_e5m2", "K", (128, 128, 128), 4),
    ("int8", "K", (64, 128, 32), 3),
]
SM100_CASES = [
    ("bfloat16", "K", (128, 64, 64), 2),
    ("bfloat16", "MN", (128, 64, 64), 1),
    ("float16", "K", (128, 64, 32), 2),
    ("float16", "MN", (64, 64, 16), 1),
    ("float8_e4m3fn", "K", (128, 64, 128), 1),
    ("float8_e5m2", "K", (64, 64, 32), 2),
    ("bfloat16", "K", (128, 256, 128), 4),
    ("float16", "MN", (128, 256, 64), 3),
    ("bfloat16", "MN", (128, 64, 32), 2),
    ("float8_e4m3fn", "K", (128, 256, 64), 3),
]


def _tilemem_tile(dtype: str, mode: int, major: str, mn: int, k: int, stages: int):
    """tilemem's tile for the operand: (S, MN, K) K-major, (S, K, MN) MN-major."""
    rows, cols = (mn, k) if major == "K" else (k, mn)
    return mma_shared_layout(dtype, mode, (stages, rows, cols))


def _compare(cutlass_layout, bits, dtype, major, mn, k, stages, to_crd):
    """CUTLASS's tile vs tilemem's (and vs smem_layout of tilemem's) at every coordinate."""
    mode = swizzle_of(str(cutlass_layout.inner))[0] if hasattr(cutlass_layout, "inner") else 0
    contiguous = k if major == "K" else mn
    assert widest_swizzle(dtype, contiguous) == mode, "CUTLASS and tilemem pick different atoms"
    layout = _tilemem_tile(dtype, mode, major, mn, k, stages)
    positions = layout.positions()["m"]
    theirs = smem_evaluator(cutlass_layout, bits)
    mine = smem_evaluator(smem_layout(layout, dtype), bits)
    s, i, j = np.indices((stages, mn, k)).reshape(3, -1)
    r, c = (i, j) if major == "K" else (j, i)
    want = positions[(s * (mn * k)) + r * (k if major == "K" else mn) + c]
    got_theirs = theirs(to_crd(i, j, s))
    got_mine = mine((s, r, c))
    wrong = (got_theirs != want) | (got_mine != want)
    bad = [
        ((int(s[n]), int(i[n]), int(j[n])), int(want[n]), int(got_theirs[n]), int(got_mine[n]))
        for n in np.flatnonzero(wrong)[:3]
    ]
    return bad


def test_smem_layouts_equal_sm90_make_smem_layout_a_b():
    results = {}

    @cute.jit
    def build():
        for dtype, major, (m, n, k), stages in SM90_CASES:
            enum = LayoutEnum.ROW_MAJOR if major == "K" else LayoutEnum.COL_MAJOR
            bits = as_dtype(dtype).bits
            a = sm90.make_smem_layout_a(enum, (m, n, k), cute_type(dtype), stages)
            b = sm90.make_smem_layout_b(enum, (m, n, k), cute_type(dtype), stages)
            # CuTe's coordinates: A (M, K, stage), B (N, K, stage)
            results[(dtype, major, m, n, k, "A")] = _compare(
                a, bits, dtype, major, m, k, stages, lambda i, j, s: (i, j, s)
            )
            results[(dtype, major, m, n, k, "B")] = _compare(
                b, bits, dtype, major, n, k, stages, lambda i, j, s: (i, j, s)
            )

    build()
    assert len(results) == 2 * len(SM90_CASES)
    assert {key: bad[:3] for key, bad in results.items() if bad} == {}


def test_smem_layouts_equal_sm100_make_smem_layout_a_b():
    results = {}

    @cute.jit
    def build():
        for dtype, major, (m, n, k), stages in SM100_CASES:
            mmajor = OperandMajorMode.K if major == "K" else OperandMajorMode.MN
            t = cute_type(dtype)
            mma = sm100.make_trivial_tiled_mma(
                t, t, mmajor, mmajor, cutlass.Float32, CtaGroup.ONE, (m, n)
            )
            bits = as_dtype(dtype).bits
            for which, extent, make in (
                ("A", m, sm100.make_smem_layout_a),
                ("B", n, sm100.make_smem_layout_b),
            ):
                theirs = make(mma, (m, n, k), t, stages)
                # partitioned shape ((MN_atom, K_atom), MN_rest, K_blocks, stage)
                mode0 = theirs.outer.shape[0]
                ma, ka = math.prod(_flat(mode0[0])), math.prod(_flat(mode0[1]))

                def to_crd(i, j, s, ma=ma, ka=ka):
                    return ((i % ma, j % ka), i // ma, j // ka, s)

                results[(dtype, major, m, n, k, which)] = _compare(
                    theirs, bits, dtype, major, extent, k, stages, to_crd
                )

    build()
    assert len(results) == 2 * len(SM100_CASES)
    assert {key: bad[:3] for key, bad in results.items() if bad} == {}


def _flat(shape):
    if isinstance(shape, tuple):
        return [x for s in shape for x in _flat(s)]
    return [shape]


# TMEM accumulators: (M, N, accumulator dtype) -> tilemem data path
TMEM_CASES = [
    (128, 96, "float32", "D"),
    (128, 256, "float32", "D"),
    (128, 64, "float16", "D"),
    (64, 128, "float32", "F"),
    (64, 64, "float16", "F"),
]


def test_tmem_layouts_equal_make_fragment_c():
    results = {}

    @cute.jit
    def build():
        for m, n, acc, letter in TMEM_CASES:
            t = cutlass.BFloat16 if acc == "float32" else cutlass.Float16
            mma = sm100.make_trivial_tiled_mma(
                t, t, OperandMajorMode.K, OperandMajorMode.K, cute_type(acc), CtaGroup.ONE, (m, n)
            )
            frag = mma.make_fragment_C(mma.partition_shape_C((m, n)))
            theirs = plain_evaluator(frag.layout)
            layout = tmem_datapath_layout(letter, m, n, dtype=acc)
            mine = plain_evaluator(tmem_layout(layout, acc))
            r, c = np.indices((m, n)).reshape(2, -1)
            wrong = theirs(((r, c), 0, 0)) != mine((r, c))
            results[(m, n, acc)] = [(int(r[x]), int(c[x])) for x in np.flatnonzero(wrong)[:3]]

    build()
    assert len(results) == len(TMEM_CASES)
    assert {k: v for k, v in results.items() if v} == {}


def _fa4_like_plan():
    """Q, K/V ring, O over Q (lifetimes), barriers; TMEM S, P over S, O."""
    smem = tilemem.SMEMPool(target="sm_100a", phases=("load", "mma", "epilogue"))
    smem.alloc_mma((128, 128), "bfloat16", live=("load", "mma"), name="sQ")
    smem.alloc_mma((3, 128, 128), "bfloat16", live=("load", "mma"), name="sKV")
    smem.alloc_mma((128, 128), "bfloat16", live="epilogue", name="sO")
    smem.alloc((8,), "uint64", name="bars")
    tmem = tilemem.TMEMPool(smem, total_cols="auto")
    s = tmem.alloc((128, 128), name="S")
    tmem.alloc((128, 128), "bfloat16", alias_of=s, name="P", layout=None)
    tmem.alloc((128, 128), name="O")
    smem.commit()
    tmem.commit()
    return smem.plan()


def _absolute_offsets(storage) -> dict[str, int]:
    """Every leaf field's byte offset, from the offsets cute.struct / cute.union computed."""
    out: dict[str, int] = {}

    def walk(obj, base: int) -> None:
        for name, off in obj._offsets.items():
            member = obj._annotations[name]
            if isinstance(member, type) and issubclass(member, cute.struct.Align):
                member = member._dtype
            if isinstance(member, cute.struct):
                walk(member, base + off)
            elif not name.startswith("_"):
                out[name] = base + off

    walk(storage, 0)
    return out


def test_shared_storage_fields_sit_at_the_plans_offsets():
    plan = _fa4_like_plan()
    storage = shared_storage(plan)
    offsets = _absolute_offsets(storage)
    pool = plan.smem
    want = {e.name: e.offset for e in pool.entries}
    assert offsets == want
    # sO reuses sQ's bytes by lifetime: one union holds both
    assert "sQ_or_sO" in storage._offsets or "sO_or_sQ" in storage._offsets
    assert pool.committed <= storage.__sizeof__() < pool.committed + storage.__alignof__()
    assert storage.__alignof__() >= max(e.align for e in pool.entries) == 1024


def test_shared_storage_of_an_alias_of_view_is_a_union_member():
    smem = tilemem.SMEMPool(target="sm_90a")
    a = smem.alloc((64, 64), "float32", name="acc")
    smem.alloc((64, 64), "bfloat16", alias_of=a, offset=4096, name="half")
    smem.alloc((2,), "uint64", name="bar")
    smem.commit()
    storage = shared_storage(smem.plan())
    assert _absolute_offsets(storage) == {"acc": 0, "half": 4096, "bar": 16384}


def test_tmem_columns_replace_hand_offsets():
    cols = tmem_columns(_fa4_like_plan())
    # S at 0, P over S (a view: same columns), O after S; 256 columns allocated
    assert dict(cols) == {"S": 0, "P": 0, "O": 128}
    assert cols.alloc_cols == 256
    assert cols.cols("O") == 128


def test_tmem_columns_refuses_a_plan_without_one_tmem_pool():
    smem = tilemem.SMEMPool(target="sm_90a")
    smem.alloc((16,), "float32")
    smem.commit()
    with pytest.raises(PlanError, match="one TMEM pool"):
        tmem_columns(smem.plan())
