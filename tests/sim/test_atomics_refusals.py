"""``T.ptx.atom.add_acq_rel_gpu`` refuses counters outside global memory by name.

PTX ISA 9.7.13.5 ("atom"): ``atom.global`` takes a global-state-space address; a register
array (``T.alloc_local``) has no such address, and a Python number is no buffer at all. Both
are user errors, reported as an ``IRError`` that names what was given and the fix, before
anything reads a missing attribute of the argument.
"""

from __future__ import annotations

import pytest

from tilemem import T
from tilemem.cuda.codegen import generate
from tilemem.errors import IRError

WANT = r"atom\.add takes a global uint32 buffer \(a T\.Buffer kernel parameter\), got {}: pass"


def test_a_register_array_is_refused():
    # a GlobalBuffer subclass (indexed like one) whose variable lives in registers
    with pytest.raises(IRError, match=WANT.format("LocalArray")):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def k(out: T.Buffer((1,), "uint32")):
            ctr = T.alloc_local(1, "uint32", name="ctr")
            T.ptx.atom.add_acq_rel_gpu(ctr, 0, 1)


def test_a_number_is_refused():
    with pytest.raises(IRError, match=WANT.format("int")):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def k(out: T.Buffer((1,), "uint32")):
            T.ptx.atom.add_acq_rel_gpu(7, 0, 1)


@pytest.mark.parametrize(
    ("index", "value", "match"),
    [
        # a float or bool would reach C++ as ctr[0.5f] or (uint32_t)(1.5f): cast silently
        (0.5, 1, r"atom\.add's index must be an integer .*got float 0\.5: cast it"),
        (True, 1, r"atom\.add's index must be an integer .*got bool True"),
        (0, 1.5, r"atom\.add's value must be an integer .*got float 1\.5"),
        (0, False, r"atom\.add's value must be an integer .*got bool False"),
        # atom.add.u32 adds 32-bit unsigned integers (PTX ISA 9.7.13.5): 0 .. 2**32 - 1
        (0, -1, r"32-bit unsigned integer, got -1: give 0 <= value < 2\*\*32"),
        (0, 1 << 32, r"32-bit unsigned integer, got 4294967296: give 0 <= value < 2\*\*32"),
    ],
)
def test_an_index_or_value_that_is_no_uint32_integer_is_refused(index, value, match):
    with pytest.raises(IRError, match=match):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def k(ctr: T.Buffer((4,), "uint32")):
            T.ptx.atom.add_acq_rel_gpu(ctr, index, value)


def test_a_float_kernel_expression_as_index_is_refused():
    with pytest.raises(IRError, match=r"index must be an integer .*got float32"):

        @T.kernel(target="sm_90a", grid=1, block=32)
        def k(ctr: T.Buffer((4,), "uint32")):
            T.ptx.atom.add_acq_rel_gpu(ctr, T.cast(T.thread_id(), "float32"), 1)


@pytest.mark.parametrize(("value", "text"), [(0, "0u"), ((1 << 32) - 1, "0xffffffffu")])
def test_the_ends_of_the_uint32_range_are_accepted(value, text):
    @T.kernel(target="sm_90a", grid=1, block=32)
    def k(ctr: T.Buffer((4,), "uint32")):
        T.ptx.atom.add_acq_rel_gpu(ctr, 3, value)

    assert f"tm_atom_add_acq_rel_gpu(&ctr[3], (uint32_t)({text}))" in generate(k.ir)
