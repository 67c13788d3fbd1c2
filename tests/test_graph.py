"""The networkx views of a parsed module."""

from __future__ import annotations

import networkx as nx

from xlainspect import parse_hlo
from xlainspect.graph import call_graph, module_graph

TEXT = """HloModule m

%body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[4]{0} get-tuple-element(%p), index=1
  %y = f32[4]{0} add(%x, %x)
  ROOT %t = (s32[], f32[4]{0}) tuple(%i, %y)
}

%cond (p: (s32[], f32[4])) -> pred[] {
  %p = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %a)
  %w = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[4]{0} get-tuple-element(%w), index=1
}
"""


def test_instruction_graph_edges_run_operand_to_user():
    (module,) = parse_hlo(TEXT)
    graph = module_graph(module)
    assert graph.number_of_nodes() == module.instruction_count == 14
    assert list(graph.successors(("body", "x"))) == [("body", "y")]
    assert graph.in_degree(("body", "y")) == 1  # add(%x, %x): one edge, both operand slots
    assert nx.ancestors(graph, ("main", "out")) == {("main", n) for n in ("a", "zero", "init", "w")}
    assert nx.is_directed_acyclic_graph(graph)


def test_call_graph_follows_while_condition_and_body():
    (module,) = parse_hlo(TEXT)
    calls = call_graph(module)
    assert sorted(calls.successors("main")) == ["body", "cond"]
    assert {d["kind"] for _, _, d in calls.edges(data=True)} == {"while"}
    assert list(nx.topological_sort(calls))[0] == "main"


def test_neighbourhood_is_the_ego_graph_of_the_module_graph():
    """The walk of one computation gives networkx's ego graph of the whole module graph: the same nodes,
    edges and attributes (networkx lists a subgraph's in the order of a set of tuples: compared sorted)."""
    import random
    from pathlib import Path

    from xlainspect.analysis.neighbourhood import neighbourhood

    rng = random.Random(0)
    files = sorted(Path(__file__).parents[1].glob("fixtures/dumps/*/*after_optimizations.txt"))
    for path in rng.sample(files, min(12, len(files))):
        for module in parse_hlo(path.read_text()):
            graph = module_graph(module)
            for centre in rng.sample(sorted(graph.nodes), min(5, graph.number_of_nodes())):
                depth = rng.randint(0, 3)
                want = graph.subgraph(nx.ego_graph(graph.to_undirected(as_view=True), centre, radius=depth).nodes)
                got = neighbourhood(module, "/".join(centre), depth).to_networkx()
                assert sorted(got.nodes(data=True)) == sorted(want.copy().nodes(data=True))
                assert sorted(got.edges(data=True)) == sorted(want.copy().edges(data=True))
