import os
import sys

import pytest
from hypothesis import HealthCheck, settings

# Random pool programs (tests/pool/test_program_fuzz.py): every CI run replays 10,000 of them.
# TILEMEM_PROGRAMS=200 (say) for a quick local run.
settings.register_profile(
    "pool-programs",
    max_examples=int(os.environ.get("TILEMEM_PROGRAMS", "10000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pytest_configure(config):
    """Long test-side builds (the CuTe oracle) report on the terminal, not into captured
    output, so a first run that compiles for minutes says what it is doing."""
    from oracle import cute

    def say(line: str) -> None:
        capture = config.pluginmanager.getplugin("capturemanager")
        terminal = config.pluginmanager.getplugin("terminalreporter")
        if capture is None or terminal is None:
            print(line, file=sys.stderr, flush=True)
            return
        with capture.global_and_fixture_disabled():
            terminal.write_line(line)

    cute.SAY = say


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
