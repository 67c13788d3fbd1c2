"""parse_hlo: HLO text -> list[Module], through the Lark grammar `grammars/hlo.lark`, the definition.

The grammar is compiled once, lazily, with an embedded transformer: LALR callbacks build the
model directly, so no parse tree is ever built (Lark's own advice for speed and memory). By
default the speed layer (`xlainspect.hlo.fast`) reads the plain computations and this grammar
the rest; `parse_hlo(text, fast=False)` uses the grammar alone.
"""

from __future__ import annotations

import functools
import itertools
import re
from sys import intern

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken

from xlainspect.errors import HloParseError, error_at
from xlainspect.hlo.attributes import is_frame_entry
from xlainspect.hlo.fast import LineReader
from xlainspect.hlo.grammar import grammar_text
from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame, attribute_dict
from xlainspect.hlo.shape import Shape, array_shape, tuple_shape
from xlainspect.settings import cache_dir, cache_enabled, parse_workers, paused_gc

#: How Lark's terminal names read in an error message: what was found (`unexpected name 'x'`)
#: and, with an article, what was expected.
_TERMINAL_WORDS = {
    "NAME": "name",
    "ATTR_NAME": "attribute (key=value)",
    "ARRAY_SHAPE": "shape",
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "COMMA": "','",
    "EQUAL": "'='",
    "INT": "integer",
    "PARAM_NAME": "parameter (name: shape)",
    "ROOT": "ROOT",
    "ENTRY": "ENTRY",
    "HLOMODULE": "HloModule",
    "STRING": "string",
    "ATOM": "value",
    "ARROW": "'->'",
    "$END": "end of input",
    "CONSTANT": "constant",
    "IOTA_GROUPS": "replica groups",
    "MESH_AXES": "mesh axes",
    "DEVICE_IDS": "device_ids=",
    "LITERAL_WORD": "literal",
    "BUFFER_OPEN": "b(",
    "TUPLE_INDEX": "tuple index (#N)",
    "BRACED_TEXT": "text",
    "PAREN_TEXT": "text",
}
_ARTICLES = {
    "name",
    "value",
    "literal",
    "string",
    "shape",
    "integer",
    "parameter (name: shape)",
    "attribute (key=value)",
    "tuple index (#N)",
    "text",
}


def _word(terminal: str, article: bool = False) -> str:
    word = _TERMINAL_WORDS.get(terminal, terminal)
    if article and word in _ARTICLES:
        return ("an " if word[0] in "aeiou" else "a ") + word
    return word


class _TokenError(Exception):
    """A decode error inside one token; parse_hlo turns it into an HloParseError at the right place."""

    def __init__(self, token: Token, offset: int, message: str) -> None:
        super().__init__(message)
        self.token, self.offset, self.message = token, offset, message


def _start(item) -> int:
    return item.start_pos if isinstance(item, Token) else item[0]


def _end(item) -> int:
    return item.end_pos if isinstance(item, Token) else item[1]


