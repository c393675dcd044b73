"""Names are refused when they are given, not when a header or kernel is written.

A buffer, pool or phase name becomes a C++ identifier (a namespace of the plan's header, a
variable of a generated kernel), so a name must survive the C preprocessor and the C++
parser: no keyword or alternative token (``bitand`` is ``&``), no macro of the standard or
CUDA headers (``NULL``; ``unix`` under nvcc's default GNU dialect), nothing C++ reserves
(``__`` anywhere, ``_`` and a capital first), and names of one CTA differ, generated ones
(stage views' ``<buffer>_stages``, TMEM pools' ``tmem``, ``tmem1``) included.
"""

from __future__ import annotations

import re
import warnings

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import AllocationError
from tilemem.validate import check_name

KEYWORDS = [
    "and",
    "and_eq",
    "bitand",
    "bitor",
    "compl",
    "not",
    "not_eq",
    "or",
    "or_eq",
    "xor",
    "xor_eq",
    "co_await",
    "co_yield",
    "concept",
    "requires",
    "consteval",
    "constinit",
    "char8_t",
    "static_assert",
    "nullptr",
    "namespace",
    "class",
    "None",
    "lambda",
    "threadIdx",
    "assert",  # Python's keyword, and C's macro
]
MACROS = ["NULL", "EOF", "errno", "offsetof", "stdin", "unix", "linux", "i386"]
MACROS += ["INT_MAX", "SIZE_MAX", "FLT_MAX", "INFINITY", "NAN", "M_PI", "CUDART_VERSION"]
RESERVED = ["__x", "a__b", "x__", "_Tile", "_A", "tm_buf"]
NOT_IDENTIFIERS = ["a-b", "a b", "1a", "", "a\n", "a\\", "\u00e9", "a;b", "a/*", "a\u00a0"]
POOL_CONSTANTS = ["committed_bytes", "high_water", "region_align", "target_max_bytes"]
POOL_CONSTANTS += ["total_cols", "cta_group", "alloc_warp", "dealloc_warp", "slot_offset"]

WHY = {
    **{n: "is a C++ or Python keyword" for n in KEYWORDS},
    **{n: "is a macro of the C, C++ or CUDA headers" for n in MACROS},
    **{n: "is reserved" for n in RESERVED},
    **{n: "is not an identifier" for n in NOT_IDENTIFIERS},
    **{n: "is the name of a pool constant of the C++ header" for n in POOL_CONSTANTS},
}


@pytest.mark.parametrize("name", list(WHY))
def test_an_smem_buffer_name_is_refused_before_the_pool_changes(name):
    smem = SMEMPool()
    with pytest.raises(AllocationError) as info:
        smem.alloc((4,), "uint32", name=name)
    assert f"buffer name {name!r} {WHY[name]}" in str(info.value)
    assert (smem.buffers, smem.offset) == ((), 0)  # nothing placed


NAMED = ["bitand", "not_eq", "NULL", "unix", "a__b", "_Tile", "a-b", "a\n"]


@pytest.mark.parametrize("name", NAMED)
def test_a_tmem_buffer_name_is_refused(name):
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, 128)
    with pytest.raises(AllocationError, match="buffer name"):
        tmem.alloc((128, 64), "float32", name=name)
    with pytest.raises(AllocationError, match="buffer name"):
        tmem.alloc_sf((128, 4), "float8_e8m0fnu", sf_per_mma=4, name=name)
    with pytest.raises(AllocationError, match="buffer name"):
        smem.alloc_mma((64, 64), "bfloat16", name=name)
    assert tmem.buffers == () and [b.name for b in smem.buffers] == ["tmem_addr"]


@pytest.mark.parametrize("name", NAMED)
def test_a_pool_name_is_refused(name):
    with pytest.raises(AllocationError, match=re.escape(f"SMEM pool name {name!r}")):
        SMEMPool(name=name)
    smem = SMEMPool(target="sm_100a")
    with pytest.raises(AllocationError, match=re.escape(f"TMEM pool name {name!r}")):
        TMEMPool(smem, 128, name=name)
    assert smem.buffers == () and smem.tmem_pools == []  # no address slot was made


@pytest.mark.parametrize("name", NAMED)
def test_a_phase_name_is_refused(name):
    with pytest.raises(AllocationError, match=re.escape(f"phase name {name!r}")):
        SMEMPool(phases=("mainloop", name))


@pytest.mark.parametrize("name", [5, b"a", None.__class__, ("a",)])
def test_a_name_that_is_not_text_is_refused(name):
    with pytest.raises(AllocationError, match="must be a string"):
        SMEMPool().alloc((4,), "uint32", name=name)


