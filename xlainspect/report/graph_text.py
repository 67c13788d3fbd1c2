"""An instruction's neighbourhood (`xlainspect.analysis.neighbourhood`) as text: Graphviz DOT,
a Mermaid flowchart, or GraphML; and as GraphML's nodes and edges in a `Document` (a notebook's tables)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from xlainspect.report.document import Document, table

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
    plain: nx.DiGraph[str] = nx.DiGraph()
    for node, node_id in ids.items():
        attributes = node_attributes(graph, node, center)
        plain.add_node(node_id, **{**attributes, "center": str(attributes["center"]).lower()})
    plain.add_edges_from((ids[a], ids[b]) for a, b in graph.edges)
    buffer = io.BytesIO()
    nx.write_graphml(plain, buffer)  # pyright: ignore[reportUnknownMemberType] (its stubs leave `path` untyped)
    return buffer.getvalue().decode("utf-8")


def node_attributes(graph: Subgraph, node: tuple[str, str], center: tuple[str, str]) -> dict[str, object]:
    """What GraphML (and a notebook's table of nodes) says of an instruction."""
    instruction = graph.nodes[node]
    return {
        "name": instruction.name,
        "computation": node[0],
        "opcode": instruction.opcode,
        "shape": str(instruction.shape or ""),
        "op_name": instruction.op_name or "",
        "center": node == center,
    }


def graph_records(graph: Subgraph, center: tuple[str, str]) -> dict[str, list[dict[str, object]]]:
    """GraphML's nodes (with their ids) and edges as rows."""
    ids = _ids(graph)
    nodes = [{"id": node_id, **node_attributes(graph, node, center)} for node, node_id in ids.items()]
    return {"nodes": nodes, "edges": [{"source": ids[a], "target": ids[b]} for a, b in sorted(graph.edges)]}


WRITERS = {"dot": to_dot, "mermaid": to_mermaid, "graphml": to_graphml}


def write_graph(neighbourhood: Neighbourhood, fmt: str = "dot") -> str:
    """A `Neighbourhood` (`xlainspect.neighbourhood_report`) in one of `WRITERS`' formats."""
    return WRITERS[fmt](neighbourhood.subgraph, neighbourhood.centre)


def neighbourhood_document(report: Neighbourhood) -> Document:
    """GraphML's nodes and edges as tables (JSON: {"nodes", "edges"})."""
    data = graph_records(report.subgraph, report.centre)
    title = f"{len(data['nodes'])} instructions around {report.centre[1]} in {report.subgraph.name}"
    nodes = table(title, data["nodes"], tuple(data["nodes"][0]))  # the centre is always a node
    return Document(data, [nodes, table("edges", data["edges"], ("source", "target"))])
