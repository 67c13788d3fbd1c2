"""parse_hlo: HLO text -> list[Module]: the grammar `grammars/hlo.lark` is the definition.

The speed layer (`xlainspect.hlo.fast`) reads the plain computations, shapes and header lines, with
regexes built from the grammar's own terminals; the grammar's parser (`xlainspect.hlo.lalr`, Lark)
reads the rest and words every error. `parse_hlo(text, fast=False)` uses the grammar alone. The
terminals are saved beside the grammar tables, so a run whose text is all plain never imports Lark.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import itertools
import json
import re
from pathlib import Path

from xlainspect.errors import HloParseError, error_at
from xlainspect.hlo.fast import LineReader, ShapeReader
from xlainspect.hlo.grammar import grammar_text
from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame
from xlainspect.hlo.opcodes import ASYNC_SUFFIXES, KNOWN_OPCODES, is_known_opcode
from xlainspect.hlo.shape import Shape
from xlainspect.settings import cache_dir, cache_enabled, parse_workers, paused_gc, write_cache_file


def _run(text: str, start: str, path: str | None, what: str = "HLO", span: tuple[int, int, int] | None = None):
    """The grammar's parse of `text` (or of its `span`) from the start symbol `start` (`lalr.run`)."""
    from xlainspect.hlo import lalr

    return lalr.run(text, start, path, what, span)


def parse_hlo(text: str, path: str | None = None, *, fast: bool = True, workers: int | None = None) -> list[Module]:
    """Parse HLO text (one or more modules, or header-less computations) into the model.

    `fast=False` parses with the grammar alone (the definition); the default reads plain
    computations with the speed layer and gives the grammar the rest: the same model, faster.
    `workers` > 1 parses a text of 4 MB or more in that many processes (forked); the default is
    `xlainspect.settings.parse_workers()`: 1, unless the caller let xlainspect own the process.
    Raises HloParseError with path, line, column and a caret rendering on bad text.
    """
    workers = parse_workers() if workers is None else workers
    with paused_gc():
        if not fast:
            items = _run(text, "start", path)
        else:
            items = None
            if workers > 1 and len(text) >= PARALLEL_MIN_BYTES:
                items = _run_in_workers(text, path, workers)
            if items is None:
                items = _read(text, path)
        modules = _assemble(items, path, text)
    for module in modules:
        if not module.computations:  # XLA's parser needs at least one; a dump cut after its header has none
            raise error_at(text, len(text.rstrip()), f"HloModule {module.name} has no computations (truncated?)", path)
    return modules


def _read(text: str, path: str | None, first_line: int = 1) -> list:
    """The items of `text`, a computation at a time: the speed layer where it is sure, else the
    grammar on that computation, its lines and errors placed in the whole text."""
    reader = _line_reader()
    items: list = []
    line = first_line
    for start, end in _computation_spans(text):
        found = reader.read(text, start, end, line)
        if found is None:
            try:
                found = _run(text, "start", path, span=(start, end, line - 1))
            except HloParseError:  # a cut inside a multi-line value (origin_recovery_table={...}), or an error
                return _run(text, "start", path, span=(0, len(text), first_line - 1))
        items.extend(found)
        line += text.count("\n", start, end)
    return items


def terminal(name: str) -> str:
    """The regex of one of the grammar's terminals: the speed layers build theirs from these."""
    found = _terminals().get(name)
    if found is None:
        from xlainspect.hlo import lalr

        found = lalr.terminals()[name]
    return found


@functools.cache
def _terminals() -> dict[str, str]:
    """Every terminal's regex as Lark translates the grammar's, saved beside the grammar tables by the
    first run: reading plain text then never imports Lark (~40 ms of every start). The file is named by
    a digest of the grammar and of Lark's version file; with the cache off a saved file is read, never
    written, as the tables are."""
    lark = importlib.util.find_spec("lark")
    version = Path(lark.origin).read_bytes() if lark and lark.origin else b""
    key = hashlib.blake2b(grammar_text().encode() + version, digest_size=10).hexdigest()
    saved = cache_dir() / f"terminals-{key}.json"
    with contextlib.suppress(OSError, ValueError):
        found = json.loads(saved.read_text(encoding="utf-8"))
        if isinstance(found, dict):
            return found
    from xlainspect.hlo import lalr

    found = lalr.terminals()
    if cache_enabled():
        write_cache_file(saved, json.dumps(found).encode())
    return found


