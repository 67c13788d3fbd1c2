"""The HLO text model, its parser and its printer, imported on first use: a run answered from a
cache, or one that reads a dump's file names only, needs none of them."""

__all__ = ["Computation", "Instruction", "Module", "StackFrame", "parse_hlo", "print_hlo"]


def __getattr__(name: str):
    if name == "parse_hlo":
        from xlainspect.hlo.parser import parse_hlo

        return parse_hlo
    if name == "print_hlo":
        from xlainspect.hlo.printer import print_hlo

        return print_hlo
    if name in __all__:
        from xlainspect.hlo import model

        return getattr(model, name)
    raise AttributeError(f"module 'xlainspect.hlo' has no attribute {name!r}")
