"""A stand-in for the CUDA driver and ``cuda.core``, so the launcher's host code runs on a CPU.

:class:`FakeDriver` answers the ``cuda.bindings.driver`` calls tilemem makes the way the CUDA
Driver API documents them (results as ``(CUresult, value...)`` tuples, the ``CUresult`` numbers
of ``cuda.h``) and records each call. A launch is read back at call time as the driver reads
it: ``kernelParams`` is an array of pointers, the i-th pointing to the i-th kernel parameter's
value, of the size the kernel declares (CUDA Driver API, ``cuLaunchKernel``).
:func:`install` puts it and a fake ``cuda.core`` (``Device``, ``Stream``) in ``sys.modules``.
"""

from __future__ import annotations

import ctypes
import sys
import types
from dataclasses import dataclass, field

# CUresult values (cuda.h, CUDA Driver API "Error Handling")
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
ERROR_NAMES = {
    CUDA_SUCCESS: "CUDA_SUCCESS",
    CUDA_ERROR_INVALID_VALUE: "CUDA_ERROR_INVALID_VALUE",
    CUDA_ERROR_OUT_OF_MEMORY: "CUDA_ERROR_OUT_OF_MEMORY",
    CUDA_ERROR_NO_DEVICE: "CUDA_ERROR_NO_DEVICE",
    CUDA_ERROR_INVALID_CONTEXT: "CUDA_ERROR_INVALID_CONTEXT",
    CUDA_ERROR_NO_BINARY_FOR_GPU: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    CUDA_ERROR_NOT_FOUND: "CUDA_ERROR_NOT_FOUND",
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
}

# Attribute enumerators, as in cuda.h
OPTIN = "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"
PER_BLOCK = "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"
DYN_SMEM = "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"
CLUSTER_DIM = "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION"
PROGRAMMATIC = "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"
MODULE, FUNCTION = object(), object()


@dataclass
class Launch:
    """One launch as the driver saw it: dimensions, dynamic shared memory, stream handle, the
    bytes of each kernel parameter, the cluster attribute (None for ``cuLaunchKernel``) and
    whether programmatic stream serialization was allowed."""

    grid: tuple
    block: tuple
    smem: int
    stream: int
    params: list[bytes]
    cluster: tuple | None = None
    num_attrs: int = 0
    programmatic: bool = False


class _Namespace:
    def __init__(self, *names: str):
        for name in names:
            setattr(self, name, name)


class _Dim3:
    x = y = z = 0


class _AttrValue:
    def __init__(self):
        self.clusterDim = _Dim3()
        self.programmaticStreamSerializationAllowed = 0


class CUlaunchAttribute:
    def __init__(self):
        self.id = None
        self.value = _AttrValue()


class CUlaunchConfig:
    gridDimX = gridDimY = gridDimZ = blockDimX = blockDimY = blockDimZ = 0
    sharedMemBytes = numAttrs = 0
    hStream = None
    attrs: tuple = ()


class CUstream:
    def __init__(self, handle: int = 0):
        self.handle = handle

    def __int__(self) -> int:
        return self.handle


