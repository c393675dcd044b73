"""``tilemem.cuda.device`` on a CPU: the driver's result convention, the first GPU's name and
the DLPack path of ``device_pointer``, against a fake ``cuda.bindings`` / ``cuda.core``.

cuda-bindings returns every driver call as a tuple ``(CUresult, outputs...)``; a nonzero
``CUresult`` is an error whose name ``cuGetErrorName`` gives (CUDA Driver API, "Error
Handling"; the numbers are those of ``cuda.h``).
"""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest
from fakedriver import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NO_DEVICE,
    CUDA_ERROR_OUT_OF_MEMORY,
    FakeDriver,
    install,
)

from tilemem.cuda.device import check, device_pointer, driver, gpu_name
from tilemem.errors import LaunchError


def test_driver_is_cuda_bindings_driver(monkeypatch):
    fake = FakeDriver()
    install(monkeypatch, fake)
    assert driver() is fake


# -- check: a driver call's result ----------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "want"),
    [((0, 7), 7), ((0, "mod"), "mod"), ((0, 1, 2), [1, 2]), ((0,), []), (0, [])],
)
def test_check_returns_the_outputs_of_a_successful_call(monkeypatch, result, want):
    install(monkeypatch, FakeDriver())
    assert check(result, "cuCall", "k") == want


@pytest.mark.parametrize(
    ("result", "name"),
    [
        ((CUDA_ERROR_OUT_OF_MEMORY, None), "CUDA_ERROR_OUT_OF_MEMORY"),
        ((CUDA_ERROR_INVALID_VALUE,), "CUDA_ERROR_INVALID_VALUE"),
        (CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"),
    ],
)
def test_check_raises_with_the_kernel_the_call_and_the_error_name(monkeypatch, result, name):
    install(monkeypatch, FakeDriver())
    with pytest.raises(LaunchError) as err:
        check(result, "cuMemAlloc", "gemm")
    assert str(err.value) == f"kernel 'gemm': cuMemAlloc failed with {name}"


def test_an_error_name_given_as_text_is_used_as_is(monkeypatch):
    fake = FakeDriver()
    install(monkeypatch, fake)
    monkeypatch.setattr(fake, "cuGetErrorName", lambda err: (0, "CUDA_ERROR_UNKNOWN"))
    with pytest.raises(LaunchError, match=r"^kernel 'k': cuX failed with CUDA_ERROR_UNKNOWN$"):
        check((999,), "cuX", "k")


# -- gpu_name -------------------------------------------------------------------------------


def test_gpu_name_is_the_first_devices_name(monkeypatch):
    fake = FakeDriver(names=[b"NVIDIA H200", b"NVIDIA B200"])
    install(monkeypatch, fake)
    assert gpu_name() == "NVIDIA H200"
    assert ("cuInit", 0) in fake.calls  # "Currently, Flags must be 0" (cuInit)


def test_gpu_name_with_one_device(monkeypatch):
    install(monkeypatch, FakeDriver(names=[b"NVIDIA GB200"]))
    assert gpu_name() == "NVIDIA GB200"


def test_gpu_name_keeps_a_name_of_255_characters(monkeypatch):
    # a device name fills at most 256 bytes with its NUL (cudaDeviceProp::name is char[256])
    long = b"N" * 254 + b"X"
    install(monkeypatch, FakeDriver(names=[long]))
    assert gpu_name() == long.decode()


@pytest.mark.parametrize(
    "fail",
    [
        {"cuInit": CUDA_ERROR_NO_DEVICE},
        {"cuInit": CUDA_ERROR_INVALID_VALUE},
        {"cuDeviceGetCount": CUDA_ERROR_INVALID_VALUE},
        {"cuDeviceGetName": CUDA_ERROR_INVALID_VALUE},
    ],
)
def test_gpu_name_is_none_when_the_driver_fails(monkeypatch, fail):
    install(monkeypatch, FakeDriver(fail=fail))
    assert gpu_name() is None


def test_gpu_name_is_none_without_devices(monkeypatch):
    install(monkeypatch, FakeDriver(names=[]))
    assert gpu_name() is None


def test_gpu_name_is_none_without_cuda_bindings(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # import raises ImportError
    assert gpu_name() is None


# -- device_pointer through DLPack ----------------------------------------------------------


class DLPackOnly:
    """An array that speaks only DLPack (no ``__cuda_array_interface__``, no ``data_ptr``)."""

    def __dlpack__(self, stream=None):
        raise AssertionError("the fake view never calls it")


def test_a_dlpack_array_is_read_without_stream_ordering(monkeypatch):
    """cuda.core's ``StridedMemoryView(obj, stream_ptr)``: "Stream ordering will be properly
    established unless -1 is passed"; taking an address orders nothing."""
    seen = []

    class StridedMemoryView:
        def __init__(self, obj, stream_ptr):
            seen.append((obj, stream_ptr))
            self.ptr = 0x7F12_3400

    utils = types.ModuleType("cuda.core.utils")
    utils.StridedMemoryView = StridedMemoryView  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda.core.utils", utils)
    arr = DLPackOnly()
    assert device_pointer(arr) == 0x7F12_3400
    assert seen == [(arr, -1)]


def test_a_numpy_array_goes_through_the_real_dlpack_view():
    pytest.importorskip("cuda.core.utils")
    arr = np.arange(8, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert device_pointer(arr) == arr.ctypes.data


@pytest.mark.parametrize("obj", [object(), "0x1000", 1.5, None])
def test_an_object_without_a_device_address_is_refused(obj):
    with pytest.raises(LaunchError) as err:
        device_pointer(obj)
    assert str(err.value) == (
        f"cannot pass {type(obj).__name__} as a device buffer: give a torch/cupy array, a "
        "cuda.core Buffer, or an address"
    )


class Float8Tensor:
    """A torch tensor the interface cannot describe: torch raises KeyError for float8 dtypes
    from ``__cuda_array_interface__``; its address comes from ``data_ptr()``."""

    shape = (4, 8)
    itemsize = 1

    @property
    def __cuda_array_interface__(self):
        raise KeyError("float8_e4m3fn")

    def data_ptr(self):
        return 0x7F00_0000_4000


def test_a_tensor_without_an_interface_is_read_through_data_ptr():
    assert device_pointer(Float8Tensor()) == 0x7F00_0000_4000