@v_args(inline=True)
class _ModelBuilder(Transformer):
    """LALR callbacks: one method per grammar rule, each returning a model object.

    Attribute values are the text XLA printed, cut from the parsed text by position (`text` is set
    before each parse), so spacing and nesting come out as written. `line_offset` is added to every
    line number: a caller that parses a piece of a file gives the lines before the piece.
    """

    text = ""
    line_offset = 0

    def start(self, *items):
        return list(items)

    def module_header(self, name: Token, *attributes):
        return ("header", str(name).rstrip(":"), attribute_dict(attributes), name.line + self.line_offset)

    def stack_frames(self, *tables):
        return ("stack_frames", tables)

    def frame_table(self, *entries):
        return dict(entries)

    def frame_entry(self, index: Token, value):
        text = self._slice(value, value)
        if not is_frame_entry(text):
            raise _TokenError(_token_at(value), 0, "malformed stack-frame table entry: every field must be an integer")
        return (int(index), text)

    def computation(self, head, *items):
        is_entry, name, line, signature = head
        instructions = [i for item in items if not isinstance(item, tuple) for i in _as_list(item)]
        params, result = signature if signature else (None, None)
        return Computation(
            name=name,
            instructions=instructions,
            is_entry=is_entry,
            parameter_shapes=params,
            result_shape=result,
            attributes=attribute_dict([i for i in items if isinstance(i, tuple)]),
            line=line,
        )

    def computation_head(self, entry, name: Token, signature):
        return entry is not None, _strip(name), name.line + self.line_offset, signature

    def signature(self, *items):
        *params, result = items
        return tuple(p for p in params if p is not None), result

    def param(self, name: Token, shape: Shape):
        return (_strip(name).rstrip(":"), shape)

    def instruction(self, root, name: Token, shape, opcode: Token, operands, *attributes):
        """`[ROOT] name = [shape] opcode(operands), attr=value, ...`; operands written as instructions
        (the parser-only nested form) come before it in the returned list."""
        if opcode.type == "CONSTANT":
            operands, indices = (self._slice(operands, operands)[1:-1],), ()
        else:
            operands, indices = operands
        nested = [i for o in operands if not isinstance(o, str) for i in o]
        if nested:
            operands = tuple(o if isinstance(o, str) else o[-1].name for o in operands)
        instruction = Instruction(
            name=intern(_strip(name)),
            opcode=intern(str(opcode)),
            shape=shape,
            operands=operands,
            attributes=attribute_dict(attributes),
            is_root=root is not None,
            line=name.line + self.line_offset,
            operand_shape_indices=indices,
        )
        return [*nested, instruction] if nested else instruction

    def nested_instruction(self, shape, opcode: Token, operands):
        """An operand written as an instruction: it gets a name from its opcode and position."""
        name = Token("NAME", f"{opcode}.{opcode.line + self.line_offset}.{opcode.column}", line=opcode.line)
        return _as_list(self.instruction(None, name, shape, opcode, operands))

    def operands(self, *operands):
        """(operand names or nested instructions, their ShapeIndexes or () when all are whole)."""
        operands = [o for o in operands if o is not None]
        names = tuple(o[0] if isinstance(o, tuple) else o for o in operands)
        if not any(isinstance(o, tuple) for o in operands):
            return names, ()
        return names, tuple(o[1] if isinstance(o, tuple) else () for o in operands)

    def operand(self, *items):
        if len(items) == 1:  # parameter(0)
            return str(items[0])
        _shape, name, *tuple_index = items
        if tuple_index:
            return (intern(_strip(name)), tuple(int(i[1:]) for i in tuple_index))
        return intern(_strip(name))

    def attribute(self, *items):
        if len(items) == 1:  # continuation of `calls=%a, %b`
            return ("", str(items[0]))
        return (str(items[0])[:-1], items[1])

    def value(self, *items):
        items = [i for i in items if i is not None]
        return self._slice(items[0], items[-1])

    def mesh_groups(self, *items):
        items = [i for i in items if i is not None]
        return (_start(items[0]), _end(items[-1]))

    def braced(self, left: Token, *items):
        return (left.start_pos, items[-1].end_pos)

    literal = braced

    def shape(self, token: Token) -> Shape:
        try:
            return array_shape(str(token))
        except HloParseError as error:
            raise _TokenError(token, error.column - 1, error.message) from None

    def tuple_shape(self, *elements) -> Shape:
        return tuple_shape(tuple(e for e in elements if e is not None))

    def buffer_shape(self, _open, shape: Shape) -> Shape:
        return shape

    def header_line(self, header):
        return header

    def shape_text(self, shape: Shape) -> Shape:
        return shape

    def program_shape(self, *items):
        *params, result = items
        return tuple(p for p in params if p is not None), result

    def _slice(self, first, last) -> str:
        return intern(self.text[_start(first) : _end(last)])


def _token_at(item) -> Token:
    """A token at `item`'s start, for errors about a whole value."""
    return item if isinstance(item, Token) else Token("VALUE", "", start_pos=item[0])


