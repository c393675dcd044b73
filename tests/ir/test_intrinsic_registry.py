"""Every instruction is declared once, and everything a kernel emits has a lowering."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tilemem import T
from tilemem.ir.intrinsics import INTRINSICS, LANGUAGE
from tilemem.ir.nodes import Call, Expr, Kernel, Stmt
from tilemem.kernels import KERNELS
from tilemem.verify import MODES, tma_load_kernel, tma_store_kernel, wgmma_kernel

SRC = Path(__file__).resolve().parents[2] / "src" / "tilemem"


def _calls(node, out: set[str]) -> set[str]:
    """Ops of every Call reachable from an IR node (fields walked generically)."""
    if isinstance(node, Call):
        out.add(node.op)
    if isinstance(node, (Expr, Stmt, Kernel)):
        for value in vars(node).values():
            _calls(value, out)
    elif isinstance(node, tuple):
        for value in node:
            _calls(value, out)
    return out


def _built_kernels():
    yield from (make() for make in KERNELS.values())
    for mode in MODES:
        yield tma_load_kernel(mode, 2, (2, 16, 64))[0]
        yield tma_store_kernel(mode, 2, (2, 16, 64))[0]
        yield wgmma_kernel(mode, 64)[0]


@pytest.fixture(scope="module")
def emitted_ops() -> set[str]:
    ops: set[str] = set()
    for program in _built_kernels():
        _calls(program.ir, ops)
    return ops


def test_every_emitted_call_has_a_lowering(emitted_ops):
    assert emitted_ops, "the walk found no calls at all"
    assert emitted_ops - set(INTRINSICS) == set()


def test_call_nodes_are_only_built_by_the_registry():
    """No module but the registry constructs ``Call(...)``: a call exists only as a
    declared instruction, so it has a lowering."""
    builders = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Call"
            ):
                builders.add(path.relative_to(SRC).as_posix())
    assert builders == {"ir/intrinsics/registry.py"}


def test_every_public_instruction_is_reachable_under_T():
    for path, fn in LANGUAGE.items():
        node = T
        for part in path.split("."):
            node = getattr(node, part)
        assert node is fn, path


def test_the_namespaces_keep_the_documented_names():
    # names used by the README and the example kernels (the kernel language's public surface)
    for path in (
        "cuda.syncthreads",
        "cuda.syncwarp",
        "cuda.named_barrier",
        "ptx.elect_sync",
        "ptx.mbarrier.wait",
        "ptx.fence.proxy_async_shared_cta",
        "ptx.tma.load_tile",
        "ptx.tma.store_tile",
        "ptx.tma.commit_group",
        "ptx.tma.wait_group_read",
        "ptx.wgmma.desc",
        "ptx.wgmma.mma_async",
        "ptx.tcgen05.relinquish_alloc_permit",
        "ptx.tcgen05.fence_before_thread_sync",
        "ptx.tcgen05.fence_after_thread_sync",
        "ptx.tcgen05.mma",
    ):
        assert path in LANGUAGE, path


def test_a_helper_is_included_once_and_only_when_used():
    @T.kernel(target="sm_90a", grid=1, block=128)
    def waits():
        smem = T.SMEMPool()
        bar = smem.alloc((1,), "uint64")
        smem.commit()
        T.ptx.mbarrier.wait(bar, 0)
        T.ptx.mbarrier.wait(bar, 1)

    @T.kernel(target="sm_90a", grid=1, block=128)
    def plain():
        T.cuda.syncthreads()

    assert waits.source.count("tm_mbarrier_wait(uint32_t bar") == 1
    assert "tm_mbarrier_wait" not in plain.source


WAITS = [
    (T.ptx.tma.wait_group, "cp.async.bulk.wait_group", "cp.async.bulk.wait_group 1;"),
    (T.ptx.tma.wait_group_read, "cp.async.bulk.wait_group.read", "wait_group.read 1;"),
    (T.ptx.wgmma.wait_group, "wgmma.wait_group", "wgmma.wait_group.sync.aligned 1;"),
]


@pytest.mark.parametrize("bad", [2.7, True, -1])
@pytest.mark.parametrize(("wait", "instruction", "emitted"), WAITS)
def test_a_wait_group_count_is_an_integer_constant(wait, instruction, emitted, bad):
    # PTX ISA: `wait_group N` takes an integer constant N >= 0; 2.7, True and -1 are refused
    # by name instead of being rounded (2.7 -> 2) or handed to ptxas. The message starts
    # with the user's file and line (an error raised inside a kernel).
    from tilemem.errors import IRError

    rule = re.escape(f": {instruction} N must be an integer in [0, 2147483647], got {bad!r}")
    with pytest.raises(IRError, match=rule):

        @T.kernel(target="sm_90a", block=128)
        def k(x: T.Buffer((1,), "float32")):
            wait(bad)

    @T.kernel(target="sm_90a", block=128)
    def ok(x: T.Buffer((1,), "float32")):
        wait(1)

    assert emitted in ok.source
