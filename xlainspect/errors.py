"""Errors the user can act on: every one names the place (path, line, column) it comes from.

Only stdlib here, so the model and the layout decoder can raise them without pulling in lark.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from os import PathLike


class XlaInspectError(Exception):
    """Base of every error that is the input's fault, not the program's (CLI exit code 2)."""


def one_line(error: BaseException) -> str:
    """An exception's message on one line, at most 200 characters, without a library's traceback-like
    detail: what an error about a remote store or a cluster quotes of the library's."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


class AnalysisBug(Exception):
    """Any other exception met while reading or analysing `path`: a bug in xlainspect, never a skipped
    file (CLI exit code 3). The exception itself is the `__cause__`."""

    def __init__(self, path: str | PathLike[str], error: BaseException) -> None:
        super().__init__(f"{path}: {type(error).__name__}: {error}")
        self.path = str(path)
        self.error = error


@dataclass
class HloParseError(XlaInspectError):
    """HLO text (or a shape, or a layout) that does not follow XLA's syntax.

    A plain dataclass (not frozen) because the interpreter assigns `__traceback__` on exceptions.
    """

    message: str
    path: str | None = None
    line: int = 1
    """1-based line in the original file."""
    column: int = 1
    """1-based column in the original file."""
    source_line: str = ""
    expected: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def render(self) -> str:
        """Compiler-style text: `path:line:col: message`, the source line, and a caret under the column."""
        where = f"{self.path or '<string>'}:{self.line}:{self.column}"
        lines = [f"{where}: {self.message}"]
        if self.source_line:
            shown = self.source_line.rstrip("\n")
            caret_at = self.column - 1
            if len(shown) > 160:  # very long HLO lines: show a window around the column
                start = max(0, caret_at - 80)
                shown, caret_at = (
                    ("..." if start else "") + shown[start : start + 160],
                    caret_at - start + (3 if start else 0),
                )
            lines += [shown, " " * caret_at + "^"]
        if self.expected:
            lines.append("expected one of: " + ", ".join(self.expected[:10]))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def error_at(
    text: str, offset: int, message: str, path: str | None = None, expected: tuple[str, ...] = ()
) -> HloParseError:
    """An HloParseError for a character offset into `text`, with its line, column and source line."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    source_line = text[line_start : line_end if line_end >= 0 else len(text)]
    return HloParseError(
        message=message,
        path=path,
        line=text.count("\n", 0, offset) + 1,
        column=offset - line_start + 1,
        source_line=source_line,
        expected=expected,
    )


class DumpError(XlaInspectError):
    """A path that cannot be analysed: missing, unreadable, or holding no XLA dump files."""


class UsageError(XlaInspectError):
    """A command asked for something no input can give (a chip the dump does not name): an error of the
    whole command, never a file to skip and go on.

    Its message names the library's arguments as `$name` (`$peak_flops`): `str()` writes the argument,
    the CLI the option that sets it (`--peak-flops`, `worded`), so the analyses name no CLI option. A
    value written into the message goes through `literal` (a `$` in it stays a `$`)."""

    def __init__(self, message: str) -> None:
        self.template = message
        super().__init__(self.worded(lambda argument: argument))

    def worded(self, option_of: Callable[[str], str]) -> str:
        """The message, each `$argument` written as `option_of(argument)`."""
        return _ARGUMENT.sub(lambda m: "$" if m.group(1) == "$" else option_of(m.group(1)), self.template)

    def __reduce__(self) -> tuple[type[UsageError], tuple[str]]:
        return type(self), (self.template,)


_ARGUMENT = re.compile(r"\$(\$|[a-z][a-z_]*)")


def literal(value: object) -> str:
    """A value as a `UsageError` message shows it, whatever `$` it holds."""
    return str(value).replace("$", "$$")


class NoMatchError(UsageError):
    """A filter or budget (`--function`, `--module-re`, `--max NAME=N`) that names nothing in the dump.

    A usage error (exit 2) rather than an empty table: a misspelt name would otherwise pass a gate or
    print nothing and exit 0, which reads as "nothing to see"."""


def no_match(argument: str, value: str, candidates: list[str], what: str = "function") -> NoMatchError:
    """`$function train_step: no function of that name; did you mean jit_train_step?` — names that
    contain the value first (jax prefixes `jit_`), then difflib's close matches."""
    import difflib

    names = sorted(set(candidates))
    near = [n for n in names if value.lower() in n.lower()]
    near += [n for n in difflib.get_close_matches(value, names, n=3, cutoff=0.6) if n not in near]
    hint = f"; did you mean {' or '.join(near[:3])}?" if near else f"; the dump has {_some(names)}"
    return NoMatchError(f"${argument} " + literal(f"{value}: no {what} of that name{hint}"))


def _some(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return (", ".join(names[:shown]) + more) if names else "none"
