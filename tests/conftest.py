import pytest


def _gpu_present() -> bool:
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, count = driver.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:  # no cuda-bindings, no driver: no GPU
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; run scripts/gpu_check.sh on a GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
