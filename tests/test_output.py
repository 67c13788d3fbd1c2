"""How a table reaches people: rich's box table on a terminal (its first rows), aligned plain text in
a pipe or a file (every row, one line each)."""

from __future__ import annotations

import io
import sys

from conftest import DUMPS
from typer.testing import CliRunner

from xlainspect import fusions_report
from xlainspect.cli import app
from xlainspect.cli.render import DRAWN_ROWS, OutputFormat, emit
from xlainspect.report.document import Document, Entry, Table, plain_table, to_text

runner = CliRunner()
TABLE = Table("sizes", ("name", "bytes"), tuple((f"buffer.{i}", 1024 * i) for i in range(30)))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_table_aligns_columns_and_numbers_right():
    lines = plain_table(Table(None, ("name", "bytes"), (("a", 1), ("longer.name", 1234567)))).splitlines()
    assert lines == [
        "name             bytes",
        "-----------  ---------",
        "a                    1",
        "longer.name  1,234,567",
    ]


def test_pipe_gets_every_row_on_one_line():
    keras = DUMPS / "keras"
    result = runner.invoke(app, ["fusions", str(keras)])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    rows = fusions_report(keras).fusions
    assert len(rows) > DRAWN_ROWS  # more rows than a terminal draws: a pipe keeps them all
    assert lines[0] == "fusions" and lines[1].split()[:3] == ["module", "name", "kind"]
    assert lines.index("") == 3 + len(rows) and lines[3 + len(rows) + 1] == "totals"
    assert "┃" not in result.stdout and "\x1b[" not in result.stdout
    first = rows[0]
    assert lines[3].split()[:3] == [first.module, first.name, first.kind]


def test_pipe_wraps_a_narrow_documents_paragraphs_at_its_width():
    document = Document(
        data=None,
        blocks=[TABLE],
        narrow=[Entry("jit_step: 2 compiles", (("why", "shape x dim 0: 100 -> 5 " * 6),))],
    )
    narrow = to_text(document, 60).splitlines()
    assert narrow[0] == "jit_step: 2 compiles" and max(map(len, narrow)) <= 60 and len(narrow) == 4
    assert to_text(document, 160).splitlines()[0] == "sizes"


def test_terminal_draws_the_first_rows_in_a_box(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setenv("NO_COLOR", "1")
    emit(Document(data=None, blocks=[TABLE]), OutputFormat.table)
    text = terminal.getvalue()
    assert "┏" in text and "buffer.24" in text and "buffer.25" not in text
    assert text.splitlines()[-1] == "... 5 more rows: piped or --format csv|json|markdown prints all"
