"""``tilemem verify`` without a GPU: its kernels run in the CPU simulator, its host side
(random data, expected images, verdicts, the check list, the report) on a numpy stand-in
for torch.

The stand-in (:class:`FakeTorch`) implements only the torch calls ``verify.py`` makes, each
with numpy's meaning of the same operation; :class:`SimLauncher` runs the kernel through
``tilemem.sim`` where the real check launches it on the GPU, and refuses any hazard. The
oracles are independent of ``verify.py``: numpy's matrix product for wgmma, the source bytes
themselves for the copies, and byte counts worked out from the data.
"""

from __future__ import annotations

import functools
import sys
import types

import numpy as np
import pytest

import tilemem.sim as sim
from tilemem import verify
from tilemem.verify import (
    MODES,
    ROW_MAJOR,
    TMA_LAYOUTS,
    CheckResult,
    check_tma_load,
    check_tma_store,
    check_wgmma,
    tma_load_kernel,
    tma_store_kernel,
    wgmma_kernel,
)

ml_dtypes = pytest.importorskip("ml_dtypes")


EVENTS: list[str] = []  # launches, synchronizations and read-backs, in order


class FakeTensor(np.ndarray):
    """A numpy array with the few torch.Tensor methods the checks call."""

    def cpu(self):
        EVENTS.append("cpu")
        return self

    def numpy(self):
        return np.asarray(self)

    def double(self):
        return self.astype(np.float64)

    def to(self, dtype):
        return self.astype(dtype)


def _tensor(array) -> FakeTensor:
    return np.ascontiguousarray(array).view(FakeTensor)


class _Generator:
    def __init__(self, device=None):
        assert device == "cuda"
        self.rng = np.random.default_rng(0)
        self.seed: int | None = None

    def manual_seed(self, seed: int):
        self.seed, self.rng = seed, np.random.default_rng(seed)
        return self


class FakeTorch(types.ModuleType):
    """``torch`` for the checks: numpy arrays on the host, a recorded ``cuda.synchronize``."""

    uint8, uint16, uint32, int32 = np.uint8, np.uint16, np.uint32, np.int32
    bfloat16 = ml_dtypes.bfloat16
    Generator = _Generator

    def __init__(self, available: bool = True, randn=None):
        super().__init__("torch")
        EVENTS.clear()
        self.cuda = types.SimpleNamespace(
            is_available=lambda: available, synchronize=lambda: EVENTS.append("sync")
        )
        self.linalg = types.SimpleNamespace(norm=lambda x: np.linalg.norm(np.asarray(x)))
        self._randn = randn  # hand-made "random" matrices, in call order

    @staticmethod
    def randint(low, high, shape, dtype, device, generator):
        # numpy, like torch, refuses bounds outside the dtype (high > 256 for uint8)
        return _tensor(generator.rng.integers(low, high, shape, dtype=dtype))

    def randn(self, *shape, device, generator):
        if self._randn:
            return _tensor(self._randn.pop(0).astype(np.float32))
        return _tensor(generator.rng.standard_normal(shape).astype(np.float32))

    @staticmethod
    def zeros(n, dtype, device):
        return _tensor(np.zeros(n, dtype))

    @staticmethod
    def zeros_like(x):
        return _tensor(np.zeros_like(x))

    @staticmethod
    def full(shape, value, device):
        return _tensor(np.full(shape, value, np.float32))

    @staticmethod
    def isfinite(x):
        return np.isfinite(np.asarray(x))


class SimLauncher:
    """``Launcher(kernel)(*args)`` run in the simulator (adversarial schedule), hazards
    refused: what a GPU launch would compute, checked for races on the way."""

    def __init__(self, program):
        self.program = program

    def __call__(self, *args):
        EVENTS.append("launch")
        sim.run(self.program, *args, schedule="adversarial").raise_for_hazards()


class NoLaunch(SimLauncher):
    """A launch that never ran: the output keeps its initial contents."""

    def __call__(self, *args):
        EVENTS.append("launch")


