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
import os
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast

from xlainspect.errors import HloParseError, error_at
from xlainspect.hlo.attributes import decode_braced_fields, unquote
from xlainspect.hlo.fast import FrameTables, Item, LineReader, ShapeReader
from xlainspect.hlo.grammar import grammar_text, table_cache
from xlainspect.hlo.model import Computation, ComputationRecord, Module, StackFrame
from xlainspect.hlo.opcodes import ASYNC_SUFFIXES, KNOWN_OPCODES, is_known_opcode
from xlainspect.hlo.shape import Shape

_T = TypeVar("_T")
_R = TypeVar("_R")


class Runner(Protocol):
    """What a caller that owns the process lends `parse_hlo` (`xlainspect.workers.OWNED` is one):
    processes to parse a large text's parts in, and a pause of garbage collection while the model's
    millions of long-lived objects are made. A library call lends nothing: one process, collection as
    the caller left it."""

    @property
    def workers(self) -> int:
        """Processes to parse in, this one included."""
        ...

    def map(self, function: Callable[[_T], _R], items: list[_T]) -> list[_R]:
        """`[function(item) for item in items]`, computed in `workers` processes (forked: they inherit
        the text and the compiled regexes); an exception raised here as a serial run raises it."""
        ...

    def paused_gc(self) -> AbstractContextManager[object]: ...


def _grammar():
    """The grammar's parser module, imported on first need: plain text never imports Lark (~40 ms)."""
    from xlainspect.hlo import lalr

    return lalr


def _run(text: str, start: str, path: str | None, what: str = "HLO", span: tuple[int, int, int] | None = None) -> Any:
    """The grammar's parse of `text` (or of its `span`) from the start symbol `start` (`lalr.run`): a
    list of items from `start`, a Shape from `shape_text`, ... (its type is the start symbol's)."""
    return _grammar().run(text, start, path, what, span)


def parse_hlo(text: str, path: str | None = None, *, fast: bool = True, runner: Runner | None = None) -> list[Module]:
    """Parse HLO text (one or more modules, or header-less computations) into the model.

    `fast=False` parses with the grammar alone (the definition); the default reads plain
    computations with the speed layer and gives the grammar the rest: the same model, faster.
    With a `runner` of 2 workers or more, a text of 4 MB or more is parsed in that many processes.
    Raises HloParseError with path, line, column and a caret rendering on bad text.
    """
    items: Sequence[GrammarItem]
    with nullcontext() if runner is None else runner.paused_gc():
        if not fast:
            items = _run(text, "start", path)
        else:
            shared = None
            if runner is not None and runner.workers > 1 and len(text) >= PARALLEL_MIN_BYTES:
                shared = _run_in_workers(text, path, runner)
            items = shared if shared is not None else _read(text, path)
        modules = _assemble(items, path, text)
    for module in modules:
        if not module.computations:  # XLA's parser needs at least one; a dump cut after its header has none
            raise error_at(text, len(text.rstrip()), f"HloModule {module.name} has no computations (truncated?)", path)
    return modules


def _read(text: str, path: str | None, first_line: int = 1) -> list[Item]:
    """The items of `text`, a computation at a time: the speed layer where it is sure, else the
    grammar on that computation, its lines and errors placed in the whole text."""
    reader = _line_reader()
    items: list[Item] = []
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
    return terminals()[name]


@functools.cache
def terminals() -> dict[str, str]:
    """Every terminal's regex as Lark translates the grammar's, saved beside the grammar tables by the
    first run in the cache lent to the grammar (`grammar.keep_tables`): reading plain text then never
    imports Lark (~40 ms of every start). The file is named by a digest of the grammar and of Lark's
    version file; a read-only cache's saved file is read, never written, as the tables are."""
    cache = table_cache()
    if cache is None:
        return _grammar().terminals()
    lark = importlib.util.find_spec("lark")
    version = Path(lark.origin).read_bytes() if lark and lark.origin else b""
    name = f"terminals-{hashlib.blake2b(grammar_text().encode() + version, digest_size=10).hexdigest()}.json"
    saved = cache.table_file(name)
    if saved is not None:
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(saved.read_text(encoding="utf-8"))
            if isinstance(found, dict):
                return cast("dict[str, str]", found)
    found = _grammar().terminals()
    cache.write_table(name, json.dumps(found).encode())
    return found


