"""A shared-memory operand given as a 32-bit address expression rather than a buffer
(tilemem.ir.intrinsics.thread.shared_operand: "a pool Buffer, (buffer, *coords), or a 32-bit
address expression"). PTX ISA 9.0 "mbarrier.init" / "mbarrier.arrive": the barrier operand
[addr] is a .shared::cta address, a 32-bit register ("r") here; the expression goes into that
operand as it is, a constant as the constant. Expected lines written out by hand."""

from __future__ import annotations

from tilemem import T


def _kernel():
    @T.kernel(target="sm_90a", block=32)
    def k(x: T.Buffer((8,), "float32")):
        smem = T.SMEMPool()
        bar = smem.alloc((2,), "uint64", name="bar")
        smem.commit()
        T.ptx.mbarrier.init(T.smem_addr(bar) + 8, 1)  # the second barrier, by address
        T.ptx.mbarrier.arrive(1024)  # a constant address

    return k


def test_an_address_expression_is_the_operand():
    src = _kernel().source
    assert (
        'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :  : '
        '"r"((tm_smem_addr((uint8_t*)bar + 0) + 8u)), "r"((uint32_t)(1)) : "memory");'
    ) in src


def test_a_constant_address_is_the_operand():
    src = _kernel().source
    assert (
        'asm volatile("{\\n.reg .b64 st;\\nmbarrier.arrive.shared::cta.b64 st, [%0];\\n}" :  : '
        '"r"(1024) : "memory");'
    ) in src