@pytest.fixture
def fake_torch(monkeypatch):
    torch = FakeTorch()
    monkeypatch.setattr(verify, "_torch", lambda: torch)
    monkeypatch.setattr(verify, "Launcher", SimLauncher)
    return torch


@pytest.fixture
def clock(monkeypatch):
    """perf_counter returns 100.0, 102.5, 105.0, ...: every check takes 2.5 s."""
    ticks = iter(100.0 + 2.5 * i for i in range(1000))
    monkeypatch.setattr(verify, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))


# -- the host side: torch, random bytes, expected images, verdicts ----------------------------


def test_torch_is_refused_without_a_visible_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", FakeTorch(available=False))
    with pytest.raises(RuntimeError, match="no CUDA GPU visible to torch"):
        verify._torch()
    present = FakeTorch(available=True)
    monkeypatch.setitem(sys.modules, "torch", present)
    assert verify._torch() is present


def test_random_bytes_take_every_byte_value():
    # 64 x 64 draws of [0, 256): each value has probability (255/256)^4096 ~ 1e-7 to be missing
    torch = FakeTorch()
    data = verify._random_bytes(torch, (64, 64), 7)
    assert data.dtype == np.uint8 and data.shape == (64, 64)
    assert int(data.min()) == 0 and int(data.max()) == 255
    again = verify._random_bytes(torch, (64, 64), 7)
    assert np.array_equal(data, again)  # the seed decides the bytes


def test_expected_image_puts_each_elements_bytes_where_the_layout_says():
    class Layout:  # element i at position pos[i] (in elements)
        def positions(self):
            return {"m": np.array([2, 0, 3])}

    values = np.array([[0x11, 0x22], [0x33, 0x44], [0x55, 0x66]], np.uint8)  # 3 elements of 2 B
    image = verify._expected_image(Layout(), values, 2, 10)
    # element 0 -> bytes 4, 5; element 1 -> bytes 0, 1; element 2 -> bytes 6, 7; 2 bytes unused
    want = [0x33, 0x44, 0, 0, 0x11, 0x22, 0x55, 0x66, 0, 0]
    assert image.tolist() == want and image.dtype == np.uint8


def test_exact_verdicts_count_what_differs(clock):
    start = verify.time.perf_counter()  # 100.0; the verdict reads 102.5
    ok = verify._exact("c", "p", np.zeros(5, bool), "bytes", "fine", start)
    assert ok == CheckResult("c", "p", True, "fine", 2.5)
    bad = verify._exact("c", "p", np.array([1, 0, 1, 1], bool), "bytes", "fine", 0.0)
    assert (bad.ok, bad.detail) == (False, "3 bytes differ")
    one = verify._exact("c", "p", np.array([0, 1], bool), "elements", "fine", 0.0)
    assert (one.ok, one.detail) == (False, "1 elements differ")


