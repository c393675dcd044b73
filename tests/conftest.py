import os
import subprocess
import sys
from pathlib import Path

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

TESTS = Path(__file__).parent

# Tests that share one slow build run on one pytest-xdist worker (`-n auto --dist loadgroup`),
# so the other worker goes on with the rest instead of waiting for the same compiler.
BUILD_GROUPS = {
    "oracle": "cute-oracle",  # fixtures that build tests/oracle/cute_oracle.cpp
    "oracle_exe": "cute-oracle",
    "verdicts": "cute-legality",  # tests/layout/test_cute_legality.py's probe units
    "compiled": "cute-header",  # tests/interop/test_interop_cute_cpp.py's host program
}
# The test files whose oracle build is started in the background when the run begins.
ORACLE_FILES = ("layout/test_cute_descriptors.py", "layout/test_decode.py")

_PREBUILD: list[subprocess.Popen] = []  # the background oracle build, when one runs


def pytest_configure(config):
    """Long test-side builds (the CuTe oracle) report on the terminal, not into captured
    output, so a first run that compiles for minutes says what it is doing (pytest-xdist
    workers have no terminal of their own: they write to standard error with capture off)."""
    from oracle import cute

    def say(line: str) -> None:
        capture = config.pluginmanager.getplugin("capturemanager")
        terminal = config.pluginmanager.getplugin("terminalreporter")
        if hasattr(config, "workerinput"):  # an xdist worker's reporter writes to no terminal
            terminal = None
        if capture is None:
            print(line, file=sys.stderr, flush=True)
        elif terminal is None:
            with capture.global_and_fixture_disabled():
                print(line, file=sys.stderr, flush=True)
        else:
            with capture.global_and_fixture_disabled():
                terminal.write_line(line)

    cute.SAY = say


def _selected(config, files) -> bool:
    """Whether the command line's paths (or the default test paths) include any of ``files``."""
    args = [a.split("::")[0] for a in config.args] or [str(TESTS)]
    wanted = [(TESTS / f).resolve() for f in files]
    for arg in args:
        path = Path(arg).resolve()
        if any(w == path or path in w.parents for w in wanted):
            return True
    return False


def pytest_sessionstart(session):
    """With a cold cache, start compiling the CuTe oracle at once, in a background process,
    so it overlaps the tests that do not need it; those that do wait for its build lock."""
    config = session.config
    if hasattr(config, "workerinput") or not _selected(config, ORACLE_FILES):
        return  # an xdist worker (the controller started it), or no oracle test selected
    from oracle import cute

    try:
        if cute.exe_path().is_file():
            return
    except cute.OracleUnavailable:
        return  # the oracle tests skip and say why
    cute.SAY("CuTe oracle: not cached yet; compiling it in the background while tests run")
    _PREBUILD.append(
        subprocess.Popen([sys.executable, str(TESTS / "oracle" / "cute.py"), "--build"])
    )


def pytest_sessionfinish(session):
    for build in _PREBUILD:
        if build.poll() is None:
            build.terminate()  # the run ended first (-x, Ctrl-C); the next run builds it


def _gpu_present() -> bool:
    from tilemem.cuda.device import gpu_name

    return gpu_name() is not None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        groups = {BUILD_GROUPS[f] for f in getattr(item, "fixturenames", ()) if f in BUILD_GROUPS}
        if item.get_closest_marker("cute_oracle"):
            groups.add("cute-oracle")
        for group in sorted(groups)[:1]:
            item.add_marker(pytest.mark.xdist_group(group))
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; run scripts/gpu_check.sh on a GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
