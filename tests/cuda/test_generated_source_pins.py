"""Generated code that would be wrong yet compile, pinned in its source text (no GPU needed):
arithmetic keeps its operands' type, the non-cluster GEMM has no cluster barriers, and every
mbarrier of the verify kernels is initialised by thread 0 only."""

from __future__ import annotations

import re

import pytest

from tilemem import T
from tilemem.gemm.hopper import hopper_gemm_persistent
from tilemem.ir.nodes import BinOp, Store
from tilemem.verify import MODES, tma_load_kernel, tma_store_kernel, wgmma_kernel

# -- arithmetic keeps its operands' type ------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "ctype"),
    [("float32", "float"), ("int32", "int32_t"), ("float64", "double"), ("uint32", "uint32_t")],
)
def test_products_keep_the_operand_type(dtype, ctype):
    def body(x, y):
        y[0] = x[1] * x[2] + x[3]

    body.__annotations__ = {"x": T.Buffer((4,), dtype), "y": T.Buffer((4,), dtype)}
    kernel = T.kernel("sm_90a", block=32, name="fma_probe")(body)

    store = kernel.ir.body
    while not isinstance(store, Store):  # the body is the one store, maybe wrapped
        store = store.body if hasattr(store, "body") else store.stmts[0]
    assert isinstance(store.value, BinOp)
    assert store.value.dtype.name == dtype  # float32 x float32 + float32 is float32
    assert store.value.a.dtype.name == dtype
    body = kernel.source.split("fma_probe(", 1)[1]
    assert f"{ctype}* __restrict__ x, {ctype}* __restrict__ y" in body
    assert "  y[0] = ((x[1] * x[2]) + x[3]);\n" in body  # no cast: the operands' own type
    if dtype != "float64":
        assert "double" not in body


# -- cluster barriers only in the cluster GEMM -------------------------------------------------

CLUSTER_ONLY = (
    "barrier.cluster.arrive.release",
    "barrier.cluster.wait.acquire",
    "mapa.shared",
    "multicast::cluster",
    "%cluster_ctarank",
)


@pytest.fixture
def gemm_sources():
    # built for each test (milliseconds), never cached across tests: mutation testing picks
    # the tests that run a builder's lines, and a test reading an earlier test's build runs none
    print("generating the Hopper GEMM sources for cluster_m = 1 and 2")
    return {cm: hopper_gemm_persistent(cm).source for cm in (1, 2)}


@pytest.mark.parametrize("text", CLUSTER_ONLY)
def test_the_non_cluster_gemm_has_no_cluster_instructions(gemm_sources, text):
    assert text not in gemm_sources[1]
    assert text in gemm_sources[2]  # the pin can fail both ways


def test_the_cluster_gemm_arrives_and_waits_in_pairs(gemm_sources):
    src = gemm_sources[2]
    arrives = src.count("barrier.cluster.arrive.release")
    assert arrives >= 1 and arrives == src.count("barrier.cluster.wait.acquire")


# -- mbarrier init in the verify kernels: thread 0 only ----------------------------------------


def _verify_sources():
    for mode in MODES:
        yield f"tma_load {mode}", tma_load_kernel(mode, 2, (2, 16, 64))[0].source
        yield f"tma_store {mode}", tma_store_kernel(mode, 2, (2, 16, 64))[0].source
        yield f"wgmma {mode}", wgmma_kernel(mode, 64)[0].source


@pytest.fixture
def verify_sources():
    print("generating the verify kernels' sources")
    return dict(_verify_sources())


def _enclosing_ifs(source: str, at: int) -> list[str]:
    """The `if (...) {` lines still open at offset ``at`` (brace depth, innermost last)."""
    opened: list[tuple[int, str]] = []
    depth = 0
    for line in source[:at].splitlines():
        for ch in line:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                while opened and opened[-1][0] > depth:
                    opened.pop()
        if re.match(r"\s*if \(.*\) \{$", line):
            opened.append((depth, line.strip()))
    return [text for _, text in opened]


def test_every_verify_kernel_inits_its_mbarriers_in_thread_0(verify_sources):
    checked = 0
    for name, src in verify_sources.items():
        body = src.split('extern "C" __global__', 1)[1]
        inits = [m.start() for m in re.finditer(r"mbarrier\.init\.shared", body)]
        assert bool(inits) == (not name.startswith("tma_store")), name  # a store needs none
        for at in inits:
            ifs = _enclosing_ifs(body, at)
            assert ifs and ifs[-1] == "if (((int)threadIdx.x == 0)) {", (name, ifs)
            checked += 1
    assert checked >= len(MODES) * 2  # the load and wgmma kernels init one barrier each


