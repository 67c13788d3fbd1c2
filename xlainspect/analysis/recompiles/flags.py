"""Causes in the compiler flags: the non-default debug options XLA writes next to every module."""

from __future__ import annotations

from xlainspect.analysis.recompiles.model import Cause, Compiles, file_bytes
from xlainspect.dump.textproto import fields

_NOT_FLAGS = ("xla_dump_", "xla_detailed_logging")
"""Options no user set: the dump's own, and the detailed logging jax turns off per module under
`jax_compiler_detailed_logging_min_ops` (10) MLIR operations."""


def flags(compiles: Compiles) -> list[Cause]:
    """Detector over every compile (one value each): debug options that differ between compiles."""
    texts = [file_bytes(compiles, m, m.file("debug_options", stage=None)) for m in compiles.modules]
    if any(t is None for t in texts) or len(set(texts)) == 1:  # the common case: one text, nothing to parse
        return []
    decoded = {text: _debug_options(text) for text in set(texts) if text is not None}
    options = [decoded[t] for t in texts if t is not None]
    if len({frozenset(o.items()) for o in options}) == 1:
        return []
    keys = sorted({k for o in options for k, v in o.items() if any(other.get(k) != v for other in options)})
    return [
        Cause(
            "flags",
            None,
            None,
            tuple(tuple((k, o.get(k)) for k in keys) for o in options),
        )
    ]


def _debug_options(text: bytes) -> dict[str, str]:
    """`key: value` lines of a debug_options file, without the dump's own flags (xla_dump_*)."""
    found = fields(text.decode("utf-8", errors="replace"))
    return {name: value for name, value in found.items() if not name.startswith(_NOT_FLAGS)}
