"""The checks an HLO file passes on its first line and last bytes: a header to parse, and an end that
closes a computation (a killed job, or a compile still being written, leaves a file that does not)."""

from __future__ import annotations

from pathlib import Path

from xlainspect.dump.files import decode_text, read_first_line_and_tail
from xlainspect.errors import DumpError

TAIL_BYTES = 512
"""Bytes read from the end of an HLO file: enough to see whether its last line closes a computation."""


def header_line(path: Path | str) -> str:
    """The first line of an HLO text file (the `HloModule` header), read with the file's last bytes
    only: a file whose last line does not close a computation (a killed job, a compile still being
    written) is a DumpError, caught without reading the body."""
    return checked_header_line(path, *read_first_line_and_tail(path, TAIL_BYTES))


def checked_header_line(path: Path | str, first: bytes, tail: bytes) -> str:
    """`header_line` of a file's first line and last bytes, read already. A first line that is no
    `HloModule` header is returned unchecked: the file is not HLO text (not a truncated one), and
    parsing the line says so with its place (`path:1:col`)."""
    if not first.strip():
        raise DumpError(f"{path}: empty file")
    line = decode_text(first, path).rstrip("\r\n")
    if not line.lstrip().startswith("HloModule"):
        return line
    *_, before_last, last = [b"", *tail.rstrip().rsplit(b"\n", 2)]
    if before_last.lstrip().startswith(b"HloModule"):
        raise DumpError(f"{path}: no computation after the HloModule line (a damaged or foreign file)")
    if not closes_computation(last):
        shown = last.strip().decode("utf-8", errors="replace")[:80]
        raise DumpError(
            f"{path}: truncated: the file ends inside a computation (last line {shown!r}); "
            "the compile was killed or is still being written"
        )
    return line


def last_line(tail: bytes) -> bytes:
    """The last non-blank line of a file's last bytes (b"" where they are blank)."""
    return tail.rstrip().rsplit(b"\n", 1)[-1]


def closes_computation(last_line: bytes) -> bool:
    """Whether an HLO file's last non-blank line ends a computation (`}`), as every complete file's does."""
    return last_line.strip().startswith(b"}")