@functools.cache
def _line_reader() -> LineReader:
    return LineReader(terminal, decode_shape)


@functools.cache
def _shape_reader() -> ShapeReader:
    return ShapeReader(terminal)


@functools.lru_cache(maxsize=16384)
def decode_shape(text: str) -> Shape:
    """A shape as XLA prints it (array, tuple or buffer), decoded once per distinct text."""
    return _shape_reader().shape(text) or _run(text, "shape_text", None, "shape")


def parse_header(line: str, path: str | None = None) -> Module:
    """The `HloModule name, key=value, ...` line alone, as a Module without computations: the
    signature of a dumped module (entry_computation_layout, input_output_alias) for one line's cost.
    Identical lines (the compiles of one function often share one) are parsed once."""
    try:
        return _header(line)
    except HloParseError as error:
        error.path = path
        raise


@functools.lru_cache(maxsize=4096)
def _header(line: str) -> Module:
    # The speed layer's header; else the grammar from its own start symbol, whose few lexer states
    # compile only their terminals' regexes.
    header = _line_reader().read_header(line)
    modules = _assemble([header if header is not None else _run(line, "header_line", None)], None, line)
    if len(modules) != 1 or not modules[0].has_header or modules[0].computations:
        raise error_at(line, 0, "expected one `HloModule <name>, ...` header line", None)
    return modules[0]


#: Texts from this size on are parsed in worker processes (one per core), a run of whole
#: computations each; below it, starting the workers costs more than they save.
PARALLEL_MIN_BYTES = 4 << 20


def _run_in_workers(text: str, path: str | None, workers: int) -> list | None:
    """The items of `text` read by this process and worker processes, one part each.

    None when the text cannot be split, the platform cannot fork, or a part fails: the caller then
    reads the whole text, so a syntax error is reported exactly as a serial parse reports it. Each part
    knows the line it starts on, so its instructions' line numbers are those of the file. This process
    reads the first part itself: a worker's result costs a pickle round trip on top of its parse
    (equal parts measured fastest all the same). The workers inherit the text and the
    compiled regexes through the fork: neither is pickled.
    """
    from xlainspect.workers import can_fork, forked

    parts = _split_at_computations(text, workers)
    if len(parts) < 2 or not can_fork():
        return None
    _line_reader().compile_all()
    jobs = [(text.count("\n", 0, start) + 1, start, end, path) for start, end in parts]
    try:
        with forked([functools.partial(_compact_parts, job, text) for job in jobs[1:]]) as others:
            items = _run_part(jobs[0], text)
            for job, other in zip(jobs[1:], others):
                parts, finished = other.answers()
                items.extend(map(_expand, parts[0]) if finished else _run_part(job, text))  # a failed part: here
        return items
    except HloParseError:
        return None


def _run_part(job: tuple[int, int, int, str | None], text: str) -> list:
    first_line, start, end, path = job
    return _read(text[start:end], path, first_line)


def _compact_parts(job: tuple[int, int, int, str | None], text: str) -> list[list]:
    """A worker's one part with its computations as plain tuples: pickling a slotted object calls
    back into Python for each of hundreds of thousands of instructions, a tuple does not."""
    return [[_compact(item) for item in _run_part(job, text)]]


def _compact(item):
    if not isinstance(item, Computation):
        return item  # ("header", ...) and ("stack_frames", ...) tuples
    instructions = [
        (i.name, i.opcode, i.shape, i.operands, i.attributes, i.is_root, i.line, i.operand_shape_indices)
        for i in item.instructions
    ]
    return (
        "computation",
        item.name,
        instructions,
        item.is_entry,
        item.parameter_shapes,
        item.result_shape,
        item.attributes,
        item.line,
    )


