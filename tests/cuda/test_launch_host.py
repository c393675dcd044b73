"""The launcher's host code on a CPU: the real ``tilemem.cuda.launch`` against a fake driver
(``fakedriver``), checked against the CUDA Driver API's rules and the kernel's own C++ signature.

- Parameters: ``cuLaunchKernel`` takes ``kernelParams``, an array of pointers whose i-th entry
  points to the value of the kernel's i-th parameter, of the size the kernel declares (CUDA
  Driver API, "cuLaunchKernel"). The expected bytes come from the generated signature, read
  here by a regex, and ``struct`` packing of each C type (a pointer: its 8-byte address; a
  ``__grid_constant__`` tensor map: its 128 bytes).
- Dynamic shared memory: above 48 KiB a kernel needs the opt-in
  ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` (CUDA C++ Programming Guide, "Shared
  Memory": allocations above 48 KB per block need dynamic shared memory and an explicit
  opt-in), up to ``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``.
- Clusters: ``cuLaunchKernelEx`` with one ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`` attribute;
  the grid must be a multiple of the cluster in each dimension.
- Compute capability: a cubin for X.y runs on X.z with z >= y; an ``a`` target only on X.y
  (CUDA C++ Programming Guide, "Binary Compatibility", "Feature Availability").
"""

from __future__ import annotations

import ctypes
import re
import struct
import types

import numpy as np
import pytest
from fakedriver import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    DYN_SMEM,
    OPTIN,
    FakeDriver,
    Stream,
    install,
)

from tilemem import T
from tilemem.cuda.launch import Launcher, check_arch, check_cluster
from tilemem.cuda.tma import EncodedTensorMap
from tilemem.errors import LaunchError

KIB = 1024


def probe(smem_floats: int = 128, name: str = "probe", target: str = "sm_90a"):
    """A kernel with every kind of parameter: a buffer with a size ``n`` bound from its shape,
    a float scalar, a tensor map, a fixed-shape int8 buffer and an int32 scalar."""

    @T.kernel(target=target, block=(64, 2), grid=(3, 2), name=name)
    def kernel(
        x: T.Buffer(("n", 4), "float32"),
        factor: T.float32,
        tmap: T.TensorMap,
        y: T.Buffer((8,), "int8"),
        k: T.int32,
    ):
        smem = T.SMEMPool()
        tmp = smem.alloc((smem_floats,), "float32")
        smem.commit()
        i = T.thread_id()
        tmp[i] = factor
        x[i, 0] = tmp[i] + T.cast(k, "float32")
        y[0] = T.cast(x.shape[0], "int8")

    return kernel


def no_params():
    @T.kernel(target="sm_90a", block=32, name="empty")
    def kernel():
        T.cuda.syncthreads()

    return kernel


_C_TYPES = {"float": "<f", "int32_t": "<i", "double": "<d", "int64_t": "<q", "uint32_t": "<I"}


def signature(program) -> list[tuple[str, str]]:
    """``(C type, name)`` of each parameter, from the generated ``__global__`` signature."""
    head = re.search(
        r"__global__ void (?:__launch_bounds__\(\d+\) )?\w+\((.*?)\) \{", program.source
    )
    assert head, program.source[:400]
    params = []
    for decl in filter(None, (d.strip() for d in head.group(1).split(","))):
        *words, name = decl.split()
        params.append((" ".join(w for w in words if w != "__restrict__"), name))
    return params


def param_sizes(program) -> list[int]:
    """Bytes of each parameter: 8 for a pointer, 128 for a tensor map (CUtensorMap is 64-byte
    aligned, 128 bytes: cuda.h), the C type's size otherwise."""
    sizes = []
    for ctype, _ in signature(program):
        if ctype.endswith("*"):
            sizes.append(8)
        elif "tensormap" in ctype:
            sizes.append(128)
        else:
            sizes.append(struct.calcsize(_C_TYPES[ctype]))
    return sizes


def tensor_map(fill: int) -> EncodedTensorMap:
    """An encoded map holding 128 known bytes (the driver's ``CUtensorMap`` is opaque)."""
    tmap = EncodedTensorMap.__new__(EncodedTensorMap)
    raw = (ctypes.c_uint8 * 128)(*[(fill + i) % 256 for i in range(128)])
    tmap._tmap = types.SimpleNamespace(getPtr=lambda: ctypes.addressof(raw), raw=raw)
    return tmap


