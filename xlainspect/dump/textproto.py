"""Fields of the protobuf text files XLA and the TPU runtime write beside a dump (`debug_options`,
`gpu_target_config.pbtxt`, `target_arguments.txt`, `topology.textproto`, `tpu_comp_env.txt`): one
`name: value` per line, strings quoted (protobuf's text format). Only top-level scalars are asked for."""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=64)
def _field(name: str) -> re.Pattern[str]:
    return re.compile(rf"^\s*{re.escape(name)}:\s*\"?([^\"\n]*?)\"?\s*$", re.MULTILINE)


def text_field(texts: list[str], name: str) -> str | None:
    """The first `name: value` (quoted or not) of the first of `texts` that has one; None where none does."""
    pattern = _field(name)
    for text in texts:
        match = pattern.search(text)
        if match:
            return match.group(1)
    return None


def int_field(text: str, name: str) -> int | None:
    """The integer `name: N` of one text; None where it is absent or not an integer."""
    value = text_field([text], name)
    return int(value) if value is not None and value.removeprefix("-").isdecimal() else None


def fields(text: str) -> dict[str, str]:
    """Every `name: value` line of a text as printed (a string keeps its quotes), the last of a repeated
    name: what a `debug_options` file sets, to compare two compiles' options."""
    pairs = (line.partition(":") for line in text.splitlines() if ":" in line)
    return {name.strip(): value.strip() for name, _, value in pairs}
