"""`xlainspect parse FILE`: check that HLO text parses and summarise its modules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect import __version__
from xlainspect.cli.app import FormatOpt, app, user_errors
from xlainspect.cli.render import OutputFormat, emit_frame, stderr_console
from xlainspect.hlo.opcodes import unknown_opcodes


@app.command()
def parse(
    files: Annotated[list[Path], typer.Argument(help="HLO text files.", show_default=False)],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Parse HLO text files with the grammar; list modules, computations and instruction counts."""
    import pandas as pd

    from xlainspect.dump.files import read_text
    from xlainspect.hlo.parser import parse_hlo

    with user_errors():
        rows = []
        opcodes: set[str] = set()
        for path in files:
            for module in parse_hlo(read_text(path), str(path)):
                rows.append(
                    {
                        "file": str(path),
                        "module": module.name,
                        "computations": len(module.computations),
                        "instructions": module.instruction_count,
                        "entry": module.entry.name,
                    }
                )
                opcodes.update(i.opcode for i in module.instructions())
        emit_frame(pd.DataFrame(rows, columns=["file", "module", "computations", "instructions", "entry"]), fmt)
    unknown = unknown_opcodes(opcodes)
    if unknown:  # a newer XLA's opcodes parse and are kept as written; say so, it is not an error
        stderr_console().print(
            f"note: opcodes unknown to xlainspect {__version__} (kept as written): " + ", ".join(unknown),
            markup=False,
            highlight=False,
        )