def test_the_enclosing_if_finder_sees_a_wrong_guard():
    # the helper itself: a guard by thread != 0 must not read as thread 0
    text = "void k() {\n  if (((int)threadIdx.x != 0)) {\n    mbarrier.init.shared;\n  }\n}\n"
    assert _enclosing_ifs(text, text.index("mbarrier")) == ["if (((int)threadIdx.x != 0)) {"]
    closed = "void k() {\n  if (x) {\n  }\n  mbarrier.init.shared;\n}\n"
    assert _enclosing_ifs(closed, closed.index("mbarrier")) == []


def _thread0_blocks(body: str) -> list[list[str]]:
    """The statements of each top-level ``if (threadIdx.x == 0)`` block, in order, the asm
    text of an ``asm volatile("...")`` statement reduced to its instruction."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in body.splitlines():
        text = line.strip()
        if text == "if (((int)threadIdx.x == 0)) {" and line.startswith("  if"):
            current = []
        elif current is not None and text == "}" and line.startswith("  }"):
            blocks.append(current)
            current = None
        elif current is not None:
            match = re.match(r'asm volatile\("(\{\\n\.reg \.b64 st;\\n)?([^ ;"]+)', text)
            current.append(match.group(2) if match else text)
    return blocks


def _after_blocks(body: str) -> list[str]:
    """The statement right after each top-level ``if (threadIdx.x == 0)`` block."""
    lines = body.splitlines()
    return [
        lines[i + 1].strip() for i, line in enumerate(lines) if line == "  }" and i + 1 < len(lines)
    ]


@pytest.mark.parametrize("kind", ["tma_load", "wgmma"])
def test_verify_barrier_is_initialised_fenced_then_synced(verify_sources, kind):
    # PTX ISA, "mbarrier.init" and "fence.mbarrier_init": one thread initialises the
    # barrier for one arrival (thread 0's arrive.expect_tx), fence.mbarrier_init.release
    # .cluster makes the init visible to the TMA unit's complete_tx, and a CTA barrier
    # orders it before any other thread waits on it
    for mode in MODES:
        body = verify_sources[f"{kind} {mode}"].split('extern "C" __global__', 1)[1]
        first = _thread0_blocks(body)[0]
        assert first == ["mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster"]
        assert '"r"((uint32_t)(1))' in body.split("fence.mbarrier_init", 1)[0]
        assert _after_blocks(body)[0] == "__syncthreads();"
        assert body.count("mbarrier.init") == 1 and "// bar: 1 uint64," in body


def test_verify_store_is_fenced_before_tma_and_waited_before_exit(verify_sources):
    # PTX ISA, "cp.async.bulk.tensor" and "fence.proxy.async": the threads' generic-proxy
    # writes reach the TMA (async proxy) only after fence.proxy.async and a CTA barrier; the
    # shared memory a store reads must stay valid until its bulk group has been read, so the
    # thread that committed it waits for 0 outstanding groups before the CTA exits
    for mode in MODES:
        body = verify_sources[f"tma_store {mode}"].split('extern "C" __global__', 1)[1]
        (block,) = _thread0_blocks(body)
        # (2, 16, 64) uint16 = 2 stages of 128-byte rows, a box as wide as the mode's row
        # (16, 32, 64, 128 bytes for none, 32B, 64B, 128B): 128 / width boxes a stage
        boxes = 2 * (128 // (16 << MODES.index(mode)))
        stores = ["cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"] * boxes
        assert block == [*stores, "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read"]
        assert "cp.async.bulk.wait_group.read 0;" in body
        before = body.split("if (((int)threadIdx.x == 0)) {", 1)[0]
        assert before.rstrip().endswith(
            'asm volatile("fence.proxy.async.shared::cta;" :  :  : "memory");\n  __syncthreads();'
        )


@pytest.mark.parametrize("mode", MODES)
def test_the_raw_view_of_a_loaded_tile_is_the_tile_word_for_word(verify_sources, mode):
    # tma_load copies the tile out as 32-bit words: a 2 x 16 x 64 uint16 tile is 4096 bytes,
    # 1024 words, viewed from the tile's own first byte
    body = verify_sources[f"tma_load {mode}"]
    offset = re.search(r"uint16_t\* tile = reinterpret_cast<uint16_t\*>\(smem \+ (\d+)\);", body)
    assert offset is not None
    assert "// raw: 1024 uint32, row-major, 4096 bytes, align 4" in body
    assert f"uint32_t* raw = reinterpret_cast<uint32_t*>(smem + {offset.group(1)});" in body
    assert "if ((idx < 1024)) {" in body and "out[idx] = raw[idx];" in body


@pytest.mark.parametrize("n", [64, 128, 256])
def test_verify_wgmma_zeroes_every_accumulator_then_fences(n):
    # m64nNk16 with an f32 D: N / 2 registers a thread (PTX ISA, "wgmma register fragments"),
    # all zeroed since every wgmma accumulates; wgmma.fence orders those register writes
    # before the first wgmma.mma_async reads them (PTX ISA, "wgmma.fence"); K = 64 takes
    # four k16 steps, committed as one group and waited for to completion (0 pending)
    body = wgmma_kernel("128B", n)[0].source.split("tm_mbarrier_wait(tm_smem_addr", 1)[1]
    half = n // 2
    zero = f"float acc[{half}];\n  #pragma unroll\n  for (int r = 0; r < {half}; ++r) {{\n"
    assert zero + "    acc[r] = 0.0f;\n  }\n" in body
    after = body.split("acc[r] = 0.0f;\n  }\n", 1)[1]
    steps = re.findall(
        r'asm volatile\("(?:\{\\n\.reg \.pred p;\\nsetp\.ne\.b32 p, %\d+, 0;\\n)?([^ ;"\\]+)', after
    )
    mma = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16"
    assert steps[:7] == [
        "wgmma.fence.sync.aligned",
        *[mma] * 4,
        "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned",
    ]
    assert "wgmma.wait_group.sync.aligned 0;" in after


# -- the GEMM waits for the previous grid before it touches global memory -----------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"cluster_m": 2},
        {"split_k": True, "tile_n": 128},
        {"stream_k": True, "tile_n": 192},
        {"a_rows": 16, "tile_n": 64},
        {"dtype": "float8_e4m3fn", "tile_n": 192, "promote": True, "promote_every": 2},
    ],
    ids=["tiled", "cluster2", "split-k", "stream-k", "a16", "fp8-promoted"],
)
def test_every_gemm_thread_waits_for_the_previous_grid_before_global_memory(kwargs):
    """Launched with programmatic stream serialization (HopperGemm's default), a thread that
    touches global memory before griddepcontrol.wait (PTX ISA 9.0, "griddepcontrol") races
    with the previous kernel; the simulator runs one grid and cannot see it. So the source
    pins it: one wait, at the kernel body's top level (every thread, no branch around it),
    before the first TMA load, global load or store, atomic and flag wait; and one signal to
    the next grid, after the producer's last TMA load (the CTA then has only its last K steps
    and its epilogue left)."""
    source = hopper_gemm_persistent(**kwargs).source
    body = source[source.index("__global__") :]
    lines = body.splitlines()
    waits = [i for i, line in enumerate(lines) if "griddepcontrol.wait;" in line]
    assert len(waits) == 1, waits
    (wait,) = waits
    assert lines[wait].startswith('  asm volatile("griddepcontrol.wait;"'), lines[wait]
    signals = [i for i, line in enumerate(lines) if "griddepcontrol.launch_dependents;" in line]
    loads = [i for i, line in enumerate(lines) if "global.mbarrier::complete_tx" in line]
    assert len(signals) == 1 and loads, (signals, loads)
    assert signals[0] > max(loads) > wait, (signals, loads, wait)
    global_access = re.compile(
        r"cp\.async\.bulk\.tensor|tm_wait_ge_acquire_gpu\(|tm_atom_add|work\[|partial\[|flags\["
    )
    first = next(i for i, line in enumerate(lines) if global_access.search(line))
    assert wait < first, (wait, first, lines[first])
    # nothing above the wait is inside a branch that could skip it: it is not nested
    depth = sum(line.count("{") - line.count("}") for line in lines[:wait])
    assert depth == 1, depth  # inside the kernel function's braces only
