"""Why a function was compiled more than once: the variants of one HloModule name, diffed.

Reads the least it can: `HloModule` header lines (entry_computation_layout, input_output_alias)
for every function compiled more than once, debug_options files, the programs of the distinct
signatures (to see whether a Python branch picked another program), and HLO bodies where the
signatures are the same (a static argument, a captured constant, a re-created function object).
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from xlainspect.analysis.ops import computation_counts, line_counts, opcode_counts
from xlainspect.analysis.origin import Origin, module_origin, module_origins
from xlainspect.dump.directory import Dump, DumpModule
from xlainspect.dump.files import read_bytes, read_text
from xlainspect.errors import DumpError, XlaInspectError, no_match
from xlainspect.hlo.fastpath import scan

if TYPE_CHECKING:
    from xlainspect.hlo.model import Computation, Module


@dataclass(slots=True)
class Cause:
    """One difference between the compiles of a function. `values` has one entry per distinct signature
    in compile order (for body causes: per distinct program of one signature; for identical: the module
    ids of the compiles of one program)."""

    kind: str
    parameter: str | None = None
    """The entry parameter, by its `op_name` metadata when jax recorded one, else `#<index>`."""
    index: int | None = None
    values: tuple = ()
    dims: tuple[int, ...] = ()
    """For shape causes: the dimensions (0-based) whose size varies."""
    detail: str = ""
    compiles: tuple[int, ...] = ()
    """The compiles (1-based, in the function's compile order) this cause explains: those where its value
    is new (a cache keyed on it alone would have missed). A function's causes together explain every
    compile after the first."""
    same_as: int | None = None
    """For identical and weak_type causes: the compile whose program `compiles` repeat."""


@dataclass(slots=True)
class FunctionCompiles:
    """The compiles of one function (HloModule name) and what explains them."""

    name: str
    modules: int
    module_ids: tuple[int | None, ...]
    eager: bool
    causes: tuple[Cause, ...] = ()
    suggestion: str | None = None
    source: str | None = None
    """`file:line`: for a user function the first of its lines jax traced, for an eager op the line
    that called it (from the dump's stack frames; None without them)."""
    unreadable: int = 0
    """Compiles among `modules` whose HLO file could not be read (named in the dump's skipped files):
    counted, since XLA wrote files for them, but not explained."""
    hosts: int = 1
    """Hosts (per-host folders of one dump) that compiled the function; `modules` and the causes are
    those of one host that compiled it as often as most hosts did (`doctor` names the others)."""


def count_recompiles(dump: Dump, advance: Callable[[int], None] | None = None) -> list[FunctionCompiles]:
    """Per function, in first-compile order: the number of compiles and, where above one, why; in a
    dump of several hosts, those of one usual host (the hosts of one job compile alike; dumps of
    several runs, `load_dump([a, b])`, are compared instead).
    `advance(n)` is called with each function's module count (a progress bar's)."""
    rows = []
    for name, compiles in dump.functions().items():
        if advance is not None:
            advance(len(compiles))
        hosts = [compiles] if dump.runs else _by_host(compiles)
        modules = _usual(hosts)
        readable = _readable(dump, modules)
        unreadable = [m for m in modules if m not in readable]
        parts = _by_origin(readable) or [([], Origin(eager=False, source=None))]
        for number, (part, origin) in enumerate(parts):
            causes = _explain(dump, part, origin.eager) if len(part) > 1 else ()
            counted = part + unreadable if number == 0 else part  # the first part: the user's, if any
            rows.append(
                FunctionCompiles(
                    name,
                    len(counted),
                    tuple(m.module_id for m in counted),
                    origin.eager,
                    causes,
                    _suggest(causes, origin.eager),
                    origin.source,
                    len(counted) - len(part),
                    len(hosts),
                )
            )
    return rows


def _by_origin(modules: list[DumpModule]) -> list[tuple[list[DumpModule], Origin]]:
    """The compiles of one name, as the user's and jax's eager ones (see `origin`), the user's first.
    A name whose first compile is the user's is the user's throughout (its compiles are not read again:
    a storm of 1,000 big modules); one whose first is eager has every compile read (eager modules are
    small), since a user's `def matmul` and an eager `x @ w` share the name jit_matmul."""
    if not modules:
        return []
    first = module_origin(modules[0])
    if not first.eager or len(modules) == 1:
        return [(modules, first)]
    origins = [first, *module_origins(modules[1:])]
    user = [(m, o) for m, o in zip(modules, origins) if not o.eager]
    if not user:
        return [(modules, first)]
    eager = [m for m, o in zip(modules, origins) if o.eager]
    return [([m for m, _ in user], user[0][1]), (eager, first)]


def _by_host(modules: list[DumpModule]) -> list[list[DumpModule]]:
    """The compiles of each host, in host order (a dump's modules are sorted by host first)."""
    hosts: dict[str, list[DumpModule]] = {}
    for module in modules:
        hosts.setdefault(module.host, []).append(module)
    return list(hosts.values())


def _usual(hosts: list[list[DumpModule]]) -> list[DumpModule]:
    """The compiles of the first host whose compile count is the most common one: a 64-host dump is
    explained from one host's files, not from 64 copies of them."""
    usual = Counter(len(compiles) for compiles in hosts).most_common(1)[0][0]
    return next(compiles for compiles in hosts if len(compiles) == usual)


def _readable(dump: Dump, modules: list[DumpModule]) -> list[DumpModule]:
    """The compiles whose HLO file has a readable header and is complete; the rest go to dump.skipped."""
    readable = []
    for module in modules:
        try:
            module.header()
        except XlaInspectError as error:
            dump.skip(module.hlo_file().path, error)
        else:
            readable.append(module)
    return readable


def _explain(dump: Dump, modules: list[DumpModule], eager: bool) -> tuple[Cause, ...]:
    """The causes of one function's compiles: between distinct signatures (parameters, result, flags,
    and for the user's functions other programs), then within each signature compiled again (body).
    Eager ops get no branch: jax's own function is one program per signature."""
    headers = {m: m.header() for m in modules}  # cached by _readable
    signatures = {m: _signature(headers[m]) for m in modules}
    position = {m: number for number, m in enumerate(modules, 1)}
    first_of: dict[tuple, DumpModule] = {}
    for module in modules:
        first_of.setdefault(signatures[module], module)
    distinct = list(first_of.values())  # a storm of 1,000 compiles has a few signatures: diff those
    causes = _between_signatures(dump, distinct, eager, position)
    for cause in (flags := _flag_causes(modules)):  # one value per compile
        cause.compiles = _new_values(cause.values, list(position.values()))
    causes += flags
    groups: dict[tuple, list[DumpModule]] = {}
    for module in modules:
        groups.setdefault(signatures[module], []).append(module)
    for group in groups.values():
        if len(group) > 1:
            causes += _body_causes(dump, group, eager, position)
    return tuple(causes)


def _between_signatures(
    dump: Dump, distinct: list[DumpModule], eager: bool, position: dict[DumpModule, int]
) -> list[Cause]:
    """The causes between the first compiles of distinct signatures, each with the compiles it explains.
    Where the number of parameters differs (another pytree: a static flag that adds an argument), the
    shapes of the signatures with one count are compared among themselves too (the image sizes of a
    step compiled with and without its dropout key); their dtypes are already in the all-parameters
    cause."""
    causes = _compared(dump, distinct, eager, position)
    by_count: dict[int, list[DumpModule]] = {}
    for module in distinct:
        by_count.setdefault(len(module.header().parameter_shapes), []).append(module)
    if len(by_count) > 1:
        seen: dict[tuple, Cause] = {}  # a shape that varies alike with and without the extra argument: once
        for group in by_count.values():
            for cause in (c for c in _compared(dump, group, eager, position) if c.kind == "shape" and len(group) > 1):
                key = (cause.parameter, cause.index, cause.values, cause.dims)
                if key in seen:
                    seen[key].compiles = tuple(sorted(seen[key].compiles + cause.compiles))
                else:
                    causes.append(seen.setdefault(key, cause))
    return causes


def _compared(dump: Dump, distinct: list[DumpModule], eager: bool, position: dict[DumpModule, int]) -> list[Cause]:
    """`_between_signatures` of signatures compared all at once: one value per signature."""
    causes = signature_causes([m.header() for m in distinct])
    if any(c.kind == "shape" for c in causes):
        causes = _sharded_shapes(dump, distinct, causes)
    causes += _result_causes([_program_header(m) for m in distinct])
    if causes:
        causes = _name_parameters(dump, distinct[0], causes)
    if len(distinct) > 1 and not eager:
        causes += _branch_causes(dump, distinct)
        partitioned = distinct[0].header().num_partitions > 1
        if partitioned and not any(c.kind == "sharding" for c in causes) and (programs := _programs(dump, distinct)):
            causes += _sharding_causes(programs)
    for cause in causes:
        cause.compiles = _new_values(cause.values, [position[m] for m in distinct])
    return causes


def _new_values(values: tuple, numbers: list[int]) -> tuple[int, ...]:
    """The compiles (`numbers`, one per value) whose value no earlier one had."""
    seen, new = list(values[:1]), []
    for value, number in zip(values[1:], numbers[1:]):
        if value not in seen:
            seen.append(value)
            new.append(number)
    return tuple(new)


@functools.lru_cache(maxsize=4096)
def _signature(header) -> tuple:
    """What decides a cache hit as the header shows it: parameter shapes with layouts, the result (a
    static argument may decide it alone), and donation. Cached: identical header lines share one parsed
    header, and a storm of 1,000 compiles has a few."""
    return (
        tuple(str(s) for s in header.parameter_shapes),
        header.attributes.get("input_output_alias", ""),
        str(header.result_shape),
    )


def signature_causes(headers: list[Module]) -> list[Cause]:
    """How the entry parameters of header-only modules differ: every way each parameter differs, then
    donation."""
    shapes = [h.parameter_shapes for h in headers]
    if len({len(s) for s in shapes}) > 1:
        causes = [
            Cause(
                "shape",
                "(parameter count)",
                None,
                tuple(len(s) for s in shapes),
                detail="the number of parameters differs (a different pytree of arguments)",
            )
        ]
        dtypes = [",".join(dict.fromkeys(p.dtype for p in s)) for s in shapes]
        if len(set(dtypes)) > 1:  # parameters cannot be paired by index; their element types still tell
            causes.append(Cause("dtype", "(all parameters)", None, tuple(dtypes)))
        return causes
    causes = []
    for index in range(len(shapes[0])):
        causes += _parameter_causes(index, [s[index] for s in shapes])
    if len({_signature(h)[1] for h in headers}) > 1:
        causes += _donation_causes(headers)
    return causes


def _parameter_causes(index: int, shapes: list) -> list[Cause]:
    """Every way parameter `index` differs between compiles: dtype, dims, layout (a dtype change does
    not hide a shape change of the same parameter)."""
    parameter, causes = f"#{index}", []
    if len({s.dtype for s in shapes}) > 1:
        causes.append(Cause("dtype", parameter, index, tuple(s.dtype for s in shapes)))
    if len({s.dims for s in shapes}) > 1:
        causes.append(_shape_cause(parameter, index, shapes))
    elif len({str(s.layout) for s in shapes}) > 1:
        values = tuple(str(s).split(s.dtype, 1)[-1] if s.is_array else str(s) for s in shapes)
        spaces = {s.layout.memory_space if s.layout else 0 for s in shapes}
        causes.append(
            Cause("layout", parameter, index, values, detail="memory space differs" if len(spaces) > 1 else "")
        )
    return causes


def _shape_cause(parameter: str, index: int, shapes: list) -> Cause:
    if len({s.rank for s in shapes}) > 1:
        return Cause("shape", parameter, index, tuple(s.dims for s in shapes), detail="the rank differs")
    varying = tuple(d for d in range(shapes[0].rank) if len({s.dims[d] for s in shapes}) > 1)
    if len(varying) == 1:
        values = tuple(s.dims[varying[0]] for s in shapes)
    else:
        values = tuple(tuple(s.dims[d] for d in varying) for s in shapes)
    key = "a PRNG key array" if _is_key(shapes[0]) else ""
    return Cause("shape", parameter, index, values, varying, detail=key)


def _is_key(shape) -> bool:
    """PRNG keys reach XLA as u32 arrays whose last dim is the key's data (2 for threefry, 4 for
    rbg): padding them to a bucket would invent keys, so they get no bucket advice."""
    return shape.dtype == "u32" and shape.rank >= 1 and shape.dims[-1] in (2, 4)


def _result_causes(headers: list[Module]) -> list[Cause]:
    """Results that differ where the parameters agree: a static argument (a shape, a size, an axis)
    decides what the function returns."""
    results: dict[tuple, list[str]] = {}
    for header in headers:
        signature = _signature(header)
        results.setdefault(signature[:2], []).append(signature[2])
    return [
        Cause("result", None, None, tuple(_LAYOUT.sub("", r) for r in seen), detail="a static argument")
        for seen in results.values()
        if len(set(seen)) > 1
    ]


_LAYOUT = re.compile(r"\{[^{}]*\}")


def _sharded_shapes(dump: Dump, variants: list[DumpModule], causes: list[Cause]) -> list[Cause]:
    """Per-device shapes that differ while the global (before_optimizations) shapes agree: a sharding
    change. Where the global shapes differ too, the shape causes are given in global shapes (what the
    user passed), the per-device ones beside them."""
    try:
        before = [m.header("before") for m in variants]
        if len({tuple(s.dims for s in h.parameter_shapes) for h in before}) > 1:
            return _global_shapes(before, causes)
        sharded = _sharding_causes([m.module("before") for m in variants])
    except XlaInspectError:
        return causes
    return [c for c in causes if c.kind != "shape"] + sharded if sharded else causes


def _global_shapes(before: list[Module], causes: list[Cause]) -> list[Cause]:
    """Shape causes recomputed on the global shapes, the per-device sizes named in the detail."""
    if any(h.num_partitions == 1 for h in before) or len({len(h.parameter_shapes) for h in before}) > 1:
        return causes
    result = []
    for cause in causes:
        if cause.kind != "shape" or cause.index is None:
            result.append(cause)
            continue
        seen = _shape_cause(cause.parameter, cause.index, [h.parameter_shapes[cause.index] for h in before])
        per_device = " -> ".join(map(str, cause.values))
        result.append(Cause("shape", cause.parameter, cause.index, seen.values, seen.dims, f"per device {per_device}"))
    return result


def _sharding_causes(modules: list[Module]) -> list[Cause]:
    """Entry parameters whose sharding differs (the per-device shapes may still be equal), in mesh terms
    where the module carries Shardy's attributes, then the output's sharding (`out_shardings`)."""
    per_module = [{p.parameter_number: p for p in m.entry.parameters} for m in modules]
    causes = []
    for index in sorted(per_module[0]):
        seen = [_sharding_text(parameters.get(index), _mesh_axes(m)) for m, parameters in zip(modules, per_module)]
        if len(set(seen)) > 1:
            name = per_module[0][index].op_name or f"#{index}"
            causes.append(Cause("sharding", name, index, tuple(seen)))
    outputs = [_sharding_text(m.entry.root, _mesh_axes(m)) for m in modules]
    if len(set(outputs)) > 1:
        causes.append(Cause("out_sharding", "(output)", None, tuple(outputs), detail="output sharding changed"))
    return causes


_SDY_DIM = re.compile(r"\{([^{}]*)\}")
_MESH_FORM = re.compile(r"^\{mesh\[[^\]]*\], \[((?:\{[^{}]*\}(?:, )?)*)\]")
"""XLA's mesh form of a sharding (hlo_sharding.cc, printed by jax 0.11.2): `{mesh['data'=2,'model'=4],
[{'data'}, {}]}`, one `{axes}` per dimension, as Shardy's attribute names them."""


def _sharding_text(instruction, axes: list[tuple[str, int]]) -> str:
    """`P('data', None)` from Shardy's `xla.sdy.sharding` (what the user wrote with a PartitionSpec) or
    XLA's mesh form of a sharding, or from XLA's `{devices=[2,1,4]<=[8] last_tile_dim_replicate}` read
    against the module's mesh (`axes`); else XLA's text; `unspecified` where there is none (jax left it
    to the partitioner)."""
    if instruction is None:
        return "unspecified"
    sdy = re.search(
        r'xla\.sdy\.sharding="#sdy\.sharding<@\w+, \[(.*?)\]', instruction.attributes.get("frontend_attributes", "")
    )
    if sdy:
        return _spec_text([_spec_entry(d) for d in _SDY_DIM.findall(sdy.group(1).replace('\\"', '"'))])
    sharding = instruction.attributes.get("sharding")
    if not sharding:
        return "unspecified"
    if mesh_form := _MESH_FORM.match(sharding):
        return _spec_text([_spec_entry(d) for d in _SDY_DIM.findall(mesh_form.group(1))])
    if sharding == "{replicated}" and axes:
        return _spec_text([])
    dims = _tiled_spec(sharding, axes)
    return sharding if dims is None else _spec_text(dims)


def _spec_text(dims: list[str]) -> str:
    return "P() (replicated)" if set(dims) <= {"None"} else f"P({', '.join(dims)})"


_MESH = re.compile(r"#sdy\.mesh<\[([^\]]*)\]>")
_MESH_AXIS = re.compile(r'\\?"(\w+)\\?"\s*=\s*(\d+)')
_TILED = re.compile(r"^\{devices=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?( last_tile_dim_replicate)?\}$")


def _mesh_axes(module: Module) -> list[tuple[str, int]]:
    """The mesh's axes and sizes, from the `xla.sdy.meshes` module attribute jax writes with Shardy."""
    mesh = _MESH.search(module.attributes.get("frontend_attributes", ""))
    return [(name, int(size)) for name, size in _MESH_AXIS.findall(mesh.group(1))] if mesh else []


def _tiled_spec(sharding: str, axes: list[tuple[str, int]]) -> list[str] | None:
    """PartitionSpec entries of an iota tile assignment over the mesh: the device order is the mesh's
    axes (`<=[8]`) or a transpose of them (`<=[2,4]T(1,0)`), and each tile dimension takes the next
    axes whose sizes multiply to it. None where the sharding is not one of those."""
    match = _TILED.match(sharding)
    if match is None or not axes:
        return None
    tiles, reshape = [int(t) for t in match.group(1).split(",")], [int(r) for r in match.group(2).split(",")]
    if reshape == [math.prod(size for _, size in axes)] and match.group(3) is None:
        order = axes
    elif reshape == [size for _, size in axes] and match.group(3):
        permutation = [int(p) for p in match.group(3).split(",")]
        if sorted(permutation) != list(range(len(axes))):
            return None
        order = [axes[p] for p in permutation]
    else:
        return None
    dims, used = [], iter(order)
    for tile in tiles[:-1] if match.group(4) else tiles:
        names, product = [], 1
        while product < tile and (axis := next(used, None)):
            names.append(axis[0])
            product *= axis[1]
        if product != tile:
            return None
        dims.append("None" if not names else repr(names[0]) if len(names) == 1 else f"({', '.join(map(repr, names))})")
    return dims


def _spec_entry(dim: str) -> str:
    """One dimension of a PartitionSpec from Shardy's `{"data", "model"}` or the mesh form's
    `{'data', 'model'}` (`?` marks an open dim)."""
    if dim.strip() == "?":
        return "P.UNCONSTRAINED"
    axes = [a.strip().strip("\"'") for a in dim.split(",") if a.strip().strip("\"'") and a.strip() != "?"]
    if not axes:
        return "None"
    return repr(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(repr, axes)) + ")"


def _program_header(module: DumpModule) -> Module:
    """The header of the program jax gave XLA where the compiled one has per-device shapes (a partitioned
    program); else the compiled one's, already read."""
    if module.header().num_partitions == 1:
        return module.header()
    try:
        return module.header("before")
    except XlaInspectError:
        return module.header()


def _programs(dump: Dump, variants: list[DumpModule]) -> list[Module]:
    """The programs jax gave XLA (before_optimizations, else the compiled ones), parsed; empty when one
    does not parse (it is named in dump.skipped)."""
    try:
        return [m.module(_program_stage(m)) for m in variants]
    except XlaInspectError as error:
        dump.skip(variants[0].hlo_file().path, error)
        return []


def _branch_causes(dump: Dump, variants: list[DumpModule]) -> list[Cause]:
    """Signatures whose programs differ in their ops although their parameters have the same element
    types (a shape changes the sizes, not which ops run; a dtype or a new pytree may change the ops):
    a Python `if`/`for` on a shape or a static value picked another program. Names the ops that appear
    or vanish, per variant, and the source lines of the first differing ops. The ops are counted in
    the text (a storm of 1,000 shapes is 1,000 programs); one program per distinct count is parsed."""
    if len({tuple(s.dtype for s in _program_header(m).parameter_shapes) for m in variants}) > 1:
        return []
    try:
        histograms = [_text_histogram(m) for m in variants]
    except XlaInspectError:
        return []
    keys = [frozenset(h.items()) for h in histograms]
    if len(set(keys)) == 1:
        return []
    representatives: dict[frozenset, tuple[DumpModule, Counter]] = {}
    for key, module, histogram in zip(keys, variants, histograms):
        representatives.setdefault(key, (module, histogram))
    programs = _programs(dump, [m for m, _ in representatives.values()])
    detail = "the program differs beyond the signature: a Python branch or loop on a shape"
    return [_branch_cause(histograms, list(zip(programs, [h for _, h in representatives.values()])), detail)]


_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?[^\s=]+ = .*? ([a-z][a-z0-9_-]*)\(", re.M)


def _text_histogram(module: DumpModule) -> Counter:
    """Opcodes the program computes with, counted in its text without parsing it (the first ` opcode(`
    after `name = `); the ones a signature alone can add or drop (reshape, broadcast, constants, tuples
    of parameters, converts of another dtype) are left out. A program with `call` instructions (jax
    keeps nested jits as calls, 0.10 and 0.11 in different numbers) is counted per computation, calls
    inlined (`ops.inlined`): by the line-level reader, else from the parsed module."""
    stage = _program_stage(module)
    text = read_text(module.hlo_file(stage).path)
    if " call(" not in text:  # one regex over the text: a storm of 1,000 programs is read fast
        return Counter(op for op in _INSTRUCTION.findall(text) if op not in _SIGNATURE_OPS)
    lines = scan(text)
    counts = opcode_counts(*(line_counts(lines) if lines is not None else computation_counts(module.module(stage))))
    return Counter({op: n for op, n in counts.items() if op not in _SIGNATURE_OPS})


def _branch_cause(histograms: list[Counter], programs: list[tuple[Module, Counter]], detail: str) -> Cause:
    """Per variant the ops only it has (beyond what all share), and the source lines of the first of
    them in `programs` (parsed with their histograms, one per distinct histogram; none when they did
    not parse)."""
    common = functools.reduce(operator.and_, histograms)
    only = [h - common for h in histograms]
    placed = [(_placed_ops(p), h - common) for p, h in programs]
    shared = functools.reduce(operator.and_, (set(p) for p, _ in placed)) if placed else set()
    sources = tuple(dict.fromkeys(s for p, o in placed for s in _first_sources(p, shared, o)))
    return Cause(
        "branch",
        None,
        None,
        tuple(_ops_text(o) for o in only),
        detail=detail + (f", at {', '.join(sources)}" if sources else ""),
    )


_SIGNATURE_OPS = frozenset(
    {"parameter", "tuple", "get-tuple-element", "constant", "broadcast", "reshape", "bitcast", "convert"}
)


def _ops_text(ops: Counter) -> str:
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(ops.items()))


def _placed_ops(module: Module) -> list[tuple[str, str]]:
    """(opcode, file:line) of the instructions that have a source, the ENTRY computation's first."""
    placed = ((i.opcode, module.source_of(i)) for i in [*module.entry.instructions, *module.instructions()])
    return [(opcode, source) for opcode, source in placed if source]


def _first_sources(placed: list[tuple[str, str]], shared: set, ops: Counter, limit: int = 2) -> list[str]:
    """file:line of the first instructions whose opcode is in `ops` at a line no other program has it."""
    found = []
    for opcode, source in placed:
        if opcode in ops and (opcode, source) not in shared and source not in found:
            found.append(source)
            if len(found) == limit:
                break
    return found


def _body_causes(dump: Dump, group: list[DumpModule], eager: bool, position: dict[DumpModule, int]) -> list[Cause]:
    """Same signature compiled again. A compile whose program (instructions, metadata aside) an earlier
    compile had is identical to it: the jitted function object was re-created (for an eager op, an
    argument's weak type, which HLO does not show). Where programs differ, what differs, in a few words:
    the output sharding, a loop unrolled more, a branch, constants, or the arguments' pytree paths. Both
    may hold for one function (re-created three times, then a static flag picks another program)."""
    texts = [_read_bytes(m.hlo_file(_program_stage(m))) for m in group]  # the programs, as explained below
    if None in texts:
        return []
    # one body compiled again and again is compared byte for byte, not hashed: hashing a 1,000-compile
    # storm's bodies costs more than reading them
    program_of: dict[bytes | None, object] = {texts[0]: texts[0]}
    causes = []
    if any(text != texts[0] for text in texts):
        first_with: dict[bytes, DumpModule] = {}  # compiles that alternate between a few bodies: each body once
        for module, text in zip(group, texts):
            first_with.setdefault(text, module)
        try:
            computations = dict(zip(first_with, _differing_computations(dump, list(first_with.values()))))
        except _Skipped:
            return []
        differing = dict(zip(first_with, _differing_lines(computations, list(first_with))))
        program_of = {text: tuple(lines) for text, lines in differing.items()}  # equal lines: one program
        programs: dict[object, bytes] = {}
        for text in first_with:
            programs.setdefault(program_of[text], text)
        if len(programs) > 1:
            bodies = [first_with[text] for text in programs.values()]
            causes.append(_body_cause(bodies, [list(lines) for lines in programs]))
            causes[-1].compiles = tuple(position[m] for m in bodies[1:])
        elif renamed := _renamed_arguments(list(computations.values())):
            renamed.compiles = tuple(position[m] for m in list(first_with.values())[1:])
            return [renamed]
    return sorted(_repeats(group, [program_of[t] for t in texts], eager, position) + causes, key=lambda c: c.compiles)


def _repeats(group: list[DumpModule], programs: list, eager: bool, position: dict[DumpModule, int]) -> list[Cause]:
    """One identical (eager: weak_type) cause per program compiled again: the compiles that repeat it,
    the compile they repeat, and the module ids of all of them."""
    of_program: dict[object, list[DumpModule]] = {}
    for module, program in zip(group, programs):
        of_program.setdefault(program, []).append(module)
    kind, detail = ("weak_type", _WEAK_TYPE) if eager else ("identical", _IDENTICAL)
    return [
        Cause(
            kind,
            values=tuple(m.module_id for m in compiles),
            detail=detail,
            compiles=tuple(position[m] for m in compiles[1:]),
            same_as=position[compiles[0]],
        )
        for compiles in of_program.values()
        if len(compiles) > 1
    ]


_WEAK_TYPE = (
    "the same program compiled again for jax's own function: an argument's weak type differs (a Python "
    "scalar and an array of the same dtype), which jax's cache tells apart and HLO does not show"
)
_IDENTICAL = (
    "identical programs (metadata aside): the jitted function object was re-created, a static argument took "
    "a value that does not change the program, or an argument's weak type changed (a Python scalar, then an "
    "array): jax's cache keys on all three, HLO shows none"
)


def _renamed_arguments(found: list[list[Computation]]) -> Cause | None:
    """Programs equal but for the entry parameters' op_names: the same leaves under other pytree paths
    (other dict keys or fields), a new pytree structure to jax's cache."""
    entries = [next((c for c in computations if c.is_entry), None) for computations in found]
    if None in entries:
        return None
    names = [[p.op_name or "" for p in entry.parameters] for entry in entries]
    if len({tuple(n) for n in names}) == 1 or len({len(n) for n in names}) > 1:
        return None
    changed = [i for i in range(len(names[0])) if len({n[i] for n in names}) > 1]
    return Cause(
        "pytree",
        "(argument paths)",
        None,
        tuple(", ".join(n[i] for i in changed) for n in names),
        detail="the same arrays under other pytree paths (dict keys, dataclass fields)",
    )


def _differing_lines(computations: dict[bytes, list[Computation]], texts: list[bytes]) -> list[list[str]]:
    """Per compile, its instructions (without names and metadata) that not every compile has."""
    lines_of = {text: _instruction_lines(found) for text, found in computations.items()}
    common = functools.reduce(operator.and_, lines_of.values())
    differing_of = {text: sorted((lines - common).elements()) for text, lines in lines_of.items()}
    return [differing_of[text] for text in texts]


def _body_cause(bodies: list[DumpModule], differing: list[list[str]]) -> Cause:
    """The one cause a same-signature body difference has: output sharding, a loop unrolled, another
    branch, or constants (a Python value baked in)."""
    with contextlib.suppress(XlaInspectError):
        shardings = [
            c for c in _sharding_causes([m.module(_program_stage(m)) for m in bodies]) if c.kind == "out_sharding"
        ]
        if shardings:
            return shardings[0]
    constants = [
        tuple(dict.fromkeys(_constant_value(line) for line in lines if " constant(" in line)) for lines in differing
    ]
    try:
        histograms = [_text_histogram(m) for m in bodies]
    except XlaInspectError:
        histograms = []
    structure = None
    if len({frozenset(h.items()) for h in histograms}) > 1:
        structure = _unrolled(histograms) or _same_signature_branch(bodies, histograms)
    if any(constants) and (structure is None or _folded(histograms)):
        values = tuple(", ".join(c) or "(folded away)" for c in constants)
        kind = _python_kind(differing)
        return Cause("body", None, None, values, detail=f"a Python {kind} baked in: {' -> '.join(values)}")
    if structure is not None:
        return structure
    return Cause(
        "body",
        None,
        None,
        tuple("; ".join(lines[:3]) + (" ..." if len(lines) > 3 else "") for lines in differing),
        detail="same signature, different instructions: a static argument or Python value changes the program",
    )


_FOLDABLE = frozenset({"add", "subtract", "multiply", "divide"})


def _folded(histograms: list[Counter]) -> bool:
    """Only arithmetic ops differ in count: in the HLO XLA is given, `x * 1.0` and `x + 0` are already
    simplified away (jax 0.10.2 lowers them, its StableHLO conversion drops them), so a baked-in value
    of 1 or 0 removes the op that would apply it."""
    first = histograms[0]
    return all(op in _FOLDABLE for h in histograms for op in set(h) | set(first) if h[op] != first[op])


def _unrolled(histograms: list[Counter]) -> Cause | None:
    """`a loop unrolled 2x` when every op that changes count grows by one whole factor."""
    first = histograms[0]
    changed = {op for h in histograms for op in set(h) | set(first) if h[op] != first[op]}
    factors = {h[op] / first[op] if first[op] else 0.0 for h in histograms[1:] for op in changed}
    if len(factors) != 1 or (factor := factors.pop()) <= 1 or factor != int(factor):
        return None
    values = tuple(", ".join(f"{op} x{h[op]}" for op in sorted(changed)) for h in histograms)
    return Cause("body", None, None, values, detail=f"a loop unrolled {int(factor)}x (a static count)")


def _same_signature_branch(bodies: list[DumpModule], histograms: list[Counter]) -> Cause:
    """Other ops for the same signature: a Python `if` on a static argument."""
    detail = "another program for the same signature: a Python branch on a static argument"
    try:
        programs = [m.module(_program_stage(m)) for m in bodies]
    except XlaInspectError:
        programs = []
    return _branch_cause(histograms, list(zip(programs, histograms)), detail)


_NUMBER = re.compile(r" constant\(\{?([^{},]*)\}?\)")


def _constant_value(line: str) -> str:
    """`-0.05` from `f32[] constant(-0.05)` or `f32[1]{0} constant({-0.05})`; the whole line for
    constants of more values."""
    match = _NUMBER.search(line)
    return match.group(1) if match else line


def _python_kind(differing: list[list[str]]) -> str:
    dtypes = {line.split("[", 1)[0] for lines in differing for line in lines if " constant(" in line}
    if dtypes <= {"f16", "bf16", "f32", "f64"}:
        return "float"
    return "bool" if dtypes == {"pred"} else "int" if all(d[:1] in "su" for d in dtypes) else "value"


def _donation_causes(headers) -> list[Cause]:
    donated = [{a.parameter for a in h.input_output_alias} for h in headers]
    causes = []
    for index in sorted(set().union(*donated) - set.intersection(*donated)):
        causes.append(
            Cause(
                "donation",
                f"#{index}",
                index,
                tuple(index in d for d in donated),
                detail="donated (input_output_alias) in some compiles only",
            )
        )
    return causes


def _name_parameters(dump: Dump, module: DumpModule, causes: list[Cause]) -> list[Cause]:
    """Replace `#i` by the parameter's `op_name` (jax records the argument path there), when the body parses."""
    try:
        parameters = {p.parameter_number: p.op_name for p in module.signature().entry.parameters}
    except XlaInspectError as error:
        dump.skip(module.hlo_file().path, error)
        return causes
    return name_parameters(causes, parameters)


def name_parameters(causes: list[Cause], op_names: dict[int | None, str | None]) -> list[Cause]:
    """Causes with `#i` replaced by parameter i's `op_name` (jax records the argument path there)."""
    return [_renamed(c, op_names.get(c.index)) for c in causes]


def _renamed(cause: Cause, op_name: str | None) -> Cause:
    if cause.index is None or not op_name:
        return cause
    return replace(cause, parameter=op_name)


def _flag_causes(variants: list[DumpModule]) -> list[Cause]:
    """Compiler flags (the non-default debug options XLA writes next to every module) that differ."""
    texts = [_read_bytes(m.file("debug_options", stage=None)) for m in variants]
    if any(t is None for t in texts) or len(set(texts)) == 1:  # the common case: one text, nothing to parse
        return []
    decoded = {text: _debug_options(text) for text in set(texts)}
    options = [decoded[t] for t in texts]
    if len({frozenset(o.items()) for o in options}) == 1:
        return []
    keys = sorted({k for o in options for k, v in o.items() if any(other.get(k) != v for other in options)})
    return [
        Cause(
            "flags",
            None,
            None,
            tuple(tuple(f"{k}={o.get(k, '(default)')}" for k in keys) for o in options),
            detail="debug_options differ: " + ", ".join(keys),
        )
    ]


def _read_bytes(dump_file) -> bytes | None:
    """A file's bytes (decompressed); None when it is absent or unreadable."""
    if dump_file is None:
        return None
    try:
        return read_bytes(dump_file.location)
    except DumpError:
        return None


def _debug_options(text: bytes) -> dict[str, str]:
    """`key: value` lines of a debug_options file, without the dump's own flags (xla_dump_*)."""
    pairs = (line.partition(":") for line in text.decode("utf-8", errors="replace").splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, _, v in pairs if not k.strip().startswith(_NOT_FLAGS)}


_NOT_FLAGS = ("xla_dump_", "xla_detailed_logging")
"""Options no user set: the dump's own, and the detailed logging jax turns off per module under
`jax_compiler_detailed_logging_min_ops` (10) MLIR operations."""


class _Skipped(Exception):
    """A module of the group could not be read or parsed; dump.skip has recorded it."""


def _differing_computations(dump: Dump, modules: list[DumpModule]) -> list[list[Computation]]:
    """Per module, its computations whose text is not in every module of the group, parsed.

    The program XLA was given (before_optimizations, when dumped) is cut into computations and the
    ones printed identically in every module are dropped before parsing: a static argument changes a
    constant or two, and the rest of a module of any size costs one text comparison. A module whose
    pieces do not parse alone is parsed whole (what is common to all cancels out either way).
    """
    from xlainspect.hlo.parser import parse_hlo, split_computations

    pieces = []
    for module in modules:
        try:
            pieces.append(split_computations(read_text(module.hlo_file(_program_stage(module)).path)))
        except XlaInspectError as error:
            dump.skip(module.hlo_file().path, error)
            raise _Skipped from None
    common = functools.reduce(operator.and_, map(Counter, pieces))
    found = []
    for module, module_pieces in zip(modules, pieces):
        remaining, kept = common.copy(), []
        for piece in module_pieces:
            if remaining[piece] > 0:
                remaining[piece] -= 1
            else:
                kept.append(piece)
        try:
            found.append([c for parsed in parse_hlo("".join(kept)) for c in parsed.computations] if kept else [])
        except XlaInspectError:
            try:
                found.append(list(module.module(_program_stage(module)).computations))
            except XlaInspectError as error:
                dump.skip(module.hlo_file().path, error)
                raise _Skipped from None
    return found


def _program_stage(module: DumpModule) -> str:
    """The HLO XLA was given, when it was dumped (before_optimizations); else the compiled module."""
    return "before" if module.file("hlo", "before") else "after"


def _instruction_lines(computations: list[Computation]) -> Counter:
    """Instructions without names or metadata, so that only what the program computes is compared."""
    lines: Counter = Counter()
    for instruction in (i for computation in computations for i in computation.instructions):
        attributes = ", ".join(
            f"{k}={v}"
            for k, v in sorted(instruction.attributes.items())
            if k not in ("metadata", "frontend_attributes")
            and not k.startswith(("calls", "to_apply", "body", "condition"))
        )
        operands = f"({', '.join(instruction.operands)})" if instruction.opcode in ("constant", "parameter") else ""
        lines[f"{instruction.shape} {instruction.opcode}{operands}" + (f", {attributes}" if attributes else "")] += 1
    return lines


def _suggest(causes: tuple[Cause, ...], eager: bool) -> str | None:
    """Advice that reduces the compile count, one sentence per kind of cause; none where nothing would."""
    if eager:
        return "eager op-by-op code: put the loop or step inside one jax.jit function"
    advice = []
    for kind in dict.fromkeys(c.kind for c in causes):
        if kind == "shape":
            advice += _shape_advice([c for c in causes if c.kind == "shape"])
        elif any(c.kind == "body" and c.detail.startswith("a loop unrolled") for c in causes):
            advice.append(_UNROLLED)
        else:
            advice.append(_ADVICE.get(kind, ""))
    return "; ".join(dict.fromkeys(a for a in advice if a)) or None


_UNROLLED = (
    "a static count unrolls a Python loop: loop with jax.lax.fori_loop / jax.lax.scan over a traced count, "
    "or keep the counts few"
)
_ADVICE = {
    "dtype": "cast the inputs to one dtype before the call",
    "layout": "pass inputs with one layout and memory space (the same device_put / memory kind every call)",
    "sharding": "give the inputs the same sharding every call (device_put with one NamedSharding)",
    "out_sharding": "jit the function once, with one out_shardings",
    "donation": "donate the same arguments on every call (donate_argnums)",
    "result": "a static argument sets the result's shape: each new value compiles again; keep its values few",
    "branch": "a Python if/for on a shape or static value picks the program: keep the shapes or values few, or "
    "use jax.lax.cond / jnp.where on traced values",
    "body": "a static argument or captured Python value changes the program: pass it as a traced argument "
    "(a jnp array), or keep its values few",
    "identical": "create the jitted function once and reuse it (not jax.jit(lambda ...) in a loop), drop a "
    "static argument that changes nothing, pass a scalar as the same kind every call (jnp.float32(x), not "
    "sometimes a Python float)",
    "pytree": "pass the arguments in one pytree structure (the same dict keys) on every call",
    "flags": "compiler flags (XLA_FLAGS / compiler options) changed between compiles",
}


def _shape_advice(causes: list[Cause]) -> list[str]:
    """The ragged last batch, or padding buckets that reduce the compile count (not for PRNG keys, whose
    padding would invent keys); a pytree that changes shape."""
    if any(c.index is None for c in causes):
        return ["keep the argument pytree (number of parameters) the same"]
    sized = [c for c in causes if len(c.dims) == 1 and not c.detail.startswith("a PRNG key")]
    if not sized:
        return []
    cause = sized[0]
    names = ", ".join(dict.fromkeys(c.parameter for c in sized if c.values == cause.values))
    if _ragged_last_batch(sizes := tuple(dict.fromkeys(cause.values))):
        full, last = sizes
        return [
            f"the last batch is ragged ({names} dim {cause.dims[0]}: {last} after batches of {full}): drop it "
            f"(drop_remainder=True / drop_last=True), or pad it to {full} and mask the padded rows in the loss "
            "-> 1 compile"
        ]
    return [_bucket_advice(cause, names)] if _buckets(cause.values) else []


def _ragged_last_batch(values: tuple) -> bool:
    """Two sizes, the smaller compiled second: full batches, then what was left of the data."""
    return len(values) == 2 and all(isinstance(v, int) for v in values) and values[0] > values[1] > 0


def _buckets(values: tuple) -> list[tuple[str, list[int]]]:
    """Bucket choices that compile fewer times than the sizes seen: powers of two, multiples of a round
    step, and always the largest size."""
    sizes = sorted(set(values))
    if len(sizes) < 2 or not all(isinstance(v, int) and v > 0 for v in sizes):
        return []
    step = next((s for s in (128, 64, 32, 16, 8) if s <= min(sizes) or s < max(sizes) / 2), 8)
    choices = [
        ("powers of two", sorted({1 << math.ceil(math.log2(v)) for v in sizes})),
        (f"multiples of {step}", sorted({-(-v // step) * step for v in sizes})),
        (f"always {max(sizes)}", [max(sizes)]),
    ]
    fewer = [(label, b, _padding(sizes, b)) for label, b in choices if len(b) < len(sizes)]
    return [
        (label, b)
        for label, b, cost in fewer
        if not any((len(o), c) < (len(b), cost) and len(o) <= len(b) and c <= cost for _, o, c in fewer)
    ]


def _padding(sizes: list[int], buckets: list[int]) -> float:
    """The worst padding a bucket choice costs: the largest (bucket - size) / size."""
    return max((min(b for b in buckets if b >= v) - v) / v for v in sizes)


def _bucket_advice(cause: Cause, names: str) -> str:
    """Each bucket choice with its compile count and the padding it costs (the worst size's)."""
    sizes = sorted(set(cause.values))
    options = []
    for label, buckets in _buckets(cause.values):
        worst = _padding(sizes, buckets)
        options.append(f"{label} {buckets} -> {compiles_text(len(buckets))}, up to {worst:.0%} padding")
    return f"pad {names} dim {cause.dims[0]} (sizes {', '.join(map(str, sizes))}) to buckets: " + "; ".join(options)


def compiles_text(n: int) -> str:
    """`1 compile`, `3 compiles`."""
    return f"{n} compile" + "s" * (n != 1)


@dataclass(slots=True)
class EagerTraffic:
    """Eager ops folded into one line for people: how many functions and compiles, and where called."""

    functions: tuple[FunctionCompiles, ...]
    compiles: int
    call_sites: tuple[str, ...]

    def summary(self) -> str:
        names = ", ".join(f"{r.name} x{r.modules}" if r.modules > 1 else r.name for r in self.functions)
        sites = _short_sites(self.call_sites)
        return f"{names}" + (f"; called at {sites}" if sites else "")


def for_people(rows: list[FunctionCompiles]) -> tuple[list[FunctionCompiles], EagerTraffic | None]:
    """What a person reads first: the user's functions (recompiled ones first, most compiles first),
    then the eager traffic as one summary (one problem, one fix), or None without eager ops."""
    user = sorted((r for r in rows if not r.eager), key=lambda r: (r.modules == 1, -r.modules))
    eager = sorted((r for r in rows if r.eager), key=lambda r: -r.modules)
    if not eager:
        return user, None
    sites = tuple(sorted({r.source for r in eager if r.source}, key=_site_order))
    return user, EagerTraffic(tuple(eager), sum(r.modules for r in eager), sites)


def _site_order(site: str) -> tuple[str, int]:
    file, _, line = site.rpartition(":")
    return file, int(line) if line.isdigit() else 0


def _short_sites(sites: tuple[str, ...], limit: int = 6) -> str:
    """`generate.py:296, :297, :299` (a file named once), the first `limit` call sites."""
    parts, last_file = [], None
    for site in sites[:limit]:
        file, _, line = site.rpartition(":")
        parts.append(f":{line}" if file == last_file else site)
        last_file = file
    return ", ".join(parts) + (f" and {len(sites) - limit} more" if len(sites) > limit else "")


@dataclass(slots=True)
class Budget:
    """The CI gate: compile budgets per function and in total; a baseline's counts are budgets too."""

    max_per_function: int | None = None
    per_name: tuple[tuple[str, int], ...] = ()
    max_total: int | None = None
    ignore_eager: bool = False
    baseline: tuple[tuple[str, int], ...] | None = None
    """Per-function counts of an earlier run; None without one. A function absent from it is new: its
    budget is `max_per_function`, else NEW_FUNCTION_BUDGET, so a baseline never waves one through."""
    named_by: str = "--max"
    """How the messages name a per-function budget and the total one (`--max NAME`, `--max-total`):
    the option a person set, which the pytest plugin spells `max_compiles`."""
    names_must_exist: bool = True
    """A per-name budget naming no function of the dump is a usage error (a misspelt name would
    otherwise budget nothing); off in the pytest plugin, where a test may compile a function 0 times."""


NEW_FUNCTION_BUDGET = 1
"""Compiles allowed to a function the baseline does not hold, without --max-per-function: one (a new
function compiles once; a new function that recompiles fails the gate)."""


def budget_violations(rows: list[FunctionCompiles], budget: Budget) -> list[str]:
    """One message per function (or total) over its budget; empty when everything is within.
    Raises NoMatchError for a per-name budget naming no function (when `names_must_exist`)."""
    per_name, baseline = dict(budget.per_name), dict(budget.baseline or ())
    if budget.names_must_exist:
        _check_budget_names(rows, per_name, budget.named_by)
    counted = _per_name([r for r in rows if not (budget.ignore_eager and r.eager)])
    messages = []
    for row in counted:
        limits = [
            (f"{budget.named_by} {row.name}", per_name.get(row.name, budget.max_per_function)),
            ("baseline", baseline.get(row.name)),
        ]
        if row.name not in per_name and budget.max_per_function is not None:
            limits[0] = ("--max-per-function", budget.max_per_function)
        if budget.baseline is not None and row.name not in baseline and limits[0][1] is None:
            limits.append(("new: not in the baseline", NEW_FUNCTION_BUDGET))
        over = [(limit, source) for source, limit in limits if limit is not None and row.modules > limit]
        if over:
            limit, source = min(over)
            messages.append(f"{row.name} compiled {row.modules} times, budget {limit} ({source})")
    total = sum(r.modules for r in counted)
    if budget.max_total is not None and total > budget.max_total:
        messages.append(f"{total} compiles in total, budget {budget.max_total} ({budget.named_by}-total)")
    return messages


def _check_budget_names(rows: list[FunctionCompiles], per_name: dict[str, int], option: str) -> None:
    names = [r.name for r in rows]
    for name in per_name:
        if name not in names:
            raise no_match(option, name, names)


def _per_name(rows: list[FunctionCompiles]) -> list[FunctionCompiles]:
    """One row per HloModule name (a user's jit_matmul and eager ones are two rows of one name), with
    the compiles of both: budgets count compiles per name."""
    merged: dict[str, FunctionCompiles] = {}
    for row in rows:
        if row.name in merged:
            seen = merged[row.name]
            row = FunctionCompiles(row.name, seen.modules + row.modules, seen.module_ids + row.module_ids, False)
        merged[row.name] = row
    return list(merged.values())


def baseline_counts(rows: list[FunctionCompiles]) -> dict:
    """The document `--update-baseline` writes: compile counts per function."""
    return {"functions": {r.name: r.modules for r in _per_name(rows)}}
