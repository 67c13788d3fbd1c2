"""Reading dump files: plain or gzip-compressed text, with errors that name the file.

Files are read with bare `os` calls: a dump of thousands of compiles is thousands of small files,
and Python's buffered file objects cost more to set up than such a file costs to read.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
from pathlib import Path

from xlainspect.dump.storage import is_url, local
from xlainspect.errors import DumpError, HloParseError, XlaInspectError

_GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path | str) -> bytes:
    """A file's bytes, decompressed when it is gzip; DumpError when missing or unreadable."""
    try:
        fd = os.open(_on_disk(path), os.O_RDONLY)
        try:
            data = _read_to_end(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        return gzip.decompress(data) if data[:2] == _GZIP_MAGIC else data
    except (OSError, EOFError) as error:
        raise _read_error(path, error) from None


def _on_disk(path: Path | str) -> Path | str:
    """The local file to open for `path`: itself, or the mirror of the one object a URL names, fetched
    by this process (a cluster's worker reading its host's files of a dump only listed by the command,
    `scan.scan_listed`)."""
    return local(path) if is_url(path) else path


def read_text(path: Path | str) -> str:
    """The text of an HLO file (`.gz` is decompressed); DumpError when missing, binary or unreadable."""
    return decode_text(read_bytes(path), path)


def located(error: XlaInspectError) -> XlaInspectError:
    """An error an analysis raised at an instruction's line (`cannot count r (transpose)...`: the model
    keeps each instruction's line, not its text) with that line read back from the file, and the caret at
    the instruction's first character, as a parse error shows them; any other error as it is."""
    if not isinstance(error, HloParseError) or error.source_line or error.path is None or error.column != 1:
        return error
    try:
        lines = read_text(error.path).splitlines()
    except XlaInspectError:
        return error  # the file went away meanwhile: the message and its line number still say where
    if not 0 < error.line <= len(lines):
        return error
    line = lines[error.line - 1]
    return dataclasses.replace(error, source_line=line, column=len(line) - len(line.lstrip()) + 1)


def decode_text(data: bytes, path: Path | str) -> str:
    """Text from a file's first bytes or all of them: DumpError for a binary file (a NUL byte in its
    first 8 KB) or one that is not UTF-8."""
    if b"\x00" in data[:8192]:
        raise DumpError(f"{path}: binary file, not HLO text (a .pb proto dump?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DumpError(
            f"{path}: not UTF-8 text (byte {error.start}: {data[error.start : error.start + 1]!r})"
        ) from None


def read_first_line_and_tail(path: Path | str, tail_bytes: int) -> tuple[bytes, bytes]:
    """A file's first non-blank line (with its newline; XLA's parser skips leading blank lines too)
    and its last `tail_bytes` bytes, without reading what lies between; a gzip file is decompressed
    whole (its tail cannot be reached otherwise). Empty bytes for a file of blanks only."""
    return read_edges(path, tail_bytes)[:2]


def read_edges(path: Path | str, tail_bytes: int) -> tuple[bytes, bytes, bytes | None]:
    """`read_first_line_and_tail`, and the whole content (decompressed) when that was read anyway: a
    file of up to `_HEAD_BYTES` costs one read (most dumped modules are a few KB), a gzip file is read
    whole; None for a larger file."""
    try:
        fd = os.open(_on_disk(path), os.O_RDONLY)
        try:
            return _edges(fd, tail_bytes)
        finally:
            os.close(fd)
    except (OSError, EOFError) as error:
        raise _read_error(path, error) from None


def edges(data: bytes, tail_bytes: int) -> tuple[bytes, bytes]:
    """`read_first_line_and_tail` of content already read."""
    data = data.lstrip()
    return data[: data.find(b"\n") + 1 or len(data)], data[-tail_bytes:]


_HEAD_BYTES = 1 << 14


def _edges(fd: int, tail_bytes: int) -> tuple[bytes, bytes, bytes | None]:
    """`read_edges` of an open file."""
    head = os.read(fd, _HEAD_BYTES)
    size = os.fstat(fd).st_size
    if head[:2] == _GZIP_MAGIC:
        whole = gzip.decompress(head + _read_to_end(fd, max(0, size - len(head))))
        return *edges(whole, tail_bytes), whole
    start = len(head) - len(head.lstrip()) if head[:1].isspace() else 0  # no copy for a file starting with text
    if head.find(b"\n", start) < 0 and b"\x00" not in head:  # a header longer than the head (many parameters)
        head = bytearray(head)
        while b"\n" not in head[-(1 << 16) :] and len(head) < size:
            head += os.pread(fd, 1 << 16, len(head))
    first = bytes(head[start : head.find(b"\n", start) + 1 or len(head)])
    tail_start = max(start + len(first), size - tail_bytes)
    tail = bytes(head[tail_start:size]) if size <= len(head) else os.pread(fd, size - tail_start, tail_start)
    whole = bytes(head) if size == len(head) else None
    return first, first + tail if tail_start == start + len(first) else tail, whole  # a small file: all of it


def _read_to_end(fd: int, size: int) -> bytes:
    """The rest of an open file, `size` bytes expected: one read when that holds (then the file is
    whole as its size said), else reads until the end (a file that grew, or a short read)."""
    data = os.read(fd, size + 1)
    if len(data) == size:
        return data
    rest: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        rest.append(chunk)
    return data + b"".join(rest) if rest else data


def _read_error(path: Path | str, error: Exception) -> DumpError:
    if isinstance(error, FileNotFoundError):
        return DumpError(f"{path}: no such file")
    if isinstance(error, IsADirectoryError):
        return DumpError(f"{path}: is a directory, expected an HLO text file")
    if isinstance(error, PermissionError):
        return DumpError(f"{path}: permission denied")
    return DumpError(f"{path}: cannot read ({error})")
