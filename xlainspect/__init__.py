"""xlainspect: read XLA dump directories and HLO text, and say what XLA did and why.

The public API is imported lazily so `import xlainspect` stays fast (no lark, pandas or
networkx until a function needs them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "parse_hlo": "xlainspect.hlo.parser",
    "parse_shape": "xlainspect.shapes_api",
    "load_dump": "xlainspect.dump",
    "dump_report": "xlainspect.report_sections",
    "render_html": "xlainspect.report_page",
    "render_markdown": "xlainspect.report_page",
    "HloParseError": "xlainspect.errors",
    "XlaInspectError": "xlainspect.errors",
    "DumpError": "xlainspect.errors",
    "Module": "xlainspect.hlo.model",
    "Computation": "xlainspect.hlo.model",
    "Instruction": "xlainspect.hlo.model",
    "Shape": "xlainspect.shape",
    "Layout": "xlainspect.layout",
    "Tile": "xlainspect.layout",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from xlainspect.errors import DumpError, HloParseError, XlaInspectError
    from xlainspect.hlo.model import Computation, Instruction, Module
    from xlainspect.hlo.parser import parse_hlo
    from xlainspect.report_page import render_html, render_markdown
    from xlainspect.report_sections import dump_report
    from xlainspect.layout import Layout, Tile
    from xlainspect.shape import Shape


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'xlainspect' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
