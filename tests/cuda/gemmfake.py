"""The fake driver of ``fakedriver`` grown by what the GEMM's host code calls (``gemm/hopper.py``:
``HopperGemm``, ``AutoGemm``, their workspaces and staging copies), so that it runs on a CPU.

Added, each answered as the CUDA Driver API documents it and recorded in call order in
:attr:`GemmDriver.events`:

- several kernels: each ``cuModuleLoadData`` image is one kernel program (the fake ``compile``
  of :func:`install` hands the program over), ``cuModuleGetFunction`` returns a function that
  knows its name and the byte size of each of its parameters, read from the kernel's
  generated ``__global__`` signature (a pointer: 8 bytes; a ``__grid_constant__`` tensor map:
  the 128-byte ``CUtensorMap`` of ``cuda.h``; ``int32_t``: 4);
- ``CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`` (:attr:`GemmDriver.sms`) and
  ``cuOccupancyMaxActiveClusters`` from a table by cluster size (:attr:`GemmDriver.occupancy`);
- ``cuTensorMapEncodeTiled``: records its arguments and returns a 128-byte map whose first 8
  bytes are the map's index in :attr:`GemmDriver.maps` (so a launch's parameter names its map);
- ``cuMemAlloc`` (256-byte aligned addresses, as the driver's allocations are), ``cuMemsetD8``,
  ``cuCtxSynchronize``, ``cuMemFree``, ``cuMemcpy2DAsync`` with ``CUDA_MEMCPY2D``.
"""

from __future__ import annotations

import ctypes
import re
import struct
from dataclasses import dataclass, field

from fakedriver import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_SUCCESS,
    DYN_SMEM,
    OPTIN,
    PER_BLOCK,
    FakeDriver,
    Launch,
    _Namespace,
)
from fakedriver import install as install_driver

SM_COUNT = "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"
DEVICE_MEMORY = "CU_MEMORYTYPE_DEVICE"
ALIGN = 256  # cuMemAlloc: "The allocated memory is suitably aligned for any kind of variable"


def param_sizes(source: str) -> list[int]:
    """Bytes of each parameter of the generated kernel, from its ``__global__`` signature."""
    head = re.search(r"__global__ void (?:__launch_bounds__\([^)]*\) )?\w+\((.*?)\) \{", source)
    assert head, source[:400]
    sizes = []
    for decl in filter(None, (d.strip() for d in head.group(1).split(","))):
        if "*" in decl:
            sizes.append(8)
        elif "tm_tensormap" in decl:
            sizes.append(128)
        else:
            assert decl.split()[0] == "int32_t", decl
            sizes.append(4)
    return sizes


@dataclass(frozen=True)
class Function:
    name: str
    sizes: tuple[int, ...]


@dataclass
class Module:
    program: object


class CUDA_MEMCPY2D:  # the driver's name
    """The fields of the driver's ``CUDA_MEMCPY2D``, zero until set."""

    srcXInBytes = srcY = dstXInBytes = dstY = 0
    srcMemoryType = dstMemoryType = None
    srcHost = dstHost = srcArray = dstArray = None
    srcDevice = dstDevice = srcPitch = dstPitch = WidthInBytes = Height = 0


@dataclass(frozen=True)
class Copy:
    """A ``cuMemcpy2DAsync`` as the driver read it."""

    src: int
    dst: int
    src_pitch: int
    dst_pitch: int
    width: int
    height: int
    stream: int
    memory_types: tuple
    offsets: tuple  # (srcXInBytes, srcY, dstXInBytes, dstY)


