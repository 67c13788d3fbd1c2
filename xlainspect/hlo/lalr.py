"""The grammar's parser: Lark's LALR automaton over `grammars/hlo.lark`, the definition of HLO text.

The grammar is compiled once per start symbol, lazily, with an embedded transformer: LALR callbacks
build the model directly, so no parse tree is ever built (Lark's own advice for speed and memory).
Only this module imports Lark: `xlainspect.hlo.parser` reads plain text with the speed layer and
comes here for the rest (and for every error, which the grammar words and places).
"""

from __future__ import annotations

import functools
import re
from sys import intern

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken

from xlainspect.errors import HloParseError, error_at
from xlainspect.hlo.attributes import is_frame_entry
from xlainspect.hlo.grammar import grammar_text
from xlainspect.hlo.model import Computation, Instruction, attribute_dict
from xlainspect.hlo.shape import Shape, array_shape, tuple_shape
from xlainspect.settings import cache_dir, cache_enabled

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
        """A Computation; `("nested", computation)` when operands were written as instructions, whose
        names the module gives (`xlainspect.hlo.parser.name_nested_instructions`)."""
        is_entry, name, line, signature = head
        instructions = [i for item in items if not isinstance(item, tuple) for i in _as_list(item)]
        params, result = signature if signature else (None, None)
        computation = Computation(
            name=name,
            instructions=instructions,
            is_entry=is_entry,
            parameter_shapes=params,
            result_shape=result,
            attributes=attribute_dict([i for i in items if isinstance(i, tuple)]),
            line=line,
        )
        return ("nested", computation) if any(isinstance(item, list) for item in items) else computation

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
        """An operand written as an instruction, with its own nested ones before it (the order in which
        XLA's ParseOperands adds them to the computation). Its name here holds a blank, which no HLO
        name does, and is unique in the file; the module names it as XLA's parser does, once the
        names before it are known (`xlainspect.hlo.parser.name_nested_instructions`)."""
        line = opcode.line + self.line_offset
        name = Token("NAME", f"{opcode}.anon {line}:{opcode.column}", line=opcode.line)
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


def terminals() -> dict[str, str]:
    """Every terminal's regex, as Lark translates the grammar's."""
    return {t.name: t.pattern.to_regexp() for t in _lark().terminals}


def _terminal(name: str) -> str:
    return _lark().get_terminal(name).pattern.to_regexp()


def run(text: str, start: str, path: str | None, what: str = "HLO", span: tuple[int, int, int] | None = None):
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
