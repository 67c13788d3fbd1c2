"""How a table reaches people: rich's box table on a terminal (its first rows), aligned plain text in
a pipe or a file (every row, one line each)."""

from __future__ import annotations

import io
import json
import sys

from conftest import DUMPS, FIXTURES
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


CNN = FIXTURES / "gpu_corpus" / "cnn_profile"  # jax 0.11.2 on an H200 (the GPU corpus, pruned)


def _json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _csv_rows(*args: str) -> int:
    result = runner.invoke(app, [*args, "--format", "csv"])
    assert result.exit_code == 0, result.output
    return len(result.stdout.splitlines()) - 1  # the header


def test_json_and_csv_keep_every_op_unless_top_is_given():
    """`cost` and `profile` on a real H200 run: a table lists 10 (cost, per module) or 20 (profile) ops;
    JSON and CSV every op (64 and 58), unless `--top` is given."""
    cost = ("cost", str(CNN / "dump"))
    assert len(_json(*cost)["ops"]) == _csv_rows(*cost) == len(_json(*cost, "--top", "0")["ops"]) == 64
    assert len(_json(*cost, "--top", "3")["ops"]) == _csv_rows(*cost, "--top", "3") == 2 * 3
    per_module = runner.invoke(app, list(cost)).stdout.split("top ops by roofline time per call\n")[1:]
    assert [len(ops.split("\n\n")[0].splitlines()) - 2 for ops in per_module] == [10, 10]  # less header and rule
    profile = ("profile", str(CNN / "trace"), "--dump", str(CNN / "dump"))
    assert len(_json(*profile)["ops"]) == _csv_rows(*profile) == 58
    assert len(_json(*profile, "--top", "5")["ops"]) == _csv_rows(*profile, "--top", "5") == 5
    assert "58 ops by time lost" in runner.invoke(app, list(profile)).stdout


def test_memory_json_keeps_every_buffer_live_at_the_peak_unless_top_is_given():
    memory = ("memory", str(DUMPS / "gpu_profile"))
    assert max(len(m["top"]) for m in _json(*memory)["modules"]) == 58
    assert max(len(m["top"]) for m in _json(*memory, "--top", "4")["modules"]) == 4
    markdown = runner.invoke(app, [*memory, "--format", "markdown"]).stdout
    peaks = [block.split("\n\n")[1] for block in markdown.split(": live at the peak")[1:]]
    assert max(len(rows.splitlines()) - 2 for rows in peaks) == 10  # less the header and its rule