LEGAL = ["A", "acc", "Null", "null", "unix_time", "bitand_", "andx", "main", "printf"]
LEGAL += ["float4", "offset", "stages", "_a", "_tile", "final", "override", "module", "x" * 200]


@pytest.mark.parametrize("name", LEGAL)
def test_a_legal_name_is_kept_as_given(name):
    smem = SMEMPool(name=name)
    buf = smem.alloc((4,), "uint32", name=name)
    assert (smem.name, buf.name, check_name(name)) == (name, name, name)


# -- names of one CTA differ, generated ones included --------------------------------------


def test_a_tmem_pool_named_like_the_smem_pool_is_refused():
    smem = SMEMPool(name="pool", target="sm_100a")
    with pytest.raises(AllocationError, match=r"TMEM pool name 'pool' is taken in this CTA"):
        TMEMPool(smem, 128, name="pool")
    assert smem.buffers == () and smem.tmem_pools == []


def test_two_tmem_pools_of_one_name_are_refused():
    smem = SMEMPool(target="sm_100a")
    TMEMPool(smem, 128, name="acc_pool")
    with pytest.raises(
        AllocationError, match=r"'acc_pool' is taken in this CTA \(pools \['acc_pool', 'smem'\]\)"
    ):
        TMEMPool(smem, 128, name="acc_pool")
    assert [t.name for t in smem.tmem_pools] == ["acc_pool"]
    assert [b.name for b in smem.buffers] == ["acc_pool_addr"]  # one slot, not two


@pytest.mark.parametrize(
    ("smem_name", "given", "names"),
    [
        ("smem", [None, None], ["tmem", "tmem1"]),
        ("tmem", [None, None], ["tmem1", "tmem2"]),  # the SMEM pool holds the first default
        ("smem", ["tmem1", None], ["tmem1", "tmem2"]),  # was tmem1 twice
        ("smem", ["x", None, None], ["x", "tmem1", "tmem2"]),
        ("smem", [None, "tmem2", None], ["tmem", "tmem2", "tmem3"]),
    ],
)
def test_default_tmem_pool_names_are_free(smem_name, given, names):
    smem = SMEMPool(name=smem_name, target="sm_100a")
    for name in given:
        TMEMPool(smem, 32, name=name)
    assert [t.name for t in smem.tmem_pools] == names


def _blackwell():
    smem = SMEMPool(target="sm_100a")
    tmem = TMEMPool(smem, 512)
    acc = tmem.alloc((128, 256), "float32", name="acc")
    return smem, tmem, acc


def test_stage_views_named_like_a_buffer_are_refused():
    _, tmem, acc = _blackwell()
    tmem.alloc((128, 64), "float32", name="acc_stages")
    with pytest.raises(
        AllocationError, match=r"stage views over 'acc' are named 'acc_stages'.*rename that buffer"
    ):
        tmem.stages(acc, 0, 128, 2)
    assert tmem.stage_views == ()


def test_a_buffer_named_like_stage_views_is_refused():
    smem, tmem, acc = _blackwell()
    tmem.stages(acc, 0, 128, 2)
    with pytest.raises(AllocationError, match="already has a buffer named 'acc_stages'"):
        smem.alloc((4,), "uint32", name="acc_stages")  # one namespace for the whole CTA
    tmem.stages(acc, 0, 64, 4)
    with pytest.raises(AllocationError, match="'acc_stages2'"):
        tmem.alloc((128, 64), "float32", name="acc_stages2")
    tmem.alloc((128, 64), "float32", name="acc_stages3")  # no third view over acc: free
    assert [b.name for b in tmem.buffers] == ["acc", "acc_stages3"]


def test_the_third_view_takes_a_name_a_buffer_had_not():
    _, tmem, acc = _blackwell()
    tmem.alloc((128, 64), "float32", name="acc_stages3")
    tmem.stages(acc, 0, 128, 2)
    tmem.stages(acc, 0, 64, 4)
    with pytest.raises(AllocationError, match="'acc_stages3'"):
        tmem.stages(acc, 0, 32, 8)
    assert len(tmem.stage_views) == 2


def test_a_pool_named_like_a_pool_constant_is_fine():
    # pool namespaces sit in the outer namespace, where the header defines no constants
    smem = SMEMPool(name="total_cols", target="sm_100a")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmem = TMEMPool(smem, 32, name="high_water")
    assert (smem.name, tmem.name) == ("total_cols", "high_water")
