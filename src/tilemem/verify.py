"""Hardware oracle for the shared-memory layouts: kernels built with tilemem, run on the local GPU.

Each check returns a :class:`CheckResult`. ``tilemem verify`` runs them all.

- ``tma_load``: TMA loads random bytes into a pool buffer placed after other
  allocations (a row-major ``alloc`` or an ``alloc_mma`` tile of each swizzle
  mode); the raw SMEM bytes are copied out and every element must sit where
  ``buffer.layout`` says.
- ``tma_store``: threads write a tile through tilemem's index arithmetic, TMA
  stores it; the global result must be in logical order.
- ``wgmma``: m64nNk16 bf16 with A and B in pool buffers, descriptors built from
  their layouts; the result must match a float32 reference.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import lang as T
from .cuda.launch import Launcher
from .cuda.tma import tile_map
from .intmath import ceil_div
from .layout.smem import SwizzleMode
from .text import table

MODES = ("none", "32B", "64B", "128B")
ROW_MAJOR = "row-major"  # a plain alloc(): one TMA box per tile, as wide as its rows
TMA_LAYOUTS = (ROW_MAJOR, *MODES)
DTYPE_BY_SIZE = {1: "uint8", 2: "uint16", 4: "uint32"}
THREADS = 128


@dataclass(frozen=True)
class CheckResult:
    check: str
    params: str
    ok: bool
    detail: str
    seconds: float


def _torch():
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU visible to torch")
    return torch


def _random_bytes(torch, shape_bytes, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(0, 256, shape_bytes, dtype=torch.uint8, device="cuda", generator=gen)


def _copy_out_words(raw, out, words: int) -> None:
    """Every thread copies words tid, tid + THREADS, ... of ``raw`` to ``out``."""
    for it in T.serial(ceil_div(words, THREADS), name="it"):
        idx = T.let("idx", it * THREADS + T.thread_id())
        with T.If(idx < words):
            out[idx] = raw[idx]


def _expected_image(layout, values: np.ndarray, esize: int, nbytes: int) -> np.ndarray:
    """The SMEM bytes a buffer must hold: element i's bytes at ``layout.positions()[i] * esize``."""
    pos = layout.positions()["m"]
    image = np.zeros(nbytes, dtype=np.uint8)
    elem_bytes = values.reshape(-1, esize)
    for b in range(esize):
        image[pos * esize + b] = elem_bytes[:, b]
    return image


def _tile(smem, mode: str, shape: tuple, dtype: str):
    """The buffer under test: row-major (128-byte aligned, as TMA needs) or an MMA tile."""
    if mode == ROW_MAJOR:
        return smem.alloc(shape, dtype, align=128, name="tile")
    return smem.alloc_mma(shape, dtype, mode, name="tile")


def _row_elems(mode: str, esize: int) -> int:
    """Elements of one box row: a swizzle row, a 16-byte core-matrix column, or 64 bytes."""
    if mode == ROW_MAJOR:
        return 64 // esize
    return SwizzleMode.parse(mode).row_bytes // esize


