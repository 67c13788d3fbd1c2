"""README's Python API example runs as written (from the repository root, on the committed fixtures)."""

from __future__ import annotations

import inspect
import re

from conftest import REPO


def test_python_api_example_runs(monkeypatch, capsys):
    readme = (REPO / "README.md").read_text()
    start = readme.index("## Python API")
    section = readme[start : readme.index("\n## ", start)]
    (example,) = re.findall(r"```python\n(.*?)```", section, re.S)
    monkeypatch.chdir(REPO)
    exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "jit_train_step 2 fixtures/generate.py:153 the last batch is ragged" in printed
    assert "[('kLoop', 5)] 1 8" in printed  # fusions totals, layout-only copies, collectives
    assert (
        "['per-pass-files'] ['time', 'compiles', 'recompiles', 'memory', 'padding', 'fusions', 'copies', 'collectives']"
        in printed
    )


_ROW = re.compile(r"^\| `[^`]+` \| `(\w+)\((.*?)\)` \|", re.M)
_OPTIONS = re.compile(r"`(Selection|ChipChoice|Budget)\(([\w\s,=\"]*)\)`")
_COMMON = {"progress", "strict"}
"""Keywords every long call takes, said once under the table (`progress=`) and by `--strict`."""


def _api_section() -> str:
    readme = (REPO / "README.md").read_text()
    start = readme.index("## Python API")
    return readme[start : readme.index("\n## ", start)]


def _arguments(text: str) -> list[str]:
    """`a, Selection(...), top=` -> ["a", "Selection(...)", "top="]: commas inside brackets kept."""
    return [a.strip() for a in re.split(r",\s*(?![^()]*\))", text) if a.strip()]


def _table_errors(name: str, arguments: list[str]) -> list[str]:
    import xlainspect

    parameters = list(inspect.signature(getattr(xlainspect, name)).parameters.values())
    positional = [p for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    named = [a.split("=")[0] for a in arguments if "=" in a]
    bare = [a for a in arguments if "=" not in a]
    errors = [f"{name}: no parameter {n}=" for n in named if n not in {p.name for p in parameters}]
    if len(bare) > len(positional):
        errors.append(f"{name}: {len(bare)} positional arguments, the function takes {len(positional)}")
    for argument, parameter in zip(bare, positional):
        if argument.endswith("(...)") and argument[:-5] not in str(parameter.annotation):
            errors.append(f"{name}: {argument} is not its parameter {parameter.name}: {parameter.annotation}")
    listed = {p.name for p in positional[: len(bare)]} | set(named)
    left_out = [p.name for p in parameters if p.name not in listed | _COMMON]
    return errors + [f"{name}: {n} is not in the table" for n in left_out]


def test_the_api_table_lists_each_function_as_it_is_called():
    """Each row's `function(arguments)`: its keywords are the function's, positional arguments in its
    order (`Selection(...)` where it takes a Selection), and no parameter left out (but `progress=` and
    `strict=`, said once); the option types under the table name their fields."""
    import dataclasses

    import xlainspect

    section = _api_section()
    rows = _ROW.findall(section)
    assert len(rows) == 19
    errors = [e for name, arguments in rows for e in _table_errors(name, _arguments(arguments))]
    for option, fields in _OPTIONS.findall(section):
        if fields and fields != "...":
            written = [f.split("=")[0] for f in _arguments(fields)]
            actual = [f.name for f in dataclasses.fields(getattr(xlainspect, option))]
            errors += [f"{option}({', '.join(written)}) is {option}({', '.join(actual)})"] if written != actual else []
    assert errors == []
