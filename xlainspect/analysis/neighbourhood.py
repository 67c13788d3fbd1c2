"""The neighbourhood of one instruction in the data-flow graph (`xlainspect.report.graph_text`
writes it as DOT, Mermaid or GraphML).

Neighbours are found both ways (operands and users) up to `depth` edges, inside the instruction's
computation (the module graph has no edges across computations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.errors import XlaInspectError
from xlainspect.graph import module_graph

if TYPE_CHECKING:
    import networkx as nx

    from xlainspect.hlo.model import Module


def find_instruction(module: Module, name: str) -> tuple[str, str]:
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


def neighbourhood(module: Module, name: str, depth: int = 2) -> nx.DiGraph:
    """The subgraph of instructions within `depth` edges of `name`, either direction."""
    import networkx as nx

    center = find_instruction(module, name)
    graph = module_graph(module)
    nodes = nx.ego_graph(graph.to_undirected(as_view=True), center, radius=depth).nodes
    return graph.subgraph(nodes).copy()
