"""xlainspect: read XLA dump directories and HLO text, and say what XLA did and why.

The public API is imported lazily so `import xlainspect` stays fast (no lark or
networkx until a function needs them); `dir(xlainspect)`, `__all__` and the list
below name all of it (`help(xlainspect.fusions_report)` says what one does).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_COMMANDS = "xlainspect.analysis.commands"
_GROUPS: dict[str, dict[str, str]] = {
    "One function per command (`xlainspect fusions DIR` is `fusions_report('DIR')`), each a typed report": {
        "parse_report": _COMMANDS + ".parse",
        "explain_layout": _COMMANDS + ".layouts",
        "layouts_report": _COMMANDS + ".layouts",
        "fusions_report": _COMMANDS + ".graph",
        "copies_report": _COMMANDS + ".graph",
        "collectives_report": _COMMANDS + ".graph",
        "ops_report": _COMMANDS + ".graph",
        "neighbourhood_report": _COMMANDS + ".graph",
        "modules_report": _COMMANDS + ".compiles",
        "recompiles_report": _COMMANDS + ".compiles",
        "capture_report": _COMMANDS + ".compiles",
        "memory_report": _COMMANDS + ".memory",
        "diff_report": _COMMANDS + ".diff",
        "profile_diff_report": _COMMANDS + ".diff",
        "cost_report": _COMMANDS + ".cost",
        "profile_report": _COMMANDS + ".profile",
        "cache_report": _COMMANDS + ".cache",
        "cache_misses_report": _COMMANDS + ".cache",
        "diagnose": "xlainspect.analysis.doctor",
        "dump_report": "xlainspect.report.dump_report",
        "report_of": _COMMANDS + ".report",
        "Selection": "xlainspect.analysis.runner",
        "ChipChoice": _COMMANDS + ".cost",
        "Budget": "xlainspect.analysis.recompiles",
    },
    "The documents the CLI writes, for the same output from Python": {
        "Document": "xlainspect.report.document",
    },
    "Building blocks": {
        "parse_hlo": "xlainspect.hlo.parser",
        "print_hlo": "xlainspect.hlo.printer",
        "parse_shape": "xlainspect.hlo.shape_text",
        "load_dump": "xlainspect.dump.directory",
        "read_cache_dir": "xlainspect.dump.compilation_cache",
        "read_jax_log": "xlainspect.dump.jaxlog",
        "cache_inventory": "xlainspect.analysis.cache_inventory",
        "cache_misses": "xlainspect.analysis.cache_misses",
        "compile_times": "xlainspect.analysis.compile_times",
        "module_cost": "xlainspect.analysis.cost",
        "get_chip": "xlainspect.analysis.chips",
        "render_html": "xlainspect.report.page",
        "render_markdown": "xlainspect.report.page",
        "read_trace": "xlainspect.dump.xplane",
        "profile": "xlainspect.analysis.profile",
        "Module": "xlainspect.hlo.model",
        "Computation": "xlainspect.hlo.model",
        "Instruction": "xlainspect.hlo.model",
        "Shape": "xlainspect.hlo.shape",
        "Layout": "xlainspect.layout",
        "Tile": "xlainspect.layout",
    },
    "Errors (an input's fault: the CLI's exit 2)": {
        "XlaInspectError": "xlainspect.errors",
        "HloParseError": "xlainspect.errors",
        "DumpError": "xlainspect.errors",
        "UsageError": "xlainspect.errors",
        "NoMatchError": "xlainspect.errors",
    },
}
"""Every exported name, by group, and the module that defines it (imported on first use)."""

_EXPORTS = {name: module for names in _GROUPS.values() for name, module in names.items()}

__all__ = [  # _EXPORTS' names, written out for the type checker (tests/test_api.py compares them)
    "Budget",
    "ChipChoice",
    "Computation",
    "Document",
    "DumpError",
    "HloParseError",
    "Instruction",
    "Layout",
    "Module",
    "NoMatchError",
    "Selection",
    "Shape",
    "Tile",
    "UsageError",
    "XlaInspectError",
    "cache_inventory",
    "cache_misses",
    "cache_misses_report",
    "cache_report",
    "capture_report",
    "collectives_report",
    "compile_times",
    "copies_report",
    "cost_report",
    "diagnose",
    "diff_report",
    "dump_report",
    "explain_layout",
    "fusions_report",
    "get_chip",
    "layouts_report",
    "load_dump",
    "memory_report",
    "module_cost",
    "modules_report",
    "neighbourhood_report",
    "ops_report",
    "parse_hlo",
    "parse_report",
    "parse_shape",
    "print_hlo",
    "profile",
    "profile_diff_report",
    "profile_report",
    "read_cache_dir",
    "read_jax_log",
    "read_trace",
    "recompiles_report",
    "render_html",
    "render_markdown",
    "report_of",
]

__doc__ = (__doc__ or "") + "".join(
    f"\n{group}:\n" + "".join(f"    {name}\n" for name in names) for group, names in _GROUPS.items()
)

if TYPE_CHECKING:
    from xlainspect.analysis.cache_inventory import cache_inventory
    from xlainspect.analysis.cache_misses import cache_misses
    from xlainspect.analysis.chips import get_chip
    from xlainspect.analysis.commands.cache import cache_misses_report, cache_report
    from xlainspect.analysis.commands.compiles import capture_report, modules_report, recompiles_report
    from xlainspect.analysis.commands.cost import ChipChoice, cost_report
    from xlainspect.analysis.commands.diff import diff_report, profile_diff_report
    from xlainspect.analysis.commands.graph import (
        collectives_report,
        copies_report,
        fusions_report,
        neighbourhood_report,
        ops_report,
    )
    from xlainspect.analysis.commands.layouts import explain_layout, layouts_report
    from xlainspect.analysis.commands.memory import memory_report
    from xlainspect.analysis.commands.parse import parse_report
    from xlainspect.analysis.commands.profile import profile_report
    from xlainspect.analysis.commands.report import report_of
    from xlainspect.analysis.compile_times import compile_times
    from xlainspect.analysis.cost import module_cost
    from xlainspect.analysis.doctor import diagnose
    from xlainspect.analysis.profile import profile
    from xlainspect.analysis.recompiles import Budget
    from xlainspect.analysis.runner import Selection
    from xlainspect.dump.compilation_cache import read_cache_dir
    from xlainspect.dump.directory import load_dump
    from xlainspect.dump.jaxlog import read_jax_log
    from xlainspect.dump.xplane import read_trace
    from xlainspect.errors import DumpError, HloParseError, NoMatchError, UsageError, XlaInspectError
    from xlainspect.hlo.model import Computation, Instruction, Module
    from xlainspect.hlo.parser import parse_hlo
    from xlainspect.hlo.printer import print_hlo
    from xlainspect.hlo.shape import Shape
    from xlainspect.hlo.shape_text import parse_shape
    from xlainspect.layout import Layout, Tile
    from xlainspect.report.document import Document
    from xlainspect.report.dump_report import dump_report
    from xlainspect.report.page import render_html, render_markdown


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'xlainspect' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    """The exported names (loaded on first use, so not yet in the module's namespace) and the module's own
    dunders (PEP 562), as `dir()` and `help()` list them."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
