"""Results in a notebook: `to_pandas()` is the command's JSON as DataFrames, `_repr_html_()` the CLI's
tables, `repr` one line; pandas is loaded by `to_pandas` only; examples/walkthrough.ipynb runs in a real
Jupyter kernel (nbclient + ipykernel) and shows the values its cells compute."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import nbclient
import nbformat
import pandas as pd
import pytest
from conftest import DUMPS, FIXTURES, REPO

import xlainspect as xi
from xlainspect.analysis.tabular import Tabular
from xlainspect.errors import UsageError
from xlainspect.report.document import DRAWN_ROWS, to_json
from xlainspect.report.notebook import VIEWS
from xlainspect.report.views.cost import COST_OP_COLUMNS
from xlainspect.report.views.profile import PROFILE_OP_COLUMNS

DUMP = DUMPS / "profile_steps"
TRACE = FIXTURES / "profiles" / "profile_steps"
H100 = xi.ChipChoice("h100")


@pytest.fixture(scope="module")
def cost():
    return xi.cost_report(DUMP, chip=H100, top=None)


@pytest.fixture(scope="module")
def profiled():
    return xi.profile_report(TRACE, DUMP, H100)


def _result_class(name: str) -> type:
    function = getattr(xi, name)
    annotation = inspect.signature(function).return_annotation
    defined = vars(sys.modules[inspect.unwrap(function).__module__])
    registered = {kind.__name__: kind for kind in VIEWS}  # a class its module imports for type checkers only
    return defined.get(annotation) or registered[annotation]


RESULTS = sorted(n for n in xi.__all__ if n.endswith("_report")) + [
    "profile",
    "diagnose",
    "report_of",
    "explain_layout",
]


@pytest.mark.parametrize("name", RESULTS)
def test_every_report_function_returns_a_registered_tabular_result(name):
    kind = _result_class(name)
    assert issubclass(kind, Tabular)
    assert any(k in VIEWS for k in kind.__mro__)  # a view shows it


def test_cost_ops_are_the_json_ops_with_numbers_as_numbers(cost):
    ops = cost.to_pandas()
    assert isinstance(ops, pd.DataFrame)
    assert tuple(ops.columns) == COST_OP_COLUMNS  # the JSON's columns, in its order
    assert len(ops) == 24  # every op of both modules (top=None), 12 each
    assert ops["flops"].dtype == "int64" and ops["bytes_read"].dtype == "int64"
    assert ops["roofline_seconds"].dtype == "float64"
    dot = ops[(ops["module"] == "module_0000.jit_train_step") & (ops["name"] == "dot.2")].iloc[0]
    assert (dot["flops"], dot["bytes_read"], dot["bytes_written"]) == (262144, 16384, 16384)
    assert json.loads(to_json(VIEWS[type(cost)].document(cost)))["ops"][0]["name"] == ops.loc[0, "name"]


def test_cost_modules_table(cost):
    modules = cost.to_pandas("modules")
    assert list(modules["flops"]) == [551264, 279792]
    assert list(modules["bytes_accessed"]) == [167068, 125532]
    assert modules["roofline_seconds"].dtype == "float64"
    assert modules.loc[0, "roofline_seconds"] == pytest.approx(4.987104e-08, rel=1e-6)


def test_profile_tables(profiled):
    ops = profiled.to_pandas()
    assert list(ops.columns) == list(json.loads(to_json(VIEWS[type(profiled)].document(profiled)))["ops"][0])
    assert set(PROFILE_OP_COLUMNS) <= set(ops.columns)  # what CSV writes, and more
    assert ops["total_seconds"].dtype == "float64" and ops["kernels"].dtype == "int64"
    assert ops.loc[0, "name"] == "dot.2" and ops.loc[0, "kernels"] == 3
    steps = profiled.to_pandas("steps")
    assert list(steps["number"]) == [0, 1, 2, 3, 4, 5]
    assert steps.loc[0, "wall_seconds"] == pytest.approx(0.329781, abs=1e-6)
    assert list(steps["kernels"]) == [11] * 6


def test_an_unknown_table_is_a_usage_error_listing_the_tables(cost):
    with pytest.raises(UsageError) as raised:
        cost.to_pandas("opz")
    assert str(raised.value) == "table 'opz': CostReport has no table of that name; its tables: modules, ops"


def test_recompiles_and_report_of():
    functions = xi.recompiles_report(DUMP).to_pandas()
    assert list(functions["name"]) == ["jit_train_step"] and list(functions["modules"]) == [2]
    facts = xi.report_of(DUMP)
    fusions = facts.to_pandas("fusions")
    assert list(fusions.columns) == list(xi.fusions_report(DUMP).to_pandas().columns)
    assert len(fusions) == 16
    padding = facts.to_pandas("padding")
    assert padding["xla_bytes"].dtype == "Int64"  # integers with nulls stay integers
    assert padding["xla_bytes"].isna().any() and padding["xla_bytes"].dropna().gt(0).all()


def test_dump_report_tables_are_the_pages():
    report = xi.dump_report(xi.report_of(DUMP))
    modules = report.to_pandas()
    assert list(modules.columns) == ["module", "function", "platform", "stages"]
    assert list(modules["module"]) == ["module_0000.jit_train_step", "module_0002.jit_train_step"]
    assert "largest fusions" in VIEWS[type(report)].document(report).data


def test_neighbourhood_is_graphmls_nodes_and_edges():
    ring = DUMPS / "collectives_cpu" / "module_0002.jit_ring_body.cpu_after_optimizations.txt"
    around = xi.neighbourhood_report(ring, "psum_invariant.7", depth=1)
    nodes, edges = around.to_pandas(), around.to_pandas("edges")
    assert list(nodes.columns) == ["id", "name", "computation", "opcode", "shape", "op_name", "center"]
    assert list(nodes.loc[nodes["center"], "name"]) == ["psum_invariant.7"]
    assert nodes.loc[nodes["center"], "shape"].item() == "f32[8,4]{1,0}"
    assert len(edges) == 2 and set(edges.columns) == {"source", "target"}


def test_explain_layout_is_still_its_list():
    (array,) = arrays = xi.explain_layout("bf16[3,5]{1,0:T(8,128)(2,1)}")
    table = arrays.to_pandas()
    assert (
        (table.loc[0, "logical_bytes"], table.loc[0, "backend_bytes"])
        == (30, 2048)
        == (array.logical_bytes, array.backend_bytes)
    )
    assert table["backend_bytes"].dtype == "int64"
    assert repr(arrays) == "ArrayLayouts(<1>)"


def test_cache_report_functions():
    functions = xi.cache_report(FIXTURES / "cache" / "runs" / "cache").to_pandas()
    assert functions.loc[functions["name"] == "jit_predict", "entries"].item() == 8
    assert functions["entries"].dtype == "int64" and functions["bytes"].dtype == "int64"


def test_cache_misses_report_is_still_its_list():
    runs = FIXTURES / "cache" / "runs"
    misses = xi.cache_misses_report(runs / "1_cold", runs / "2_repeat")
    assert isinstance(misses, list) and misses == list(misses)
    table = misses.to_pandas()
    assert list(table.columns[:3]) == ["name", "status", "changed"]
    assert dict(zip(table["name"], table["status"]))["jit_scaled"] == "miss"


def test_repr_is_one_short_line(cost, profiled):
    assert repr(cost) == "CostReport(modules=<2>, skipped=<0>)"
    assert repr(profiled).startswith("ProfileReport(paths=<1>, steps=<6>, step_source='step markers', ops=<22>")
    assert "\n" not in repr(profiled) and len(repr(profiled)) < 300


def test_html_is_the_cli_tables_first_rows_and_a_count(profiled):
    opcodes = xi.ops_report(DUMPS / "ragged_batch")  # 44 rows: more than a screen
    page = opcodes._repr_html_()
    assert page.count("<tr>") == 1 + DRAWN_ROWS  # the header and the first rows
    assert f"... {44 - DRAWN_ROWS} more rows: to_pandas() has them all" in page
    assert len(opcodes.to_pandas()) == 44
    shown = profiled._repr_html_()
    assert "6 steps (step markers)" in shown and "dot.2" in shown
    assert "<svg" in shown  # the typical step's timeline, as `profile --html` draws it


def test_cost_html_draws_each_modules_roofline(cost):
    page = cost._repr_html_()
    assert page.count("data-chart='roofline'") == 2
    assert "cost per call of each module" in page and "551,264" in page


def test_without_pandas_to_pandas_says_what_to_install(cost, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` then raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'xlainspect\[pandas\]'"):
        cost.to_pandas()


def test_import_and_the_cli_load_neither_pandas_nor_the_views_registry():
    code = (
        "import sys, xlainspect\n"
        "from xlainspect.cli import main\n"
        "sys.argv = ['xlainspect', 'cost', sys.argv[1], '--format', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'xlainspect.report.notebook') if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(DUMP)], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["modules"][0]["flops"] == 551264
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_the_walkthrough_runs_in_a_kernel_and_shows_the_dumps_values():
    notebook = nbformat.read(REPO / "examples" / "walkthrough.ipynb", as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3")
    client.execute(cwd=str(REPO / "examples"))
    outputs = {cell.id: cell.outputs for cell in notebook.cells if cell.cell_type == "code"}

    def shown(cell: str, kind: str) -> str:
        return "".join(o["data"].get(kind, "") for o in outputs[cell] if "data" in o)

    assert "2 compiles of 1 function, 1 compiled more than once" in shown("recompiles", "text/html")
    assert shown("recompiles", "text/plain").startswith("RecompileReport(functions=<1>")
    assert "jit_train_step        2" in shown("recompiles-frame", "text/plain")
    assert "551264" in shown("cost-modules", "text/plain") and "279792" in shown("cost-modules", "text/plain")
    assert "data-chart='roofline'" in shown("cost", "text/html")
    assert "0.329781" in shown("profile-steps", "text/plain")
    assert "dot.2" in shown("profile-ops", "text/plain")
    assert shown("plot", "image/png")  # the bar chart matplotlib drew
    assert "dot             0.024845" in shown("plot", "text/plain")
