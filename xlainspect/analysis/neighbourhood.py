"""The neighbourhood of one instruction in the data-flow graph, as DOT, Mermaid or GraphML text.

Neighbours are found both ways (operands and users) up to `depth` edges, inside the instruction's
computation (`module.graph` has no edges across computations).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from xlainspect.errors import XlaInspectError

if TYPE_CHECKING:
    import networkx as nx

    from xlainspect.hlo.model import Module


def find_instruction(module: Module, name: str) -> tuple[str, str]:
    """The `(computation, name)` node of an instruction; `computation/name` picks among duplicates."""
    wanted = name.lstrip("%")
    computation, _, short = wanted.rpartition("/")
    nodes = [n for n in module.graph.nodes if n[1] == short.lstrip("%") and (not computation or n[0] == computation)]
    if not nodes:
        raise XlaInspectError(f"{module.path or module.name}: no instruction named {name!r}")
    if len(nodes) > 1:
        where = ", ".join(f"{c}/{n}" for c, n in nodes[:5])
        raise XlaInspectError(f"{module.path or module.name}: {name!r} is in several computations ({where}); "
                              "write computation/name")
    return nodes[0]


def neighbourhood(module: Module, name: str, depth: int = 2) -> nx.DiGraph:
    """The subgraph of instructions within `depth` edges of `name`, either direction."""
    import networkx as nx

    center = find_instruction(module, name)
    nodes = nx.ego_graph(module.graph.to_undirected(as_view=True), center, radius=depth).nodes
    return module.graph.subgraph(nodes).copy()


def _label(node: tuple[str, str], graph: nx.DiGraph) -> str:
    instruction = graph.nodes[node]["instruction"]
    shape = str(instruction.shape) if instruction.shape is not None else ""
    return f"{instruction.name}\\n{instruction.opcode} {shape}".rstrip()


def _ids(graph: nx.DiGraph) -> dict[tuple[str, str], str]:
    return {node: f"n{i}" for i, node in enumerate(sorted(graph.nodes))}


def to_dot(graph: nx.DiGraph, center: tuple[str, str]) -> str:
    """Graphviz DOT: `dot -Tsvg`; the centre instruction is filled."""
    ids = _ids(graph)
    lines = ["digraph neighbourhood {", "  node [shape=box fontname=monospace];"]
    for node, node_id in ids.items():
        style = ' style=filled fillcolor="#ffd966"' if node == center else ""
        label = _label(node, graph).replace('"', '\\"')
        lines.append(f'  {node_id} [label="{label}"{style}];')
    lines += [f"  {ids[a]} -> {ids[b]};" for a, b in sorted(graph.edges)]
    return "\n".join(lines + ["}"]) + "\n"


def to_mermaid(graph: nx.DiGraph, center: tuple[str, str]) -> str:
    """A Mermaid flowchart for a Markdown page (```mermaid fenced block content)."""
    ids = _ids(graph)
    lines = ["flowchart TD"]
    for node, node_id in ids.items():
        label = _label(node, graph).replace("\\n", "<br>").replace('"', "#quot;")
        lines.append(f'  {node_id}["{label}"]')
    lines += [f"  {ids[a]} --> {ids[b]}" for a, b in sorted(graph.edges)]
    lines.append(f"  style {ids[center]} fill:#ffd966")
    return "\n".join(lines) + "\n"


def to_graphml(graph: nx.DiGraph, center: tuple[str, str]) -> str:
    """GraphML via networkx, string attributes only (name, computation, opcode, shape, op_name, center)."""
    import networkx as nx

    ids = _ids(graph)
    plain = nx.DiGraph()
    for node, node_id in ids.items():
        instruction = graph.nodes[node]["instruction"]
        plain.add_node(node_id, name=instruction.name, computation=node[0], opcode=instruction.opcode,
                       shape=str(instruction.shape or ""), op_name=instruction.op_name or "",
                       center=str(node == center).lower())
    plain.add_edges_from((ids[a], ids[b]) for a, b in graph.edges)
    buffer = io.BytesIO()
    nx.write_graphml(plain, buffer)
    return buffer.getvalue().decode("utf-8")