class DeviceArray:
    """A device array as ``__cuda_array_interface__`` describes one (v3: shape, typestr, data)."""

    def __init__(self, address: int, shape: tuple, typestr: str):
        self.shape = shape
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (address, False),
            "version": 3,
        }


def loaded(monkeypatch, program, drv: FakeDriver, cc=(9, 0)) -> Launcher:
    install(monkeypatch, drv, cc)
    monkeypatch.setattr(program, "compile", lambda: b"\x7fELF cubin")
    drv.param_sizes = param_sizes(program)
    return Launcher(program)


# -- compute capability ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "cc"),
    [
        ("sm_90a", (9, 0)),
        ("sm_100a", (10, 0)),
        ("sm_90", (9, 0)),
        ("sm_80", (8, 0)),
        ("sm_80", (8, 6)),  # X.y on X.z, z >= y
        ("sm_86", (8, 9)),
        ("sm_100", (10, 3)),
        ("sm_120", (12, 1)),
    ],
)
def test_a_cubin_runs_on_its_major_version_at_or_above_its_minor(target, cc):
    assert check_arch("k", target, *cc) is None


@pytest.mark.parametrize(
    ("target", "cc", "words"),
    [
        ("sm_90a", (10, 0), "built for sm_90a, which runs only on compute capability 9.0; "),
        ("sm_100a", (10, 3), "runs only on compute capability 10.0; this device is 10.3"),
        ("sm_100a", (9, 0), "runs only on compute capability 10.0; this device is 9.0"),
        ("sm_90a", (9, 1), "compute capability 9.0; this device is 9.1"),
        ("sm_90", (10, 0), "a sm_90 cubin; a device of compute capability 10.0 cannot run it"),
        ("sm_100", (9, 0), "a sm_100 cubin; a device of compute capability 9.0 cannot run it"),
        ("sm_120", (10, 0), "sm_120 cubin; a device of compute capability 10.0 cannot"),
        ("sm_86", (8, 0), "sm_86 cubin; a device of compute capability 8.0 cannot run it"),
        ("sm_89", (8, 6), "compute capability 8.6 cannot run it (a cubin for X.y runs only"),
    ],
)
def test_a_device_that_cannot_run_the_cubin_is_refused(target, cc, words):
    with pytest.raises(LaunchError) as err:
        check_arch("gemm", target, *cc)
    assert str(err.value).startswith("kernel 'gemm'") and words in str(err.value)


def test_the_launcher_checks_the_device_before_loading(monkeypatch):
    drv = FakeDriver()
    with pytest.raises(
        LaunchError, match=r"runs only on compute capability 9\.0; this device is 10\.0"
    ):
        loaded(monkeypatch, probe(), drv, cc=(10, 0))
    assert not [c for c in drv.calls if c[0] == "cuModuleLoadData"]


# -- loading and the shared-memory limits ------------------------------------------------------


def test_loading_makes_the_device_current_and_gets_the_kernel_by_name(monkeypatch):
    drv = FakeDriver(device_id=1)
    program = probe(name="probe_fn")
    launcher = loaded(monkeypatch, program, drv)
    assert drv.current == [1]  # the module loads into the device's (primary) context
    names = [c[0] for c in drv.calls]
    assert names == ["cuModuleLoadData", "cuModuleGetFunction", "cuDeviceGetAttribute"]
    assert drv.calls[0][1] == b"\x7fELF cubin"
    assert drv.calls[1][2] == b"probe_fn"
    assert drv.calls[2][1:] == (OPTIN, 1)  # the opt-in maximum of this device
    assert launcher.name == "probe_fn"


@pytest.mark.parametrize(
    "call", ["cuModuleLoadData", "cuModuleGetFunction", "cuDeviceGetAttribute"]
)
def test_a_failed_load_names_the_call_and_the_driver_error(monkeypatch, call):
    drv = FakeDriver(fail={call: CUDA_ERROR_NO_BINARY_FOR_GPU})
    with pytest.raises(LaunchError) as err:
        loaded(monkeypatch, probe(), drv)
    assert str(err.value) == f"kernel 'probe': {call} failed with CUDA_ERROR_NO_BINARY_FOR_GPU"