def _as_list(item) -> list:
    return item if isinstance(item, list) else [item]


def _strip(name: Token | str) -> str:
    return str(name).lstrip("%")


@functools.cache
def _lark(start: str = "start") -> Lark:
    """The parser, its LALR tables loaded from xlainspect's cache directory when an earlier run saved
    them for this grammar text and Lark version (0.1 s saved at every start, per start symbol); with
    the cache off (`xlainspect.settings`) tables an earlier run saved are still read, and tables
    not saved yet are built in memory, never written.

    Each start symbol gets its own parser of the same grammar: the automaton for `header_line` or
    `program_shape` has only those states, so its contextual lexer never compiles the regexes of the
    computation-sized terminals (what lookahead sets shared with whole modules would cost, 0.2 s).
    """
    import hashlib

    import lark

    text = grammar_text()
    options = {
        "parser": "lalr",
        "lexer": "contextual",
        "maybe_placeholders": True,
        "transformer": _ModelBuilder(),
        "start": start,
    }
    key = hashlib.blake2b(f"{lark.__version__}\n{start}\n{text}".encode(), digest_size=10).hexdigest()
    tables = cache_dir() / f"grammar-{key}.lark"
    if not cache_enabled() and not tables.is_file():  # with the cache off, saved tables are read, never written
        return Lark(text, **options)
    try:
        tables.parent.mkdir(parents=True, exist_ok=True)
        return Lark(text, cache=str(tables), **options)
    except OSError:  # an unwritable cache directory only costs the build
        return Lark(text, **options)


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
    return _lark().get_terminal(name).pattern.to_regexp()


@functools.cache
def _line_reader() -> LineReader:
    return LineReader(terminal, decode_shape)


@functools.lru_cache(maxsize=16384)
def decode_shape(text: str) -> Shape:
    """A shape as XLA prints it (array, tuple or buffer), decoded once per distinct text."""
    return _run(text, "shape_text", None, "shape")


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
    # Its own start symbol: the lexer states it passes through are few, so a first call compiles
    # only their terminals' regexes.
    modules = _assemble([_run(line, "header_line", None)], None, line)
    if len(modules) != 1 or not modules[0].has_header or modules[0].computations:
        raise error_at(line, 0, "expected one `HloModule <name>, ...` header line", None)
    return modules[0]


#: Texts from this size on are parsed in worker processes (one per core), a run of whole
#: computations each; below it, starting the workers costs more than they save.
PARALLEL_MIN_BYTES = 4 << 20


def _run_in_workers(text: str, path: str | None, workers: int) -> list | None:
    """The items of `text` read by this process and worker processes, one part each.

    None when the text cannot be split or a part fails: the caller then reads the whole text, so
    a syntax error is reported exactly as a serial parse reports it. Each part knows the line it
    starts on, so its line numbers (instructions, nested-instruction names) are those of the file.
    This process reads the first part itself: a worker's result costs a pickle round trip (about a
    fifth of its parse) on top.
    """
    parts = _split_at_computations(text, workers)
    if len(parts) < 2:
        return None
    import multiprocessing  # here: a process of one small file never pays its import (5-10 ms)
    from concurrent.futures import ProcessPoolExecutor

    _line_reader()  # built once here; forked workers inherit it
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    jobs = [(text.count("\n", 0, start) + 1, text[start:end], path) for start, end in parts]
    try:
        with ProcessPoolExecutor(len(jobs) - 1, mp_context=context) as pool:
            others = pool.map(_run_compact_part, jobs[1:])
            items = _run_part(jobs[0])
            for part_items in others:
                items.extend(_expand(item) for item in part_items)
        return items
    except HloParseError:
        return None


def _run_part(job: tuple[int, str, str | None]) -> list:
    first_line, part, path = job
    return _read(part, path, first_line)


