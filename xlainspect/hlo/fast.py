"""The speed layer: plain lines read with regexes built from the grammar's own terminals.

XLA prints one instruction per line. Most lines are plain, `[ROOT] name = shape opcode(operands),
key=value, ...`, and one regex match per line reads them several times faster than Lark's LALR
loop (about 3 us a token). `LineReader.read` reads one computation (with the header and
stack-frame tables before it) and answers None as soon as a line is not plain: a comment, a
multi-line value, a nested operand, braces nested deeper than 8, tuples deeper than 3. The caller
then parses that computation with the grammar, the definition of HLO text. The regexes are made
of the grammar's terminals (`terminals`, name -> regex, handed down by the parser as data), so a
token means the same here and there; a shape the speed layer cannot read (a buffer shape) sends its
computation to the grammar too, so the speed layer never calls back into the parser;
tests/test_differential.py proves that both build equal models on every fixture, corpus module and
syntax example.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from sys import intern
from typing import Literal

from xlainspect.errors import HloParseError
from xlainspect.hlo.attributes import is_frame_entry
from xlainspect.hlo.model import Computation, Instruction
from xlainspect.hlo.shape import Shape, array_shape, tuple_shape

_BLANK = r"[ \t]*"  # what the grammar's WHITESPACE may be inside one line
#: The comment XLA prints before every fifth operand or tuple element.
_INDEX_COMMENT = r"(?:/\*index=[0-9]+\*/[ \t]*)?"
#: Nesting the regexes follow; deeper text goes to the grammar, which has no limit.
_TUPLE_DEPTH, _BRACE_DEPTH, _PAREN_DEPTH = 3, 8, 4
#: The stack-frame tables after a module's header, in the order XLA prints them.
FRAME_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def _nested(open_: str, close: str, inner: str, depth: int) -> str:
    """`open (inner | nested)* close`, the nested part `depth - 1` levels deep."""
    pattern = f"{open_}(?:{inner})*{close}"
    for _ in range(depth - 1):
        pattern = f"{open_}(?:{inner}|{pattern})*{close}"
    return pattern


def _list(element: str) -> str:
    """`element, element, ...` (possibly empty) up to a `)`, blanks allowed around commas. Each element
    is followed by a comma (not before the `)`) or by the `)`: the element is written once, so nested
    tuple regexes grow linearly and compile in a fifth of the time."""
    return f"(?:{element}{_BLANK}(?:,{_BLANK}(?!\\))|(?=\\))))*"


def plain_operand_list(terminals: Mapping[str, str]) -> str:
    """The regex of a printed operand list between its parentheses: `[shape] name[#i...]` or an integer,
    comma separated, a tuple shape matched as its balanced parentheses. An operand written as an
    instruction (`s32[] constant(16)`, a form only XLA's parser reads, never printed) does not match, so
    a reader that meets one leaves the line to the grammar."""
    b = _BLANK
    balanced = _nested(r"\(", r"\)", r"(?>[^()\n]+)", _TUPLE_DEPTH + 1)
    shape = f"(?:{terminals['ARRAY_SHAPE']}|{balanced})"
    name, index = terminals["NAME"], terminals["TUPLE_INDEX"]
    return _list(f"{_INDEX_COMMENT}(?:(?:{shape}{b})?(?:{name})(?:{index})*|(?:{terminals['INT']}))")


FrameTables = tuple[dict[int, str], dict[int, str], dict[int, str], dict[int, str]]
"""The four stack-frame tables (FileNames, FunctionNames, FileLocations, StackFrames): index -> entry."""
HeaderItem = tuple[Literal["header"], str, dict[str, str], int]
"""A module's header: its name, raw attributes and line."""
FramesItem = tuple[Literal["stack_frames"], FrameTables]
Item = HeaderItem | FramesItem | Computation
"""What a reader of HLO text yields, in text order: headers, stack-frame tables and computations (the
parser groups them into modules)."""


def _past(pattern: re.Pattern[str], text: str, position: int, end: int | None = None) -> int:
    """Where `pattern`, which matches the empty string too (blanks, comments), ends from `position`."""
    match = pattern.match(text, position, len(text) if end is None else end)
    if match is None:  # a pattern that may match nothing always matches
        raise AssertionError(pattern.pattern)
    return match.end()


class LineReader:
    """Reads plain computations; built once from the grammar's terminals. Its regexes are compiled on
    first use (`_compile`), each an attribute from then on."""

    _end_of_line: re.Pattern[str]
    _blank_lines: re.Pattern[str]
    _attribute: re.Pattern[str]
    _instruction: re.Pattern[str]
    _operand: re.Pattern[str]
    _operand_path: re.Pattern[str]
    _computation_head: re.Pattern[str]
    _parameter: re.Pattern[str]
    _close: re.Pattern[str]
    _header: re.Pattern[str]
    _frame_entry: re.Pattern[str]
    _frame_line: re.Pattern[str]
    _frame_lines: re.Pattern[str]

    def __init__(self, terminals: Mapping[str, str]) -> None:
        t = {
            name: f"(?:{terminals[name]})"
            for name in (
                "ARRAY_SHAPE",
                "NAME",
                "PARAM_NAME",
                "ATTR_NAME",
                "INT",
                "STRING",
                "BRACED_TEXT",
                "PAREN_TEXT",
                "TUPLE_INDEX",
                "IOTA_GROUPS",
                "MESH_AXES",
                "DEVICE_IDS",
                "ATOM",
                "LITERAL_WORD",
                "ROOT",
                "ENTRY",
                "CONSTANT",
                "COMMENT",
            )
        }
        b = _BLANK
        tuple_ = t["ARRAY_SHAPE"]
        for _ in range(_TUPLE_DEPTH):
            element = f"{_INDEX_COMMENT}(?:{t['ARRAY_SHAPE']}|{tuple_})"
            tuple_ = rf"\({b}{_list(element)}{b}\)"
        shape = f"(?:{t['ARRAY_SHAPE']}|{tuple_})"
        # Where the shape text is decoded after the match (`decode_shape` reads or rejects it, and a
        # rejected one sends the computation to the grammar), or was matched by `shape` before (the
        # operands' names are found in a matched operand list), a tuple is its balanced parentheses:
        # a fifth of the regexes' text, which costs every parse to compile.
        balanced = _nested(r"\(", r"\)", r"(?>[^()\n]+)", _TUPLE_DEPTH + 1)
        spanned = f"(?:{t['ARRAY_SHAPE']}|{balanced})"
        # (?>...): text runs are atomic, so an unclosed brace fails at once instead of backtracking
        braced_inner = rf"(?>{t['BRACED_TEXT']})|{t['STRING']}|(?>[ \t]+)"
        braced = _nested(r"\{", r"\}", braced_inner, _BRACE_DEPTH)
        entry_braced = _nested(r"\{", r"\}", braced_inner, 1)
        literal = _nested(r"\(", r"\)", rf"(?>{t['PAREN_TEXT']})|{t['STRING']}|(?>[ \t]+)", _PAREN_DEPTH)
        # in the order of the terminals' priorities, as the grammar's lexer tries them (the braced
        # values, after a mesh or a shape or alone, share one copy of `braced`: it is the longest part)
        value = (
            f"(?:{t['MESH_AXES']}(?:{b}{t['DEVICE_IDS']}{b}{literal})?{b}|{t['ARRAY_SHAPE']}{b})?{braced}"
            f"|{t['ARRAY_SHAPE']}(?:{b}{t['LITERAL_WORD']})?|{t['IOTA_GROUPS']}"
            f"|{t['STRING']}|{literal}|{t['ATOM']}"
        )
        operand = f"{_INDEX_COMMENT}(?:{spanned}{b})?({t['NAME']}|{t['INT']})(?:{t['TUPLE_INDEX']})*"
        operand_path = f"{_INDEX_COMMENT}(?:{spanned}{b})?{t['NAME']}((?:{t['TUPLE_INDEX']})*)|{t['INT']}"
        operand_list = _list(f"{_INDEX_COMMENT}(?:(?:{shape}{b})?{t['NAME']}(?:{t['TUPLE_INDEX']})*|{t['INT']})")
        param = f"{t['PARAM_NAME']}{b}{spanned}"
        field = r"[A-Za-z_][A-Za-z0-9_]*=[0-9]+"
        frame_line = rf"{b}({t['INT']}){b}({t['STRING']}|\{{{b}(?:{field}(?:[ \t]+{field})*)?{b}\}}){b}\n"
        self._sources = {
            "_end_of_line": rf"{b}(?:{t['COMMENT']})?[ \t\r\f]*(?:\n|\Z)",
            "_blank_lines": r"(?:[ \t\r\f]*\n)*",
            "_attribute": rf"{b},{b}(?:({t['ATTR_NAME']}){b}({value})|({t['NAME']}))",
            "_instruction": rf"{b}(?:({t['ROOT']})[ \t]+)?({t['NAME']}){b}={b}(?:({spanned}){b})?"
            rf"(?:{t['CONSTANT']}{b}({literal})|({t['NAME']}){b}\({b}({operand_list}){b}\))",
            "_operand": operand,
            "_operand_path": operand_path,
            "_computation_head": rf"{b}(?:({t['ENTRY']})[ \t]+)?({t['NAME']}){b}"
            rf"(?:\({b}({_list(param)}){b}\){b}->{b}({spanned}){b})?\{{",
            "_parameter": f"({t['PARAM_NAME']}){b}({spanned})",
            "_close": rf"{b}\}}",
            "_header": rf"HloModule[ \t]+({t['PARAM_NAME']}|{t['NAME']})",
            # an entry that is not a plain line (a comment, blanks): its braces are `{field=N ...}`, one
            # level; deeper text goes to the grammar
            "_frame_entry": rf"{b}({t['INT']}){b}({t['STRING']}|{entry_braced})",
            # a table line as XLA prints it: an index, then a string or `{field=N field=N ...}` (whose
            # fields are integers, as `is_frame_entry` requires), no comment
            "_frame_line": frame_line,
            "_frame_lines": f"(?:{frame_line})*",
        }
        self._tuple = functools.lru_cache(maxsize=16384)(ShapeReader(terminals).shape)
        """A tuple shape read, by its text (a module repeats a few of them many times); None: not plain."""
        self._ready = False

    def _compile(self, names: Iterable[str]) -> None:
        """Compile the regexes `names` not compiled yet, each an attribute from then on: a header line
        alone needs 4 of the 13 (compiling all costs a third of what parsing a 350 KB module does). Plain
        attributes, not `__getattr__`: a class with one loses the interpreter's fast attribute reads."""
        for name in names:
            if name not in self.__dict__:
                setattr(self, name, re.compile(self._sources[name]))

    def compile_all(self) -> None:
        """Every regex compiled now (before a fork, so that workers inherit them)."""
        self._compile(self._sources)
        self._ready = True

    def read_header(self, line: str) -> HeaderItem | None:
        """A dump file's first line alone, as `read` gives a header item; None when it is not plain."""
        self._compile(("_blank_lines", "_header", "_attribute", "_end_of_line"))
        found = self._read_header(line, 0, 1)
        if found is None or _past(self._blank_lines, line, found[1]) != len(line):
            return None
        return found[0]

    def read_head(self, text: str) -> list[Item] | None:
        """The header and stack-frame tables of a module's head (the text before its first computation)
        as `read` gives them, compiling only their regexes; None when a line is not plain."""
        self._compile(("_blank_lines", "_header", "_attribute", "_end_of_line"))
        self._compile(("_frame_entry", "_frame_line", "_frame_lines"))
        items: list[Item] = []
        position = _past(self._blank_lines, text, 0)
        while position < len(text):
            found: tuple[Item, int] | None = None
            if text.startswith("HloModule", position):
                found = self._read_header(text, position, text.count("\n", 0, position) + 1)
            elif text.startswith(FRAME_TABLES[0], position):
                found = self._read_frame_tables(text, position)
            if found is None:
                return None
            items.append(found[0])
            position = _past(self._blank_lines, text, found[1])
        return items

    def read(self, text: str, start: int, end: int, line: int) -> list[Item] | None:
        """The items (header, stack-frame tables, computations) of `text[start:end]`, whose first
        line is `line`; None when a line is not plain."""
        if not self._ready:
            self.compile_all()
        items: list[Item] = []
        counted = start  # newlines are counted up to here
        position = _past(self._blank_lines, text, start, end)
        while position < end:
            line += text.count("\n", counted, position)
            counted = position
            found: tuple[Item, int] | None
            if text.startswith("HloModule", position):
                found = self._read_header(text, position, line)
            elif text.startswith(FRAME_TABLES[0], position):
                found = self._read_frame_tables(text, position)
            else:
                found = self._read_computation(text, position, line)
            if found is None:
                return None
            item, position = found
            items.append(item)
            position = _past(self._blank_lines, text, position, end)
        return items

    def _read_header(self, text: str, position: int, line: int) -> tuple[HeaderItem, int] | None:
        match = self._header.match(text, position)
        if match is None:
            return None
        attributes = self._attributes(text, match.end())
        if attributes is None:
            return None
        attributes, position = attributes
        return ("header", match.group(1).rstrip(":"), attributes, line), position

    def _read_frame_tables(self, text: str, position: int) -> tuple[FramesItem, int] | None:
        tables: list[dict[int, str]] = []
        for name in FRAME_TABLES:
            position = _past(self._blank_lines, text, position)
            if not text.startswith(name, position) or (after := self._line_end(text, position + len(name))) is None:
                return None
            position, table = after, dict[int, str]()
            plain = _past(self._frame_lines, text, position)  # the usual lines, in one match
            for index, value in self._frame_line.findall(text, position, plain):
                table[int(index)] = intern(value)
            position = plain
            while (entry := self._frame_entry.match(text, position)) and (after := self._line_end(text, entry.end())):
                value = entry.group(2)
                if not is_frame_entry(value):
                    return None  # the grammar reports the malformed entry
                table[int(entry.group(1))] = intern(value)
                position = after
            tables.append(table)
        files, functions, locations, frames = tables
        return ("stack_frames", (files, functions, locations, frames)), position

    def _read_computation(self, text: str, position: int, line: int) -> tuple[Computation, int] | None:
        head = self._computation_head.match(text, position)
        if head is None or (after := self._line_end(text, head.end())) is None:
            return None
        position = after
        line += text.count("\n", head.start(), head.start(2))
        computation_line, counted = line, head.start(2)
        instructions: list[Instruction] = []
        try:
            signature: tuple[tuple[tuple[str, Shape], ...], Shape] | None = None
            if head.group(4) is not None:
                params = tuple(
                    (p.group(1).lstrip("%").rstrip(":"), self._shape(p.group(2)))
                    for p in self._parameter.finditer(text, head.start(3), head.end(3))
                )
                signature = (params, self._shape(head.group(4)))
            # the loop runs once per instruction: its methods are looked up once
            instruction, attributes_at, instruction_of = self._instruction.match, self._attributes, self._instruction_of
            while (match := instruction(text, position)) is not None:
                name_at = match.start(2)
                line += text.count("\n", counted, name_at)
                counted = name_at
                if (found := attributes_at(text, match.end())) is None:
                    return None
                attributes, position = found
                instructions.append(instruction_of(match, attributes, line))
        except (HloParseError, _NotPlain):
            return None  # the grammar reads it, or reports it at its place
        close = self._close.match(text, position)
        if close is None or (attributes := self._attributes(text, close.end())) is None:
            return None
        attributes, position = attributes
        params, result = signature if signature else (None, None)
        computation = Computation(
            name=head.group(2).lstrip("%"),
            instructions=instructions,
            is_entry=head.group(1) is not None,
            parameter_shapes=params,
            result_shape=result,
            attributes=attributes,
            line=computation_line,
        )
        return computation, position

    def _instruction_of(self, match: re.Match[str], attributes: dict[str, str], line: int) -> Instruction:
        root, name, shape, literal, opcode, operand_text = match.groups()
        indices: tuple[tuple[int, ...], ...] = ()
        if literal is not None:
            opcode, operands = "constant", (intern(literal[1:-1]),)
        elif not operand_text:
            operands = ()
        else:  # names never hold a `%` inside, so dropping them all drops the leading ones
            operands = tuple(map(intern, self._operand.findall(operand_text.replace("%", ""))))
            if "#" in operand_text:
                indices = tuple(
                    tuple(int(i) for i in path.split("#")[1:]) for path in self._operand_path.findall(operand_text)
                )
        # positional: name, opcode, shape, operands, attributes, is_root, line, operand_shape_indices
        return Instruction(
            intern(name.lstrip("%")),
            intern(opcode),
            self._shape(shape) if shape else None,
            operands,
            attributes,
            root is not None,
            line,
            indices,
        )

    def _attributes(self, text: str, position: int) -> tuple[dict[str, str], int] | None:
        """The `, key=value` attributes from `position` to the end of the line (as `attribute_dict`
        makes them, written out here: this runs once per instruction), and the next line's start."""
        attributes: dict[str, str] = {}
        last = None
        match = self._attribute.match
        while (found := match(text, position)) is not None:
            key, value, continued = found.groups()
            if key:
                last = intern(key[:-1])
                attributes[last] = intern(value)
            elif last is not None:
                attributes[last] += ", " + continued
            position = found.end()
        end = self._end_of_line.match(text, position)
        return None if end is None else (attributes, end.end())

    def _line_end(self, text: str, position: int) -> int | None:
        match = self._end_of_line.match(text, position)
        return None if match is None else match.end()

    def _shape(self, text: str) -> Shape:
        if not text.startswith("("):
            return array_shape(text)
        found = self._tuple(text)
        if found is None:
            raise _NotPlain  # a buffer shape, or bad text: the grammar reads the computation
        return found


class _NotPlain(Exception):
    """A value of a line that only the grammar reads."""


class ShapeReader:
    """Shapes as XLA prints them, arrays (`array_shape`) and tuples of them, and program shapes
    (`(shape, ...) -> shape`, entry_computation_layout's); None for anything else (buffer shapes, bad
    text), which the grammar then reads or rejects with its error. Blanks and comments may come
    between the tokens, as the grammar ignores them."""

    def __init__(self, terminals: Mapping[str, str]) -> None:
        self._array = re.compile(terminals["ARRAY_SHAPE"])
        self._ignored = re.compile(rf"(?:{terminals['WHITESPACE']}|{terminals['COMMENT']})*")

    def shape(self, text: str) -> Shape | None:
        found = self._shape_at(text, self._skip(text, 0))
        return found[0] if found is not None and self._skip(text, found[1]) == len(text) else None

    def program_shape(self, text: str) -> tuple[tuple[Shape, ...], Shape] | None:
        parameters = self._shape_at(text, self._skip(text, 0), tuple_only=True)
        if parameters is None:
            return None
        arrow = self._skip(text, parameters[1])
        if not text.startswith("->", arrow):
            return None
        result = self._shape_at(text, self._skip(text, arrow + 2))
        if result is None or self._skip(text, result[1]) != len(text):
            return None
        return parameters[0].tuple_shapes, result[0]

    def _shape_at(self, text: str, position: int, tuple_only: bool = False) -> tuple[Shape, int] | None:
        if not text.startswith("(", position):
            array = None if tuple_only else self._array.match(text, position)
            if array is None:
                return None
            try:
                return array_shape(array.group()), array.end()
            except HloParseError:
                return None
        elements: list[Shape] = []
        position = self._skip(text, position + 1)
        if text.startswith(")", position):
            return tuple_shape(()), position + 1
        while (found := self._shape_at(text, position)) is not None:
            elements.append(found[0])
            position = self._skip(text, found[1])
            if text.startswith(")", position):
                return tuple_shape(tuple(elements)), position + 1
            if not text.startswith(",", position):
                return None
            position = self._skip(text, position + 1)
        return None

    def _skip(self, text: str, position: int) -> int:
        return _past(self._ignored, text, position)