# probe(n) plans n floats after nothing else: 4 n bytes of dynamic shared memory
@pytest.mark.parametrize(
    ("floats", "raised"),
    [
        (128, None),
        (12 * KIB - 4, None),  # 48 KiB - 16 bytes
        (12 * KIB, None),  # exactly 48 KiB: no opt-in needed
        (12 * KIB + 4, 48 * KIB + 16),  # 16 bytes over: the opt-in, to exactly the need
        (12 * KIB + 256, 49 * KIB),
        (56 * KIB, 224 * KIB),
        (227 * KIB // 4, 227 * KIB),  # the opt-in maximum itself
    ],
)
def test_dynamic_shared_memory_above_48_kib_is_opted_in(monkeypatch, floats, raised):
    drv = FakeDriver()
    program = probe(floats)
    assert program.dyn_smem_bytes == 4 * floats
    loaded(monkeypatch, program, drv)
    sets = [c[1:] for c in drv.calls if c[0] == "cuFuncSetAttribute"]
    assert sets == ([] if raised is None else [(DYN_SMEM, raised)])


def test_more_shared_memory_than_the_opt_in_maximum_is_refused(monkeypatch):
    # an sm_80 cubin (163 KiB planned limit) on a compute capability 8.6 device, whose
    # opt-in maximum is 99 KiB = 101376 bytes
    drv = FakeDriver(optin=99 * KIB)
    with pytest.raises(LaunchError) as err:
        loaded(monkeypatch, probe(99 * KIB // 4 + 4, target="sm_80"), drv, cc=(8, 6))
    assert str(err.value) == (
        "kernel 'probe' needs 101392 bytes of dynamic shared memory but this device allows "
        "101376 per block (opt-in maximum): remove 16 bytes from its SMEMPool"
    )
    assert not [c for c in drv.calls if c[0] == "cuFuncSetAttribute"]
    drv = FakeDriver(optin=99 * KIB)
    loaded(monkeypatch, probe(99 * KIB // 4, target="sm_80"), drv, cc=(8, 6))  # exactly fits
    assert [c[1:] for c in drv.calls if c[0] == "cuFuncSetAttribute"] == [(DYN_SMEM, 99 * KIB)]


def test_a_refused_opt_in_is_a_launch_error(monkeypatch):
    drv = FakeDriver(fail={"cuFuncSetAttribute": CUDA_ERROR_INVALID_VALUE})
    with pytest.raises(LaunchError) as err:
        loaded(monkeypatch, probe(16 * KIB), drv)
    assert str(err.value) == (
        "kernel 'probe': raising the dynamic shared-memory limit to 65536 bytes failed with "
        "CUDA_ERROR_INVALID_VALUE"
    )


# -- the parameters the driver reads -----------------------------------------------------------


def expected_params(program, values: dict) -> list[bytes]:
    """Each parameter's bytes from its C type: a pointer's address, a tensor map's 128 bytes,
    a scalar packed little-endian (struct)."""
    out = []
    for ctype, name in signature(program):
        value = values[name]
        if ctype.endswith("*"):
            out.append(struct.pack("<Q", value))
        elif "tensormap" in ctype:
            out.append(bytes(value._tmap.raw))
        else:
            out.append(struct.pack(_C_TYPES[ctype], value))
    return out


def test_every_parameter_reaches_the_driver_as_the_kernel_declares_it(monkeypatch):
    drv = FakeDriver()
    program = probe()
    launcher = loaded(monkeypatch, program, drv)
    assert signature(program) == [
        ("float*", "x"),
        ("float", "factor"),
        ("const __grid_constant__ tm_tensormap", "tmap"),
        ("int8_t*", "y"),
        ("int32_t", "k"),
        ("int32_t", "n"),
    ]
    x = DeviceArray(0x7F00_0000_1000, (37, 4), "<f4")
    y = DeviceArray(0x7F00_0000_2000, (8,), "|i1")
    tmap = tensor_map(5)
    launcher(x, 1.5, tmap, y, -7)
    (got,) = drv.launches
    values = {"x": 0x7F00_0000_1000, "factor": 1.5, "tmap": tmap, "y": 0x7F00_0000_2000}
    assert got.params == expected_params(program, {**values, "k": -7, "n": 37})
    # the kernel's own grid and block, its planned shared memory, the device's default stream
    assert (got.grid, got.block, got.smem, got.stream) == ((3, 2, 1), (64, 2, 1), 512, 0x5150)
    assert got.cluster is None


def test_a_buffer_may_be_an_address_and_a_size_then_comes_from_another_buffer(monkeypatch):
    drv = FakeDriver()
    program = probe()
    launcher = loaded(monkeypatch, program, drv)
    x = DeviceArray(0x1000, (9, 4), "<f4")
    launcher(x, 2.0, tensor_map(0), 0x2000, 3)  # y: a bare address, no shape to check
    (got,) = drv.launches
    assert got.params[3] == struct.pack("<Q", 0x2000)
    assert got.params[5] == struct.pack("<i", 9)


def test_a_kernel_without_parameters_launches(monkeypatch):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, no_params(), drv)
    launcher()
    (got,) = drv.launches
    assert (got.grid, got.block, got.params) == ((1, 1, 1), (32, 1, 1), [])


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((), "kernel 'probe' takes 5 arguments (x, factor, tmap, y, k), got 0"),
        ((1, 2, 3, 4, 5, 6), "takes 5 arguments (x, factor, tmap, y, k), got 6"),
        (
            "tmap=5",
            "parameter tmap takes a tensor map from tilemem.cuda.tma.tile_map(...), got int",
        ),
        ("x=3d", "x is 2-D, got an array of shape (2, 4, 1)"),
        ("x=cols", "x must have shape (n, 4), got (2, 5)"),
        ("y=shape", "y must have shape (8,), got (9,)"),
        ("x=f8", "x holds float32 (4 bytes) but the array's elements are 8 bytes"),
        ("y=i2", "y holds int8 (1 bytes) but the array's elements are 2 bytes"),
        ("x=addr", "could not infer size 'n' from the arguments"),
        ("k=1.5", "k: a int32 parameter takes an integer, got 1.5"),
    ],
)
def test_bad_arguments_are_refused_before_the_driver_sees_them(monkeypatch, args, words):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, probe(), drv)
    good = {
        "x": DeviceArray(0x1000, (2, 4), "<f4"),
        "factor": 1.0,
        "tmap": tensor_map(0),
        "y": DeviceArray(0x2000, (8,), "|i1"),
        "k": 1,
    }
    bad = {
        "tmap=5": ("tmap", 5),
        "x=3d": ("x", DeviceArray(0x1000, (2, 4, 1), "<f4")),
        "x=cols": ("x", DeviceArray(0x1000, (2, 5), "<f4")),
        "y=shape": ("y", DeviceArray(0x2000, (9,), "|i1")),
        "x=f8": ("x", DeviceArray(0x1000, (2, 4), "<f8")),
        "y=i2": ("y", DeviceArray(0x2000, (8,), "<i2")),
        "x=addr": ("x", 0x1000),
        "k=1.5": ("k", 1.5),
    }
    if isinstance(args, str):
        key, value = bad[args]
        args = tuple({**good, key: value}.values())
    with pytest.raises(LaunchError) as err:
        launcher(*args)
    assert str(err.value).startswith("kernel 'probe'") and words in str(err.value)
    assert drv.launches == []


def test_one_size_bound_twice_must_agree(monkeypatch):
    @T.kernel(target="sm_90a", block=32, name="pair")
    def pair(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n", "m"), "float32")):
        a[0] = b[0, 0] + T.cast(b.shape[1], "float32")

    drv = FakeDriver()
    launcher = loaded(monkeypatch, pair, drv)
    assert signature(pair)[2:] == [("int32_t", "n"), ("int32_t", "m")]  # each size once
    with pytest.raises(LaunchError, match=r"kernel 'pair': size n is 6 and 5 at once"):
        launcher(DeviceArray(0x10, (6,), "<f4"), DeviceArray(0x20, (5, 3), "<f4"))
    launcher(DeviceArray(0x10, (6,), "<f4"), DeviceArray(0x20, (6, 3), "<f4"))
    (got,) = drv.launches
    assert got.params == [
        struct.pack("<QQii", 0x10, 0x20, 6, 3)[i : i + n]
        for i, n in ((0, 8), (8, 8), (16, 4), (20, 4))
    ]


def test_numpy_scalars_pack_as_the_kernel_types(monkeypatch):
    drv = FakeDriver()
    program = probe()
    launcher = loaded(monkeypatch, program, drv)
    x = DeviceArray(0x1000, (1, 4), "<f4")
    launcher(x, np.float64(0.1), tensor_map(1), 0x2000, np.int64(2**31 - 1))
    (got,) = drv.launches
    assert got.params[1] == struct.pack("<f", 0.1)  # rounded to float32, as the kernel reads it
    assert got.params[4] == struct.pack("<i", 2**31 - 1)


# -- grid, block, stream and errors of a launch ------------------------------------------------


def test_grid_block_and_stream_given_at_launch(monkeypatch):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, no_params(), drv)
    launcher(grid=(5, 7), block=(128,), stream=Stream(0xABC))
    launcher(grid=[2], stream=0x77)  # a stream may be its handle
    launcher(stream=types.SimpleNamespace(handle=0x99))  # anything with a handle
    first, second, third = drv.launches
    assert (first.grid, first.block, first.stream) == ((5, 7, 1), (128, 1, 1), 0xABC)
    assert (second.grid, second.block, second.stream) == ((2, 1, 1), (32, 1, 1), 0x77)
    assert (third.grid, third.stream) == ((1, 1, 1), 0x99)


def test_a_failed_launch_says_what_was_launched(monkeypatch):
    drv = FakeDriver(fail={"cuLaunchKernel": CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES})
    launcher = loaded(monkeypatch, probe(16 * KIB), drv)
    x = DeviceArray(0x1000, (1, 4), "<f4")
    with pytest.raises(LaunchError) as err:
        launcher(x, 1.0, tensor_map(0), 0x2000, 1, grid=(4,))
    assert str(err.value) == (
        "kernel 'probe': launch with grid (4, 1, 1), block (64, 2, 1), 65536 bytes of dynamic "
        "shared memory failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
    )


# -- clusters ----------------------------------------------------------------------------------


def test_a_cluster_launch_carries_one_cluster_dimension_attribute(monkeypatch):
    drv = FakeDriver()
    program = probe(16 * KIB)
    launcher = loaded(monkeypatch, program, drv)
    x = DeviceArray(0x1000, (3, 4), "<f4")
    tmap = tensor_map(9)
    launcher(x, 0.5, tmap, 0x2000, 4, grid=(4, 2), cluster=(2,), stream=Stream(0x31))
    (got,) = drv.launches
    assert got.cluster == (2, 1, 1) and got.num_attrs == 1
    assert (got.grid, got.block, got.smem, got.stream) == ((4, 2, 1), (64, 2, 1), 64 * KIB, 0x31)
    values = {"x": 0x1000, "factor": 0.5, "tmap": tmap, "y": 0x2000, "k": 4, "n": 3}
    assert got.params == expected_params(program, values)


def test_a_cluster_that_does_not_divide_the_grid_is_refused_before_launch(monkeypatch):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, no_params(), drv)
    with pytest.raises(
        LaunchError, match=r"grid \(3, 1, 1\) is not a multiple of cluster \(2, 1, 1\)"
    ):
        launcher(grid=(3,), cluster=(2,))
    assert drv.launches == []


