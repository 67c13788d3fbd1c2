"""parse_hlo: HLO text -> list[Module], through the Lark grammar `grammars/hlo.lark`.

The grammar is compiled once, lazily, with an embedded transformer: LALR callbacks build the
model directly, so no parse tree is ever built (Lark's own advice for speed and memory).
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import os
import re
from sys import intern

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken

from xlainspect.errors import HloParseError, error_at
from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame
from xlainspect.hlo.tokens import decode_tuple_shape, grammar_text
from xlainspect.shape import Shape, array_shape, tuple_shape

#: How Lark's terminal names read in an error message.
_TERMINAL_WORDS = {
    "NAME": "a name", "ATTR_NAME": "an attribute (key=value)", "ARRAY_SHAPE": "a shape",
    "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "COMMA": "','", "EQUAL": "'='", "INT": "an integer", "PARAM_NAME": "a parameter (name: shape)",
    "ROOT": "ROOT", "ENTRY": "ENTRY", "HLOMODULE": "HloModule", "BRACED": "a {...} value",
    "STRING": "a string", "ATOM": "a value", "LITERAL": "a literal", "ARROW": "'->'",
    "$END": "end of input", "CONSTANT": "constant", "IOTA_GROUPS": "replica groups",
    "PARENED_VALUE": "a (...) value", "SHAPED_LITERAL": "a shape and literal", "BUFFER_OPEN": "b(",
}


class _TokenError(Exception):
    """A decode error inside one token; parse_hlo turns it into an HloParseError at the right place."""

    def __init__(self, token: Token, offset: int, message: str) -> None:
        super().__init__(message)
        self.token, self.offset, self.message = token, offset, message


@v_args(inline=True)
class _ModelBuilder(Transformer):
    """LALR callbacks: one method per grammar rule, each returning a model object."""

    def start(self, *items):
        return list(items)

    def header(self, name: Token, *attributes):
        return ("header", str(name).rstrip(":"), _attribute_dict(attributes), name.line)

    def stack_frames(self, files, functions, locations, frames):
        return ("stack_frames", _resolve_stack_frames(files, functions, locations, frames))

    def frame_table(self, *entries):
        return dict(entries)

    def frame_entry(self, index: Token, value: Token):
        from xlainspect.hlo.attributes import decode_braced_fields

        if value.startswith("{") and not all(v.isdigit() for v in decode_braced_fields(value).values()):
            raise _TokenError(value, 0, "malformed stack-frame table entry: every field must be an integer")
        return (int(index), str(value))

    def computation(self, *items):
        """`computation_head instructions } attributes` or `[ENTRY] NAME [signature] { ... }`."""
        if isinstance(items[0], Token) and items[0].type == "COMPUTATION":
            return _coarse_computation(items[0], items[1:])
        if isinstance(items[0], tuple):
            is_entry, name, line, signature = items[0]
            rest = items[1:]
        else:
            is_entry, name, line, signature = items[0] is not None, _strip(items[1]), items[1].line, items[2]
            rest = items[3:]
        instructions = [i for r in rest if not isinstance(r, (tuple, str)) for i in (r if isinstance(r, list) else (r,))]
        attributes = _attribute_dict([r for r in rest if isinstance(r, (tuple, str))])
        params, result = signature if signature else (None, None)
        return Computation(
            name=name, instructions=instructions, is_entry=is_entry,
            parameter_shapes=params, result_shape=result, attributes=attributes, line=line,
        )

    def computation_head(self, token: Token):
        return _computation_head(token)

    def signature(self, *items):
        *params, result = items
        return tuple(p for p in params if p is not None), result

    def param(self, name: Token, shape: Shape):
        return (_strip(name).rstrip(":"), shape)

    def instruction(self, *items):
        """`INSTRUCTION` (coarse lines), `DEFINES shape opcode...` or `[ROOT] NAME = shape opcode...`."""
        first = items[0]
        if first is not None and first.type == "INSTRUCTION":
            instructions = _coarse_instructions(first, items[1:])
            return instructions if len(instructions) > 1 else instructions[0]
        if first is not None and first.type == "DEFINES":
            is_root, name, line = _defines(first)
            shape, *rest = items[1:]
        else:
            is_root, name, line = first is not None, _strip(items[1]), items[1].line
            shape, *rest = items[2:]
        opcode = rest[0]
        if opcode.type == "OPCALL":
            opcode, operands = _opcall(opcode)
            attributes = rest[1:]
        else:
            operands, attributes = rest[1], rest[2:]
            if opcode.type == "CONSTANT":
                operands = (str(operands)[1:-1],)
        nested: list[Instruction] = []
        if any(not isinstance(o, str) for o in operands):
            operands = tuple(_flatten_nested(o, nested) for o in operands)
        instruction = Instruction(
            name=name, opcode=str(opcode), shape=shape, operands=operands,
            attributes=_attribute_dict(attributes), is_root=is_root, line=line,
        )
        return [*nested, instruction] if nested else instruction

    def nested_instruction(self, shape, opcode: Token, operands=None):
        """An operand written as an instruction (`NAME operands` or one OPCALL token); it gets a
        name from its opcode and position."""
        column = opcode.column + len(opcode) - len(opcode.lstrip())
        word = opcode.strip().partition("(")[0]
        name = Token("NAME", f"{word}.{opcode.line}.{column}", line=opcode.line)
        rest = (opcode,) if operands is None else (opcode, operands)
        return self.instruction(None, name, shape, *rest)

    def operands(self, *operands):
        return tuple(o for o in operands if o is not None)

    def operand(self, *items):
        return _strip(items[-1])

    def attribute(self, *items):
        if len(items) == 1:  # continuation of `calls=%a, %b`
            return ("", str(items[0]))
        return (str(items[0])[:-1], items[1])

    def value(self, value):
        return str(value)

    def shape(self, token: Token) -> Shape:
        return _shape_in(token, 0, str(token))

    def coarse_tuple_shape(self, token: Token) -> Shape:
        return _shape_in(token, 0, str(token))

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



@functools.cache
def _splitters() -> dict[str, re.Pattern]:
    """Regexes that split the coarse tokens, built from the grammar's own terminals.

    `instruction_head` is the INSTRUCTION terminal without its ATTRIBUTE* tail, in groups (ROOT,
    name, shape, OPCALL): it makes the choices the lexer made, and the tail is then a contiguous
    run of `attribute` matches. `operand` finds each operand's name or
    integer (group 1) in an OPCALL's parentheses: scanning left to right, each match starts where
    an operand starts, never inside a shape. `computation_head` (ENTRY, name, parameters, result)
    and `parameter` split a COMPUTATION_HEAD.
    """
    def terminal(name: str) -> str:
        return _lark().get_terminal(name).pattern.to_regexp()

    shape = f"(?:{terminal('ARRAY_SHAPE')}|{terminal('TUPLE_SHAPE')})"
    defines = r"\s*(ROOT\s+)?%?([A-Za-z_][A-Za-z0-9_.\-]*)\s*=[ \t]*"  # DEFINES, in groups
    return {
        "defines": re.compile(defines),
        "instruction_head": re.compile(f"{defines}(?:({shape}) *)?({terminal('OPCALL')})"),
        "attribute": re.compile(terminal("ATTRIBUTE")),
        "operand": re.compile(rf"(?:/\*index=[0-9]+\*/ *)?(?:{shape} +)?%?([A-Za-z0-9_.\-]+)"),
        "computation_head_end": re.compile(terminal("COMPUTATION_HEAD")),
        "computation_head": re.compile(rf"\s*(ENTRY\s+)?({terminal('NAME')})(?: *\((.*)\) *-> *({shape}))? *\{{", re.S),
        "parameter": re.compile(rf"({terminal('PARAM_NAME')}) *({shape})"),
    }


def _defines(token: Token) -> tuple[bool, str, int]:
    """(is_root, name, line) of a DEFINES token; its leading blank lines do not count."""
    match = _splitters()["defines"].match(token)
    return match.group(1) is not None, match.group(2), token.line + token.count("\n", 0, match.start(2))


def _computation_head(token: Token, end: int | None = None):
    """(is_entry, name, line, signature or None) of the COMPUTATION_HEAD at the start of `token`."""
    split = _splitters()
    match = split["computation_head"].match(token, 0, len(token) if end is None else end)
    line = token.line + token.count("\n", 0, match.start(2))
    signature = None
    if match.group(4) is not None:
        params = tuple((_strip(p[1]).rstrip(":"), _shape_in(token, p.start(2), p[2]))
                       for p in split["parameter"].finditer(token, match.start(3), match.end(3)))
        signature = (params, _shape_in(token, match.start(4), match.group(4)))
    return match.group(1) is not None, _strip(match.group(2)), line, signature


def _coarse_computation(token: Token, attributes) -> Computation:
    """A COMPUTATION token: its head, then its instruction lines."""
    head_end = _splitters()["computation_head_end"].match(token).end()
    is_entry, name, line, signature = _computation_head(token, head_end)
    instructions = _instruction_lines(token, head_end)
    params, result = signature if signature else (None, None)
    return Computation(
        name=name, instructions=instructions, is_entry=is_entry, parameter_shapes=params,
        result_shape=result, attributes=_attribute_dict(attributes), line=line,
    )


def _coarse_instructions(token: Token, extra_attributes) -> list[Instruction]:
    """An INSTRUCTION token (a run of lines); fine-grained attributes after it (`calls=%a, %b`)
    belong to its last line."""
    instructions = _instruction_lines(token, 0)
    if extra_attributes:
        last = instructions[-1]
        last.attributes = _attribute_dict([*last.attributes.items(), *extra_attributes])
    return instructions


def _instruction_lines(token: Token, position: int) -> list[Instruction]:
    """The instruction lines of `token` from `position` on, lines counted as we go.

    Each line is an `instruction_head` match and then as many ATTRIBUTE matches as follow: the
    greedy path the lexer's regex took.
    """
    split = _splitters()
    instruction_head, attribute = split["instruction_head"], split["attribute"]
    instructions = []
    line = token.line + token.count("\n", 0, position)
    while match := instruction_head.match(token, position):
        line += token.count("\n", position, match.start(2))
        position = match.end()
        pairs = []
        while value := attribute.match(token, position):
            pairs.append(value.group())
            position = value.end()
        instructions.append(_instruction(token, match, line, pairs))
    return instructions


def _instruction(token: Token, head: re.Match, line: int, pairs: list) -> Instruction:
    """The instruction of an `instruction_head` match in `token` on `line`, with its attributes."""
    shape = _shape_in(token, head.start(3), head.group(3)) if head.group(3) else None
    opcode, operands = _opcall(head.group(4))
    return Instruction(
        name=intern(head.group(2)), opcode=opcode, shape=shape, operands=operands,
        attributes=_attribute_dict(pairs), is_root=head.group(1) is not None, line=line,
    )


def _shape_in(token: Token, offset: int, text: str) -> Shape:
    """Decode the shape `text` found at `offset` in `token`; errors point into the token."""
    try:
        return decode_tuple_shape(text) if text.startswith("(") else array_shape(text)
    except HloParseError as error:
        raise _TokenError(token, offset + error.column - 1, error.message) from None


def _opcall(token: Token) -> tuple[str, tuple[str, ...]]:
    """(opcode, operands) of an OPCALL token; `constant(1)` keeps its literal text as the operand.

    Operand names are interned, so they share the string of the instruction name they refer to.
    """
    text = token.lstrip(" ")
    paren = text.find("(")
    opcode, inner = intern(text[:paren]), text[paren + 1 : -1]
    if opcode == "constant":
        return opcode, (inner,)
    return opcode, tuple(map(intern, _splitters()["operand"].findall(inner)))


def _flatten_nested(operand, nested: list[Instruction]) -> str:
    """Hoist a nested-instruction operand (and what it nests) into `nested`; return its name."""
    if isinstance(operand, str):
        return operand
    chain = operand if isinstance(operand, list) else [operand]
    nested.extend(chain)
    return chain[-1].name


def _strip(name: Token | str) -> str:
    return str(name).lstrip("%")


def _attribute_dict(pairs) -> dict[str, str]:
    """Attributes in printed order; bare names extend the previous value (`calls=%a, %b`).

    `pairs` holds (key, value) tuples from the fine-grained rule and ATTRIBUTE tokens `, key=value`.
    Keys and values are interned: a large module repeats the same few thousand of them (kinds,
    metadata, backend configs) hundreds of thousands of times, and memory is the parse's limit.
    """
    result: dict[str, str] = {}
    last = None
    for pair in pairs:
        if isinstance(pair, str):
            equals = pair.find("=")
            key, value = pair[1:equals].strip(), pair[equals + 1 :]
        else:
            key, value = pair
        if key:
            result[intern(key)] = intern(value)
            last = key
        elif last is not None:
            result[last] += ", " + value
    return result


@functools.cache
def _lark(start: str = "start") -> Lark:
    """The parser, its LALR tables loaded from the user cache directory when an earlier run saved
    them for this grammar text and Lark version (0.4 s saved at every start); built otherwise.

    Each start symbol gets its own parser of the same grammar: the automaton for `header_line` or
    `program_shape` has only those states, so its contextual lexer never compiles the regexes of the
    computation-sized terminals (what lookahead sets shared with whole modules would cost, 0.2 s).
    """
    import hashlib

    import lark

    from xlainspect.cache import cache_dir

    text = grammar_text()
    key = hashlib.blake2b(f"{lark.__version__}\n{start}\n{text}".encode(), digest_size=10).hexdigest()
    tables = cache_dir() / f"grammar-{key}.lark"
    options = dict(
        parser="lalr", lexer="contextual", maybe_placeholders=True, transformer=_ModelBuilder(), start=start,
    )
    try:
        tables.parent.mkdir(parents=True, exist_ok=True)
        return Lark(text, cache=str(tables), **options)
    except OSError:  # an unwritable cache directory only costs the build
        return Lark(text, **options)


def parse_hlo(text: str, path: str | None = None) -> list[Module]:
    """Parse HLO text (one or more modules, or header-less computations) into the model.

    Raises HloParseError with path, line, column and a caret rendering on bad text.
    """
    items = _run_in_workers(text, path) if len(text) >= PARALLEL_MIN_BYTES else None
    if items is None:
        items = _run(text, "start", path)
    modules = _assemble(items, path)
    for module in modules:
        if not module.computations:  # XLA's parser needs at least one; a dump cut after its header has none
            raise error_at(text, len(text.rstrip()), f"HloModule {module.name} has no computations (truncated?)", path)
    return modules


def parse_header(line: str, path: str | None = None) -> Module:
    """The `HloModule name, key=value, ...` line alone, as a Module without computations: the
    signature of a dumped module (entry_computation_layout, input_output_alias) for one line's cost."""
    # Its own start symbol: the lexer states it passes through are small, while `start`'s first
    # state carries the whole-computation terminal, whose regex alone takes ~0.2 s to compile.
    modules = _assemble([_run(line, "header_line", path)], path)
    if len(modules) != 1 or not modules[0].has_header or modules[0].computations:
        raise error_at(line, 0, "expected one `HloModule <name>, ...` header line", path)
    return modules[0]


