"""Reading dump files: plain or gzip-compressed text, with errors that name the file."""

from __future__ import annotations

import gzip
from pathlib import Path

from xlainspect.errors import DumpError


def read_text(path: Path | str) -> str:
    """The text of an HLO file (`.gz` is decompressed); DumpError when missing, binary or unreadable."""
    path = Path(path)
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except FileNotFoundError:
        raise DumpError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DumpError(f"{path}: is a directory, expected an HLO text file") from None
    except PermissionError:
        raise DumpError(f"{path}: permission denied") from None
    except (OSError, EOFError) as error:
        raise DumpError(f"{path}: cannot read ({error})") from None
    if b"\x00" in data[:8192]:
        raise DumpError(f"{path}: binary file, not HLO text (a .pb proto dump?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DumpError(f"{path}: not UTF-8 text (byte {error.start}: {data[error.start:error.start + 1]!r})") from None
