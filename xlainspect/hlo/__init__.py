"""The HLO text model and its parser (imported on first use: the parser pulls in Lark)."""

from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame

__all__ = ["Computation", "Instruction", "Module", "StackFrame", "parse_hlo"]


def __getattr__(name: str):
    if name == "parse_hlo":
        from xlainspect.hlo.parser import parse_hlo

        return parse_hlo
    raise AttributeError(f"module 'xlainspect.hlo' has no attribute {name!r}")