@dataclass
class FakeDriver:
    """``param_sizes``: the byte size of each kernel parameter, in the kernel's order (what the
    driver takes from the cubin's parameter table). ``optin``: the device's opt-in shared
    memory per block (227 KiB on sm_90 and sm_100); ``fail``: call name -> CUresult to return."""

    param_sizes: list[int] = field(default_factory=list)
    optin: int = 227 * 1024
    device_id: int = 0
    fail: dict[str, int] = field(default_factory=dict)
    names: list[bytes] = field(default_factory=lambda: [b"NVIDIA H200"])
    calls: list[tuple] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    current: list[int] = field(default_factory=list)  # the device made current, if any

    CUdevice_attribute = _Namespace(OPTIN, PER_BLOCK)
    CUfunction_attribute = _Namespace(DYN_SMEM)
    CUlaunchAttributeID = _Namespace(CLUSTER_DIM, PROGRAMMATIC)
    CUlaunchAttribute = CUlaunchAttribute
    CUlaunchConfig = CUlaunchConfig
    CUstream = CUstream

    def _result(self, call: str, *values):
        self.calls.append((call, *values))
        return (self.fail.get(call, CUDA_SUCCESS),)

    def cuGetErrorName(self, err):
        return CUDA_SUCCESS, ERROR_NAMES[int(err)].encode()

    def cuInit(self, flags):
        self.calls.append(("cuInit", flags))
        if flags != 0:  # "Flags: Initialization flag for CUDA. Currently, Flags must be 0."
            return (CUDA_ERROR_INVALID_VALUE,)
        return (self.fail.get("cuInit", CUDA_SUCCESS),)

    def cuDeviceGetCount(self):
        return self.fail.get("cuDeviceGetCount", CUDA_SUCCESS), len(self.names)

    def cuDeviceGetName(self, length, dev):
        """The name, NUL-terminated within ``length`` bytes (at most length - 1 characters)."""
        self.calls.append(("cuDeviceGetName", length, dev))
        if not 0 <= dev < len(self.names):
            return CUDA_ERROR_INVALID_VALUE, b""
        name = self.names[dev][: length - 1]
        return self.fail.get("cuDeviceGetName", CUDA_SUCCESS), name + b"\0" * (length - len(name))

    def cuModuleLoadData(self, image):
        self.calls.append(("cuModuleLoadData", image))
        if not self.current:  # a module loads into the current context
            return CUDA_ERROR_INVALID_CONTEXT, None
        return self.fail.get("cuModuleLoadData", CUDA_SUCCESS), MODULE

    def cuModuleGetFunction(self, module, name):
        self.calls.append(("cuModuleGetFunction", module, name))
        if module is not MODULE:
            return CUDA_ERROR_INVALID_VALUE, None
        return self.fail.get("cuModuleGetFunction", CUDA_SUCCESS), FUNCTION

    def cuDeviceGetAttribute(self, attr, dev):
        self.calls.append(("cuDeviceGetAttribute", attr, dev))
        if dev != self.device_id:
            return CUDA_ERROR_INVALID_VALUE, 0
        value = {OPTIN: self.optin, PER_BLOCK: 48 * 1024}[attr]
        return self.fail.get("cuDeviceGetAttribute", CUDA_SUCCESS), value

    def cuFuncSetAttribute(self, func, attr, value):
        if func is not FUNCTION or attr != DYN_SMEM or value > self.optin:
            return (CUDA_ERROR_INVALID_VALUE,)
        return self._result("cuFuncSetAttribute", attr, value)

    def _read_params(self, address: int) -> list[bytes]:
        pointers = (ctypes.c_void_p * len(self.param_sizes)).from_address(address)
        return [ctypes.string_at(p, n) for p, n in zip(pointers, self.param_sizes)]

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        if f is not FUNCTION or extra != 0:
            return (CUDA_ERROR_INVALID_VALUE,)
        self.launches.append(
            Launch((gx, gy, gz), (bx, by, bz), smem, int(stream), self._read_params(params))
        )
        return (self.fail.get("cuLaunchKernel", CUDA_SUCCESS),)

    def cuLaunchKernelEx(self, config, f, params, extra):
        if f is not FUNCTION or extra != 0:
            return (CUDA_ERROR_INVALID_VALUE,)
        self.launches.append(self._config_launch(config, self._read_params(params)))
        return (self.fail.get("cuLaunchKernelEx", CUDA_SUCCESS),)

    def _config_launch(self, config, params: list[bytes]) -> Launch:
        """The launch a ``CUlaunchConfig`` describes; its first ``numAttrs`` attributes count."""
        cluster, programmatic = None, False
        for attr in config.attrs[: config.numAttrs]:
            if attr.id == CLUSTER_DIM:
                dim = attr.value.clusterDim
                cluster = (dim.x, dim.y, dim.z)
            elif attr.id == PROGRAMMATIC:
                programmatic = attr.value.programmaticStreamSerializationAllowed == 1
        return Launch(
            (config.gridDimX, config.gridDimY, config.gridDimZ),
            (config.blockDimX, config.blockDimY, config.blockDimZ),
            config.sharedMemBytes,
            int(config.hStream),
            params,
            cluster,
            config.numAttrs,
            programmatic,
        )

    def cuOccupancyMaxActiveClusters(self, f, config):
        """A made-up occupancy: 132 SMs of one CTA each, over the cluster's CTAs."""
        if f is not FUNCTION:
            return CUDA_ERROR_INVALID_VALUE, 0
        launch = self._config_launch(config, [])
        self.launches.append(launch)
        if launch.cluster is None:
            return CUDA_ERROR_INVALID_VALUE, 0
        x, y, z = launch.cluster
        return self.fail.get("cuOccupancyMaxActiveClusters", CUDA_SUCCESS), 132 // (x * y * z)


class Stream:
    def __init__(self, handle: int):
        self.handle = handle


@dataclass
class _CC:
    major: int
    minor: int


def install(monkeypatch, drv: FakeDriver, cc: tuple[int, int] = (9, 0)) -> None:
    """Make ``cuda.bindings.driver`` the fake driver and ``cuda.core.Device()`` a device of
    compute capability ``cc`` whose default stream has handle 0x5150."""

    class Device:
        def __init__(self):
            self.device_id = drv.device_id
            self.compute_capability = _CC(*cc)
            self.default_stream = Stream(0x5150)

        def set_current(self):
            drv.current.append(self.device_id)

    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = drv  # type: ignore[attr-defined]
    core = types.ModuleType("cuda.core")
    core.Device = Device  # type: ignore[attr-defined]
    core.Stream = Stream  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.core", core)
