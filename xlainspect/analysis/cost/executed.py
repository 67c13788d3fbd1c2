"""What one call executes: XLA's static count but for control flow and custom calls. A while loop's
body and condition run its trip count times (once where none is known), a conditional runs its most
expensive branch, call and async-start their computations, and custom calls count by target
(`custom_calls.RULES`); a target without a rule counts 0 and is listed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TypeAlias

from xlainspect.analysis.cost.custom_calls import rule_for
from xlainspect.analysis.cost.model import NO_COST, Cost
from xlainspect.analysis.cost.operands import MALFORMED, Uncountable
from xlainspect.analysis.cost.static import Analysis
from xlainspect.analysis.cost.trip_count import trip_count
from xlainspect.errors import HloParseError
from xlainspect.hlo.model import Computation, Instruction


class Executed:
    """The cost of one call as it executes: XLA's count (the static `Analysis`, shared) with a while
    loop's body and condition times its trip count, a conditional's most expensive branch (its index
    kept), call and async-start their computations, and custom calls counted by target."""

    def __init__(self, static: Analysis) -> None:
        self.static = static
        self.module = static.module
        self._costs: dict[int, Cost] = {}
        self._sums: dict[str, Cost] = {}
        self.trip_counts: dict[str, int | None] = {}
        """While name -> its trip count (None: not known, counted once)."""
        self.branches: dict[str, int] = {}
        """Conditional name -> the index of the branch counted."""
        self.not_counted: Counter[str] = Counter()
        """Custom-call target -> how many of its calls count as 0 (no rule for the target)."""

    def computation(self, computation: Computation) -> Cost:
        if computation.name not in self._sums:
            index = self.static.index(computation)
            self._sums[computation.name] = sum((self.instruction(i, index) for i in computation.instructions), NO_COST)
        return self._sums[computation.name]

    def instruction(self, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
        """One execution of `instruction`: XLA's cost but for control flow and custom calls."""
        handler = _EXECUTED.get(instruction.opcode)
        if handler is None:
            return self.static.instruction(instruction, index)
        cost = self._costs.get(id(instruction))
        if cost is None:
            try:
                cost = self._costs[id(instruction)] = handler(self, instruction, index)
            except (*MALFORMED, Uncountable) as error:
                raise HloParseError(
                    f"cannot count {instruction.name} ({instruction.opcode}): {error}",
                    self.module.path,
                    instruction.line,
                ) from None
        return cost

    def executions(self) -> dict[str, int]:
        """Computation -> runs per call of the entry: the product of trip counts along each call
        chain, summed over the chains (a conditional's uncounted branches run 0 times here)."""
        runs: dict[str, int] = {}

        def visit(computation: Computation, times: int) -> None:
            runs[computation.name] = runs.get(computation.name, 0) + times
            for instruction in computation.instructions:
                for position, callee in enumerate(run_callees(instruction)):
                    visit(self.static.named(callee), times * self._factor(instruction, position))

        visit(self.module.entry, 1)
        return runs

    def _factor(self, instruction: Instruction, position: int) -> int:
        if instruction.opcode == "while":
            trip = self.trip_counts.get(instruction.name)
            return 1 if trip is None else trip
        if instruction.opcode == "conditional":
            return 1 if self.branches.get(instruction.name) == position else 0
        return 1


def run_callees(instruction: Instruction) -> tuple[str, ...]:
    """The computations an instruction runs as control flow (an async pair counts at its start)."""
    if instruction.opcode in ("while", "conditional", "call", "async-start"):
        return instruction.called_computations
    return ()


def _while(executed: Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Body and condition times the trip count (once where it is not known)."""
    trip = executed.trip_counts[instruction.name] = trip_count(executed.static, instruction, index)
    once = sum((executed.computation(executed.static.named(n)) for n in instruction.called_computations), NO_COST)
    return once.times(trip if trip is not None else 1)


def _call(executed: Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Call and async-start: what their computation executes (an async-done adds only its bytes)."""
    return sum((executed.computation(executed.static.named(n)) for n in instruction.called_computations), NO_COST)


def _conditional(executed: Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The most expensive branch (by FLOPs, then transcendentals, then bytes), its index kept."""
    branches = [executed.computation(executed.static.named(n)) for n in instruction.called_computations]
    if not branches:
        return NO_COST
    chosen = max(range(len(branches)), key=lambda i: (branches[i][0], branches[i][1], branches[i][2]))
    executed.branches[instruction.name] = chosen
    return branches[chosen]


def _custom_call(executed: Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """A custom call by its target (xla/service/gpu/model/gpu_hlo_cost_analysis.cc `HandleCustomCall`,
    target names from xla/service/gpu/cublas_cudnn.h); a target without a rule, or a call without what
    its rule reads (a backend_config, a called computation), counts 0 and is listed."""
    target = instruction.custom_call_target or ""
    rule = rule_for(target)
    cost = rule.count(executed.static, instruction, index) if rule is not None else None
    if cost is None:
        executed.not_counted[target] += 1
        return NO_COST
    return cost


_ExecutedHandler: TypeAlias = Callable[[Executed, Instruction, dict[str, Instruction]], Cost]
_EXECUTED: dict[str, _ExecutedHandler] = {
    "while": _while,
    "call": _call,
    "async-start": _call,
    "conditional": _conditional,
    "custom-call": _custom_call,
}
"""The opcodes one call executes otherwise than XLA's static count has them."""
