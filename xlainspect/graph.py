"""networkx views of a module: the instruction data-flow graph and the computation call graph.

Instruction nodes are `(computation name, instruction name)` pairs (names are unique only within
a computation in hand-written HLO); edges run operand -> user. Calls (fusion bodies, to_apply,
while body/condition, conditional branches, async wrapped computations) are edges of the call
graph, whose nodes are computation names.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # networkx is imported by the functions that build graphs: the walks below need none
    import networkx as nx

    from xlainspect.hlo.model import Module

CallEdges = dict[str, list[tuple[str, str]]]
"""Computation -> (called computation, calling opcode), in instruction order."""


def call_edges(instructions: Iterable[tuple[str, str, tuple[str, ...]]]) -> CallEdges:
    """The calls of (computation, opcode, called computations) triples: from a model, or from the
    line-level reader when no model is built."""
    calls: CallEdges = {}
    for computation, opcode, called in instructions:
        for callee in called:
            calls.setdefault(computation, []).append((callee, opcode))
    return calls


def module_calls(module: Module) -> CallEdges:
    """A module's call edges, found once per module: fusions, unfused ops and cost all walk them, and
    reading every instruction's called computations is a second or more on a big module."""
    calls = _calls_of.get(module)
    if calls is None:
        instructions = ((c.name, i.opcode, i.called_computations) for c in module.computations for i in c.instructions)
        calls = _calls_of[module] = call_edges(instructions)
    return calls


_calls_of: weakref.WeakKeyDictionary[Module, CallEdges] = weakref.WeakKeyDictionary()
"""Call edges per live module (a module is data: they are kept beside it, not in it)."""


def reachable(calls: CallEdges, roots: Iterable[str], follow: Callable[[str], bool] = lambda opcode: True) -> list[str]:
    """The computations `roots` reach through calls whose opcode `follow` accepts (roots included), in
    the order a depth-first walk meets them: the one call-graph walk of the analyses."""
    roots = list(dict.fromkeys(roots))
    seen, stack, order = set(roots), roots[::-1], list[str]()
    while stack:
        name = stack.pop()
        order.append(name)
        for callee, opcode in calls.get(name, ()):
            if callee not in seen and follow(opcode):
                seen.add(callee)
                stack.append(callee)
    return order


def module_graph(module: Module) -> nx.DiGraph[tuple[str, str]]:
    """Data flow: one node per instruction (attribute `instruction`), operand -> user edges; an edge's
    `shape_index` is the tuple element the user reads (`%p0#1` -> (1,); () for the whole value)."""
    import networkx as nx

    graph: nx.DiGraph[tuple[str, str]] = nx.DiGraph(name=module.name)
    for computation in module.computations:
        names = {i.name for i in computation.instructions}
        for instruction in computation.instructions:
            node = (computation.name, instruction.name)
            graph.add_node(node, instruction=instruction, computation=computation.name)
            if instruction.opcode in ("parameter", "constant"):
                continue
            for index, operand in enumerate(instruction.operands):
                if operand in names:
                    graph.add_edge(
                        (computation.name, operand),
                        node,
                        operand_index=index,
                        shape_index=instruction.operand_shape_index(index),
                    )
    return graph


def call_graph(module: Module) -> nx.MultiDiGraph[str]:
    """Computation -> called computation, one edge per calling instruction (attributes: by, kind)."""
    import networkx as nx

    graph: nx.MultiDiGraph[str] = nx.MultiDiGraph(name=module.name)
    known = module.computations_by_name
    for computation in module.computations:
        graph.add_node(computation.name, computation=computation)
    for computation in module.computations:
        for instruction in computation.instructions:
            for callee in instruction.called_computations:
                if callee in known:
                    graph.add_edge(computation.name, callee, by=instruction.name, kind=instruction.opcode)
    return graph
