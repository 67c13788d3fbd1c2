"""The thunk sequence XLA:GPU dumps beside each module: which kernels each HLO op launches, in order.

XLA:GPU (jax 0.11) writes, per module (`RunThunkPasses` in `xla/service/gpu/gpu_executable.cc`):

* `<module>.thunk_sequence.txt` and, where its thunk passes changed the sequence (the command-buffer
  conversion did), `<module>.thunk_sequence_after_thunk_passes.txt` (`root_thunk->ToString`):
  one line per thunk, `NNN: kKind [deps] rest`, nested by indentation (a while's `condition:` and
  `body:`, an async start's wrapped thunk, a `kCommandBuffer`'s commands). A kernel thunk
  (`kCustomKernel`, `kKernel`) names its kernel first in `rest` (`loop_add_fusion_1 grid: [...]`); a
  command buffer has no id of its own (`000`).
* `<module>.thunk_metadata.txt` (`GetMetadataListProtoFromThunkGraph` of the sequence after the passes):
  a text proto of `thunk_metadata { thunk_info { profile_annotation thunk_id } thunk_kind }`, in the
  same order: the HLO op each thunk id runs (`profile_annotation` is
  the name `hlo_op` carries in a profile) and, for each command buffer, its annotation
  (`command_buffer_N`), the `hlo_op` its kernels carry in a profile when they run as a CUDA graph.

A command buffer's commands are the thunks nested under it, in execution order; the k-th
`kCommandBuffer` line is the k-th `kCommandBuffer` entry of the metadata (both list thunks in
pre-order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xlainspect.dump.files import read_text
from xlainspect.dump.module import DumpModule

_LINE = re.compile(r"^(?P<indent> *)(?P<id>\d+): (?P<kind>k\w+)\s*\[[^\]]*\]\s*(?P<rest>.*)$")
_ENTRY = re.compile(r"thunk_metadata \{(?P<body>.*?)thunk_kind: \"(?P<kind>\w+)\"\s*\}", re.S)
_ANNOTATION = re.compile(r'profile_annotation: "(?P<op>[^"]*)"')
_THUNK_ID = re.compile(r"thunk_id: (?P<id>\d+)")
KERNEL_KINDS = frozenset({"kCustomKernel", "kKernel"})
"""Thunks that launch one kernel of their own, named on their line (`xla/backends/gpu/runtime/thunk.h`)."""


@dataclass(frozen=True, slots=True)
class Thunk:
    """One thunk of a module's sequence."""

    id: int
    kind: str
    """`kCustomKernel`, `kCopy`, `kConvolution`, `kWhile`... (XLA's Thunk::Kind)."""
    kernel: str | None
    """The kernel a kernel thunk launches (`loop_add_fusion_1`), the name its profile events carry."""
    op: str | None
    """The HLO instruction it runs (`loop_add_fusion.1`), from the thunk metadata."""


@dataclass
class ThunkSequence:
    """A module's thunks in execution order, and the commands of each command buffer."""

    thunks: list[Thunk]
    command_buffers: dict[str, list[Thunk]] = field(default_factory=dict[str, list[Thunk]])
    """`command_buffer_N` -> its commands (nested ones included), in order."""


def thunk_files(module: DumpModule) -> tuple[str | None, str | None]:
    """The module's thunk sequence (after thunk passes, where written) and thunk metadata files."""
    by_suffix: dict[str, str] = {}
    for file in module.files:
        for suffix in (".thunk_sequence_after_thunk_passes.txt", ".thunk_sequence.txt", ".thunk_metadata.txt"):
            if file.location.endswith(suffix):
                by_suffix[suffix] = file.location
    sequence = by_suffix.get(".thunk_sequence_after_thunk_passes.txt") or by_suffix.get(".thunk_sequence.txt")
    return sequence, by_suffix.get(".thunk_metadata.txt")


def read_thunk_sequence(sequence_path: str, metadata_path: str | None) -> ThunkSequence:
    """A module's thunks from its dump files; DumpError when a file cannot be read."""
    entries = _metadata(read_text(metadata_path)) if metadata_path else []
    ops = {thunk_id: op for _, thunk_id, op in entries if thunk_id is not None}
    buffer_names = iter([op for kind, _, op in entries if kind == "kCommandBuffer"])
    thunks: list[Thunk] = []
    open_buffers: list[tuple[int, list[Thunk]]] = []  # (indent, commands) of the buffers the line is in
    parents: list[tuple[int, str | None]] = []  # (indent, op) of the thunks the line is nested in
    buffers: dict[str, list[Thunk]] = {}
    for line in read_text(sequence_path).splitlines():
        match = _LINE.match(line)
        if match is None:  # `condition:`, `body:`
            continue
        indent, kind = len(match["indent"]), match["kind"]
        while open_buffers and indent <= open_buffers[-1][0]:
            open_buffers.pop()
        while parents and indent <= parents[-1][0]:
            parents.pop()
        if kind == "kCommandBuffer":
            commands: list[Thunk] = []
            buffers[next(buffer_names, None) or f"command_buffer#{len(buffers)}"] = commands
            open_buffers.append((indent, commands))
            continue
        thunk_id = int(match["id"])
        kernel = match["rest"].split(" ", 1)[0] if kind in KERNEL_KINDS else None
        # a thunk nested in another (the copy of a dynamic-slice fusion) runs its parent's op
        op = ops.get(thunk_id) or next((o for _, o in reversed(parents) if o), None)
        thunk = Thunk(thunk_id, kind, kernel or None, op)
        parents.append((indent, op))
        thunks.append(thunk)
        for _, commands in open_buffers:
            commands.append(thunk)
    return ThunkSequence(thunks, buffers)


def _metadata(text: str) -> list[tuple[str, int | None, str | None]]:
    """(thunk kind, thunk id, profile annotation) of each entry, in order."""
    entries: list[tuple[str, int | None, str | None]] = []
    for entry in _ENTRY.finditer(text):
        annotation, thunk_id = _ANNOTATION.search(entry["body"]), _THUNK_ID.search(entry["body"])
        entries.append(
            (entry["kind"], int(thunk_id["id"]) if thunk_id else None, annotation["op"] if annotation else None)
        )
    return entries
