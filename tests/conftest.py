import pytest


def _gpu_present() -> bool:
    from tilemem.cuda.device import gpu_name

    return gpu_name() is not None


def pytest_collection_modifyitems(config, items):
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; run scripts/gpu_check.sh on a GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
