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
