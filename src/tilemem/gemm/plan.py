"""Memory plan of the persistent Hopper GEMM (``gemm/hopper.py``), bf16 or fp8 inputs.

The CTA tile is ``TILE_M x tile_n`` (``tile_n`` one of :data:`TILE_NS`, :data:`TILE_N` unless
the launch heuristic picks a narrower one), a K tile one 128-byte row (:func:`tile_k`). Two consumer
warpgroups own ``TILE_M / 2`` rows each. The pool has two phases: ``mainloop``
(TMA fills the ring, wgmma drains it) and ``epilogue`` (the consumers stage C).
The kernel is persistent, so the epilogue of tile i runs while the producer
already fills the ring for tile i+1: the ring is live in both phases and the C
staging tiles cannot reuse its bytes. The requests say when each buffer is live, so the stage
solver counts the C tiles beside the ring and picks the deepest ring that still fits one CTA
per SM.
"""

from __future__ import annotations

from typing import NamedTuple

from ..dtype import as_dtype
from ..errors import GemmShapeError
from ..plan.stages import BufferRequest, StageSolution, solve_stages
from ..pool import Buffer, SMEMPool
from ..validate import is_int

TILE_M, TILE_N = 128, 256
# CTA tile widths: wgmma m64nN takes N up to 256 in steps of 8
TILE_NS = (256, 240, 224, 192, 176, 160, 128, 96, 64, 32)
SWIZZLE_ROW_BYTES = 128  # a K tile is one 128-byte swizzle row of A and B
SWIZZLE_ATOM_ROWS = 8  # the 128-byte swizzle repeats every 8 rows (1024 bytes)
INPUT_TYPES = ("bfloat16", "float8_e4m3fn")  # A and B; C is bfloat16, accumulation float32
CONSUMERS = 2  # consumer warpgroups, TILE_M / CONSUMERS rows each
EPILOGUE_COLS = 64  # columns of C per staging tile: one 128-byte swizzle row of bf16
# for widths that 64 does not divide, the first of these that does (240 = 5 x 48, 160 = 2 x 80,
# 224 = 7 x 32, 32 = 1 x 32, 176 = 11 x 16: a stmatrix.x4 writes 16 columns, and 16 is the
# only such count below 176 that divides it): unswizzled, a 128-byte swizzle needs 128-byte
# rows. 224 could take two slices of 112 columns, but four such staging tiles (56 KiB) leave
# the 44 KiB stages three in the ring, where seven slices of 32 (16 KiB of staging) leave four
NARROW_EPILOGUE_COLS = (48, 80, 32, 16)
EPILOGUE_BUFFERS = 2  # per consumer: fill one while the TMA store of the other drains
# Narrow slices (16 columns for 176, 32 for 224) staged in groups of up to EPILOGUE_COLS
# columns, one barrier pair and one wait for the stores' reads a group (epilogue_staging); False
# stages them one slice a buffer as before (kept as a switch for timing the two side by side)
GROUPED_EPILOGUE = True
# More than EPILOGUE_BUFFERS staging buffers a consumer, up to a tile's groups, where the ring
# keeps its depth (epilogue_staging); False keeps two (a switch for timing the two)
SPARE_STAGING = True
PHASES = ("mainloop", "epilogue")
A_ROWS = (128, 64, 32, 16, 8)  # rows of A a stage loads: all of the tile, or fewer for small M
# The most stages of a ring, by (input type, tile width), for tiles that one consumer computes
# (a_rows <= 64), where fewer than fit ran faster: fp8 64-wide tiles, 10 of the 13 that fit.
# Measured on the H200 (docs/PERFORMANCE.md, "The 224-wide tile; clusters of small tiles",
# runs 3 and 5; benchmarks/gemm_ring_depth.py, median of 3 in one process): over the 12 fp8
# shapes of the benchmark that run them, 10 stages against 13 gave 1.012 on the geometric mean,
# faster on 10 (64x6144x4096 1.104 of cuBLASLt against 1.053, 64x4096x14336 0.946 against
# 0.925), slower on 2 (128x4096x14336 1.043 against 1.080, 16x4096x4096 0.990 against 1.000);
# 11 stages gave 1.010, 9 less. The bf16 rings of the same tiles gain nothing from it (within
# 1% either way on six shapes; 32-row tiles lose 1% at 11 and 6% at 9). Our reading, not
# measured: fewer loads in flight over the 128 CTAs keep more of them within open DRAM rows.
# fp8 32-wide tiles (hopper.narrow_width): 14 of the 18 that fit; on the four fp8 shapes the
# policy runs them on (M = 16 and 64, N = 4096, K = 4096 and 14336), medians of 3, 14 stages
# ran 1.003 to 1.015 times as fast as 18, and 12 slower than 14 on all four (docs/PERFORMANCE.md,
# "32-wide tiles for small fp8 products").
RING_CAPS = {("float8_e4m3fn", 64): 10, ("float8_e4m3fn", 32): 14}
CLUSTER_SIZES = (1, 2, 4)  # CTAs of a cluster along M (sharing B) or along N (sharing A)