def test_a_failed_cluster_launch_names_the_cluster(monkeypatch):
    drv = FakeDriver(fail={"cuLaunchKernelEx": CUDA_ERROR_INVALID_VALUE})
    launcher = loaded(monkeypatch, no_params(), drv)
    with pytest.raises(LaunchError) as err:
        launcher(grid=(4, 2), cluster=[2, 2])
    assert str(err.value) == (
        "kernel 'empty': launch with grid (4, 2, 1), block (32, 1, 1), 0 bytes of dynamic shared "
        "memory, cluster (2, 2) failed with CUDA_ERROR_INVALID_VALUE"
    )


def test_max_active_clusters_asks_the_driver_for_that_cluster_shape(monkeypatch):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, probe(), drv)
    assert launcher.max_active_clusters((2,)) == 66  # the fake: 132 CTAs // 2 per cluster
    assert launcher.max_active_clusters((2, 2), block=(256,)) == 33
    first, second = drv.launches
    assert (first.grid, first.block, first.cluster) == ((2, 1, 1), (64, 2, 1), (2, 1, 1))
    assert (second.grid, second.block, second.cluster) == ((2, 2, 1), (256, 1, 1), (2, 2, 1))


def test_a_failed_occupancy_query_is_a_launch_error(monkeypatch):
    drv = FakeDriver(fail={"cuOccupancyMaxActiveClusters": CUDA_ERROR_INVALID_VALUE})
    launcher = loaded(monkeypatch, probe(), drv)
    with pytest.raises(LaunchError) as err:
        launcher.max_active_clusters((4,))
    assert str(err.value) == (
        "kernel 'probe': cuOccupancyMaxActiveClusters for cluster (4, 1, 1) failed with "
        "CUDA_ERROR_INVALID_VALUE"
    )


