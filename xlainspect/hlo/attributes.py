"""Decoders for attribute values, which the model keeps as the raw text XLA printed.

Each decoder takes the raw text (or None when the attribute is absent) and returns a typed value
(integer lists, `Window`'s dimensions, `ConvolutionDimensionNumbers`, replica groups, metadata...);
they are memoised because dumps repeat the same values many times, so each text is decoded once and
only when an analysis asks. The analyses read attributes through them, never apply a regex or a split
to HLO text themselves. Where XLA's printer has a fixed form, a `print_*` beside the decoder writes it
back: the round-trip tests decode every fixture's attributes and compare the printed text.
"""

from __future__ import annotations

import codecs
import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, cast

#: Attributes whose value names called computations (XLA prints them in kNameOnly mode).
CALLED_COMPUTATION_ATTRIBUTES = (
    "calls",
    "to_apply",
    "condition",
    "body",
    "true_computation",
    "false_computation",
    "branch_computations",
    "select",
    "scatter",
    "called_computations",
    "comparator",
)
_CALLED_KEYS = frozenset(CALLED_COMPUTATION_ATTRIBUTES)

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_FIELD = re.compile(r"""([A-Za-z_][\w.\-]*)=("(?:[^"\\]|\\.)*"|\{[^{}]*\}|[^\s,}]*)""")


def unquote(text: str) -> str:
    """A printed string without its quotes, C escapes undone (XLA prints UTF-8 as octal escapes)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    if "\\" not in text:
        return text
    raw = codecs.escape_decode(text.encode("utf-8"))[0]
    return raw.decode("utf-8", errors="replace")


def strip_comments(text: str) -> str:
    """Remove `/*index=5*/` annotations that XLA puts inside lists."""
    return _COMMENT.sub("", text) if "/*" in text else text


@functools.lru_cache(maxsize=65536)
def decode_braced_fields(text: str) -> dict[str, str]:
    """`{key=value key2="v"}` (space- or comma-separated) -> dict; strings are unquoted."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    return {k: unquote(v) if v[:1] in "\"'" else v for k, v in _FIELD.findall(body)}


def is_frame_entry(text: str) -> bool:
    """Whether a stack-frame table value is a string or `{field=N ...}` with integer fields only."""
    return not text.startswith("{") or all(v.isdigit() for v in decode_braced_fields(text).values())


@dataclass(frozen=True, slots=True)
class Metadata:
    """`metadata={op_type=... op_name=... source_file=... source_line=...}` (OpMetadata)."""

    op_type: str | None = None
    op_name: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    stack_frame_id: int | None = None

    @property
    def source(self) -> str | None:
        """`file:line`, or None when the metadata names no source."""
        if not self.source_file:
            return None
        return f"{self.source_file}:{self.source_line}" if self.source_line else self.source_file


_NO_METADATA = Metadata()


@functools.lru_cache(maxsize=65536)
def decode_metadata(text: str | None) -> Metadata:
    if not text:
        return _NO_METADATA
    fields = decode_braced_fields(text)
    return Metadata(
        op_type=fields.get("op_type"),
        op_name=fields.get("op_name"),
        source_file=fields.get("source_file"),
        source_line=_int_or_none(fields.get("source_line")),
        stack_frame_id=_int_or_none(fields.get("stack_frame_id")),
    )


@functools.lru_cache(maxsize=65536)
def op_name_scopes(op_name: str | None) -> tuple[str, ...]:
    """The scopes of a jax `op_name` (`jit(f)/jit(main)/dot_general`: its name stack joined with `/`, as
    source_info_util.NameStack prints it), outermost first; () for none."""
    return tuple(op_name.split("/")) if op_name else ()


_ELEMENT = re.compile(r"(?P<sequence>.*)\[(?P<index>\d+)\]")


@functools.lru_cache(maxsize=65536)
def sequence_element(op_name: str) -> tuple[str, int] | None:
    """A parameter's op_name that ends in a sequence index (jax's pytree path, `data[3]`) -> ("data", 3);
    None for any other name."""
    match = _ELEMENT.fullmatch(op_name)
    return (match["sequence"], int(match["index"])) if match else None


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


