"""`parse`: the modules of HLO text files, and opcodes this XLA does not know."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlainspect.analysis.runner import Paths, remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.model_cache import parse_file
from xlainspect.hlo.opcodes import unknown_opcodes


@dataclass(slots=True)
class ParsedModule:
    """One module of a parsed file: its name and what it holds."""

    file: str
    module: str
    computations: int
    instructions: int
    entry: str


@dataclass
class ParseReport(Tabular):
    """What `parse` found: each module of the files, and opcodes this XLA does not know."""

    modules: list[ParsedModule]
    unknown_opcodes: list[str]
    """Opcodes a newer XLA may have added: parsed and kept as written."""


@remembered("files")
def parse_report(files: Paths) -> ParseReport:
    """Parse HLO text files with the grammar (an error is raised with its place); count what is in them.
    An unchanged file is answered from the parsed-model cache, which holds only texts that parsed."""
    rows: list[ParsedModule] = []
    opcodes: set[str] = set()
    for path in [Path(files)] if isinstance(files, (str, Path)) else map(Path, files):
        for module in parse_file(path):
            entry = module.entry.name
            rows.append(ParsedModule(str(path), module.name, len(module.computations), module.instruction_count, entry))
            opcodes.update(i.opcode for i in module.instructions())
    return ParseReport(rows, unknown_opcodes(opcodes))