#: Texts from this size on are parsed in worker processes (one per core), a run of whole
#: computations each; below it, starting the workers costs more than they save.
PARALLEL_MIN_BYTES = 4 << 20


def _run_in_workers(text: str, path: str | None) -> list | None:
    """The items of `text` parsed by this process and worker processes, one part each.

    None when the text cannot be split or a part fails: the caller then parses the whole text, so
    a syntax error is reported exactly as a serial parse reports it. Each part is padded with the
    newlines before it, so its line numbers (instructions, errors, nested-instruction names) are
    those of the file. This process parses the first part itself: a worker's result costs a
    pickle round trip (about a fifth of its parse) on top.
    """
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    parts = _split_at_computations(text, workers) if workers > 1 else []
    if len(parts) < 2:
        return None
    from concurrent.futures import ProcessPoolExecutor

    _lark()  # built once here; forked workers inherit it
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    jobs = [(text.count("\n", 0, start), text[start:end], path) for start, end in parts]
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as in _run: unpickled results are millions of long-lived objects
    try:
        with ProcessPoolExecutor(len(jobs) - 1, mp_context=context) as pool:
            others = pool.map(_run_compact_part, jobs[1:])
            items = _run_part(jobs[0])
            for part_items in others:
                items.extend(_expand(item) for item in part_items)
        return items
    except HloParseError:
        return None
    finally:
        if gc_was_enabled:
            gc.enable()


