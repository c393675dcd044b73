"""The kernel builder at spots mutation testing found unpinned: names, lets, nested
branches, carved pools, the committed-size comment, the block limit and string annotations.
Expected IR text is written out by hand."""

import pytest

from tilemem import T
from tilemem.errors import IRError, TilememError
from tilemem.ir import BuildError
from tilemem.ir.builder import c_name
from tilemem.pool import SMEMPool


@pytest.mark.parametrize(
    ("name", "c"), [("tile", "tile"), ("1tile", "_1tile"), ("", "_"), ("a-b.c", "a_b_c")]
)
def test_c_names(name, c):
    assert c_name(name) == c


def test_all_of_and_any_of_chain_every_condition_in_order():
    t = T.thread_id()
    assert (
        repr(T.all_of(t < 1, t < 2, t < 3))
        == "threadIdx.x < 1 && threadIdx.x < 2 && threadIdx.x < 3"
    )
    assert (
        repr(T.any_of(t < 1, t < 2, t < 3))
        == "threadIdx.x < 1 || threadIdx.x < 2 || threadIdx.x < 3"
    )
    assert repr(T.all_of(t < 1)) == repr(T.any_of(t < 1)) == "threadIdx.x < 1"


def _kernel():
    # a block of exactly 1024 threads, sm_90a's limit, and a string annotation beside a
    # real one (as `from __future__ import annotations` would leave some of them)
    @T.kernel(target="sm_90a", block=1024)
    def k(x: T.Buffer((128,), "float32"), n: "T.int32"):
        smem = T.SMEMPool()
        smem.alloc((64,), "float32", name="tile")
        big = smem.alloc((1024,), "uint8", name="big")
        smem.commit()
        inner = T.SMEMPool(ptr=big)
        inner.alloc((16,), "float32", name="b")
        inner.alloc((16,), "float32", name="c")
        inner.commit()
        T.let("smem", 1)  # the region's name is taken
        T.let("n", 2)  # so is the parameter's
        T.let("u", n, "uint32")
        T.let("s", n)
        with T.If(n < 1) as outer:
            assert type(outer).__name__ == "If"
            with T.If(n < 2):  # T.Then / T.Else belong to the inner T.If
                with T.Then():
                    x[0] = 1.0
                with T.Else():
                    x[1] = 2.0

    return k


def test_the_ir_text_of_a_small_kernel():
    # tile 64 x 4 = 256 bytes at 0, big 1024 bytes at 256: 1280 bytes committed; the pool
    # carved out of big puts b at 256 + 0 and c at 256 + 64 = 320
    assert str(_kernel().ir).splitlines() == [
        "kernel k(x: float32[128], n: int32)",
        "  target=sm_90a grid=(1, 1, 1) block=(1024, 1, 1) dynamic_smem=1280",
        "  buffer tile: shared.dyn float32[64] at smem+0  # row-major, 256 bytes, align 4",
        "  buffer big: shared.dyn uint8[1024] at smem+256  # row-major, 1024 bytes, align 1",
        "  # shared memory committed: 1280 bytes of dynamic shared memory",
        "  buffer b: shared.dyn float32[16] at smem+256  # row-major, 64 bytes, align 4",
        "  buffer c: shared.dyn float32[16] at smem+320  # row-major, 64 bytes, align 4",
        "  let smem_1: int32 = 1",
        "  let n_1: int32 = 2",
        "  let u: uint32 = uint32(n)",
        "  let s: int32 = n",
        "  if n < 1:",
        "    if n < 2:",
        "      x[0] = 1.0",
        "    else:",
        "      x[1] = 2.0",
    ]


def test_a_kernel_without_shared_memory_asks_for_none():
    @T.kernel(target="sm_90a", block=32)
    def k(x: T.Buffer((32,), "float32")):
        x[T.thread_id()] = 1.0

    assert k.dyn_smem_bytes == 0 and "dynamic_smem=0" in str(k.ir)


def test_a_block_over_the_limit_is_refused():
    with pytest.raises(TilememError, match="block \\(1025, 1, 1\\) has 1025 threads"):

        @T.kernel(target="sm_90a", block=1025)
        def k(x: T.Buffer((32,), "float32")):
            x[0] = 1.0


def test_a_pool_cannot_be_carved_out_of_another_kernels_buffer():
    outside = SMEMPool(target="sm_90a")  # a plan-only pool: its buffer is no kernel's
    foreign = outside.alloc((1024,), "uint8", name="foreign")
    with pytest.raises(
        IRError, match=r"SMEMPool\(ptr=\.\.\.\) takes a shared-memory Buffer of this"
    ):

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((128,), "float32")):
            smem = T.SMEMPool()
            smem.alloc((64,), "float32", name="a")
            smem.commit()
            inner = T.SMEMPool(ptr=foreign)
            inner.alloc((16,), "float32", name="b")


def test_a_build_error_inside_a_kernel_body_keeps_its_own_message():
    # a BuildError already names where it happened: it gets no second "file:line in" prefix
    with pytest.raises(BuildError) as info:

        @T.kernel(target="sm_90a", block=32)
        def outer(x: T.Buffer((32,), "float32")):
            @T.kernel(target="sm_90a", block=32)
            def inner(y):
                pass

    assert str(info.value).startswith("parameter 'y' of kernel 'inner' needs an annotation")


def test_a_symbolic_extent_takes_its_name():
    # the extent "n" becomes a scalar parameter n: a let of the same name gets another
    @T.kernel(target="sm_90a", block=32)
    def k(x: T.Buffer(("n",), "float32")):
        T.let("n", 1)

    assert "  let n_1: int32 = 1" in str(k.ir).splitlines()
