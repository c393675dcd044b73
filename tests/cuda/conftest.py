"""Tests marked ``nvrtc`` compile generated kernels through NVRTC (``cuda.core``, the ``cuda``
extra); without it they are skipped. Host-only tests here (TMA map planning, scalar packing,
emitted source text) run everywhere."""

import importlib.util

import pytest


def _has_nvrtc() -> bool:
    try:
        return importlib.util.find_spec("cuda.core") is not None
    except (ImportError, ValueError):
        return False


def pytest_runtest_setup(item):
    if "nvrtc" in item.keywords and not _has_nvrtc():
        pytest.skip("compiling needs the cuda extra (cuda-core with NVRTC)")


@pytest.fixture(scope="module")
def torch():
    """torch with a GPU it can see, for the GPU tests (marker ``gpu``); skipped otherwise."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    return torch
