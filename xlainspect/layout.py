"""XLA layouts: decoding `{minor_to_major:fields}` text and XLA's own size arithmetic.

Field letters and their order follow XLA's `Layout::Print` / `HloParser::ParseLayout`
(`D T L # * E S SC P M`); the decoder accepts them in any order so one decoder covers old and
new dumps. `array_size_bytes` is `ShapeUtil::ArraySize`: only the first tile pads, `L(n)` rounds
the element count, `E(n)` sets the bits per element, split configs shrink the split dimension.
Stdlib only.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from xlainspect.errors import error_at

#: Bits per element of every primitive type XLA prints (`primitive_util`); sub-byte types still
#: occupy one byte each unless the layout sets `E(n)`.
PRIMITIVE_BITS: dict[str, int] = {
    "pred": 8,
    "s1": 1,
    "u1": 1,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "s32": 32,
    "u32": 32,
    "s64": 64,
    "u64": 64,
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "f8e5m2": 8,
    "f8e4m3": 8,
    "f8e4m3fn": 8,
    "f8e4m3b11fnuz": 8,
    "f8e3m4": 8,
    "f8e5m2fnuz": 8,
    "f8e4m3fnuz": 8,
    "f8e8m0fnu": 8,
    "f4e2m1fn": 4,
    "f6e2m3fn": 6,
    "f6e3m2fn": 6,
    "token": 0,
    "opaque": 64,
}

COMBINE_DIMENSION = -1
"""A tile dimension printed `*`: merge this physical dimension into the next more-minor one."""


@dataclass(frozen=True, slots=True)
class Tile:
    """One tiling level, `T(8,128)`: extents over the most-minor physical dimensions."""

    dims: tuple[int, ...]

    def __str__(self) -> str:
        return "(" + ",".join("*" if d == COMBINE_DIMENSION else str(d) for d in self.dims) + ")"


@dataclass(frozen=True, slots=True)
class SplitConfig:
    """`SC(dim:i,j)`: the physical (major-to-minor) dimension `dimension` is split at the indices."""

    dimension: int
    split_indices: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Layout:
    """A decoded `xla::Layout`; field names follow `xla/layout.h`."""

    minor_to_major: tuple[int, ...]
    tiles: tuple[Tile, ...] = ()
    tail_padding_alignment_in_elements: int = 1
    index_primitive_type: str | None = None
    pointer_primitive_type: str | None = None
    element_size_in_bits: int = 0
    memory_space: int = 0
    split_configs: tuple[SplitConfig, ...] = ()
    physical_shape: str | None = None
    """`P(...)`: the nested shape text, kept raw (sparse arrays only)."""
    dynamic_shape_metadata_prefix_bytes: int = 0
    dim_level_types: tuple[str, ...] = field(default=())
    """`D(...)` from older printers: `D` dense, `C` compressed, `S` singleton, `H` loose."""

    def __str__(self) -> str:
        return format_layout(self)


class _LayoutFields(TypedDict, total=False):
    """The fields of a Layout as `decode_layout` finds them, before the Layout is made."""

    minor_to_major: tuple[int, ...]
    tiles: tuple[Tile, ...]
    tail_padding_alignment_in_elements: int
    index_primitive_type: str
    pointer_primitive_type: str
    element_size_in_bits: int
    memory_space: int
    split_configs: tuple[SplitConfig, ...]
    physical_shape: str
    dynamic_shape_metadata_prefix_bytes: int
    dim_level_types: tuple[str, ...]


_NUMBER_FIELDS: dict[
    str,
    Literal[
        "tail_padding_alignment_in_elements",
        "element_size_in_bits",
        "memory_space",
        "dynamic_shape_metadata_prefix_bytes",
    ],
] = {
    "L": "tail_padding_alignment_in_elements",
    "E": "element_size_in_bits",
    "S": "memory_space",
    "M": "dynamic_shape_metadata_prefix_bytes",
}
"""Layout fields of one number, by their letter (layout.cc's printer)."""

_INT_LIST = re.compile(r"\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*")
_FIELD = re.compile(r"SC|[DTL#*ESPM]")


def decode_layout(text: str) -> Layout:
    """Decode a layout as XLA prints it, e.g. `{1,0:T(8,128)(2,1)S(1)}`.

    Raises HloParseError whose column points into `text`.

    >>> decode_layout("{1,0:T(8,128)(2,1)}").tiles
    (Tile(dims=(8, 128)), Tile(dims=(2, 1)))
    """
    if not (text.startswith("{") and text.endswith("}")):
        raise error_at(
            text, 0 if not text.startswith("{") else len(text), "a layout is written {minor_to_major[:fields]}"
        )
    body_end = len(text) - 1
    colon = text.find(":")
    m2m_end = colon if colon >= 0 else body_end
    minor_to_major = _ints(text, 1, m2m_end, "minor_to_major")
    values: _LayoutFields = {"minor_to_major": minor_to_major}
    pos = m2m_end + 1 if colon >= 0 else body_end
    while pos < body_end:
        match = _FIELD.match(text, pos)
        if not match:
            raise error_at(text, pos, f"unknown layout field {text[pos]!r} (expected one of D T L # * E S SC P M)")
        pos = _decode_field(text, match.group(), match.end(), values)
    return Layout(**values)


def _decode_field(text: str, letter: str, pos: int, values: _LayoutFields) -> int:
    """Decode one `X(...)` field (repeated groups for T and SC) into `values`; return the end offset."""
    groups, pos = _field_groups(text, letter, pos)
    start, end = groups[0]
    arg = text[start:end]
    if letter == "T":
        values["tiles"] = tuple(Tile(_tile_dims(text, s, e)) for s, e in groups)
    elif letter == "SC":
        values["split_configs"] = tuple(_split_config(text, s, e) for s, e in groups)
    elif letter == "D":
        values["dim_level_types"] = tuple(t.strip() for t in arg.split(",") if t.strip())
    elif letter == "P":
        values["physical_shape"] = arg
    elif letter == "#":
        values["index_primitive_type"] = arg.strip()
    elif letter == "*":
        values["pointer_primitive_type"] = arg.strip()
    else:
        (number,) = _ints(text, start, end, f"{letter}(n)") or (None,)
        if number is None:
            raise error_at(text, start, f"layout field {letter} needs a number")
        values[_NUMBER_FIELDS[letter]] = number
    return pos


def _field_groups(text: str, letter: str, pos: int) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) offsets inside each `(...)` of a field (several for T and SC), and the offset after."""
    groups: list[tuple[int, int]] = []
    while pos < len(text) and text[pos] == "(":
        close = _matching_paren(text, pos)
        groups.append((pos + 1, close))
        pos = close + 1
        if letter not in ("T", "SC"):
            break
    if not groups:
        raise error_at(text, pos, f"layout field {letter} needs a (...) argument")
    return groups, pos


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise error_at(text, open_at, "unclosed '(' in layout")


def _ints(text: str, start: int, end: int, what: str) -> tuple[int, ...]:
    match = _INT_LIST.fullmatch(text, start, end)
    if not match:
        raise error_at(text, start, f"{what} must be a list of integers")
    return tuple(int(v) for v in match.group(1).split(",")) if match.group(1) else ()


def _tile_dims(text: str, start: int, end: int) -> tuple[int, ...]:
    dims: list[int] = []
    for piece in text[start:end].split(","):
        piece = piece.strip()
        if piece == "*":
            dims.append(COMBINE_DIMENSION)
        elif piece.isdigit():
            dims.append(int(piece))
        else:
            raise error_at(text, start, f"tile dimension {piece!r} is not a number or '*'")
    return tuple(dims)


def _split_config(text: str, start: int, end: int) -> SplitConfig:
    dim, sep, _ = text[start:end].partition(":")
    if not sep or not dim.strip().isdigit():
        raise error_at(text, start, "split config is written SC(dimension:index,index...)")
    return SplitConfig(int(dim), _ints(text, start + len(dim) + 1, end, "split indices"))


def format_layout(layout: Layout) -> str:
    """Print a layout the way XLA's newest `Layout::Print` does (round trip of decode_layout)."""
    splits = "".join(f"({c.dimension}:{','.join(map(str, c.split_indices))})" for c in layout.split_configs)
    fields = (  # in Layout::Print's order; a field at its default is not printed
        f"D({','.join(layout.dim_level_types)})" if layout.dim_level_types else "",
        "T" + "".join(str(t) for t in layout.tiles) if layout.tiles else "",
        f"L({layout.tail_padding_alignment_in_elements})" if layout.tail_padding_alignment_in_elements != 1 else "",
        f"#({layout.index_primitive_type})" if layout.index_primitive_type else "",
        f"*({layout.pointer_primitive_type})" if layout.pointer_primitive_type else "",
        f"E({layout.element_size_in_bits})" if layout.element_size_in_bits else "",
        f"S({layout.memory_space})" if layout.memory_space else "",
        f"SC{splits}" if splits else "",
        f"P({layout.physical_shape})" if layout.physical_shape is not None else "",
        f"M({layout.dynamic_shape_metadata_prefix_bytes})" if layout.dynamic_shape_metadata_prefix_bytes else "",
    )
    text = "".join(fields)
    return "{" + ",".join(map(str, layout.minor_to_major)) + (":" + text if text else "") + "}"


