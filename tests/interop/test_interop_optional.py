"""The interop modules need their libraries only when a conversion is called."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tilemem import SMEMPool
from tilemem.errors import MissingLibraryError, TilememError
from tilemem.layout import mma_shared_layout

HIDDEN = ("pycute", "cutlass", "triton")


def test_import_tilemem_and_interop_need_none_of_the_libraries():
    # a fresh interpreter in which importing any of the three fails
    code = (
        "import sys\n"
        f"for name in {HIDDEN!r}: sys.modules[name] = None\n"
        "import tilemem, tilemem.interop, tilemem.interop.pycute, tilemem.interop.cute\n"
        "import tilemem.interop.gluon, tilemem.interop.cute_cpp\n"
        f"loaded = [m for m in sys.modules if m.split('.')[0] in {HIDDEN!r} "
        "and sys.modules[m] is not None]\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "package"),
    [("pycute", "nvidia-cutlass"), ("cutlass", "nvidia-cutlass-dsl"), ("triton", "triton")],
)
def test_a_conversion_without_its_library_names_the_package(monkeypatch, module, package):
    from tilemem.interop import cute, gluon, pycute

    monkeypatch.setitem(sys.modules, module, None)
    for sub in [m for m in sys.modules if m.startswith(module + ".")]:
        monkeypatch.setitem(sys.modules, sub, None)
    layout = mma_shared_layout("bfloat16", "128B", (64, 64))
    pool = SMEMPool(target="sm_90a")
    pool.alloc_mma((64, 64), "bfloat16")
    pool.commit()
    plan = pool.plan()
    call = {
        "pycute": lambda: pycute.to_pycute(layout),
        "cutlass": lambda: cute.shared_storage(plan),
        "triton": lambda: gluon.to_gluon(layout, "bfloat16"),
    }[module]
    with pytest.raises(MissingLibraryError, match=f"pip install {package}") as info:
        call()
    assert isinstance(info.value, TilememError)
    assert isinstance(info.value, ImportError)