@pytest.mark.parametrize(
    ("grid", "cluster", "words"),
    [
        ((4, 1, 1), (0, 1, 1), "cluster is 1 to 3 positive ints, got (0, 1, 1)"),
        ((4, 1, 1), (2, 1, 1, 1), "cluster is 1 to 3 positive ints, got (2, 1, 1, 1)"),
        ((4, 1, 1), (), "cluster is 1 to 3 positive ints, got ()"),
        ((4, 1, 1), (2.0,), "cluster is 1 to 3 positive ints, got (2.0,)"),
        ((4, 1, 1), (1, -1), "cluster is 1 to 3 positive ints, got (1, -1)"),
        ((4, 1, 1), 2, "cluster is 1 to 3 positive ints, got 2"),
        ((4, 1, 1), "2", "cluster is 1 to 3 positive ints, got '2'"),
        ((4, 1, 1), b"\x02", "cluster is 1 to 3 positive ints, got b'\\x02'"),
        ((3, 1, 1), (2,), "grid (3, 1, 1) is not a multiple of cluster (2, 1, 1)"),
        ((4, 3), (2, 2), "grid (4, 3, 1) is not a multiple of cluster (2, 2, 1)"),
        ((4, 4, 3), (1, 1, 2), "grid (4, 4, 3) is not a multiple of cluster (1, 1, 2)"),
        ((2,), (4,), "grid (2, 1, 1) is not a multiple of cluster (4, 1, 1)"),
    ],
)
def test_bad_clusters(grid, cluster, words):
    with pytest.raises(LaunchError) as err:
        check_cluster("gemm", grid, cluster)
    assert str(err.value).startswith("kernel 'gemm': ") and words in str(err.value)


