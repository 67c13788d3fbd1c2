"""The neighbourhood of one instruction in the data-flow graph (`xlainspect.report.graph_text`
writes it as DOT, Mermaid or GraphML).

Neighbours are found both ways (operands and users) up to `depth` edges, inside the instruction's
computation (the module graph has no edges across computations), so only that computation is walked:
neither networkx (~0.18 s to import) nor the whole module's graph is needed to draw a few nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from xlainspect.errors import XlaInspectError
from xlainspect.hlo.model import Computation, Instruction, Module

if TYPE_CHECKING:
    import networkx as nx

Node = tuple[str, str]
"""`(computation, instruction)`, as `xlainspect.graph.module_graph` names its nodes."""


class Edge(TypedDict):
    """An operand -> user edge's attributes, as `xlainspect.graph.module_graph` names them."""

    operand_index: int
    shape_index: tuple[int, ...]


@dataclass
class Subgraph:
    """Instructions by node and the operand -> user edges between them (`operand_index`, `shape_index`),
    in the computation's order (networkx lists a subgraph's in a set's order, which varies by run)."""

    name: str
    nodes: dict[Node, Instruction]
    edges: dict[tuple[Node, Node], Edge]

    def to_networkx(self) -> nx.DiGraph[Node]:
        """The same subgraph as networkx builds it from `module_graph` (node attributes `instruction`,
        `computation`)."""
        import networkx as nx

        graph: nx.DiGraph[Node] = nx.DiGraph(name=self.name)
        for node, instruction in self.nodes.items():
            graph.add_node(node, instruction=instruction, computation=node[0])
        for (a, b), attributes in self.edges.items():
            graph.add_edge(a, b, **attributes)
        return graph


def find_instruction(module: Module, name: str) -> Node:
    """The `(computation, name)` node of an instruction; `computation/name` picks among duplicates."""
    wanted = name.lstrip("%")
    computation, _, short = wanted.rpartition("/")
    nodes = [(c.name, i.name) for c in module.computations for i in c.instructions]
    nodes = [n for n in nodes if n[1] == short.lstrip("%") and (not computation or n[0] == computation)]
    if not nodes:
        raise XlaInspectError(f"{module.path or module.name}: no instruction named {name!r}")
    if len(nodes) > 1:
        where = ", ".join(f"{c}/{n}" for c, n in nodes[:5])
        raise XlaInspectError(
            f"{module.path or module.name}: {name!r} is in several computations ({where}); write computation/name"
        )
    return nodes[0]


def neighbourhood(module: Module, name: str, depth: int = 2) -> Subgraph:
    """The instructions within `depth` edges of `name`, either direction, and the edges among them."""
    centre = find_instruction(module, name)
    computation = next(c for c in module.computations if c.name == centre[0])
    edges = _edges(computation)
    near: dict[Node, list[Node]] = {}
    for a, b in edges:
        near.setdefault(a, []).append(b)
        near.setdefault(b, []).append(a)
    reached, frontier = {centre}, [centre]
    for _ in range(depth):
        frontier = [n for n in dict.fromkeys(n for node in frontier for n in near.get(node, ())) if n not in reached]
        reached.update(frontier)
    order = {(computation.name, i.name): i for i in computation.instructions}
    nodes = {node: instruction for node, instruction in order.items() if node in reached}
    return Subgraph(module.name, nodes, {e: a for e, a in edges.items() if e[0] in reached and e[1] in reached})


def _edges(computation: Computation) -> dict[tuple[Node, Node], Edge]:
    """`module_graph`'s edges inside one computation: operand -> user, the last use of a repeated operand
    naming the edge."""
    names = {i.name for i in computation.instructions}
    edges: dict[tuple[Node, Node], Edge] = {}
    for instruction in computation.instructions:
        if instruction.opcode in ("parameter", "constant"):
            continue
        node = (computation.name, instruction.name)
        for index, operand in enumerate(instruction.operands):
            if operand in names:
                shape_index = instruction.operand_shape_index(index)
                edges[(computation.name, operand), node] = {"operand_index": index, "shape_index": shape_index}
    return edges
