"""The HLO text model and its parser."""

from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame
from xlainspect.hlo.parser import parse_hlo

__all__ = ["Computation", "Instruction", "Module", "StackFrame", "parse_hlo"]