@pytest.mark.parametrize(
    ("grid", "cluster", "want"),
    [
        ((4, 1, 1), (2,), (2, 1, 1)),
        ((4, 4), (2, 2), (2, 2, 1)),
        ((8,), [4, 1, 1], (4, 1, 1)),
        ((6, 4, 2), (3, 2, 2), (3, 2, 2)),
        ((5,), (1,), (1, 1, 1)),
        ((4, 4, 4), iter((1, 4)), (1, 4, 1)),
    ],
)
def test_good_clusters(grid, cluster, want):
    assert check_cluster("gemm", grid, cluster) == want


def _with_real_structures(drv: FakeDriver, real) -> FakeDriver:
    """The fake driver building its launch configurations from cuda-bindings' own
    ``CUlaunchConfig`` / ``CUlaunchAttribute`` / ``CUstream`` (no driver library needed)."""
    drv.CUlaunchConfig = real.CUlaunchConfig
    drv.CUlaunchAttribute = real.CUlaunchAttribute
    drv.CUlaunchAttributeID = real.CUlaunchAttributeID
    drv.CUstream = real.CUstream
    return drv


def test_the_cluster_config_fills_cuda_bindings_own_structures(monkeypatch):
    """The same configuration built from cuda-bindings' real ``CUlaunchConfig`` /
    ``CUlaunchAttribute`` / ``CUstream`` (no driver library needed to build them): every field
    the launch sets must exist there and read back."""
    real = pytest.importorskip("cuda.bindings.driver")
    drv = _with_real_structures(FakeDriver(), real)
    launcher = loaded(monkeypatch, probe(16 * KIB), drv)
    config = launcher._launch_config((4, 2, 3), (64, 2, 1), (2, 1, 3), 0x31)
    assert isinstance(config, real.CUlaunchConfig)
    dims = (config.gridDimX, config.gridDimY, config.gridDimZ)
    assert dims + (config.blockDimX, config.blockDimY, config.blockDimZ) == (4, 2, 3, 64, 2, 1)
    assert (config.sharedMemBytes, int(config.hStream), config.numAttrs) == (64 * KIB, 0x31, 1)
    (attr,) = config.attrs
    assert attr.id == real.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    cluster = attr.value.clusterDim
    assert (cluster.x, cluster.y, cluster.z) == (2, 1, 3)


# -- programmatic stream serialization ---------------------------------------------------------