def test_row_elems_is_one_box_row():
    # a plain tile's box row is 64 bytes; an MMA tile's is one swizzle row (16 bytes for
    # "none": one core-matrix column)
    got = {(m, e): verify._row_elems(m, e) for m in TMA_LAYOUTS for e in (1, 2, 4)}
    row_bytes = {ROW_MAJOR: 64, "none": 16, "32B": 32, "64B": 64, "128B": 128}
    assert got == {(m, e): row_bytes[m] // e for m in TMA_LAYOUTS for e in (1, 2, 4)}


# -- the kernels, run in the simulator --------------------------------------------------------

LOAD_CASES = [
    (ROW_MAJOR, 1, (64, 64)),
    (ROW_MAJOR, 4, (6, 16)),  # 96 words: the last pass of the 128 copying threads is partial
    (ROW_MAJOR, 4, (2, 2, 16, 16)),
    ("none", 2, (3, 32, 32)),
    ("32B", 4, (64, 16)),
    ("64B", 1, (2, 2, 16, 128)),
    ("128B", 2, (3, 32, 128)),
]


@pytest.mark.parametrize(("mode", "esize", "shape"), LOAD_CASES)
def test_tma_load_kernel_puts_every_byte_where_the_layout_says(mode, esize, shape):
    kernel, tile = tma_load_kernel(mode, esize, shape)
    *lead, rows, cols = shape
    src = np.random.default_rng(3).integers(
        0, 256, (int(np.prod(lead or [1])) * rows, cols * esize)
    )
    src = src.astype(np.uint8)
    out = np.zeros(tile.nbytes // 4, np.uint32)
    from tilemem.cuda.tma import tile_map

    dtype = verify.DTYPE_BY_SIZE[esize]
    sim.run(kernel, tile_map(src.view(dtype), tile), out).raise_for_hazards()
    # the oracle: byte b of element i (row-major over the stacked global tile) sits at
    # layout position of i times esize + b
    pos = tile.layout.positions()["m"]
    image = out.view(np.uint8)
    elements = src.reshape(-1, esize)
    for b in range(esize):
        assert np.array_equal(image[pos * esize + b], elements[:, b])
    assert tile.nbytes == src.size  # and the tile holds nothing else


@pytest.mark.parametrize(
    ("mode", "esize", "shape"),
    [
        (ROW_MAJOR, 2, (64, 32)),
        (ROW_MAJOR, 4, (6, 16)),  # 96 elements: the last pass of the 128 threads is partial
        ("none", 4, (2, 32, 16)),
        ("64B", 1, (2, 32, 128)),
        ("128B", 2, (64, 128)),
    ],
)
def test_tma_store_kernel_writes_the_tile_back_in_logical_order(mode, esize, shape):
    from tilemem.cuda.tma import tile_map

    kernel, tile = tma_store_kernel(mode, esize, shape)
    *lead, rows, cols = shape
    dtype = verify.DTYPE_BY_SIZE[esize]
    src = np.random.default_rng(4).integers(0, 256, ((lead or [1])[0] * rows, cols * esize))
    src = src.astype(np.uint8).view(dtype)
    dst = np.zeros_like(src)
    sim.run(kernel, tile_map(dst, tile), src, schedule="adversarial").raise_for_hazards()
    assert np.array_equal(dst, src)
    # the tile sits after 24 bytes of other buffers, as in a real kernel: 128-byte aligned
    # (a plain tile, as TMA needs) or 1024 (an MMA tile's swizzle period)
    assert tile.byte_offset == (128 if mode == ROW_MAJOR else 1024)


def test_tma_store_kernel_takes_at_most_one_stage_dimension():
    with pytest.raises(ValueError, match="at most one stage dimension"):
        tma_store_kernel("64B", 2, (2, 2, 16, 32))


@pytest.mark.parametrize("mode", MODES)
def test_wgmma_kernel_matches_numpy(mode):
    from tilemem.cuda.tma import tile_map

    kernel, a_buf, b_buf = wgmma_kernel(mode, 64)
    rng = np.random.default_rng(5)
    # small integers: every product and partial sum is exact in fp32, so D equals A B^T
    a = rng.integers(-8, 9, (64, 64)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-8, 9, (64, 64)).astype(ml_dtypes.bfloat16)
    d = np.full((64, 64), np.nan, np.float32)
    sim.run(kernel, tile_map(a, a_buf), tile_map(b, b_buf), d).raise_for_hazards()
    assert np.array_equal(d, a.astype(np.float64) @ b.astype(np.float64).T)


def test_wgmma_kernel_over_a_longer_k_tile():
    from tilemem.cuda.tma import tile_map

    # K = 256: sixteen k16 steps, each one descriptor 16 elements further along K (four
    # 128-byte swizzle atoms along K)
    kernel, a_buf, b_buf = wgmma_kernel("128B", 64, k_tile=256)
    rng = np.random.default_rng(6)
    a = rng.integers(-2, 3, (64, 256)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-2, 3, (64, 256)).astype(ml_dtypes.bfloat16)
    d = np.full((64, 64), np.nan, np.float32)
    sim.run(kernel, tile_map(a, a_buf), tile_map(b, b_buf), d).raise_for_hazards()
    assert np.array_equal(d, a.astype(np.float64) @ b.astype(np.float64).T)


def test_the_kernels_keep_their_default_shapes():
    # wgmma's A is 64 rows (m64) by a 64-wide K tile: four k16 steps
    _k, a, b = wgmma_kernel("128B", 128)
    assert (a.shape, b.shape) == ((64, 64), (128, 64))
    # a tile placed after the 100 default bytes: an MMA tile aligns to 1024
    _k, tile = tma_load_kernel("32B", 2, (64, 32))
    assert tile.byte_offset == 1024


# -- the checks end to end: host side on FakeTorch, kernel in the simulator --------------------


@pytest.mark.parametrize(
    ("mode", "esize", "shape", "pad", "params"),
    [
        # row-major tiles align to 128: 100 pad bytes + an 8-byte barrier at 104 -> 128;
        # 3100 + 8 at 3104 -> 3200
        (ROW_MAJOR, 2, (64, 32), 100, "row-major 2B 64x32 at byte 128"),
        (ROW_MAJOR, 1, (2, 2, 16, 64), 3100, "row-major 1B 2x2x16x64 at byte 3200"),
        # MMA tiles align to 1024: 1500 + 8 at 1504 -> 2048; the mode is right-aligned in 4
        ("none", 4, (3, 32, 16), 1500, "none 4B 3x32x16 at byte 2048"),
        ("64B", 2, (64, 64), 100, " 64B 2B 64x64 at byte 1024"),
        ("128B", 1, (2, 2, 16, 256), 3100, "128B 1B 2x2x16x256 at byte 4096"),
    ],
)
def test_check_tma_load_passes_on_a_right_kernel(
    fake_torch, clock, mode, esize, shape, pad, params
):
    result = check_tma_load(mode, esize, shape, pad=pad)
    assert result == CheckResult("tma_load", params, True, "all bytes where the layout says", 2.5)
    # both arrays are read back after the kernel finished
    assert EVENTS == ["launch", "sync", "cpu", "cpu"]


def test_check_tma_load_fails_when_the_kernel_wrote_nothing(fake_torch, monkeypatch):
    monkeypatch.setattr(verify, "Launcher", NoLaunch)
    result = check_tma_load("128B", 2, (64, 128), seed=11)
    # the output stays zero: every nonzero source byte differs from the image
    source = verify._random_bytes(FakeTorch(), (64, 256), 11)
    assert (result.ok, result.detail) == (False, f"{int((source != 0).sum())} bytes differ")
    assert result.params == "128B 2B 64x128 at byte 1024"  # the default pad: 100 bytes


@pytest.mark.parametrize(
    ("mode", "esize", "shape", "params"),
    [
        (ROW_MAJOR, 4, (64, 16), "row-major 4B 64x16"),
        ("32B", 2, (2, 32, 32), " 32B 2B 2x32x32"),
    ],
)
def test_check_tma_store_passes_on_a_right_kernel(fake_torch, clock, mode, esize, shape, params):
    result = check_tma_store(mode, esize, shape)
    assert result == CheckResult("tma_store", params, True, "global tile in logical order", 2.5)
    assert EVENTS == ["launch", "sync"]  # compared after the kernel finished


def test_check_tma_store_fails_when_the_kernel_wrote_nothing(fake_torch, monkeypatch):
    monkeypatch.setattr(verify, "Launcher", NoLaunch)
    result = check_tma_store("64B", 4, (2, 32, 16), seed=12)
    # dst stays zero: every nonzero source element differs (uint32 from 4 random bytes)
    src = verify._random_bytes(FakeTorch(), (64, 64), 12).view(np.uint32)
    assert (result.ok, result.detail) == (False, f"{int((src != 0).sum())} elements differ")


@pytest.mark.parametrize("n", [64, 128])
def test_check_wgmma_passes_on_a_right_kernel(fake_torch, clock, n):
    result = check_wgmma("64B", n)
    assert (result.check, result.params, result.ok, result.seconds) == (
        "wgmma",
        f" 64B m64n{n}k16 bf16, K=64",
        True,
        2.5,
    )
    # fp32 accumulation of 64 bf16 products against a float64 reference: ~1e-7 relative
    assert result.detail.startswith("rel err ") and float(result.detail[8:]) < 1e-5
    assert EVENTS == ["launch", "sync"]


def _written(d_values):
    """A launcher that writes ``d_values`` into D (the kernel's last argument)."""

    class Writes(SimLauncher):
        def __call__(self, *args):
            EVENTS.append("launch")
            args[-1][...] = d_values

    return Writes


def _one_entry_operands(n: int):
    """A = 10 e_00, B = 10 e_00 (64 x 64 and n x 64): A B^T is 100 at (0, 0), zero elsewhere."""
    a, b = np.zeros((64, 64)), np.zeros((n, 64))
    a[0, 0] = b[0, 0] = 10.0
    ref = np.zeros((64, n))
    ref[0, 0] = 100.0
    return [a, b], ref


@pytest.mark.parametrize(
    ("extra", "ok", "detail"),
    [
        (0.5, True, "rel err 5.00e-03"),  # |D - ref| / |ref| = 0.5 / 100
        (1.0, False, "rel err 1.00e-02"),  # exactly the tolerance: refused (err < 1e-2 passes)
        (300.0, False, "rel err 3.00e+00"),
    ],
)
def test_check_wgmma_verdict_is_relative_error_below_one_percent(monkeypatch, extra, ok, detail):
    operands, ref = _one_entry_operands(64)
    torch = FakeTorch(randn=operands)
    monkeypatch.setattr(verify, "_torch", lambda: torch)
    d = ref.copy()
    d[0, 1] = extra  # ||D - ref|| = extra, ||ref|| = 100: both exact in binary floating point
    monkeypatch.setattr(verify, "Launcher", _written(d))
    result = check_wgmma("none", 64)
    assert (result.ok, result.detail) == (ok, detail)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_check_wgmma_refuses_non_finite_results(monkeypatch, bad):
    operands, ref = _one_entry_operands(128)
    torch = FakeTorch(randn=operands)
    monkeypatch.setattr(verify, "_torch", lambda: torch)
    d = ref.copy()
    d[5, 5] = bad
    monkeypatch.setattr(verify, "Launcher", _written(d))
    assert not check_wgmma("32B", 128).ok


def test_check_wgmma_fails_when_the_kernel_wrote_nothing(fake_torch, monkeypatch):
    monkeypatch.setattr(verify, "Launcher", NoLaunch)
    result = check_wgmma("128B", 64)
    assert (result.ok, result.detail) == (False, "rel err nan")  # D keeps its NaN fill


class _Stop(Exception):
    pass


def test_checks_use_distinct_default_seeds(monkeypatch):
    seeds = []

    def spy(torch, shape, seed):
        seeds.append(seed)
        raise _Stop  # enough: the seed is what this test reads

    monkeypatch.setattr(verify, "_torch", FakeTorch)
    monkeypatch.setattr(verify, "_random_bytes", spy)
    for check in (
        functools.partial(check_tma_load, "none", 2, (64, 32)),
        functools.partial(check_tma_store, "none", 2, (64, 32)),
    ):
        with pytest.raises(_Stop):
            check()
    assert seeds == [0, 1]


# -- the check list, run_all and the report ---------------------------------------------------


def _expected_checks(quick: bool) -> list[tuple[str, str, tuple, dict[str, int]]]:
    """(name, check function, args, keywords), written out from the design: per layout and
    element size, K spans 64 bytes (row-major, none, 32B: two 32-byte swizzle rows), 128 bytes
    (64B) or 256 bytes (128B: two swizzle rows); loads at pads 100, 1500, 3100; wgmma for
    the four MMA layouts at N = 64, 128, 256."""
    k_bytes = {ROW_MAJOR: 64, "none": 64, "32B": 64, "64B": 128, "128B": 256}
    out: list[tuple[str, str, tuple, dict[str, int]]] = []
    for mode in TMA_LAYOUTS:
        for esize in (1, 2, 4):
            k = k_bytes[mode] // esize
            loads = [(64, k)] if quick else [(64, k), (3, 32, k), (2, 2, 16, k)]
            for shape, pad in zip(loads, (100, 1500, 3100)):
                name = f"tma_load {mode} {esize}B {shape}"
                out.append((name, "check_tma_load", (mode, esize, shape), {"pad": pad}))
            for shape in [(2, 32, k)] if quick else [(64, k), (2, 32, k)]:
                name = f"tma_store {mode} {esize}B {shape}"
                out.append((name, "check_tma_store", (mode, esize, shape), {}))
        if mode != ROW_MAJOR:
            for n in (64, 128, 256):
                out.append((f"wgmma {mode} n{n}", "check_wgmma", (mode, n), {}))
    return out


@pytest.mark.parametrize("quick", [False, True])
def test_the_check_list_is_every_layout_size_and_shape(quick):
    checks = verify.all_checks(quick) if quick else verify.all_checks()
    got = [(name, t.func.__name__, t.args, t.keywords) for name, t in checks]
    assert got == _expected_checks(quick)


def test_the_full_list_places_load_tiles_at_1024_2048_4096():
    # every load of an MMA layout must land its tile on those byte offsets (the pads'
    # purpose); plain tiles on 128, 1536, 3200 (128-byte alignment after pad + 8)
    offsets: dict[str, list[int]] = {}
    for _name, t in verify.all_checks():
        if t.func is check_tma_load:
            mode = t.args[0]
            offsets.setdefault(mode, []).append(
                tma_load_kernel(*t.args, **t.keywords)[1].byte_offset
            )
    assert offsets[ROW_MAJOR] == [128, 1536, 3200] * 3
    for mode in MODES:
        assert offsets[mode] == [1024, 2048, 4096] * 3


def test_run_all_reports_a_raising_check_and_goes_on(monkeypatch):
    asked = []
    good = CheckResult("tma_load", "x", True, "fine", 1.0)

    def checks(quick):
        asked.append(quick)

        def boom():
            raise ValueError("y" * 400)

        return [("tma_store 128B 2B (64, 64)", boom), ("tma_load x", lambda: good)]

    monkeypatch.setattr(verify, "all_checks", checks)
    results = verify.run_all()
    assert asked == [False]
    assert results[1] is good
    failed = results[0]
    assert (failed.check, failed.params, failed.ok, failed.seconds) == (
        "tma_store",
        "128B 2B (64, 64)",
        False,
        0.0,
    )
    assert failed.detail == ("ValueError: " + "y" * 400)[:300] and len(failed.detail) == 300
    verify.run_all(quick=True)
    assert asked == [False, True]


def test_format_results_is_a_table_and_a_count():
    results = [
        CheckResult("tma_load", "none 2B", True, "all bytes", 0.25),
        CheckResult("wgmma", "128B m64n64k16", False, "rel err 3.00e+00", 1.5),
    ]
    text = verify.format_results(results, "NVIDIA H200")
    assert text.splitlines() == [
        "tilemem verify on NVIDIA H200",
        "check     parameters      result  time   detail",
        "--------  --------------  ------  -----  ----------------",
        "tma_load  none 2B         ok      0.25s  all bytes",
        "wgmma     128B m64n64k16  FAIL    1.50s  rel err 3.00e+00",
        "1/2 checks passed",
    ]
