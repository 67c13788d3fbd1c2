"""Command buffers: the kernels a CUDA graph ran, each placed on the HLO op that launched it."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from xlainspect.analysis.profile.events import dump_label, event_label, op_name, traced_modules
from xlainspect.analysis.profile.model import NotPlaced, Unplaced
from xlainspect.analysis.profile.ops import OpEvents
from xlainspect.analysis.runner import analyse_each
from xlainspect.dump.directory import Dump
from xlainspect.dump.events import Codes, Events, StatValue, TraceEvent
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.thunks import KERNEL_KINDS, Thunk, ThunkSequence, read_thunk_sequence, thunk_files

COMMAND_BUFFER = "command_buffer_"
_CONTROL_KINDS = frozenset(
    {"kWhile", "kConditional", "kSequential", "kAsyncStart", "kAsyncDone", "kDynamicSliceFusion", "kWaitForStreams"}
)
"""Thunks that launch nothing of their own (`xla/backends/gpu/runtime/thunk.h`)."""


def thunk_sequences(dump: Dump, labels: set[str], skipped: list[SkippedFile]) -> dict[str, ThunkSequence]:
    """The thunk sequence of each traced module the dump has, by the per-module runner (answered from
    the results cache while its files are unchanged); unreadable files are added to `skipped`."""
    files: dict[DumpModule, tuple[str, str | None]] = {}
    for module in traced_modules(dump, labels):
        sequence, metadata = thunk_files(module)
        if sequence is not None:
            files[module] = (sequence, metadata)
    found = analyse_each(
        list(files),
        lambda module: read_thunk_sequence(*files[module]),
        inputs=lambda module: [Path(f) for f in files[module] if f is not None],
        key=lambda _: "thunk-sequence",
        blame=lambda module: Path(files[module][0]),
        advance=lambda _: None,
        only_input=False,  # the trace was read: kernels of unreadable sequences stay unplaced
    )
    skipped += found.skipped
    return {dump_label(module): sequence for module, sequence in zip(found.modules, found.results)}


def place(
    events: Events, ops: OpEvents, sequences: dict[str, ThunkSequence], with_dump: bool
) -> tuple[Codes, list[Unplaced]]:
    """The HLO op each op event ran for (a code of the events' strings; -1: not placed), and the unplaced
    kernels with the reason. Only a command buffer's kernels need placing: they become objects here."""
    placed = ops.annotated.copy()
    buffers = np.array([ops.text(c).startswith(COMMAND_BUFFER) for c in range(len(ops.strings))], np.bool_)
    launched = np.flatnonzero(buffers[ops.annotated]) if len(ops) else np.zeros(0, np.int64)
    at = {row: k for k, row in enumerate(ops.rows[launched].tolist())}
    launches: dict[tuple[str, str, str, StatValue], list[TraceEvent]] = defaultdict(list)
    for event in events.select(ops.rows[launched]):
        launches[(event_label(event), op_name(event), event.plane, event.stats.get("correlation_id"))].append(event)
    failed: dict[tuple[str, str, str, NotPlaced | None], list[TraceEvent]] = defaultdict(list)
    for (label, buffer, _, _), launch in launches.items():
        launch.sort(key=lambda e: (e.stats.get("cuda_graph_node_id", 0), e.start_ns))
        sequence = sequences.get(label)
        commands = sequence.command_buffers.get(buffer) if sequence is not None else None
        if commands is None:
            reason = NotPlaced(
                "no_dump" if not with_dump else "no_sequence" if sequence is None else "not_a_command_buffer"
            )
            for event in launch:
                placed[launched[at[event.row]]] = -1
                failed[(label, buffer, event.name, reason)].append(event)
            continue
        for event, op, reason in place_launch(launch, commands, buffer):
            placed[launched[at[event.row]]] = events.intern(op) if op is not None else -1
            if op is None:
                failed[(label, buffer, event.name, reason)].append(event)
    unplaced = [
        Unplaced(label, buffer, kernel, len(found), sum(e.duration_ns for e in found) / 1e9, reason)
        for (label, buffer, kernel, reason), found in failed.items()
    ]
    return placed, sorted(unplaced, key=lambda u: -u.seconds)


def place_launch(
    events: list[TraceEvent], commands: list[Thunk], buffer: str
) -> Iterator[tuple[TraceEvent, str | None, NotPlaced | None]]:
    """(event, op or None, reason) for one launch of a command buffer, its events in graph order.

    A kernel a kernel command names goes to the k-th command of that name at its k-th run. The others
    (copies, memsets, library kernels) go to the buffer's commands of their kind: the one there is, or
    in turn where their count is a multiple of the commands'; else to the one command of their kind
    between the commands of the named kernels around them in graph order."""
    at = _named_commands(events, commands)
    for event, command in zip(events, at):
        if command is not None:
            yield event, commands[command].op, None
    rest: dict[str, list[int]] = defaultdict(list)
    for position, event in enumerate(events):
        if at[position] is None:
            rest[_work_kind(event)].append(position)
    for kind, positions in rest.items():
        candidates = [c for c in commands if c.kernel is None and _command_kind(c) == kind]
        if len(candidates) == 1 or (candidates and len(positions) % len(candidates) == 0):
            for index, position in enumerate(positions):
                yield events[position], candidates[index % len(candidates)].op, None
            continue
        for position in positions:
            command = _between(at, position, commands, kind)
            reason = (
                NotPlaced("no_command", kind)
                if not candidates
                else NotPlaced("ambiguous", kind, len(positions), len(candidates))
            )
            yield events[position], command.op if command else None, None if command else reason


def _named_commands(events: list[TraceEvent], commands: list[Thunk]) -> list[int | None]:
    """The index of the command each event ran, where a kernel command names its kernel: the k-th run of
    a kernel is the k-th command of that name (in turn, when a loop in the graph runs them again)."""
    by_kernel: dict[str, list[int]] = defaultdict(list)
    for index, command in enumerate(commands):
        if command.kernel:
            by_kernel[command.kernel].append(index)
    seen: Counter[str] = Counter()
    at: list[int | None] = []
    for event in events:
        same = by_kernel.get(event.name)
        at.append(same[seen[event.name] % len(same)] if same else None)
        seen[event.name] += 1
    return at


def _between(at: list[int | None], position: int, commands: list[Thunk], kind: str) -> Thunk | None:
    """The one command of `kind` between the commands of the named kernels before and after `position`."""
    before = next((index for index in reversed(at[:position]) if index is not None), -1)
    after = next((index for index in at[position + 1 :] if index is not None), len(commands))
    if after <= before:  # the graph's loop started again: up to the end
        after = len(commands)
    found = [c for c in commands[before + 1 : after] if c.kernel is None and _command_kind(c) == kind]
    return found[0] if len(found) == 1 else None


def _work_kind(event: TraceEvent) -> str:
    """`copy`, `memset` or `library` for a kernel no kernel thunk names (the CUDA driver runs a small copy
    as a `memcpy32_post` kernel inside a graph; cuDNN and cuBLAS name their own kernels)."""
    name = event.name.lower()
    if "memcpy_details" in event.stats or name.startswith("memcpy"):
        return "copy"
    if "Memset_details" in event.stats or name.startswith("memset"):
        return "memset"
    return "library"


def _command_kind(command: Thunk) -> str | None:
    """What a command without a kernel of its own runs: None for control flow (nothing of its own)."""
    if command.kind in _CONTROL_KINDS or command.kind in KERNEL_KINDS:
        return None
    if "Copy" in command.kind or "Memcpy" in command.kind:
        return "copy"
    if "Memset" in command.kind or "Memzero" in command.kind:
        return "memset"
    return "library"