def _expand(item):
    if item[0] != "computation":
        return item
    _, name, instructions, is_entry, parameter_shapes, result_shape, attributes, line = item
    return Computation(
        name,
        [Instruction(*fields) for fields in instructions],
        is_entry,
        parameter_shapes,
        result_shape,
        attributes,
        line,
    )


def _split_at_computations(text: str, pieces: int) -> list[tuple[int, int]]:
    """(start, end) spans of about len/pieces characters, made of whole split_computations pieces: each
    cut at the piece end nearest its share (a cut inside a multi-line value makes a part fail, and the
    caller parses serially)."""
    ends = [end for _, end in _computation_spans(text)][:-1]
    cuts = [0]
    for k in range(1, pieces):
        later = [end for end in ends if end > cuts[-1]]
        if later:
            cuts.append(min(later, key=lambda end: abs(end - len(text) * k / pieces)))
    cuts.append(len(text))
    return list(itertools.pairwise(cuts))


def split_computations(text: str) -> list[str]:
    """`text` cut after each `}` line at column 0: one piece per computation, the first with the
    header and stack-frame tables before it. Joined, the pieces are `text`, and any subset of them in
    order is HLO text again (header-less computations parse), so a caller can parse just the pieces
    it needs. XLA prints a computation's closing brace alone at column 0 and nothing else there; a
    cut inside a multi-line value makes a piece fail to parse, and the caller then parses `text`.
    """
    return [text[start:end] for start, end in _computation_spans(text)]


def _computation_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of split_computations' pieces."""
    spans, start = [], 0
    while (close := text.find("\n}", start)) >= 0:
        end = text.find("\n", close + 2)
        end = len(text) if end < 0 else end + 1
        spans.append((start, end))
        start = end
    if spans and not text[start:].strip():
        spans[-1] = (spans[-1][0], len(text))  # trailing blank lines stay with the last computation
    elif start < len(text):
        spans.append((start, len(text)))
    return spans


