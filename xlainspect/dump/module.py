"""One compile of a dump (`DumpModule`: the files sharing host, timestamp, module id and name), read
and parsed on demand, and a file a command left out (`SkippedFile`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.dump.files import decode_text, edges, located, read_bytes, read_edges
from xlainspect.dump.headers import TAIL_BYTES, checked_header_line
from xlainspect.dump.model_cache import parse_file
from xlainspect.dump.names import AFTER_RANK, AFTER_STAGES, STAGE_ORDER, DumpFile
from xlainspect.errors import DumpError, HloParseError, XlaInspectError
from xlainspect.hlo.model import Module
from xlainspect.hlo.parser import parse_header, parse_hlo, split_computations
from xlainspect.workers import OWNED


@dataclass(slots=True)
class SkippedFile:
    """A file a command left out, and why (never counted as zero)."""

    path: Path | str
    """The file; an fsspec URL where a cluster's worker read it from a bucket (`profile --scheduler`)."""
    reason: str

    @classmethod
    def of(cls, path: Path, error: XlaInspectError) -> SkippedFile:
        """The file and the error's message (a parse error with its source line and caret)."""
        error = located(error)
        return cls(path, error.render() if isinstance(error, HloParseError) else str(error))

    def add_to(self, skipped: list[SkippedFile]) -> None:
        """Append it to `skipped` unless its file is there: several routes of one analysis may meet one bad
        file (the first reason is kept)."""
        if all(s.path != self.path for s in skipped):
            skipped.append(self)