@functools.cache
def _line_reader() -> LineReader:
    return LineReader(terminals())


@functools.cache
def _shape_reader() -> ShapeReader:
    return ShapeReader(terminals())


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


def _run_in_workers(text: str, path: str | None, runner: Runner) -> list[Item] | None:
    """The items of `text` read in the runner's processes, one part each.

    None when the text cannot be split or a part fails: the caller then reads the whole text, so a
    syntax error is reported exactly as a serial parse reports it. Each part knows the line it starts
    on, so its instructions' line numbers are those of the file. The workers inherit the text and the
    compiled regexes through the fork: neither is pickled; each sends its computations back as records
    (`Computation.to_record`): pickling a slotted object calls back into Python for each of hundreds of
    thousands of instructions, a tuple does not. What this process reads itself stays as it is.
    """
    parts = _split_at_computations(text, runner.workers)
    if len(parts) < 2:
        return None
    _line_reader().compile_all()
    jobs = [(text.count("\n", 0, start) + 1, start, end, path) for start, end in parts]
    try:
        found = runner.map(functools.partial(_read_part, text=text, home=os.getpid()), jobs)
    except HloParseError:
        return None
    return [_item(item) for part in found for item in part]


PartItem = Item | tuple[Literal["computation"], ComputationRecord]
"""An item of a part; a computation a worker read comes as its record."""


def _read_part(job: tuple[int, int, int, str | None], text: str, home: int) -> list[PartItem]:
    """The items of one part; read by a worker (a process other than `home`), its computations as records."""
    first_line, start, end, path = job
    items = _read(text[start:end], path, first_line)
    if os.getpid() == home:
        return list(items)
    return [("computation", item.to_record()) if isinstance(item, Computation) else item for item in items]


def _item(item: PartItem) -> Item:
    if not isinstance(item, Computation) and item[0] == "computation":
        return Computation.from_record(item[1])
    return item


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
    spans: list[tuple[int, int]] = []
    start = 0
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


def _assemble(found: Sequence[GrammarItem], path: str | None, text: str) -> list[Module]:
    """Group the flat list of headers, stack-frame tables and computations of `text` into modules."""
    modules: list[Module] = []
    current: Module | None = None
    items, nested = _unwrap_nested(found)
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
            current.stack_frames = _resolve_stack_frames(item[1])
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


NestedItem = tuple[Literal["nested"], Computation]
"""A computation the grammar read with operands written as instructions (`xlainspect.hlo.lalr`)."""
GrammarItem = Item | NestedItem


def _unwrap_nested(items: Sequence[GrammarItem]) -> tuple[list[Item], list[Computation]]:
    """`items` with each `("nested", computation)` of the grammar (`xlainspect.hlo.lalr`) as its
    computation, and those computations: their operands written as instructions want names."""
    unwrapped: list[Item] = []
    nested: list[Computation] = []
    for item in items:
        if isinstance(item, tuple) and item[0] == "nested":
            nested.append(item[1])
            unwrapped.append(item[1])
        else:
            unwrapped.append(item)
    return unwrapped, nested


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


def parse_stack_frames(head: str, path: str | None = None) -> dict[int, StackFrame]:
    """The resolved stack frames of a module's head (its header and the four frame tables, the text
    before its first computation), read as `parse_hlo` reads them; empty without tables. Raises
    HloParseError on bad text."""
    plain = _line_reader().read_head(head)
    items: list[Item] = plain if plain is not None else _run(head, "start", path)
    for item in items:
        if not isinstance(item, Computation) and item[0] == "stack_frames":
            return _resolve_stack_frames(item[1])
    return {}


def _resolve_stack_frames(tables: FrameTables) -> dict[int, StackFrame]:
    """Join the four index tables (files, functions, locations, frames) into frames by id."""
    files, functions, locations, frames = tables
    result: dict[int, StackFrame] = {}
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
