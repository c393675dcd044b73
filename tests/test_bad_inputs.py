"""Bad inputs at every public entry point: each is refused with its tilemem error class and a
message that names the value and the rule; the inputs that are legitimately accepted give
the exact plan written out below.

Numbers come from docs/DESIGN.md / docs/HARDWARE-RULES.md: SMEM per block 232,448 B on
sm_90a/sm_100a and 166,912 B on sm_80; swizzle periods 256/512/1024 B; TMEM 128 lanes x 512 columns,
allocations powers of two in [32, 512]; 1024 threads per block.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tilemem import DataType, SMEMPool, T, TMEMPool, TMEMStages
from tilemem.errors import (
    AlignmentError,
    AllocationError,
    CapacityError,
    DTypeError,
    LayoutError,
    PlanError,
    PoolStateError,
    SwizzleError,
    TargetError,
    TilememError,
    TMEMOverflowError,
)
from tilemem.ir import IRError
from tilemem.layout import (
    ComposeLayout,
    Iter,
    SwizzleLayout,
    SwizzleMode,
    TileLayout,
    mma_atom_shape,
    mma_shared_layout,
    sf_tmem_layout,
    swizzle_for,
    tmem_datapath_layout,
    widest_swizzle,
)
from tilemem.plan import (
    BufferRequest,
    align_up,
    best_order,
    check_tmem_residency,
    get_target,
    occupancy,
    padding_advice,
    place,
    smem_limit,
    solve_stages,
)

L48 = TileLayout.of((4, 8))  # row-major 4 x 8 on 'm'
TMEM_2D = TileLayout.of((128, 32), ("1@TLane", "1@TCol"))


def smem(**kw):
    return SMEMPool(**kw)


def tmem(total_cols=512, **kw):
    return TMEMPool(SMEMPool(), total_cols, **kw)


def acc(cols=256):
    return tmem().alloc((128, cols), name="acc")


def committed_smem():
    pool = SMEMPool()
    pool.alloc((4,), "float32")
    pool.commit()
    return pool


def committed_tmem():
    pool = tmem(32)
    pool.commit()
    return pool


def dealloced_tmem():
    pool = committed_tmem()
    pool.dealloc()
    return pool


def kernel(body, target="sm_100a", block=128, **kw):
    @T.kernel(target=target, block=block, **kw)
    def k(x: T.Buffer((1,), "float32")):
        body()

    return k


def _never():
    raise AssertionError("not reached")


# --- integer parameters: every one refuses floats, bools, strings and None ------------------
# (label in the message, call with the value, error class, smallest legal value or None)

INT_PARAMS = [
    ("Iter extent", lambda v: Iter(v, 1), LayoutError, 1),
    ("Iter stride", lambda v: Iter(4, v), LayoutError, 0),
    ("SwizzleLayout per_element", lambda v: SwizzleLayout(v, 3), LayoutError, 0),
    ("SwizzleLayout swizzle_len", lambda v: SwizzleLayout(3, v), LayoutError, 0),
    ("SwizzleLayout atom_len", lambda v: SwizzleLayout(3, 3, v), LayoutError, 0),
    ("shape", lambda v: TileLayout.of((4, v)), LayoutError, 1),
    ("shape", lambda v: TileLayout.row_major((v,)), LayoutError, 1),
    ("offset on axis 'm'", lambda v: TileLayout([Iter(4, 1)], offset={"m": v}), LayoutError, 0),
    ("window start", lambda v: L48.window(1, v, 2), LayoutError, 0),
    ("window length", lambda v: L48.window(1, 0, v), LayoutError, 1),
    ("window dimension", lambda v: L48.window(v, 0, 1), LayoutError, 0),
    ("to_shape", lambda v: L48.tile_to((8, v)), LayoutError, 1),
    ("MMA operand shape", lambda v: mma_shared_layout("bfloat16", "128B", (v, 64)), LayoutError, 1),
    ("row_elems", lambda v: widest_swizzle("bfloat16", v), LayoutError, 0),
    ("data path D rows", lambda v: tmem_datapath_layout("D", v, 32), LayoutError, 1),
    ("data path D: cols", lambda v: tmem_datapath_layout("D", 128, v), LayoutError, 1),
    ("scale-factor rows", lambda v: sf_tmem_layout(v, 16, 4), LayoutError, 1),
    ("SF_K", lambda v: sf_tmem_layout(128, v, 4), LayoutError, 1),
    ("sf_reuse", lambda v: sf_tmem_layout(128, 16, 4, v), LayoutError, 1),
    ("pipe_depth", lambda v: sf_tmem_layout(128, 16, 4, 1, v), LayoutError, 1),
    ("threads", lambda v: SMEMPool(threads=v), AllocationError, 1),
    ("shape", lambda v: SMEMPool().alloc((v, 4)), AllocationError, 1),
    ("stride", lambda v: SMEMPool().alloc((4,), strides=(v,)), AllocationError, 0),
    ("shape", lambda v: SMEMPool().alloc_mma((v, 64, 64), "bfloat16"), AllocationError, 1),
    ("move_base_to offset (bytes)", lambda v: SMEMPool().move_base_to(v), AllocationError, 0),
    ("commit size (bytes)", lambda v: SMEMPool().commit(v), AllocationError, 0),
    ("alloc_warp", lambda v: tmem(32, alloc_warp=v), AllocationError, 0),
    ("dealloc_warp", lambda v: tmem(32, dealloc_warp=v), AllocationError, 0),
    ("shape", lambda v: tmem().alloc((128, v)), AllocationError, 1),
    ("cols (32-bit TMEM columns)", lambda v: tmem().alloc((128, 32), cols=v), AllocationError, 1),
    (
        "shape",
        lambda v: tmem().alloc_sf((v, 16), "float8_e4m3fn", sf_per_mma=4),
        AllocationError,
        1,
    ),
    (
        "sf_reuse",
        lambda v: tmem().alloc_sf((128, 16), "float8_e4m3fn", sf_per_mma=4, sf_reuse=v),
        AllocationError,
        1,
    ),
    ("TMEMStages col_start", lambda v: TMEMStages(acc(), v, 32), AllocationError, 0),
    ("TMEMStages width", lambda v: TMEMStages(acc(), 0, v), AllocationError, 1),
    ("TMEMStages stages", lambda v: TMEMStages(acc(), 0, 32, v), AllocationError, 1),
    ("TMEMStages stride", lambda v: TMEMStages(acc(), 0, 32, 2, v), AllocationError, 0),
    ("stage", lambda v: TMEMStages(acc(), 0, 32, 2).view(v), AllocationError, 0),
    ("smem_bytes", lambda v: occupancy(v, 128, "sm_90a"), CapacityError, 0),
    ("threads", lambda v: occupancy(0, v, "sm_90a"), CapacityError, None),
    ("tmem_cols", lambda v: occupancy(0, 128, "sm_100a", v), CapacityError, 0),
    ("ctas_per_sm", lambda v: smem_limit("sm_90a", v), CapacityError, 1),
    (
        "max_stages",
        lambda v: solve_stages([BufferRequest("A", (4,), per_stage=True)], "sm_90a", max_stages=v),
        CapacityError,
        1,
    ),
    ("align_up alignment", lambda v: align_up(8, v), AlignmentError, 1),
    ("align_up value", lambda v: align_up(v, 8), AlignmentError, 0),
    ("placement size", lambda v: place(0, v, 4), AlignmentError, 0),
    ("block", lambda v: kernel(lambda: None, block=(32, v)), IRError, 1),
    ("grid", lambda v: kernel(lambda: None, grid=(v,)), IRError, 1),
]
NOT_INTS = [(1.5, "1.5 (float)"), (4.0, "4.0 (float)"), (True, "True (bool)"), ("8", "'8' (str)")]
# shapes name the extent: "extent 1.5 (float) is not an integer"


def _with(call, value):
    return lambda: call(value)


INT_CASES = [
    pytest.param(
        _with(call, value),
        error,
        (label, "must be", shown),
        id=f"{label} #{n} {shown}",
    )
    for n, (label, call, error, _) in enumerate(INT_PARAMS)
    for value, shown in NOT_INTS
] + [
    pytest.param(
        _with(call, low - 1),
        error,
        (label, f"extent {low - 1} is below 1" if "shape" in label else f"got {low - 1}"),
        id=f"{label} #{n} below {low}",
    )
    for n, (label, call, error, low) in enumerate(INT_PARAMS)
    if low is not None and label not in ("block", "grid")
]


def _mma_after_byte(align, mode="128B"):
    pool = SMEMPool()
    pool.alloc((1,), "uint8")
    return pool.alloc_mma((8, 64), "bfloat16", mode, align=align)


def _pool_with(nbytes, target=None, name=None):
    pool = SMEMPool(target=target)
    pool.alloc((nbytes,), "uint8", name=name)
    return pool


def _slot_pool(dtype):
    pool = SMEMPool()
    return TMEMPool(pool, 32, tmem_addr=pool.alloc((1,), dtype))


def _tmem_with(total_cols, shape):
    pool = tmem(total_cols)
    pool.alloc(shape)
    return pool


def _smem_with_tmem(total_cols):
    pool = SMEMPool()
    TMEMPool(pool, total_cols)
    return pool


def _auto_over():
    pool = _smem_with_tmem(256)
    auto = TMEMPool(pool, "auto")
    auto.alloc((128, 300))
    auto.commit()


def _tmem_commit_only():
    smem = T.SMEMPool()
    pool = T.TMEMPool(smem, 512)
    smem.commit()
    pool.commit()


def _tmem_alloc_only():
    smem = T.SMEMPool()
    pool = T.TMEMPool(smem, 512)
    pool.alloc((128, 32))
    smem.commit()


def _tmem_256():
    smem = T.SMEMPool()
    pool = T.TMEMPool(smem, 256)
    smem.commit()
    pool.commit()
    pool.dealloc()


def _too_much_smem():
    smem = T.SMEMPool()
    smem.alloc((300 * 1024,), "uint8")
    smem.commit()


# --- hand-written cases: the rule each input breaks, with its numbers ----------------------

CASES = [
    # dtypes
    ("dtype unknown", lambda: DataType("float128"), DTypeError, ("'float128'", "bfloat16")),
    ("dtype wrong case", lambda: DataType("Float32"), DTypeError, ("'Float32'", "float32")),
    ("dtype not a string", lambda: DataType(5), DTypeError, ("unknown dtype 5",)),
    ("dtype a list", lambda: DataType(["x"]), DTypeError, ("['x']",)),
    ("alloc dtype", lambda: SMEMPool().alloc((4,), "fp32"), DTypeError, ("'fp32'",)),
    ("tmem dtype", lambda: tmem().alloc((128, 32), "f32"), DTypeError, ("'f32'",)),
    ("request dtype", lambda: BufferRequest("A", (8,), "bf16"), DTypeError, ("'bf16'",)),
    # layout algebra
    ("Iter axis empty", lambda: Iter(4, 1, ""), LayoutError, ("Iter axis", "''")),
    ("Iter axis number", lambda: Iter(4, 1, 3), LayoutError, ("Iter axis", "3")),
    ("Iter extent huge", lambda: Iter(2**41, 1), LayoutError, ("Iter extent", "2199023255552")),
    ("no shard", lambda: TileLayout([]), LayoutError, ("at least one shard Iter",)),
    ("shard not iters", lambda: TileLayout([4, 1]), LayoutError, ("Iter objects", "got 4")),
    ("shard an Iter", lambda: TileLayout(Iter(4, 1)), LayoutError, ("sequence of Iter",)),
    (
        "shape vs shard",
        lambda: TileLayout([Iter(4, 1)], shape=(3,)),
        LayoutError,
        ("shape (3,) holds 3 elements", "hold 4"),
    ),
    (
        "offset not a mapping",
        lambda: TileLayout([Iter(4, 1)], offset=[1]),
        LayoutError,
        ("offset must be a mapping", "[1]"),
    ),
    (
        "offset axis",
        lambda: TileLayout([Iter(4, 1)], offset={3: 1}),
        LayoutError,
        ("offset axis", "3"),
    ),
    (
        "span beyond int64",
        lambda: TileLayout([Iter(2**40, 2**40)]),
        LayoutError,
        ("64-bit", "4611686018427387904"),
    ),
    ("strides length", lambda: TileLayout.of((4, 8), (1,)), LayoutError, ("differ in length",)),
    ("strides a string", lambda: TileLayout.of((4, 8), "1,4"), LayoutError, ("sequence", "'1,4'")),
    ("stride text", lambda: TileLayout.of((4,), ("1@",)), LayoutError, ("'1@'", "STRIDE@AXIS")),
    ("stride pair float", lambda: TileLayout.of((4,), ((1.5, "m"),)), LayoutError, ("(1.5, 'm')",)),
    ("flat index past the end", lambda: L48.apply(32), LayoutError, ("flat index 32", "[0, 32)")),
    ("flat index negative", lambda: L48.apply(-1), LayoutError, ("flat index -1",)),
    ("coordinate past the end", lambda: L48.apply(4, 0), LayoutError, ("(4, 0)", "(4, 8)")),
    (
        "too many coordinates",
        lambda: L48.apply(1, 2, 3),
        LayoutError,
        ("3 indices", "2 dimensions"),
    ),
    ("float coordinate", lambda: L48.apply(1.0, 2), LayoutError, ("1.0 is not an integer",)),
    (
        "numpy float coordinate",
        lambda: L48.apply(np.float32(1), 2),
        LayoutError,
        ("not an integer",),
    ),
    ("no coordinate", L48.apply, LayoutError, ("got none",)),
    (
        "apply shape size",
        lambda: L48.apply(0, 0, shape=(2, 8)),
        LayoutError,
        ("(2, 8) holds 16", "holds 32"),
    ),
    (
        "apply_flat floats",
        lambda: L48.apply_flat([0.5]),
        LayoutError,
        ("must be integers", "float64"),
    ),
    ("apply_flat range", lambda: L48.apply_flat([32]), LayoutError, ("out of range [0, 32)",)),
    ("window outside", lambda: L48.window(1, 6, 4), LayoutError, ("[6, 10)", "extent 8")),
    ("window dimension", lambda: L48.window(2, 0, 1), LayoutError, ("dimension 2", "2-D")),
    ("iters_by_dim size", lambda: L48.iters_by_dim((5,)), LayoutError, ("(5,)", "size 32")),
    (
        "iters straddle",
        lambda: TileLayout.of((3, 4)).iters_by_dim((2, 6)),
        LayoutError,
        ("extent 4 straddles", "extent 6"),
    ),
    (
        "tile rank",
        lambda: L48.tile(L48, (4, 8), (4,)),
        LayoutError,
        ("(4, 8)", "(4,)", "differ in rank"),
    ),
    ("tile inner", lambda: L48.tile("x", (4, 8), (4, 8)), LayoutError, ("inner TileLayout", "'x'")),
    ("tile_to", lambda: L48.tile_to((6, 8)), LayoutError, ("(4, 8) to (6, 8)", "must divide")),
    ("swizzle too long", lambda: SwizzleLayout(3, 21), LayoutError, ("[0, 20]", "got 21")),
    (
        "compose on TMEM axes",
        lambda: ComposeLayout(SwizzleLayout(3, 3), TMEM_2D),
        LayoutError,
        ("axis 'm' only", "TLane"),
    ),
    (
        "compose types",
        lambda: ComposeLayout("x", L48),
        LayoutError,
        ("SwizzleLayout and a TileLayout", "'x'"),
    ),
    # named layouts
    ("swizzle name", lambda: SwizzleMode.parse("256B"), LayoutError, ("'256B'", "'128B'")),
    ("swizzle number", lambda: SwizzleMode.parse(4), LayoutError, ("mode 4", "0..3")),
    ("swizzle bool", lambda: SwizzleMode.parse(True), LayoutError, ("mode True",)),
    ("swizzle None", lambda: SwizzleMode.parse(None), LayoutError, ("mode None",)),
    ("atom of none", lambda: mma_atom_shape("bfloat16", "none"), LayoutError, ("SWIZZLE_NONE",)),
    ("atom dtype", lambda: mma_atom_shape("bf16", "128B"), DTypeError, ("'bf16'",)),
    ("swizzle_for fp6", lambda: swizzle_for("float6_e2m3fn", "128B"), LayoutError, ("got 6",)),
    (
        "mma rank",
        lambda: mma_shared_layout("bfloat16", "128B", (64,)),
        LayoutError,
        ("(..., R, K)",),
    ),
    (
        "mma K",
        lambda: mma_shared_layout("bfloat16", "128B", (64, 32)),
        LayoutError,
        ("K=32", "128-byte swizzle row (64 elements)"),
    ),
    (
        "mma fp6",
        lambda: mma_shared_layout("float6_e2m3fn", "none", (64, 128)),
        LayoutError,
        ("dividing 128 bits", "got 6"),
    ),
    (
        "datapath letter",
        lambda: tmem_datapath_layout("H", 128, 32),
        LayoutError,
        ("'H'", "A, B, C, D, E, F, G"),
    ),
    ("datapath list", lambda: tmem_datapath_layout(["D"], 128, 32), LayoutError, ("['D']",)),
    (
        "datapath rows",
        lambda: tmem_datapath_layout("D", 64, 32),
        LayoutError,
        ("holds 128 rows", "rows=64"),
    ),
    ("datapath B cols", lambda: tmem_datapath_layout("B", 64, 33), LayoutError, ("of 2, got 33",)),
    ("datapath G cols", lambda: tmem_datapath_layout("G", 32, 30), LayoutError, ("of 4, got 30",)),
    (
        "sub_slab on D",
        lambda: tmem_datapath_layout("D", 128, 32, sub_slab=1),
        LayoutError,
        ("only for data paths F and C",),
    ),
    ("sub_slab 2", lambda: tmem_datapath_layout("F", 64, 32, 2), LayoutError, ("0 or 1", "2")),
    ("sf layout rows", lambda: sf_tmem_layout(100, 16, 4), LayoutError, ("multiple of 32", "100")),
    ("sf K", lambda: sf_tmem_layout(128, 15, 4), LayoutError, ("SF_K=15", "sf_per_mma=4")),
    ("sf layout per mma", lambda: sf_tmem_layout(128, 16, 3), LayoutError, ("1, 2 or 4", "got 3")),
    # SMEM pool
    ("pool name", lambda: SMEMPool(name="my pool"), AllocationError, ("'my pool'", "identifier")),
    ("pool name keyword", lambda: SMEMPool(name="float"), AllocationError, ("'float'", "keyword")),
    ("pool target", lambda: SMEMPool(target="sm_99"), TargetError, ("'sm_99'", "sm_90a")),
    ("pool threads", lambda: SMEMPool(threads=2048), AllocationError, ("[1, 1024]", "2048")),
    ("pool ptr", lambda: SMEMPool(5), AllocationError, ("shared-memory Buffer", "5")),
    (
        "strides and layout",
        lambda: SMEMPool().alloc((4,), strides=(1,), layout=TileLayout.row_major((4,))),
        AllocationError,
        ("either strides or layout",),
    ),
    (
        "strides rank",
        lambda: SMEMPool().alloc((4, 8), strides=(1,)),
        AllocationError,
        ("(4, 8) has 2 dimensions", "(1,) has 1"),
    ),
    ("strides scalar", lambda: SMEMPool().alloc((4,), strides=4), AllocationError, ("sequence",)),
    (
        "layout string",
        lambda: SMEMPool().alloc((4,), layout="swizzled"),
        AllocationError,
        ("'swizzled'",),
    ),
    ("layout object", lambda: SMEMPool().alloc((4,), layout=42), AllocationError, ("42",)),
    (
        "layout size",
        lambda: SMEMPool().alloc((4,), layout=TileLayout.row_major((8,))),
        AllocationError,
        ("holds 8 elements", "(4,) has 4"),
    ),
    (
        "layout on TMEM axes",
        lambda: SMEMPool().alloc((128, 32), layout=TMEM_2D),
        AllocationError,
        ("axis 'm' only", "TLane"),
    ),
    ("align 3", lambda: SMEMPool().alloc((4,), align=3), AlignmentError, ("power of two", "use 4")),
    ("align 100", lambda: SMEMPool().alloc((4,), align=100), AlignmentError, ("use 128",)),
    ("align huge", lambda: SMEMPool().alloc((4,), align=2**31), AlignmentError, ("1073741824",)),
    ("align float", lambda: SMEMPool().alloc((4,), align=16.0), AlignmentError, ("16.0",)),
    (
        "scope",
        lambda: SMEMPool().alloc((4,), "float32", None, "global"),
        AllocationError,
        ("scope must be one of", "'global'"),
    ),
    ("shape empty", lambda: SMEMPool().alloc(()), AllocationError, ("got ()",)),
    ("shape string", lambda: SMEMPool().alloc("4"), AllocationError, ("got '4'",)),
    ("shape None", lambda: SMEMPool().alloc(None), AllocationError, ("got None",)),
    ("shape zero", lambda: SMEMPool().alloc((4, 0)), AllocationError, ("extent 0 is below 1",)),
    (
        "shape absurd",
        lambda: SMEMPool().alloc((2**30, 2**30)),
        AllocationError,
        ("1152921504606846976 elements", "1099511627776"),
    ),
    (
        "128B on 64-byte rows",
        lambda: SMEMPool().alloc_mma((64, 32), "bfloat16", "128B"),
        SwizzleError,
        ("64-byte rows", "SWIZZLE_64B_ATOM", "multiple of 64"),
    ),
    (
        "64B on 32-byte rows",
        lambda: SMEMPool().alloc_mma((64, 8), "float32", "64B"),
        SwizzleError,
        ("32-byte rows", "SWIZZLE_32B_ATOM", "multiple of 16"),
    ),
    (
        "rows not a multiple of 8",
        lambda: SMEMPool().alloc_mma((60, 64), "bfloat16", "128B"),
        SwizzleError,
        ("shape[-2] = 60", "use 64"),
    ),
    (
        "mma one dimension",
        lambda: SMEMPool().alloc_mma((64,), "bfloat16", "128B"),
        SwizzleError,
        ("at least 2 dimensions", "(64,)"),
    ),
    (
        "mma off its period",
        lambda: _mma_after_byte(align=16),
        AlignmentError,
        ("start at byte 16", "1024-byte", "pass align=1024"),
    ),
    (
        "mma 64B off its period",
        lambda: _mma_after_byte(align=256, mode="64B"),
        AlignmentError,
        ("start at byte 256", "512-byte", "pass align=512"),
    ),
    (
        "commit below high water",
        lambda: _pool_with(16).commit(10),
        AllocationError,
        ("commit(size=10)", "high-water mark 16"),
    ),
    (
        "commit twice",
        lambda: committed_smem().commit(),
        PoolStateError,
        ("after commit()", "16 bytes"),
    ),
    (
        "alloc after commit",
        lambda: committed_smem().alloc((4,)),
        PoolStateError,
        ("alloc on SMEM",),
    ),
    (
        "alloc_mma after commit",
        lambda: committed_smem().alloc_mma((8, 64), "bfloat16"),
        PoolStateError,
        ("alloc_mma", "after commit()"),
    ),
    (
        "move after commit",
        lambda: committed_smem().move_base_to(0),
        PoolStateError,
        ("move_base_to", "after commit()"),
    ),
    (
        "over sm_90a",
        lambda: _pool_with(240_000, target="sm_90a").commit(),
        CapacityError,
        ("240000 bytes", "232448", "remove at least 7552 bytes"),
    ),
    (
        "over sm_80",
        lambda: _pool_with(170_000, target="sm_80").commit(),
        CapacityError,
        ("166912", "remove at least 3088 bytes"),
    ),
    (
        "commit size over sm_120",
        lambda: SMEMPool(target="sm_120").commit(101_377),
        CapacityError,
        ("101376", "remove at least 1 bytes"),
    ),
    ("no such buffer", lambda: SMEMPool().buffer("nope"), AllocationError, ("no buffer 'nope'",)),
    (
        "duplicate name",
        lambda: _pool_with(4, name="x").alloc((4,), name="x"),
        AllocationError,
        ("already has a buffer named 'x'",),
    ),
    ("name with dash", lambda: SMEMPool().alloc((4,), name="a-b"), AllocationError, ("'a-b'",)),
    ("name digit", lambda: SMEMPool().alloc((4,), name="1a"), AllocationError, ("'1a'",)),
    (
        "name keyword",
        lambda: SMEMPool().alloc((4,), name="int"),
        AllocationError,
        ("'int'", "keyword"),
    ),
    ("name prelude", lambda: SMEMPool().alloc((4,), name="tm_x"), AllocationError, ("'tm_'",)),
    ("name reserved", lambda: SMEMPool().alloc((4,), name="__x"), AllocationError, ("'__'",)),
    ("name empty", lambda: SMEMPool().alloc((4,), name=""), AllocationError, ("''",)),
    ("name int", lambda: SMEMPool().alloc((4,), name=7), AllocationError, ("7 (int)",)),
    (
        "index plan-only",
        lambda: SMEMPool().alloc((4,))[0],
        PoolStateError,
        ("outside a kernel", "@T.kernel"),
    ),
    # TMEM pool
    ("tmem pool None", lambda: TMEMPool(None), AllocationError, ("SMEMPool", "None")),
    ("total_cols 48", lambda: tmem(48), AllocationError, ("total_cols=48", "use 64")),
    ("total_cols 16", lambda: tmem(16), AllocationError, ("[32, 512]", "use 32")),
    ("total_cols 1024", lambda: tmem(1024), AllocationError, ("total_cols=1024", "[32, 512]")),
    ("total_cols text", lambda: tmem("max"), AllocationError, ("'max'", "'auto'")),
    ("total_cols bool", lambda: tmem(True), AllocationError, ("total_cols=True",)),
    ("cta_group 3", lambda: tmem(32, cta_group=3), AllocationError, ("1 or 2", "3")),
    ("cta_group bool", lambda: tmem(32, cta_group=True), AllocationError, ("1 or 2", "True")),
    ("alloc_warp 32", lambda: tmem(32, alloc_warp=32), AllocationError, ("[0, 31]", "32")),
    ("sync flag", lambda: tmem(32, sync_after_alloc="yes"), AllocationError, ("True or False",)),
    ("tmem name", lambda: tmem(32, name="t-1"), AllocationError, ("'t-1'",)),
    (
        "no TMEM on sm_90a",
        lambda: TMEMPool(SMEMPool(target="sm_90a"), 32),
        TargetError,
        ("sm_90a has no tensor memory", "sm_100a"),
    ),
    (
        "no TMEM for plain sm_100",
        lambda: TMEMPool(SMEMPool(target="sm_100"), 32),
        TargetError,
        ("code built for sm_100", "sm_100a"),
    ),
    (
        "slot on a committed pool",
        lambda: TMEMPool(committed_smem(), 32),
        PoolStateError,
        ("alloc on SMEM pool", "after commit()"),
    ),
    (
        "slot 64-bit",
        lambda: _slot_pool("uint64"),
        AllocationError,
        ("32-bit shared-memory buffer",),
    ),
    (
        "slot of TMEM",
        lambda: TMEMPool(SMEMPool(), 32, tmem_addr=acc()),
        AllocationError,
        ("32-bit shared-memory buffer",),
    ),
    (
        "layout and datapath",
        lambda: tmem().alloc((128, 32), layout=TMEM_2D, datapath="D"),
        AllocationError,
        ("not both",),
    ),
    ("datapath 3-D", lambda: tmem().alloc((2, 128, 32), datapath="D"), AllocationError, ("2-D",)),
    ("datapath F rows", lambda: tmem().alloc((128, 32), datapath="F"), LayoutError, ("64 rows",)),
    (
        "rows over lanes",
        lambda: tmem().alloc((256, 32)),
        AllocationError,
        ("256 rows", "128 lanes"),
    ),
    ("tmem 1-D", lambda: tmem().alloc((32,)), AllocationError, ("(rows, cols)",)),
    (
        "half columns",
        lambda: tmem().alloc((128, 3), "bfloat16"),
        AllocationError,
        ("48 bits", "whole number of 32-bit TMEM columns"),
    ),
    (
        "lanes beyond 128",
        lambda: tmem().alloc((64, 32), layout=TileLayout.of((64, 32), ("4@TLane", "1@TCol"))),
        AllocationError,
        ("lane 252", "128"),
    ),
    (
        "tmem layout on m",
        lambda: tmem().alloc((128, 32), layout=TileLayout.row_major((128, 32))),
        AllocationError,
        ("'TLane' and 'TCol' only",),
    ),
    (
        "tmem layout swizzled",
        lambda: tmem().alloc((64, 64), layout=mma_shared_layout("bfloat16", "128B", (64, 64))),
        AllocationError,
        ("TileLayout on axes TLane/TCol",),
    ),
    (
        "tmem layout size",
        lambda: tmem().alloc((128, 32), layout=TileLayout.of((128, 16), ("1@TLane", "1@TCol"))),
        AllocationError,
        ("holds 2048", "4096"),
    ),
    (
        "tmem overflow",
        lambda: _tmem_with(128, (128, 100)).alloc((128, 64), name="acc"),
        TMEMOverflowError,
        ("[100, 164)", "total_cols is 128", "free 36 columns"),
    ),
    (
        "staged overflow",
        lambda: tmem().alloc((3, 128, 256)),
        TMEMOverflowError,
        ("[0, 768)", "total_cols is 512"),
    ),
    (
        "cols below footprint",
        lambda: tmem().alloc((128, 256), cols=16),
        AllocationError,
        ("cols=16", "spans 256 columns"),
    ),
    ("cols above tmem", lambda: tmem().alloc((128, 32), cols=600), AllocationError, ("[1, 512]",)),
    (
        "sf dtype",
        lambda: tmem().alloc_sf((128, 16), "bfloat16", sf_per_mma=4),
        AllocationError,
        ("8-bit",),
    ),
    (
        "sf rank",
        lambda: tmem().alloc_sf((16,), "float8_e4m3fn", sf_per_mma=4),
        AllocationError,
        ("(rows, SF_K * sf_reuse)",),
    ),
    (
        "sf rows",
        lambda: tmem().alloc_sf((100, 16), "float8_e4m3fn", sf_per_mma=4),
        AllocationError,
        ("multiple of 32", "100"),
    ),
    (
        "sf reuse divisor",
        lambda: tmem().alloc_sf((128, 15), "float8_e4m3fn", sf_per_mma=1, sf_reuse=2),
        AllocationError,
        ("positive divisor", "shape[-1]=15"),
    ),
    (
        "sf per mma",
        lambda: tmem().alloc_sf((128, 16), "float8_e4m3fn", sf_per_mma=3),
        AllocationError,
        ("1, 2 or 4", "got 3"),
    ),
    ("tmem move range", lambda: tmem().move_base_to(600), AllocationError, ("[0, 512]", "600")),
    ("tmem move float", lambda: tmem().move_base_to(1.5), AllocationError, ("[0, 512]", "1.5")),
    (
        "tmem commit twice",
        lambda: committed_tmem().commit(),
        PoolStateError,
        ("already committed",),
    ),
    ("dealloc first", lambda: tmem().dealloc(), PoolStateError, ("before commit()",)),
    ("dealloc twice", lambda: dealloced_tmem().dealloc(), PoolStateError, ("already deallocated",)),
    (
        "tmem alloc after commit",
        lambda: committed_tmem().alloc((128, 32)),
        PoolStateError,
        ("after commit()", "32 columns"),
    ),
    (
        "tmem alloc after dealloc",
        lambda: dealloced_tmem().alloc((128, 32)),
        PoolStateError,
        ("after dealloc()",),
    ),
    (
        "tmem move after commit",
        lambda: committed_tmem().move_base_to(0),
        PoolStateError,
        ("move_base_to",),
    ),
    (
        "tmem sf after commit",
        lambda: committed_tmem().alloc_sf((128, 16), "float8_e4m3fn", sf_per_mma=4),
        PoolStateError,
        ("alloc_sf",),
    ),
    (
        "two full pools",
        lambda: TMEMPool(_smem_with_tmem(512), 512),
        CapacityError,
        ("tmem (512) + tmem1 (512) = 1024 columns",),
    ),
    (
        "pools over 512 at auto",
        _auto_over,
        CapacityError,
        ("tmem (256) + tmem1 (512) = 768",),
    ),
    # TMEMStages
    (
        "stages over smem",
        lambda: TMEMStages(SMEMPool().alloc((128, 64)), 0, 32),
        AllocationError,
        ("TMEM buffer",),
    ),
    (
        "stages over 3-D",
        lambda: TMEMStages(tmem().alloc((2, 128, 32)), 0, 32),
        AllocationError,
        ("2-D TMEM",),
    ),
    (
        "stages beyond",
        lambda: TMEMStages(acc(256), 128, 128, 2),
        AllocationError,
        ("reach column 384", "256 columns"),
    ),
    ("stride 0", lambda: TMEMStages(acc(), 0, 32, 2, 0), AllocationError, ("stride=0", "2 stages")),
    ("stages bound", lambda: TMEMStages(acc(), 0, 1, 10**6, 1), AllocationError, ("[1, 512]",)),
    (
        "stage index range",
        lambda: TMEMStages(acc(), 0, 128, 2)[2],
        AllocationError,
        ("stage 2 out of range for 2",),
    ),
    (
        "stage index negative",
        lambda: TMEMStages(acc(), 0, 128, 2)[-1],
        AllocationError,
        ("stage -1",),
    ),
    (
        "stage slice",
        lambda: TMEMStages(acc(), 0, 128, 2)[0, 100:200],
        AllocationError,
        ("[100:200]", "128 columns"),
    ),
    (
        "stage empty slice",
        lambda: TMEMStages(acc(), 0, 128, 2)[0, 5:5],
        AllocationError,
        ("[5:5]",),
    ),
    (
        "stage step",
        lambda: TMEMStages(acc(), 0, 128, 2)[0, 0:64:2],
        AllocationError,
        ("slice a:b",),
    ),
    (
        "stage text",
        lambda: TMEMStages(acc(), 0, 128, 2)["0"],
        AllocationError,
        ("must be an int", "'0'"),
    ),
    (
        "stage float slice",
        lambda: TMEMStages(acc(), 0, 128, 2)[0, 0.5:2],
        AllocationError,
        ("0.5",),
    ),
    (
        "view of a foreign buffer",
        lambda: tmem().stages(acc(), 0, 32),
        AllocationError,
        ("its own buffers",),
    ),
    ("view of junk", lambda: tmem().stages("acc", 0, 32), AllocationError, ("'acc'",)),
    (
        "window across the fold",
        lambda: TMEMStages(tmem().alloc((64, 256), datapath="B"), 100, 100),
        AllocationError,
        ("stage 0 columns [100, 200)", "strided window"),
    ),
    # plan
    ("target unknown", lambda: get_target("sm_99"), TargetError, ("'sm_99'", "sm_100a")),
    ("target number", lambda: get_target(90), TargetError, ("90",)),
    (
        "threads over",
        lambda: occupancy(0, 2048, "sm_90a"),
        CapacityError,
        ("2048 threads", "1 to 1024"),
    ),
    ("threads zero", lambda: occupancy(0, 0, "sm_90a"), CapacityError, ("0 threads",)),
    (
        "occupancy smem",
        lambda: occupancy(240_000, 128, "sm_90a"),
        CapacityError,
        ("remove at least 7552",),
    ),
    ("ctas over slots", lambda: smem_limit("sm_90a", 33), CapacityError, ("[1, 32]", "33")),
    (
        "no per-stage request",
        lambda: solve_stages([BufferRequest("A", (4,))], "sm_90a"),
        CapacityError,
        ("at least one per_stage=True",),
    ),
    (
        "one stage too big",
        lambda: solve_stages([BufferRequest("A", (240_000,), "uint8", per_stage=True)], "sm_90a"),
        CapacityError,
        ("even 1 stage needs 240000 bytes", "remove at least 7552"),
    ),
    ("requests a string", lambda: solve_stages("A", "sm_90a"), CapacityError, ("'A'",)),
    (
        "requests ints",
        lambda: solve_stages([1, 2], "sm_90a"),
        CapacityError,
        ("BufferRequest objects",),
    ),
    (
        "request shape",
        lambda: BufferRequest("A", (-1, 64)),
        CapacityError,
        ("(-1, 64)", "positive"),
    ),
    ("request shape float", lambda: BufferRequest("A", (1.5,)), CapacityError, ("(1.5,)",)),
    ("request shape int", lambda: BufferRequest("A", 64), CapacityError, ("got 64",)),
    ("request name", lambda: BufferRequest("A b", (4,)), CapacityError, ("'A b'",)),
    (
        "request swizzle",
        lambda: BufferRequest("A", (8, 64), swizzle="256B"),
        LayoutError,
        ("'256B'",),
    ),
    ("request align", lambda: BufferRequest("A", (4,), align=3), AlignmentError, ("use 4",)),
    (
        "request per_stage",
        lambda: BufferRequest("A", (4,), per_stage="yes"),
        CapacityError,
        ("True or False",),
    ),
    ("best_order junk", lambda: best_order([1]), PlanError, ("plan entries", "1")),
    ("best_order string", lambda: best_order("AB"), PlanError, ("'AB'",)),
    ("advice junk", lambda: padding_advice("x"), PlanError, ("PoolPlan", "'x'")),
    (
        "entry unknown",
        lambda: _pool_with(4, name="x").plan().entry("y"),
        PlanError,
        ("'y'", "['x']"),
    ),
    (
        "occupancy no target",
        lambda: SMEMPool().plan().occupancy(128),
        CapacityError,
        ("needs a target",),
    ),
    (
        "residency cooperative",
        lambda: check_tmem_residency(
            [("t", 256)], smem_bytes=0, threads=128, target="sm_100a", cooperative=True
        ),
        CapacityError,
        ("16 x 256 = 4096 > 512", "wait on each other"),
    ),
    (
        "residency per CTA",
        lambda: check_tmem_residency(
            [("a", 256), ("b", 512)], smem_bytes=0, threads=128, target="sm_100a", cooperative=False
        ),
        CapacityError,
        ("a (256) + b (512) = 768",),
    ),
    # kernels: errors keep their class, the user's line is added
    (
        "block too big",
        lambda: kernel(lambda: None, block=(32, 33)),
        IRError,
        ("1056 threads", "1024"),
    ),
    ("block four dims", lambda: kernel(lambda: None, block=(1, 1, 1, 1)), IRError, ("1 to 3",)),
    ("block zero", lambda: kernel(lambda: None, block=0), IRError, ("extent 0 is below 1",)),
    ("block float", lambda: kernel(lambda: None, block=1.5), IRError, ("1.5",)),
    ("kernel target", lambda: kernel(lambda: None, target="sm_99"), TargetError, ("'sm_99'",)),
    (
        "kernel uncommitted smem",
        lambda: kernel(lambda: T.SMEMPool().alloc((4,))),
        PoolStateError,
        ("never committed", "0 bytes of dynamic shared memory"),
    ),
    (
        "kernel tmem not freed",
        lambda: kernel(_tmem_commit_only),
        PoolStateError,
        ("never deallocated",),
    ),
    (
        "kernel tmem never committed",
        lambda: kernel(_tmem_alloc_only),
        PoolStateError,
        ("never committed", "tcgen05.alloc"),
    ),
    (
        "kernel alloc warp",
        lambda: kernel(lambda: T.TMEMPool(T.SMEMPool(), 32, alloc_warp=4)),
        AllocationError,
        ("test_bad_inputs.py:", "alloc_warp=4", "128 threads"),
    ),
    (
        "kernel capacity",
        lambda: kernel(_too_much_smem, target="sm_90a"),
        CapacityError,
        ("test_bad_inputs.py:", "232448"),
    ),
    (
        "kernel tmem on sm_90a",
        lambda: kernel(lambda: T.TMEMPool(T.SMEMPool(), 32), target="sm_90a"),
        TargetError,
        ("test_bad_inputs.py:", "sm_90a"),
    ),
    (
        "kernel second region",
        lambda: kernel(lambda: (T.SMEMPool(), T.SMEMPool())),
        IRError,
        ("already has an owning SMEMPool", "ptr="),
    ),
    (
        "kernel ptr junk",
        lambda: kernel(lambda: T.SMEMPool(ptr=3)),
        AllocationError,
        ("shared-memory Buffer",),
    ),
    (
        "kernel cluster residency",
        lambda: kernel(_tmem_256, cluster=2),
        CapacityError,
        ("16 x 256 = 4096 > 512", "wait on each other"),
    ),
]


@pytest.mark.parametrize(
    "call,error,facts", [pytest.param(c, e, f, id=i) for i, c, e, f in CASES] + INT_CASES
)
def test_bad_input_is_refused_with_its_class_and_facts(call, error, facts):
    with pytest.raises(error) as exc:
        call()
    assert isinstance(exc.value, TilememError)
    message = str(exc.value)
    for fact in facts:
        assert fact in message, (fact, message)


def test_the_campaign_has_250_distinct_cases():
    ids = [c[0] for c in CASES] + [p.id for p in INT_CASES]
    assert len(set(ids)) == len(ids) and len(ids) >= 250


# --- accepted inputs: the exact plan ---------------------------------------------------------


def _entries(pool):
    return [(e.name, e.offset, e.length, e.align, e.padding) for e in pool.entries]


def _plan_of(build):
    pool = build()
    return pool.plan()


ACCEPTED = [
    # (id, build -> SMEMPool, {pool name: [(name, offset, length, align, padding)]}, committed)
    (
        "an int shape is 1-D",
        lambda: _commit(SMEMPool(), lambda p: p.alloc(4, name="a")),
        {"smem": [("a", 0, 16, 4, 0)]},
    ),
    (
        "numpy extents and alignment",
        lambda: _commit(
            SMEMPool(), lambda p: p.alloc(np.array([2, 3]), "uint8", align=np.int64(8), name="a")
        ),
        {"smem": [("a", 0, 6, 8, 0)]},
    ),
    (
        "fp4 rounds bits up once",  # 3 x 4 bits = 12 bits -> 2 bytes
        lambda: _commit(SMEMPool(), lambda p: p.alloc((3,), "float4_e2m1fn", name="q")),
        {"smem": [("q", 0, 2, 1, 0)]},
    ),
    (
        "fp6 rounds bits up once",  # 5 x 6 bits = 30 bits -> 4 bytes
        lambda: _commit(SMEMPool(), lambda p: p.alloc((5,), "float6_e2m3fn", name="q")),
        {"smem": [("q", 0, 4, 1, 0)]},
    ),
    (
        "auto swizzle of 4 stages",  # 4 x 128 x 64 bf16 = 65,536 B, 128B rows -> 128B swizzle
        lambda: _commit(SMEMPool(), lambda p: p.alloc_mma((4, 128, 64), "bfloat16", name="A")),
        {"smem": [("A", 0, 65536, 1024, 0)]},
    ),
    (
        "16-byte rows take no swizzle",  # (8, 8) bf16: 128 B, rows of 16 B -> SWIZZLE_NONE
        lambda: _commit(
            SMEMPool(), lambda p: (p.alloc((1,), "uint8", name="f"), p.alloc_mma((8, 8), name="A"))
        ),
        {"smem": [("f", 0, 1, 1, 0), ("A", 1024, 128, 1024, 1023)]},
    ),
    (
        "positional TIRx form",
        lambda: _commit(
            SMEMPool(), lambda p: p.alloc((4,), "float32", None, "shared", 64, name="a")
        ),
        {"smem": [("a", 0, 16, 64, 0)]},
    ),
    (
        "strided buffer covers its span",  # strides (1, 8) over (4, 8): span 1 + 3 + 56 = 60
        lambda: _commit(SMEMPool(), lambda p: p.alloc((4, 8), "uint8", strides=(1, 8), name="s")),
        {"smem": [("s", 0, 60, 1, 0)]},
    ),
    (
        "commit a larger size",
        lambda: _commit(SMEMPool(), lambda p: p.alloc((4,), "uint8", name="a"), size=4096),
        {"smem": [("a", 0, 4, 1, 0)]},
    ),
    (
        "TMEM staged default layout",  # (4, 2, 8) f32: stages 8 columns apart -> 32 columns
        lambda: _with_tmem("auto", lambda t: t.alloc((4, 2, 8), name="s")),
        {"smem": [("tmem_addr", 0, 4, 4, 0)], "tmem": [("s", 0, 32, 1, 0)]},
    ),
    (
        "TMEM data path B folds columns",  # (64, 256) f32 on B: 128 columns, lanes 0..127
        lambda: _with_tmem(128, lambda t: t.alloc((64, 256), datapath="B", name="b")),
        {"smem": [("tmem_addr", 0, 4, 4, 0)], "tmem": [("b", 0, 128, 1, 0)]},
    ),
    (
        "TMEM scale factors",  # 2 stages x 4 row groups x (16 / 4) columns = 32
        lambda: _with_tmem(
            32, lambda t: t.alloc_sf((2, 128, 16), "float8_e4m3fn", sf_per_mma=4, name="sf")
        ),
        {"smem": [("tmem_addr", 0, 4, 4, 0)], "tmem": [("sf", 0, 32, 1, 0)]},
    ),
    (
        "TMEM bf16 columns pack two",  # (128, 64) bf16: 64 x 16 bits = 32 columns
        lambda: _with_tmem(32, lambda t: t.alloc((128, 64), "bfloat16", name="p")),
        {"smem": [("tmem_addr", 0, 4, 4, 0)], "tmem": [("p", 0, 32, 1, 0)]},
    ),
]


def _commit(pool, fill, size=None):
    fill(pool)
    pool.commit(size)
    return pool


def _with_tmem(total_cols, fill):
    pool = SMEMPool()
    t = TMEMPool(pool, total_cols)
    fill(t)
    pool.commit()
    t.commit()
    return pool


@pytest.mark.parametrize("build,expected", [pytest.param(b, e, id=i) for i, b, e in ACCEPTED])
def test_accepted_input_gives_the_exact_plan(build, expected):
    plan = _plan_of(build)
    assert {p.name: _entries(p) for p in plan.pools} == expected
    json.dumps(plan.to_dict())  # plain Python numbers only


def test_accepted_committed_sizes():
    assert _commit(SMEMPool(), lambda p: p.alloc((4,), "uint8"), size=4096).committed_bytes == 4096
    assert _with_tmem("auto", lambda t: t.alloc((4, 2, 8))).tmem_pools[0].total_cols == 32
    assert (
        math.prod(_plan_of(lambda: _commit(SMEMPool(), lambda p: p.alloc(4))).smem.entries[0].shape)
        == 4
    )
