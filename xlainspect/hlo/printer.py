"""print_hlo: the model -> HLO text that XLA's parser reads (xla/hlo/parser/hlo_parser.cc) and that
`parse_hlo` reads back to an equal model.

The text is written as HloModule::ToString prints it: the header with its attributes, the
stack-frame tables, then each computation (`%` names and the program signature in long text, bare
names in short text, as the computation was read), one instruction a line. Attribute values are the
text XLA printed, kept raw by the model, so they come out as they went in. What the model does not
keep is not printed: comments, operand shapes (XLA's parser does not need them), the `b(...)` around
a buffer shape, a stack frame's end line and end column (the column and line stand in for them:
XLA's parser requires both fields). An operand that was written as an instruction is an instruction
of its computation, printed on its own line under the name the parser gave it.
"""

from __future__ import annotations

import functools

from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame
from xlainspect.hlo.shape import Shape


def print_hlo(module: Module) -> str:
    """The module as HLO text; header-less text for a module read without a header."""
    parts = [f"HloModule {module.name}{_attributes(module.attributes)}\n"] if module.has_header else []
    if module.stack_frames:
        parts.append(_stack_frame_tables(module.stack_frames))
    parts.extend(_computation(c) for c in module.computations)
    return "\n".join(parts)


def _computation(computation: Computation) -> str:
    long_text = computation.parameter_shapes is not None
    head = f"%{computation.name}" if long_text else computation.name
    if long_text:
        params = ", ".join(f"{name}: {shape}" for name, shape in computation.parameter_shapes)
        head += f" ({params}) -> {computation.result_shape}"
    lines = [("ENTRY " if computation.is_entry else "") + head + " {"]
    lines.extend(_instruction(i, "%" if long_text else "") for i in computation.instructions)
    lines.append("}" + _attributes(computation.attributes))
    return "\n".join(lines) + "\n"


def _instruction(instruction: Instruction, sigil: str) -> str:
    """`  [ROOT] %name = shape opcode(operands), key=value, ...`"""
    if instruction.opcode == "constant":
        operands = instruction.operands[0] if instruction.operands else ""
    else:
        operands = ", ".join(
            _operand(name, instruction.operand_shape_index(k), sigil) for k, name in enumerate(instruction.operands)
        )
    shape = _shape_text(instruction.shape) + " " if instruction.shape is not None else ""
    root = "ROOT " if instruction.is_root else ""
    body = f"{root}{sigil}{instruction.name} = {shape}{instruction.opcode}({operands})"
    return "  " + body + _attributes(instruction.attributes)


@functools.lru_cache(maxsize=16384)
def _shape_text(shape: Shape) -> str:
    """A shape's text, once per distinct shape: a module repeats a few hundred shapes."""
    return str(shape)


def _operand(name: str, shape_index: tuple[int, ...], sigil: str) -> str:
    """`%a`, `%p0#1#0` (a compact get-tuple-element operand), or a number (`parameter(0)`)."""
    if name.lstrip("-").isdigit():
        return name
    return sigil + name + "".join(f"#{i}" for i in shape_index)


def _attributes(attributes: dict[str, str]) -> str:
    return "".join(f", {key}={value}" for key, value in attributes.items())


def _stack_frame_tables(frames: dict[int, StackFrame]) -> str:
    """The four tables after the header (ParseStackFrameIndex), built from the resolved frames: each
    file, function and location once, in the order the frames first name them; the frames under
    their own ids, which `stack_frame_id=` in metadata names."""
    files: dict[str, int] = {}
    functions: dict[str, int] = {}
    locations: dict[tuple[int, int, int, int], int] = {}
    frame_lines = []
    for frame_id in sorted(frames):
        frame = frames[frame_id]
        file = files.setdefault(frame.file, len(files) + 1)
        function = functions.setdefault(frame.function, len(functions) + 1)
        location = locations.setdefault((file, function, frame.line, frame.column), len(locations) + 1)
        frame_lines.append(f"{frame_id} {{file_location_id={location} parent_frame_id={frame.parent}}}")
    location_lines = [
        f"{n} {{file_name_id={file} function_name_id={function} line={line} end_line={line} "
        f"column={column} end_column={column}}}"
        for (file, function, line, column), n in locations.items()
    ]
    tables = (
        ("FileNames", [f"{n} {_quote(name)}" for name, n in files.items()]),
        ("FunctionNames", [f"{n} {_quote(name)}" for name, n in functions.items()]),
        ("FileLocations", location_lines),
        ("StackFrames", frame_lines),
    )
    return "\n".join(name + "\n" + "".join(line + "\n" for line in lines) for name, lines in tables)


def _quote(text: str) -> str:
    """A string as XLA prints one (absl::CEscape in quotes); `attributes.unquote` reads it back."""
    escaped = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in _ESCAPES:
            escaped.append(_ESCAPES[char])
        elif 0x20 <= byte < 0x7F:
            escaped.append(char)
        else:
            escaped.append(f"\\{byte:03o}")
    return '"' + "".join(escaped) + '"'


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}