def tile_k(dtype: str = "bfloat16") -> int:
    """K elements per stage: one 128-byte swizzle row (64 bf16, 128 fp8)."""
    return SWIZZLE_ROW_BYTES * 8 // as_dtype(dtype).bits


def check_tile_n(tile_n: int) -> int:
    """``tile_n`` itself (as an int) if it is an integer and one of :data:`TILE_NS`; else
    :class:`GemmShapeError` (256.0 compares equal to 256 but is no column count)."""
    if not is_int(tile_n) or tile_n not in TILE_NS:
        raise GemmShapeError(f"the CTA tile is {TILE_M} x one of {TILE_NS} columns, got {tile_n!r}")
    return int(tile_n)


def check_a_rows(a_rows: int) -> int:
    """``a_rows`` itself if it is one of :data:`A_ROWS`; else :class:`GemmShapeError`."""
    if not is_int(a_rows) or a_rows not in A_ROWS:
        raise GemmShapeError(
            f"a stage loads one of {A_ROWS} rows of A (whole 8-row swizzle atoms), got {a_rows!r}"
        )
    return int(a_rows)


def check_input_type(dtype: str) -> str:
    """``dtype`` itself if it is one of :data:`INPUT_TYPES`; else :class:`GemmShapeError`."""
    if dtype not in INPUT_TYPES:
        raise GemmShapeError(f"the GEMM takes A and B as one of {INPUT_TYPES}, got {dtype!r}")
    return dtype


def epilogue_cols(tile_n: int = TILE_N) -> int:
    """Columns of C per staging tile: :data:`EPILOGUE_COLS` (a 128-byte swizzle row) when they
    divide ``tile_n``, else the first of :data:`NARROW_EPILOGUE_COLS` that does (48 for 240:
    96-byte rows; 80 for 160: 160-byte rows; 32 for 224 and 32: 64-byte rows; 16 for 176:
    32-byte rows; no swizzle, which needs 128-byte rows), so a slice never reaches into the
    next tile's columns."""
    if check_tile_n(tile_n) % EPILOGUE_COLS == 0:
        return EPILOGUE_COLS
    return next(c for c in NARROW_EPILOGUE_COLS if tile_n % c == 0)


class Staging(NamedTuple):
    """How a computing consumer stages C (:func:`epilogue_staging`)."""

    buffers: int  # staging buffers it cycles through, each a group of slices
    group: int  # slices of epilogue_cols(tile_n) columns a buffer holds


