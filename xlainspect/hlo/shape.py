"""XLA shapes: arrays `f32[8,<=4]{1,0:T(8,128)}`, tuples, tokens; their logical and padded bytes.

The grammar lexes a whole array shape as one token; `array_shape` decodes that text once per
distinct string (dumps repeat the same few hundred shapes hundreds of thousands of times).
Stdlib only.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from xlainspect.errors import HloParseError, error_at
from xlainspect.layout import (
    PRIMITIVE_BITS,
    Layout,
    array_size_bytes,
    decode_layout,
    element_bits,
    tpu_array_size_bytes,
)

UNBOUNDED = -1
"""Size recorded for an unbounded dynamic dimension `?`."""


@dataclass(frozen=True, slots=True)
class Shape:
    """An `xla::Shape`: an array (dtype, dims, layout) or a tuple of shapes (dtype "tuple")."""

    dtype: str
    dims: tuple[int, ...] = ()
    """Dimension sizes; the bound for `<=N` dims, UNBOUNDED for `?`."""
    dynamic: tuple[bool, ...] = ()
    """Per dimension: True for `<=N` and `?` (dynamic) dims."""
    layout: Layout | None = None
    tuple_shapes: tuple[Shape, ...] = ()

    @property
    def is_tuple(self) -> bool:
        return self.dtype == "tuple"

    @property
    def is_array(self) -> bool:
        return not self.is_tuple and self.dtype not in ("token", "opaque")

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def num_elements(self) -> int:
        return math.prod(max(d, 0) for d in self.dims)

    def subshape(self, index: tuple[int, ...]) -> Shape | None:
        """The shape at ShapeIndex `index` inside this one (`ShapeUtil::GetSubshape`; `()` is the
        shape itself), or None where the index leaves the tuple."""
        shape = self
        for i in index:
            if not shape.is_tuple or not 0 <= i < len(shape.tuple_shapes):
                return None
            shape = shape.tuple_shapes[i]
        return shape

    def leaves(self) -> tuple[Shape, ...]:
        """The non-tuple shapes, depth first (the shape itself for an array)."""
        if not self.is_tuple:
            return (self,)
        return tuple(leaf for s in self.tuple_shapes for leaf in s.leaves())

    @property
    def logical_bytes(self) -> int:
        """Bytes of the data itself (`ShapeUtil::ByteSizeOfElements`); tuples sum their leaves."""
        if self.is_tuple:
            return sum(s.logical_bytes for s in self.tuple_shapes)
        if not self.is_array:
            return 0
        return math.ceil(self.num_elements * element_bits(self.dtype, self.layout) / 8)

    @property
    def padded_bytes(self) -> int:
        """Bytes with tile padding, as `ShapeUtil::ArraySize`; tuples sum their leaves."""
        if self.is_tuple:
            return sum(s.padded_bytes for s in self.tuple_shapes)
        if not self.is_array:
            return 0
        return array_size_bytes(self.dtype, tuple(max(d, 0) for d in self.dims), self.layout)

    def backend_bytes(self, platform: str | None) -> int:
        """Padded bytes under the backend's size function: `tpu_array_size_bytes` on "tpu", else ArraySize."""
        if self.is_tuple:
            return sum(s.backend_bytes(platform) for s in self.tuple_shapes)
        if platform != "tpu" or not self.is_array:
            return self.padded_bytes
        return tpu_array_size_bytes(self.dtype, tuple(max(d, 0) for d in self.dims), self.layout)

    def without_layout(self) -> str:
        """The shape as a program signature prints it (no layouts)."""
        if self.is_tuple:
            return "(" + ", ".join(s.without_layout() for s in self.tuple_shapes) + ")"
        return f"{self.dtype}[{self._dims_text()}]"

    def _dims_text(self) -> str:
        return ",".join(
            "?" if d == UNBOUNDED else (f"<={d}" if dyn else str(d))
            for d, dyn in zip(self.dims, self.dynamic, strict=True)
        )

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(str(s) for s in self.tuple_shapes) + ")"
        return self.dtype + self.dims_and_layout_text()

    def dims_and_layout_text(self) -> str:
        """An array shape as XLA prints it less its element type, `[8,128]{1,0}`: what a layout change
        shows (the dtype is the same on both sides)."""
        return f"[{self._dims_text()}]" + (str(self.layout) if self.layout is not None else "")


def tuple_shape(elements: tuple[Shape, ...]) -> Shape:
    return Shape("tuple", tuple_shapes=elements)


#: Element type, dimensions, layout; XLA's parser allows blanks between the dimensions and the layout.
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]\s*(.*)", re.S)
_COMMENT = re.compile(r"/\*.*?\*/", re.S)


@functools.lru_cache(maxsize=65536)
def array_shape(text: str) -> Shape:
    """Decode one array shape token, e.g. `bf16[3,5]{1,0:T(8,128)(2,1)}`.

    Raises HloParseError whose column points into `text`.
    """
    match = _ARRAY.fullmatch(text)
    if match is None:
        raise error_at(text, 0, "expected an array shape like f32[8,128]{1,0}")
    dtype, dims_text, layout_text = match.groups()
    if dtype not in PRIMITIVE_BITS:
        raise error_at(text, 0, f"unknown element type {dtype!r}")
    dims, dynamic = _dims(text, match.start(2), _COMMENT.sub(" ", dims_text))
    layout = None
    if layout_text:
        try:
            layout = decode_layout(layout_text)
        except HloParseError as error:
            raise error_at(text, match.start(3) + error.column - 1, error.message) from None
        _check_layout(text, match.start(3), dims, layout)
    return Shape(dtype, dims, dynamic, layout)


def _dims(text: str, offset: int, dims_text: str) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    dims: list[int] = []
    dynamic: list[bool] = []
    for piece in dims_text.split(",") if dims_text.strip() else ():
        piece = piece.strip()
        if piece == "?":
            dims.append(UNBOUNDED)
            dynamic.append(True)
        elif piece.startswith("<=") and piece[2:].strip().isdigit():
            dims.append(int(piece[2:]))
            dynamic.append(True)
        elif piece.isdigit():
            dims.append(int(piece))
            dynamic.append(False)
        else:
            raise error_at(text, offset, f"bad dimension {piece!r}: expected N, <=N or ?")
    return tuple(dims), tuple(dynamic)


def _check_layout(text: str, offset: int, dims: tuple[int, ...], layout: Layout) -> None:
    """The checks XLA's parser and `LayoutUtil::ValidateLayoutForShape` make on a layout."""
    m2m = layout.minor_to_major
    if m2m and sorted(m2m) != list(range(len(dims))):
        raise error_at(
            text,
            offset + 1,
            f"minor_to_major {{{','.join(map(str, m2m))}}} is not a permutation of the {len(dims)} dimensions",
        )
    if not m2m and dims:
        raise error_at(text, offset + 1, f"minor_to_major is empty but the shape has {len(dims)} dimensions")
    # A first tile longer than the rank is left alone here: `ShapeUtil::ArraySize` counts the missing
    # dims as 1 (scalars `{:T(128)}` rely on it), so dumps must never be rejected for it.
