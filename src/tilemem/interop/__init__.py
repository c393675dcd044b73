"""Plans and layouts where kernels are written: CuTe (pycute, CuTe DSL), Triton Gluon.

Each submodule converts to one library's own objects and imports that library only when a
conversion is called, so ``import tilemem.interop`` needs none of them:

- :mod:`tilemem.interop.pycute`: ``to_pycute(layout)`` (``pip install nvidia-cutlass``);
- :mod:`tilemem.interop.cute`: CuTe DSL layouts, ``shared_storage(plan)``,
  ``tmem_columns(plan)`` (``pip install nvidia-cutlass-dsl``);
- :mod:`tilemem.interop.gluon`: ``to_gluon(layout)``, ``plan_of(compiled)``
  (``pip install triton``);
- :mod:`tilemem.interop.cute_cpp`: CuTe C++ layout types as text, for
  ``plan.to_cpp_header(cute=True)`` (no library needed to write them).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import MissingLibraryError

# import name -> (what it is, the pip package that provides it, the tilemem extra)
LIBRARIES = {
    "pycute": ("pycute", "nvidia-cutlass", "pycute"),
    "cutlass.cute": ("CuTe DSL", "nvidia-cutlass-dsl", "cute"),
    "triton.experimental.gluon": ("Triton Gluon", "triton", "gluon"),
}


def require(module: str) -> ModuleType:
    """Import an optional library, or raise :class:`MissingLibraryError` naming its package."""
    what, package, extra = LIBRARIES[module]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingLibraryError(
            f"this conversion needs {what} ({module}), which is not importable here ({exc}): "
            f"pip install {package}  (or: pip install 'tilemem[{extra}]')"
        ) from None


__all__ = ["LIBRARIES", "require"]
