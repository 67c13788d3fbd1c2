"""The CLI progress bar helper."""

from __future__ import annotations


def test_progress_stays_silent_off_a_terminal(monkeypatch, capsys):
    from xlainspect.cli import progress as progress_module

    monkeypatch.setattr(progress_module, "SHOW_AFTER", 0.0)
    with progress_module.progress("parsing", total=3) as advance:
        for _ in range(3):
            advance(1)
    assert capsys.readouterr().err == ""  # stderr is not a terminal under pytest