def element_bits(dtype: str, layout: Layout | None = None) -> int:
    """Bits per element: `E(n)` when the layout sets it, else the storage width (whole bytes)."""
    if layout is not None and layout.element_size_in_bits:
        return layout.element_size_in_bits
    return 8 * math.ceil(PRIMITIVE_BITS.get(dtype, 0) / 8)


def max_split_size(dims: tuple[int, ...], layout: Layout, logical_dim: int) -> int:
    """`LayoutUtil::MaxSplitSize`: the largest piece of a dimension cut by a split config."""
    size = dims[logical_dim]
    for config in layout.split_configs:
        if config.dimension < len(layout.minor_to_major) and _major(layout, config.dimension) == logical_dim:
            cuts = (0, *config.split_indices, size)
            size = max(b - a for a, b in itertools.pairwise(cuts))
    return size


def _major(layout: Layout, physical: int) -> int:
    return layout.minor_to_major[len(layout.minor_to_major) - 1 - physical]


def array_size_bytes(dtype: str, dims: tuple[int, ...], layout: Layout | None) -> int:
    """Bytes of a dense array exactly as XLA's `ShapeUtil::ArraySize` computes them.

    >>> from xlainspect.layout import decode_layout
    >>> array_size_bytes("bf16", (3, 5), decode_layout("{1,0:T(8,128)(2,1)}"))
    2048
    """
    bits = element_bits(dtype, layout)
    if layout is None or not layout.tiles:
        return math.ceil(math.prod(dims) * bits / 8)
    sizes = [max_split_size(dims, layout, d) for d in layout.minor_to_major]  # minor to major
    tile = _merge_combined(layout.tiles[0].dims, sizes)
    num_elements = 1
    for k, extent in enumerate(reversed(tile)):
        size = sizes[k] if k < len(sizes) else 1
        num_elements *= _round_up(size, extent)
    for size in sizes[len(tile) :]:
        num_elements *= size
    num_elements = _round_up(num_elements, layout.tail_padding_alignment_in_elements)
    return math.ceil(num_elements * bits / 8)


