"""An instruction's neighbourhood (`xlainspect.analysis.neighbourhood`) as text: Graphviz DOT,
a Mermaid flowchart, or GraphML."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xlainspect.analysis.commands.graph import Neighbourhood
    from xlainspect.analysis.neighbourhood import Subgraph


def _label(node: tuple[str, str], graph: Subgraph) -> str:
    instruction = graph.nodes[node]
    shape = str(instruction.shape) if instruction.shape is not None else ""
    return f"{instruction.name}\\n{instruction.opcode} {shape}".rstrip()


def _ids(graph: Subgraph) -> dict[tuple[str, str], str]:
    return {node: f"n{i}" for i, node in enumerate(sorted(graph.nodes))}


def to_dot(graph: Subgraph, center: tuple[str, str]) -> str:
    """Graphviz DOT: `dot -Tsvg`; the centre instruction is filled."""
    ids = _ids(graph)
    lines = ["digraph neighbourhood {", "  node [shape=box fontname=monospace];"]
    for node, node_id in ids.items():
        style = ' style=filled fillcolor="#ffd966"' if node == center else ""
        label = _label(node, graph).replace('"', '\\"')
        lines.append(f'  {node_id} [label="{label}"{style}];')
    lines += [f"  {ids[a]} -> {ids[b]};" for a, b in sorted(graph.edges)]
    return "\n".join(lines + ["}"]) + "\n"


def to_mermaid(graph: Subgraph, center: tuple[str, str]) -> str:
    """A Mermaid flowchart for a Markdown page (```mermaid fenced block content)."""
    ids = _ids(graph)
    lines = ["flowchart TD"]
    for node, node_id in ids.items():
        label = _label(node, graph).replace("\\n", "<br>").replace('"', "#quot;")
        lines.append(f'  {node_id}["{label}"]')
    lines += [f"  {ids[a]} --> {ids[b]}" for a, b in sorted(graph.edges)]
    lines.append(f"  style {ids[center]} fill:#ffd966")
    return "\n".join(lines) + "\n"


def to_graphml(graph: Subgraph, center: tuple[str, str]) -> str:
    """GraphML via networkx, string attributes only (name, computation, opcode, shape, op_name, center)."""
    import networkx as nx

    ids = _ids(graph)
    plain = nx.DiGraph()
    for node, node_id in ids.items():
        instruction = graph.nodes[node]
        plain.add_node(
            node_id,
            name=instruction.name,
            computation=node[0],
            opcode=instruction.opcode,
            shape=str(instruction.shape or ""),
            op_name=instruction.op_name or "",
            center=str(node == center).lower(),
        )
    plain.add_edges_from((ids[a], ids[b]) for a, b in graph.edges)
    buffer = io.BytesIO()
    nx.write_graphml(plain, buffer)
    return buffer.getvalue().decode("utf-8")


WRITERS = {"dot": to_dot, "mermaid": to_mermaid, "graphml": to_graphml}


def write_graph(neighbourhood: Neighbourhood, fmt: str = "dot") -> str:
    """A `Neighbourhood` (`xlainspect.neighbourhood_report`) in one of `WRITERS`' formats."""
    return WRITERS[fmt](neighbourhood.subgraph, neighbourhood.centre)
