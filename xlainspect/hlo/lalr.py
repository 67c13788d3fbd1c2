"""The grammar's parser: Lark's LALR automaton over `grammars/hlo.lark`, the definition of HLO text.

The grammar is compiled once per start symbol, lazily, with an embedded transformer: LALR callbacks
build the model directly, so no parse tree is ever built (Lark's own advice for speed and memory).
The parser is reentrant: the one transformer a Lark parser embeds holds no state; what a parse's
callbacks need (the text and the lines before it) is the context variable `_source`, which `run`
sets for its parse alone, so parses in several threads (or one begun inside another) never see each
other's text.
Only this module imports Lark: `xlainspect.hlo.parser` reads plain text with the speed layer and
comes here for the rest (and for every error, which the grammar words and places).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading
from contextvars import ContextVar
from sys import intern
from typing import Any, TypeVar, cast

from lark import Lark, Token, Transformer, v_args  # pyright: ignore[reportUnknownVariableType] (lark's stubs)
from lark import __version__ as lark_version
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken

from xlainspect.errors import HloParseError, error_at
from xlainspect.hlo.attributes import is_frame_entry
from xlainspect.hlo.fast import FramesItem, FrameTables, HeaderItem
from xlainspect.hlo.grammar import grammar_text, table_cache
from xlainspect.hlo.model import Computation, Instruction, attribute_dict
from xlainspect.hlo.shape import Shape, array_shape, tuple_shape

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


Span = tuple[int, int]
"""The offsets of a value in the parsed text (a braced value, a literal, mesh groups)."""
Piece = Token | Span
Signature = tuple[tuple[tuple[str, Shape], ...], Shape]
ComputationHead = tuple[bool, str, int, Signature | None]
Operand = str | tuple[str, tuple[int, ...]] | list[Instruction]
"""A name, a name with a ShapeIndex (`%a#1`), or instructions written as the operand (nested)."""


def _start(item: Piece) -> int:
    return (item.start_pos or 0) if isinstance(item, Token) else item[0]


def _end(item: Piece) -> int:
    return (item.end_pos or 0) if isinstance(item, Token) else item[1]


def _line(token: Token) -> int:
    return token.line or 0


_Class = TypeVar("_Class", bound=type)


def _inline(cls: _Class) -> _Class:
    """`lark.v_args(inline=True)`: each callback gets a rule's children as arguments (typed here, as
    lark's stubs type the decorator's result too loosely for a class)."""
    return cast(_Class, v_args(inline=True)(cls))


_source: ContextVar[tuple[str, int]] = ContextVar("_source")
"""The text being parsed and the lines before it in its file, set by `run` for one parse."""


@_inline
class _ModelBuilder(Transformer[Token, Any]):
    """LALR callbacks: one method per grammar rule, each returning a model object.

    Attribute values are the text XLA printed, cut from the parsed text by position, so spacing and
    nesting come out as written. The lines before the text in its file are added to every line number
    (a caller may parse a piece of a file). Both are the parse's own (`_source`).
    """

    def start(self, *items: Any) -> list[Any]:
        return list(items)

    def module_header(self, name: Token, *attributes: tuple[str, str]) -> HeaderItem:
        return ("header", str(name).rstrip(":"), attribute_dict(attributes), _line(name) + _source.get()[1])

    def stack_frames(self, *tables: dict[int, str]) -> FramesItem:
        return ("stack_frames", cast(FrameTables, tables))  # the grammar's rule names four tables

    def frame_table(self, *entries: tuple[int, str]) -> dict[int, str]:
        return dict(entries)

    def frame_entry(self, index: Token, value: Piece) -> tuple[int, str]:
        text = self._slice(value, value)
        if not is_frame_entry(text):
            raise _TokenError(_token_at(value), 0, "malformed stack-frame table entry: every field must be an integer")
        return (int(index), text)

    def computation(
        self, head: ComputationHead, *items: Instruction | list[Instruction] | tuple[str, str]
    ) -> Computation | tuple[str, Computation]:
        """A Computation; `("nested", computation)` when operands were written as instructions, whose
        names the module gives (`xlainspect.hlo.parser.name_nested_instructions`)."""
        is_entry, name, line, signature = head
        instructions = [i for item in items if not isinstance(item, tuple) for i in _as_list(item)]
        attributes = [i for i in items if isinstance(i, tuple)]
        params, result = signature if signature else (None, None)
        computation = Computation(
            name=name,
            instructions=instructions,
            is_entry=is_entry,
            parameter_shapes=params,
            result_shape=result,
            attributes=attribute_dict(attributes),
            line=line,
        )
        return ("nested", computation) if any(isinstance(item, list) for item in items) else computation

    def computation_head(self, entry: Token | None, name: Token, signature: Signature | None) -> ComputationHead:
        return entry is not None, _strip(name), _line(name) + _source.get()[1], signature

    def signature(self, *items: Any) -> Signature:
        *params, result = items
        return tuple(p for p in params if p is not None), result

    def param(self, name: Token, shape: Shape) -> tuple[str, Shape]:
        return (_strip(name).rstrip(":"), shape)

    def instruction(
        self,
        root: Token | None,
        name: Token,
        shape: Shape | None,
        opcode: Token,
        operands: Any,
        *attributes: tuple[str, str],
    ) -> Instruction | list[Instruction]:
        """`[ROOT] name = [shape] opcode(operands), attr=value, ...`; operands written as instructions
        (the parser-only nested form) come before it in the returned list."""
        written: tuple[str | list[Instruction], ...]
        indices: tuple[tuple[int, ...], ...]
        if opcode.type == "CONSTANT":
            written, indices = (self._slice(operands, operands)[1:-1],), ()
        else:
            written, indices = operands
        nested = [i for o in written if not isinstance(o, str) for i in o]
        names = (
            tuple(o if isinstance(o, str) else o[-1].name for o in written)
            if nested
            else cast(tuple[str, ...], written)
        )
        instruction = Instruction(
            name=intern(_strip(name)),
            opcode=intern(str(opcode)),
            shape=shape,
            operands=names,
            attributes=attribute_dict(attributes),
            is_root=root is not None,
            line=_line(name) + _source.get()[1],
            operand_shape_indices=indices,
        )
        return [*nested, instruction] if nested else instruction

    def nested_instruction(self, shape: Shape | None, opcode: Token, operands: Any) -> list[Instruction]:
        """An operand written as an instruction, with its own nested ones before it (the order in which
        XLA's ParseOperands adds them to the computation). Its name here holds a blank, which no HLO
        name does, and is unique in the file; the module names it as XLA's parser does, once the
        names before it are known (`xlainspect.hlo.parser.name_nested_instructions`)."""
        line = _line(opcode) + _source.get()[1]
        name = Token("NAME", f"{opcode}.anon {line}:{opcode.column}", line=opcode.line)
        return _as_list(self.instruction(None, name, shape, opcode, operands))

    def operands(
        self, *written: Operand | None
    ) -> tuple[tuple[str | list[Instruction], ...], tuple[tuple[int, ...], ...]]:
        """(operand names or nested instructions, their ShapeIndexes or () when all are whole)."""
        present = [o for o in written if o is not None]
        names = tuple(o[0] if isinstance(o, tuple) else o for o in present)
        if not any(isinstance(o, tuple) for o in present):
            return names, ()
        return names, tuple(o[1] if isinstance(o, tuple) else () for o in present)

    def operand(self, *items: Any) -> str | tuple[str, tuple[int, ...]]:
        if len(items) == 1:  # parameter(0)
            return str(items[0])
        _shape, name, *tuple_index = items
        if tuple_index:
            return (intern(_strip(name)), tuple(int(i[1:]) for i in tuple_index))
        return intern(_strip(name))

    def attribute(self, *items: Any) -> tuple[str, str]:
        if len(items) == 1:  # continuation of `calls=%a, %b`
            return ("", str(items[0]))
        return (str(items[0])[:-1], items[1])

    def value(self, *items: Piece | None) -> str:
        present = [i for i in items if i is not None]
        return self._slice(present[0], present[-1])

    def mesh_groups(self, *items: Piece | None) -> Span:
        present = [i for i in items if i is not None]
        return (_start(present[0]), _end(present[-1]))

    def braced(self, left: Token, *items: Token) -> Span:
        return (_start(left), _end(items[-1]))

    literal = braced

    def shape(self, token: Token) -> Shape:
        try:
            return array_shape(str(token))
        except HloParseError as error:
            raise _TokenError(token, error.column - 1, error.message) from None

    def tuple_shape(self, *elements: Shape | None) -> Shape:
        return tuple_shape(tuple(e for e in elements if e is not None))

    def buffer_shape(self, _open: Token, shape: Shape) -> Shape:
        return shape

    def header_line(self, header: HeaderItem) -> HeaderItem:
        return header

    def shape_text(self, shape: Shape) -> Shape:
        return shape

    def program_shape(self, *items: Any) -> tuple[tuple[Shape, ...], Shape]:
        *params, result = items
        return tuple(p for p in params if p is not None), result

    def _slice(self, first: Piece, last: Piece) -> str:
        return intern(_source.get()[0][_start(first) : _end(last)])


def _token_at(item: Piece) -> Token:
    """A token at `item`'s start, for errors about a whole value."""
    return item if isinstance(item, Token) else Token("VALUE", "", start_pos=item[0])


def _as_list(item: Instruction | list[Instruction]) -> list[Instruction]:
    return item if isinstance(item, list) else [item]


def _strip(name: Token | str) -> str:
    return str(name).lstrip("%")


_building = threading.Lock()


def _lark(start: str = "start") -> Lark:
    """The parser of `start`, built once (by one thread: two building at once would write one table
    file together)."""
    with _building:
        return _build(start)


@functools.cache
def _build(start: str) -> Lark:
    """The parser, its LALR tables loaded from the cache lent to the grammar (`grammar.keep_tables`)
    when an earlier run saved them for this grammar text and Lark version (0.1 s saved at every start,
    per start symbol); where the cache is read-only (`--no-cache`) tables an earlier run saved are
    still read, and tables not saved yet are built in memory, never written.

    Each start symbol gets its own parser of the same grammar: the automaton for `header_line` or
    `program_shape` has only those states, so its contextual lexer never compiles the regexes of the
    computation-sized terminals (what lookahead sets shared with whole modules would cost, 0.2 s).
    """
    text = grammar_text()
    options: dict[str, Any] = {
        "parser": "lalr",
        "lexer": "contextual",
        "maybe_placeholders": True,
        "transformer": _ModelBuilder(),
        "start": start,
    }
    key = hashlib.blake2b(f"{lark_version}\n{start}\n{text}".encode(), digest_size=10).hexdigest()
    cache = table_cache()
    tables = None if cache is None else cache.table_file(f"grammar-{key}.lark")
    if tables is None:
        return Lark(text, **options)
    try:
        tables.parent.mkdir(parents=True, exist_ok=True)
        if tables.is_file():
            return Lark(text, cache=str(tables), **options)
        # Lark writes its cache file in place: built into a file of this process's own and renamed, so
        # that another process building the same tables at once (a forked worker, a second run) never
        # interleaves its bytes with ours (each process pickles the tables in its own set order)
        private = tables.with_name(f".tmp-{os.getpid()}-{tables.name}")
        parser = Lark(text, cache=str(private), **options)
        with contextlib.suppress(OSError):  # Lark could not write it: the parser is built all the same
            os.replace(private, tables)
        return parser
    except OSError:  # an unwritable cache directory only costs the build
        return Lark(text, **options)


def terminals() -> dict[str, str]:
    """Every terminal's regex, as Lark translates the grammar's."""
    return {t.name: t.pattern.to_regexp() for t in _lark().terminals}


def _terminal(name: str) -> str:
    return _lark().get_terminal(name).pattern.to_regexp()


def run(text: str, start: str, path: str | None, what: str = "HLO", span: tuple[int, int, int] | None = None) -> Any:
    """Parse `text` (or its `span`: start offset, end offset, lines before it) from `start`: what the
    start symbol's rule builds (items for `start`, a Shape for `shape_text`, ...)."""
    begin, end, lines_before = span if span else (0, len(text), 0)
    source = text[begin:end] if span else text
    parser = _lark(start)
    token = _source.set((source, lines_before))
    try:
        return cast(Any, parser.parse(source))  # pyright: ignore[reportUnknownMemberType]
    except UnexpectedInput as error:
        raise _syntax_error(error, text, path, what, begin) from None
    except _TokenError as error:
        raise error_at(text, begin + _start(error.token) + error.offset, error.message, path) from None
    finally:
        _source.reset(token)


def _syntax_error(error: UnexpectedInput, text: str, path: str | None, what: str, begin: int) -> HloParseError:
    """The error of a parse of `text` from offset `begin` on."""
    expected = _expected(error)
    token = cast(Token, error.token) if isinstance(error, UnexpectedToken) else None  # pyright: ignore[reportUnknownMemberType]
    if token is not None and token.type == "$END" or isinstance(error, UnexpectedEOF):
        unclosed, end = _unclosed(text, begin), len(text.rstrip())
        # a value's bracket; a `{` that ends its line opens a computation body, cut after a line
        if unclosed is not None and text[unclosed + 1 : text.find("\n", unclosed) % (len(text) + 1)].strip():
            char = text[unclosed]
            return error_at(text, unclosed, f"unbalanced '{char}': no matching '{_CLOSING[char]}' (truncated?)", path)
        return error_at(text, end, f"{what} text ends too early (truncated?)", path, expected)
    position = begin + (_start(token) if token is not None else error.pos_in_stream or 0)
    char = text[position] if position < len(text) else ""
    if text.startswith("/*", position):
        message = "unterminated /* comment"
    elif token is not None:
        message = f"unexpected {_describe(token)}"
    else:
        message = f"unexpected character {char!r}"
    return error_at(text, position, message, path, expected)


_CLOSING = {"{": "}", "(": ")"}


def _unclosed(text: str, begin: int) -> int | None:
    """The offset of the innermost `{` or `(` from `begin` on that is never closed (strings and
    comments skipped), for a text that ended too early."""
    stack: list[int] = []
    brackets = re.compile(f"{_terminal('STRING')}|{_terminal('COMMENT')}|[{{}}()]")
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
        word = "name" if re.fullmatch(_terminal("NAME"), value) else "text"
    if not value or word == repr(value):  # punctuation names itself: `unexpected '{'`
        return word
    return f"{word} {value[:40]!r}"


def _expected(error: UnexpectedInput) -> tuple[str, ...]:
    names = getattr(error, "expected", None) or getattr(error, "allowed", None) or ()
    return tuple(sorted({_word(n, article=True) for n in names if not n.startswith("__")}))