@dataclass
class GemmDriver(FakeDriver):
    """``sms``: the device's SMs; ``occupancy``: cluster size -> clusters that fit at once."""

    sms: int = 132
    occupancy: dict[int, int] = field(default_factory=lambda: {1: 132, 2: 66, 4: 33})
    events: list[tuple] = field(default_factory=list)
    maps: list[dict] = field(default_factory=list)
    memory: dict[int, int] = field(default_factory=dict)  # live allocations: address -> bytes
    # above the 47-bit user address space: never a real allocation, should a workspace of a
    # fake run be freed after the real driver is back
    next_address: int = 0xF000_0000_0000_0000
    _keep: list = field(default_factory=list)

    CUdevice_attribute = _Namespace(OPTIN, PER_BLOCK, SM_COUNT)
    CUmemorytype = _Namespace(DEVICE_MEMORY)
    CUDA_MEMCPY2D = CUDA_MEMCPY2D
    CUtensorMapInterleave = _Namespace("CU_TENSOR_MAP_INTERLEAVE_NONE")
    CUtensorMapFloatOOBfill = _Namespace("CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    cuuint64_t = int
    cuuint32_t = int
    CUtensorMapDataType = int
    CUtensorMapSwizzle = int
    CUtensorMapL2promotion = int

    # -- kernels ------------------------------------------------------------------------------

    def cuModuleLoadData(self, image):
        self.calls.append(("cuModuleLoadData", image))
        if not self.current:
            return CUDA_ERROR_INVALID_VALUE, None
        return CUDA_SUCCESS, Module(image)

    def cuModuleGetFunction(self, module, name):
        self.calls.append(("cuModuleGetFunction", module, name))
        if not isinstance(module, Module) or module.program.name.encode() != name:
            return CUDA_ERROR_INVALID_VALUE, None
        program = module.program
        return CUDA_SUCCESS, Function(program.name, tuple(param_sizes(program.source)))

    def cuDeviceGetAttribute(self, attr, dev):
        if attr == SM_COUNT:
            self.calls.append(("cuDeviceGetAttribute", attr, dev))
            if dev != self.device_id:
                return CUDA_ERROR_INVALID_VALUE, 0
            return self.fail.get("cuDeviceGetAttribute", CUDA_SUCCESS), self.sms
        return super().cuDeviceGetAttribute(attr, dev)

    def cuFuncSetAttribute(self, func, attr, value):
        if not isinstance(func, Function) or attr != DYN_SMEM or value > self.optin:
            return (CUDA_ERROR_INVALID_VALUE,)
        return self._result("cuFuncSetAttribute", attr, value)

    def _read(self, func: Function, address: int) -> list[bytes]:
        pointers = (ctypes.c_void_p * len(func.sizes)).from_address(address)
        return [ctypes.string_at(p, n) for p, n in zip(pointers, func.sizes)]

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        if not isinstance(f, Function) or extra != 0:
            return (CUDA_ERROR_INVALID_VALUE,)
        launch = Launch((gx, gy, gz), (bx, by, bz), smem, int(stream), self._read(f, params))
        self.launches.append(launch)
        self.events.append(("launch", f.name, launch))
        return (self.fail.get("cuLaunchKernel", CUDA_SUCCESS),)

    def cuLaunchKernelEx(self, config, f, params, extra):
        if not isinstance(f, Function) or extra != 0:
            return (CUDA_ERROR_INVALID_VALUE,)
        launch = self._config_launch(config, self._read(f, params))
        self.launches.append(launch)
        self.events.append(("launch", f.name, launch))
        return (self.fail.get("cuLaunchKernelEx", CUDA_SUCCESS),)

    def cuOccupancyMaxActiveClusters(self, f, config):
        if not isinstance(f, Function):
            return CUDA_ERROR_INVALID_VALUE, 0
        launch = self._config_launch(config, [])
        self.events.append(("occupancy", f.name, launch))
        if launch.cluster is None or min(launch.cluster) < 1:
            return CUDA_ERROR_INVALID_VALUE, 0
        x, y, z = launch.cluster
        return CUDA_SUCCESS, self.occupancy.get(x * y * z, 0)

    # -- tensor maps --------------------------------------------------------------------------

    def cuTensorMapEncodeTiled(self, dtype, rank, address, dims, strides, box, elem, *modes):
        interleave, swizzle, l2, oob = modes
        index = len(self.maps)
        self.maps.append(
            {
                "dtype": dtype,
                "rank": rank,
                "address": address,
                "dims": list(dims),
                "strides": list(strides),
                "box": list(box),
                "elem": list(elem),
                "interleave": interleave,
                "swizzle": swizzle,
                "l2": l2,
                "oob": oob,
            }
        )
        self.events.append(("encode", index))
        raw = (ctypes.c_uint8 * 128)(*struct.pack("<Q", index), *([0xAB] * 120))
        self._keep.append(raw)
        return CUDA_SUCCESS, type("CUtensorMap", (), {"getPtr": lambda _: ctypes.addressof(raw)})()

    def map_of(self, param: bytes) -> dict:
        """The encode call whose 128-byte map a launch passed as ``param``."""
        assert len(param) == 128 and param[8:] == bytes([0xAB] * 120), param
        return self.maps[struct.unpack("<Q", param[:8])[0]]

    # -- memory -------------------------------------------------------------------------------

    def cuMemAlloc(self, nbytes):
        address = self.next_address
        self.next_address += -(-max(nbytes, 1) // ALIGN) * ALIGN + ALIGN
        self.memory[address] = nbytes
        self.events.append(("alloc", address, nbytes))
        return self.fail.get("cuMemAlloc", CUDA_SUCCESS), address

    def cuMemsetD8(self, address, value, count):
        self.events.append(("memset", int(address), value, count))
        return (self.fail.get("cuMemsetD8", CUDA_SUCCESS),)

    def cuCtxSynchronize(self):
        self.events.append(("sync",))
        return (self.fail.get("cuCtxSynchronize", CUDA_SUCCESS),)

    def cuMemFree(self, address):
        self.events.append(("free", int(address)))
        if self.memory.pop(int(address), None) is None:
            return (CUDA_ERROR_INVALID_VALUE,)
        return (CUDA_SUCCESS,)

    def cuMemcpy2DAsync(self, p, stream):
        copy = Copy(
            p.srcDevice,
            p.dstDevice,
            p.srcPitch,
            p.dstPitch,
            p.WidthInBytes,
            p.Height,
            int(stream),
            (p.srcMemoryType, p.dstMemoryType),
            (p.srcXInBytes, p.srcY, p.dstXInBytes, p.dstY),
        )
        self.events.append(("copy", copy))
        return (self.fail.get("cuMemcpy2DAsync", CUDA_SUCCESS),)

    # -- reading back -------------------------------------------------------------------------

    def of(self, kind: str) -> list[tuple]:
        return [e for e in self.events if e[0] == kind]

    def kernel_launches(self) -> list[tuple[str, Launch]]:
        return [(name, launch) for _, name, launch in self.of("launch")]


class Tensor:
    """A device matrix as torch or cupy present one: ``shape``, a ``dtype`` whose name the GEMM
    compares, and ``__cuda_array_interface__`` v3 (``strides`` None: dense row-major)."""

    def __init__(self, address: int, shape: tuple[int, int], dtype: str = "bfloat16"):
        self.shape, self.dtype = shape, dtype
        size = {"bfloat16": 2, "float8_e4m3fn": 1, "float32": 4}[dtype]
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": f"<V{size}",
            "data": (address, False),
            "strides": None,
            "version": 3,
        }


def install(monkeypatch, drv: GemmDriver) -> GemmDriver:
    """The fake driver and ``cuda.core`` in ``sys.modules``; kernel programs "compile" to
    themselves (the module the fake driver loads)."""
    from tilemem.cuda.kernel import KernelProgram

    install_driver(monkeypatch, drv)
    monkeypatch.setattr(KernelProgram, "compile", lambda self: self)
    return drv