def _merge_combined(tile: tuple[int, ...], sizes: list[int]) -> tuple[int, ...]:
    """Fold `*` tile dimensions: the physical dim is multiplied into the next more-minor one.

    Mutates `sizes` (minor to major) in place so the caller sees the merged dimensions, and returns
    the tile with the combined entries set to 1, which then cannot pad.
    """
    if COMBINE_DIMENSION not in tile:
        return tile
    result = list(tile)
    for k in range(len(tile)):  # from the major end, so chains of `*` accumulate (TILEDOC example)
        minor_index = len(tile) - 1 - k
        if tile[k] == COMBINE_DIMENSION and minor_index < len(sizes):
            if minor_index > 0:
                sizes[minor_index - 1] *= sizes[minor_index]
            sizes[minor_index] = 1
            result[k] = 1
    return tuple(result)


def tpu_array_size_bytes(dtype: str, dims: tuple[int, ...], layout: Layout | None) -> int:
    """Bytes the TPU backend's size function gives an array (what TPU buffer assignments print).

    Equal to `array_size_bytes` except for untiled scalars outside SMEM (`S(2)`): the TPU compiler
    places them in a whole (8,128) tile of their element type (`f32[]` 4096 B, `s16[]` 2048 B),
    measured in the committed tpu_v4/v5e/v6e buffer assignments (reference section 2.4b).
    """
    untiled = layout is None or not layout.tiles
    if untiled and not dims and (layout is None or layout.memory_space != TPU_SMEM):
        return array_size_bytes(dtype, (8, 128), None)
    return array_size_bytes(dtype, dims, layout)


