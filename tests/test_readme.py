"""README's Python API example runs as written (from the repository root, on the committed fixtures)."""

from __future__ import annotations

import re

from tests.conftest import REPO


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