@dataclass(eq=False)
class DumpModule:
    """One compile: the files sharing host, timestamp, module id and name."""

    module_id: int | None
    name: str | None
    platform: str | None
    host: str
    files: list[DumpFile] = field(default_factory=list[DumpFile])
    timestamp: int | None = None
    _parsed: dict[str, Module] = field(default_factory=dict[str, Module], repr=False)
    _read: dict[str, bytes] = field(default_factory=dict[str, bytes], repr=False)
    """The contents of its files read so far, by location: a command that needs a file's header, text
    and bytes along several routes (count-recompiles' detectors) reads it once."""

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its parsed models and file contents: an answer that holds a dump (`report_of`'s)
        stays small in the command cache, and a model is parsed again, from the model cache, where one is
        needed."""
        return {**self.__dict__, "_parsed": {}, "_read": {}}

    @property
    def stages(self) -> list[str]:
        """HLO stages present, in compile order (before, passes by step, after)."""
        return sorted({f.stage for f in self.files if f.kind == "hlo" and f.stage}, key=STAGE_ORDER.index)

    @property
    def platform_tag(self) -> str | None:
        return next((f.platform_tag for f in self.files if f.platform_tag), None)

    def file(self, kind: str = "hlo", stage: str | None = "after") -> DumpFile | None:
        """The file of `kind` at `stage`; "after" is the best after-optimizations one, "before" the input,
        None a file of no stage (debug_options).

        Side files (buffer assignment, memory report) are written for after-optimizations HLO only.
        """
        if stage == "before":
            stage = "before_optimizations"
        if stage != "after":
            return next((f for f in self.files if f.kind == kind and f.stage == stage), None)
        best, best_rank = None, len(AFTER_STAGES)
        for candidate in self.files:  # one pass, no list: a fleet's doctor asks 500,000 times
            if candidate.kind == kind and AFTER_RANK.get(candidate.stage, best_rank) < best_rank:
                best, best_rank = candidate, AFTER_RANK[candidate.stage]
        if best is not None:
            return best
        passes = sorted((f for f in self.files if f.kind == kind and f.stage == "pass"), key=lambda f: f.step or 0)
        return passes[-1] if passes else None

    def hlo_file(self, stage: str = "after") -> DumpFile | None:
        """The HLO text at `stage`, falling back to before_optimizations (dumps made with a module filter)."""
        return self.file("hlo", stage) or self.file("hlo", "before")

    def hlo_path(self, stage: str = "after") -> Path:
        """The path of `hlo_file(stage)`: every module of a loaded dump has one; a module made without
        HLO text (by hand) is a DumpError naming it."""
        found = self.hlo_file(stage)
        if found is None:
            raise DumpError(f"{self.label}: no HLO text in the dump")
        return found.path

    def hlo_bytes(self) -> int:
        """Bytes of its HLO text (0 where it has none or it cannot be read): what analysing it costs
        grows with, so work shared among processes goes out largest first."""
        found = self.hlo_file()
        with contextlib.suppress(OSError):
            return 0 if found is None else os.stat(found.location).st_size
        return 0

    def read(self, dump_file: DumpFile, *, keep: bool = True) -> bytes:
        """The bytes of one of its files (decompressed), read once: kept for the next route that asks
        (`scoped_reads` drops them at the end of its block), unless `keep` is False (a caller that reads
        each file once and many of them); DumpError when the file is missing or unreadable."""
        data = self._read.get(dump_file.location)
        if data is None:
            data = read_bytes(dump_file.location)
            if keep:
                self._read[dump_file.location] = data
        return data

    def text(self, dump_file: DumpFile) -> str:
        """The text of one of its HLO files, read once; DumpError when unreadable, binary or not UTF-8."""
        return decode_text(self.read(dump_file), dump_file.location)

    def program_file(self) -> DumpFile | None:
        """The HLO jax gave XLA (before_optimizations, when dumped), else the compiled module's."""
        return self.file("hlo", "before") or self.hlo_file()

    def module(self, stage: str = "after") -> Module:
        """The parsed HLO module, kept (asked again, it is this one); raises HloParseError or DumpError
        for a bad file."""
        if stage not in self._parsed:
            self._parsed[stage] = self.parse(stage)
        return self._parsed[stage]

    def parse(self, stage: str = "after") -> Module:
        """The parsed HLO module (from the model cache while its file is unchanged), not kept by this
        module where it did not hold it already: a caller that visits every module of a big dump once
        holds one model at a time. Raises HloParseError or DumpError for a bad file."""
        if stage in self._parsed:
            return self._parsed[stage]
        dump_file = self.hlo_file(stage)
        if dump_file is None:
            raise DumpError(f"module {self.label}: no HLO text file at stage {stage!r}")
        known = self.text(dump_file) if dump_file.location in self._read else None
        modules = parse_file(dump_file.location, text=known)
        if not modules or not modules[0].computations:
            raise DumpError(f"{dump_file.path}: no computations (empty or truncated HLO file)")
        return modules[0]

    def signature(self, stage: str = "after") -> Module:
        """The header line and the ENTRY computation, parsed alone (cached): a signature and the entry
        parameters for a fraction of a big module's parse (its other computations are most of it). The
        whole module where this process parsed it already, or where that piece does not parse alone."""
        key = f"signature:{stage}"
        if stage in self._parsed or key in self._parsed:
            return self._parsed.get(stage) or self._parsed[key]
        dump_file = self.hlo_file(stage)
        text = self.text(dump_file) if dump_file is not None else ""
        header = text[: text.find("\n") + 1] if text.startswith("HloModule") else ""
        entry = next((p for p in split_computations(text) if p.startswith("ENTRY ") or "\nENTRY " in p), None)
        found = None
        if entry is not None and header:
            with contextlib.suppress(XlaInspectError):
                found = parse_hlo(entry if entry.startswith("HloModule") else header + entry, runner=OWNED)[0]
        self._parsed[key] = found if found is not None and found.entry.is_entry else self.module(stage)
        return self._parsed[key]

    def header(self, stage: str = "after") -> Module:
        """The `HloModule` line alone, parsed (a Module without computations): name and signature.

        Reads the first line and the last few bytes only, so a truncated file (a killed job, a
        compile still being written) is caught without reading the body. A header without
        `entry_computation_layout` (older XLA, or a damaged or foreign file) cannot give the
        signature alone: the whole module is parsed instead, and one without computations is a
        DumpError naming the file. Cached per stage.
        """
        key = f"header:{stage}"
        if key not in self._parsed:
            dump_file = self.hlo_file(stage)
            if dump_file is None:
                raise DumpError(f"module {self.label}: no HLO text file")
            header = parse_header(self._header_line(dump_file), dump_file.location)
            self._parsed[key] = header if header.entry_computation_layout else self.module(stage)
        return self._parsed[key]

    def _header_line(self, dump_file: DumpFile) -> str:
        """`header_line` of one of its files, from its content where that was read already; a small
        file's content, read whole by the way, is kept."""
        data = self._read.get(dump_file.location)
        if data is not None:
            return checked_header_line(dump_file.location, *edges(data, TAIL_BYTES))
        first, tail, whole = read_edges(dump_file.location, TAIL_BYTES)
        if whole is not None:
            self._read[dump_file.location] = whole
        return checked_header_line(dump_file.location, first, tail)

    def holding(self) -> tuple[set[str], set[str]]:
        """The files whose contents it holds and the models it has parsed, for `scoped_reads` to keep."""
        return set(self._read), set(self._parsed)

    def drop_all_but(self, holding: tuple[set[str], set[str]]) -> None:
        """Drop the contents and models it took since `holding` said what it held."""
        read, parsed = holding
        for location in [k for k in self._read if k not in read]:
            del self._read[location]
        for key in [k for k in self._parsed if k not in parsed]:
            del self._parsed[key]

    @property
    def label(self) -> str:
        """`host/module_0004.jit_f` as a person would look for it in the directory."""
        where = f"{self.host}/" if self.host else ""
        number = "????" if self.module_id is None else f"{self.module_id:04d}"
        return f"{where}module_{number}" + (f".{self.name}" if self.name else "")


@contextlib.contextmanager
def scoped_reads(modules: Iterable[DumpModule]) -> Generator[None]:
    """The file contents and models `modules` read or parse inside the block are dropped at its end, what
    they held before it stays: an analysis that visits every module of a big dump leaves the dump as it
    was given (nothing of the caller's evicted), its memory bounded by one block's reads. A module already
    in an enclosing block keeps its reads to that block's end (a command that runs two analyses over the
    same files reads them once)."""
    held = [(module, module.holding()) for module in modules if module not in _SCOPED]
    _SCOPED.update(module for module, _ in held)
    try:
        yield
    finally:
        for module, holding in held:
            _SCOPED.discard(module)
            module.drop_all_but(holding)


_SCOPED: set[DumpModule] = set()
"""The modules inside a `scoped_reads` block (a DumpModule hashes by identity)."""
