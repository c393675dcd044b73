"""Kernel IR: immutable nodes, the builder that records them, and index arithmetic from layouts."""

from .builder import BuildError, build
from .evaluate import evaluate
from .index import layout_index
from .nodes import IRError, Kernel, same

__all__ = ["BuildError", "IRError", "Kernel", "build", "evaluate", "layout_index", "same"]