def tma_load_kernel(mode: str, esize: int, shape: tuple, pad: int = 100):
    """(kernel, tile buffer): TMA-load a tile placed after ``pad`` bytes, copy its raw bytes out."""
    dtype = DTYPE_BY_SIZE[esize]
    *lead, rows, _cols = shape
    stages = math.prod(lead) if lead else 1
    info = {}

    @T.kernel(target="sm_90a", block=THREADS, name=f"tma_load_{mode.replace('-', '_')}_{esize}B")
    def kernel(tmap: T.TensorMap, out: T.Buffer(("words",), "uint32")):
        smem = T.SMEMPool()
        smem.alloc((pad,), "uint8", name="before")  # push the cursor off every period
        bar = smem.alloc((1,), "uint64", name="bar")
        tile = _tile(smem, mode, shape, dtype)
        smem.commit()
        info["tile"] = tile
        raw = T.SMEMPool(ptr=tile).alloc((tile.nbytes // 4,), "uint32", name="raw")
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init(bar, 1)
            T.ptx.fence.mbarrier_init()
        T.cuda.syncthreads()
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.arrive_expect_tx(bar, tile.nbytes)
            for s in range(stages):
                stage_index = (
                    tuple(int(i) for i in np.unravel_index(s, lead))[: len(lead)] if lead else ()
                )
                T.ptx.tma.load_tile(tmap, tile, bar, s * rows, 0, *stage_index)
        T.ptx.mbarrier.wait(bar, 0)
        _copy_out_words(raw, out, tile.nbytes // 4)

    return kernel, info["tile"]


def _exact(check: str, params: str, differs, unit: str, passed: str, start: float) -> CheckResult:
    """Passed when no entry (one of ``unit``) of the ``differs`` mask is set."""
    bad = int(differs.sum())
    detail = passed if bad == 0 else f"{bad} {unit} differ"
    return CheckResult(check, params, bad == 0, detail, time.perf_counter() - start)


def check_tma_load(
    mode: str, esize: int, shape: tuple, pad: int = 100, seed: int = 0
) -> CheckResult:
    torch = _torch()
    start = time.perf_counter()
    dtype = DTYPE_BY_SIZE[esize]
    *lead, rows, cols = shape
    stages = math.prod(lead) if lead else 1
    kernel, tile = tma_load_kernel(mode, esize, shape, pad)
    source = _random_bytes(torch, (stages * rows, cols * esize), seed)
    global_tile = source.view(getattr(torch, dtype))
    out = torch.zeros(tile.nbytes // 4, dtype=torch.int32, device="cuda")
    Launcher(kernel)(tile_map(global_tile, tile), out)
    torch.cuda.synchronize()
    got = out.cpu().numpy().view(np.uint8)
    want = _expected_image(tile.layout, source.cpu().numpy(), esize, tile.nbytes)
    params = f"{mode:>4} {esize}B {'x'.join(map(str, shape))} at byte {tile.byte_offset}"
    return _exact(
        "tma_load", params, got != want, "bytes", "all bytes where the layout says", start
    )


def tma_store_kernel(mode: str, esize: int, shape: tuple):
    """(kernel, tile buffer): threads write ``src`` into the tile through its layout, TMA stores
    it."""
    dtype = DTYPE_BY_SIZE[esize]
    *lead, rows, cols = shape
    if len(lead) > 1:
        raise ValueError("the store check takes at most one stage dimension")
    stages = lead[0] if lead else 1
    info = {}

    @T.kernel(target="sm_90a", block=THREADS, name=f"tma_store_{mode.replace('-', '_')}_{esize}B")
    def kernel(tmap: T.TensorMap, src: T.Buffer((stages * rows, cols), dtype)):
        smem = T.SMEMPool()
        smem.alloc((3,), "uint64", name="before")
        tile = _tile(smem, mode, shape, dtype)
        smem.commit()
        info["tile"] = tile
        per_thread = ceil_div(stages * rows * cols, THREADS)
        for it in T.serial(per_thread, name="it"):
            idx = T.let("idx", it * THREADS + T.thread_id())
            with T.If(idx < stages * rows * cols):
                s, r, k = idx // (rows * cols), (idx // cols) % rows, idx % cols
                coords = ([s] if lead else []) + [r, k]
                tile[tuple(coords)] = src[
                    s * rows + r, k
                ]  # through the layout: swizzle XORs included
        T.ptx.fence.proxy_async_shared_cta()
        T.cuda.syncthreads()
        with T.If(T.thread_id() == 0):
            for s in range(stages):
                T.ptx.tma.store_tile(tmap, tile, s * rows, 0, *([s] if lead else []))
            T.ptx.tma.commit_group()
            T.ptx.tma.wait_group_read(0)

    return kernel, info["tile"]


def check_tma_store(mode: str, esize: int, shape: tuple, seed: int = 1) -> CheckResult:
    torch = _torch()
    start = time.perf_counter()
    dtype = DTYPE_BY_SIZE[esize]
    *lead, rows, cols = shape
    stages = lead[0] if lead else 1
    kernel, tile = tma_store_kernel(mode, esize, shape)
    src = _random_bytes(torch, (stages * rows, cols * esize), seed).view(getattr(torch, dtype))
    dst = torch.zeros_like(src)
    Launcher(kernel)(tile_map(dst, tile), src)
    torch.cuda.synchronize()
    params = f"{mode:>4} {esize}B {'x'.join(map(str, shape))}"
    return _exact(
        "tma_store", params, dst != src, "elements", "global tile in logical order", start
    )


def wgmma_kernel(mode: str, n: int, k_tile: int = 64):
    """(kernel, A, B): TMA-load A (64 x K) and B (N x K), run K/16 wgmma m64nNk16, write D."""
    info = {}

    @T.kernel(target="sm_90a", block=128, name=f"wgmma_{mode}_n{n}")
    def kernel(tma_a: T.TensorMap, tma_b: T.TensorMap, d: T.Buffer((64, n), "float32")):
        smem = T.SMEMPool()
        bar = smem.alloc((1,), "uint64", name="bar")
        a = smem.alloc_mma((64, k_tile), "bfloat16", mode, name="A")
        b = smem.alloc_mma((n, k_tile), "bfloat16", mode, name="B")
        smem.commit()
        info["a"], info["b"] = a, b
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.init(bar, 1)
            T.ptx.fence.mbarrier_init()
        T.cuda.syncthreads()
        with T.If(T.thread_id() == 0):
            T.ptx.mbarrier.arrive_expect_tx(bar, a.nbytes + b.nbytes)
            T.ptx.tma.load_tile(tma_a, a, bar, 0, 0)
            T.ptx.tma.load_tile(tma_b, b, bar, 0, 0)
        T.ptx.mbarrier.wait(bar, 0)
        acc = T.alloc_local(n // 2, "float32", name="acc")
        for r in T.unroll(n // 2, name="r"):
            acc[r] = 0.0
        T.ptx.wgmma.fence()
        for kk in range(k_tile // 16):
            T.ptx.wgmma.mma_async(
                acc, T.ptx.wgmma.desc(a, 0, kk * 16), T.ptx.wgmma.desc(b, 0, kk * 16), n=n
            )
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)
        warp, lane = T.warp_id(), T.lane_id()
        for r in T.unroll(
            n // 2, name="r"
        ):  # the m64nNk16 f32 accumulator fragment (PTX ISA, wgmma D layout)
            row = warp * 16 + lane // 4 + 8 * ((r // 2) % 2)
            col = (r // 4) * 8 + (lane % 4) * 2 + r % 2
            d[row, col] = acc[r]

    return kernel, info["a"], info["b"]


def check_wgmma(mode: str, n: int, k_tile: int = 64, seed: int = 2) -> CheckResult:
    torch = _torch()
    start = time.perf_counter()
    kernel, a_buf, b_buf = wgmma_kernel(mode, n, k_tile)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a_host = torch.randn(64, k_tile, device="cuda", generator=gen).to(torch.bfloat16)
    b_host = torch.randn(n, k_tile, device="cuda", generator=gen).to(torch.bfloat16)
    d = torch.full((64, n), float("nan"), device="cuda")
    Launcher(kernel)(tile_map(a_host, a_buf), tile_map(b_host, b_buf), d)
    torch.cuda.synchronize()
    ref = a_host.double() @ b_host.double().T
    err = float(torch.linalg.norm(d.double() - ref) / torch.linalg.norm(ref))
    ok = bool(torch.isfinite(d).all()) and err < 1e-2
    return CheckResult(
        "wgmma",
        f"{mode:>4} m64n{n}k16 bf16, K={k_tile}",
        ok,
        f"rel err {err:.2e}",
        time.perf_counter() - start,
    )


def all_checks(quick: bool = False):
    """(name, thunk) for every check; ``quick`` keeps one shape per mode."""
    checks: list[tuple[str, Callable[[], CheckResult]]] = []
    for mode in TMA_LAYOUTS:
        for esize in (1, 2, 4):
            row_elems = _row_elems(mode, esize)
            k = 4 * row_elems if mode == "none" else 2 * row_elems if mode in MODES else row_elems
            shapes = [(64, k)] if quick else [(64, k), (3, 32, k), (2, 2, 16, k)]
            for n, shape in enumerate(shapes):
                pad = (100, 1500, 3100)[n]  # lands the tile at bytes 1024, 2048, 4096
                checks.append(
                    (
                        f"tma_load {mode} {esize}B {shape}",
                        functools.partial(check_tma_load, mode, esize, shape, pad=pad),
                    )
                )
            store_shapes = [(2, 32, k)] if quick else [(64, k), (2, 32, k)]
            for shape in store_shapes:
                checks.append(
                    (
                        f"tma_store {mode} {esize}B {shape}",
                        functools.partial(check_tma_store, mode, esize, shape),
                    )
                )
        if mode == ROW_MAJOR:
            continue  # wgmma reads MMA layouts only
        for n in (64, 128, 256):
            checks.append((f"wgmma {mode} n{n}", functools.partial(check_wgmma, mode, n)))
    return checks


def run_all(quick: bool = False) -> list[CheckResult]:
    results = []
    for name, thunk in all_checks(quick):
        try:
            results.append(thunk())
        except Exception as exc:  # a failing check is reported, the others still run
            results.append(
                CheckResult(
                    name.split()[0],
                    " ".join(name.split()[1:]),
                    False,
                    f"{type(exc).__name__}: {exc}"[:300],
                    0.0,
                )
            )
    return results


def format_results(results: list[CheckResult], device: str) -> str:
    rows = [("check", "parameters", "result", "time", "detail")]
    rows += [
        (r.check, r.params, "ok" if r.ok else "FAIL", f"{r.seconds:.2f}s", r.detail)
        for r in results
    ]
    lines = [f"tilemem verify on {device}", *table(rows)]
    passed = sum(r.ok for r in results)
    lines.append(f"{passed}/{len(results)} checks passed")
    return "\n".join(lines)
