"""Launch a compiled kernel on the current GPU.

Arguments may be torch/cupy arrays, ``cuda.core`` buffers, anything with
``__cuda_array_interface__`` or DLPack, Python/numpy scalars, and
:class:`~tilemem.cuda.tma.EncodedTensorMap` objects. The dynamic shared-memory size
comes from the kernel's committed pool; above 48 KiB the per-function limit
is raised first. The launch goes through the driver (``cuLaunchKernel``) on a
``cuda.core`` stream, because ``__grid_constant__`` tensor maps are passed by
value as 128-byte parameters.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..dtype import DataType
from ..ir.nodes import Var, issues
from .device import LaunchError, array_shape, check, device_pointer, driver, element_bytes
from .tma import EncodedTensorMap

STATIC_SMEM_LIMIT = 48 * 1024


def scalar_argument(dtype: DataType, value, where: str) -> ctypes.Array:
    """A scalar kernel argument as the bytes the kernel reads (its dtype's host numpy type)."""
    if dtype.host_dtype is None:
        raise LaunchError(f"{where}: a {dtype.name} scalar cannot be passed from the host")
    value = value.item() if hasattr(value, "item") else value
    kind = np.dtype(dtype.host_dtype).kind
    if kind in "iub" and not isinstance(value, (int, np.integer, bool)):
        raise LaunchError(f"{where}: a {dtype.name} parameter takes an integer, got {value!r}")
    try:
        data = np.asarray(value, dtype=dtype.host_dtype).tobytes()
    except (OverflowError, ValueError, TypeError) as exc:
        raise LaunchError(f"{where}: {value!r} does not fit {dtype.name}: {exc}") from None
    return (ctypes.c_char * len(data)).from_buffer_copy(data)


def _dim3(dims) -> tuple:
    """``dims`` (1 to 3 ints) padded with 1s to ``(x, y, z)``."""
    dims = tuple(dims)
    return dims + (1,) * (3 - len(dims))


def check_cluster(name: str, grid, cluster) -> tuple[int, int, int]:
    """``cluster`` as ``(x, y, z)`` after the rules of a cluster launch (CUDA driver API,
    ``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION``): 1 to 3 positive ints,
    and each grid dimension a multiple of the cluster's. LaunchError otherwise."""
    if isinstance(cluster, str | bytes) or not hasattr(cluster, "__iter__"):
        raise LaunchError(f"kernel {name!r}: cluster is 1 to 3 positive ints, got {cluster!r}")
    dims = tuple(cluster)
    if not 1 <= len(dims) <= 3 or any(type(c) is not int or c < 1 for c in dims):
        raise LaunchError(f"kernel {name!r}: cluster is 1 to 3 positive ints, got {dims}")
    x, y, z = _dim3(dims)
    grid = _dim3(grid)
    if any(g % c for g, c in zip(grid, (x, y, z))):
        raise LaunchError(
            f"kernel {name!r}: grid {grid} is not a multiple of cluster {(x, y, z)}: round "
            "each grid dimension to a multiple of the cluster's"
        )
    return x, y, z


def check_arch(name: str, target: str, major: int, minor: int) -> None:
    """Refuse a cubin built for ``target`` (``sm_90a``, ``sm_86`` ...) that a device of compute
    capability ``major.minor`` cannot run (CUDA C++ Programming Guide, "Binary Compatibility":
    a cubin for compute capability X.y runs only on devices of compute capability X.z with
    z >= y; "Feature Availability": code built for an arch-specific ``a`` target runs only on
    that exact compute capability). LaunchError otherwise."""
    built_major, built_minor = divmod(int(target.removeprefix("sm_").rstrip("a")), 10)
    if target.endswith("a") and (built_major, built_minor) != (major, minor):
        raise LaunchError(
            f"kernel {name!r} is built for {target}, which runs only on compute capability "
            f"{built_major}.{built_minor}; this device is {major}.{minor}"
        )
    if built_major != major or built_minor > minor:
        raise LaunchError(
            f"kernel {name!r} is a {target} cubin; a device of compute capability "
            f"{major}.{minor} cannot run it (a cubin for X.y runs only on devices of compute "
            "capability X.z with z >= y)"
        )


class Launcher:
    """A kernel loaded on the current device, ready to launch."""

    def __init__(self, program):
        from cuda.core import Device

        self.program = program
        self.name = program.name
        self.device = Device()
        self.device.set_current()
        cc = self.device.compute_capability
        check_arch(self.name, program.target, cc.major, cc.minor)
        drv = driver()
        self.module = check(drv.cuModuleLoadData(program.compile()), "cuModuleLoadData", self.name)
        self.function = check(
            drv.cuModuleGetFunction(self.module, self.name.encode()),
            "cuModuleGetFunction",
            self.name,
        )
        smem = program.dyn_smem_bytes
        attr = drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        limit = check(
            drv.cuDeviceGetAttribute(attr, self.device.device_id),
            "cuDeviceGetAttribute",
            self.name,
        )
        if smem > limit:
            raise LaunchError(
                f"kernel {self.name!r} needs {smem} bytes of dynamic shared memory but this device "
                "allows "
                f"{limit} per block (opt-in maximum): remove {smem - limit} bytes from its SMEMPool"
            )
        if smem > STATIC_SMEM_LIMIT:
            fattr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(
                drv.cuFuncSetAttribute(self.function, fattr, smem),
                f"raising the dynamic shared-memory limit to {smem} bytes",
                self.name,
            )
        self.symbols = self._symbols()  # size parameters bound from the buffers' shapes

    def _params(self, args: tuple) -> tuple[list, ctypes.Array]:
        params = self.program.ir.params
        user = [p for p in params if not (p.kind == "scalar" and p.name in self.symbols)]
        if len(args) != len(user):
            names = ", ".join(p.name for p in user)
            raise LaunchError(
                f"kernel {self.name!r} takes {len(user)} arguments ({names}), got {len(args)}"
            )
        bound: dict[str, int] = {}
        keep: list = []
        values: dict[str, Any] = {}
        for p, arg in zip(user, args):
            if p.kind == "buffer":
                self._bind_shape(p, arg, bound)
                keep.append(ctypes.c_void_p(device_pointer(arg)))
            elif p.kind == "scalar":
                keep.append(scalar_argument(p.value.dtype, arg, f"kernel {self.name!r}: {p.name}"))
            else:
                if not isinstance(arg, EncodedTensorMap):
                    raise LaunchError(
                        f"kernel {self.name!r}: parameter {p.name} takes a tensor map from "
                        f"tilemem.cuda.tma.tile_map(...), got {type(arg).__name__}"
                    )
                keep.append(arg)
            values[p.name] = keep[-1]
        for name in self.symbols:
            if name not in bound:
                raise LaunchError(
                    f"kernel {self.name!r}: could not infer size {name!r} from the arguments"
                )
            values[name] = ctypes.c_int32(bound[name])
            keep.append(values[name])
        pointers = [
            v.address if isinstance(v, EncodedTensorMap) else ctypes.addressof(v)
            for v in (values[p.name] for p in params)
        ]
        array = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        return keep, array

    def _symbols(self) -> list[str]:
        names = []
        for p in self.program.ir.params:
            if p.kind == "buffer":
                names += [d.name for d in p.value.shape if isinstance(d, Var)]
        return list(dict.fromkeys(names))

    def _bind_shape(self, param, arg, bound: dict) -> None:
        shape = array_shape(arg)
        want = param.value.shape
        if shape is None:
            return
        if len(shape) != len(want):
            raise LaunchError(
                f"kernel {self.name!r}: {param.name} is {len(want)}-D, got an array of shape "
                f"{shape}"
            )
        for dim, got in zip(want, shape):
            if isinstance(dim, Var):
                if bound.setdefault(dim.name, got) != got:
                    raise LaunchError(
                        f"kernel {self.name!r}: size {dim.name} is {bound[dim.name]} and {got} at "
                        "once"
                    )
            elif dim != got:
                raise LaunchError(
                    f"kernel {self.name!r}: {param.name} must have shape {want}, got {shape}"
                )
        size = element_bytes(arg)
        if size is not None and size * 8 != param.value.dtype.bits:
            raise LaunchError(
                f"kernel {self.name!r}: {param.name} holds {param.value.dtype.name} "
                f"({param.value.dtype.bits // 8} bytes) but the array's elements are {size} bytes"
            )

    def __call__(
        self, *args, grid=None, block=None, cluster=None, stream=None, programmatic=False
    ) -> None:
        """Launch with the kernel's grid and block, or those given. ``cluster`` (1 to 3 ints)
        groups CTAs into thread-block clusters at run time (``cuLaunchKernelEx``); the grid
        must be a multiple of it. ``programmatic=True`` launches with programmatic stream
        serialization (``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``): the kernel
        may start while the stream's previous kernel ends, once that kernel's CTAs have issued
        ``griddepcontrol.launch_dependents`` or exited, and must issue
        ``T.ptx.griddepcontrol.wait()`` before it touches global memory; a kernel without that
        wait is refused (LaunchError), as it would race with the previous kernel."""
        from cuda.core import Stream

        if type(programmatic) is not bool:
            raise LaunchError(
                f"kernel {self.name!r}: programmatic is True or False, got {programmatic!r}"
            )
        if programmatic:
            self._check_waits_for_grid()
        ir = self.program.ir
        grid = _dim3(grid if grid is not None else ir.grid)
        block = _dim3(block if block is not None else ir.block)
        stream = stream if stream is not None else self.device.default_stream
        handle = (
            int(stream.handle)
            if isinstance(stream, Stream) or hasattr(stream, "handle")
            else int(stream)
        )
        keep, array = self._params(args)
        what = (
            f"launch with grid {grid}, block {block}, {self.program.dyn_smem_bytes} bytes of "
            "dynamic shared memory"
        )
        drv = driver()
        if cluster is None and not programmatic:
            result = drv.cuLaunchKernel(
                self.function,
                *grid,
                *block,
                self.program.dyn_smem_bytes,
                handle,
                ctypes.addressof(array),
                0,
            )
        else:
            config = self._launch_config(grid, block, cluster, handle, programmatic)
            what += f", cluster {tuple(cluster)}" if cluster is not None else ""
            what += ", programmatic stream serialization" if programmatic else ""
            result = drv.cuLaunchKernelEx(config, self.function, ctypes.addressof(array), 0)
        check(result, what, self.name)
        del keep

    def _check_waits_for_grid(self) -> None:
        """LaunchError unless the kernel issues ``griddepcontrol.wait`` anywhere in its body
        (looked up in the kernel's statements once, not in its generated text)."""
        if "_waits_for_grid" not in self.__dict__:
            self._waits_for_grid = issues(self.program.ir.body, "ptx.griddepcontrol.wait")
        if not self._waits_for_grid:
            raise LaunchError(
                f"kernel {self.name!r} never issues griddepcontrol.wait, so launched with "
                "programmatic=True it could read or write global memory while the previous "
                "kernel still runs: add T.ptx.griddepcontrol.wait() before its first global "
                "access, or launch with programmatic=False"
            )

    def _launch_config(self, grid, block, cluster, handle: int = 0, programmatic: bool = False):
        """A ``CUlaunchConfig`` (CUDA driver API, "cuLaunchKernelEx") with the cluster
        dimension attribute where ``cluster`` is given (every grid dimension a multiple of the
        cluster's) and the programmatic stream serialization attribute where asked."""
        drv = driver()
        attrs = []
        if cluster is not None:
            cluster = check_cluster(self.name, grid, cluster)
            attr = drv.CUlaunchAttribute()
            attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
            attrs.append(attr)
        if programmatic:
            attr = drv.CUlaunchAttribute()
            attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.programmaticStreamSerializationAllowed = 1
            attrs.append(attr)
        config = drv.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = self.program.dyn_smem_bytes
        config.hStream = drv.CUstream(handle)
        config.attrs = attrs
        config.numAttrs = len(attrs)
        return config

    def max_active_clusters(self, cluster, block=None) -> int:
        """How many clusters of this shape can be resident at once
        (``cuOccupancyMaxActiveClusters``): the grid of a persistent kernel with clusters."""
        ir = self.program.ir
        block = _dim3(block if block is not None else ir.block)
        cluster = _dim3(cluster)
        config = self._launch_config(cluster, block, cluster)
        drv = driver()
        return int(
            check(
                drv.cuOccupancyMaxActiveClusters(self.function, config),
                f"cuOccupancyMaxActiveClusters for cluster {cluster}",
                self.name,
            )
        )