TPU_SMEM = 2
"""The TPU compilers' memory-usage reports name color 2 `smem` (it holds the sync flags)."""

#: Names of `S(n)` per platform. TPU names are what the TPU compiler's own memory-usage reports
#: print in the committed fixtures (`Memory Space: smem (color=2)`...), with xprof's name where they
#: differ; generic XLA: 1 = fast memory, 5 = host; GPU: collective (1) and temp (2) buffers.
MEMORY_SPACE_NAMES: dict[str, dict[int, str]] = {
    "tpu": {
        0: "HBM (default)",
        1: "VMEM",
        2: "SMEM (sync flags)",
        3: "CMEM (v4 report: hbm)",
        4: "SMEM (xprof)",
        5: "host memory (report: cmem)",
        6: "color 6 (xprof: workspace register)",
    },
    "gpu": {0: "device memory", 1: "collective memory", 2: "temp buffers"},
    "cpu": {0: "host memory"},
}
_GENERIC_MEMORY_SPACES = {0: "default memory", 1: "fast memory", 5: "host memory"}


def memory_space_name(space: int, platform: str | None = None) -> str:
    """What `S(space)` is called on `platform` ("tpu", "gpu", "cpu"; None: XLA's generic constants)."""
    names = MEMORY_SPACE_NAMES.get(platform or "", _GENERIC_MEMORY_SPACES)
    return names.get(space, f"memory space {space}")


@dataclass(frozen=True, slots=True)
class DimPadding:
    """What the first tile does to one physical dimension (major-to-minor position `physical`)."""

    physical: int
    logical_dims: tuple[int, ...]
    """The logical dimension(s) it holds; more than one when `*` tile entries combined them."""
    size: int
    tile: int
    """The tile extent over it; 1 when the tile does not reach this dimension."""
    padded: int


def tile_padding(dims: tuple[int, ...], layout: Layout | None) -> tuple[DimPadding, ...]:
    """Per physical dimension, major to minor: its size, the first tile's extent, the padded size.

    Uses the same arithmetic as `array_size_bytes` (split configs, combined `*` dimensions), so the
    product of `padded` is the element count before `L(n)` rounding.
    """
    if layout is None or len(layout.minor_to_major) != len(dims):
        return tuple(DimPadding(i, (i,), d, 1, d) for i, d in enumerate(dims))
    m2m = layout.minor_to_major
    sizes = [max_split_size(dims, layout, d) for d in m2m]
    tile = _merge_combined(layout.tiles[0].dims, sizes) if layout.tiles else ()
    owners = [[d] for d in m2m]  # minor to major: logical dims held by each physical dim
    extents = tuple(reversed(layout.tiles[0].dims)) if layout.tiles else ()  # minor to major
    for k in range(min(len(extents), len(owners)) - 1, 0, -1):  # major first, as _merge_combined
        if extents[k] == COMBINE_DIMENSION:
            owners[k - 1] = owners[k] + owners[k - 1]
            owners[k] = []
    rows: list[DimPadding] = []
    for k in range(len(m2m) - 1, -1, -1):
        extent = tile[len(tile) - 1 - k] if k < len(tile) else 1
        rows.append(DimPadding(len(m2m) - 1 - k, tuple(owners[k]), sizes[k], extent, _round_up(sizes[k], extent)))
    return tuple(rows)


def _round_up(value: int, multiple: int) -> int:
    return value if multiple <= 1 else -(-value // multiple) * multiple
