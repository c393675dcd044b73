"""``T.ptx.atom.add_acq_rel_gpu`` refuses counters outside global memory by name.

PTX ISA 9.7.13.5 ("atom"): ``atom.global`` takes a global-state-space address; a register
array (``T.alloc_local``) has no such address, and a Python number is no buffer at all. Both
are user errors, reported as an ``IRError`` that names what was given and the fix, before
anything reads a missing attribute of the argument.
"""

from __future__ import annotations

import pytest

from tilemem import T
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
