"""networkx views of a module: the instruction data-flow graph and the computation call graph.

Instruction nodes are `(computation name, instruction name)` pairs (names are unique only within
a computation in hand-written HLO); edges run operand -> user. Calls (fusion bodies, to_apply,
while body/condition, conditional branches, async wrapped computations) are edges of the call
graph, whose nodes are computation names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

if TYPE_CHECKING:
    from xlainspect.hlo.model import Module


def module_graph(module: Module) -> nx.DiGraph:
    """Data flow: one node per instruction (attribute `instruction`), operand -> user edges; an edge's
    `shape_index` is the tuple element the user reads (`%p0#1` -> (1,); () for the whole value)."""
    graph = nx.DiGraph(name=module.name)
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


def call_graph(module: Module) -> nx.MultiDiGraph:
    """Computation -> called computation, one edge per calling instruction (attributes: by, kind)."""
    graph = nx.MultiDiGraph(name=module.name)
    known = module.computations_by_name
    for computation in module.computations:
        graph.add_node(computation.name, computation=computation)
    for computation in module.computations:
        for instruction in computation.instructions:
            for callee in instruction.called_computations:
                if callee in known:
                    graph.add_edge(computation.name, callee, by=instruction.name, kind=instruction.opcode)
    return graph
