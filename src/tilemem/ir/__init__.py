"""Kernel IR: immutable nodes, the builder that records them, and index arithmetic from layouts."""

from .build import build
from .builder import BuildError
from .index import layout_index
from .interpret import interpret
from .nodes import IRError, Kernel, same

__all__ = ["BuildError", "IRError", "Kernel", "build", "interpret", "layout_index", "same"]