def _run_part(job: tuple[int, str, str | None]) -> list:
    lines_before, part, path = job
    return _run("\n" * lines_before + part, "start", path)


def _run_compact_part(job: tuple[int, str, str | None]) -> list:
    """A worker's part with its computations as plain tuples: pickling a slotted object calls
    back into Python for each of hundreds of thousands of instructions, a tuple does not."""
    return [_compact(item) for item in _run_part(job)]


def _compact(item):
    if not isinstance(item, Computation):
        return item  # ("header", ...) and ("stack_frames", ...) tuples
    instructions = [(i.name, i.opcode, i.shape, i.operands, i.attributes, i.is_root, i.line) for i in item.instructions]
    return ("computation", item.name, instructions, item.is_entry, item.parameter_shapes, item.result_shape,
            item.attributes, item.line)


def _expand(item):
    if item[0] != "computation":
        return item
    _, name, instructions, is_entry, parameter_shapes, result_shape, attributes, line = item
    return Computation(name, [Instruction(*fields) for fields in instructions], is_entry, parameter_shapes,
                       result_shape, attributes, line)


def _split_at_computations(text: str, pieces: int) -> list[tuple[int, int]]:
    """(start, end) spans of about len/pieces characters, each cut after a `}` line at column 0.

    XLA prints a computation's closing brace alone at column 0, and nothing else there; a cut at a
    wrong place (a brace inside a multi-line value) makes a part fail, and the caller parses serially.
    """
    cuts = [0]
    for k in range(1, pieces):
        close = text.find("\n}\n", max(cuts[-1], len(text) * k // pieces))
        if close < 0:
            break
        if close + 3 > cuts[-1]:
            cuts.append(close + 3)
    if cuts[-1] < len(text):
        cuts.append(len(text))
    return list(zip(cuts, cuts[1:]))


def split_computations(text: str) -> list[str]:
    """`text` cut after each `}` line at column 0: one piece per computation, the first with the
    header and stack-frame tables before it. Joined, the pieces are `text`, and any subset of them in
    order is HLO text again (header-less computations parse), so a caller can parse just the pieces
    it needs. XLA prints a computation's closing brace alone at column 0 and nothing else there; a
    cut inside a multi-line value makes a piece fail to parse, and the caller then parses `text`.
    """
    pieces, start = [], 0
    while (close := text.find("\n}", start)) >= 0:
        end = text.find("\n", close + 2)
        end = len(text) if end < 0 else end + 1
        pieces.append(text[start:end])
        start = end
    if pieces and not text[start:].strip():
        pieces[-1] += text[start:]  # trailing blank lines stay with the last computation
    elif start < len(text):
        pieces.append(text[start:])
    return pieces


def parse_with(start: str, text: str, what: str):
    """Parse `text` with one of the grammar's extra start symbols (shape_text, program_shape...)."""
    return _run(text, start, None, what)


def _run(text: str, start: str, path: str | None, what: str = "HLO"):
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the parse allocates millions of objects that all stay alive: skip futile GC passes
    try:
        return _lark(start).parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(error, text, path, what) from None
    except _TokenError as error:
        raise error_at(text, error.token.start_pos + error.offset, error.message, path) from None
    finally:
        if gc_was_enabled:
            gc.enable()


def _syntax_error(error: UnexpectedInput, text: str, path: str | None, what: str) -> HloParseError:
    expected = _expected(error)
    if isinstance(error, UnexpectedToken) and error.token.type == "$END" or isinstance(error, UnexpectedEOF):
        return error_at(text, len(text.rstrip()), f"{what} text ends too early (truncated?)", path, expected)
    position = error.token.start_pos if isinstance(error, UnexpectedToken) else error.pos_in_stream
    char = text[position] if position < len(text) else ""
    if text.startswith("/*", position):
        message = "unterminated /* comment"
    elif char in "{(" and any("value" in e or "literal" in e for e in expected):
        message = f"unbalanced '{char}': no matching '{'}' if char == '{' else ')'}' (truncated or nested too deep?)"
    elif isinstance(error, UnexpectedToken):
        message = f"unexpected {_describe(error.token)}"
    else:
        message = f"unexpected character {char!r}"
    return error_at(text, position, message, path, expected)


def _describe(token: Token) -> str:
    value = str(token)
    return f"{_TERMINAL_WORDS.get(token.type, token.type)} {value[:40]!r}" if value else token.type


def _expected(error: UnexpectedInput) -> tuple[str, ...]:
    names = getattr(error, "expected", None) or getattr(error, "allowed", None) or ()
    return tuple(sorted({_TERMINAL_WORDS.get(n, n) for n in names if not n.startswith("__")}))


def _assemble(items: list, path: str | None) -> list[Module]:
    """Group the flat list of headers, stack-frame tables and computations into modules."""
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
            current = Module(name=name, computations=[], attributes=attributes, path=path, line=line)
            modules.append(current)
        elif current is not None:
            current.stack_frames = item[1]
    for module in modules:
        if not module.has_header and module.computations:
            module.name = f"module_{module.entry.name}"
    return [m for m in modules if m.computations or m.has_header]


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
            line=int(location.get("line", 0)), column=int(location.get("column", 0)),
            parent=int(frame.get("parent_frame_id", 0)),
        )
    return result
