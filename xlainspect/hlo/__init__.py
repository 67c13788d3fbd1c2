"""The HLO text model, its parser and its printer."""

from __future__ import annotations

from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame
from xlainspect.hlo.parser import parse_hlo
from xlainspect.hlo.printer import print_hlo

__all__ = ["Computation", "Instruction", "Module", "StackFrame", "parse_hlo", "print_hlo"]
