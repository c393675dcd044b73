"""Device-side plumbing shared by launching and TMA maps: the driver, the first GPU's name,
and the address, shape and element size of array-like arguments (torch/cupy arrays,
``cuda.core`` buffers, anything with ``__cuda_array_interface__`` or DLPack).

``cuda.bindings`` / ``cuda.core`` are imported inside the functions: they are optional
dependencies, and building or compiling kernels does not need them.
"""

from __future__ import annotations

from ..errors import LaunchError


def driver():
    from cuda.bindings import driver

    return driver


def check(result, what: str, kernel: str):
    """Unpack a driver call's result; raise :class:`LaunchError` naming the kernel on failure."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        drv = driver()
        _, name = drv.cuGetErrorName(err)
        raise LaunchError(
            f"kernel {kernel!r}: {what} failed with "
            f"{name.decode() if isinstance(name, bytes) else name}"
        )
    return rest[0] if len(rest) == 1 else rest


def gpu_name() -> str | None:
    """The first CUDA device's name, or None when there is no driver or device."""
    try:
        drv = driver()
        (err,) = drv.cuInit(0)
        if int(err) != 0:
            return None
        err, count = drv.cuDeviceGetCount()
        if int(err) != 0 or count == 0:
            return None
        err, name = drv.cuDeviceGetName(256, 0)
        return name.split(b"\0")[0].decode() if int(err) == 0 else None
    except Exception:  # no cuda-bindings or no driver library: no GPU
        return None


def array_interface(obj) -> dict | None:
    """``__cuda_array_interface__``, or None when the object has none or cannot describe its
    element type that way (torch raises KeyError for float8 tensors)."""
    try:
        return getattr(obj, "__cuda_array_interface__", None)
    except (KeyError, TypeError):
        return None


def device_pointer(obj) -> int:
    """The device address of a tensor-like object (cuda.core Buffer, CAI, torch ``data_ptr``,
    DLPack) or an int."""
    if isinstance(obj, int):
        return obj
    cai = array_interface(obj)
    handle = getattr(obj, "handle", None)
    if handle is not None and hasattr(obj, "size") and cai is None:
        return int(handle)  # cuda.core Buffer
    if cai is not None:
        return int(cai["data"][0])
    if callable(getattr(obj, "data_ptr", None)):  # torch tensors the interface cannot describe
        return int(obj.data_ptr())
    if hasattr(obj, "__dlpack__"):
        from cuda.core.utils import StridedMemoryView

        return int(StridedMemoryView(obj, stream_ptr=-1).ptr)
    raise LaunchError(
        f"cannot pass {type(obj).__name__} as a device buffer: give a torch/cupy array, a "
        "cuda.core Buffer, or an address"
    )


def array_shape(obj) -> tuple | None:
    """The ``shape`` of an array-like as a tuple of ints, or None when it has none."""
    shape = getattr(obj, "shape", None)
    return tuple(int(s) for s in shape) if shape is not None else None


def element_bytes(obj) -> int | None:
    """Bytes per element of an array-like, or None when it does not say."""
    cai = array_interface(obj)
    if cai is not None:
        return int(cai["typestr"][2:])
    return getattr(obj, "itemsize", None) or getattr(getattr(obj, "dtype", None), "itemsize", None)
