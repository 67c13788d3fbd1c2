"""A line-level reader for questions that need only names, shapes and opcodes (opcode histograms,
instruction counts, which computations an instruction calls).

XLA prints one instruction per line, so one regex match per line answers these questions several
times faster than the grammar builds the model. The grammar stays the definition of HLO text:
`scan` returns None for any text it is not sure about (a line inside a computation that is not
of the plain `[ROOT] name = shape opcode(...)` form, a computation that does not close), and the
caller then parses with the grammar. `tests/test_fastpath.py` proves that where `scan` answers,
its answer is the grammar's, on every fixture file and every module of the corpus.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import NamedTuple

from xlainspect.errors import HloParseError
from xlainspect.hlo.attributes import CALLED_COMPUTATION_ATTRIBUTES, called_computation_names, unquote
from xlainspect.hlo.fast import FRAME_TABLES, plain_operand_list
from xlainspect.hlo.model import StackFrame
from xlainspect.hlo.parser import decode_shape, parse_stack_frames, terminal, terminals
from xlainspect.hlo.shape import array_shape


class _Patterns(NamedTuple):
    computation: re.Pattern[str]
    """`[ENTRY] %name (params) -> shape {` at column 0 (header-less and short text: `name {`)."""
    instruction: re.Pattern[str]
    """`  [ROOT] %name = shape opcode(operands)`: the shape an array token or a parenthesised tuple, the
    operands as printed (a constant's literal is not read): a line with an operand written as an
    instruction does not match."""
    calls: re.Pattern[str]
    """`calls=%a`, `to_apply=%b`, `branch_computations={%c, %d}`: attributes naming computations."""
    unsure: tuple[re.Pattern[str], ...]
    """Lines that would make a line-level reading unsure: comments, and `calls=%a, %b` (a list
    continued after a comma). Each pattern starts with a literal, so searching the whole text with
    each alone is fast (the regex engine skips to the literal); as one alternation it is 10x slower."""
    calls_in_string: re.Pattern[str]
    """A string holding `calls=`-like text: unsure only on a line where `calls` found something."""


@functools.cache
def _patterns() -> _Patterns:
    """The line regexes, made of the grammar's terminals (NAME, ARRAY_SHAPE, ROOT, ENTRY)."""
    name, shape = f"(?:{terminal('NAME')})", f"(?:{terminal('ARRAY_SHAPE')})"
    called = "|".join(CALLED_COMPUTATION_ATTRIBUTES)
    return _Patterns(
        computation=re.compile(rf"(?:({terminal('ENTRY')})\s+)?({name})\b[^\n]*\{{\s*$"),
        instruction=re.compile(
            rf"\s+(?:({terminal('ROOT')})\s+)?({name}) = ({shape}|\([^\n]*?\)) ({name})\("
            rf"(?:(?<= constant\()|[ \t]*{plain_operand_list(terminals())}[ \t]*\))"
        ),
        calls=re.compile(rf", ({called})=(\{{[^{{}}\"]*\}}|{name})"),
        unsure=(re.compile(r"/\*(?!index=)"), re.compile("//"), re.compile(rf"={name}, %")),
        calls_in_string=re.compile(rf"\"[^\"\n]*(?:{called})="),
    )


#: Lines at column 0 outside computations: the header and the stack-frame table names.
_OUTSIDE_COMPUTATIONS = ("HloModule ", *FRAME_TABLES)


class InstructionLine(NamedTuple):
    """What one instruction line says without the grammar: enough for histograms and call graphs.

    A NamedTuple: a big module has 300,000 of these, and a frozen dataclass costs 4x more to build.
    """

    computation: str
    name: str
    opcode: str
    shape: str
    """The shape as printed (decode with `xlainspect.hlo.shape.array_shape` if needed)."""
    is_root: bool
    line: int
    called: tuple[str, ...]
    """Computations named by calls=, to_apply=, body=, ... in that attribute order."""


def scan(text: str) -> list[InstructionLine] | None:
    """Every instruction of every computation in `text` (one module), or None when a line is not plain."""
    if text.count("HloModule ") > 1:
        return None
    result: list[InstructionLine] = []
    computation: str | None = None
    patterns = _patterns()
    check_lines = any(p.search(text) for p in patterns.unsure)  # per line only when the text has any
    for number, line in enumerate(text.split("\n"), start=1):
        if computation is None:
            if not line.strip() or line.startswith(_OUTSIDE_COMPUTATIONS) or line[0].isdigit():
                continue  # header, stack-frame tables and their entries, blank lines
            match = patterns.computation.match(line)
            if match is None:
                return None
            computation = match.group(2).lstrip("%")
        elif line.startswith("}"):
            computation = None
        else:
            match = patterns.instruction.match(line)
            if match is None or check_lines and any(p.search(line) for p in patterns.unsure):
                return None
            root, name, shape, opcode = match.groups()
            if not _valid_shape(shape):
                return None
            called = _called(patterns.calls, line, match.end())
            if called and patterns.calls_in_string.search(line):
                return None
            result.append(
                InstructionLine(computation, name.lstrip("%"), opcode, shape, root is not None, number, called)
            )
    return result if computation is None else None


@functools.lru_cache(maxsize=16384)
def _valid_shape(text: str) -> bool:
    """Whether the grammar accepts the shape (memoised per distinct string): an array shape is one
    ARRAY_SHAPE token, decoded without Lark; a tuple goes through the grammar."""
    try:
        if text.startswith("("):
            decode_shape(text)
        else:
            array_shape(text)
    except HloParseError:
        return False
    return True


def _called(calls: re.Pattern[str], line: str, start: int) -> tuple[str, ...]:
    found = calls.findall(line, start)
    if not found:
        return ()
    if len(found) == 1:  # the common case (fusion calls=, reduce to_apply=): no ordering to do
        return tuple(n.strip().lstrip("%") for n in found[0][1].strip("{}").split(",") if n.strip())
    return called_computation_names(dict(found))


class _TextPatterns(NamedTuple):
    head_end: re.Pattern[str]
    """The first line at column 0 that is no header, frame-table name or entry, or blank: where the
    module's first computation starts."""
    opcode: re.Pattern[str]
    """`[ROOT] name = [shape] opcode(`: the opcode of an instruction line (the first word after the `=`
    that a `(` follows; a shape has no such word)."""
    op_name: re.Pattern[str]
    frame_id: re.Pattern[str]


@functools.cache
def _text_patterns() -> _TextPatterns:
    """Regexes for questions asked of a whole text in one pass, made of the grammar's terminals (NAME,
    INT, STRING, ROOT); `tests/test_differential.py` proves their answers are the grammar's."""
    name, integer, string = (f"(?:{terminal(t)})" for t in ("NAME", "INT", "STRING"))
    outside = "|".join(re.escape(word) for word in _OUTSIDE_COMPUTATIONS)
    return _TextPatterns(
        head_end=re.compile(rf"^(?!{outside}|{integer}|[ \t\r]*$)", re.M),
        opcode=re.compile(rf"^[ \t]*(?:{terminal('ROOT')}[ \t]+)?{name}[ \t]*=[ \t]*(?:[^\n]*?[ \t])?({name})\(", re.M),
        op_name=re.compile(rf"\bop_name=({string})"),
        frame_id=re.compile(rf"\bstack_frame_id=({integer})"),
    )


def module_head(text: str) -> str:
    """The text before the module's first computation: its header and stack-frame tables."""
    found = _text_patterns().head_end.search(text)
    return text if found is None else text[: found.start()]


def stack_frames(text: str) -> dict[int, StackFrame]:
    """The module's stack frames (jax 0.4.36+ prints them as four tables after the header), read from
    its head alone; empty without them. Raises HloParseError where the tables do not parse."""
    return parse_stack_frames(module_head(text))


def opcodes(text: str) -> list[str]:
    """The opcode of every instruction line, in printed order, without building a model: a histogram
    of a program one regex pass reads (a storm of 1,000 programs is read fast). The grammar's answer
    wherever `scan` reads the text (XLA prints no comments and no instructions written as operands)."""
    return _text_patterns().opcode.findall(text)


def entry_opcodes(text: str) -> list[str] | None:
    """The opcodes of the ENTRY computation's lines (XLA prints it last: every line from `ENTRY` on); None
    when the text has no ENTRY computation."""
    at = text.find("\nENTRY ")
    return opcodes(text[at:]) if at >= 0 else None


def has_call(text: str) -> bool:
    """Whether any instruction is a `call` (` call(`: XLA prints the opcode after the shape and a space),
    read as a substring: the check that spares a text without calls the per-computation count."""
    return " call(" in text


def calls_custom_call_target(text: str, target: str) -> bool:
    """Whether a custom-call of `target` is in the text (`custom_call_target="<target>"` as XLA prints it:
    hlo_instruction.cc quotes the target with CEscape; a target with characters to escape is not found)."""
    return f'custom_call_target="{target}"' in text


def op_names(text: str) -> list[str]:
    """Every `op_name` of the instructions' metadata, in printed order."""
    return [unquote(value) for value in _text_patterns().op_name.findall(text)]


def stack_frame_ids(text: str) -> Iterator[int]:
    """The `stack_frame_id` of every instruction's metadata, in printed order, read lazily (a caller
    may stop at the second distinct one without reading a big module to its end)."""
    return (int(match.group(1)) for match in _text_patterns().frame_id.finditer(text))


_TABLES = tuple(name.encode() for name in FRAME_TABLES)


def program_lines(text: bytes) -> list[bytes]:
    """The lines of HLO text without what says where the program came from: the stack-frame tables (a
    table's name line, then `<id> ...` lines) and each instruction's `, metadata={...}` (up to its
    closing brace, quoted strings skipped). Hosts that compiled one program print these lines alike
    (`analysis.divergence` compares them); the grammar reads them to the same model, metadata and frames
    aside (`tests/test_fastpath.py`)."""
    return list(_without_metadata(text.splitlines()))


def canonical_names(lines: list[bytes]) -> list[bytes]:
    """`program_lines` of one module with each instruction and computation name written as its place
    among the module's names (`%constant.10` -> `%3`, the fourth name it writes): XLA numbers names per
    module (`NameUniquer`, hlo_module.cc), so one program lowered where other instructions were made
    first, or on another platform, prints other numbers. Two programs whose canonical lines are equal
    are equal up to a one-to-one renaming; where they differ, the first differing line is a real
    difference, not a renumbered name. A name is a `%name` token, or in text printed without `%` (the
    short form) a token that names an instruction or computation of the module, not followed by `(`,
    `[` or `=` (an opcode, a shape, an attribute); quoted strings are kept as written."""
    defined = {match[1] for line in lines if (match := _DEFINITION.match(line))}
    ids: dict[bytes, bytes] = {}

    def canonical(token: re.Match[bytes]) -> bytes:
        percent, name, after = token[1], token[2], token[3]
        if name is None or not (percent or (name in defined and after not in (b"(", b"[", b"="))):
            return token[0]
        return ids.setdefault(name, b"%" + str(len(ids)).encode())

    return [_TOKEN.sub(canonical, line) for line in lines]


_DEFINITION = re.compile(rb"\s*(?:ROOT\s+|ENTRY\s+)?%?([A-Za-z_][\w.\-]*)\s*(?:=\s|\(|\{)")
"""A line defining a name: `  [ROOT] name = ...` or a computation's `[ENTRY] name (...) -> ... {`."""
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|(%?)([A-Za-z_][\w.\-]*)(?=(.?))')
"""A quoted string (group 2 None: kept), or a name-like token, `%` before it and (not consumed) the
character after it."""


_METADATA = b", metadata={"


def _without_metadata(lines: list[bytes]) -> Iterator[bytes]:
    in_table = False
    for line in lines:
        if line in _TABLES:
            in_table = True
            continue
        if in_table and line[:1].isdigit():
            continue
        in_table = False
        start = line.find(_METADATA)
        yield line if start < 0 else line[:start] + line[_closing(line, start + len(_METADATA)) + 1 :]


def _closing(line: bytes, at: int) -> int:
    """The index of the brace closing the one opened before `at` (quoted strings, with their escapes,
    may hold braces); the line's end when it never closes."""
    depth, quoted, escaped = 1, False, False
    for index in range(at, len(line)):
        char = line[index]
        if quoted:
            escaped, quoted = (False, True) if escaped else (char == 0x5C, char != 0x22)
        elif char == 0x22:
            quoted = True
        elif char == 0x7B:
            depth += 1
        elif char == 0x7D:
            depth -= 1
            if depth == 0:
                return index
    return len(line)