def epilogue_staging(tile_n: int = TILE_N, a_rows: int = TILE_M, relay: bool = False) -> Staging:
    """The staging of C beside the ring, sized into the bytes the ring cannot use: the ring's
    depth is that of :data:`EPILOGUE_BUFFERS` buffers of one slice (as many stages as fit on
    sm_90a), and within it

    - ``group``: slices one buffer holds and the epilogue writes between two barriers, as many
      as make up :data:`EPILOGUE_COLS` columns, at most the tile's slices (4 of 16 columns for
      176, 2 of 32 for 224; 1 where a slice is 48 columns or more), fewer where the ring would
      lose a stage (64 x 224 tiles keep 6 stages with groups of 1, not 5 with 2). A group is
      one barrier pair, one TMA bulk group of its slices' stores and one wait for their reads,
      where each slice took one of each (11 for 176). 1 without :data:`GROUPED_EPILOGUE`.
    - ``buffers``: buffers a consumer cycles through, :data:`EPILOGUE_BUFFERS`, or up to the
      tile's groups where the ring keeps its depth (3 of 64 x 256 or 128 x 192 and x 240, 5
      of 64 x 240), so no group of a tile waits for another's stores to finish reading it.
      Only :data:`EPILOGUE_BUFFERS` without :data:`SPARE_STAGING`."""
    tile_n = check_tile_n(tile_n)
    cols = epilogue_cols(tile_n)
    slices = tile_n // cols

    def depth(group: int, buffers: int) -> int:
        reqs = requests("bfloat16", tile_n, a_rows, relay, group, buffers)
        return solve_stages(reqs, "sm_90a", ctas_per_sm=1).stages

    ring = depth(1, EPILOGUE_BUFFERS)
    group = min(max(1, EPILOGUE_COLS // cols), slices) if GROUPED_EPILOGUE else 1
    while group > 1 and depth(group, EPILOGUE_BUFFERS) < ring:
        group -= 1
    groups = -(-slices // group)
    buffers = max(EPILOGUE_BUFFERS, groups) if SPARE_STAGING else EPILOGUE_BUFFERS
    while buffers > EPILOGUE_BUFFERS and depth(group, buffers) < ring:
        buffers -= 1
    return Staging(buffers, group)


def tile_rows(a_rows: int = TILE_M) -> int:
    """Rows of C a CTA tile covers: ``a_rows`` itself. 128 rows are two consumer warpgroups of
    64; with 64 or fewer one consumer computes (:func:`computing_consumers`) a ``wgmma m64``
    fragment whose rows past ``a_rows`` come from A's zeroed rows and are never stored, so M
    splits into tiles of 64, 32, 16 or 8 rows (M tiles that pair up in clusters sharing B)."""
    return check_a_rows(a_rows)


def stage_rows(a_rows: int = TILE_M) -> int:
    """Rows of an A stage: :data:`TILE_M` for two computing consumers, else 64, the rows one
    ``wgmma m64`` reads (the producer fills the top ``a_rows`` of them)."""
    return TILE_M if check_a_rows(a_rows) == TILE_M else TILE_M // CONSUMERS


def computing_consumers(a_rows: int = TILE_M) -> int:
    """Consumer warpgroups that compute: :data:`CONSUMERS` over a 128-row tile, 1 over a
    64-row one (:func:`tile_rows`; the other zeroes A's unloaded rows and exits)."""
    return CONSUMERS if check_a_rows(a_rows) == TILE_M else 1


def requests(
    dtype: str = "bfloat16",
    tile_n: int = TILE_N,
    a_rows: int = TILE_M,
    relay: bool = False,
    group: int | None = None,
    buffers: int | None = None,
) -> list[BufferRequest]:
    """The kernel's buffers in allocation order; A, B and both barriers once per stage, and
    with ``relay`` (a cluster kernel whose consumers free stages through a relay warp,
    ``hopper.RELAY_CONSUMERS``) a third, ``freed_bar``, on which this CTA's consumers arrive.

    A stage is ``TILE_M x tile_k`` of A and ``tile_n x tile_k`` of B, K-major with the
    128-byte swizzle: 16 KiB + ``tile_n / 8`` KiB for either input type. ``C_stage`` is
    ``CONSUMERS x buffers x group`` tiles of ``TILE_M / CONSUMERS x epilogue_cols(tile_n)``
    bf16 (``buffers`` and ``group``: :func:`epilogue_staging`'s unless given; 8 KiB each
    with 128-byte swizzle; 6 KiB unswizzled for 240, 4 KiB for 224, 2 KiB for 176), written with
    ``stmatrix`` and stored with TMA (the top :func:`tile_rows` of them for tiles of fewer than
    64 rows, :func:`c_box`). With ``a_rows`` of 64 or fewer (:func:`stage_rows`) one
    consumer computes: A is 64 rows a stage and C_stage one consumer's tiles, so the ring
    gets the bytes (8 KiB a stage fewer, 16 KiB of C staging fewer: deeper rings).
    """
    if type(relay) is not bool:
        raise GemmShapeError(f"relay is True or False (a freed_bar ring or none), got {relay!r}")
    rows, k, cols = TILE_M // CONSUMERS, tile_k(dtype), epilogue_cols(tile_n)
    computing = computing_consumers(a_rows)
    for name, value, most in (("group", group, tile_n // cols), ("buffers", buffers, 64)):
        if value is not None and (type(value) is not int or not 1 <= value <= most):
            raise GemmShapeError(
                f"{name} is 1 to {most} (staging buffers of slices of {cols} columns for a "
                f"{tile_n}-wide tile), got {value!r}"
            )
    if group is None or buffers is None:
        staging = epilogue_staging(tile_n, a_rows, relay)
        group = staging.group if group is None else group
        buffers = staging.buffers if buffers is None else buffers
    return [
        BufferRequest("A", (stage_rows(a_rows), k), dtype, swizzle="128B", per_stage=True),
        BufferRequest("B", (check_tile_n(tile_n), k), dtype, swizzle="128B", per_stage=True),
        BufferRequest(
            "C_stage",
            (computing * buffers * group, rows, cols),
            "bfloat16",
            swizzle="128B" if cols == EPILOGUE_COLS else None,
            live=frozenset({"epilogue"}),  # every other buffer is live in both phases
        ),
        BufferRequest("full_bar", (), "uint64", per_stage=True),
        BufferRequest("empty_bar", (), "uint64", per_stage=True),
    ] + ([BufferRequest("freed_bar", (), "uint64", per_stage=True)] if relay else [])


def stages(
    target: str = "sm_90a",
    dtype: str = "bfloat16",
    tile_n: int = TILE_N,
    a_rows: int = TILE_M,
    relay: bool = False,
) -> StageSolution:
    """The deepest A/B ring beside the C staging tiles, up to :func:`ring_cap`: 4 stages on
    sm_90a for 128 x 256 (224 KiB + 64 B), 128 x 240, 128 x 224 and 128 x 192, 5 for 128 x
    176, 6 for 128 x 128, 7 for 128 x 96, 8 for 128 x 64, 10 for 128 x 32; with 64-row tiles
    (``a_rows`` <= 64) 5 for 64 x 256, 6 for 64 x 224 and 64 x 192, 8 for 64 x 128, 10 for 64
    x 96, 13 for 64 x 64 (fp8: 10), 18 for 64 x 32 (fp8: 14).
    ``relay``'s third barrier (8 bytes a stage) leaves every one of these counts as it is."""
    cap = ring_cap(dtype, tile_n, a_rows)
    reqs = requests(dtype, tile_n, a_rows, relay)
    if cap is None:
        return solve_stages(reqs, target, ctas_per_sm=1)
    return solve_stages(reqs, target, ctas_per_sm=1, max_stages=cap)


def ring_cap(dtype: str = "bfloat16", tile_n: int = TILE_N, a_rows: int = TILE_M) -> int | None:
    """The most stages :func:`stages` gives this kernel's ring (:data:`RING_CAPS`, for tiles
    that one consumer computes), or None: as many as fit. GemmShapeError for an input type,
    width or row count the kernel does not take."""
    key = (check_input_type(dtype), check_tile_n(tile_n))
    return RING_CAPS.get(key) if computing_consumers(a_rows) == 1 else None


def hopper_gemm_persistent_plan(
    dtype: str = "bfloat16",
    target: str = "sm_90a",
    tile_n: int = TILE_N,
    a_rows: int = TILE_M,
    relay: bool = False,
) -> SMEMPool:
    """Allocate :func:`requests` with the solved stage count in a pool with :data:`PHASES`;
    inside a kernel the pool emits."""
    depth = stages(target, dtype, tile_n, a_rows, relay).stages
    smem = SMEMPool(name="smem", target=target, phases=PHASES)
    for r in requests(dtype, tile_n, a_rows, relay):
        shape = ((depth,) + tuple(r.shape)) if r.per_stage else tuple(r.shape)
        if r.swizzle is not None:
            smem.alloc_mma(shape, r.dtype, r.swizzle, name=r.name, live=r.live)
        else:
            smem.alloc(shape, r.dtype, name=r.name, live=r.live)
    smem.commit()
    return smem


def hopper_gemm_persistent_bf16(target: str = "sm_90a") -> SMEMPool:
    """The bf16 plan, ``tilemem plan --example hopper-gemm-persistent``."""
    return hopper_gemm_persistent_plan("bfloat16", target)


def b_share(
    cluster_m: int, dtype: str = "bfloat16", target: str = "sm_90a", tile_n: int = TILE_N
) -> Buffer:
    """The rows of a B stage one CTA's producer loads (and multicasts) in a cluster of
    ``cluster_m`` CTAs: ``tile_n / cluster_m`` x ``tile_k``, laid out like B's rows (a plan-only
    buffer from which the B tensor map takes its box)."""
    smem = SMEMPool(name="b_share", target=target)
    rows = check_tile_n(tile_n) // cluster_m
    if rows % SWIZZLE_ATOM_ROWS:
        raise GemmShapeError(
            f"a {tile_n}-wide B tile does not split into {cluster_m} multicast shares of whole "
            f"{SWIZZLE_ATOM_ROWS}-row swizzle atoms ({tile_n} / {cluster_m} = {tile_n / cluster_m}"
            " rows; a 128-byte-swizzled TMA box must start on a 1024-byte boundary): use a "
            "smaller cluster"
        )
    return smem.alloc_mma((rows, tile_k(dtype)), dtype, "128B", name="B_share")


def a_box(a_rows: int, dtype: str = "bfloat16", target: str = "sm_90a") -> Buffer:
    """The rows of an A stage that the producer loads: ``a_rows x tile_k`` at the top of the
    stage, laid out like A's rows (a plan-only buffer from which the A tensor map takes its
    box). With fewer than 64 rows only the first consumer's wgmma reads them; its rows past
    ``a_rows``, zeroed once by the idle consumer, give rows of C past the tile, never stored."""
    check_a_rows(a_rows)
    smem = SMEMPool(name="a_box", target=target)
    return smem.alloc_mma((a_rows, tile_k(dtype)), dtype, "128B", name="A_box")


def c_box(a_rows: int, tile_n: int = TILE_N, target: str = "sm_90a") -> Buffer:
    """The rows of a C staging tile that the epilogue's TMA store writes, for tiles of fewer
    than 64 rows (:func:`tile_rows`): ``a_rows x epilogue_cols(tile_n)`` bf16 at the top of the
    staging tile, laid out like its rows (a plan-only buffer from which C's tensor map takes
    its box). A store of all 64 rows would write the fragment's rows past the tile, zeros
    from A's zeroed rows, over the next M tile's rows of C; tiles of 64 or 128 rows store the
    staging tile whole (the plan's ``C_stage``)."""
    rows = check_a_rows(a_rows)
    if rows >= TILE_M // CONSUMERS:
        raise GemmShapeError(
            f"c_box is for tiles of fewer than {TILE_M // CONSUMERS} rows, got a_rows={rows}: "
            "tiles of 64 or 128 rows store the plan's C_stage tile whole"
        )
    cols = epilogue_cols(tile_n)
    smem = SMEMPool(name="c_box", target=target)
    if cols == EPILOGUE_COLS:
        return smem.alloc_mma((rows, cols), "bfloat16", "128B", name="C_box")
    return smem.alloc((rows, cols), "bfloat16", name="C_box")


class TmaBoxes(NamedTuple):
    """The boxes of the GEMM's three tensor maps (:func:`tma_boxes`)."""

    a: Buffer
    b: Buffer
    c: Buffer


def tma_boxes(
    dtype: str,
    tile_n: int,
    a_rows: int = TILE_M,
    cluster_m: int = 1,
    cluster_n: int = 1,
    target: str = "sm_90a",
    plan: SMEMPool | None = None,
) -> TmaBoxes:
    """The boxes a CTA's tensor maps load and store with, for tiles ``tile_n`` wide of
    ``a_rows`` rows in clusters of ``cluster_m`` along M or ``cluster_n`` along N: A's, the
    plan's A stage, or its top ``a_rows / cluster_n`` rows (:func:`a_box`: this rank's share);
    B's, this rank's multicast share (:func:`b_share`); C's, the staging tile, or its top
    ``a_rows`` rows for tiles of fewer than 64 (:func:`c_box`). ``plan`` is the kernel's
    :func:`hopper_gemm_persistent_plan` when the caller has it already. Clusters are one of
    :data:`CLUSTER_SIZES` along one direction at most (GemmShapeError otherwise)."""
    check_input_type(dtype)
    for name, size in (("cluster_m", cluster_m), ("cluster_n", cluster_n)):
        if type(size) is not int or size not in CLUSTER_SIZES:
            raise GemmShapeError(f"{name} is one of {CLUSTER_SIZES}, got {size!r}")
    if cluster_m > 1 and cluster_n > 1:
        raise GemmShapeError(
            f"a cluster runs along M (sharing B) or along N (sharing A), not both; got "
            f"cluster_m={cluster_m}, cluster_n={cluster_n}: set one of them to 1"
        )
    if plan is None:
        plan = hopper_gemm_persistent_plan(dtype, target, tile_n, a_rows)
    rows = a_rows // cluster_n
    a = plan.buffer("A") if rows == TILE_M else a_box(rows, dtype, target)
    b = b_share(cluster_m, dtype, target, tile_n)
    small = a_rows < TILE_M // CONSUMERS
    return TmaBoxes(a, b, c_box(a_rows, tile_n, target) if small else plan.buffer("C_stage"))