def waits_for_grid():
    """A kernel that issues griddepcontrol.wait before its one global store."""

    @T.kernel(target="sm_90a", block=32, name="dependent")
    def kernel(y: T.Buffer((32,), "int32")):
        T.ptx.griddepcontrol.wait()
        T.ptx.griddepcontrol.launch_dependents()
        y[T.thread_id()] = T.thread_id()

    return kernel


def test_a_programmatic_launch_carries_its_attribute_through_cuLaunchKernelEx(monkeypatch):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, waits_for_grid(), drv)
    y = DeviceArray(0x1000, (32,), "<i4")
    launcher(y, stream=7, programmatic=True)
    launcher(y, stream=7, cluster=(1,), programmatic=True)
    launcher(y, stream=7)
    first, both, plain = drv.launches
    assert (first.programmatic, first.cluster, first.num_attrs) == (True, None, 1)
    assert (both.programmatic, both.cluster, both.num_attrs) == (True, (1, 1, 1), 2)
    assert (plain.programmatic, plain.num_attrs) == (False, 0)
    assert first.stream == both.stream == plain.stream == 7
    assert first.grid == plain.grid == (1, 1, 1) and first.params == plain.params


def test_a_kernel_without_griddepcontrol_wait_is_refused_a_programmatic_launch(monkeypatch):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, no_params(), drv)
    with pytest.raises(LaunchError, match=r"'empty' never issues griddepcontrol\.wait") as err:
        launcher(programmatic=True)
    assert "T.ptx.griddepcontrol.wait()" in str(err.value)
    assert drv.launches == []  # refused before the driver is called
    launcher()  # a plain launch is fine
    assert len(drv.launches) == 1


def test_a_wait_in_one_branch_or_loop_counts_and_a_launch_dependents_alone_does_not(monkeypatch):
    """The launcher looks for the instruction in the kernel's statements: a wait inside an
    if (else branch) or a loop is found; a kernel that only signals its dependents
    (``launch_dependents``, no wait) is refused."""

    @T.kernel(target="sm_90a", block=32, name="in_else")
    def in_else(y: T.Buffer((32,), "int32")):
        with T.If(T.thread_id() > 40):
            with T.Then():
                y[0] = 1
            with T.Else():
                T.ptx.griddepcontrol.wait()
        y[T.thread_id()] = 2

    @T.kernel(target="sm_90a", block=32, name="in_loop")
    def in_loop(y: T.Buffer((32,), "int32")):
        for _ in T.serial(2):
            T.ptx.griddepcontrol.wait()
        y[T.thread_id()] = 3

    @T.kernel(target="sm_90a", block=32, name="signals_only")
    def signals_only(y: T.Buffer((32,), "int32")):
        T.ptx.griddepcontrol.launch_dependents()
        y[T.thread_id()] = 4

    y = DeviceArray(0x1000, (32,), "<i4")
    for kernel in (in_else, in_loop):
        drv = FakeDriver()
        loaded(monkeypatch, kernel, drv)(y, programmatic=True)
        assert [launch.programmatic for launch in drv.launches] == [True]
    drv = FakeDriver()
    launcher = loaded(monkeypatch, signals_only, drv)
    with pytest.raises(LaunchError, match=r"'signals_only' never issues griddepcontrol\.wait"):
        launcher(y, programmatic=True)
    assert drv.launches == []


@pytest.mark.parametrize("bad", [1, 0, "yes", None, 1.0])
def test_programmatic_is_a_bool(monkeypatch, bad):
    drv = FakeDriver()
    launcher = loaded(monkeypatch, waits_for_grid(), drv)
    with pytest.raises(LaunchError, match="programmatic is True or False"):
        launcher(DeviceArray(0x1000, (32,), "<i4"), programmatic=bad)
    assert drv.launches == []


def test_the_programmatic_attribute_fills_cuda_bindings_own_structures(monkeypatch):
    """As the cluster test above, with cuda-bindings' real structures: the attribute's id and
    its ``programmaticStreamSerializationAllowed`` field exist there and read back."""
    real = pytest.importorskip("cuda.bindings.driver")
    drv = _with_real_structures(FakeDriver(), real)
    launcher = loaded(monkeypatch, waits_for_grid(), drv)
    config = launcher._launch_config((4, 1, 1), (32, 1, 1), (2,), 0x31, programmatic=True)
    assert config.numAttrs == 2
    cluster, programmatic = config.attrs
    assert cluster.id == real.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    want = real.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    assert programmatic.id == want
    assert programmatic.value.programmaticStreamSerializationAllowed == 1