def called_computation_names(attributes: dict[str, str]) -> tuple[str, ...]:
    """Names of computations referenced by an instruction's attributes, in printed order."""
    if attributes.keys().isdisjoint(_CALLED_KEYS):  # most instructions call nothing: skip the 11 look-ups
        return ()
    names: list[str] = []
    for key in CALLED_COMPUTATION_ATTRIBUTES:
        value = attributes.get(key)
        if value:
            names.extend(n.strip().lstrip("%") for n in value.strip("{}").split(",") if n.strip())
    return tuple(names)


@dataclass(frozen=True, slots=True)
class Alias:
    """One `input_output_alias` entry: output `{i}` may reuse parameter `p` at `{j}` (donation)."""

    output_index: tuple[int, ...]
    parameter: int
    parameter_index: tuple[int, ...]
    kind: str = "may-alias"


_ALIAS = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}\s*(?:,\s*([\w-]+))?\s*\)")


def decode_input_output_alias(text: str | None) -> tuple[Alias, ...]:
    if not text:
        return ()
    return tuple(
        Alias(_index(out), int(param), _index(param_index), kind or "may-alias")
        for out, param, param_index, kind in _ALIAS.findall(strip_comments(text))
    )


def _index(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def decode_json(text: str | None) -> dict[str, Any] | None:
    """A JSON `backend_config` (raw or quoted); None when absent or not JSON (TPU prints protos)."""
    if not text:
        return None
    if text[0] in "\"'":
        text = unquote(text)
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class ReplicaGroups:
    """A decoded `replica_groups=` value (collective device list, reference §1.8).

    `groups` is None when the groups are not spelled out: `{}` (one group of every device, size
    unknown from the instruction alone) and the mesh-axes form, which is kept as opaque text.
    """

    form: str
    """"list" (`{{0,1},{2,3}}`), "empty" (`{}`), "iota" (`[2,4]<=[8]T(1,0)`) or "mesh"."""
    groups: tuple[tuple[int, ...], ...] | None
    num_groups: int | None
    group_size: int | None


_IOTA_GROUPS = re.compile(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH_GROUPS = re.compile(
    r"mesh\[(?P<axes>[^\]]*)\](?:,\s*device_ids=\((?:[^()]|\([^()]*\))*\))?\s*\{(?P<used>[^}]*)\}"
)
"""`mesh['x'=2,'y'=4] {'y'}` (xla/hlo/ir/replica_group.cc, `MeshAxesReplicaGroupList::ToString`), with the
mesh's `device_ids=([2,4]T(1,0))` where its devices are not in iota order: the order changes which devices
are in a group, not the groups' size, which is all the mesh form is decoded to."""
_MESH_AXIS = re.compile(r"'([^']+)'=(\d+)")


_LIST_GROUPS = re.compile(r"\{\{[\d,]*\}(?:,\{[\d,]*\})*\}")
"""Explicit groups as XLA prints them (`ReplicaGroupsToString`, spaces removed): `{{0,1},{2,3}}`."""


@functools.lru_cache(maxsize=4096)
def decode_replica_groups(text: str | None) -> ReplicaGroups:
    """Every spelling of `replica_groups`: explicit lists, `{}`, iota (expanded), mesh axes."""
    body = strip_comments(text or "").replace(" ", "")
    if body in ("", "{}"):
        return ReplicaGroups("empty", None, 1, None)
    if iota := _IOTA_GROUPS.fullmatch(body):
        groups = _expand_iota(int(iota[1]), int(iota[2]), _index(iota[3]), _index(iota[4] or ""))
        return ReplicaGroups("iota", groups, len(groups), len(groups[0]))
    if mesh := _MESH_GROUPS.fullmatch(strip_comments(text or "").strip()):
        return _mesh_groups(mesh["axes"], mesh["used"])
    if not _LIST_GROUPS.fullmatch(body):
        raise ValueError("expected replica groups ({{0,1},{2,3}}, [2,2]<=[4] or mesh axes), got " + repr(text))
    groups = tuple(_index(g) for g in re.findall(r"\{([\d,]*)\}", body))
    return ReplicaGroups("list", groups, len(groups), len(groups[0]) if groups else None)


def _expand_iota(
    num_groups: int, group_size: int, reshape: tuple[int, ...], transpose: tuple[int, ...]
) -> tuple[tuple[int, ...], ...]:
    """iota(N) reshaped to `reshape`, transposed by `transpose`, read row-major as [G, S]."""
    transpose = transpose or tuple(range(len(reshape)))
    strides = [1] * len(reshape)
    for axis in range(len(reshape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * reshape[axis + 1]
    dims = [reshape[a] for a in transpose]
    flat: list[int] = []
    for index in range(num_groups * group_size):
        value, rest = 0, index
        for position in range(len(dims) - 1, -1, -1):
            rest, coordinate = divmod(rest, dims[position])
            value += coordinate * strides[transpose[position]]
        flat.append(value)
    return tuple(tuple(flat[g * group_size : (g + 1) * group_size]) for g in range(num_groups))


def _mesh_groups(axes_text: str, used_text: str) -> ReplicaGroups:
    """`mesh['x'=8,'y'=1] {'x'}`: group size is the product of the used axes (sub-axes: unknown)."""
    axes = {name: int(size) for name, size in _MESH_AXIS.findall(axes_text)}
    used = [u.strip().strip("'") for u in used_text.split(",") if u.strip()]
    if not axes or any(u not in axes for u in used):
        return ReplicaGroups("mesh", None, None, None)
    size = functools.reduce(lambda a, b: a * b, (axes[u] for u in used), 1)
    total = functools.reduce(lambda a, b: a * b, axes.values(), 1)
    return ReplicaGroups("mesh", None, total // size, size)


def decode_source_target_pairs(text: str | None) -> tuple[tuple[int, int], ...]:
    """`{{0,1},{1,2}}` (collective-permute) -> ((0, 1), (1, 2))."""
    pairs = re.findall(r"\{\s*(\d+)\s*,\s*(\d+)\s*\}", strip_comments(text or ""))
    return tuple((int(s), int(t)) for s, t in pairs)


FUSION_CONFIG_KEYS = ("fusion_backend_config", "fusion_config")
"""Where a JSON backend_config names the backend's fusion kind: GPU's `fusion_backend_config`
(`__triton_gemm`, `__cudnn$fusion`), CPU's `fusion_config` (`__ynn_fusion`, the YNNPACK library
fusions XLA:CPU wraps in `kind=kCustom`)."""


def backend_config_kind(text: str | None) -> str | None:
    """The backend's own fusion kind: `<fusion config>.kind` of a JSON backend_config."""
    config = decode_json(text) or {}
    for key in FUSION_CONFIG_KEYS:
        fusion_config = config.get(key)
        if isinstance(fusion_config, dict) and isinstance(
            kind := cast("dict[str, Any]", fusion_config).get("kind"), str
        ):
            return kind
    return None


def known_trip_count(text: str | None) -> int | None:
    """`known_trip_count.n` from a `while`'s JSON backend_config (`{"known_trip_count":{"n":"5"}}`)."""
    trip = (decode_json(text) or {}).get("known_trip_count")
    value = cast("dict[str, Any]", trip).get("n") if isinstance(trip, dict) else None
    return int(value) if isinstance(value, (int, str)) and str(value).isdigit() else None


_SDY_SHARDING = re.compile(r'xla\.sdy\.sharding="#sdy\.sharding<@\w+, \[(.*?)\]')
_SDY_DIM = re.compile(r"\{([^{}]*)\}")
_MESH_FORM = re.compile(r"^\{mesh\[[^\]]*\], \[((?:\{[^{}]*\}(?:, )?)*)\]")
"""XLA's mesh form of a sharding (hlo_sharding.cc, printed by jax 0.11.2): `{mesh['data'=2,'model'=4],
[{'data'}, {}]}`, one `{axes}` per dimension, as Shardy's attribute names them."""
_SDY_MESH = re.compile(r"#sdy\.mesh<\[([^\]]*)\]>")
_SDY_MESH_AXIS = re.compile(r'\\?"(\w+)\\?"\s*=\s*(\d+)')
_TILED = re.compile(r"^\{devices=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?( last_tile_dim_replicate)?\}$")

UNCONSTRAINED = "P.UNCONSTRAINED"
"""A PartitionSpec entry Shardy marks open (`?`): the partitioner chooses."""


def decode_mesh_axes(frontend_attributes: str | None) -> tuple[tuple[str, int], ...]:
    """The mesh's axes and sizes, from the `xla.sdy.meshes` module attribute jax writes with Shardy
    (`#sdy.mesh<["data"=2, "model"=4]>`); empty without one."""
    mesh = _SDY_MESH.search(frontend_attributes or "")
    return tuple((name, int(size)) for name, size in _SDY_MESH_AXIS.findall(mesh.group(1))) if mesh else ()


def decode_partition_spec(
    frontend_attributes: str | None, sharding: str | None, axes: tuple[tuple[str, int], ...]
) -> tuple[str, ...] | None:
    """The PartitionSpec entries (`('data', None)` as `("'data'", "None")`) of an instruction's sharding:
    from Shardy's `xla.sdy.sharding` frontend attribute (what the user wrote), XLA's mesh form, or XLA's
    iota tile assignment `{devices=[2,1,4]<=[8] last_tile_dim_replicate}` read against the module's mesh
    (`axes`, from `decode_mesh_axes`); `()` for `{replicated}` on a mesh. None where the sharding is
    none of those (the caller keeps XLA's text)."""
    sdy = _SDY_SHARDING.search(frontend_attributes or "")
    if sdy:
        return tuple(_spec_entry(d) for d in _SDY_DIM.findall(sdy.group(1).replace('\\"', '"')))
    if not sharding:
        return None
    if mesh_form := _MESH_FORM.match(sharding):
        return tuple(_spec_entry(d) for d in _SDY_DIM.findall(mesh_form.group(1)))
    if sharding == "{replicated}" and axes:
        return ()
    return _tiled_spec(sharding, axes)


def _tiled_spec(sharding: str, axes: tuple[tuple[str, int], ...]) -> tuple[str, ...] | None:
    """PartitionSpec entries of an iota tile assignment over the mesh (hlo_sharding.cc's V2 form): the
    device order is the mesh's axes (`<=[8]`) or a transpose of them (`<=[2,4]T(1,0)`), and each tile
    dimension takes the next axes whose sizes multiply to it. None where the sharding is not one of those."""
    match = _TILED.match(sharding)
    if match is None or not axes:
        return None
    tiles, reshape = [int(t) for t in match.group(1).split(",")], [int(r) for r in match.group(2).split(",")]
    if reshape == [math.prod(size for _, size in axes)] and match.group(3) is None:
        order = list(axes)
    elif reshape == [size for _, size in axes] and match.group(3):
        permutation = [int(p) for p in match.group(3).split(",")]
        if sorted(permutation) != list(range(len(axes))):
            return None
        order = [axes[p] for p in permutation]
    else:
        return None
    dims: list[str] = []
    used = iter(order)
    for tile in tiles[:-1] if match.group(4) else tiles:
        names: list[str] = []
        product = 1
        while product < tile and (axis := next(used, None)):
            names.append(axis[0])
            product *= axis[1]
        if product != tile:
            return None
        dims.append("None" if not names else repr(names[0]) if len(names) == 1 else f"({', '.join(map(repr, names))})")
    return tuple(dims)


def _spec_entry(dim: str) -> str:
    """One dimension of a PartitionSpec from Shardy's `{"data", "model"}` or the mesh form's
    `{'data', 'model'}` (`?` marks an open dim)."""
    if dim.strip() == "?":
        return UNCONSTRAINED
    axes = [a.strip().strip("\"'") for a in dim.split(",") if a.strip().strip("\"'") and a.strip() != "?"]
    if not axes:
        return "None"
    return repr(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(repr, axes)) + ")"


def single_literal_value(literal: str) -> str | None:
    """The one value of a constant's literal (`-0.05` of `-0.05` or `{-0.05}`: a shape of one element,
    LiteralBase::ToString's braces); None for a literal of more values (or nested braces)."""
    one = literal[1:-1] if literal.startswith("{") and literal.endswith("}") else literal
    return None if any(c in one for c in "{},") else one


@functools.lru_cache(maxsize=4096)
def decode_int_list(text: str | None) -> tuple[int, ...]:
    """`{1,0}` (`dimensions=`, `lhs_contracting_dims=`, `fft_length=`...: XLA's `StrJoin(values, ",")` in
    braces, hlo_instruction.cc) -> (1, 0); absent -> (). ValueError where an entry is not an integer."""
    if text is None:
        return ()
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"expected a braced list of integers, got {text!r}")
    body = strip_comments(body[1:-1])
    return tuple(int(value) for value in body.split(",")) if body.strip() else ()


@functools.lru_cache(maxsize=4096)
def decode_group_count(text: str | None) -> int:
    """`feature_group_count=2` / `batch_group_count=2` -> 2; absent -> 1, XLA's default (hlo_instruction.h:
    `feature_group_count_ = 1`, `batch_group_count_ = 1`; the printer omits a count of 1). ValueError for
    anything but a positive integer."""
    if text is None:
        return 1
    if not text.isdecimal() or int(text) < 1:
        raise ValueError(f"expected a positive group count, got {text!r}")
    return int(text)


@functools.lru_cache(maxsize=4096)
def decode_channel_id(text: str | None) -> int | None:
    """`channel_id=5` -> 5; absent -> None, XLA's default (hlo_instruction.h: `std::optional<int64_t>
    channel_id_`, printed only when set). ValueError for anything but a non-negative integer."""
    if text is None:
        return None
    if not text.isdecimal():
        raise ValueError(f"expected an integer channel id, got {text!r}")
    return int(text)


def print_integer(value: int) -> str:
    """The text XLA prints for an integer attribute (`StrCat(value)`: `2`)."""
    return str(value)


def print_int_list(values: tuple[int, ...]) -> str:
    """The text XLA prints for a list of integers (`{1,0}`)."""
    return "{" + ",".join(map(str, values)) + "}"


def decode_integer_literal(text: str) -> int | None:
    """The value of an integer scalar literal (a constant's `5`, `-3`); None for any other literal."""
    return int(text) if text.removeprefix("-").isdecimal() else None


@dataclass(frozen=True, slots=True)
class WindowDimension:
    """One dimension of a `window=` (xla_data.proto `WindowDimension`), XLA's defaults where not printed."""

    size: int = 1
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1
    base_dilation: int = 1
    window_reversal: bool = False


_WINDOW_FIELDS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")


@functools.lru_cache(maxsize=4096)
def decode_window(text: str | None) -> tuple[WindowDimension, ...]:
    """`{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x2 rhs_dilate=1x1 rhs_reversal=0x1}`, the fields
    window_util.cc's `ToString(const Window&)` prints (each only where some dimension is not the default;
    `size` for every window with dimensions) -> one WindowDimension per dimension; absent or `{}` -> ().
    ValueError for a field XLA does not print or lists of unequal length."""
    fields: dict[str, list[str]] = {}
    for item in (text or "").strip().removeprefix("{").removesuffix("}").split():
        key, _, value = item.partition("=")
        if key not in _WINDOW_FIELDS or not value:
            raise ValueError(f"unknown window field {item!r}")
        fields[key] = value.split("x")
    if not fields:
        return ()
    rank = len(fields.get("size", ()))
    if rank == 0 or any(len(values) != rank for values in fields.values()):
        raise ValueError(f"window fields of unequal length (or no size): {text!r}")
    pads = [pad.split("_") for pad in fields.get("pad", ["0_0"] * rank)]
    if any(len(pad) != 2 for pad in pads):
        raise ValueError(f"a window pad is not low_high: {text!r}")

    def each(key: str, default: str) -> list[int]:
        return [int(value) for value in fields.get(key, [default] * rank)]

    return tuple(
        WindowDimension(size, stride, int(low), int(high), window_dilation, base_dilation, bool(reversal))
        for size, stride, (low, high), window_dilation, base_dilation, reversal in zip(
            each("size", "1"),
            each("stride", "1"),
            pads,
            each("rhs_dilate", "1"),
            each("lhs_dilate", "1"),
            each("rhs_reversal", "0"),
            strict=True,
        )
    )


def print_window(window: tuple[WindowDimension, ...]) -> str:
    """The text window_util.cc's `ToString` prints, in braces as hlo_instruction.cc prints `window=`."""
    fields: list[str] = []
    if window:
        fields.append("size=" + "x".join(str(d.size) for d in window))
    if any(d.stride != 1 for d in window):
        fields.append("stride=" + "x".join(str(d.stride) for d in window))
    if any(d.padding_low or d.padding_high for d in window):
        fields.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in window))
    if any(d.base_dilation != 1 for d in window):
        fields.append("lhs_dilate=" + "x".join(str(d.base_dilation) for d in window))
    if any(d.window_dilation != 1 for d in window):
        fields.append("rhs_dilate=" + "x".join(str(d.window_dilation) for d in window))
    if any(d.window_reversal for d in window):
        fields.append("rhs_reversal=" + "x".join(str(int(d.window_reversal)) for d in window))
    return "{" + " ".join(fields) + "}"


@dataclass(frozen=True, slots=True)
class ConvolutionDimensionNumbers:
    """A convolution's `dim_labels=` (xla_data.proto `ConvolutionDimensionNumbers`): where batch, feature
    and each spatial dimension (in spatial order) lie in the input, the kernel and the output."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


@functools.lru_cache(maxsize=4096)
def decode_dim_labels(text: str) -> ConvolutionDimensionNumbers:
    """`b01f_01io->b01f` (hlo_instruction.cc `ConvolutionDimensionNumbersToString`: a letter per dimension
    of the input `b`/`f`, the kernel `i`/`o` and the output `b`/`f`, digit k for spatial dimension k).
    ValueError where a letter is missing or the three disagree on the spatial dimensions."""
    lhs, _, rest = text.strip().partition("_")
    rhs, _, out = rest.partition("->")
    spatial = sorted(c for c in lhs if c.isdecimal())
    for part in (rhs, out):
        if sorted(c for c in part if c.isdecimal()) != spatial:
            raise ValueError(f"dim_labels {text!r}: the spatial dimensions differ")
    return ConvolutionDimensionNumbers(
        lhs.index("b"),
        lhs.index("f"),
        tuple(lhs.index(d) for d in spatial),
        rhs.index("i"),
        rhs.index("o"),
        tuple(rhs.index(d) for d in spatial),
        out.index("b"),
        out.index("f"),
        tuple(out.index(d) for d in spatial),
    )


def print_dim_labels(numbers: ConvolutionDimensionNumbers) -> str:
    """The text hlo_instruction.cc's `ConvolutionDimensionNumbersToString` prints (`?` for a position
    no dimension names)."""

    def labels(first: tuple[str, int], second: tuple[str, int], spatial: tuple[int, ...]) -> str:
        slots = ["?"] * (max(first[1], second[1], *spatial) + 1)
        slots[first[1]], slots[second[1]] = first[0], second[0]
        for k, position in enumerate(spatial):
            slots[position] = str(k)
        return "".join(slots)

    n = numbers
    return (
        labels(("b", n.input_batch), ("f", n.input_feature), n.input_spatial)
        + "_"
        + labels(("o", n.kernel_output_feature), ("i", n.kernel_input_feature), n.kernel_spatial)
        + "->"
        + labels(("b", n.output_batch), ("f", n.output_feature), n.output_spatial)
    )
