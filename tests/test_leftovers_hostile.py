"""Bad input to the GEMM host API, the cluster launch check and the MMA tile labels: each case
asserts its error class and the words and numbers of the message, or the exact result."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tilemem import SMEMPool
from tilemem.cuda.launch import check_cluster
from tilemem.errors import GemmShapeError, LaunchError
from tilemem.gemm.hopper import _check_ctas, _check_operands, dtype_name, launch_config


def tensor(*shape, dtype="torch.bfloat16"):
    return SimpleNamespace(shape=shape, dtype=dtype)


# -- operand dtypes are compared exactly ------------------------------------------------------

FP8 = "float8_e4m3fn"


@pytest.mark.parametrize(
    ("a", "b", "c", "dtype", "words"),
    [
        # the case: fnuz has another exponent bias and no infinities
        ("torch.float8_e4m3fnuz", f"torch.{FP8}", "torch.bfloat16", FP8, "A must be float8_e4m3fn"),
        (f"torch.{FP8}", "torch.float8_e4m3fnuz", "torch.bfloat16", FP8, "B must be float8_e4m3fn"),
        ("float8_e4m3fnuz", FP8, "bfloat16", FP8, "got float8_e4m3fnuz"),
        ("torch.float8_e5m2", f"torch.{FP8}", "torch.bfloat16", FP8, "A must be float8_e4m3fn"),
        ("torch.float16", "torch.bfloat16", "torch.bfloat16", "bfloat16", "A must be bfloat16"),
        ("torch.bfloat16", "torch.bfloat16", "torch.float32", "bfloat16", "C must be bfloat16"),
        ("torch.bfloat16", "torch.bfloat16", "torch.bfloat16x", "bfloat16", "C must be bfloat16"),
        ("xbfloat16", "bfloat16", "bfloat16", "bfloat16", "A must be bfloat16, got xbfloat16"),
        ("", "bfloat16", "bfloat16", "bfloat16", "A must be bfloat16"),
    ],
)
def test_operand_dtypes_are_exact(a, b, c, dtype, words):
    with pytest.raises(GemmShapeError) as err:
        _check_operands(
            tensor(300, 256, dtype=a), tensor(512, 256, dtype=b), tensor(300, 512, dtype=c), dtype
        )
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("a", "c", "dtype"),
    [
        ("torch.bfloat16", "torch.bfloat16", "bfloat16"),
        ("bfloat16", "bfloat16", "bfloat16"),  # numpy / ml_dtypes spell it bare
        (f"torch.{FP8}", "torch.bfloat16", FP8),
        (FP8, "bfloat16", FP8),
    ],
)
def test_exact_dtypes_pass(a, c, dtype):
    # A 300 x 256, B 512 x 256, C 300 x 512: (M, K, N) = (300, 256, 512)
    got = _check_operands(
        tensor(300, 256, dtype=a), tensor(512, 256, dtype=a), tensor(300, 512, dtype=c), dtype
    )
    assert got == (300, 256, 512)


@pytest.mark.parametrize(
    ("dtype", "name"),
    [("torch.float8_e4m3fnuz", "float8_e4m3fnuz"), ("bfloat16", "bfloat16"), (None, "None")],
)
def test_dtype_name(dtype, name):
    assert dtype_name(SimpleNamespace(dtype=dtype)) == name


# -- launch_config ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "n", "sms", "words"),
    [
        (4096, 4096, 0, "SM count as a positive int, got sms=0"),
        (4096, 4096, -1, "got sms=-1"),
        (4096, 4096, 1.5, "got sms=1.5"),
        (4096, 4096, True, "got sms=True"),
        (4096, 4096, "132", "got sms='132'"),
        (4096, 4096, None, "got sms=None"),
        (0, 4096, 132, "M and N as positive ints, got 0 x 4096"),
        (4096, -8, 132, "got 4096 x -8"),
        (4096.0, 4096, 132, "got 4096.0 x 4096"),
    ],
)
def test_launch_config_refuses(m, n, sms, words):
    with pytest.raises(GemmShapeError) as err:
        launch_config(m, n, sms)
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("m", "n", "sms", "want"),
    [
        # one SM holds no pair: 4096 x 4096 runs alone; cost per width = tiles x width x
        # WIDTH_COST: 256: 32*16*256 = 131072; 240: 32*18*240*1.01 = 139622; 192: 32*22*192*1.03
        # = 139223; 128: 32*32*128*1.4 = 183501 -> 256
        (4096, 4096, 1, (256, 1)),
        # two SMs: 512 tiles > 2, so pairs: 256: 16*16 = 256 rounds * 256 = 65536 (cheapest)
        (4096, 4096, 2, (256, 2)),
        # one tile each way: 256: 256; 240: 242.4; 192: 197.76; 128: 128*1.4 = 179.2 -> 128
        (128, 128, 1, (128, 1)),
        # 3 x 9 tiles of 128 x 64 fit one wave: 64 * 1.9 = 121.6 beats 128's 179.2
        (300, 520, 132, (64, 1)),
    ],
)
def test_launch_config_small_devices(m, n, sms, want):
    assert launch_config(m, n, sms) == want


# -- ctas caps the grid at whole clusters -----------------------------------------------------


@pytest.mark.parametrize(
    ("ctas", "cluster_m", "words"),
    [
        (1, 2, "ctas=1 is below one cluster: this GEMM launches CTAs in clusters of 2"),
        (3, 4, "ctas=3 is below one cluster"),
        (0, 1, "positive number of CTAs, got 0"),
        (-2, 2, "got -2"),
        (True, 1, "got True"),
        (2.0, 2, "got 2.0"),
        ("8", 2, "got '8'"),
    ],
)
def test_bad_ctas(ctas, cluster_m, words):
    with pytest.raises(GemmShapeError) as err:
        _check_ctas(ctas, cluster_m)
    assert words in str(err.value)


@pytest.mark.parametrize(("ctas", "cluster_m"), [(None, 2), (2, 2), (3, 2), (1, 1), (132, 4)])
def test_good_ctas(ctas, cluster_m):
    assert _check_ctas(ctas, cluster_m) is None


# -- the cluster launch check ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("grid", "cluster", "words"),
    [
        ((4, 1, 1), (0, 1, 1), "cluster is 1 to 3 positive ints, got (0, 1, 1)"),
        ((4, 1, 1), (2, 1, 1, 1), "got (2, 1, 1, 1)"),
        ((4, 1, 1), (), "got ()"),
        ((4, 1, 1), (2.0,), "got (2.0,)"),
        ((4, 1, 1), (True, 1), "got (True, 1)"),
        ((4, 1, 1), 2, "got 2"),
        ((4, 1, 1), "2", "got '2'"),
        ((3, 1, 1), (2,), "grid (3, 1, 1) is not a multiple of cluster (2, 1, 1)"),
        ((4, 3), (2, 2), "grid (4, 3, 1) is not a multiple of cluster (2, 2, 1)"),
    ],
)
def test_bad_clusters(grid, cluster, words):
    with pytest.raises(LaunchError) as err:
        check_cluster("gemm", grid, cluster)
    assert "kernel 'gemm'" in str(err.value) and words in str(err.value)


@pytest.mark.parametrize(
    ("grid", "cluster", "want"),
    [((4, 1, 1), (2,), (2, 1, 1)), ((4, 4), (2, 2), (2, 2, 1)), ((8,), [4, 1, 1], (4, 1, 1))],
)
def test_good_clusters(grid, cluster, want):
    assert check_cluster("gemm", grid, cluster) == want


# -- MMA tiles without a core matrix are labelled row-major ----------------------------------


@pytest.mark.parametrize(
    ("shape", "dtype", "label"),
    [
        ((128, 4), "bfloat16", "row-major"),  # 8-byte rows hold no 8 x 16-byte core matrix
        ((64, 12), "float16", "row-major"),  # 24-byte rows: not a whole number of them
        ((64, 2), "float32", "row-major"),
        ((64, 8), "bfloat16", "mma none"),  # 16-byte rows: one core matrix column
        ((64, 4), "float32", "mma none"),
        ((64, 16), "int8", "mma none"),
    ],
)
def test_unswizzled_mma_tiles_are_labelled_by_what_they_are(shape, dtype, label):
    buf = SMEMPool().alloc_mma(shape, dtype, "none", name="t")
    assert buf.layout_name == label
    smem = SMEMPool()
    smem.alloc_mma(shape, dtype, "none", name="t")
    smem.commit()
    assert smem.plan().entry("t").layout == label
