"""The layout algebra: Iter, TileLayout, SwizzleLayout, ComposeLayout.

A layout maps a logical coordinate to physical positions, one integer per
memory axis: ``m`` (linear element offset, the default), ``TLane`` and
``TCol`` (tensor-memory lane and column, the column counted in elements of
the buffer's dtype). Layouts are immutable values: equal canonical forms
compare equal, and ``layout(i, j)`` is ``layout.apply(i, j)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import LayoutError
from ..validate import MAX_ELEMENTS, check_int, check_shape, is_int
from .svg import layout_svg, repr_svg

AXES = ("m", "TLane", "TCol")
Positions = dict[str, int]
# Positions are computed in int64 (numpy); a layout whose span reaches this would wrap.
MAX_POSITION = 1 << 62
# Whole-layout evaluation answers at once for any on-chip buffer (227 KiB of fp4 is 464,896
# elements); far larger layouts would take seconds and gigabytes.
MAX_EVALUATED = 1 << 24


def _check_int(value, what: str, minimum: int, maximum: int = MAX_ELEMENTS) -> int:
    return check_int(value, what, minimum=minimum, maximum=maximum, error=LayoutError)


def _check_shape(shape, what: str = "shape") -> tuple[int, ...]:
    return check_shape(shape, what, error=LayoutError)


@dataclass(frozen=True)
class Iter:
    """One loop of a layout: ``extent`` coordinate values, ``stride`` apart on ``axis``."""

    extent: int
    stride: int
    axis: str = "m"

    def __post_init__(self) -> None:
        object.__setattr__(self, "extent", _check_int(self.extent, "Iter extent", 1))
        object.__setattr__(self, "stride", _check_int(self.stride, "Iter stride", 0))
        if not isinstance(self.axis, str) or not self.axis.isidentifier():
            raise LayoutError(f"Iter axis must be a name such as 'm' or 'TCol', got {self.axis!r}")

    def __repr__(self) -> str:
        return f"{self.extent}:{self.stride}@{self.axis}"


_STRIDE_RE = re.compile(r"^\s*(\d+)\s*(?:@\s*(\w+))?\s*$")


def _parse_stride(spec) -> tuple[int, str]:
    """``4`` -> (4, "m"); ``"1@TLane"`` -> (1, "TLane"); ``(1, "TCol")`` -> (1, "TCol")."""
    if is_int(spec):
        return int(spec), "m"
    if isinstance(spec, tuple) and len(spec) == 2 and is_int(spec[0]) and isinstance(spec[1], str):
        return int(spec[0]), spec[1]
    if isinstance(spec, str):
        match = _STRIDE_RE.match(spec)
        if match:
            return int(match.group(1)), match.group(2) or "m"
    raise LayoutError(
        f"cannot read stride {spec!r}: write an int (axis m), 'STRIDE@AXIS' such as "
        "'1@TLane', or a (stride, axis) pair"
    )


def _iters(iters, what: str) -> tuple[Iter, ...]:
    if isinstance(iters, Iter | str) or not hasattr(iters, "__iter__"):
        raise LayoutError(f"TileLayout {what} must be a sequence of Iter objects, got {iters!r}")
    out = tuple(iters)
    for it in out:
        if not isinstance(it, Iter):
            raise LayoutError(f"TileLayout takes Iter objects, got {it!r}")
    return out


def _offsets(offset) -> tuple[tuple[str, int], ...]:
    """``{axis: constant}`` as sorted pairs; constants are integers >= 0."""
    if offset is None:
        return ()
    if not isinstance(offset, Mapping):
        raise LayoutError(f"offset must be a mapping {{axis: int}}, got {offset!r}")
    for axis, value in offset.items():
        if not isinstance(axis, str) or not axis.isidentifier():
            raise LayoutError(f"offset axis must be a name such as 'TCol', got {axis!r}")
        _check_int(value, f"offset on axis {axis!r}", 0)
    return tuple(sorted((axis, int(value)) for axis, value in offset.items()))


def row_major_strides(shape: Sequence[int]) -> list[int]:
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= extent
    return strides


class Layout:
    """What every layout answers. Subclasses implement ``_apply_flat`` and ``size``."""

    if TYPE_CHECKING:

        @property
        def shape(self) -> tuple[int, ...]: ...

    # -- evaluation ---------------------------------------------------------
    def apply(self, *coords, shape: Sequence[int] | None = None) -> Positions:
        """Physical positions of one element.

        ``apply(x)`` takes a flat row-major index over the layout's size;
        ``apply(i, j, ...)`` takes one index per dimension of ``shape`` (the
        layout's own shape by default). Both name the same element, because the
        shard Iters split a flat index row-major exactly as the dimensions do.
        """
        if len(coords) == 1 and shape is None and type(coords[0]) is int:
            x = coords[0]  # the common call: one flat Python int, no numpy on one element
            if 0 <= x < self.size():
                return self._apply_int(x)
        if len(coords) == 1 and isinstance(coords[0], (tuple, list)):
            coords = tuple(coords[0])
        if not coords:
            raise LayoutError("apply needs a flat index or one index per dimension, got none")
        for c in coords:
            if not is_int(c):
                raise LayoutError(
                    f"coordinate {tuple(coords)!r}: {c!r} is not an integer (a float would be "
                    "truncated to a different element)"
                )
        return self._apply_int(self._flatten(tuple(int(c) for c in coords), shape))

    __call__ = apply

    def apply_flat(self, flat) -> dict[str, np.ndarray]:
        """Vectorised ``apply`` over an array of flat indices."""
        raw = np.asarray(flat)
        if raw.size and raw.dtype.kind not in "iu":
            raise LayoutError(f"flat indices must be integers, got an array of {raw.dtype}")
        flat = raw.astype(np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= self.size()):
            raise LayoutError(f"flat index out of range [0, {self.size()})")
        return self._apply_flat(flat)

    def positions(self) -> dict[str, np.ndarray]:
        """Positions of every element, in row-major order of the logical shape."""
        if self.size() > MAX_EVALUATED:
            raise LayoutError(
                f"positions() of {self.size()} elements would build arrays of that length (more "
                f"than {MAX_EVALUATED}); evaluate the part you need with apply_flat(indices)"
            )
        return self._positions()

    def _flatten(self, coords: Sequence[int], shape: Sequence[int] | None) -> int:
        size = self.size()
        if len(coords) == 1 and shape is None:
            (x,) = coords
            if not 0 <= int(x) < size:
                raise LayoutError(f"flat index {x} out of range [0, {size})")
            return int(x)
        shape = tuple(self.shape) if shape is None else _check_shape(shape)
        if len(coords) != len(shape):
            raise LayoutError(
                f"coordinate {tuple(coords)} has {len(coords)} indices but shape {shape} "
                f"has {len(shape)} dimensions"
            )
        if math.prod(shape) != size:
            raise LayoutError(
                f"shape {shape} holds {math.prod(shape)} elements but the layout holds {size}"
            )
        flat = 0
        for c, extent in zip(coords, shape):
            if not 0 <= int(c) < extent:
                raise LayoutError(f"coordinate {tuple(coords)} out of range for shape {shape}")
            flat = flat * extent + int(c)
        return flat

    def to_svg(self, dtype="float32", title: str | None = None) -> str:
        """A picture of the tile: each element's position, coloured by SMEM bank (``dtype``
        sets the element width) or TMEM lane quarter (see :mod:`tilemem.layout.svg`)."""
        return layout_svg(self, dtype, title)

    def _repr_svg_(self) -> str | None:
        return repr_svg(self)

    # -- to implement ---------------------------------------------------------
    def _apply_flat(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _positions(self) -> dict[str, np.ndarray]:
        return self._apply_flat(np.arange(self.size(), dtype=np.int64))

    def _apply_int(self, flat: int) -> Positions:
        """``_apply_flat`` of one in-range flat index, in Python ints (same values: no
        position reaches ``MAX_POSITION``, so int64 never wraps)."""
        out = self._apply_flat(np.asarray([flat], dtype=np.int64))
        return {axis: int(v[0]) for axis, v in out.items()}

    def size(self, axis: str | None = None) -> int:
        raise NotImplementedError

    def span(self, axis: str | None = None) -> int:
        raise NotImplementedError

    def canonicalize(self) -> Layout:
        raise NotImplementedError

    @property
    def axes(self) -> tuple[str, ...]:
        raise NotImplementedError


class TileLayout(Layout):
    """Strided layout: ``shard`` Iters consume the coordinate, ``replica`` Iters add copies.

    ``apply(x)`` splits ``x`` row-major over the shard extents (the last Iter
    varies fastest) and returns ``out[axis] = sum(c_i * stride_i) + offset[axis]``.
    A replica Iter consumes no coordinate: the element also lives at
    ``+ k * stride`` for ``k < extent`` (data copied into every TMEM lane quarter).

    >>> TileLayout.of((4, 8), (8, 1)).apply(2, 3)
    {'m': 19}
    >>> TileLayout.of((128, 256), ("1@TLane", "1@TCol")).apply(5, 7)
    {'TLane': 5, 'TCol': 7}
    """

    __slots__ = ("_axes", "_offset", "_size", "_steps", "replica", "shape", "shard")
    shape: tuple[int, ...]

    def __init__(
        self,
        shard: Iterable[Iter],
        replica: Iterable[Iter] = (),
        offset: Mapping[str, int] | None = None,
        shape: Sequence[int] | None = None,
        axes: Sequence[str] = (),
    ) -> None:
        """``axes`` names axes to report even when no Iter is left on them (kept by
        canonicalize)."""
        self.shard = _iters(shard, "shard")
        self.replica = _iters(replica, "replica")
        if not self.shard:
            raise LayoutError("a TileLayout needs at least one shard Iter")
        self._offset = _offsets(offset)
        if isinstance(axes, str) or not all(isinstance(a, str) for a in axes):
            raise LayoutError(f"axes must be a sequence of axis names, got {axes!r}")
        seen = (
            list(axes)
            + [it.axis for it in self.shard + self.replica]
            + [a for a, _ in self._offset]
        )
        self._axes = tuple(a for a in AXES if a in seen) + tuple(
            dict.fromkeys(a for a in seen if a not in AXES)
        )
        size = math.prod(it.extent for it in self.shard)
        self._size = size
        # apply's digits, fastest first: (extent, stride, axis)
        self._steps = tuple((it.extent, it.stride, it.axis) for it in reversed(self.shard))
        if shape is None:
            shape = tuple(it.extent for it in self.shard)
        self.shape = _check_shape(shape, "TileLayout shape")
        if math.prod(self.shape) != size:
            raise LayoutError(
                f"shape {self.shape} holds {math.prod(self.shape)} elements but the shard "
                f"Iters {list(self.shard)} hold {size}"
            )
        for axis in self._axes:
            if self.span(axis) > MAX_POSITION:
                raise LayoutError(
                    f"layout reaches position {self.span(axis) - 1} on axis {axis!r}, beyond the "
                    f"{MAX_POSITION} that 64-bit index arithmetic holds without wrapping"
                )

    # -- constructors ---------------------------------------------------------
    @classmethod
    def of(cls, shape: Sequence[int], strides: Sequence | None = None, offset=None) -> TileLayout:
        """Short notation: one Iter per dimension.

        ``strides`` entries are ints (axis ``m``), ``"STRIDE@AXIS"`` strings or
        ``(stride, axis)`` pairs; omitted means row-major on ``m``.
        ``TileLayout.of((128, 256), ("1@TLane", "1@TCol"))`` is TIRx's
        ``S[(128, 256) : (1@TLane, 1@TCol)]``.
        """
        shape = _check_shape(shape)
        if strides is None:
            strides = row_major_strides(shape)
        if isinstance(strides, str) or not hasattr(strides, "__len__"):
            raise LayoutError(f"strides must be a sequence, got {strides!r}")
        if len(strides) != len(shape):
            raise LayoutError(f"shape {shape} and strides {tuple(strides)} differ in length")
        iters = [Iter(e, *_parse_stride(s)) for e, s in zip(shape, strides)]
        return cls(iters, offset=offset, shape=shape)

    @classmethod
    def row_major(cls, shape: Sequence[int], axis: str = "m") -> TileLayout:
        shape = _check_shape(shape)
        return cls.of(shape, [(s, axis) for s in row_major_strides(shape)])

    # -- value semantics ------------------------------------------------------
    @property
    def offset(self) -> dict[str, int]:
        return dict(self._offset)

    def _key(self):
        return (self.shard, self.replica, self._offset)

    def __eq__(self, other) -> bool:
        return isinstance(other, TileLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        text = "(" + ", ".join(repr(it) for it in self.shard) + ")"
        if self.replica:
            text += " + replica(" + ", ".join(repr(it) for it in self.replica) + ")"
        if self._offset:
            text += " + " + ", ".join(f"{v}@{a}" for a, v in self._offset)
        return f"TileLayout{text}"

    @property
    def axes(self) -> tuple[str, ...]:
        return self._axes

    # -- evaluation -----------------------------------------------------------
    def _apply_flat(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        out = {axis: np.zeros(flat.shape, dtype=np.int64) for axis in self.axes}
        rest = flat.astype(np.int64, copy=True)
        for it in reversed(self.shard):
            out[it.axis] += (rest % it.extent) * it.stride
            rest //= it.extent
        for axis, value in self._offset:
            out[axis] += value
        return out

    def _apply_int(self, flat: int) -> Positions:
        out = dict.fromkeys(self._axes, 0)
        for extent, stride, axis in self._steps:
            flat, digit = divmod(flat, extent)
            out[axis] += digit * stride
        for axis, value in self._offset:
            out[axis] += value
        return out

    def _positions(self) -> dict[str, np.ndarray]:
        """Every element's positions as a sum of broadcast ``arange(extent) * stride`` terms,
        added from the fastest Iter outwards so that only the last additions are full length."""
        extents = tuple(it.extent for it in self.shard)
        offset = dict(self._offset)
        out = {}
        for axis in self._axes:
            total = np.full((1,) * len(extents), offset.get(axis, 0), dtype=np.int64)
            for dim in reversed(range(len(extents))):
                it = self.shard[dim]
                if it.axis == axis and it.stride and it.extent > 1:
                    steps = np.arange(it.extent, dtype=np.int64)
                    if it.stride != 1:
                        steps *= it.stride
                    term = steps.reshape((-1,) + (1,) * (len(extents) - dim - 1))
                    # the first term with no offset before it is the sum so far
                    total = term if total.size == 1 and not total.flat[0] else total + term
            if total.shape != extents:  # an Iter on another axis: repeat along it
                full = np.empty(extents, dtype=np.int64)
                full[...] = total
                total = full
            out[axis] = total.reshape(-1)
        return out

    def replica_positions(self, *coords, shape=None) -> list[Positions]:
        """Every position that holds the element: the primary one and each replica copy."""
        base = self.apply(*coords, shape=shape)
        result = [base]
        for it in self.replica:
            result = [
                {**p, it.axis: p.get(it.axis, 0) + k * it.stride}
                for p in result
                for k in range(it.extent)
            ]
        return result

    def size(self, axis: str | None = None) -> int:
        if axis is None:
            return self._size
        return math.prod(it.extent for it in self.shard if it.axis == axis)

    def span(self, axis: str | None = None) -> int:
        """``1 + sum((extent - 1) * stride)`` over shard and replica Iters on ``axis``, plus its
        offset."""
        iters = [it for it in self.shard + self.replica if axis is None or it.axis == axis]
        offsets = [v for a, v in self._offset if axis is None or a == axis]
        return 1 + sum((it.extent - 1) * it.stride for it in iters) + sum(offsets)

    # -- algebra --------------------------------------------------------------
    def canonicalize(self) -> TileLayout:
        """Drop extent-1 Iters and zero offsets, fuse contiguous neighbours, sort replicas.

        Neighbours ``a`` then ``b`` on one axis fuse when ``b.extent * b.stride
        == a.stride``: together they walk ``a.extent * b.extent`` positions
        ``b.stride`` apart.
        """
        kept = [it for it in self.shard if it.extent > 1] or [Iter(1, 1, self.shard[0].axis)]
        fused: list[Iter] = []
        for it in kept:
            prev = fused[-1] if fused else None
            if prev is not None and prev.axis == it.axis and it.extent * it.stride == prev.stride:
                fused[-1] = Iter(prev.extent * it.extent, it.stride, it.axis)
            else:
                fused.append(it)
        replica = sorted(
            (it for it in self.replica if it.extent > 1 and it.stride != 0),
            key=lambda it: (it.axis, it.stride, it.extent),
        )
        offset = {a: v for a, v in self._offset if v != 0}
        return TileLayout(fused, replica, offset, shape=self.shape, axes=self._axes)

    def iters_by_dim(self, shape: Sequence[int] | None = None) -> list[list[Iter]]:
        """The shard Iters grouped into one run per dimension of ``shape``.

        An Iter that straddles two dimensions (after fusion) is split back, which
        needs its extent to divide evenly; otherwise :class:`LayoutError`.
        """
        shape = tuple(self.shape) if shape is None else _check_shape(shape)
        if math.prod(shape) != self.size():
            raise LayoutError(f"shape {shape} does not match layout size {self.size()}")
        pending = list(self.shard)
        groups: list[list[Iter]] = []
        for extent in reversed(shape):
            group: list[Iter] = []
            need = extent
            while need > 1:
                if not pending:
                    raise LayoutError(f"layout {self!r} cannot be read as shape {shape}")
                it = pending.pop()
                if it.extent <= need and need % it.extent == 0:
                    group.insert(0, it)
                    need //= it.extent
                elif it.extent % need == 0:
                    group.insert(0, Iter(need, it.stride, it.axis))
                    pending.append(Iter(it.extent // need, it.stride * need, it.axis))
                    need = 1
                else:
                    raise LayoutError(
                        f"layout {self!r} cannot be read as shape {shape}: an Iter of extent "
                        f"{it.extent} straddles a dimension of extent {extent}"
                    )
            while pending and pending[-1].extent == 1 and not group:
                group.insert(0, pending.pop())
            groups.insert(0, group)
        if any(it.extent != 1 for it in pending):
            raise LayoutError(f"layout {self!r} cannot be read as shape {shape}")
        return groups

    def tile(
        self, inner: TileLayout, outer_shape: Sequence[int], inner_shape: Sequence[int]
    ) -> TileLayout:
        """Tile ``inner`` (shape ``inner_shape``) by this outer layout (shape ``outer_shape``).

        Per dimension d: this layout's Iters for d with strides multiplied by
        ``inner.span(axis)``, then ``inner``'s Iters for d; the coordinate is
        ``c_d = o_d * inner_shape[d] + i_d``.
        """
        if not isinstance(inner, TileLayout):
            raise LayoutError(f"tile takes an inner TileLayout, got {inner!r}")
        outer_shape = _check_shape(outer_shape, "outer shape")
        inner_shape = _check_shape(inner_shape, "inner shape")
        if len(outer_shape) != len(inner_shape):
            raise LayoutError(
                f"outer shape {tuple(outer_shape)} and inner shape {tuple(inner_shape)} differ in "
                "rank"
            )
        outer_groups = self.iters_by_dim(outer_shape)
        inner_groups = inner.iters_by_dim(inner_shape)
        iters: list[Iter] = []
        for o_group, i_group in zip(outer_groups, inner_groups):
            iters += [Iter(it.extent, it.stride * inner.span(it.axis), it.axis) for it in o_group]
            iters += i_group
        offset = dict(inner._offset)
        shape = tuple(o * i for o, i in zip(outer_shape, inner_shape))
        return TileLayout(iters, inner.replica, offset, shape=shape, axes=inner.axes)

    def tile_to(
        self, to_shape: Sequence[int], cur_shape: Sequence[int] | None = None
    ) -> TileLayout:
        """Repeat this layout (shape ``cur_shape``) row-major until it covers ``to_shape``."""
        to_shape = _check_shape(to_shape, "to_shape")
        cur_shape = tuple(self.shape) if cur_shape is None else _check_shape(cur_shape)
        return _outer_for(to_shape, cur_shape, self.axes[0] if self.axes else "m").tile(
            self, [t // c for t, c in zip(to_shape, cur_shape)], cur_shape
        )

    def window(self, dim: int, start: int, length: int) -> TileLayout:
        """The sub-layout of coordinates ``start <= c[dim] < start + length``.

        Exact when the window stays inside one Iter of that dimension, or when
        it covers whole blocks of its innermost Iters; otherwise LayoutError.
        """
        dim = _check_int(dim, f"window dimension of a {len(self.shape)}-D layout", 0)
        if dim >= len(self.shape):
            raise LayoutError(f"window dimension {dim} of a {len(self.shape)}-D layout")
        start = _check_int(start, "window start", 0)
        length = _check_int(length, "window length", 1)
        extent = self.shape[dim]
        if start + length > extent:
            raise LayoutError(
                f"window [{start}, {start + length}) outside dimension {dim} of extent {extent}"
            )
        groups = self.iters_by_dim()
        group = groups[dim]
        block, cut = 1, len(group)
        for cut in range(len(group) - 1, -1, -1):
            block *= group[cut].extent
            if start // block == (start + length - 1) // block:
                break
        inner = group[cut:]
        if len(inner) == 1:
            new_inner = [Iter(length, inner[0].stride, inner[0].axis)]
        elif length == block and start % length == 0:
            new_inner = inner
        else:
            raise LayoutError(
                f"a window of {length} starting at {start} on dimension {dim} of {self!r} "
                "is not a strided layout: pick a window that stays inside one block or covers "
                "whole blocks"
            )
        origin = [0] * len(self.shape)
        origin[dim] = start
        base = {axis: v for axis, v in self.apply(*origin).items() if v}
        groups[dim] = new_inner
        shape = list(self.shape)
        shape[dim] = length
        iters = [it for g in groups for it in g]
        return TileLayout(iters, self.replica, base, shape=shape, axes=self._axes)


def _outer_for(to_shape, cur_shape, axis: str) -> TileLayout:
    if len(to_shape) != len(cur_shape) or any(t % c for t, c in zip(to_shape, cur_shape)):
        raise LayoutError(
            f"cannot tile shape {tuple(cur_shape)} to {tuple(to_shape)}: each dimension must divide"
        )
    outer_shape = [t // c for t, c in zip(to_shape, cur_shape)]
    return TileLayout.of(outer_shape, [(s, axis) for s in row_major_strides(outer_shape)])


@dataclass(frozen=True)
class SwizzleLayout(Layout):
    """XOR swizzle on an element offset ``x`` (TIRx/CuTe-style, in element units).

    ``c = x >> pe; c ^= (c & (((1 << L) - 1) << a)) >> a;
    result = (c << pe) | (x & ((1 << pe) - 1))``.
    It permutes offsets only within blocks of ``2 ** (pe + L + a)`` elements
    (its ``period``). On byte addresses with 16-byte chunks this is
    ``Swizzle<L, 4, a>`` of docs/HARDWARE-RULES.md.
    """

    per_element: int
    swizzle_len: int
    atom_len: int = 3

    def __post_init__(self) -> None:
        for name in ("per_element", "swizzle_len", "atom_len"):
            object.__setattr__(
                self, name, _check_int(getattr(self, name), f"SwizzleLayout {name}", 0, 20)
            )

    @property
    def period(self) -> int:
        return 1 << (self.per_element + self.swizzle_len + self.atom_len)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.period,)

    @property
    def axes(self) -> tuple[str, ...]:
        return ("m",)

    def swizzle(self, x):
        """Apply the XOR to an int or an integer array.

        The class formula flips bits ``[pe, pe + L)`` of ``x`` by bits ``[pe + a, pe + a + L)``
        and keeps the rest, so it is ``x ^ (((x >> (pe + a)) & (2**L - 1)) << pe)``: one
        temporary instead of five.
        """
        return x ^ self._flips(x)

    def _flips(self, x):
        """The bits ``swizzle`` XORs into ``x``."""
        pe, atom = self.per_element, self.atom_len
        return ((x >> (pe + atom)) & ((1 << self.swizzle_len) - 1)) << pe

    def _apply_flat(self, flat):
        return {"m": self.swizzle(flat)}

    def _apply_int(self, flat: int) -> Positions:
        return {"m": self.swizzle(flat)}

    def size(self, axis=None) -> int:
        return self.period if axis in (None, "m") else 1

    def span(self, axis=None) -> int:
        return self.period if axis in (None, "m") else 1

    def canonicalize(self) -> SwizzleLayout:
        return self

    def __repr__(self) -> str:
        return f"Swizzle(pe={self.per_element}, L={self.swizzle_len}, a={self.atom_len})"


@dataclass(frozen=True)
class ComposeLayout(Layout):
    """``swizzle`` applied to the ``m`` position that ``tile`` computes; other axes pass through."""

    swizzle: SwizzleLayout
    tile: TileLayout

    def __post_init__(self) -> None:
        if not isinstance(self.swizzle, SwizzleLayout) or not isinstance(self.tile, TileLayout):
            raise LayoutError(
                f"ComposeLayout(swizzle, tile) takes a SwizzleLayout and a TileLayout, got "
                f"{self.swizzle!r} and {self.tile!r}"
            )
        if set(self.tile.axes) != {"m"}:
            raise LayoutError(
                f"a swizzle acts on shared-memory offsets: the tile must map to axis 'm' only, "
                f"got axes {self.tile.axes}"
            )

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tile.shape

    @property
    def axes(self) -> tuple[str, ...]:
        return self.tile.axes

    def _apply_flat(self, flat):
        out = self.tile._apply_flat(flat)
        out["m"] = self.swizzle.swizzle(out["m"])
        return out

    def _positions(self) -> dict[str, np.ndarray]:
        out = self.tile._positions()
        out["m"] ^= self.swizzle._flips(out["m"])  # a fresh array: swizzled in place
        return out

    def _apply_int(self, flat: int) -> Positions:
        out = self.tile._apply_int(flat)
        out["m"] = self.swizzle.swizzle(out["m"])
        return out

    def size(self, axis=None) -> int:
        return self.tile.size(axis)

    def span(self, axis=None) -> int:
        """The tile's span; on ``m`` rounded up to whole swizzle periods when not already."""
        span = self.tile.span(axis)
        if axis in (None, "m") and span % self.swizzle.period:
            span += self.swizzle.period - span % self.swizzle.period
        return span

    def canonicalize(self) -> Layout:
        tile = self.tile.canonicalize()
        return tile if self.swizzle.swizzle_len == 0 else ComposeLayout(self.swizzle, tile)

    def tile_to(self, to_shape, cur_shape=None) -> ComposeLayout:
        return ComposeLayout(self.swizzle, self.tile.tile_to(to_shape, cur_shape))

    def __repr__(self) -> str:
        return f"{self.swizzle!r} o {self.tile!r}"