@functools.lru_cache(maxsize=4096)
def parse_program_shape(text: str) -> tuple[tuple[Shape, ...], Shape]:
    """`{(f32[8]{0}, s32[]) -> f32[8]{0}}` (entry_computation_layout) -> (parameter shapes, result)."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    return _shape_reader().program_shape(body) or _run(body, "program_shape", None, "entry_computation_layout")


def _assemble(items: list, path: str | None, text: str) -> list[Module]:
    """Group the flat list of headers, stack-frame tables and computations of `text` into modules."""
    modules: list[Module] = []
    current: Module | None = None
    items, nested = _unwrap_nested(items)
    for item in items:
        if isinstance(item, Computation):
            if current is None:
                current = Module(name="", computations=[], path=path, line=item.line, has_header=False)
                modules.append(current)
            current.computations.append(item)
        elif item[0] == "header":
            _, name, attributes, line = item
            layout = attributes.get("entry_computation_layout")
            current = Module(
                name=name,
                computations=[],
                attributes=attributes,
                path=path,
                line=line,
                entry_computation_layout=_entry_layout(layout, text, line, path) if layout else None,
            )
            modules.append(current)
        elif current is not None:
            current.stack_frames = _resolve_stack_frames(*item[1])
    for module in modules:
        if not module.has_header and module.computations:
            module.name = f"module_{module.entry.name}"
    for module in _holding(modules, nested):
        name_nested_instructions(module)
    return [m for m in modules if m.computations or m.has_header]


def _holding(modules: list[Module], computations: list[Computation]) -> list[Module]:
    """The modules that hold any of `computations`."""
    if not computations:
        return []
    return [m for m in modules if any(c in computations for c in m.computations)]


def _unwrap_nested(items: list) -> tuple[list, list[Computation]]:
    """`items` with each `("nested", computation)` of the grammar (`xlainspect.hlo.lalr`) as its
    computation, and those computations: their operands written as instructions want names."""
    nested = [item[1] for item in items if type(item) is tuple and item[0] == "nested"]
    if not nested:
        return items, nested
    return [item[1] if type(item) is tuple and item[0] == "nested" else item for item in items], nested


def name_nested_instructions(module: Module) -> None:
    """Name each instruction written as an operand as XLA's parser does: HloParserImpl::ParseInstructionRhs
    (xla/hlo/parser/hlo_parser.cc) gives it `<opcode>.anon` made unique by the parser's NameUniquer,
    with which every instruction of the module registers its name in text order, a nested one before
    the instruction it is written in (`constant.anon`, `constant.anon.1`, ...). Its users' operands
    follow the new name."""
    uniquer = NameUniquer()
    for computation in module.computations:
        renamed: dict[str, str] = {}
        for instruction in computation.instructions:
            if " " in instruction.name:  # the grammar's placeholder (`xlainspect.hlo.lalr`)
                new = uniquer.unique_name(f"{_opcode_name(instruction.opcode)}.anon")
                renamed[instruction.name] = instruction.name = new
            else:
                uniquer.unique_name(instruction.name)
            if renamed and instruction.opcode not in ("constant", "parameter"):
                instruction.operands = tuple(renamed.get(o, o) for o in instruction.operands)


def _opcode_name(opcode: str) -> str:
    """HloOpcodeString of the opcode as written: the async sugar `<op>-start` is an async-start."""
    if opcode in KNOWN_OPCODES or not is_known_opcode(opcode):
        return opcode
    return "async" + next(s for s in ASYNC_SUFFIXES if opcode.endswith(s))


class NameUniquer:
    """XLA's NameUniquer (xla/service/name_uniquer.cc) with the parser's separator `.`: a name's
    numeric suffix (`add.anon.3`) is an id of its root (`add.anon`); a name asked for again gets the
    lowest id its root has not used. Names are not sanitized: HLO text's names are already in the
    sanitized alphabet, and sanitizing changes no `<opcode>.anon` root."""

    def __init__(self) -> None:
        self._used: dict[str, set[int]] = {}
        self._next: dict[str, int] = {}

    def unique_name(self, prefix: str) -> str:
        root, _, suffix = prefix.rpartition(".")
        if not root or not suffix or not _INT64.fullmatch(suffix) or not -(2**63) <= int(suffix) < 2**63:
            root, number, has_suffix = prefix, 0, False
        else:
            number, has_suffix = int(suffix), True
        used = self._used.setdefault(root, set())
        if number in used:  # SequentialIdGenerator::RegisterId: the next unused id
            number = self._next.get(root, 0)
            while number in used:
                number += 1
            self._next[root] = number + 1
        used.add(number)
        if number == 0:
            return f"{root}.0" if has_suffix else root
        return f"{root}.{number}"


#: What absl::SimpleAtoi reads as a number (HLO names hold no blanks).
_INT64 = re.compile(r"[+-]?[0-9]+")


def _entry_layout(layout: str, text: str, line: int, path: str | None):
    """The header's decoded entry_computation_layout; an error points into the header (on `line`)."""
    try:
        return parse_program_shape(layout)
    except HloParseError as error:
        start = 0
        for _ in range(line - 1):
            start = text.index("\n", start) + 1
        at = text.find("entry_computation_layout=", start) + len("entry_computation_layout=")
        offset = len(layout) - len(layout.lstrip()) + (1 if layout.lstrip().startswith("{") else 0)
        raise error_at(text, at + offset + error.column - 1, error.message, path) from None


def _resolve_stack_frames(files, functions, locations, frames) -> dict[int, StackFrame]:
    """Join the four index tables (files, functions, locations, frames) into frames by id."""
    from xlainspect.hlo.attributes import decode_braced_fields, unquote

    result = {}
    for frame_id, text in frames.items():
        frame = decode_braced_fields(text)
        location = decode_braced_fields(locations.get(int(frame.get("file_location_id", 0)), "{}"))
        result[frame_id] = StackFrame(
            file=unquote(files.get(int(location.get("file_name_id", 0)), '""')),
            function=unquote(functions.get(int(location.get("function_name_id", 0)), '""')),
            line=int(location.get("line", 0)),
            column=int(location.get("column", 0)),
            parent=int(frame.get("parent_frame_id", 0)),
        )
    return result