def _run_compact_part(job: tuple[int, str, str | None]) -> list:
    """A worker's part with its computations as plain tuples: pickling a slotted object calls
    back into Python for each of hundreds of thousands of instructions, a tuple does not."""
    return [_compact(item) for item in _run_part(job)]


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
    return _run(body, "program_shape", None, "entry_computation_layout")


def _run(text: str, start: str, path: str | None, what: str = "HLO", span: tuple[int, int, int] | None = None):
    """Parse `text` (or its `span`: start offset, end offset, lines before it) from `start`."""
    begin, end, lines_before = span if span else (0, len(text), 0)
    builder = _lark(start).options.transformer
    builder.text, builder.line_offset = text[begin:end] if span else text, lines_before
    try:
        return _lark(start).parse(builder.text)
    except UnexpectedInput as error:
        raise _syntax_error(error, text, path, what, begin) from None
    except _TokenError as error:
        raise error_at(text, begin + error.token.start_pos + error.offset, error.message, path) from None
    finally:
        builder.text = ""


def _syntax_error(error: UnexpectedInput, text: str, path: str | None, what: str, begin: int) -> HloParseError:
    """The error of a parse of `text` from offset `begin` on."""
    expected = _expected(error)
    if isinstance(error, UnexpectedToken) and error.token.type == "$END" or isinstance(error, UnexpectedEOF):
        unclosed, end = _unclosed(text, begin), len(text.rstrip())
        # a value's bracket; a `{` that ends its line opens a computation body, cut after a line
        if unclosed is not None and text[unclosed + 1 : text.find("\n", unclosed) % (len(text) + 1)].strip():
            char = text[unclosed]
            return error_at(text, unclosed, f"unbalanced '{char}': no matching '{_CLOSING[char]}' (truncated?)", path)
        return error_at(text, end, f"{what} text ends too early (truncated?)", path, expected)
    position = begin + (error.token.start_pos if isinstance(error, UnexpectedToken) else error.pos_in_stream)
    char = text[position] if position < len(text) else ""
    if text.startswith("/*", position):
        message = "unterminated /* comment"
    elif isinstance(error, UnexpectedToken):
        message = f"unexpected {_describe(error.token)}"
    else:
        message = f"unexpected character {char!r}"
    return error_at(text, position, message, path, expected)


_CLOSING = {"{": "}", "(": ")"}


def _unclosed(text: str, begin: int) -> int | None:
    """The offset of the innermost `{` or `(` from `begin` on that is never closed (strings and
    comments skipped), for a text that ended too early."""
    stack = []
    brackets = re.compile(f"{terminal('STRING')}|{terminal('COMMENT')}|[{{}}()]")
    for match in brackets.finditer(text, begin):
        char = match.group()
        if char in _CLOSING:
            stack.append(match.start())
        elif char in ")}" and stack:
            stack.pop()
    return stack[-1] if stack else None


#: Catch-all terminals: a word in the wrong place lexes as whichever of them the lexer tried first.
_TEXT_TERMINALS = {"ATOM", "LITERAL_WORD", "BRACED_TEXT", "PAREN_TEXT"}


def _describe(token: Token) -> str:
    """`name 'x'`: what the unexpected token is, in words, and its text."""
    value = str(token)
    word = _word(token.type)
    if token.type in _TEXT_TERMINALS:
        word = "name" if re.fullmatch(terminal("NAME"), value) else "text"
    if not value or word == repr(value):  # punctuation names itself: `unexpected '{'`
        return word
    return f"{word} {value[:40]!r}"


def _expected(error: UnexpectedInput) -> tuple[str, ...]:
    names = getattr(error, "expected", None) or getattr(error, "allowed", None) or ()
    return tuple(sorted({_word(n, article=True) for n in names if not n.startswith("__")}))


def _assemble(items: list, path: str | None, text: str) -> list[Module]:
    """Group the flat list of headers, stack-frame tables and computations of `text` into modules."""
    modules: list[Module] = []
    current: Module | None = None
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
    return [m for m in modules if m.computations or m.has_header]


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
